// Semantics of the leaves (trees.md "Leaves"): the action lifecycle, conditions, wait, set, log, constants, subtree.

import { describe, expect, it } from 'vitest';
import { Harness, s, tree } from './helpers.js';

describe('action', () => {
  const act = (extra: Record<string, unknown> = {}) => tree({ type: 'action', name: 'act', action: 'moveTo', args: { x: 3, who: "'me'", hp: 'self.hp' }, ...extra });

  it('issues the action with a new seq and evaluated args on entry, then waits for the result of that seq', () => {
    const h = new Harness(act());
    h.agent.self = { hp: 77 };
    expect(h.step().actions).toEqual([[1, 1, 'moveTo', { x: 3, who: 'me', hp: 77 }]]);
    expect(h.status('act')).toBe('running');
    expect(h.step().actions).toEqual([]);
    expect(h.agent.deliverResult(2, true)).toBe(false); // wrong seq: ignored
    expect(h.agent.deliverResult(1, false)).toBe(true);
    h.step();
    expect(h.status('act')).toBe('failure');
    expect(h.out.done).toEqual([[1, 'failure']]);
    // Next entry: seq 2.
    expect(h.step().actions.map((a) => a[1])).toEqual([2]);
  });

  it('args keep the order of the definition (integer-like keys first, as in any object), expressions evaluated in that order', () => {
    const pos = { x: 1, y: 2 };
    const h = new Harness(tree({ type: 'action', name: 'act', action: 'moveTo', instant: true, args: { z: 'rand()', 2: 'rand()', a: pos, '1': 'self.hp', m: 'rand()' } }));
    h.agent.self = { hp: 5 };
    const args = h.step().actions[0]![3] as Record<string, unknown>;
    expect(Object.keys(args)).toEqual(['1', '2', 'z', 'a', 'm']);
    const draws = new Harness(tree({ type: 'action', action: 'x', instant: true, args: { d: 'rand()' } })).agent;
    const r = [draws.random(), draws.random(), draws.random()];
    expect(args).toEqual({ '1': 5, 2: r[0], z: r[1], a: pos, m: r[2] });
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(h.step().actions[0]![3]).not.toBe(args);
  });

  it('a result for a seq that is no longer running is ignored', () => {
    const h = new Harness(act());
    h.step();
    h.agent.deliverResult(1, true);
    h.step();
    expect(h.agent.deliverResult(1, true)).toBe(false);
  });

  it('instant: success at once, nothing to wait for', () => {
    const h = new Harness(tree({ type: 'action', name: 'act', action: 'shoot', instant: true }));
    expect(h.step().actions).toEqual([[1, 1, 'shoot', {}]]);
    expect(h.status('act')).toBe('success');
    expect(h.step().actions).toEqual([[1, 2, 'shoot', {}]]);
  });

  it('numeric state only for what an action waits on: none for instant, seq and result, a deadline with a timeout', () => {
    // An agent's slots are memory every tick touches: fewer of them is less of it (docs/capacity.md, round twenty-seven).
    expect(tree({ type: 'action', action: 'shoot', instant: true }).slotCount).toBe(0);
    expect(act().slotCount).toBe(2);
    expect(act({ timeout: 1 }).slotCount).toBe(3);
    const seq = tree({ type: 'sequence', children: [{ type: 'action', action: 'aim', instant: true }, { type: 'action', name: 'fire', action: 'fire' }] });
    const h = new Harness(seq);
    expect(h.step().actions.map((a) => a[2])).toEqual(['aim', 'fire']);
    expect(h.status('fire')).toBe('running');
    expect(h.agent.deliverResult(2, true)).toBe(true);
    h.step();
    expect(h.out.done).toEqual([[1, 'success']]);
  });

  it('until: success (and a cancel for the game) once the expression becomes true, checked from the next tick', () => {
    const h = new Harness(act({ until: 'self.near' }));
    h.agent.self = { near: true };
    h.step();
    expect(h.status('act')).toBe('running');
    expect(h.out.cancels).toEqual([]);
    h.step();
    expect(h.status('act')).toBe('success');
    expect(h.out.cancels).toEqual([[1, 1]]);
  });

  it('timeout: failure (and a cancel) once `timeout` seconds of tree time passed', () => {
    const h = new Harness(act({ timeout: 0.2 }), { period: 0.1 });
    h.step();
    h.step();
    expect(h.status('act')).toBe('running');
    h.step();
    expect(h.status('act')).toBe('failure');
    expect(h.out.cancels).toEqual([[1, 1]]);
  });

  it('a result arriving on the same tick as the timeout wins', () => {
    const h = new Harness(act({ timeout: 0.1 }), { period: 0.1 });
    h.step();
    h.agent.deliverResult(1, true);
    h.step();
    expect(h.status('act')).toBe('success');
    expect(h.out.cancels).toEqual([]);
  });
});

describe('condition', () => {
  it('success when truthy, failure otherwise; never running', () => {
    const h = new Harness(tree({ type: 'condition', name: 'c', expr: 'self.hp < 30' }));
    h.agent.self = { hp: 10 };
    h.step();
    expect(h.status('c')).toBe('success');
    h.agent.self = { hp: 50 };
    h.step();
    expect(h.status('c')).toBe('failure');
    h.agent.self = null;
    h.step();
    expect(h.status('c')).toBe('failure');
  });
});

describe('wait', () => {
  it('running until `seconds` of tree time have passed', () => {
    const h = new Harness(tree({ type: 'wait', name: 'w', seconds: 0.3 }), { period: 0.1 });
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      h.step();
      seen.push(h.status('w'));
    }
    expect(seen).toEqual(['running', 'running', 'running', 'success', 'running']);
  });

  it('[min, max] draws the duration with the seeded generator: reproducible per seed, within bounds', () => {
    const durations = (seed: number): number[] => {
      const h = new Harness(tree({ type: 'wait', name: 'w', seconds: [0.5, 1.5] }), { period: 0.1, seed });
      const out: number[] = [];
      let started = 0;
      for (let i = 0; i < 200; i++) {
        const t = h.time;
        h.step();
        if (h.status('w') === 'success') {
          out.push(Math.round((t - started) * 10) / 10);
          started = h.time;
        }
      }
      return out;
    };
    const a = durations(1);
    expect(a).toEqual(durations(1));
    expect(a).not.toEqual(durations(2));
    for (const d of a) {
      expect(d).toBeGreaterThanOrEqual(0.5);
      expect(d).toBeLessThanOrEqual(1.5);
    }
  });
});

describe('set', () => {
  it('writes every key, evaluating all values before writing (swap)', () => {
    const h = new Harness(tree({ type: 'set', name: 'set', values: { a: 'bb.b', b: 'bb.a', n: 'bb.n + 1' } }, { a: 1, b: 2, n: 0 }));
    h.step();
    expect(h.agent.bb).toEqual({ a: 2, b: 1, n: 1 });
    expect(h.status('set')).toBe('success');
  });
});

describe('log', () => {
  it('emits a debug event with the evaluated message; success', () => {
    const h = new Harness(tree({ type: 'log', name: 'log', message: "'hp=' + 'low'", level: 'info' }));
    h.step();
    expect(h.out.logs).toEqual([[1, 'info', 'hp=low']]);
    expect(h.status('log')).toBe('success');
  });
});

describe('succeed / fail / running', () => {
  it('return constant results', () => {
    for (const [type, word] of [['succeed', 'success'], ['fail', 'failure'], ['running', 'running']] as const) {
      const h = new Harness(tree({ type, name: 'n' }));
      h.step();
      expect(h.status('n')).toBe(word);
    }
  });
});

describe('subtree', () => {
  const others = {
    attack: {
      blackboard: { target: null, shots: 0 },
      root: { type: 'sequence', name: 'sub', children: [{ type: 'set', values: { shots: 'bb.shots + 1' } }, { type: 'action', name: 'fire', action: 'fire', args: { at: 'bb.target' }, instant: true }] },
    },
  };

  it("runs the other tree's root in place; its keys join the blackboard; args are written on entry", () => {
    const h = new Harness(tree({ type: 'subtree', name: 'st', tree: 'attack', args: { target: "'orc'" } }, { mine: 1 }, others));
    expect(h.agent.bb).toEqual({ mine: 1, target: null, shots: 0 });
    expect(h.step().actions).toEqual([[1, 1, 'fire', { at: 'orc' }]]);
    expect(h.agent.bb).toEqual({ mine: 1, target: 'orc', shots: 1 });
    expect(h.statuses()).toEqual({ st: 'success', sub: 'success', fire: 'success' });
    expect(h.agent.tree.nodes[1]!.file).toBe('attack');
    expect(h.agent.tree.nodes[1]!.path).toBe('root');
  });

  it('subtree args: non-string values are literals (objects cloned per entry)', () => {
    const h = new Harness(tree({ type: 'subtree', name: 'st', tree: 'attack', args: { target: { x: 1 }, shots: 10 } }, {}, others));
    h.step();
    expect(h.agent.bb).toEqual({ target: { x: 1 }, shots: 11 });
    expect(h.out.actions).toEqual([[1, 1, 'fire', { at: { x: 1 } }]]);
  });

  it('halting the subtree node halts the inlined nodes and cancels their actions', () => {
    const h = new Harness(
      tree(
        { type: 'timeLimit', seconds: 0.1, child: { type: 'subtree', name: 'st', tree: 'slow' } },
        {},
        { slow: { root: { type: 'action', name: 'walk', action: 'walk' } } },
      ),
      { period: 0.1 },
    );
    h.step();
    h.step();
    expect(h.out.cancels).toEqual([[1, 1]]);
    expect(h.statuses()).toEqual({ st: 'halted', walk: 'halted' });
  });
});

describe('scripted helper sanity', () => {
  it('scripted leaves repeat their last status', () => {
    const h = new Harness(tree(s('x', 'failure', 'success')));
    h.step();
    h.step();
    h.step();
    expect(h.status('x')).toBe('success');
  });
});
