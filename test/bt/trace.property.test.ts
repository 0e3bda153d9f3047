// Property tests of the inspector's trace on random trees: a watched agent's frames report exactly the statuses
// the engine holds, the nodes it visited and halted, and its decisions; and watching changes no decision.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, DecisionBuffer, STATUS_NAMES, type AgentFrame } from '../../src/bt/index.js';
import { events } from './helpers.js';
import { compile, nodeArb, stepAgent, track, worldArb } from './random-trees.js';

/** The frame's status for an engine status code: halted nodes rest as idle (with `halted` on the tick it happened). */
const frameStatus = (code: number): string => (STATUS_NAMES[code] === 'halted' ? 'idle' : STATUS_NAMES[code]!);

describe('trace of watched agents on random trees', () => {
  it('frames match the engine (statuses, visited and halted leaves, decisions) and watching changes no decision', () => {
    fc.assert(
      fc.property(nodeArb(), worldArb, fc.boolean(), (root, world, inline) => {
        const t = compile(root, inline);
        const plain = new Agent(t, 7, { seed: 5 });
        const watched = new Agent(t, 7, { seed: 5 });
        const trace = watched.watch(world.length);
        const outA = new DecisionBuffer(true);
        const outB = new DecisionBuffer(true);
        const runA = new Map<number, number>();
        const runB = new Map<number, number>();
        const leafOf = new Map(t.nodes.flatMap((n, i) => (n.type === 'scripted' && n.name !== null ? [[n.name, i] as const] : [])));
        world.forEach((step, tick) => {
          events.length = 0;
          const da = stepAgent(plain, step, tick, runA, outA);
          const eventsA = events.splice(0);
          const db = stepAgent(watched, step, tick, runB, outB);
          // Watching changes nothing: decisions, leaf calls, statuses, slots, blackboard.
          expect(db).toBe(da);
          expect(events).toEqual(eventsA);
          expect([...watched.status]).toEqual([...plain.status]);
          expect([...watched.slots]).toEqual([...plain.slots]);
          expect(watched.bb).toEqual(plain.bb);

          const frame: AgentFrame = trace.latest()!;
          expect(frame.tick).toBe(tick);
          // Statuses are the engine's, node by node.
          expect(frame.nodes.map((n) => n.status)).toEqual([...plain.status].map(frameStatus));
          // A scripted leaf was visited iff it ran or its guard stopped it; halted iff its halt hook fired.
          for (const [name, i] of leafOf) {
            const ran = eventsA.some((e) => e === `start ${name}` || e === `tick ${name}`);
            const node = frame.nodes[i]!;
            // Visited when it ran; visited without running only when its guard failed (a guard the parent
            // checked for abort "lower" sets `guard` without a visit).
            expect({ name, ranButNotVisited: ran && !node.ticked, visitedForNothing: !ran && node.ticked && node.guard !== false }).toEqual({
              name,
              ranButNotVisited: false,
              visitedForNothing: false,
            });
            expect({ name, halted: node.halted === true }).toEqual({ name, halted: eventsA.includes(`halt ${name}`) });
          }
          // Visits form a path from the root: a visited node's parent was visited; the root always is.
          expect(frame.nodes[0]!.ticked).toBe(true);
          // A node running now was visited this tick (running is only ever returned by a tick).
          const orphans = frame.nodes.flatMap((n, i) => ((n.ticked && i > 0 && !frame.nodes[t.nodes[i]!.parent]!.ticked) || (n.status === 'running' && !n.ticked) ? [i] : []));
          expect(orphans).toEqual([]);
          // The frame's events are the decisions, in order, attributed to the action nodes that made them.
          const actions = frame.events.flatMap((e) => (e.kind === 'action' ? [[7, e.seq, e.action, e.args]] : []));
          const cancels = frame.events.flatMap((e) => (e.kind === 'cancel' ? [[7, e.seq]] : []));
          const done = frame.events.flatMap((e) => (e.kind === 'done' ? [[7, e.status]] : []));
          const logs = frame.events.flatMap((e) => (e.kind === 'log' ? [[7, e.level, e.message]] : []));
          expect(JSON.stringify([actions, cancels, done, [], logs])).toBe(db);
          const issuers = frame.events.flatMap((e) => (e.kind === 'action' || e.kind === 'cancel' ? [t.nodes[e.node]!.type] : []));
          expect(issuers.filter((type) => type !== 'action')).toEqual([]);
          // Every guard evaluated has its value in the frame and a check in the why.
          const why = trace.why(watched, tick)!;
          expect(why.checks.map((c) => c.term.value)).toEqual(why.checks.map((c) => c.value));
          expect(why.checks.filter((c) => c.kind === 'guard' && frame.nodes[c.node]!.guard === undefined)).toEqual([]);
          track(runA, outA);
          track(runB, outB);
        });
      }),
      { numRuns: 300 },
    );
  });
});
