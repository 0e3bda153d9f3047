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
  const text = typeof id === 'number' ? `#${id}` : id;
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
