// Arrays of numbers (an observation's positions) kept as numbers in a Float64Array, not as arrays: their length, then
// their numbers. Row batches carry them so to the workers (shard.ts, host.ts), checkpoints keep them so (checkpoint.ts):
// structured clone and serialize copy a typed array in one piece, where they walk arrays one by one.

import { MAX_VECTOR } from './wire.js';

/** An array of at most MAX_VECTOR numbers (a hole is not a number): one that goes into a Float64Array as it is. */
export function isVector(v: unknown): v is readonly number[] {
  if (!Array.isArray(v) || v.length > MAX_VECTOR) return false;
  for (let k = 0; k < v.length; k++) if (typeof v[k] !== 'number') return false;
  return true;
}

/** Writes `v` at `at` of `vectors` (its length, then its numbers), which has room for 1 + v.length numbers there. */
export function writeVector(vectors: Float64Array, at: number, v: readonly number[]): void {
  vectors[at] = v.length;
  for (let k = 0; k < v.length; k++) vectors[at + 1 + k] = v[k]!;
}

/** The vector at `at` of `vectors` as a plain array of its own (what the game sent). */
export function readVector(vectors: Float64Array, at: number): number[] {
  const n = vectors[at]!;
  if (n === 2) return [vectors[at + 1]!, vectors[at + 2]!];
  const out: number[] = [];
  for (let k = 0; k < n; k++) out.push(vectors[at + 1 + k]!);
  return out;
}
