// Property tests: random valid trees with random leaf outcomes keep the engine's invariants,
// exporting/restoring an agent at a random tick changes no decision, and a tree compiled into one
// function behaves exactly like the same tree with a call per node.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, DecisionBuffer, type CompiledTree } from '../../src/bt/index.js';
import { events } from './helpers.js';
import { CODE_GENERATION } from '../../src/bt/codegen.js';
import { compile, FLAGS, nodeArb, stepAgent, track, worldArb } from './random-trees.js';

describe('engine invariants on random trees', () => {
  it('every issued action ends exactly once (result or cancel); halted nodes restart fresh; work per tick is bounded', () => {
    fc.assert(
      fc.property(nodeArb(), worldArb, (root, world) => {
        const t = compile(root);
        const a = new Agent(t, 1, { seed: 3 });
        const out = new DecisionBuffer(true);
        const running = new Map<number, number>(); // seq → action node
        const ended = new Set<number>();
        const scriptedLeaves = t.nodes.filter((n) => n.type === 'scripted').length;
        const halted = new Set<string>();
        const violations: string[] = [];
        world.forEach((step, tick) => {
          events.length = 0;
          out.clear();
          FLAGS.forEach((f, k) => (a.bb[f] = step.flags[k]));
          let r = 0;
          for (const seq of [...running.keys()].toSorted((x, y) => x - y)) {
            const choice = step.results[r++ % step.results.length]!;
            if (choice !== 0 && a.deliverResult(seq, choice === 1)) {
              if (ended.has(seq)) violations.push(`seq ${seq} got a result after it ended`);
              ended.add(seq);
              running.delete(seq);
            }
          }
          a.tick(tick * 0.1, 0.1, out);
          expect(out.errors).toEqual([]);
          // Issued non-instant actions are running now, or were cancelled in this same tick (a parent halted them).
          const nowRunning = runningSeqs(t, a);
          const cancelled = new Set(out.cancels.map((c) => c[1]));
          for (const [, seq] of out.actions) if (nowRunning.has(seq) || cancelled.has(seq)) running.set(seq, 0);
          for (const [, seq] of out.cancels) {
            expect(ended.has(seq)).toBe(false);
            ended.add(seq);
            running.delete(seq);
          }
          // Each scripted leaf is ticked at most once per agent tick, and a halted one starts fresh.
          expect(events.filter((e) => !e.startsWith('halt')).length).toBeLessThanOrEqual(scriptedLeaves);
          const ticked = events.filter((e) => !e.startsWith('halt')).map((e) => e.split(' ')[1]);
          expect(new Set(ticked).size).toBe(ticked.length);
          for (const e of events) {
            const [kind, name] = e.split(' ') as [string, string];
            if (kind === 'tick') {
              if (halted.has(name)) violations.push(`${name} resumed after a halt`);
            } else if (kind === 'start') halted.delete(name);
            else halted.add(name);
          }
        });
        expect(violations).toEqual([]);
        // Whatever has not ended is exactly what the tree still waits on.
        expect([...running.keys()].toSorted()).toEqual([...runningSeqs(t, a)].toSorted());
      }),
      { numRuns: 300 },
    );
  });

  it('export/restore at a random tick changes no decision', () => {
    fc.assert(
      fc.property(nodeArb(), worldArb, fc.nat(), (root, world, at) => {
        const t = compile(root);
        const reference = new Agent(t, 'npc', { seed: 9 });
        let moved = new Agent(t, 'npc', { seed: 9 });
        const cut = at % world.length;
        const outA = new DecisionBuffer(true);
        const outB = new DecisionBuffer(true);
        const runA = new Map<number, number>();
        const runB = new Map<number, number>();
        world.forEach((step, tick) => {
          if (tick === cut) moved = Agent.restore(t, JSON.parse(JSON.stringify(moved.exportState())));
          const a = stepAgent(reference, step, tick, runA, outA);
          track(runA, outA);
          const b = stepAgent(moved, step, tick, runB, outB);
          track(runB, outB);
          expect(b).toBe(a);
        });
        expect(moved.exportState()).toEqual(reference.exportState());
      }),
      { numRuns: 200 },
    );
  });
});

describe('whole-tree compilation', () => {
  it('the tree compiled into one function decides exactly like the call-per-node tree: same decisions, statuses, slots, leaf order', () => {
    fc.assert(
      fc.property(nodeArb(), worldArb, fc.boolean(), (root, world, split) => {
        // Every other run splits every node into a function of its own (the path large trees take).
        const inlined = compile(root, true, split ? 0 : undefined);
        const calls = compile(root, false);
        // Where strings may not become code (the engine-without-codegen project), both are the call-per-node tree.
        expect(inlined.inlined).toBe(CODE_GENERATION);
        expect(calls.inlined).toBe(false);
        const a = new Agent(inlined, 7, { seed: 5 });
        const b = new Agent(calls, 7, { seed: 5 });
        const outA = new DecisionBuffer(true);
        const outB = new DecisionBuffer(true);
        const runA = new Map<number, number>();
        const runB = new Map<number, number>();
        world.forEach((step, tick) => {
          events.length = 0;
          const da = stepAgent(a, step, tick, runA, outA);
          const eventsA = events.splice(0);
          const db = stepAgent(b, step, tick, runB, outB);
          expect(da).toBe(db);
          expect(eventsA).toEqual(events);
          expect([...a.status]).toEqual([...b.status]);
          expect([...a.slots]).toEqual([...b.slots]);
          expect(a.bb).toEqual(b.bb);
          track(runA, outA);
          track(runB, outB);
        });
      }),
      { numRuns: 400 },
    );
  });
});

function runningSeqs(t: CompiledTree, a: Agent): Set<number> {
  const seqs = new Set<number>();
  t.actionNodes.forEach((node, k) => {
    if (a.status[node] === 3) seqs.add(a.slots[t.actionSeqSlots[k]!]!);
  });
  return seqs;
}
