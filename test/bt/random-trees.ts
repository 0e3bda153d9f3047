// Random behavior trees and worlds for property tests (fast-check): every built-in kind, guards and aborts
// on blackboard flags, scripted leaves, and the one-tick driver the properties share.

import fc from 'fast-check';
import { Agent, compileTree, DecisionBuffer, type CompiledTree, type NodeDefinition } from '../../src/bt/index.js';
import { testCatalog } from './helpers.js';

export const FLAGS = ['f0', 'f1', 'f2'] as const;
const word = fc.constantFrom('success', 'failure', 'running');

/** Random node definitions covering every built-in kind (guards read blackboard flags toggled by the world). */
export function nodeArb(): fc.Arbitrary<NodeDefinition> {
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

export interface WorldStep {
  readonly flags: readonly boolean[];
  /** Per running action: deliver nothing (0), success (1) or failure (2). */
  readonly results: readonly number[];
}

export const worldArb = fc.array(
  fc.record({ flags: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), results: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 4, maxLength: 4 }) }),
  { minLength: 5, maxLength: 40 },
);

export function compile(root: NodeDefinition, inline = true): CompiledTree {
  return compileTree('prop', () => ({ blackboard: { f0: false, f1: false, f2: false, n: 0 }, root }), testCatalog(), { inline });
}

/** Drives one tick: world flags, then results for running actions, then the tick. Returns the decisions as JSON. */
export function stepAgent(a: Agent, step: WorldStep, tick: number, running: Map<number, number>, out: DecisionBuffer): string {
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

/** Follows which seqs are running from a tick's decisions. */
export function track(running: Map<number, number>, out: DecisionBuffer): void {
  for (const [, seq] of out.actions) running.set(seq, 0);
  for (const [, seq] of out.cancels) running.delete(seq);
}
