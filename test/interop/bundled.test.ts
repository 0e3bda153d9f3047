// The bundled trees (trees/*.json, *.yaml) survive export → import: the re-imported trees decide exactly like the
// originals on random snapshots, world states and action results.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, DecisionBuffer, TreeLibrary, type CompiledTree } from '../../src/bt/index.js';
import { exportXml, formatInteropError, importXml } from '../../src/interop/index.js';

const TREES = new URL('../../trees/', import.meta.url).pathname;

const point = fc.record({ x: fc.integer({ min: -20, max: 20 }), y: fc.integer({ min: -20, max: 20 }) });
const stepArb = fc.record({
  self: fc.record({
    hp: fc.integer({ min: 0, max: 100 }),
    enemyVisible: fc.boolean(),
    enemyDist: fc.integer({ min: 0, max: 10 }),
    enemyPos: point,
    pos: point,
    formationSlot: point,
    lastHit: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }),
  }),
  world: fc.record({ player: fc.option(point, { nil: null }), enemies: fc.array(point, { maxLength: 3 }), cover: fc.array(point, { maxLength: 2 }) }),
  /** Per running action (in seq order): nothing (0), success (1), failure (2). */
  results: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 3, maxLength: 3 }),
});

type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

function decisions(t: CompiledTree, steps: readonly Step[]): string[] {
  const a = new Agent(t, 'npc', { seed: 4 });
  const out = new DecisionBuffer(true);
  const running = new Set<number>();
  return steps.map((s, tick) => {
    a.self = s.self;
    a.world = s.world;
    let r = 0;
    for (const seq of [...running].toSorted((x, y) => x - y)) {
      const choice = s.results[r++ % s.results.length]!;
      if (choice !== 0 && a.deliverResult(seq, choice === 1)) running.delete(seq);
    }
    out.clear();
    a.tick(tick * 0.25, 0.25, out);
    for (const [, seq] of out.actions) running.add(seq);
    for (const [, seq] of out.cancels) running.delete(seq);
    return JSON.stringify([out.actions, out.cancels, out.done, out.errors, out.logs, a.bb]);
  });
}

describe('bundled trees through Groot2 XML', async () => {
  const loaded = await TreeLibrary.loadFolder(TREES);
  if (!loaded.ok) throw new Error('the bundled trees do not load');
  const original = loaded.library;
  const defs = Object.fromEntries(original.names().map((n) => [n, original.definition(n)!]));
  const xml = exportXml(defs);
  const back = importXml(xml, { file: 'bundled.xml' });
  if (!back.ok) throw new Error(back.errors.map(formatInteropError).join('\n'));

  it('every bundled tree comes back, with its description and blackboard', () => {
    expect(Object.keys(back.trees).toSorted()).toEqual(original.names());
    for (const name of original.names()) {
      expect(back.trees[name]!.description).toBe(defs[name]!.description);
      expect(back.trees[name]!.blackboard).toEqual(defs[name]!.blackboard);
    }
  });

  it.each(['guard', 'follower', 'squad'])('%s decides identically after the round trip', (name) => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 5, maxLength: 60 }), (steps) => {
        expect(decisions(back.library.get(name)!, steps)).toEqual(decisions(original.get(name)!, steps));
      }),
      { numRuns: 150 },
    );
  });

  it('the definitions come back field for field (only defaults and field order may differ)', () => {
    const strip = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === '$schema' ? undefined : x)));
    for (const name of ['guard', 'follower', 'take-cover']) expect(strip(back.trees[name])).toEqual(strip(defs[name]));
  });
});
