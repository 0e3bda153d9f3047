// What recording costs, in CPU time rather than wall time (so a shared machine's other load does not
// decide the answer): the service's session path — frame parsed as the WebSocket handler parses it,
// snapshot applied, every agent ticked, decisions encoded — with and without the flight recorder,
// compression on libuv's threads included (process.cpuUsage counts every thread). Rounds alternate
// off / each codec; the best and the median round of each are compared.
//
//   npm run build && node dist/bench/record-cost.js [--agents 50000] [--ticks 100] [--rounds 4] [--codecs brotli,zstd]
//
// `--codecs` lists the settings compared with off: brotli, zstd (the default level) or zstd@LEVEL (e.g.
// zstd@-2,zstd@-6: what a level costs in CPU and saves on disk).

import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { playFrames, snapshotFrames } from './lib/session-frames.js';
import { RecordingReader, RecordingWriter } from '../src/record/index.js';
import { zstdAvailable, type CodecChoice } from '../src/record/codec.js';
import { loadLibrary } from '../src/service/http/trees.js';
import { Metrics } from '../src/service/metrics.js';
import { createAgentPool } from '../src/service/pool/index.js';
import { readThreadStats } from '../src/service/pool/thread-cpu.js';
import { THREAD_NAME, threadSink } from '../src/service/recording/compressor.js';
import { SessionRecorder } from '../src/service/recording/recorder.js';
import { Session } from '../src/service/sessions/session.js';
import { FIELDS, GameWorld } from './load/world.js';
import { formatMachine, machineInfo } from './lib/machine.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '50000' },
    ticks: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '4' },
    workers: { type: 'string', default: '0' },
    codecs: { type: 'string', default: zstdAvailable ? 'brotli,zstd' : 'brotli' },
  },
});
/** One recorded setting: a codec, and for zstd its level (undefined: the writer's default). */
interface Setting {
  readonly name: string;
  readonly codec: CodecChoice;
  readonly zstdLevel?: number;
}
const codecs: Setting[] = values.codecs.split(',').map((c) => {
  const m = /^(brotli|zstd)(?:@(-?\d+))?$/.exec(c);
  if (m === null || (m[1] === 'brotli' && m[2] !== undefined)) throw new Error(`--codecs: brotli, zstd or zstd@LEVEL, not ${c}`);
  if (m[1] === 'zstd' && !zstdAvailable) throw new Error(`--codecs zstd: this Node (${process.versions.node}) has no zstd`);
  return { name: c, codec: m[1] as CodecChoice, ...(m[2] !== undefined ? { zstdLevel: Number(m[2]) } : {}) };
});
const agents = Number(values.agents);
const ticks = Number(values.ticks);
const rounds = Number(values.rounds);

console.log('Canopy recording cost (CPU time of the session path, recorder off vs on)');
console.log(formatMachine(machineInfo()));
console.log(`${agents} agents on guard, lockstep, ${ticks} ticks per round, ${rounds} rounds each of off, ${codecs.map((c) => c.name).join(', ')}, alternating; ${values.workers} workers (0: inline)`);

const library = await loadLibrary(resolve('trees'), null);
const pool = await createAgentPool({ trees: resolve('trees'), workers: Number(values.workers), library });
await pool.ready();
const logger = pino({ level: 'silent' });
const metrics = new Metrics({ sessions: () => [], agents: () => 0, workers: () => [], recovery: () => null, frameBuffers: () => ({ reused: 0, allocated: 0 }), threads: () => undefined });
const dir = await mkdtemp(join(tmpdir(), 'canopy-record-cost-'));

/**
 * CPU ms of this process's threads by kind, from /proc (Linux; empty elsewhere): the main thread, libuv's
 * thread pool, the recording compression thread, worker threads (the agent pool's with --workers) and V8's
 * helpers (concurrent GC, compilers).
 */
function threadCpu(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of readThreadStats('self') ?? []) {
    const kind = t.tid === process.pid ? 'main' : t.name === THREAD_NAME
          ? 'record'
          : t.name.startsWith('libuv-worker')
            ? 'pool'
            : t.name.startsWith('node-V8Worker')
              ? 'v8'
              : t.name === 'WorkerThread'
                ? 'worker'
                : 'other';
    out[kind] = (out[kind] ?? 0) + t.cpuSeconds * 1000;
  }
  return out;
}

/** One round: a fresh session and world, recorded with `codec` (null: off); returns process CPU ms (in all and per thread kind) and bytes recorded. */
async function round(setting: Setting | null, n: number): Promise<{ cpuMs: number; threads: Record<string, number>; bytes: number; raw: number }> {
  const record = setting !== null;
  const session = new Session({ pool, metrics, logger, maxAgents: agents }, { mode: 'lockstep', hz: 0, fields: [...FIELDS], transport: 'ws' });
  let writer: RecordingWriter | null = null;
  if (record) {
    writer = new RecordingWriter({
      dir,
      recording: `round${n}`,
      maxBytes: 0,
      codec: setting!.codec,
      // The service's writers compress on its recording compression thread.
      sink: threadSink,
      ...(setting!.zstdLevel !== undefined ? { zstdLevel: setting!.zstdLevel } : {}),
      header: { canopy: 'bench', session: session.id, mode: 'lockstep', hz: 0, fields: [...FIELDS], plugins: [], trees: {}, definitions: {} },
      onError: (err) => {
        throw err;
      },
    });
    session.recorder = new SessionRecorder(writer, `round${n}`, 'lockstep', () => undefined);
  }
  session.spawn(Array.from({ length: agents }, (_, id) => ({ id, tree: 'guard' })));
  const world = new GameWorld(agents, 7);
  const frames = snapshotFrames(world, ticks);
  const threadsBefore = threadCpu();
  const before = process.cpuUsage();
  await playFrames(session, world, frames);
  await writer?.close('round over');
  const used = process.cpuUsage(before);
  const threads = threadCpu();
  for (const k of Object.keys(threads)) threads[k]! -= threadsBefore[k] ?? 0;
  await session.end();
  let bytes = 0;
  let raw = 0;
  if (record) {
    for (const f of await readdir(dir)) if (f.startsWith(`round${n}.`)) bytes += (await stat(join(dir, f))).size;
    for (const b of RecordingReader.open(writer!.file).index()) raw += b.raw;
  }
  return { cpuMs: (used.user + used.system) / 1000, threads, bytes, raw };
}

const settings: Array<Setting | null> = [null, ...codecs];
const cpu = new Map<Setting | null, number[]>(settings.map((c) => [c, []]));
const size = new Map<Setting, { bytes: number; raw: number }>();
/** Thread CPU summed over the rounds of each setting. */
const threadSums = new Map<Setting | null, Record<string, number>>(settings.map((c) => [c, {}]));
// One round of each first, not counted: the JIT warms up on the first rounds.
for (const [i, codec] of settings.entries()) await round(codec, 1000 + i);
for (let r = 0; r < rounds; r++) {
  for (const [i, codec] of settings.entries()) {
    const res = await round(codec, r * settings.length + i);
    cpu.get(codec)!.push(res.cpuMs);
    const sums = threadSums.get(codec)!;
    for (const [k, v] of Object.entries(res.threads)) sums[k] = (sums[k] ?? 0) + v;
    if (codec !== null) size.set(codec, res);
    console.log(`  round ${r + 1} ${codec?.name ?? 'off'}: ${res.cpuMs.toFixed(0)} ms CPU${codec !== null ? `, ${(res.bytes / 2 ** 20).toFixed(1)} MB` : ''}`);
  }
}
await pool.close();
await rm(dir, { recursive: true, force: true });
const agentTicks = agents * ticks;
const ns = (ms: number): number => (ms * 1e6) / agentTicks;
const min = (xs: number[]): number => Math.min(...xs);
const median = (xs: number[]): number => xs.toSorted((a, b) => a - b)[xs.length >> 1]!;
const off = cpu.get(null)!;
const perThread = (c: Setting | null): string =>
  Object.entries(threadSums.get(c)!)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${ns(v / rounds).toFixed(0)}`)
    .join(', ');
console.log(`CPU per agent-tick, best / median round: off ${ns(min(off)).toFixed(0)} / ${ns(median(off)).toFixed(0)} ns`);
for (const codec of codecs) {
  const on = cpu.get(codec)!;
  const s = size.get(codec)!;
  console.log(
    `  ${codec.name.padEnd(8)} ${ns(min(on)).toFixed(0)} / ${ns(median(on)).toFixed(0)} ns: recording costs +${(ns(min(on)) - ns(min(off))).toFixed(0)} / +${(ns(median(on)) - ns(median(off))).toFixed(0)} ns ` +
      `(${(100 * (min(on) / min(off) - 1)).toFixed(1)} / ${(100 * (median(on) / median(off) - 1)).toFixed(1)} % of the session path's CPU); ` +
      `${(s.bytes / agentTicks).toFixed(2)} bytes per agent-tick on disk (${(s.raw / agentTicks).toFixed(2)} raw)`,
  );
}
if (Object.keys(threadSums.get(null)!).length > 0) {
  console.log('CPU per agent-tick by thread, mean of the rounds (10 ms clock ticks; record: the recording compression thread, where blocks are compressed and written (Node 24+; before, it counts in worker); worker: the agent pool threads; pool: libuv; v8: GC and compiler helpers):');
  for (const c of settings) console.log(`  ${(c?.name ?? 'off').padEnd(8)} ${perThread(c)}`);
}
