// The service's per-tick path without sockets, measured in CPU time by thread: S sessions × N agents of
// `guard.json`, each tick a snapshot frame as the load generator encodes it (hp, enemyVisible, enemyDist,
// enemyPos [x, y]; values change every tick; the answered actions' results in it), its head read by the protocol
// (parseSnapshotHead, the service's options), applied and ticked in one message to the worker holding the session
// (tickFrame, as a lockstep session does), merged and encoded (encodeDecisions). `--no-frame`: the path before round
// sixteen (rows staged on the workers, then observe, results and tick; `--no-unread`: rows read here). What it
// leaves out: WebSocket framing and unmasking, the session layer's bookkeeping, the socket writes. The game server's
// part (reading each decisions frame for its actions to answer) runs on the main thread too: it is timed (the
// thread's CPU time on Node ≥ 23.9) and taken out of the main thread's figure.
//
//   npm run build && node dist/bench/rowpath.js [--sessions 4] [--agents 50000] [--ticks 200] [--warmup 60]
//                                               [--workers 2] [--young-mb 48] [--checkpoint-ms 2000] [--json]
//
// --young-mb: the workers' young generation (PoolOptions.workerYoungGenerationMb; 0 = V8's default), for A/B runs
// with --trace-gc (docs/capacity.md, "Round five"); --checkpoint-ms: PoolOptions.checkpointMs (-1: no crash recovery).
//
// CPU time by thread (/proc/self/task, Linux): the main thread, the workers, the rest (GC and compiler
// helpers). CPU time, not wall time, so that a shared machine's load counts less (it still does: caches,
// frequency); the report gives µs of CPU per agent-tick and the main thread's share of the process's CPU.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { AgentId } from '../src/bt/index.js';
import { decode, encode, encodeDecisions, parseClientFrame, parseSnapshotHead, type SnapshotMessage } from '../src/protocol/index.js';
import { createAgentPool, frameFields, WorkerPool, type AgentPool, type Decisions } from '../src/service/pool/index.js';
import { readThreadStats } from '../src/service/pool/thread-cpu.js';
import { formatMachine, machineInfo } from './lib/machine.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    sessions: { type: 'string', default: '4' },
    agents: { type: 'string', default: '50000' },
    ticks: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '60' },
    workers: { type: 'string', default: '2' },
    'young-mb': { type: 'string' },
    'checkpoint-ms': { type: 'string' },
    json: { type: 'boolean', default: false },
    /** Rows the main thread does not read (the service's way, ws.ts); --no-unread: the main thread reads them. */
    unread: { type: 'boolean', default: true },
    /** A frame applied and ticked in one message (tickFrame, the service's way since round sixteen); --no-frame: staged, then observe, results, tick. */
    frame: { type: 'boolean', default: true },
  },
  allowNegative: true,
});
const int = (name: string, v: string, min = 1): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: expected an integer ≥ ${min}, got '${v}'`);
  return n;
};
const sessions = int('sessions', values.sessions);
const agents = int('agents', values.agents);
const ticks = int('ticks', values.ticks);
const warmup = int('warmup', values.warmup, 0);
const workers = int('workers', values.workers, 0);
const perSession = Math.floor(agents / sessions);
const FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos'];
const HZ = 20;
/** Distinct frames per session, encoded before timing and used in turn. */
const FRAMES = 64;

function root(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

/** CPU seconds of this process's threads: main, workers (`WorkerThread`), the rest. */
function threadCpu(): { main: number; workers: number; other: number } {
  let main = 0;
  let w = 0;
  let other = 0;
  for (const t of readThreadStats('self') ?? []) {
    if (t.tid === process.pid) main += t.cpuSeconds;
    else if (t.name === 'WorkerThread') w += t.cpuSeconds;
    else other += t.cpuSeconds;
  }
  return { main, workers: w, other };
}

/** Snapshot frames of one session: agents walk and meet enemies, as far as the rows are concerned. */
function frames(session: number): Buffer[] {
  let seed = 1 + session;
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const hp = Array.from({ length: perSession }, () => 50 + 50 * rnd());
  const visible = Array.from({ length: perSession }, () => rnd() < 0.3);
  const dist = Array.from({ length: perSession }, () => 6 + 14 * rnd());
  const out: Buffer[] = [];
  for (let f = 0; f < FRAMES; f++) {
    const rows: unknown[][] = [];
    for (let i = 0; i < perSession; i++) {
      // Slow changes, as in the load generator's world: about one decision per agent per second.
      hp[i] = Math.max(1, Math.min(100, hp[i]! + (rnd() - 0.45) * 0.5));
      if (rnd() < 0.01) visible[i] = !visible[i];
      dist[i] = visible[i] ? Math.max(1, dist[i]! - 0.2 * rnd()) : 6 + 14 * rnd();
      rows.push([i, hp[i], visible[i], visible[i] ? dist[i] : 0, visible[i] ? [100 * rnd(), 100 * rnd()] : null]);
    }
    out.push(encode({ t: 'snapshot', tick: f, time: f / HZ, agents: rows }));
  }
  return out;
}

const AGENTS_KEY = encode('agents');

/**
 * Snapshot frame `n` with these results, as the load generator's game servers send it (agents last): its head
 * encoded, the rows of `frame` (one of `frames`) after it. The game server's work (timed as such).
 */
function withResults(n: number, results: ReadonlyArray<[AgentId, number, 'success']>, frame: Buffer): Buffer {
  const head = encode(results.length > 0 ? { t: 'snapshot', tick: n, time: n / HZ, results } : { t: 'snapshot', tick: n, time: n / HZ });
  // The map's entry count (a fixmap): one more, `agents`, whose key and rows follow.
  head[0] = head[0]! + 1;
  const rows = frame.subarray(frame.indexOf(AGENTS_KEY) + AGENTS_KEY.length);
  return Buffer.concat([head, AGENTS_KEY, rows]);
}

const youngMb = values['young-mb'] === undefined ? undefined : int('young-mb', values['young-mb'], 0);
const checkpointMs = values['checkpoint-ms'] === undefined ? undefined : Number(values['checkpoint-ms']);
if (checkpointMs !== undefined && !Number.isInteger(checkpointMs)) throw new Error(`--checkpoint-ms: expected an integer, got '${values['checkpoint-ms']}'`);
const pool: AgentPool = await createAgentPool({
  trees: join(root(), 'trees'),
  workers,
  // Each session whole on one worker, as the load generator's game servers end up (they spawn in parts, side by side):
  // spawned here in one call each, a session would spill over to the other worker (PoolOptions.sessionAffinity).
  sessionAffinity: perSession + 1,
  ...(youngMb !== undefined ? { workerYoungGenerationMb: youngMb } : {}),
  ...(checkpointMs !== undefined ? { checkpointMs } : {}),
});
await pool.ready();
const games = Array.from({ length: sessions }, (_, s) => {
  const name = `s${s}`;
  pool.createSession(name, { fields: FIELDS, maxAgents: perSession });
  pool.spawn(name, Array.from({ length: perSession }, (_unused, i) => ({ id: i, tree: 'guard' })));
  return { name, frames: frames(s), due: Array.from({ length: 32 }, () => [] as Array<[AgentId, number, 'success']>) };
});

let decisionBytes = 0;
let actions = 0;
/** Main-thread time spent as the game server (reading decisions frames), not as the service. */
let gameSeconds = 0;
/** CPU seconds of the main thread (Node ≥ 23.9; before: wall time, which is close for synchronous code). */
const threadSeconds = (): number => {
  const usage = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.();
  return usage === undefined ? performance.now() / 1000 : (usage.user + usage.system) / 1e6;
};
const OPTIONS = { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true } as const;
type Game = (typeof games)[number];

async function round(n: number): Promise<void> {
  await Promise.all(
    games.map(async (g) => {
      const d = values.frame ? await frameTick(g, n) : await stagedTick(g, n);
      // As the session sends them (session.ts): the actions spliced in as the workers encoded them.
      const frame = encodeDecisions(frameFields(d, d.tick, d.basedOn));
      decisionBytes += frame.length;
      // The game server's side, timed and taken out of the main thread's figure: it reads the frame for its actions,
      // and every action succeeds a second later (a game's moves and shots take a while).
      const readStart = threadSeconds();
      const read = decode(frame) as { actions?: Array<[AgentId, number]> };
      const due = g.due[(n + 20) % g.due.length]!;
      for (const [id, seq] of read.actions ?? []) due.push([id, seq, 'success']);
      actions += read.actions?.length ?? 0;
      gameSeconds += threadSeconds() - readStart;
    }),
  );
}

/** A session's tick as a lockstep session makes it (session.ts lockstepFrameNow): the frame, its results in it, in one message. */
async function frameTick(g: Game, n: number): Promise<Decisions> {
  const results = g.due[n % g.due.length]!;
  g.due[n % g.due.length] = [];
  const built = threadSeconds();
  const bytes = withResults(n, results, g.frames[n % FRAMES]!);
  gameSeconds += threadSeconds() - built;
  const unread = parseSnapshotHead(bytes, Number.MAX_SAFE_INTEGER, OPTIONS);
  if (unread === undefined) throw new Error('frame not read by the fast path');
  const msg = unread.parsed.msg;
  const frame = { bytes, start: unread.start, count: unread.count, width: FIELDS.length, world: msg.world, results: msg.results };
  const ticked = await pool.tickFrame(g.name, n, n / HZ, 1 / HZ, n, frame);
  if (ticked === null) throw new Error('frame not taken in one message (tickFrame)');
  if (ticked.errors.length > 0) throw new Error(`result errors: ${JSON.stringify(ticked.errors.slice(0, 3))}`);
  return ticked.decisions;
}

/** The path before round sixteen: rows staged on the workers (or, `--no-unread`, read here), then observe, results and tick. */
async function stagedTick(g: Game, n: number): Promise<Decisions> {
  const bytes = g.frames[n % FRAMES]!;
  // As the service read a snapshot (ws.ts): rows left to the workers where the pool can, else read here.
  const unread = values.unread ? parseSnapshotHead(bytes, Number.MAX_SAFE_INTEGER, OPTIONS) : undefined;
  const staging = unread === undefined ? null : pool.stageRows(g.name, bytes, unread.start, unread.count, FIELDS.length);
  const staged = staging === null ? null : await staging;
  let rows: Parameters<AgentPool['observe']>[1];
  if (staged !== null) rows = staged;
  else {
    const parsed = parseClientFrame(bytes, Number.MAX_SAFE_INTEGER, OPTIONS);
    if (!parsed.ok || parsed.msg.t !== 'snapshot') throw new Error('frame refused');
    rows = (parsed.msg as SnapshotMessage).agents as Parameters<AgentPool['observe']>[1];
  }
  pool.observe(g.name, rows, false);
  const results = g.due[n % g.due.length]!;
  g.due[n % g.due.length] = [];
  if (results.length > 0) pool.results(g.name, results);
  return pool.tick(g.name, n, n / HZ, 1 / HZ, n);
}

for (let n = 0; n < warmup; n++) await round(n);
const before = threadCpu();
const started = performance.now();
decisionBytes = 0;
actions = 0;
gameSeconds = 0;
for (let n = warmup; n < warmup + ticks; n++) await round(n);
const wall = (performance.now() - started) / 1000;
const after = threadCpu();
const recovery = pool instanceof WorkerPool ? pool.recoveryStats() : { checkpoints: 0, packMedianMs: 0, partMedianMs: 0, partMaxMs: 0 };
await pool.close();

const agentTicks = ticks * perSession * sessions;
const us = (s: number): number => (s * 1e6) / agentTicks;
const main = after.main - before.main - gameSeconds;
const work = after.workers - before.workers;
const other = after.other - before.other;
const total = main + work + other;
const share = total > 0 ? main / total : 0;
const result = {
  machine: machineInfo(),
  sessions,
  agents: perSession * sessions,
  workers,
  ticks,
  wallSeconds: Math.round(wall * 1000) / 1000,
  cpuUsPerAgentTick: { total: us(total), main: us(main), workers: us(work), other: us(other) },
  mainShare: share,
  amdahl16: 1 / (share + (1 - share) / 16),
  actionsPerTick: actions / ticks,
  decisionBytesPerTick: decisionBytes / ticks,
  /** Crash-recovery checkpoints over the whole run (spawn and warm-up included): how many, and a pack's median time on its worker. */
  checkpoints: { count: recovery.checkpoints, packMedianMs: recovery.packMedianMs, partMedianMs: recovery.partMedianMs, partMaxMs: recovery.partMaxMs },
  loadAverage: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
};
if (values.json) console.log(JSON.stringify(result));
else {
  console.log(formatMachine(result.machine));
  console.log(`${sessions} sessions × ${perSession} agents, ${workers} workers, ${ticks} ticks (after ${warmup}); load average ${result.loadAverage}`);
  const c = result.cpuUsPerAgentTick;
  console.log(`CPU per agent-tick: ${c.total.toFixed(3)} µs = main ${c.main.toFixed(3)} + workers ${c.workers.toFixed(3)} + GC/JIT helpers ${c.other.toFixed(3)}`);
  console.log(`main thread share ${(100 * share).toFixed(1)} %, Amdahl bound on 16 cores ${result.amdahl16.toFixed(1)}×; ${result.actionsPerTick.toFixed(0)} actions a tick`);
  console.log(`checkpoints ${recovery.checkpoints}, pack median ${recovery.packMedianMs.toFixed(2)} ms (wall time on a worker, ${perSession} agents: a session, whole on one worker), held its worker ${recovery.partMedianMs.toFixed(2)} ms at a time (median; at most ${recovery.partMaxMs.toFixed(2)})`);
}
