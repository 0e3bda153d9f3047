// Agent pool benchmark: S sessions × N agents ticked through the pool at full speed, with rows that change every
// tick and action results delivered like a game server would, for each worker count (0 = inline, the reference).
//
//   npm run build && node dist/bench/pool.js [--sessions S] [--agents N] [--ticks T] [--warmup W]
//                                           [--workers 0,1,2] [--tree guard|large] [--rounds R] [--watch N] [--json]
//
// --watch N: the timed ticks alternate, in blocks of WATCH_BLOCK ticks, between N agents of the first session
// watched by the inspector (ring buffer of 30 s at 20 Hz, frames handed to onFrames each tick) and nobody
// watched; the report compares the process CPU per tick of the two (A/B interleaved in one pool, so the
// load of a shared machine falls on both alike): the capacity cost of watching. Watching and unwatching
// happen between timed ticks.
//
// Rounds go round-robin over the worker counts and the best round of each is reported (other work on a
// shared machine only ever slows a round down).
// A round is one tick of every session (ticks of different sessions run concurrently, as the service's clocks
// would run them). Timed: observe() + results() + tick() until the merged Decisions are back. Not timed: the world
// perturbation and writing it into the row arrays (the session layer's msgpack decode makes those arrays).

import { performance } from 'node:perf_hooks';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import type { AgentId } from '../src/bt/index.js';
import { createAgentPool, type AgentPool, type Decisions } from '../src/service/pool/index.js';
import { LARGE_TREE_DURATIONS } from './lib/canopy.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { FLEE_TICKS, MOVE_TICKS, TICK_SECONDS } from './lib/population.js';
import { DEFAULT_SEED, World } from './lib/world.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    sessions: { type: 'string', default: '1' },
    agents: { type: 'string', default: '20000' },
    ticks: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '40' },
    workers: { type: 'string', default: '0,1,2' },
    tree: { type: 'string', default: 'guard' },
    rounds: { type: 'string', default: '3' },
    watch: { type: 'string', default: '0' },
    json: { type: 'boolean', default: false },
  },
});

const sessions = positiveInteger('sessions', values.sessions);
const agents = positiveInteger('agents', values.agents);
const ticks = positiveInteger('ticks', values.ticks);
const warmup = positiveInteger('warmup', values.warmup, 0);
const workerCounts = values.workers.split(',').map((w) => positiveInteger('workers', w, 0));
const rounds = positiveInteger('rounds', values.rounds);
const watch = positiveInteger('watch', values.watch, 0);
if (watch > agents) fail(`--watch must be at most --agents (${agents})`);
/** Frames kept per watched agent: 30 s at 20 Hz, what the inspector asks for. */
const WATCH_TICKS = 600;
/** Ticks per block of the watch A/B. */
const WATCH_BLOCK = 8;
const tree = values.tree;
if (tree !== 'guard' && tree !== 'large') fail(`--tree must be guard or large, not '${tree}'`);
const durations: Readonly<Record<string, number>> = tree === 'guard' ? { flee: FLEE_TICKS, moveToWaypoint: MOVE_TICKS } : LARGE_TREE_DURATIONS;
const FIELDS = ['hp', 'enemyVisible', 'enemyDist'] as const;

/** The game server's side of one session: its rows (mutated in place each tick) and results due per tick. */
class Game {
  readonly name: string;
  readonly rows: Array<[AgentId, number, boolean, number]>;
  /** due[tick % length]: results to send at that tick. */
  private readonly due: Array<Array<[AgentId, number, 'success']>>;
  actions = 0;
  cancels = 0;
  done = 0;
  errors = 0;

  constructor(name: string, world: World) {
    this.name = name;
    this.rows = Array.from({ length: world.size }, (_, i) => [i, 0, false, 0]);
    this.due = Array.from({ length: Math.max(0, ...Object.values(durations)) + 1 }, () => []);
  }

  /** Copies the world into the rows (what decoding a snapshot frame produces). */
  write(world: World): void {
    const { hp, enemyVisible, enemyDist } = world;
    for (let i = 0; i < this.rows.length; i++) {
      const r = this.rows[i]!;
      r[1] = hp[i]!;
      r[2] = enemyVisible[i] === 1;
      r[3] = enemyDist[i]!;
    }
  }

  /** The results the game sends with tick `n`. */
  results(n: number): Array<[AgentId, number, 'success']> {
    const slot = this.due[n % this.due.length]!;
    this.due[n % this.due.length] = [];
    return slot;
  }

  record(n: number, d: Decisions): void {
    this.actions += d.actions.length;
    this.cancels += d.encodedCancels.count;
    this.done += d.encodedDone.count;
    this.errors += d.errors.length;
    for (const [id, seq, action] of d.actions) {
      const k = durations[action];
      if (k !== undefined) this.due[(n + k) % this.due.length]!.push([id, seq, 'success']);
    }
  }
}

interface Result {
  readonly workers: number;
  /** Agents watched in the watched blocks (0: no watch A/B). */
  readonly watched: number;
  /** Frames handed to onFrames during the timed ticks. */
  readonly frames: number;
  /** Watch A/B: median process CPU per tick (ms) of the unwatched and the watched blocks. */
  readonly cpuUnwatched: number;
  readonly cpuWatched: number;
  readonly agentTicksPerSec: number;
  readonly p50: number;
  readonly p99: number;
  readonly mainElu: number;
  /** Process CPU time (every thread) per round, ms. */
  readonly cpuPerTick: number;
  readonly workerElu: number[];
  readonly actions: number;
  readonly cancels: number;
  readonly done: number;
  readonly errors: number;
}

async function run(workers: number, watched: number): Promise<Result> {
  // Short ELU windows: the workers' ELU below is the mean of the windows sampled over the timed ticks.
  const pool: AgentPool = await createAgentPool({ trees: benchTrees(), workers, eluWindowMs: 100 });
  await pool.ready();
  let frames = 0;
  let counting = false;
  // What an inspector stream does first with each frame: take it (B's stream serializes only what it pushes).
  pool.onFrames = (_session, list) => {
    if (counting) frames += list.length;
  };
  const world = new World(agents, DEFAULT_SEED);
  const games: Game[] = [];
  for (let s = 0; s < sessions; s++) {
    const game = new Game(`bench-${s}`, world);
    pool.createSession(game.name, { fields: FIELDS, maxAgents: agents });
    const out = pool.spawn(game.name, Array.from({ length: agents }, (_, i) => ({ id: i, tree })));
    if (out.errors.length > 0) throw new Error(`spawn: ${out.errors[0]!.message}`);
    games.push(game);
  }
  const setWatch = async (on: boolean): Promise<void> => {
    for (let i = 0; i < watched; i++) {
      if (!on) await pool.unwatch(games[0]!.name, i);
      else if (!(await pool.watch(games[0]!.name, i, WATCH_TICKS))) throw new Error(`watch: agent ${i} unknown`);
    }
  };
  let watching = false;
  const cpuByState: [number[], number[]] = [[], []];
  const times: number[] = [];
  let timed = 0;
  const eluSum: number[] = [];
  let eluStart = performance.eventLoopUtilization();
  let cpuStart = process.cpuUsage();
  for (let n = 0; n < warmup + ticks; n++) {
    if (n === warmup) {
      counting = true;
      eluStart = performance.eventLoopUtilization();
      cpuStart = process.cpuUsage();
    }
    if (watched > 0 && n >= warmup - WATCH_BLOCK) {
      const on = Math.floor((n - warmup) / WATCH_BLOCK) % 2 === 0;
      if (on !== watching) await setWatch((watching = on));
    }
    world.perturb();
    for (const g of games) g.write(world);
    const tickCpu = process.cpuUsage();
    const started = performance.now();
    const decisions = await Promise.all(
      games.map((g) => {
        pool.observe(g.name, g.rows, false);
        pool.results(g.name, g.results(n));
        return pool.tick(g.name, n, n * TICK_SECONDS, TICK_SECONDS, n);
      }),
    );
    const spent = performance.now() - started;
    const used = process.cpuUsage(tickCpu);
    if (n >= warmup) cpuByState[watching ? 1 : 0].push((used.user + used.system) / 1000);
    decisions.forEach((d, s) => games[s]!.record(n, d));
    if (n >= warmup) {
      times.push(spent);
      timed += spent;
      if (workers > 0) pool.workerStats().forEach((w, i) => (eluSum[i] = (eluSum[i] ?? 0) + w.elu));
    }
  }
  const mainElu = performance.eventLoopUtilization(eluStart).utilization;
  const cpu = process.cpuUsage(cpuStart);
  const workerElu = eluSum.map((sum) => sum / ticks);
  await pool.close();
  times.sort((a, b) => a - b);
  return {
    workers,
    watched,
    frames,
    cpuUnwatched: median(cpuByState[0]),
    cpuWatched: median(cpuByState[1]),
    agentTicksPerSec: (sessions * agents * ticks) / (timed / 1000),
    p50: times[Math.floor(times.length * 0.5)]!,
    p99: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!,
    mainElu,
    cpuPerTick: (cpu.user + cpu.system) / 1000 / ticks,
    workerElu,
    actions: games.reduce((a, g) => a + g.actions, 0),
    cancels: games.reduce((a, g) => a + g.cancels, 0),
    done: games.reduce((a, g) => a + g.done, 0),
    errors: games.reduce((a, g) => a + g.errors, 0),
  };
}

function median(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

/** bench/trees, found from the sources or from dist/. */
function benchTrees(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('bench/trees: no package.json above this file');
    dir = up;
  }
  return join(dir, 'bench', 'trees');
}

const machine = machineInfo();
console.log(`Canopy agent pool benchmark: ${sessions} session(s) × ${agents} agents, tree '${tree}', ${warmup} warm-up + ${ticks} timed ticks, best of ${rounds} round(s)`);
console.log(formatMachine(machine));
const best = new Map<number, Result>();
/** Every round's watch A/B (unwatched, watched CPU ms per tick), per worker count. */
const pairs = new Map<number, Array<[number, number]>>(workerCounts.map((w) => [w, []]));
for (let round = 1; round <= rounds; round++) {
  for (const w of workerCounts) {
    const r = await run(w, watch);
    const prev = best.get(w);
    if (prev === undefined || r.agentTicksPerSec > prev.agentTicksPerSec) best.set(w, r);
    if (watch > 0) pairs.get(w)!.push([r.cpuUnwatched, r.cpuWatched]);
    const ab = watch > 0 ? `, CPU/tick median ${r.cpuUnwatched.toFixed(2)} unwatched / ${r.cpuWatched.toFixed(2)} ms with ${watch} watched` : '';
    console.error(`  round ${round}/${rounds} workers ${w}: ${(r.agentTicksPerSec / 1e6).toFixed(3)} M agent-ticks/s, p50 ${r.p50.toFixed(2)} ms${ab}`);
  }
}
const results = workerCounts.map((w) => best.get(w)!);
console.log();
console.log(
  formatTable([
    ['workers', 'M agent-ticks/s', 'ms/tick p50', 'ms/tick p99', 'CPU ms/tick', 'main ELU', 'worker ELU', 'actions', 'cancels', 'done'],
    ...results.map((r) => [
      r.workers === 0 ? '0 (inline)' : String(r.workers),
      (r.agentTicksPerSec / 1e6).toFixed(3),
      r.p50.toFixed(2),
      r.p99.toFixed(2),
      r.cpuPerTick.toFixed(2),
      r.mainElu.toFixed(2),
      r.workerElu.length === 0 ? '-' : r.workerElu.map((e) => e.toFixed(2)).join(' '),
      String(r.actions),
      String(r.cancels),
      String(r.done),
    ]),
  ]),
);
const reference = results[0]!;
const same = results.every((r) => r.actions === reference.actions && r.cancels === reference.cancels && r.done === reference.done && r.errors === 0);
console.log();
console.log(same ? 'decisions: every worker count issued the same actions, cancels and done' : 'WARNING: worker counts disagree on decisions (or agents errored)');
if (!same) process.exitCode = 1;
if (watch > 0) {
  console.log();
  for (const w of workerCounts) {
    const list = pairs.get(w)!;
    const ratios = list.map(([a, b]) => b / a).toSorted((x, y) => x - y);
    const r = best.get(w)!;
    console.log(
      `watch A/B, ${w} worker${w === 1 ? '' : 's'}: ${watch} of ${sessions * agents} agents watched in alternate blocks of ${WATCH_BLOCK} ticks — ` +
        `median CPU/tick per round ${list.map(([a, b]) => `${a.toFixed(2)}→${b.toFixed(2)}`).join(', ')} ms; ` +
        `capacity cost ${(100 * (ratios[Math.floor(ratios.length / 2)]! - 1)).toFixed(1)} % (median round); ${r.frames} frames delivered`,
    );
  }
}
console.log('ms/tick: one round (every session ticked once), observe → merged Decisions. ELU: busy fraction of the event loop over the timed ticks. CPU: the whole process (every thread), untimed world updates included.');
if (values.json) {
  console.log(JSON.stringify({ node: machine.node, sessions, agents, ticks, tree, results }));
}

function positiveInteger(name: string, text: string | undefined, min = 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) fail(`--${name} must be an integer ≥ ${min}, not '${String(text)}'`);
  return n;
}

function fail(message: string): never {
  console.error(`bench:pool: ${message}`);
  process.exit(2);
}
