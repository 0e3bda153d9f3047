// Property tests: random valid trees with random leaf outcomes keep the engine's invariants,
// exporting/restoring an agent at a random tick changes no decision, and a tree compiled into one
// function behaves exactly like the same tree with a call per node.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, compileTree, DecisionBuffer, type CompiledTree, type NodeDefinition } from '../../src/bt/index.js';
import { events, testCatalog } from './helpers.js';

const FLAGS = ['f0', 'f1', 'f2'] as const;
const word = fc.constantFrom('success', 'failure', 'running');

/** Random node definitions covering every built-in kind (guards read blackboard flags toggled by the world). */
function nodeArb(): fc.Arbitrary<NodeDefinition> {
  let leafId = 0;
  const { node } = fc.letrec<{ node: NodeDefinition; leaf: NodeDefinition; composite: NodeDefinition; decorator: NodeDefinition }>((tie) => ({
    node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('composite'), tie('decorator')),
    leaf: fc.oneof(
      fc.array(word, { minLength: 1, maxLength: 4 }).map((script) => ({ type: 'scripted', name: `L${leafId++}`, script: script.join(',') })),
      fc.record({ type: fc.constant('action'), action: fc.constantFrom('walk', 'aim') }).chain((a) =>
        fc.oneof(
          fc.constant({ ...a }),
          fc.constant({ ...a, instant: true }),
          fc.constant({ ...a, timeout: 0.3 }),
          fc.constant({ ...a, until: 'bb.f2' }),
        ),
      ),
      fc.constantFrom(...FLAGS).map((f) => ({ type: 'condition', expr: `bb.${f}` })),
      fc.constantFrom(0, 0.2, [0.1, 0.4]).map((seconds) => ({ type: 'wait', seconds })),
      fc.constantFrom('succeed', 'fail', 'running').map((type) => ({ type })),
      fc.constant({ type: 'set', values: { n: 'bb.n + 1' } }),
    ),
    composite: fc
      .record({
        type: fc.constantFrom('sequence', 'selector', 'parallel', 'all', 'random', 'rotator'),
        reactive: fc.boolean(),
        children: fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
        guard: fc.option(fc.constantFrom(...FLAGS), { nil: undefined }),
        resetOnAbort: fc.boolean(),
        service: fc.boolean(),
      })
      .map(({ type, reactive, children, guard, resetOnAbort, service }) => {
        const def: Record<string, unknown> = { type, children };
        if (service) def['services'] = [{ every: 0.2, values: { n: 'bb.n + 1' } }];
        if (type === 'sequence' || type === 'selector') def['reactive'] = reactive;
        if (type === 'rotator') def['resetOnAbort'] = resetOnAbort;
        if (type === 'parallel') def['success'] = Math.max(1, Math.ceil(children.length / 2));
        if (type === 'selector' && !reactive) {
          // Observer aborts on selector children, guards on random flags.
          def['children'] = children.map((c, k) => (k === 0 && guard !== undefined ? { ...c, if: `bb.${guard}`, abort: 'lower' } : c));
        }
        return def as NodeDefinition;
      }),
    decorator: fc
      .record({
        type: fc.constantFrom('inverter', 'succeeder', 'failer', 'repeat', 'retry', 'keepRunningUntilFailure', 'cooldown', 'timeLimit', 'delay', 'once'),
        child: tie('node'),
        guard: fc.option(fc.constantFrom(...FLAGS), { nil: undefined }),
      })
      .map(({ type, child, guard }) => {
        const def: Record<string, unknown> = { type, child };
        if (type === 'repeat') def['times'] = 3;
        if (type === 'retry') def['attempts'] = 2;
        if (type === 'cooldown' || type === 'timeLimit' || type === 'delay') def['seconds'] = 0.2;
        if (guard !== undefined) Object.assign(def, { if: `bb.${guard}`, abort: 'self' });
        return def as NodeDefinition;
      }),
  }));
  return node;
}

interface WorldStep {
  readonly flags: readonly boolean[];
  /** Per running action: deliver nothing (0), success (1) or failure (2). */
  readonly results: readonly number[];
}

const worldArb = fc.array(
  fc.record({ flags: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), results: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 4, maxLength: 4 }) }),
  { minLength: 5, maxLength: 40 },
);

function compile(root: NodeDefinition, inline = true): CompiledTree {
  return compileTree('prop', () => ({ blackboard: { f0: false, f1: false, f2: false, n: 0 }, root }), testCatalog(), { inline });
}

/** Drives one tick: world flags, then results for running actions, then the tick. Returns the decisions as JSON. */
function stepAgent(a: Agent, step: WorldStep, tick: number, running: Map<number, number>, out: DecisionBuffer): string {
  out.clear();
  FLAGS.forEach((f, k) => (a.bb[f] = step.flags[k]));
  let r = 0;
  for (const seq of [...running.keys()].toSorted((x, y) => x - y)) {
    const choice = step.results[r++ % step.results.length]!;
    if (choice !== 0) a.deliverResult(seq, choice === 1);
  }
  a.tick(tick * 0.1, 0.1, out);
  return JSON.stringify([out.actions, out.cancels, out.done, out.errors]);
}

describe('engine invariants on random trees', () => {
  it('every issued action ends exactly once (result or cancel); halted nodes restart fresh; work per tick is bounded', () => {
    fc.assert(
      fc.property(nodeArb(), worldArb, (root, world) => {
        const t = compile(root);
        const a = new Agent(t, 1, { seed: 3 });
        const out = new DecisionBuffer();
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
        const outA = new DecisionBuffer();
        const outB = new DecisionBuffer();
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
      fc.property(nodeArb(), worldArb, (root, world) => {
        const inlined = compile(root, true);
        const calls = compile(root, false);
        expect(inlined.root).not.toBe(calls.root);
        const a = new Agent(inlined, 7, { seed: 5 });
        const b = new Agent(calls, 7, { seed: 5 });
        const outA = new DecisionBuffer();
        const outB = new DecisionBuffer();
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

function track(running: Map<number, number>, out: DecisionBuffer): void {
  for (const [, seq] of out.actions) running.set(seq, 0);
  for (const [, seq] of out.cancels) running.delete(seq);
}
