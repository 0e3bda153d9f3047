// Idle WebSocket connections against the process's file limit: starts the built service with
// `ulimit -n` lowered (prlimit), opens more idle sockets than it allows (no hello), and checks that
// /healthz, /readyz and new HTTP sessions still answer. A/B in the same run: CANOPY_MAX_CONNECTIONS
// at its default against one above the file limit (the service before the cap).
//
//   npm run build && node dist/bench/idle-connections.js [--nofile 1024] [--sockets 1200]

import { execFileSync } from 'node:child_process';
import { WebSocket } from 'ws';
import { defaultConfig } from '../src/service/config.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { startService } from './load/service.js';
import { benchArgs, intArg } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    nofile: { type: 'string', default: '1024' },
    sockets: { type: 'string', default: '1200' },
  },
});
const nofile = intArg(values, 'nofile', 1);
const sockets = intArg(values, 'sockets', 1);

/** Opens one socket; resolves with the HTTP status of a refused upgrade, 101 when open, 0 on a network error. */
function open(url: string, keep: WebSocket[]): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const timer = setTimeout(() => {
      ws.terminate();
      resolve(0);
    }, 5000);
    ws.once('open', () => {
      clearTimeout(timer);
      keep.push(ws);
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('error', () => {
      clearTimeout(timer);
      resolve(0);
    });
  });
}

async function probe(url: string, method = 'GET', body?: string): Promise<string> {
  try {
    const init: RequestInit = { method, signal: AbortSignal.timeout(3000) };
    if (body !== undefined) init.body = body;
    if (body !== undefined) init.headers = { 'content-type': 'application/json' };
    const res = await fetch(url, init);
    return String(res.status);
  } catch {
    return 'no answer';
  }
}

async function run(maxConnections: number): Promise<string[]> {
  const target = await startService({
    workers: 1,
    env: { CANOPY_MAX_CONNECTIONS: String(maxConnections), CANOPY_HELLO_TIMEOUT_MS: '0' },
  });
  try {
    execFileSync('prlimit', ['--pid', String(target.pid), `--nofile=${nofile}:${nofile}`]);
    const keep: WebSocket[] = [];
    const counts = new Map<number, number>();
    for (let i = 0; i < sockets; i += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, sockets - i) }, () => open(target.wsUrl, keep)));
      for (const s of batch) counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    const health = await probe(`${target.httpUrl}/healthz`);
    const ready = await probe(`${target.httpUrl}/readyz`);
    const session = await probe(`${target.httpUrl}/v1/sessions`, 'POST', '{}');
    for (const ws of keep) ws.terminate();
    return [
      maxConnections >= 100_000 ? `${maxConnections} (no cap)` : String(maxConnections),
      String(counts.get(101) ?? 0),
      String(counts.get(503) ?? 0),
      String(counts.get(0) ?? 0),
      health,
      ready,
      session,
    ];
  } finally {
    await target.stop();
  }
}

const rows: string[][] = [['CANOPY_MAX_CONNECTIONS', 'open (101)', 'refused 503', 'failed', '/healthz', '/readyz', 'POST /v1/sessions']];
rows.push(await run(defaultConfig().maxConnections));
rows.push(await run(1_000_000));
console.log(formatMachine(machineInfo()));
console.log(`${sockets} idle WebSocket connections (no hello), service limited to ${nofile} open files`);
console.log(formatTable(rows));
