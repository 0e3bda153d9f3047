// Guards and observer aborts (trees.md "Guards and aborts"): self, lower, both; no flip-flop; cancels once.

import { describe, expect, it } from 'vitest';
import { events, Harness, s, tree } from './helpers.js';

describe('guard (`if`)', () => {
  it('a false guard fails the node without ticking it', () => {
    const h = new Harness(tree({ type: 'sequence', name: 'seq', children: [{ ...s('a', 'success'), if: 'bb.go' }] }, { go: false }));
    h.step();
    expect(h.statuses()).toEqual({ seq: 'failure', a: 'failure' });
    expect(events).toEqual([]);
    h.agent.bb['go'] = true;
    h.step();
    expect(h.statuses()).toEqual({ seq: 'success', a: 'success' });
  });

  it('abort none (default): a running node is not re-checked', () => {
    const h = new Harness(tree({ ...s('a', 'running'), if: 'bb.go' }, { go: true }));
    h.step();
    h.agent.bb['go'] = false;
    h.step();
    expect(h.status('a')).toBe('running');
    expect(events).toEqual(['start a', 'tick a']);
  });
});

describe('abort: self', () => {
  it('re-checks the guard each tick before resuming; false → halt and failure', () => {
    const h = new Harness(
      tree({ type: 'sequence', name: 'seq', if: 'bb.go', abort: 'self', children: [{ type: 'action', name: 'act', action: 'walk' }] }, { go: true }),
    );
    h.step();
    expect(h.statuses()).toEqual({ seq: 'running', act: 'running' });
    h.step();
    expect(h.statuses()).toEqual({ seq: 'running', act: 'running' });
    h.agent.bb['go'] = false;
    h.step();
    expect(h.statuses()).toEqual({ seq: 'failure', act: 'halted' });
    expect(h.out.cancels).toEqual([[1, 1]]);
    h.step();
    expect(h.out.cancels).toEqual([]);
  });
});

describe('abort: lower', () => {
  // The guard-tree pattern: flee interrupts patrol when hp drops.
  const guardTree = () =>
    tree(
      {
        type: 'selector',
        name: 'root',
        children: [
          { type: 'action', name: 'flee', action: 'flee', if: 'self.hp < 30', abort: 'lower' },
          { type: 'action', name: 'patrol', action: 'patrol' },
        ],
      },
      {},
    );

  it('halts the running lower-priority sibling when the guard turns true, cancel emitted once, continues from the higher node in the same tick', () => {
    const h = new Harness(guardTree());
    h.agent.self = { hp: 100 };
    expect(h.step().actions).toEqual([[1, 1, 'patrol', {}]]);
    h.step();
    expect(h.statuses()).toEqual({ root: 'running', flee: 'failure', patrol: 'running' });
    h.agent.self = { hp: 10 };
    const d = h.step();
    expect(d.cancels).toEqual([[1, 1]]);
    expect(d.actions).toEqual([[1, 2, 'flee', {}]]);
    expect(h.statuses()).toEqual({ root: 'running', flee: 'running', patrol: 'halted' });
    const d2 = h.step();
    expect(d2.cancels).toEqual([]);
    expect(d2.actions).toEqual([]);
  });

  it('no flip-flop: a guard that stays true does not abort again after the higher branch failed', () => {
    const h = new Harness(
      tree(
        {
          type: 'selector',
          name: 'root',
          children: [
            { ...s('hi', 'failure'), if: 'bb.alert', abort: 'lower' },
            { type: 'action', name: 'patrol', action: 'patrol' },
          ],
        },
        { alert: true },
      ),
    );
    h.step(); // hi: guard true, fails; patrol starts
    expect(h.statuses()).toEqual({ root: 'running', hi: 'failure', patrol: 'running' });
    for (let i = 0; i < 5; i++) {
      const d = h.step();
      expect(d.cancels).toEqual([]);
    }
    expect(events).toEqual(['start hi']);
    expect(h.status('patrol')).toBe('running');
    // A change false → true does abort.
    h.agent.bb['alert'] = false;
    h.step();
    h.agent.bb['alert'] = true;
    const d = h.step();
    expect(d.cancels).toEqual([[1, 1]]);
    expect(events).toEqual(['start hi', 'start hi']);
  });

  it('a guard true when the selector passed the node (and the node failed) must turn false then true to abort', () => {
    const h = new Harness(guardTree());
    h.agent.self = { hp: 10 };
    h.step(); // flee runs
    h.agent.deliverResult(1, false); // flee fails → patrol
    h.step();
    expect(h.statuses()).toEqual({ root: 'running', flee: 'failure', patrol: 'running' });
    h.step();
    expect(h.out.cancels).toEqual([]);
  });

  it('abort: lower does not re-check the node itself while it runs', () => {
    const h = new Harness(guardTree());
    h.agent.self = { hp: 10 };
    h.step();
    h.agent.self = { hp: 100 };
    h.step();
    expect(h.status('flee')).toBe('running');
  });
});

describe('abort: both', () => {
  it('aborts lower siblings and itself', () => {
    const def = {
      type: 'selector',
      name: 'root',
      children: [
        { type: 'action', name: 'flee', action: 'flee', if: 'self.hp < 30', abort: 'both' },
        { type: 'action', name: 'patrol', action: 'patrol' },
      ],
    };
    const h = new Harness(tree(def));
    h.agent.self = { hp: 100 };
    h.step();
    h.agent.self = { hp: 10 };
    expect(h.step().actions.map((a) => a[2])).toEqual(['flee']);
    h.agent.self = { hp: 100 };
    const d = h.step();
    // flee aborted itself (cancel seq 2) and the selector moved on to a fresh patrol (seq 3).
    expect(d.cancels).toEqual([[1, 2]]);
    expect(d.actions).toEqual([[1, 3, 'patrol', {}]]);
    expect(h.statuses()).toEqual({ root: 'running', flee: 'failure', patrol: 'running' });
  });
});

describe('halting', () => {
  it('halts deepest first and cancels every running action once', () => {
    const h = new Harness(
      tree(
        {
          type: 'sequence',
          name: 'root',
          if: 'bb.go',
          abort: 'self',
          children: [{ type: 'parallel', name: 'par', children: [{ type: 'action', name: 'a', action: 'a' }, { type: 'sequence', name: 'inner', children: [s('x', 'running')] }] }],
        },
        { go: true },
      ),
    );
    h.step();
    h.agent.bb['go'] = false;
    h.step();
    expect(h.out.cancels).toEqual([[1, 1]]);
    expect(h.statuses()).toEqual({ root: 'failure', par: 'halted', a: 'halted', inner: 'halted', x: 'halted' });
    expect(events).toEqual(['start x', 'halt x']);
  });
});
