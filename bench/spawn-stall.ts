// How long a large spawn holds each thread at a time: the main thread (decoding the frame, routing the agents,
// serializing the orders for the workers) and a worker (deserializing them, creating the agents), all in one block
// as a single message was handled before, and in parts as the service handles it now (ws.ts: 1,000 entries per
// turn of the event loop; pool/slicer.ts: a worker creates agents 2 ms at a time between other messages). Every
// other session on that thread waits for the longest block. In-process (the real code, no network), measured in
// CPU time (the machine is shared), per id style. `--agents N` (10000), `--rounds N` (6: the first is cold, the others warm).
// Then what each id style costs the main thread per snapshot row: reading the frame, and routing the rows.
//
//   npm run build && node dist/bench/spawn-stall.js [--agents 10000] [--rounds 6]

import { deserialize, serialize } from 'node:v8';
import { decodeSpawnPart, encode, LIMITS, parseClientFrame, parseClientMessage, splitFrameList, type AgentId } from '../src/protocol/index.js';
import { AgentHost } from '../src/service/pool/host.js';
import { loadTrees } from '../src/service/pool/load.js';
import { PoolRouter } from '../src/service/pool/router.js';
import { Slicer } from '../src/service/pool/slicer.js';
import { packSpawnOrders, spawnOrderAt } from '../src/service/pool/spawns.js';
import type { SpawnEntry } from '../src/service/pool/types.js';
import type { FromHost, HostRequest, ToHost, WorldUpdate } from '../src/service/pool/wire.js';
import type { TreeLibrary } from '../src/bt/library.js';
import { formatMachine, machineInfo } from './lib/machine.js';
import { agentIds, ID_STYLES } from './load/ids.js';
import { benchArgs } from './lib/args.js';

/**
 * CPU time of this process, ms: the machine is shared, and wall time would count the time other programs had the
 * core. Everything measured runs on this thread (GC helpers aside).
 */
const threadCpu = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage;
const performance = {
  now(): number {
    // This thread's CPU time (Node ≥ 23.9), else the process's (GC helper threads included: a little more).
    const u = threadCpu !== undefined ? threadCpu.call(process) : process.cpuUsage();
    return (u.user + u.system) / 1000;
  },
};

const { values } = benchArgs(import.meta.url, { options: { agents: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '6' } } });
const N = Number(values.agents);
const ROUNDS = Math.max(2, Number(values.rounds));
const PART = 1000;
const FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos'];

const loaded = await loadTrees('trees', undefined);
if (!loaded.ok) throw new Error(loaded.error);
const library = loaded.library;

/** The router of a 2-worker pool whose posts are serialized as postMessage would (v8 serializer) and kept. */
class Capture extends PoolRouter {
  readonly workerCount = 2;
  readonly posted: Array<{ host: number; bytes: Buffer }> = [];
  constructor(trees: TreeLibrary) {
    super(trees, 2, undefined);
  }
  protected post(host: number, msg: ToHost): void {
    this.posted.push({ host, bytes: serialize(msg) });
  }
  protected request(_host: number, _msg: HostRequest): Promise<FromHost> {
    return Promise.reject(new Error('not in this benchmark'));
  }
  protected shareWorld(world: unknown): WorldUpdate {
    return { value: world };
  }
  protected shareFrame(bytes: Uint8Array): Uint8Array {
    return bytes;
  }
  protected elu(): number {
    return 0;
  }
  ready(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  protected installTrees(): void {}
}

/** What a session does with a spawn's entries (session.ts). */
function entriesOf(agents: ReadonlyArray<{ id: AgentId; tree: string; seed?: number }>): SpawnEntry[] {
  return agents.map((a) => ({ id: a.id, tree: a.tree, ...(a.seed !== undefined ? { seed: a.seed } : {}) }));
}

interface Figures {
  /** Main thread, the whole spawn in one block: decode + route + serialize. */
  mainOneBlock: number;
  /** Main thread, now: the longest of decode, and each part's route + serialize. */
  mainLongest: number;
  /** A worker, one message of all its agents: deserialize + create. */
  workerOneBlock: number;
  /** A worker, now: the longest of each part's deserialize, and each slice. */
  workerLongest: number;
  decodeMs: number;
}

function round(style: (typeof ID_STYLES)[number], k: number): Figures {
  const ids = agentIds(style, k, N) ?? Array.from({ length: N }, (_, i) => i);
  const frame = encode({ t: 'spawn', id: 1, agents: ids.map((id, i) => ({ id, tree: 'guard', seed: i })) });
  const session = `s${k}`;

  // Before: one block on the main thread, one message per worker.
  let t = performance.now();
  const parsed = parseClientFrame(frame, LIMITS.defaultMaxFrameBytes, { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true });
  const decodeMs = performance.now() - t;
  if (!parsed.ok || parsed.msg.t !== 'spawn') throw new Error('spawn frame refused');
  const agents = parsed.msg.agents;
  const one = new Capture(library);
  one.createSession(session, { fields: FIELDS, maxAgents: N });
  t = performance.now();
  one.spawn(session, entriesOf(agents));
  const routeAll = performance.now() - t;
  // The router posts parts of 1,000 now; one message of all a worker's agents is what it deserialized before.
  const perHost = [0, 1].map((h) =>
    one.posted.filter((p) => p.host === h).flatMap((p) => {
      const batch = (deserialize(p.bytes) as Extract<ToHost, { t: 'spawn' }>).agents;
      return Array.from({ length: batch.count }, (_, i) => spawnOrderAt(batch, i));
    }),
  );
  let workerOneBlock = 0;
  for (const orders of perHost) {
    const bytes = serialize({ t: 'spawn', session, fields: FIELDS, agents: packSpawnOrders(orders) });
    const host = new AgentHost(library);
    t = performance.now();
    host.handle(deserialize(bytes) as ToHost);
    workerOneBlock = Math.max(workerOneBlock, performance.now() - t);
  }

  // Now: the frame decoded in parts of 1,000 (ws.ts), validated, then applied in parts of 1,000 on the main
  // thread; on a worker, parts deserialized one by one and agents created in slices.
  t = performance.now();
  const split = splitFrameList(frame, 'agents', PART);
  if (split === undefined) throw new Error('spawn frame not cut');
  let decodeLongest = performance.now() - t;
  const items: unknown[] = [];
  for (const part of split.parts) {
    t = performance.now();
    for (const item of decodeSpawnPart(part.bytes, part.count)!) items.push(item);
    decodeLongest = Math.max(decodeLongest, performance.now() - t);
  }
  split.fields['agents'] = items;
  t = performance.now();
  if (!parseClientMessage(split.fields, { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true }).ok) throw new Error('spawn frame refused');
  decodeLongest = Math.max(decodeLongest, performance.now() - t);
  const parts = new Capture(library);
  parts.createSession(session, { fields: FIELDS, maxAgents: N });
  let mainLongest = decodeLongest;
  for (let from = 0; from < agents.length; from += PART) {
    t = performance.now();
    parts.spawn(session, entriesOf(agents.slice(from, from + PART)));
    mainLongest = Math.max(mainLongest, performance.now() - t);
  }
  let workerLongest = 0;
  for (const h of [0, 1]) {
    const host = new AgentHost(library);
    const pending: Array<() => void> = [];
    const slicer = new Slicer((msg) => host.handle(msg), () => undefined, undefined, (next) => pending.push(next));
    for (const p of parts.posted.filter((x) => x.host === h)) {
      t = performance.now();
      const msg = deserialize(p.bytes) as ToHost;
      if (!slicer.take(msg)) host.handle(msg);
      workerLongest = Math.max(workerLongest, performance.now() - t);
    }
    while (pending.length > 0) {
      t = performance.now();
      pending.shift()!();
      workerLongest = Math.max(workerLongest, performance.now() - t);
    }
  }
  return { mainOneBlock: decodeMs + routeAll, mainLongest, workerOneBlock, workerLongest, decodeMs: decodeLongest };
}

function median(xs: number[]): number {
  return xs.toSorted((a, b) => a - b)[xs.length >> 1]!;
}

function cell(a: number, b: number): string {
  return `${a.toFixed(1)} → ${b.toFixed(1)}`;
}

const machine = machineInfo();
console.log(`Canopy: how long a spawn of ${N} agents holds a thread at a time (2 workers, tree guard)`);
console.log(formatMachine(machine));
console.log(`ms of ${threadCpu !== undefined ? 'this thread' : 'process'} CPU time; cold = first round of the process, warm = median of the others\n`);
console.log('ids     | main thread: one block → longest part (longest part of the decode) | a worker: one block → longest part');
let k = 0;
for (const style of ID_STYLES) {
  const rounds: Figures[] = [];
  for (let r = 0; r < ROUNDS; r++) rounds.push(round(style, k++));
  const warm = rounds.slice(1);
  const med = (f: (x: Figures) => number): number => {
    const xs = warm.map(f).toSorted((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)]!;
  };
  const c = rounds[0]!;
  console.log(
    `${style.padEnd(7)} | warm ${cell(med((x) => x.mainOneBlock), med((x) => x.mainLongest))} (${med((x) => x.decodeMs).toFixed(1)}); cold ${cell(c.mainOneBlock, c.mainLongest)} (${c.decodeMs.toFixed(1)})` +
      ` | warm ${cell(med((x) => x.workerOneBlock), med((x) => x.workerLongest))}; cold ${cell(c.workerOneBlock, c.workerLongest)}`,
  );
}

// Per snapshot row: reading a 10,000-row frame (the fast path) and routing its rows to the workers' batches.
console.log(`\nmain thread per snapshot row (${N} rows, 4 fields as the load generator sends them; ns of CPU time, median of 5 × 100 frames)`);
console.log('ids     | read | route | in all');
for (const style of ID_STYLES) {
  const ids = agentIds(style, 3, N) ?? Array.from({ length: N }, (_, i) => i);
  const router = new Capture(library);
  router.createSession('rows', { fields: FIELDS, maxAgents: N });
  router.spawn('rows', ids.map((id) => ({ id, tree: 'guard' })));
  const frame = encode({ t: 'snapshot', tick: 1, time: 0.05, agents: ids.map((id, i) => [id, 50 + (i % 7), i % 3 === 0, i % 3 === 0 ? 12.5 : null, i % 3 === 0 ? [1.5, 2.5] : null]) });
  const reads: number[] = [];
  const routes: number[] = [];
  for (let r = 0; r < 6; r++) {
    let read = 0;
    let route = 0;
    for (let f = 0; f < 100; f++) {
      let t = performance.now();
      const parsed = parseClientFrame(frame, LIMITS.defaultMaxFrameBytes, { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true });
      read += performance.now() - t;
      if (!parsed.ok || parsed.msg.t !== 'snapshot') throw new Error('snapshot frame refused');
      t = performance.now();
      router.observe('rows', parsed.msg.agents as Parameters<Capture['observe']>[1], false);
      route += performance.now() - t;
      // A tick would take the batches to the workers; here they are dropped.
      for (const shard of (router as unknown as { sessions: Map<string, { shards: Array<{ discard(): void }> }> }).sessions.get('rows')!.shards) shard.discard();
    }
    if (r > 0) {
      reads.push((read * 1e6) / (100 * N));
      routes.push((route * 1e6) / (100 * N));
    }
  }
  console.log(`${style.padEnd(7)} | ${median(reads).toFixed(0)} ns | ${median(routes).toFixed(0)} ns | ${(median(reads) + median(routes)).toFixed(0)} ns`);
}
