// Issue 10's figure "checkpoint + log cost at 50,000 agents": two worker pools (2 workers each) tick the same
// session (guard tree, rows changing every tick, results like a game server) at full speed with session time
// advancing 50 ms a tick (20 Hz), one with crash recovery off (checkpointMs -1), one on (the default: a checkpoint
// every 2 s of session time, i.e. every 40 ticks, and every order since logged). Blocks of 40 ticks alternate
// between the two (A/B in one run, so a shared machine's load falls on both alike); reported: process CPU per tick
// (every thread) and wall time per tick, median of blocks. Then a worker of the "on" pool is crashed and the time
// for the next tick (replacement start, restore, replay of the logged ticks) is measured.
//
//   npm run build && node dist/bench/recovery.js [--agents 50000] [--blocks 6]

import { performance } from 'node:perf_hooks';
import type { AgentId } from '../src/bt/index.js';
import { crashWorkerForTests, createAgentPool, type AgentPool, type Decisions, type WorkerPool } from '../src/service/pool/index.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { FLEE_TICKS, MOVE_TICKS, TICK_SECONDS } from './lib/population.js';
import { DEFAULT_SEED, World } from './lib/world.js';
import { Agent } from '../src/bt/index.js';
import { loadTrees } from '../src/service/pool/load.js';
import { giveCheckpointMemory, packAgents } from '../src/service/pool/checkpoint.js';
import { RecoveryJournal } from '../src/service/pool/recovery.js';
import { packSpawnOrders } from '../src/service/pool/spawns.js';
import type { TickOrder } from '../src/service/pool/wire.js';
import { join } from 'node:path';
import { repoRoot } from './load/service.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: { agents: { type: 'string', default: '50000' }, blocks: { type: 'string', default: '6' }, 'isolated-only': { type: 'boolean', default: false } },
});
const agents = Number(values.agents);
const blocks = Number(values.blocks);
/** Ticks per block: one checkpoint period at the default cadence (2 s at 20 Hz). */
const BLOCK = 40;
const FIELDS = ['hp', 'enemyVisible', 'enemyDist'] as const;
const durations: Readonly<Record<string, number>> = { flee: FLEE_TICKS, moveToWaypoint: MOVE_TICKS };
// The bench trees, found from the TypeScript sources and from dist/ alike.
const trees = join(repoRoot(), 'bench', 'trees');

/** One pool, its session and the game's side of it (rows, results due). */
class Side {
  readonly world = new World(agents, DEFAULT_SEED);
  readonly rows: Array<[AgentId, number, boolean, number]> = Array.from({ length: agents }, (_, i) => [i, 0, false, 0]);
  private readonly due: Array<Array<[AgentId, number, 'success']>> = Array.from({ length: 8 }, () => []);
  n = 0;
  readonly cpu: number[] = [];
  readonly wall: number[] = [];
  constructor(
    readonly label: string,
    readonly pool: AgentPool,
  ) {}

  async tick(): Promise<Decisions> {
    const n = this.n++;
    this.world.perturb();
    const { hp, enemyVisible, enemyDist } = this.world;
    for (let i = 0; i < agents; i++) {
      const r = this.rows[i]!;
      r[1] = hp[i]!;
      r[2] = enemyVisible[i] === 1;
      r[3] = enemyDist[i]!;
    }
    this.pool.observe('s', this.rows, false);
    this.pool.results('s', this.due[n % 8]!);
    this.due[n % 8] = [];
    const d = await this.pool.tick('s', n, n * TICK_SECONDS, TICK_SECONDS, n);
    for (const [id, seq, action] of d.actions) {
      const k = durations[action];
      if (k !== undefined) this.due[(n + k) % 8]!.push([id, seq, 'success']);
    }
    return d;
  }

  async block(record: boolean): Promise<void> {
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let k = 0; k < BLOCK; k++) await this.tick();
    const used = process.cpuUsage(cpu);
    if (!record) return;
    this.cpu.push((used.user + used.system) / 1000 / BLOCK);
    this.wall.push((performance.now() - started) / BLOCK);
  }
}

async function side(label: string, checkpointMs: number): Promise<Side> {
  const pool = await createAgentPool({ trees, workers: 2, checkpointMs });
  await pool.ready();
  pool.createSession('s', { fields: FIELDS, maxAgents: agents });
  const out = pool.spawn('s', Array.from({ length: agents }, (_, i) => ({ id: i, tree: 'guard' })));
  if (out.errors.length > 0) throw new Error(`spawn: ${out.errors[0]!.message}`);
  return new Side(label, pool);
}

function median(xs: readonly number[]): number {
  return xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

let cpuOff = NaN;
if (!values['isolated-only']) {
  console.log(`Canopy crash-recovery cost: ${agents} agents, 2 workers, blocks of ${BLOCK} ticks (one checkpoint each), ${blocks} blocks per side, A/B interleaved`);
  console.log(formatMachine(machineInfo()));
  const off = await side('recovery off', -1);
  const on = await side('recovery on (2 s)', 2000);
  await off.block(false); // warm-up
  await on.block(false);
  for (let b = 0; b < blocks; b++) {
    for (const s of b % 2 === 0 ? [off, on] : [on, off]) {
      await s.block(true);
      console.error(`  block ${b + 1}/${blocks} ${s.label}: CPU ${s.cpu.at(-1)!.toFixed(2)} ms/tick, wall ${s.wall.at(-1)!.toFixed(2)} ms/tick`);
    }
  }
  const paired = off.cpu.map((c, k) => on.cpu[k]! - c);
  const packed = (on.pool as WorkerPool).recoveryStats();
  cpuOff = median(off.cpu);
  const cpuOn = median(on.cpu);
  const wallOff = median(off.wall);
  const wallOn = median(on.wall);
  console.log();
  console.log(
    formatTable([
      ['', 'CPU ms/tick (all threads)', 'wall ms/tick', 'capacity (agent-ticks/s per CPU-s)'],
      ...[off, on].map((s) => [s.label, median(s.cpu).toFixed(2), median(s.wall).toFixed(2), (agents / median(s.cpu) / 1000).toFixed(3) + ' M']),
    ]),
  );
  console.log(`cost of recovery: CPU ${(((cpuOn - cpuOff) / cpuOff) * 100).toFixed(1)} %, wall ${(((wallOn - wallOff) / wallOff) * 100).toFixed(1)} % (ratios of medians; shared machine)`);
  const meanPaired = paired.reduce((a, b) => a + b, 0) / paired.length;
  console.log(`paired blocks (on − off, CPU ms/tick): ${paired.map((d) => d.toFixed(2)).join(', ')}; mean ${meanPaired.toFixed(2)} = ${((meanPaired / cpuOff) * 100).toFixed(1)} %`);
  console.log(
    `checkpoints: ${packed.checkpoints} taken of ${agents / 2} agents each, packing ${(packed.packMs / packed.checkpoints).toFixed(1)} ms mean, ${packed.packMedianMs.toFixed(1)} ms median (worker wall clock); ${(packed.checkpointBytes / 1e6).toFixed(1)} MB held for ${packed.checkpointedAgents} agents`,
  );
  console.log(
    `packing at 20 Hz (2 workers, one checkpoint per 40 ticks): median ${((2 * packed.packMedianMs) / BLOCK).toFixed(2)} ms/tick = ${(((2 * packed.packMedianMs) / BLOCK / cpuOff) * 100).toFixed(1)} % of the CPU per tick without recovery (mean: ${(((packed.packMs / (BLOCK * (blocks + 1))) / cpuOff) * 100).toFixed(1)} %)`,
  );

  // Recovery time: a worker of the "on" pool crashes right before a tick, halfway through a checkpoint period.
  for (let k = 0; k < BLOCK / 2; k++) await on.tick();
  const stats = (on.pool as WorkerPool).recoveryStats();
  const crashed = crashWorkerForTests(on.pool, 1);
  const started = performance.now();
  const d = await on.tick();
  await crashed;
  console.log(
    `recovery: a worker crashed with ${stats.loggedTicks} logged tick orders over ${stats.checkpointedAgents} checkpointed agents; the tick in flight answered in ${(performance.now() - started).toFixed(0)} ms with ${d.errors.length} errors, ${d.actions.length} actions`,
  );
  await off.pool.close();
  await on.pool.close();
}

// The same costs isolated on this thread (process CPU = this thread's while nothing else of ours runs), median of
// 15 after warm-up: packing one worker's checkpoint, and logging one tick order (copying its rows and results).
const loaded = await loadTrees(trees, undefined);
if (!loaded.ok) throw new Error(loaded.error);
const half = agents / 2;
const guard = loaded.library.get('guard')!;
const hosted = Array.from({ length: half }, (_, i) => {
  const a = new Agent(guard, i);
  a.self = { hp: 50, enemyVisible: true, enemyDist: 3 };
  return a;
});
const journal = new RecoveryJournal(1, 2000);
const order: TickOrder = {
  t: 'tick', req: 1, session: 's', time: 0, dt: TICK_SECONDS, clear: false, bb: null, objects: null, columns: -1, world: null, tick: 1, frameRows: null,
  rows: { count: half, width: 3, slots: new Int32Array(half), values: new Float64Array(half * 3), tags: new Uint8Array(half * 3), vectors: new Float64Array(0), vectorsLength: 0, other: [] },
  results: { count: 2000, data: new Float64Array(6000) },
};
const cpuMs = (f: () => void): number => {
  const samples: number[] = [];
  for (let r = 0; r < 20; r++) {
    const c = process.cpuUsage();
    f();
    const u = process.cpuUsage(c);
    if (r >= 5) samples.push((u.user + u.system) / 1000);
  }
  return median(samples);
};
// As a worker packs for recovery: the local form, into the memory of the checkpoint it replaces (given back).
let packed: Uint8Array | null = null;
const pack = cpuMs(() => {
  if (packed !== null) giveCheckpointMemory([packed.buffer as ArrayBuffer]);
  packed = packAgents(hosted, FIELDS, null, null, Number.NaN, 'local');
});
const log =
  cpuMs(() => {
    // A log of 10 ticks each time, what a log holds between two checkpoints, then dropped: its copies go back to be
    // reused, as a checkpoint's covered orders' do.
    journal.record(0, { t: 'spawn', session: 's', fields: FIELDS, agents: packSpawnOrders([]) });
    for (let k = 0; k < 10; k++) journal.record(0, { ...order, time: k * TICK_SECONDS });
    journal.record(0, { t: 'drop', session: 's' });
  }) / 10;
const perTick = (2 * pack) / BLOCK + 2 * log;
console.log(
  `isolated CPU: packing ${half} agents ${pack.toFixed(1)} ms; logging a ${half}-row tick order ${log.toFixed(2)} ms; at 20 Hz on 2 workers = ${perTick.toFixed(2)} ms/tick` +
    (Number.isNaN(cpuOff) ? '' : ` = ${((perTick / cpuOff) * 100).toFixed(1)} % of the CPU per tick without recovery`),
);
