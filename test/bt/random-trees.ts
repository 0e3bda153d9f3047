// Random behavior trees and worlds for property tests (fast-check): every built-in kind and option, guards
// and aborts on blackboard flags, subtrees, scripted leaves, and the one-tick driver the properties share.

import fc from 'fast-check';
import { Agent, compileTree, DecisionBuffer, type CompiledTree, type NodeDefinition, type TreeDefinition } from '../../src/bt/index.js';
import { testCatalog } from './helpers.js';

export const FLAGS = ['f0', 'f1', 'f2'] as const;
const word = fc.constantFrom('success', 'failure', 'running');
/** A guard's abort mode on a node that is not a selector's child ('lower' and 'both' are valid only there). */
const selfAbort = fc.constantFrom('self', 'none');

/** The trees `subtree` leaves run: one with its own keys written by args, one with a reactive guard inside. */
export const SUBTREES: Readonly<Record<string, TreeDefinition>> = {
  sub0: {
    blackboard: { m: 0, k: 0 },
    root: {
      type: 'sequence',
      children: [
        { type: 'condition', expr: 'bb.m >= 0' },
        { type: 'action', action: 'walk', args: { to: 'bb.m', k: 'bb.k', fixed: [1, 'two'] } },
        { type: 'set', values: { m: 'bb.m + 1' } },
      ],
    },
  },
  sub1: {
    blackboard: { m: 0, k: 0 },
    root: {
      type: 'selector',
      reactive: true,
      children: [
        { type: 'wait', seconds: 0.2, if: 'bb.m > 2', abort: 'both' },
        { type: 'log', message: 'bb.m', level: 'info' },
      ],
    },
  },
};

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
      // Two keys: both values are read before either is written (a swap).
      fc.constant({ type: 'set', values: { n: 'bb.j + 1', j: 'bb.n' } }),
      fc.constantFrom('debug', 'info', 'warn', 'error').map((level) => ({ type: 'log', message: 'bb.n', level })),
      fc.constant({ type: 'action', action: 'aim', args: { at: 'bb.n * 2', speed: 3, tag: "'x'" } }),
      fc
        .record({ tree: fc.constantFrom('sub0', 'sub1'), args: fc.boolean() })
        .map(({ tree, args }) => ({ type: 'subtree', tree, ...(args ? { args: { m: 'bb.n + 10', k: 5 } } : {}) })),
    ),
    composite: fc
      .record({
        type: fc.constantFrom('sequence', 'selector', 'parallel', 'all', 'random', 'rotator'),
        reactive: fc.boolean(),
        children: fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
        guard: fc.option(fc.constantFrom(...FLAGS), { nil: undefined }),
        resetOnAbort: fc.boolean(),
        service: fc.boolean(),
        // parallel thresholds and random weights, scaled to the child count below
        success: fc.nat(),
        failure: fc.nat(),
        weights: fc.option(fc.array(fc.nat({ max: 3 }), { minLength: 4, maxLength: 4 }), { nil: undefined }),
        lowerAbort: fc.constantFrom('lower', 'both'),
        selfAbort,
      })
      .map(({ type, reactive, children, guard, resetOnAbort, service, success, failure, weights, lowerAbort, selfAbort: own }) => {
        const def: Record<string, unknown> = { type, children };
        // Two values: the second reads what the first wrote.
        if (service) def['services'] = [{ every: 0.2, values: { n: 'bb.n + 1', j: 'bb.n * 2' } }];
        if (type === 'sequence' || type === 'selector') def['reactive'] = reactive;
        if (type === 'rotator') def['resetOnAbort'] = resetOnAbort;
        if (type === 'parallel') {
          def['success'] = 1 + (success % children.length);
          if (failure % 3 !== 0) def['failure'] = 1 + (failure % children.length);
        }
        if (type === 'random' && weights !== undefined) {
          const w = weights.slice(0, children.length);
          if (!w.some((x) => x > 0)) w[w.length - 1] = 1;
          def['weights'] = w;
        }
        if (type === 'selector' && !reactive) {
          // Observer aborts on selector children, guards on random flags.
          def['children'] = children.map((c, k) => (k === 0 && guard !== undefined ? { ...c, if: `bb.${guard}`, abort: lowerAbort } : c));
        } else if (guard !== undefined && success % 2 === 0) Object.assign(def, { if: `!bb.${guard}`, abort: own });
        return def as NodeDefinition;
      }),
    decorator: fc
      .record({
        type: fc.constantFrom('inverter', 'succeeder', 'failer', 'repeat', 'retry', 'keepRunningUntilFailure', 'cooldown', 'timeLimit', 'delay', 'once'),
        child: tie('node'),
        guard: fc.option(fc.constantFrom(...FLAGS), { nil: undefined }),
        abort: selfAbort,
        forever: fc.boolean(),
      })
      .map(({ type, child, guard, abort, forever }) => {
        const def: Record<string, unknown> = { type, child };
        if (type === 'repeat') def['times'] = forever ? -1 : 3;
        if (type === 'retry') def['attempts'] = forever ? -1 : 2;
        if (type === 'cooldown' || type === 'timeLimit' || type === 'delay') def['seconds'] = 0.2;
        if (guard !== undefined) Object.assign(def, { if: `bb.${guard}`, abort });
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

export function compile(root: NodeDefinition, inline = true, splitSource?: number): CompiledTree {
  const main: TreeDefinition = { blackboard: { f0: false, f1: false, f2: false, n: 0, j: 0 }, root };
  return compileTree('prop', (name) => (name === 'prop' ? main : SUBTREES[name]), testCatalog(), { inline, ...(splitSource !== undefined ? { splitSource } : {}) });
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
  return JSON.stringify([out.actions, out.cancels, out.done, out.errors, out.logs]);
}

/** Follows which seqs are running from a tick's decisions. */
export function track(running: Map<number, number>, out: DecisionBuffer): void {
  for (const [, seq] of out.actions) running.set(seq, 0);
  for (const [, seq] of out.cancels) running.delete(seq);
}
