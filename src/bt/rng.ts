// The agent's seeded random generator (mulberry32): one uint32 of state, so it exports as plain data.

/** Advances `state` and returns [nextState, value in [0,1)]; used by Agent.random(). */
export function mulberry32Next(state: number): number {
  return (state + 0x6d2b79f5) | 0;
}

/** The value drawn from a state produced by mulberry32Next. */
export function mulberry32Value(state: number): number {
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** A deterministic 32-bit seed for an agent: its spawn seed, or a hash of its id (FNV-1a). */
export function seedFor(id: number | string, seed?: number): number {
  if (seed !== undefined) return seed >>> 0 || 0x9e3779b9;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return integerIdSeed(id);
  const text = typeof id === 'number' ? `#${id}` : id;
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Decimal digits of an integer id, least significant first (integerIdSeed). */
const digits = new Uint8Array(20);

/**
 * seedFor's hash of `#${id}` for a safe integer id, from its decimal digits without the string: converting a number
 * to text was most of an unseeded spawn's cost per agent on a worker.
 */
function integerIdSeed(id: number): number {
  let h = Math.imul(0x811c9dc5 ^ 0x23, 0x01000193); // '#'
  let n = id;
  if (n < 0) {
    h = Math.imul(h ^ 0x2d, 0x01000193); // '-'
    n = -n;
  }
  let k = 0;
  do {
    const d = n % 10;
    digits[k++] = 0x30 + d;
    n = (n - d) / 10;
  } while (n > 0);
  while (k > 0) h = Math.imul(h ^ digits[--k]!, 0x01000193);
  return h >>> 0;
}
