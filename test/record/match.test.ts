// Exact replay compares decisions without re-encoding them (src/record/match.ts). Its one duty: never call two
// frames equal when the service's encoder would write different bytes. Checked here against encodeDecisions
// itself on random decisions drawn from small domains (so that near misses are common), wide integers, floats,
// NaN, -0, non-ASCII and long strings, nested args and long lists included.

import { describe, expect, it } from 'vitest';
import { encodeDecisions, type DecisionsFields } from '../../src/protocol/index.js';
import { matchesDecisions } from '../../src/record/match.js';

// A seeded generator: the test is deterministic.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NUMBERS = [0, -0, 1, 31, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 40, -1, -32, -33, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1, 0.5, -2.25, 1e300, NaN, Infinity, -Infinity, Number.MAX_SAFE_INTEGER];
const STRINGS = ['', 'a', 'moveTo', 'walk', 'run', 'x'.repeat(31), 'x'.repeat(32), 'y'.repeat(255), 'y'.repeat(256), 'é', 'naïve', '\u{1F600}', '\ud800', 'E_PLUGIN'];

function pick<T>(r: () => number, list: readonly T[]): T {
  return list[Math.floor(r() * list.length)]!;
}

function value(r: () => number, depth: number): unknown {
  const k = r();
  if (k < 0.3) return pick(r, NUMBERS);
  if (k < 0.5) return pick(r, STRINGS);
  if (k < 0.55) return r() < 0.5;
  if (k < 0.6) return r() < 0.5 ? null : undefined;
  if (k < 0.8 && depth < 3) return Array.from({ length: Math.floor(r() * (r() < 0.1 ? 20 : 4)) }, () => value(r, depth + 1));
  if (depth < 3) {
    const o: Record<string, unknown> = {};
    const n = Math.floor(r() * (r() < 0.1 ? 18 : 4));
    for (let i = 0; i < n; i++) o[pick(r, ['to', 'at', 'speed', 'from', 'waypoint', '0', '1', 'é', 'k' + String(i)])] = value(r, depth + 1);
    return o;
  }
  return pick(r, NUMBERS);
}

function decisions(r: () => number): DecisionsFields {
  const id = () => (r() < 0.8 ? pick(r, [0, 1, 2, 200, 70000, 2 ** 33, -5]) : pick(r, ['a', 'guard-1', 'é']));
  const n = () => Math.floor(r() * (r() < 0.1 ? 20 : 4));
  return {
    tick: pick(r, [1, 2, 300, 2 ** 32 + 1]),
    basedOn: r() < 0.8 ? pick(r, [1, 2, 300]) : undefined,
    actions: Array.from({ length: n() }, () => [id(), pick(r, [1, 2, 200, 2 ** 35]), pick(r, STRINGS), value(r, 1) as Record<string, unknown>] as const),
    cancels: Array.from({ length: n() }, () => [id(), pick(r, [1, 2, 200])] as const),
    done: Array.from({ length: n() }, () => [id(), r() < 0.5 ? 'success' : 'failure'] as const),
    errors: r() < 0.2 ? [[id(), 'E_PLUGIN', pick(r, STRINGS)]] : [],
  } as DecisionsFields;
}

describe('matchesDecisions', () => {
  it('accepts a frame only when encodeDecisions writes exactly its bytes (random pairs, many near misses)', () => {
    const r = rng(7);
    let proven = 0;
    const wrong: unknown[] = [];
    for (let i = 0; i < 20_000; i++) {
      const a = decisions(r);
      const recorded = encodeDecisions(a);
      // Half the same decisions, half a copy with one value changed.
      const b = r() < 0.5 ? a : mutate(a, r);
      if (!matchesDecisions(recorded, b)) continue;
      proven++;
      if (!encodeDecisions(b).equals(recorded)) wrong.push({ a, b });
    }
    expect(wrong).toEqual([]);
    expect(proven).toBeGreaterThan(1000);
  });

  it('proves the frames replay produces (ASCII names, 32-bit ids and seqs, positions, literal args) equal without encoding', () => {
    const args = Object.freeze({ waypoint: 2, speed: 'walk' });
    const d: DecisionsFields = {
      tick: 70_000,
      basedOn: 69_999,
      actions: Array.from({ length: 300 }, (_, i) => [i * 1000, i + 1, i % 2 === 0 ? 'moveTo' : 'flee', i % 2 === 0 ? args : { from: [i * 0.5, -i] }] as const),
      cancels: [[5, 7]],
      done: [[-3, 'success'], ['g-1', 'failure']],
      errors: [[9, 'E_PLUGIN', 'plugin threw: boom']],
    };
    expect(matchesDecisions(encodeDecisions(d), d)).toBe(true);
    expect(matchesDecisions(encodeDecisions({ tick: 1 }), { tick: 1, actions: [], cancels: [] })).toBe(true);
  });

  it('leaves what it does not model to the encoder (false, never a wrong true)', () => {
    const wide: DecisionsFields = { tick: 2 ** 40 };
    expect(matchesDecisions(encodeDecisions(wide), wide)).toBe(false);
    const nan: DecisionsFields = { tick: 1, actions: [[1, 1, 'aim', { at: NaN }]] };
    expect(matchesDecisions(encodeDecisions(nan), nan)).toBe(false);
    const accented: DecisionsFields = { tick: 1, actions: [[1, 1, 'visé', {}]] };
    expect(matchesDecisions(encodeDecisions(accented), accented)).toBe(false);
    const d: DecisionsFields = { tick: 1, basedOn: 1 };
    expect(matchesDecisions(encodeDecisions(d), { tick: 1 })).toBe(false);
    expect(matchesDecisions(Buffer.concat([encodeDecisions(d), Buffer.from([0xc0])]), d)).toBe(false);
    expect(matchesDecisions(encodeDecisions(d).subarray(0, 5), d)).toBe(false);
  });
});

/** A copy of `d` with one thing changed (a value, a list cut short, a type swapped). */
function mutate(d: DecisionsFields, r: () => number): DecisionsFields {
  const copy = structuredClone(d) as { -readonly [K in keyof DecisionsFields]: unknown } & Record<string, unknown>;
  const lists = ['actions', 'cancels', 'done', 'errors'].filter((k) => ((copy[k] as unknown[] | undefined)?.length ?? 0) > 0);
  const k = r();
  if (k < 0.15 || lists.length === 0) {
    copy.tick = pick(r, [1, 2, 300, 1.5, 2 ** 32 + 1, '1']);
    return copy as DecisionsFields;
  }
  const list = copy[pick(r, lists)] as unknown[][];
  const entry = list[Math.floor(r() * list.length)]!;
  if (k < 0.25) list.pop();
  else if (k < 0.6) entry[Math.floor(r() * entry.length)] = value(r, 2);
  else {
    const at = entry.length - 1;
    const last = entry[at];
    if (last !== null && typeof last === 'object' && !Array.isArray(last)) {
      const keys = Object.keys(last);
      if (keys.length > 0 && r() < 0.5) (last as Record<string, unknown>)[pick(r, keys)] = value(r, 2);
      else (last as Record<string, unknown>)[pick(r, ['to', 'at', 'zz'])] = value(r, 2);
    } else entry[at] = value(r, 2);
  }
  return copy as DecisionsFields;
}
