// Slow readers against the outbound memory cap: starts the built service as a child process, opens
// fixed-mode sessions whose agents decide every tick with long client strings in their action args,
// stops reading those sockets, and reports the service's peak RSS against the configured cap.
//
//   npm run build && node dist/bench/slow-reader.js [--agents 10000] [--readers 1,2] [--cap-mib 64]
//                                                    [--string-bytes 1000] [--hz 20] [--workers 1]
//
// Each run (one per --readers count) gets a fresh service with CANOPY_MAX_OUTBOX_BYTES = --cap-mib.
// Baseline: the service's RSS once the agents are spawned and their decisions flow to readers that
// keep up, and its peak (VmHWM) by then. Then the readers stop reading; the run ends when every one
// of them was told goodbye (canopy_goodbyes_total) or after --timeout-s. Growth: the peak RSS after
// that (VmHWM, the kernel's high-water mark) over the peak while every reader kept up.

import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { decode, encode } from '../src/protocol/index.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { startService, type Target } from './load/service.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '10000' },
    readers: { type: 'string', default: '1,2' },
    'cap-mib': { type: 'string', default: '64' },
    'string-bytes': { type: 'string', default: '1000' },
    hz: { type: 'string', default: '20' },
    workers: { type: 'string', default: '1' },
    'timeout-s': { type: 'string', default: '90' },
  },
});

const agents = Number(values.agents);
const readerCounts = values.readers.split(',').map(Number);
const capBytes = Number(values['cap-mib']) * 1024 * 1024;
const stringBytes = Number(values['string-bytes']);
const hz = Number(values.hz);
const workers = Number(values.workers);
const timeoutMs = Number(values['timeout-s']) * 1000;
for (const [name, v] of Object.entries({ agents, capBytes, stringBytes, hz, workers, timeoutMs })) {
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name}: expected a number`);
}

/** A guard that walks to a waypoint the game server chose: the waypoint string goes out in every action. */
const TREE = { blackboard: { waypoint: '' }, root: { type: 'action', action: 'goto', args: { waypoint: 'bb.waypoint' }, instant: true } };

function kib(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) * 1024;
}

async function goodbyes(target: Target): Promise<number> {
  const text = await (await fetch(`${target.httpUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^canopy_goodbyes_total\{reason="slow consumer"\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

/** One game server: a fixed-mode session with `agents` agents, each with its own long waypoint. */
async function openReader(target: Target, index: number): Promise<WebSocket> {
  const socket = new WebSocket(target.wsUrl);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const replies: Array<Record<string, unknown>> = [];
  let wake: (() => void) | undefined;
  socket.on('message', (data: Buffer) => {
    const msg = decode(data) as Record<string, unknown>;
    if (msg.t !== 'decisions') {
      replies.push(msg);
      wake?.();
    }
  });
  socket.on('error', () => undefined);
  const reply = async (t: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const i = replies.findIndex((r) => r.t === t);
      if (i >= 0) return replies.splice(i, 1)[0]!;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  socket.send(encode({ t: 'hello', v: 1, mode: 'fixed', hz }));
  await reply('welcome');
  const batch = 1000;
  for (let first = 0; first < agents; first += batch) {
    const list = [];
    for (let i = first; i < Math.min(agents, first + batch); i++) {
      // Distinct strings, as a game would send (no sharing between agents).
      list.push({ id: i, tree: 'guard', bb: { waypoint: `r${index}-a${i}-`.padEnd(stringBytes, 'x') } });
    }
    socket.send(encode({ t: 'spawn', agents: list }));
    const spawned = await reply('spawned');
    if (spawned.errors !== undefined) throw new Error(`spawn refused: ${JSON.stringify(spawned.errors).slice(0, 200)}`);
  }
  return socket;
}

async function run(readers: number): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'canopy-slow-reader-'));
  await mkdir(join(dir, 'trees'));
  await writeFile(join(dir, 'trees', 'guard.json'), JSON.stringify(TREE));
  const target = await startService({ workers, trees: join(dir, 'trees'), env: { CANOPY_MAX_OUTBOX_BYTES: String(capBytes) } });
  const pid = target.pid!;
  try {
    const sockets = [];
    for (let r = 0; r < readers; r++) sockets.push(await openReader(target, r));
    // Decisions flow to readers that keep up for a moment: the baseline.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const baseline = kib(pid, 'VmRSS');
    const before = kib(pid, 'VmHWM');
    for (const s of sockets) s.pause();
    const started = performance.now();
    let peakSampled = 0;
    let answered = 0;
    let probes = 0;
    let told = 0;
    while (performance.now() - started < timeoutMs) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      peakSampled = Math.max(peakSampled, kib(pid, 'VmRSS'));
      // The health route must keep answering while the readers lag.
      probes++;
      const ready = await fetch(`${target.httpUrl}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false);
      if (ready) answered++;
      told = await goodbyes(target);
      if (told >= readers) break;
    }
    const seconds = (performance.now() - started) / 1000;
    for (const s of sockets) s.terminate();
    const peak = Math.max(kib(pid, 'VmHWM'), peakSampled);
    // Growth over the highest RSS seen while every reader kept up (GC swings included there too).
    const growth = Math.max(0, peak - before);
    return [
      String(readers),
      mib(capBytes),
      mib(baseline),
      mib(before),
      mib(peak),
      mib(growth),
      `${((growth / capBytes) * 100).toFixed(0)} %`,
      `${told}/${readers} in ${seconds.toFixed(1)} s`,
      `${answered}/${probes}`,
    ];
  } finally {
    await target.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0);
}

const rows: string[][] = [['slow readers', 'cap MiB', 'RSS reading MiB', 'peak reading MiB', 'peak slow MiB', 'growth MiB', 'growth / cap', 'goodbyes', '/readyz 200']];
for (const readers of readerCounts) rows.push(await run(readers));
console.log(formatMachine(machineInfo()));
console.log(`${agents} agents per reader, ${stringBytes}-byte waypoint strings in every action, ${hz} Hz fixed mode, ${workers} worker(s)`);
console.log(formatTable(rows));
