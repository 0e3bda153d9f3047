// The point functions (`dist`, `dist2`, `nearest`) read arrays and objects directly when nothing can be inherited: the same
// answers as reading every coordinate as an own property (the reference below, the helpers' reading before that
// fast path), over random points of every shape, with and without indexes and keys added to the prototypes.

import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dist, dist2, nearest } from '../../src/bt/expr/runtime.js';

/** The contract's reading: a point is an array or a plain object, each coordinate an own numeric property. */
function isPlain(o: object): boolean {
  const p: unknown = Object.getPrototypeOf(o);
  return p === Object.prototype || p === Array.prototype || p === null;
}
function coord(p: object, i: 0 | 1 | 2, key: 'x' | 'y' | 'z'): number {
  let v: unknown;
  if (Array.isArray(p)) v = (p.length === 2 || p.length === 3) && Object.hasOwn(p, i) ? (p as unknown[])[i] : undefined;
  else v = Object.hasOwn(p, key) ? (p as Record<string, unknown>)[key] : undefined;
  return typeof v === 'number' ? v : NaN;
}
function squaredDistance(a: unknown, b: unknown): number {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null || !isPlain(a) || !isPlain(b)) return NaN;
  const dx = coord(a, 0, 'x') - coord(b, 0, 'x');
  const dy = coord(a, 1, 'y') - coord(b, 1, 'y');
  const az = coord(a, 2, 'z');
  const bz = coord(b, 2, 'z');
  if (az === az && bz === bz) return dx * dx + dy * dy + (az - bz) * (az - bz);
  return dx * dx + dy * dy;
}
const finite = (r: number): number | null => (r - r === 0 ? r : null);
const referenceDist2 = (a: unknown, b: unknown): number | null => finite(squaredDistance(a, b));
const referenceDist = (a: unknown, b: unknown): number | null => finite(Math.sqrt(squaredDistance(a, b)));
function referenceNearest(list: unknown, from: unknown, maxDist: unknown): unknown {
  if (!Array.isArray(list) || typeof maxDist !== 'number' || !(maxDist >= 0)) return null;
  let best: unknown = null;
  let bestD = maxDist * maxDist;
  let found = false;
  for (let i = 0; i < list.length; i++) {
    const el: unknown = list[i];
    const d = squaredDistance(el, from);
    if (d < bestD || (!found && d <= bestD)) {
      best = el;
      bestD = d;
      found = true;
    }
  }
  return best;
}

const coordinate = fc.oneof(
  { weight: 6, arbitrary: fc.double({ min: -50, max: 50, noNaN: true }) },
  { weight: 2, arbitrary: fc.integer({ min: -5, max: 5 }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(NaN, Infinity, -Infinity, -0, 1e200, null, 'a', true, undefined, [1]) },
);

/** Points and things that are not: pairs, triples, other lengths, holes, objects with x/y/z, odd prototypes. */
const point: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(coordinate, coordinate) },
  { weight: 3, arbitrary: fc.tuple(coordinate, coordinate, coordinate) },
  { weight: 1, arbitrary: fc.array(coordinate, { maxLength: 5 }) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.integer({ min: 1, max: 4 }), fc.array(fc.tuple(fc.nat(3), coordinate), { maxLength: 3 })).map(([length, set]) => {
      // A sparse array: holes where nothing was set.
      // oxlint-disable-next-line unicorn/no-new-array -- holes are the point of this case
      const a = new Array<unknown>(length);
      for (const [i, v] of set) if (i < length) a[i] = v;
      return a;
    }),
  },
  { weight: 3, arbitrary: fc.record({ x: coordinate, y: coordinate, z: coordinate }, { requiredKeys: [] }) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('null', 'object', 'class', 'array-like'), coordinate, coordinate).map(([kind, x, y]) => {
      if (kind === 'class') return new (class Point extends Array {})(2).fill(x);
      // Not an array, though its prototype is Array.prototype: a plain point by its own x and y.
      if (kind === 'array-like') return Object.assign(Object.create(Array.prototype) as object, { x, y });
      const a: unknown[] = [x, y];
      Object.setPrototypeOf(a, kind === 'null' ? null : Object.prototype);
      return a;
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, undefined, 3, 'pos', Object.create({ x: 1, y: 2 })) },
  {
    // Proxies are read by their own-property answers: an honest one as its target, a liar's made-up elements never.
    weight: 1,
    arbitrary: fc.tuple(coordinate, coordinate, fc.constantFrom('array', 'lying array', 'object', 'lying object')).map(([x, y, kind]) => {
      if (kind === 'array') return new Proxy([x, y], {});
      if (kind === 'object') return new Proxy({ x, y }, {});
      if (kind === 'lying array') return new Proxy([] as unknown[], { get: (target, key) => (key === 'length' ? 2 : key === '0' ? x : key === '1' ? y : Reflect.get(target, key)) });
      return new Proxy({} as Record<string, unknown>, { get: (target, key) => (key === 'x' ? x : key === 'y' ? y : Reflect.get(target, key)) });
    }),
  },
);

/** What a test may add to a prototype for one run: inherited indexes and keys must never be read. */
const pollution = fc.constantFrom<ReadonlyArray<readonly [object, PropertyKey, unknown]>>(
  [],
  [[Array.prototype, 1, 7]],
  [[Array.prototype, 2, 7]],
  [[Object.prototype, 0, 7]],
  [[Object.prototype, 'x', 7]],
  [[Object.prototype, 'y', 7]],
  [[Object.prototype, 'z', 7]],
  [[Object.prototype, 'x', 7], [Array.prototype, 0, 7]],
);

function polluted<T>(entries: ReadonlyArray<readonly [object, PropertyKey, unknown]>, run: () => T): T {
  for (const [proto, key, value] of entries) (proto as Record<PropertyKey, unknown>)[key] = value;
  try {
    return run();
  } finally {
    for (const [proto, key] of entries) delete (proto as Record<PropertyKey, unknown>)[key];
  }
}

describe('point functions read by index', () => {
  it('dist and dist2 answer as the own-property reading, prototypes added to or not', () => {
    fc.assert(
      fc.property(point, point, pollution, (a, b, entries) => {
        const [got, want] = polluted(entries, () => [
          [dist(a, b), dist2(a, b)],
          [referenceDist(a, b), referenceDist2(a, b)],
        ]);
        expect(got).toEqual(want);
      }),
      { numRuns: 3000 },
    );
  });

  it('nearest picks the element the own-property reading picks (the same element, ties to the first)', () => {
    const maxDist = fc.oneof(fc.constant(Infinity), fc.double({ min: 0, max: 60, noNaN: true }), fc.constantFrom<unknown>(-1, NaN, null));
    fc.assert(
      fc.property(fc.array(point, { maxLength: 12 }), point, maxDist, pollution, (list, from, max, entries) => {
        // Duplicates make ties.
        const withTies = list.length > 0 ? [...list, list[0]] : list;
        const [got, want] = polluted(entries, () => [nearest(withTies, from, max), referenceNearest(withTies, from, max)]);
        expect(Object.is(got, want)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('never reads a coordinate a pair inherits', () => {
    const pair: unknown[] = [3];
    pair.length = 2; // [3, hole]
    polluted([[Array.prototype, 1, 4]], () => {
      expect(dist(pair, [0, 0])).toBeNull();
      expect(nearest([pair, [9, 9]], [0, 0], Infinity)).toEqual([9, 9]);
    });
    expect(nearest([pair, [9, 9]], [0, 0], Infinity)).toEqual([9, 9]);
    // A triple without its z: a 2D point, whatever Array.prototype[2] holds.
    const flat: unknown[] = [3, 4];
    flat.length = 3;
    polluted([[Array.prototype, 2, 12]], () => {
      expect(dist(flat, [0, 0, 0])).toBe(5);
      expect(dist([0, 0, 0], flat)).toBe(5);
    });
    // An object without x, whatever Object.prototype.x holds.
    polluted([[Object.prototype, 'x', 3]], () => expect(dist({ y: 4 }, { x: 0, y: 0 })).toBeNull());
    expect(nearest([[3, 4], [9, 9]], [0, 0], 5)).toEqual([3, 4]);
    expect(dist([3, 4], [0, 0])).toBe(5);
  });
});
