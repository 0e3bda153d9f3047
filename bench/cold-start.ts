// Cold start: what the first game server costs a freshly started service, with the start-up warm-up off, with the
// pool's part only, and with the session layer's too (src/service/warmup.ts). Each run starts a service in a child
// process (real workers), then one game server says hello, spawns `--agents` agents (sparse ids) with its first
// snapshot right behind the spawn, and ticks `--ticks` times in lockstep. Measured: the service main thread's CPU
// time for all of it (the child's own clock, so other programs on the machine do not count), and the wall time to
// the spawn's reply and to the first tick's decisions. Runs alternate between the variants.
//
//   npm run build && node dist/bench/cold-start.js [--agents 2500] [--ticks 3] [--runs 5] [--workers 2]

import { fork, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { WebSocket, type RawData } from 'ws';
import { decode, encode, PROTOCOL_VERSION } from '../src/protocol/index.js';
import { defaultConfig } from '../src/service/config.js';
import { createServer } from '../src/service/server.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { treesFolderFor } from './load/service.js';
import { benchArgs } from './lib/args.js';

/** The warm-up: none, the pool's part only, the pool's and the session layer's; `again`: as `all`, and the game server measured is the second one (the floor: a warm process). */
type Variant = 'none' | 'pool' | 'all' | 'again';
const VARIANTS: Variant[] = ['none', 'pool', 'all', 'again'];
const FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos'];

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '2500' },
    ticks: { type: 'string', default: '3' },
    runs: { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
    serve: { type: 'string' },
  },
});

const threadCpu = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage;
/** This thread's CPU time, ms (the process's before Node 23.9). */
const cpuMs = (): number => {
  const u = threadCpu !== undefined ? threadCpu.call(process) : process.cpuUsage();
  return (u.user + u.system) / 1000;
};

if (values.serve !== undefined) {
  // The child: a service with the warm-up asked for; answers "cpu" with its main thread's CPU time.
  const variant = values.serve as Variant;
  const server = await createServer(
    { ...defaultConfig(), host: '127.0.0.1', port: 0, workers: Number(values.workers), trees: treesFolderFor('guard'), logLevel: 'warn', watch: false, tuning: { warmupAgents: variant === 'none' ? 0 : 2000, warmupSession: variant === 'all' || variant === 'again' } },
  );
  const { port } = await server.listen();
  process.on('message', (m) => {
    if (m === 'cpu') process.send!({ cpu: cpuMs() });
    if (m === 'stop') void server.close().then(() => process.exit(0));
  });
  process.send!({ port, startedMs: performance.now() });
} else {
  await main();
}

async function main(): Promise<void> {
  const agents = Number(values.agents);
  const ticks = Number(values.ticks);
  const runs = Number(values.runs);
  console.log(`Canopy cold start: the first game server of a fresh service (${values.workers} workers): hello, spawn of ${agents} agents (sparse ids) with its first snapshot behind it, ${ticks} lockstep ticks`);
  console.log(formatMachine(machineInfo()));
  const results = new Map<Variant, Array<{ cpu: number; spawn: number; first: number; start: number }>>(VARIANTS.map((v) => [v, []]));
  for (let r = 0; r < runs; r++) {
    for (const v of VARIANTS) results.get(v)!.push(await once(v, agents, ticks));
  }
  const rows = [['warm-up', 'main thread CPU ms (median; all runs)', 'spawn answered ms', 'first tick answered ms', 'ready after ms']];
  for (const v of VARIANTS) {
    const xs = results.get(v)!;
    rows.push([
      v === 'none' ? 'none' : v === 'pool' ? 'pool only' : v === 'all' ? 'pool + session' : 'pool + session, 2nd game server',
      `${med(xs.map((x) => x.cpu)).toFixed(1)} (${xs.map((x) => x.cpu.toFixed(0)).join(', ')})`,
      med(xs.map((x) => x.spawn)).toFixed(1),
      med(xs.map((x) => x.first)).toFixed(1),
      med(xs.map((x) => x.start)).toFixed(0),
    ]);
  }
  console.log(formatTable(rows));
  console.log(`load average at the end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}

async function once(variant: Variant, agents: number, ticks: number): Promise<{ cpu: number; spawn: number; first: number; start: number }> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', variant, '--workers', String(values.workers)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const { port, startedMs } = (await reply(child, null)) as { port: number; startedMs: number };
    if (variant === 'again') await gameServer(child, port, agents, ticks, 8_000_000);
    return { ...(await gameServer(child, port, agents, ticks, 7_000_000)), start: startedMs };
  } finally {
    child.send('stop');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

/** One game server's hello, spawn with a snapshot behind it, and lockstep ticks; the service's main thread CPU for it. */
async function gameServer(child: ChildProcess, port: number, agents: number, ticks: number, firstId: number): Promise<{ cpu: number; spawn: number; first: number }> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
  const frames: Array<Record<string, unknown>> = [];
  let wake: (() => void) | null = null;
  socket.on('message', (d: RawData) => {
    frames.push(decode(d as Buffer) as Record<string, unknown>);
    wake?.();
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const next = async (t: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const i = frames.findIndex((f) => f['t'] === t || f['t'] === 'error');
      if (i >= 0) {
        const f = frames.splice(0, i + 1)[i]!;
        if (f['t'] === 'error') throw new Error(`service error: ${String(f['message'])}`);
        return f;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  socket.send(encode({ t: 'hello', v: PROTOCOL_VERSION, mode: 'lockstep', fields: FIELDS }));
  await next('welcome');
  const ids = Array.from({ length: agents }, (_, i) => firstId + i);
  const spawn = encode({ t: 'spawn', id: 1, agents: ids.map((id, i) => ({ id, tree: 'guard', seed: i })) });
  const snapshot = (t: number): Uint8Array => encode({ t: 'snapshot', tick: t, time: t * 0.05, agents: ids.map((id, i) => [id, 100 - (i % 50), (i + t) % 4 === 0, 5 + (i % 30), [i % 100, t]]) });
  const frames1 = snapshot(1);
  const cpu0 = ((await reply(child, 'cpu')) as { cpu: number }).cpu;
  const sent = performance.now();
  socket.send(spawn);
  socket.send(frames1);
  await next('spawned');
  const spawnMs = performance.now() - sent;
  await next('decisions');
  const firstMs = performance.now() - sent;
  for (let t = 2; t <= ticks; t++) {
    socket.send(snapshot(t));
    await next('decisions');
  }
  const cpu1 = ((await reply(child, 'cpu')) as { cpu: number }).cpu;
  socket.send(encode({ t: 'bye' }));
  await new Promise((resolve) => socket.once('close', resolve));
  return { cpu: cpu1 - cpu0, spawn: spawnMs, first: firstMs };
}

function med(xs: number[]): number {
  return xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

function reply(child: ChildProcess, ask: string | null): Promise<unknown> {
  return new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`service exited (${code})`)));
    if (ask !== null) child.send(ask);
  });
}
