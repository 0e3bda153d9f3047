// Level of detail in the load generator (`--lod`): the mix of tick intervals the simulated game servers give
// their agents at spawn (docs/protocol.md, `every`). Self-contained: the options parse it, games ask it per agent.

/** A mix: [every, percent] pairs whose percents add up to 100. */
export type LodMix = ReadonlyArray<readonly [every: number, percent: number]>;

/** `--lod on`: a large open world — 10 % near (every tick), 30 % mid (every 4th), 60 % far (every 20th). */
export const DEFAULT_LOD_MIX: LodMix = [
  [1, 10],
  [4, 30],
  [20, 60],
];

/** Parses `--lod`: `off`, `on` (the default mix) or `EVERY:PERCENT,...` (e.g. `1:10,4:30,20:60`). Null: off. */
export function parseLodMix(text: string): LodMix | null | string {
  if (text === 'off') return null;
  if (text === 'on') return DEFAULT_LOD_MIX;
  const mix: Array<[number, number]> = [];
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    if (m === null) return `off, on, or EVERY:PERCENT pairs such as 1:10,4:30,20:60`;
    const every = Number(m[1]);
    if (every < 1 || every > 1_000_000) return 'intervals from 1 to 1000000';
    mix.push([every, Number(m[2])]);
  }
  const total = mix.reduce((n, [, p]) => n + p, 0);
  if (Math.abs(total - 100) > 1e-9) return `percents adding up to 100 (got ${total})`;
  return mix;
}

/**
 * The interval of agent `i`: agents are dealt to the mix's classes by `i` modulo 100 (10 % → i mod 100 < 10, ...),
 * so every session holds the mix exactly; the service spreads each class over its ticks by a hash of the id.
 */
export function everyOf(mix: LodMix, i: number): number {
  const r = i % 100;
  let acc = 0;
  for (const [every, percent] of mix) {
    acc += percent;
    if (r < acc) return every;
  }
  return mix.at(-1)![0];
}

/** Agent-ticks per session tick, as a fraction of the agents (1 without level of detail): Σ percent / every. */
export function tickFraction(mix: LodMix | null): number {
  if (mix === null) return 1;
  return mix.reduce((n, [every, percent]) => n + percent / 100 / every, 0);
}

/** The mix as text, for reports: `1:10,4:30,20:60`. */
export function formatLodMix(mix: LodMix | null): string {
  return mix === null ? 'off' : mix.map(([e, p]) => `${e}:${p}`).join(',');
}
