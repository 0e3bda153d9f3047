// Semantics of the composites (trees.md "Composites"), with scripted children and every node's status per tick.

import { describe, expect, it } from 'vitest';
import { events, Harness, s, tree } from './helpers.js';

describe('sequence', () => {
  it('ticks children in order; running resumes at that child; all success → success', () => {
    const h = new Harness(tree({ type: 'sequence', name: 'seq', children: [s('a', 'success'), s('b', 'running', 'success'), s('c', 'success')] }));
    h.step();
    expect(h.statuses()).toEqual({ seq: 'running', a: 'success', b: 'running', c: 'idle' });
    h.step();
    expect(h.statuses()).toEqual({ seq: 'success', a: 'success', b: 'success', c: 'success' });
    expect(events).toEqual(['start a', 'start b', 'tick b', 'start c']);
  });

  it("a child's failure fails the sequence and later children are not ticked", () => {
    const h = new Harness(tree({ type: 'sequence', name: 'seq', children: [s('a', 'success'), s('b', 'failure'), s('c', 'success')] }));
    h.step();
    expect(h.statuses()).toEqual({ seq: 'failure', a: 'success', b: 'failure', c: 'idle' });
    expect(h.out.done).toEqual([[1, 'failure']]);
  });

  it('after the root finishes, the next tick starts again at the first child', () => {
    const h = new Harness(tree({ type: 'sequence', name: 'seq', children: [s('a', 'success'), s('b', 'success')] }));
    h.step();
    h.step();
    expect(events).toEqual(['start a', 'start b', 'start a', 'start b']);
    expect(h.out.done).toEqual([[1, 'success']]);
  });
});

describe('selector', () => {
  it("a child's success succeeds; failures move on; running resumes there", () => {
    const h = new Harness(tree({ type: 'selector', name: 'sel', children: [s('a', 'failure'), s('b', 'running', 'running', 'failure'), s('c', 'success')] }));
    h.step();
    expect(h.statuses()).toEqual({ sel: 'running', a: 'failure', b: 'running', c: 'idle' });
    h.step();
    expect(h.statuses()).toEqual({ sel: 'running', a: 'failure', b: 'running', c: 'idle' });
    h.step();
    expect(h.statuses()).toEqual({ sel: 'success', a: 'failure', b: 'failure', c: 'success' });
    // `a` is not re-ticked while `b` runs (not reactive).
    expect(events).toEqual(['start a', 'start b', 'tick b', 'tick b', 'start c']);
  });

  it('all failure → failure; `fallback` is an alias', () => {
    const h = new Harness(tree({ type: 'fallback', name: 'sel', children: [s('a', 'failure'), s('b', 'failure')] }));
    h.step();
    expect(h.statuses()).toEqual({ sel: 'failure', a: 'failure', b: 'failure' });
  });
});

describe('reactive composites', () => {
  it('reactive sequence re-ticks from the first child every tick and halts the running child when an earlier one fails', () => {
    const h = new Harness(
      tree({ type: 'sequence', reactive: true, name: 'seq', children: [s('cond', 'success', 'success', 'failure'), s('act', 'running')] }),
    );
    h.step();
    expect(h.statuses()).toEqual({ seq: 'running', cond: 'success', act: 'running' });
    h.step();
    expect(h.statuses()).toEqual({ seq: 'running', cond: 'success', act: 'running' });
    h.step();
    expect(h.statuses()).toEqual({ seq: 'failure', cond: 'failure', act: 'halted' });
    expect(events).toEqual(['start cond', 'start act', 'start cond', 'tick act', 'start cond', 'halt act']);
  });

  it('reactive selector halts a lower running child when a higher one now runs', () => {
    const h = new Harness(tree({ type: 'selector', reactive: true, name: 'sel', children: [s('hi', 'failure', 'running'), s('lo', 'running')] }));
    h.step();
    expect(h.statuses()).toEqual({ sel: 'running', hi: 'failure', lo: 'running' });
    h.step();
    expect(h.statuses()).toEqual({ sel: 'running', hi: 'running', lo: 'halted' });
    expect(events).toEqual(['start hi', 'start lo', 'start hi', 'halt lo']);
    h.step();
    // `hi` is resumed (not restarted) and `lo` stays halted.
    expect(events.slice(4)).toEqual(['tick hi']);
  });
});

describe('parallel', () => {
  it('ticks every unfinished child; default: all must succeed', () => {
    const h = new Harness(tree({ type: 'parallel', name: 'par', children: [s('a', 'success'), s('b', 'running', 'success')] }));
    h.step();
    expect(h.statuses()).toEqual({ par: 'running', a: 'success', b: 'running' });
    h.step();
    expect(h.statuses()).toEqual({ par: 'success', a: 'success', b: 'success' });
    expect(events).toEqual(['start a', 'start b', 'tick b']);
  });

  it('success threshold reached → success and the still-running children are halted', () => {
    const h = new Harness(tree({ type: 'parallel', success: 1, name: 'par', children: [s('a', 'running', 'success'), s('b', 'running'), s('c', 'running')] }));
    h.step();
    h.step();
    expect(h.statuses()).toEqual({ par: 'success', a: 'success', b: 'halted', c: 'halted' });
    expect(events.filter((e) => e.startsWith('halt'))).toEqual(['halt b', 'halt c']);
  });

  it('failure threshold (default 1) → failure, running children halted', () => {
    const h = new Harness(tree({ type: 'parallel', name: 'par', children: [s('a', 'running'), s('b', 'running', 'failure')] }));
    h.step();
    h.step();
    expect(h.statuses()).toEqual({ par: 'failure', a: 'halted', b: 'failure' });
  });

  it('failure: 2 tolerates one failure; fails once success can no longer be reached', () => {
    const h = new Harness(
      tree({ type: 'parallel', success: 2, failure: 2, name: 'par', children: [s('a', 'failure'), s('b', 'running', 'success'), s('c', 'running', 'running', 'success')] }),
    );
    h.step();
    expect(h.status('par')).toBe('running');
    h.step();
    expect(h.status('par')).toBe('running');
    h.step();
    expect(h.statuses()).toEqual({ par: 'success', a: 'failure', b: 'success', c: 'success' });
  });

  it('a finished child is not re-ticked within the same entry', () => {
    const h = new Harness(tree({ type: 'parallel', name: 'par', children: [s('a', 'success'), s('b', 'running', 'running', 'success')] }));
    h.step();
    h.step();
    h.step();
    expect(events).toEqual(['start a', 'start b', 'tick b', 'tick b']);
  });
});

describe('all', () => {
  it('runs every child to the end without halting any; failure if any failed', () => {
    const h = new Harness(tree({ type: 'all', name: 'all', children: [s('a', 'failure'), s('b', 'running', 'success')] }));
    h.step();
    expect(h.statuses()).toEqual({ all: 'running', a: 'failure', b: 'running' });
    h.step();
    expect(h.statuses()).toEqual({ all: 'failure', a: 'failure', b: 'success' });
  });

  it('success when every child succeeded', () => {
    const h = new Harness(tree({ type: 'all', name: 'all', children: [s('a', 'success'), s('b', 'success')] }));
    h.step();
    expect(h.status('all')).toBe('success');
  });
});

describe('random', () => {
  const def = { type: 'random', name: 'rnd', children: [s('a', 'success'), s('b', 'success'), s('c', 'success')] };

  it('draws with the agent seed: same seed → same picks, other seed → other picks', () => {
    const picks = (seed: number): string[] => {
      const h = new Harness(tree(def), { seed });
      const out: string[] = [];
      for (let i = 0; i < 30; i++) {
        h.step();
        out.push(events.at(-1)!);
      }
      return out;
    };
    expect(picks(7)).toEqual(picks(7));
    expect(picks(7)).not.toEqual(picks(8));
    expect(new Set(picks(7)).size).toBe(3);
  });

  it('respects weights (a zero weight is never drawn) and resumes a running child without re-drawing', () => {
    const h = new Harness(tree({ type: 'random', name: 'rnd', weights: [0, 1], children: [s('a', 'success'), s('b', 'running', 'running', 'success')] }));
    for (let i = 0; i < 3; i++) h.step();
    expect(events).toEqual(['start b', 'tick b', 'tick b']);
  });
});

describe('rotator', () => {
  it('ticks one child per entry, the next one each time, wrapping', () => {
    const h = new Harness(tree({ type: 'rotator', name: 'rot', children: [s('a', 'success'), s('b', 'failure'), s('c', 'success')] }));
    for (let i = 0; i < 4; i++) h.step();
    expect(events).toEqual(['start a', 'start b', 'start c', 'start a']);
  });

  it('a running child is resumed', () => {
    const h = new Harness(tree({ type: 'rotator', name: 'rot', children: [s('a', 'running', 'success'), s('b', 'success')] }));
    for (let i = 0; i < 3; i++) h.step();
    expect(events).toEqual(['start a', 'tick a', 'start b']);
  });

  const halted = (resetOnAbort: boolean): string[] => {
    // The parallel's failure halts the rotator while its second child runs.
    const h = new Harness(
      tree({
        type: 'parallel',
        name: 'par',
        children: [
          s('stop', 'running', 'running', 'failure', 'running'),
          { type: 'keepRunningUntilFailure', child: { type: 'rotator', name: 'rot', resetOnAbort, children: [s('a', 'success'), s('b', 'running'), s('c', 'running')] } },
        ],
      }),
    );
    for (let i = 0; i < 4; i++) h.step();
    return events.filter((e) => !e.includes('stop'));
  };

  it('after a halt continues with the next child by default', () => {
    expect(halted(false)).toEqual(['start a', 'start b', 'tick b', 'halt b', 'start c']);
  });

  it('resetOnAbort: true restarts from the first child after a halt', () => {
    expect(halted(true)).toEqual(['start a', 'start b', 'tick b', 'halt b', 'start a']);
  });
});
