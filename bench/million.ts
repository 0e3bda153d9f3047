// A million agents (docs/capacity.md, "A million agents"): memory per agent in the whole service, and whether
// the ticks hold. Two parts, bounded, stopping by themselves:
//
// 1. Where the memory goes, in this process (gc between readings, --expose-gc): per agent, the worker side (the
//    engine's Agent and the host's slot), the agent's observation once rows arrived, the main thread's routing
//    (a worker pool's router: its isolate holds nothing else of the agent), and the crash-recovery checkpoint the
//    main thread keeps (packed agent state).
// 2. The whole service: started as a child process (bench/load/service.ts), K fixed-mode sessions at `--hz`
//    (default 1) with the agents split over them, driven by the load generator's game servers (rows every tick,
//    results); RSS of the service process before the sessions and at the end of the window, per agent, and the
//    verdict on ticks (missed ticks, lateness p99 against one period).
//
//   npm run build && node --expose-gc dist/bench/million.js [--agents 1000000] [--sessions 8] [--hz 1]
//       [--seconds 20] [--warmup 10] [--workers 2] [--tree guard] [--lod off|on|MIX] [--probe 100000]
//       [--skip-service] [--node-args="FLAGS"] [--catch-up SECONDS] [--rows tenth|none] [--json FILE]
//   --rows none: after the first rows, snapshots carry none (observations stay): no garbage from rows, for comparison

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CanopyClient, RowWriter } from '../src/client/index.js';
import { TreeLibrary } from '../src/bt/library.js';
import { createAgentPool } from '../src/service/pool/index.js';
import { AgentHost } from '../src/service/pool/host.js';
import { packAgents } from '../src/service/pool/checkpoint.js';
import type { SpawnOrder, ToHost } from '../src/service/pool/wire.js';
import { SessionShard } from '../src/service/pool/shard.js';
import { packSpawnOrders } from '../src/service/pool/spawns.js';
import type { Agent } from '../src/bt/index.js';
import { FIELDS, GameWorld } from './load/world.js';
import { everyOf, formatLodMix, parseLodMix } from './load/lod.js';
import { buckets, delta, fetchMetrics, quantile, sum, type Scrape } from './load/prom.js';
import { repoRoot, startService, type ThreadCpu } from './load/service.js';
import { formatMachine, machineInfo } from './lib/machine.js';
import { loadavg } from 'node:os';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '1000000' },
    sessions: { type: 'string', default: '8' },
    hz: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '10' },
    workers: { type: 'string', default: '2' },
    tree: { type: 'string', default: 'guard' },
    lod: { type: 'string', default: 'off' },
    probe: { type: 'string', default: '100000' },
    'skip-service': { type: 'boolean', default: false },
    'node-args': { type: 'string' },
    'catch-up': { type: 'string', default: '300' },
    rows: { type: 'string', default: 'tenth' },
    json: { type: 'string' },
  },
});
const agents = Number(values.agents);
const sessions = Number(values.sessions);
const hz = Number(values.hz);
const workers = Number(values.workers);
const probeN = Number(values.probe);
const tree = values.tree;
const lod = parseLodMix(values.lod);
if (typeof lod === 'string') throw new Error(`--lod: expected ${lod}`);
if (![agents, sessions, hz, workers, probeN].every((n) => Number.isFinite(n) && n > 0) || agents > 2_000_000 || probeN > 1_000_000) {
  throw new Error('--agents (≤ 2,000,000), --sessions, --hz, --workers and --probe (≤ 1,000,000) must be positive numbers');
}
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
if (values.rows !== 'tenth' && values.rows !== 'none') throw new Error('--rows: expected tenth or none');

console.log('Canopy: a million agents — memory per agent and ticks');
console.log(formatMachine(machineInfo()));
console.log(`tree ${tree}, level of detail ${formatLodMix(lod)}, ${probeN} agents per probe`);

interface Reading {
  heap: number;
  external: number;
  rss: number;
}
function reading(): Reading {
  gc!();
  gc!();
  const m = process.memoryUsage();
  // `external` includes `arrayBuffers` (typed arrays' memory): adding both would count it twice.
  return { heap: m.heapUsed, external: m.external, rss: m.rss };
}
function perAgent(a: Reading, b: Reading, n: number): { heap: number; external: number } {
  return { heap: (b.heap - a.heap) / n, external: (b.external - a.external) / n };
}
const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const fmt = (x: { heap: number; external: number }): string => `${(x.heap + x.external).toFixed(0)} B (heap ${x.heap.toFixed(0)}, buffers ${x.external.toFixed(0)})`;

// ---------------------------------------------------------------------------------------------------------------
// 1. Where the memory goes.
const loaded = await TreeLibrary.loadFolder(join(repoRoot(), 'trees'));
if (!loaded.ok) throw new Error(`trees: ${loaded.errors.map((e) => e.message).join('; ')}`);
const library = loaded.library;
if (library.get(tree) === undefined) throw new Error(`no tree '${tree}'`);
const fields = [...FIELDS];
const parts: Record<string, { heap: number; external: number }> = {};
/** Tick `n` of session 's' on a host, with the input buffered in `shard` (none: null). */
function tickOrder(n: number, shard: SessionShard | null): ToHost {
  return {
    t: 'tick', req: n, session: 's', time: n * 0.05, dt: 0.05, clear: false, bb: null, objects: null, rows: null, frameRows: null, results: null,
    world: null, columns: -1, tick: n, ...(shard === null ? {} : shard.take()),
  };
}
/** Objects that must stay alive across a pair of readings (a local used for the last time may be collected). */
const keep: unknown[] = [];

{
  // Main thread: a worker pool's router (its agents live in the worker's isolate, not here).
  const pool = await createAgentPool({ trees: join(repoRoot(), 'trees'), workers: 1, library, checkpointMs: -1 });
  await pool.ready();
  pool.createSession('s', { fields, maxAgents: 10_000_000 });
  const r0 = reading();
  for (let from = 0; from < probeN; from += 5000) {
    pool.spawn('s', Array.from({ length: Math.min(5000, probeN - from) }, (_, k) => ({ id: from + k, tree, seed: from + k })));
  }
  const r1 = reading();
  parts.routing = perAgent(r0, r1, probeN);
  console.log(`main thread: routing (id → worker and slot, slot tables): ${fmt(parts.routing)} per agent`);
  await pool.close();
}
{
  // Worker side: the host's agents, then their observations (rows written into one object per agent).
  const host = new AgentHost(library);
  const r0 = reading();
  for (let from = 0; from < probeN; from += 5000) {
    const orders: SpawnOrder[] = [];
    for (let i = from; i < Math.min(probeN, from + 5000); i++) {
      const order: SpawnOrder = [i, i, tree, '', i, null];
      const every = lod === null ? 1 : everyOf(lod, i);
      if (every !== 1) order.push(every);
      orders.push(order);
    }
    host.handle({ t: 'spawn', session: 's', fields, agents: packSpawnOrders(orders) });
  }
  const r1 = reading();
  parts.agent = perAgent(r0, r1, probeN);
  console.log(`worker: agent state (engine Agent, node statuses and slots, blackboard, host slot): ${fmt(parts.agent)} per agent`);
  // Observations: a tick whose rows give every agent one (the router's shard packs them as for a real tick).
  const world = new GameWorld(probeN, 1);
  const rows = new RowWriter(fields);
  world.step(0.05);
  world.writeRows(rows);
  host.handle(tickOrder(1, null));
  const shard = new SessionShard(fields.length);
  const r2 = reading();
  const list = rows.rows();
  for (let i = 0; i < list.length; i++) shard.pushRow(i, list[i]!);
  host.handle(tickOrder(2, shard));
  const r3 = reading();
  keep.push(world, rows, list, shard); // alive across both readings: only the observations differ
  parts.observation = perAgent(r2, r3, probeN);
  console.log(`worker: observation (self, ${fields.length} fields): ${fmt(parts.observation)} per agent`);
  // The checkpoint the main thread keeps for crash recovery: the host's packed agents.
  const agentsOfHost: Array<Agent | null> = [];
  for (let i = 0; i < probeN; i++) agentsOfHost.push(host.agentAt('s', i));
  const bytes = packAgents(agentsOfHost, fields, null);
  parts.checkpoint = { heap: 0, external: bytes.length / probeN };
  console.log(`main thread: crash-recovery checkpoint (packed state, observation included): ${fmt(parts.checkpoint)} per agent`);
  host.handle({ t: 'drop', session: 's' });
}
const attributed = Object.values(parts).reduce((n, p) => n + p.heap + p.external, 0);
console.log(`attributed: ${attributed.toFixed(0)} B per agent (heap and buffers, before allocator and GC headroom)`);

// ---------------------------------------------------------------------------------------------------------------
// 2. The whole service. A light driver (not the load generator's game simulation, which cannot step a million
// agents a second on a small machine beside the service): each session spawns its agents in batches, sends one
// row per agent once (every agent holds an observation), then each second rows for a rotating tenth of its agents,
// so the service keeps decoding and routing rows. Ticks are judged from the service's own metrics.
let service: Record<string, unknown> | null = null;
if (!values['skip-service']) {
  const nodeArgs = values['node-args'] === undefined ? [] : values['node-args'].split(/\s+/).filter((a) => a !== '');
  const target = await startService({ workers, nodeArgs, env: { CANOPY_MAX_FRAME_BYTES: String(256 * 1024 * 1024) } });
  const metricsUrl = `${target.httpUrl}/metrics`;
  const clients: CanopyClient[] = [];
  let peak = 0;
  const sampleRss = async (): Promise<number> => {
    const rss = (await target.sample()).rssBytes;
    peak = Math.max(peak, rss);
    return rss;
  };
  try {
    await sleep(1000);
    const idle = await sampleRss();
    console.log(`\nservice started (${workers} workers): RSS ${mb(idle)} before any session; ${sessions} fixed-mode sessions at ${hz} Hz, ${agents} agents in all`);
    const sizes = Array.from({ length: sessions }, (_, k) => Math.floor(agents / sessions) + (k < agents % sessions ? 1 : 0));
    const spawnStarted = performance.now();
    for (let k = 0; k < sessions; k++) {
      clients.push(await CanopyClient.connect(target.wsUrl, { mode: 'fixed', hz, fields, reconnect: false, requestTimeoutMs: 120_000, connectTimeoutMs: 30_000 }));
    }
    const rowsOf: RowWriter[] = [];
    await Promise.all(
      clients.map(async (c, k) => {
        const n = sizes[k]!;
        for (let from = 0; from < n; from += 5000) {
          const batch = [];
          for (let i = from; i < Math.min(n, from + 5000); i++) {
            const every = lod === null ? 1 : everyOf(lod, i);
            batch.push({ id: i, tree, seed: k * 1_000_003 + i, ...(every !== 1 ? { every } : {}) });
          }
          const out = await c.spawn(batch);
          if (out.errors.length > 0) throw new Error(`spawn refused: ${out.errors[0]!.code} ${out.errors[0]!.message}`);
        }
        const w = new GameWorld(n, k + 1);
        w.step(1 / hz);
        const rows = new RowWriter(fields);
        w.writeRows(rows);
        rowsOf[k] = rows;
        c.snapshot({ tick: 0, agents: rows });
      }),
    );
    const spawnSeconds = (performance.now() - spawnStarted) / 1000;
    // `spawned` answers once the main thread has routed the agents; the workers create them after. Wait until
    // the sessions tick at their rate (the workers are through their backlog), at most 5 minutes.
    let caughtUp = Number.NaN;
    for (let last = await fetchMetrics(metricsUrl, {}, 30_000); performance.now() - spawnStarted < Number(values['catch-up']) * 1000; ) {
      await sleep(Math.max(2000, 2000 / hz));
      const now = await fetchMetrics(metricsUrl, {}, 30_000);
      const rate = sum(delta(last, now), 'canopy_ticks_total') / ((now.at - last.at) / 1000);
      last = now;
      if (rate >= 0.9 * sessions * hz) {
        caughtUp = (performance.now() - spawnStarted) / 1000;
        break;
      }
    }
    const spawned = await sampleRss();
    console.log(`spawned in ${spawnSeconds.toFixed(1)} s (answers); ticking at the sessions' rate after ${caughtUp.toFixed(1)} s; RSS ${mb(spawned)}`);
    // Warm-up, then the measured window: rows for a rotating tenth of each session's agents every second.
    const seconds = Number(values.seconds);
    const warmup = Number(values.warmup);
    const all = rowsOf.map((r) => r.rows());
    let before: Scrape | null = null;
    let threads0: ThreadCpu | undefined;
    for (let t = 1; t <= warmup + seconds; t++) {
      if (t === warmup + 1) {
        before = await fetchMetrics(metricsUrl, {}, 30_000);
        threads0 = (await target.sample()).threads;
      }
      const second = performance.now();
      clients.forEach((c, k) => {
        if (values.rows === 'none') {
          c.snapshot({ tick: t });
          return;
        }
        const list = all[k]!;
        const tenth: Array<readonly unknown[]> = [];
        for (let i = t % 10; i < list.length; i += 10) tenth.push(list[i]!);
        c.snapshot({ tick: t, agents: tenth as never });
      });
      await sampleRss();
      await sleep(Math.max(0, 1000 - (performance.now() - second)));
    }
    const after = await fetchMetrics(metricsUrl, {}, 30_000);
    const threads1 = (await target.sample()).threads;
    // Where the service's CPU went in the window: main thread, tick workers, the rest (V8's GC and compiler threads).
    const split =
      threads0 !== undefined && threads1 !== undefined
        ? {
            main: threads1.main - threads0.main,
            workers: [...threads1.workers].reduce((n, [tid, cpu]) => n + cpu - (threads0!.workers.get(tid) ?? 0), 0),
            other: threads1.other - threads0.other,
          }
        : null;
    const end = await sampleRss();
    const d = delta(before!, after);
    const missed = sum(d, 'canopy_missed_ticks_total');
    const ticks = sum(d, 'canopy_ticks_total');
    const lateness = quantile(0.99, buckets(d, 'canopy_tick_lateness_seconds')) * 1000;
    const duration = quantile(0.99, buckets(d, 'canopy_tick_duration_seconds')) * 1000;
    const durationMean = (sum(d, 'canopy_tick_duration_seconds_sum') / Math.max(1, sum(d, 'canopy_tick_duration_seconds_count'))) * 1000;
    const cpu = (after.at - before!.at) > 0 ? (sum(d, 'process_cpu_seconds_total') / ((after.at - before!.at) / 1000)) : Number.NaN;
    const expectedTicks = sessions * seconds * hz;
    // CPU time is robust to a busy machine where wall time is not: the cores the service needs to run every
    // session's ticks at the full rate, from the CPU it used per tick it ran (rows and checkpoints included).
    const cpuSeconds = sum(d, 'process_cpu_seconds_total');
    const coresAtRate = ticks > 0 ? (cpuSeconds / ticks) * sessions * hz : Number.NaN;
    const held = missed === 0 && ticks >= expectedTicks * 0.95 && lateness <= 1000 / hz;
    const perAgentRss = (end - idle) / agents;
    service = {
      workers, sessions, agents, hz, lod: formatLodMix(lod), spawnSeconds, tickingAfterSeconds: caughtUp,
      idleRssMB: idle / 2 ** 20, spawnedRssMB: spawned / 2 ** 20, endRssMB: end / 2 ** 20, peakRssMB: peak / 2 ** 20,
      rssPerAgentBytes: perAgentRss, ticks, expectedTicks, missedTicks: missed, tickLatenessP99Ms: lateness,
      tickDurationMeanMs: durationMean, tickDurationP99Ms: duration, serviceCpuCores: cpu, coresNeededAtRate: coresAtRate, cpuSecondsByThread: split, held, loadAverage: loadavg()[0],
    };
    console.log(`RSS ${mb(end)} at the end of the window (peak ${mb(peak)}): ${perAgentRss.toFixed(0)} B per agent over the idle service`);
    console.log(
      `ticks in ${seconds} s: ${ticks} of ${expectedTicks}, ${missed} missed, lateness p99 ${lateness.toFixed(1)} ms (period ${(1000 / hz).toFixed(0)} ms), ` +
        `session tick mean ${durationMean.toFixed(0)} ms / p99 ≤ ${duration.toFixed(0)} ms, service CPU ${cpu.toFixed(2)} cores; ` +
        `CPU per session tick ${((cpuSeconds / Math.max(1, ticks)) * 1000).toFixed(0)} ms: every tick at ${hz} Hz needs ${coresAtRate.toFixed(2)} cores`,
    );
    if (split !== null) {
      console.log(`service CPU in the window: main thread ${split.main.toFixed(1)} s, tick workers ${split.workers.toFixed(1)} s, GC and compiler threads ${split.other.toFixed(1)} s`);
    }
    console.log(`verdict: ${held ? 'ticks hold' : 'ticks do NOT hold'}; load average ${loadavg()[0]!.toFixed(2)}`);
  } finally {
    for (const c of clients) c.close();
    await target.stop();
  }
}
if (values.json !== undefined) {
  writeFileSync(values.json, JSON.stringify({ machine: machineInfo(), tree, lod: formatLodMix(lod), probeAgents: probeN, perAgentBytes: parts, attributedBytes: attributed, service }, null, 2));
}
process.exit(0);
