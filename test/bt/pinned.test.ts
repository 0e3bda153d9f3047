// The four "Cases pinned after review" of the trees contract (spec trees.md, last section), one test
// each, named after the case, so a change to any of them fails here first.

import { describe, expect, it } from 'vitest';
import { NodeCatalog } from '../../src/bt/catalog.js';
import { checkTree } from '../../src/bt/validate.js';
import { events, Harness, s, tree } from './helpers.js';

describe('cases pinned after review', () => {
  const fleeOrPatrol = () =>
    tree({
      type: 'selector',
      name: 'root',
      children: [
        { type: 'action', name: 'flee', action: 'flee', if: 'self.hp < 30', abort: 'lower' },
        { type: 'action', name: 'patrol', action: 'patrol' },
      ],
    });

  it('a result and a halt in the same tick: the result ends the action, no cancel is sent', () => {
    const h = new Harness(fleeOrPatrol());
    h.agent.self = { hp: 100 };
    expect(h.step().actions).toEqual([[1, 1, 'patrol', {}]]);
    // The game reports patrol done in the snapshot of the tick in which flee's guard aborts it.
    h.agent.deliverResult(1, true);
    h.agent.self = { hp: 10 };
    const d = h.step();
    expect(d.cancels).toEqual([]);
    expect(d.actions).toEqual([[1, 2, 'flee', {}]]);
    expect(h.statuses()).toEqual({ root: 'running', flee: 'running', patrol: 'halted' });
  });

  it("which guard value 'lower' compares against: the last evaluation, not a re-evaluation when the selector passes the node", () => {
    const h = new Harness(
      tree(
        { type: 'selector', name: 'root', children: [{ ...s('hi', 'failure'), if: 'bb.alert', abort: 'lower' }, { type: 'action', name: 'patrol', action: 'patrol' }] },
        { alert: true },
      ),
    );
    h.step(); // entry: guard true, hi fails, patrol starts; the remembered value is true
    h.step(); // still true: no abort
    expect(h.out.cancels).toEqual([]);
    h.agent.bb['alert'] = false;
    h.step(); // a later check while patrol runs: remembered false
    h.agent.bb['alert'] = true;
    const d = h.step(); // false → true against that later check: abort
    expect(d.cancels).toEqual([[1, 1]]);
    expect(events).toEqual(['start hi', 'start hi']);
  });

  it("'lower' under a reactive selector: the tree loads, with a warning", () => {
    const def = { root: { type: 'selector', reactive: true, children: [{ type: 'succeed', if: 'true', abort: 'lower' }, { type: 'running' }] } };
    const found = checkTree('t', def, { catalog: new NodeCatalog() });
    expect(found.errors).toEqual([]);
    expect(found.warnings.map((w) => [w.code, w.path, w.message])).toEqual([
      [
        'W_ABORT_REACTIVE',
        'root.children[0]',
        "abort 'lower' adds nothing under a reactive selector: it re-checks its earlier children every tick anyway; remove 'abort' or make the selector non-reactive",
      ],
    ]);
  });

  it('parallel reaching both thresholds in one tick: every unfinished child is ticked, then success wins', () => {
    const h = new Harness(tree({ type: 'parallel', name: 'par', success: 1, failure: 1, children: [s('a', 'failure'), s('b', 'success'), s('c', 'running')] }));
    h.step();
    expect(h.statuses()).toEqual({ par: 'success', a: 'failure', b: 'success', c: 'halted' });
    expect(events).toEqual(['start a', 'start b', 'start c', 'halt c']);
  });
});
