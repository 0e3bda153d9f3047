// Export → import is lossless: random Canopy trees (every built-in kind, guards with every abort mode, services,
// plugin nodes) written as XML and read back decide exactly like the originals, tick for tick, on random inputs.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, DecisionBuffer, NodeCatalog, Status, TreeLibrary, defineNode, walkDefinition, type CompiledTree, type NodeDefinition, type TreeDefinition } from '../../src/bt/index.js';
import { exportXml, formatInteropError, importXml } from '../../src/interop/index.js';
import { asGroot2Saves } from './drive.js';

/** Starts, ticks and halts of scripted leaves, in order. */
const events: string[] = [];
const CODES = { success: Status.SUCCESS, failure: Status.FAILURE, running: Status.RUNNING } as const;

/** A plugin leaf (`script: "running,success"`) that returns its scripted statuses: plugin kinds must survive the round trip too. */
const scripted = defineNode({
  type: 'scripted',
  category: 'leaf',
  description: 'Test leaf returning scripted statuses.',
  params: { script: { type: 'string', required: true, description: 'statuses per tick, comma-separated' } },
  build(b) {
    const script = b.param<string>('script').split(',').map((w) => CODES[w as keyof typeof CODES]);
    const name = String(b.definition['name']);
    const pos = b.slots(1);
    return {
      tick(a, fresh) {
        events.push(`${fresh ? 'start' : 'tick'} ${name}`);
        const k = a.slots[pos]!;
        a.slots[pos] = k + 1;
        return script[Math.min(k, script.length - 1)]!;
      },
      onHalt() {
        events.push(`halt ${name}`);
      },
    };
  },
});

function testCatalog(): NodeCatalog {
  const catalog = new NodeCatalog();
  catalog.register(scripted);
  return catalog;
}

const FLAGS = ['f0', 'f1', 'f2'] as const;
const BLACKBOARD = { f0: false, f1: false, f2: false, n: 0, label: 'a "quoted" <tag> & more,\nover\ttwo lines' };
const word = fc.constantFrom('success', 'failure', 'running');

/** Random trees: the generator of test/bt/properties.test.ts, widened to every parameter the XML must carry. */
function nodeArb(): fc.Arbitrary<NodeDefinition> {
  let leafId = 0;
  const { node } = fc.letrec<{ node: NodeDefinition; leaf: NodeDefinition; composite: NodeDefinition; decorator: NodeDefinition }>((tie) => ({
    node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('composite'), tie('decorator')),
    leaf: fc.oneof(
      fc.array(word, { minLength: 1, maxLength: 4 }).map((script) => ({ type: 'scripted', name: `L${leafId++}`, script: script.join(',') })),
      fc
        .record({
          action: fc.constantFrom('walk', 'aim', 'Sequence', 'log', 'say-hi'),
          args: fc.dictionary(
            fc.constantFrom('to', 'speed', 'n', 'name', 'canopy_timeout'),
            fc.constantFrom('bb.n', "''", "'run'", "'3'", "'{x}'", "'=x'", 'bb.n + 1', '"dq"', 3, -1.5, true, null, [1, 'a'], { k: 'v' }),
            { maxKeys: 3 },
          ),
          options: fc.constantFrom({}, { instant: true }, { timeout: 0.3 }, { until: 'bb.f2' }, { timeout: 0.25, until: 'bb.n > 2 && bb.f0' }),
        })
        .map(({ action, args, options }) => ({ type: 'action', action, args, ...options })),
      fc.constantFrom(...FLAGS).map((f) => ({ type: 'condition', expr: `bb.${f}` })),
      fc.constantFrom(0, 0.2, 0.15, 1 / 3, [0.1, 0.4]).map((seconds) => ({ type: 'wait', seconds })),
      fc.constantFrom('succeed', 'fail', 'running').map((type) => ({ type })),
      fc.constant({ type: 'set', values: { n: 'bb.n + 1', f2: '!bb.f2' } }),
      fc.constant({ type: 'log', message: "'n is ' + bb.n + bb.label", level: 'info' }),
    ),
    composite: fc
      .record({
        type: fc.constantFrom('sequence', 'selector', 'parallel', 'all', 'random', 'rotator'),
        reactive: fc.boolean(),
        children: fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
        guard: fc.option(fc.constantFrom(...FLAGS), { nil: undefined }),
        resetOnAbort: fc.boolean(),
        service: fc.constantFrom(0, 1, 2),
        failure: fc.integer({ min: 1, max: 4 }),
      })
      .map(({ type, reactive, children, guard, resetOnAbort, service, failure }) => {
        const def: Record<string, unknown> = { type, name: `${type} "${children.length}"${children.length > 2 ? '\n\tsecond line' : ''}`, children };
        if (service >= 1) def['services'] = [{ every: 0.2, values: { n: 'bb.n + 1' } }];
        if (service >= 2) (def['services'] as unknown[]).push({ every: 0.3, values: { f1: '!bb.f1' } });
        if (type === 'sequence' || type === 'selector') def['reactive'] = reactive;
        if (type === 'rotator') def['resetOnAbort'] = resetOnAbort;
        if (type === 'random' && children.length > 1) def['weights'] = children.map((_, k) => k + 1);
        if (type === 'parallel') {
          def['success'] = Math.max(1, Math.ceil(children.length / 2));
          def['failure'] = Math.min(failure, children.length);
        }
        if (type === 'selector' && !reactive) {
          def['children'] = children.map((c, k) => (k === 0 && guard !== undefined ? { ...c, if: `bb.${guard}`, abort: 'lower' } : c));
        }
        return def as NodeDefinition;
      }),
    decorator: fc
      .record({
        type: fc.constantFrom('inverter', 'succeeder', 'failer', 'repeat', 'retry', 'keepRunningUntilFailure', 'cooldown', 'timeLimit', 'delay', 'once'),
        child: tie('node'),
        guard: fc.option(fc.constantFrom(...FLAGS), { nil: undefined }),
        abort: fc.constantFrom('none', 'self'),
        seconds: fc.constantFrom(0.2, 0.3, 0.15, 0.1 + 0.2),
        times: fc.constantFrom(1, 3, -1),
      })
      .map(({ type, child, guard, abort, seconds, times }) => {
        const def: Record<string, unknown> = { type, child };
        if (type === 'repeat') def['times'] = times;
        if (type === 'retry') def['attempts'] = times === -1 ? 2 : times;
        if (type === 'cooldown' || type === 'timeLimit' || type === 'delay') def['seconds'] = seconds;
        if (guard !== undefined) Object.assign(def, { if: `bb.${guard}`, abort });
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

/** Ticks an agent through the world; returns per tick the decisions, logs and scripted-leaf events. */
function run(t: CompiledTree, world: readonly WorldStep[]): string[] {
  const a = new Agent(t, 'npc', { seed: 11 });
  const out = new DecisionBuffer(true);
  const running = new Set<number>();
  return world.map((step, tick) => {
    out.clear();
    events.length = 0;
    FLAGS.forEach((f, k) => (a.bb[f] = step.flags[k]));
    let r = 0;
    for (const seq of [...running].toSorted((x, y) => x - y)) {
      const choice = step.results[r++ % step.results.length]!;
      if (choice !== 0 && a.deliverResult(seq, choice === 1)) running.delete(seq);
    }
    a.tick(tick * 0.1, 0.1, out);
    for (const [, seq] of out.actions) running.add(seq);
    for (const [, seq] of out.cancels) running.delete(seq);
    return JSON.stringify([out.actions, out.cancels, out.done, out.errors, out.logs, events, a.bb]);
  });
}

function names(def: TreeDefinition): unknown[] {
  const out: unknown[] = [];
  walkDefinition(def.root, (n) => out.push(n['name']));
  return out;
}

function library(defs: Record<string, TreeDefinition>): TreeLibrary {
  const r = TreeLibrary.fromDefinitions(defs, { catalog: testCatalog() });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.library;
}

describe('export → import round trip', () => {
  it('a random tree (with a subtree) written as XML and read back decides identically on random inputs', () => {
    fc.assert(
      fc.property(nodeArb(), nodeArb(), worldArb, (root, sub, world) => {
        const defs: Record<string, TreeDefinition> = {
          main: { blackboard: BLACKBOARD, root: { type: 'sequence', children: [root, { type: 'subtree', tree: 'sub-tree', args: { n: 'bb.n * 2', label: "'x'" } }] } },
          'sub-tree': { description: 'a subtree', blackboard: BLACKBOARD, root: sub },
        };
        const original = library(defs);
        const xml = exportXml(defs, { catalog: testCatalog(), main: 'main' });
        const back = importXml(xml, { file: 'rt.xml', catalog: testCatalog() });
        if (!back.ok) throw new Error(`${back.errors.map(formatInteropError).join('\n')}\n${xml}`);
        expect(back.main).toBe('main');
        expect(Object.keys(back.trees).toSorted()).toEqual(['main', 'sub-tree']);
        expect(back.trees['sub-tree']!.description).toBe('a subtree');
        expect(run(back.library.get('main')!, world)).toEqual(run(original.get('main')!, world));
        // Names (shown in the debugger; quotes, <, &, newlines and tabs included) come back as written.
        expect(names(back.trees['main']!)).toEqual(names(defs['main']!));
        // Saved again by Groot2 (every declared port written, empty when unset; _uid attributes): the same trees.
        const saved = importXml(asGroot2Saves(xml), { file: 'saved.xml', catalog: testCatalog() });
        expect(saved.ok && saved.trees).toEqual(back.trees);
        // Nothing drifts over repeated round trips (the first import only drops defaults written out explicitly).
        const again = exportXml(back.trees, { catalog: testCatalog(), main: 'main' });
        const twice = importXml(again, { file: 'rt2.xml', catalog: testCatalog() });
        expect(twice.ok && twice.trees).toEqual(back.trees);
      }),
      { numRuns: 250 },
    );
  }, 60_000); // 4–7 s on a quiet machine, 16 s seen under load: 250 random trees, CPU-bound
});
