// The load generator's command line: flags, defaults and bounds (every run is bounded in time and size).

import { parseArgs } from 'node:util';
import type { Mode } from '../../src/client/index.js';
import type { BurstKind } from './burst.js';
import { ID_STYLES, type IdStyle } from './ids.js';
import { parseLodMix, type LodMix, type LodRows } from './lod.js';

export interface LoadOptions {
  /** An existing service (`ws://host:port`); undefined: the generator starts one per run. */
  readonly url: string | undefined;
  readonly apiKey: string | undefined;
  readonly modes: readonly Mode[];
  readonly sessions: number;
  readonly agents: number;
  readonly hz: number;
  readonly seconds: number;
  readonly warmup: number;
  /** Worker counts to run with (one run each): a child service only. */
  readonly workers: readonly number[];
  readonly tree: string;
  readonly seed: number;
  /** Latency budget (ms): lockstep latency p99, fixed tick lateness p99. */
  readonly budgetMs: number;
  readonly stagger: boolean;
  readonly findCapacity: boolean;
  readonly minAgents: number;
  readonly maxAgents: number;
  readonly resolution: number;
  readonly maxProbes: number;
  /** Measured seconds of each capacity probe. */
  readonly probeSeconds: number;
  readonly json: string | undefined;
  /** Progress line period, seconds; 0: none. */
  readonly progress: number;
  /** Node binary of the child service. */
  readonly serviceNode: string | undefined;
  /** Extra flags for the child service's node. */
  readonly nodeArgs: readonly string[];
  /** Write the child service's CPU profiles here (node --cpu-prof). */
  readonly cpuProf: string | undefined;
  /** Agents watched by inspector pages during the run (one run per value, compared: the cost of watching). */
  readonly watch: readonly number[];
  /** Record every session (CANOPY_RECORD=all): off, on, or both (each run twice, off then on, compared). */
  readonly record: 'off' | 'on' | 'both';
  /** A Redis URL given to the started service as CANOPY_REDIS_URL (durable sessions); null: none. */
  readonly redis: string | null;
  /** Agent id styles (bench/load/ids.ts), one run each; default dense. */
  readonly ids: readonly IdStyle[];
  /** Burst runs instead of the steady load (bench/load/burst.ts); null: none. */
  readonly burst: readonly BurstKind[] | null;
  readonly burstAgents: number;
  readonly burstRepeat: number;
  /** `--burst start`: a rehearsal against a throwaway service first, so that the generator's own code is warm. */
  readonly rehearse: boolean;
  /** The generator's own garbage collection (bench/lib/generator-gc.ts): on its main thread, or with V8's helper threads. */
  readonly generatorGc: 'single' | 'parallel';
  /** Level of detail: the tick intervals agents get at spawn (null: every agent ticks every tick). */
  readonly lod: LodMix | null;
  /** With `lod`: which rows games send (`--lod-rows`); undefined: `due` in lockstep runs, `all` in fixed runs. */
  readonly lodRows: LodRows | undefined;
}

export class OptionsError extends Error {
  override readonly name = 'OptionsError';
}

export const USAGE = `usage: npm run loadtest -- [options]

Simulates game servers driving Canopy and reports what the service sustained.

  --url ws://host:port     load an existing service (default: start one per run on 127.0.0.1)
  --api-key KEY            API key for --url
  --mode M                 lockstep | fixed | both                       (default lockstep)
  --sessions K             game servers, one session each               (default 4)
  --agents N               agents in all, split over the sessions       (default 20000)
  --hz H                   snapshots (and fixed-mode ticks) per second  (default 20)
  --seconds S              measured window                              (default 60)
  --warmup S               warm-up before it                            (default 5)
  --workers W[,W...]       service worker threads; several: one run each, compared (default 2)
  --tree NAME              tree every agent runs: trees/ or bench/trees/  (default guard; e.g. squad, large, shooter)
  --budget-ms MS           p99 budget: lockstep latency, fixed tick lateness (default one period)
  --no-stagger             all game servers send at the same instant (default: spread over the period)
  --find-capacity          bisect the agent count to the largest that holds the budget
    --min-agents N --max-agents N --resolution F --max-probes N --probe-seconds S
  --json FILE              write the results as JSON
  --progress S             progress line period, 0 for none             (default 2)
  --service-node PATH      node binary for the started service          (default: this one)
  --node-args="FLAGS"      extra node flags for the started service
  --cpu-prof DIR           profile the started service (node --cpu-prof) into DIR
  --seed N                 world seed                                   (default 1)
  --watch N[,N...]         agents watched by inspector pages (/v1/inspector/ws) during the run; several
                           values: one run each, compared (e.g. 0,10: the capacity cost of watching) (default 0)
  --record off|on|both     record every session (CANOPY_RECORD=all) in a temp folder; both: each run
                           without then with recording, compared (CPU, latency, bytes per agent-tick)
  --redis URL              the started service keeps its sessions in this Redis (CANOPY_REDIS_URL): the
                           capacity cost of durable sessions (run once without, once with)
  --ids S[,S...]           agent ids: dense (0..N-1), sparse (k*1,000,000 + i for game server k) or
                           string ("npc-k-i"); several: one run each                   (default dense)
  --burst spawn|start|both spawn: while --sessions game servers tick, a newcomer spawns --burst-agents
                           agents in one message, ticks them 3 s and despawns them, --burst-repeat times:
                           the others' latency during the 2 s after each spawn and despawn vs steady.
                           start: --sessions game servers spawn --agents at once and tick at once: the
                           first 2 s vs the steady state after --warmup. Lockstep; defaults for a burst
                           run: --seconds 10, and for spawn --sessions 7 --agents 17500, for start
                           --sessions 8 --agents 20000
    --burst-agents N --burst-repeat N                                   (default 10000, 3)
    --no-rehearse          start: skip the rehearsal (before each start run the generator plays it once,
                           shortened, against a throwaway service, so that its own code is compiled and the
                           run measures the service's cold start, not the generator's; none with --url)
  --generator-gc single|parallel  the generator's own garbage collection: on its main thread (V8's
                           --single-threaded-gc: it starts itself again so), or with V8's four helper threads,
                           whose bursts take the cores from a service on the same machine; parallel keeps up
                           better when the generator itself is the bottleneck    (default single with --burst,
                           parallel otherwise)
  --lod off|on|MIX         AI level of detail: agents spawn with tick intervals (\`every\`); on = 1:10,4:30,20:60
                           (10 % every tick, 30 % every 4th, 60 % every 20th); MIX: EVERY:PERCENT,... (default off)
    --lod-rows due|all     due: a game sends an agent's row only on the ticks the service ticks it (its phase),
                           as a game with level of detail would; all: every agent's row every tick
                           (default: due in lockstep runs, all in fixed runs; due is lockstep only)`;

const MAX_AGENTS = 2_000_000;

/** Parses the command line. @throws {OptionsError} naming the first bad flag. */
export function parseOptions(argv: readonly string[]): LoadOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        url: { type: 'string' },
        'api-key': { type: 'string' },
        mode: { type: 'string', default: 'lockstep' },
        sessions: { type: 'string' },
        agents: { type: 'string' },
        hz: { type: 'string', default: '20' },
        seconds: { type: 'string' },
        warmup: { type: 'string', default: '5' },
        workers: { type: 'string' },
        tree: { type: 'string', default: 'guard' },
        seed: { type: 'string', default: '1' },
        'budget-ms': { type: 'string' },
        'no-stagger': { type: 'boolean', default: false },
        'find-capacity': { type: 'boolean', default: false },
        'min-agents': { type: 'string', default: '1000' },
        'max-agents': { type: 'string', default: '400000' },
        resolution: { type: 'string', default: '0.05' },
        'max-probes': { type: 'string', default: '12' },
        'probe-seconds': { type: 'string', default: '20' },
        json: { type: 'string' },
        progress: { type: 'string', default: '2' },
        'service-node': { type: 'string' },
        'node-args': { type: 'string' },
        'cpu-prof': { type: 'string' },
        watch: { type: 'string', default: '0' },
        record: { type: 'string', default: 'off' },
        redis: { type: 'string' },
        ids: { type: 'string', default: 'dense' },
        burst: { type: 'string' },
        'burst-agents': { type: 'string', default: '10000' },
        'burst-repeat': { type: 'string', default: '3' },
        'no-rehearse': { type: 'boolean', default: false },
        'generator-gc': { type: 'string' },
        lod: { type: 'string', default: 'off' },
        'lod-rows': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    throw new OptionsError(err instanceof Error ? err.message : String(err));
  }
  const v = parsed.values;
  if (v.help) throw new OptionsError(USAGE);
  // Defaults: the steady load, or a burst run's own (the cases).
  const burstKind = v.burst === 'start' ? 'start' : v.burst !== undefined ? 'spawn' : null;
  v.sessions ??= burstKind === 'spawn' ? '7' : burstKind === 'start' ? '8' : '4';
  v.agents ??= burstKind === 'spawn' ? '17500' : '20000';
  v.seconds ??= burstKind === null ? '60' : '10';
  const modes: Mode[] = v.mode === 'both' ? ['lockstep', 'fixed'] : v.mode === 'lockstep' || v.mode === 'fixed' ? [v.mode] : bad('--mode', 'lockstep, fixed or both', v.mode);
  const hz = number('--hz', v.hz, 0, 1000, { exclusiveMin: true });
  const sessions = integer('--sessions', v.sessions, 1, 1000);
  const agents = integer('--agents', v.agents, 1, MAX_AGENTS);
  if (agents < sessions) bad('--agents', `at least one agent per session (${sessions})`, v.agents);
  const url = v.url;
  if (url !== undefined && v.workers !== undefined) throw new OptionsError('--workers: only for a service the generator starts (not with --url)');
  if (url !== undefined && (v['cpu-prof'] !== undefined || v['service-node'] !== undefined || v['node-args'] !== undefined)) {
    throw new OptionsError('--cpu-prof, --service-node and --node-args apply to a service the generator starts (not with --url)');
  }
  if (url !== undefined && v.redis !== undefined) throw new OptionsError('--redis applies to a service the generator starts (not with --url)');
  if (url !== undefined && v.record !== 'off') throw new OptionsError('--record applies to a service the generator starts (not with --url)');
  const workers = (v.workers ?? '2').split(',').map((w) => integer('--workers', w.trim(), 0, 64));
  const watch = v.watch.split(',').map((w) => integer('--watch', w.trim(), 0, 1000));
  if (v['find-capacity'] && watch.length > 1) throw new OptionsError('--watch: one value with --find-capacity (run the search once per value)');
  const ids = v.ids.split(',').map((s) => {
    const style = s.trim();
    return (ID_STYLES as readonly string[]).includes(style) ? (style as IdStyle) : bad('--ids', 'dense, sparse or string', style);
  });
  const burst: BurstKind[] | null =
    v.burst === undefined ? null : v.burst === 'both' ? ['spawn', 'start'] : v.burst === 'spawn' || v.burst === 'start' ? [v.burst] : bad('--burst', 'spawn, start or both', v.burst);
  if (burst !== null && (v['find-capacity'] || v.mode !== 'lockstep' || watch.length > 1 || v.record !== 'off')) {
    throw new OptionsError('--burst: lockstep only, without --find-capacity, --watch lists or --record');
  }
  const lod = parseLodMix(v.lod);
  if (typeof lod === 'string') bad('--lod', lod, v.lod);
  const lodRows = v['lod-rows'] === undefined ? undefined : v['lod-rows'] === 'due' || v['lod-rows'] === 'all' ? v['lod-rows'] : bad('--lod-rows', 'due or all', v['lod-rows']);
  if (lodRows !== undefined && lod === null) throw new OptionsError('--lod-rows: only with --lod');
  if (lodRows === 'due' && modes.includes('fixed')) {
    throw new OptionsError('--lod-rows due: lockstep only (in fixed mode the service ticks on its own clock, so a game cannot know the tick a row reaches)');
  }
  const minAgents = integer('--min-agents', v['min-agents'], 1, MAX_AGENTS);
  const maxAgents = integer('--max-agents', v['max-agents'], minAgents, MAX_AGENTS);
  return {
    url,
    apiKey: v['api-key'],
    modes,
    sessions,
    agents,
    hz,
    seconds: number('--seconds', v.seconds, 0, 3600, { exclusiveMin: true }),
    warmup: number('--warmup', v.warmup, 0, 600),
    workers,
    tree: v.tree,
    seed: integer('--seed', v.seed, 0, 2 ** 31),
    budgetMs: v['budget-ms'] === undefined ? 1000 / hz : number('--budget-ms', v['budget-ms'], 0, 60_000, { exclusiveMin: true }),
    stagger: !v['no-stagger'],
    findCapacity: v['find-capacity'],
    minAgents,
    maxAgents,
    resolution: number('--resolution', v.resolution, 0.001, 1),
    maxProbes: integer('--max-probes', v['max-probes'], 1, 40),
    probeSeconds: number('--probe-seconds', v['probe-seconds'], 0, 3600, { exclusiveMin: true }),
    json: v.json,
    progress: number('--progress', v.progress, 0, 3600),
    serviceNode: v['service-node'],
    nodeArgs: v['node-args'] === undefined ? [] : v['node-args'].split(/\s+/).filter((a) => a !== ''),
    cpuProf: v['cpu-prof'],
    watch,
    redis: v.redis ?? null,
    record: v.record === 'off' || v.record === 'on' || v.record === 'both' ? v.record : bad('--record', 'off, on or both', v.record),
    ids,
    burst,
    burstAgents: integer('--burst-agents', v['burst-agents'], 1, MAX_AGENTS),
    burstRepeat: integer('--burst-repeat', v['burst-repeat'], 1, 100),
    rehearse: burst !== null && url === undefined && !v['no-rehearse'],
    generatorGc:
      v['generator-gc'] === undefined ? (burst !== null ? 'single' : 'parallel') : v['generator-gc'] === 'single' || v['generator-gc'] === 'parallel' ? v['generator-gc'] : bad('--generator-gc', 'single or parallel', v['generator-gc']),
    lod,
    lodRows,
  };
}

function bad(flag: string, expected: string, got: unknown): never {
  throw new OptionsError(`${flag}: expected ${expected}, got ${JSON.stringify(got)}`);
}

function number(flag: string, text: string | undefined, min: number, max: number, o: { exclusiveMin?: boolean } = {}): number {
  const n = Number(text);
  if (text === undefined || text.trim() === '' || !Number.isFinite(n) || n > max || (o.exclusiveMin ? n <= min : n < min)) {
    bad(flag, `a number ${o.exclusiveMin ? 'above' : 'from'} ${min} ${o.exclusiveMin ? 'up to' : 'to'} ${max}`, text);
  }
  return n;
}

function integer(flag: string, text: string | undefined, min: number, max: number): number {
  const n = number(flag, text, min, max);
  if (!Number.isInteger(n)) bad(flag, `an integer from ${min} to ${max}`, text);
  return n;
}
