// Level of detail in the load generator (`--lod`): the mix of tick intervals the simulated game servers give
// their agents at spawn (docs/protocol.md, `every`), and which agents' rows a game sends on each tick
// (`--lod-rows due`: only the agents the service ticks then, by the service's own phase rule).

import type { AgentId } from '../../src/client/index.js';
import { lodPhase } from '../../src/service/pool/lod.js';

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

/** `--lod-rows`: `all`, a row for every agent every tick; `due`, an agent's row only on the ticks it is ticked. */
export type LodRows = 'all' | 'due';

/**
 * Which agents a game sends rows for on each session tick when it sends them only when due (`--lod-rows due`):
 * agent `i` (interval `everyOf(mix, i)`) on the session ticks k (0 = the first tick after its spawn) with
 * k mod every = lodPhase(id, every), the very rule the service ticks it by (src/service/pool/lod.ts): its row
 * arrives on the tick that reads it, and an agent not listed keeps its last observation (`full: false`).
 */
export class DueSchedule {
  /** Per interval of the mix: the agents of each phase (ascending indices). */
  private readonly classes: Array<{ every: number; byPhase: Int32Array[] }> = [];
  private readonly out: Int32Array;

  /** `ids`: the agents' ids by index; null: dense (the index is the id). */
  constructor(mix: LodMix, size: number, ids: readonly AgentId[] | null) {
    const lists = new Map<number, number[][]>();
    for (const [every] of mix) if (!lists.has(every)) lists.set(every, Array.from({ length: every }, () => []));
    for (let i = 0; i < size; i++) {
      const every = everyOf(mix, i);
      lists.get(every)![lodPhase(ids === null ? i : ids[i]!, every)]!.push(i);
    }
    for (const [every, byPhase] of lists) this.classes.push({ every, byPhase: byPhase.map((l) => Int32Array.from(l)) });
    this.out = new Int32Array(size);
  }

  /** The agents (indices) due at session tick `k` (0: the first tick after the spawn). Valid until the next call. */
  due(k: number): Int32Array {
    let n = 0;
    for (const { every, byPhase } of this.classes) {
      const list = byPhase[k % every]!;
      this.out.set(list, n);
      n += list.length;
    }
    return this.out.subarray(0, n);
  }
}
