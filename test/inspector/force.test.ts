// Fault injection in the engine (the inspector control's force): a watched agent's node returns the forced
// status without running, a running node forced to finish halts what it started (its action is cancelled),
// and an unwatched agent of the same tree is unaffected.

import { describe, expect, it } from 'vitest';
import { Agent, compileTree, DecisionBuffer, NodeCatalog, Status, type TreeDefinition } from '../../src/bt/index.js';

const tree = compileTree(
  't',
  (n) =>
    n === 't'
      ? ({
          root: {
            type: 'selector',
            children: [
              { type: 'action', action: 'flee', if: 'self.hp < 30' },
              { type: 'sequence', name: 'walk', children: [{ type: 'action', action: 'patrol' }] },
            ],
          },
        } satisfies TreeDefinition)
      : undefined,
  new NodeCatalog(),
);
const WALK = tree.nodes.findIndex((n) => n.name === 'walk');

describe('forcing a node of a watched agent', () => {
  it('returns the forced status without running the node, halting what it started, and only on the watched agent', () => {
    const watched = new Agent(tree, 'w');
    const other = new Agent(tree, 'o');
    const out = new DecisionBuffer();
    const trace = watched.watch(10);
    for (const a of [watched, other]) a.self = { hp: 50 };
    watched.tick(0.1, 0.1, out);
    other.tick(0.1, 0.1, out);
    expect(out.actions.map((a) => [a[0], a[2]])).toEqual([['w', 'patrol'], ['o', 'patrol']]);

    expect(trace.force(WALK, Status.FAILURE)).toBe(true);
    expect(trace.force(tree.nodeCount, Status.FAILURE)).toBe(false);
    const next = new DecisionBuffer();
    watched.tick(0.2, 0.1, next);
    other.tick(0.2, 0.1, next);
    // The watched agent's patrol is halted (cancelled) and its tree fails; the other agent keeps patrolling.
    expect(next.cancels.map((c) => c[0])).toEqual(['w']);
    expect(next.done).toEqual([['w', 'failure']]);
    const frame = trace.latest()!;
    expect(frame.nodes[WALK]).toMatchObject({ status: 'failure', ticked: true, forced: true });
    expect(frame.nodes[0]!.forced).toBeUndefined();

    trace.force(WALK, null);
    const after = new DecisionBuffer();
    watched.tick(0.3, 0.1, after);
    expect(after.actions.map((a) => [a[0], a[2]])).toEqual([['w', 'patrol']]);
    expect(trace.latest()!.nodes[WALK]!.forced).toBeUndefined();
  });
});
