// Does POST /v1/trees/validate disturb ticking sessions? A fixed-mode session with thousands of agents
// ticks at 20 Hz on a real service (child process, loopback) while the largest allowed validate bodies
// (JSON, YAML, error-heavy) arrive back to back; tick lateness during each phase vs a quiet phase.
//
//   npm run build && node dist/bench/validate-impact.js [--agents 3000] [--seconds 6] [--concurrency 2] [--workers 1]
//                                                       [--max-bytes 1048576] [--node-args=--single-threaded-gc]
//
// CPU by thread: on Node 20 worker threads are not named, so they count in "other" with V8's GC helpers.
// Two views of lateness: the service's own (canopy_tick_lateness_seconds, how late each tick started;
// bucketed) and the client's (the gap between consecutive `decisions` frames minus the 50 ms period,
// which also catches a main thread too busy to send). Target: ≤ 10 ms more than the quiet phase.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CanopyClient } from '../src/client/index.js';
import { formatMachine, formatTable, machineInfo } from './lib/machine.js';
import { buckets, delta, fetchMetrics, type Scrape } from './load/prom.js';
import { startService } from './load/service.js';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs(import.meta.url, {
  options: {
    agents: { type: 'string', default: '3000' },
    seconds: { type: 'string', default: '6' },
    concurrency: { type: 'string', default: '2' },
    workers: { type: 'string', default: '1' },
    'max-bytes': { type: 'string', default: String(1024 * 1024) },
    // Flags for the service's node, e.g. --node-args=--single-threaded-gc (V8's GC helper threads run at
    // normal priority even for the low-priority validation thread).
    'node-args': { type: 'string', default: '' },
  },
});
const agents = Number(values.agents);
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const workers = Number(values.workers);
const maxBytes = Number(values['max-bytes']);
const HZ = 20;
const PERIOD_MS = 1000 / HZ;

// The session's trees: `busy` does a little work every tick; `pulse` issues an instant action every
// tick, so a `decisions` frame goes out each tick and the client can time them.
const TREES = {
  busy: {
    blackboard: { n: 0 },
    root: {
      type: 'sequence',
      children: [
        { type: 'set', values: { n: 'bb.n + 1' } },
        { type: 'condition', expr: 'bb.n % 7 != 3 && (self == null || self.hp == null || self.hp > 0)' },
        { type: 'wait', seconds: 0.1 },
      ],
    },
  },
  pulse: { root: { type: 'action', action: 'pulse', instant: true } },
};

/** A tree as close to `limit` bytes as its serializer gets, built from copies of `child`. */
function bodyOfSize(limit: number, child: unknown, serialize: (tree: unknown) => string): string {
  let n = 64;
  let best = serialize({ root: { type: 'sequence', children: [child] } });
  for (;;) {
    const text = serialize({ blackboard: { hp: 0, target: null }, root: { type: 'sequence', children: Array.from({ length: n }, () => child) } });
    if (Buffer.byteLength(text) > limit) break;
    best = text;
    n = Math.ceil(n * 1.25);
  }
  return best;
}

const validChild = { type: 'condition', expr: 'bb.hp > 3 && dist(self, world.base) < 10', if: 'bb.target != null', name: 'check' };
const brokenChild = { type: 'wiat', seconds: -1, chidren: 1, if: 'bb.taget >', expr: 'nearst(self)' };
const json = (t: unknown): string => JSON.stringify(t);
// No anchors: a designer's file repeats nodes, and the service refuses more than 100 aliases.
const yaml = (t: unknown): string => stringify(t, { aliasDuplicateObjects: false });
const BODIES = [
  { name: 'JSON, valid', type: 'application/json', text: bodyOfSize(maxBytes - 1024, validChild, json) },
  { name: 'YAML, valid', type: 'text/yaml', text: bodyOfSize(maxBytes - 1024, validChild, yaml) },
  { name: 'JSON, error-heavy', type: 'application/json', text: bodyOfSize(maxBytes - 1024, brokenChild, json) },
];

interface Phase {
  name: string;
  /** Gaps between consecutive decisions frames, ms. */
  gaps: number[];
  scrape: Scrape;
  validations: number;
  validateMs: number[];
  statuses: Map<number, number>;
  /** CPU seconds per second of the phase: main thread, worker threads, the rest (GC helpers, libuv). */
  cpu: { main: number; workers: number; other: number } | null;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'canopy-validate-impact-'));
  for (const [name, def] of Object.entries(TREES)) await writeFile(join(dir, `${name}.json`), JSON.stringify(def));
  const nodeArgs = values['node-args'].split(' ').filter((a) => a !== '');
  const service = await startService({ workers, trees: dir, nodeArgs, env: { CANOPY_MAX_VALIDATE_BYTES: String(maxBytes) } });
  const client = await CanopyClient.connect(service.wsUrl, { mode: 'fixed', hz: HZ, reconnect: false });
  try {
    const spawned = await client.spawn([
      { id: 'pulse', tree: 'pulse' },
      ...Array.from({ length: agents }, (_, i) => ({ id: i, tree: 'busy' })),
    ]);
    if (spawned.errors.length > 0) throw new Error(`spawn failed: ${JSON.stringify(spawned.errors[0])}`);
    let last = 0;
    let gaps: number[] = [];
    client.on('decisions', () => {
      const now = performance.now();
      if (last !== 0) gaps.push(now - last);
      last = now;
    });
    // Warm-up: let the session settle (JIT, first ticks).
    await sleep(2000);

    const phases: Phase[] = [];
    const run = async (name: string, body: (typeof BODIES)[number] | null): Promise<void> => {
      const before = await fetchMetrics(`${service.httpUrl}/metrics`);
      const cpuBefore = await service.sample();
      gaps = [];
      last = 0;
      const validateMs: number[] = [];
      const statuses = new Map<number, number>();
      let validations = 0;
      const until = performance.now() + seconds * 1000;
      const fire = async (): Promise<void> => {
        if (body === null) return;
        while (performance.now() < until) {
          const t0 = performance.now();
          const res = await fetch(`${service.httpUrl}/v1/trees/validate`, { method: 'POST', headers: { 'content-type': body.type }, body: body.text });
          await res.arrayBuffer();
          validateMs.push(performance.now() - t0);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          validations++;
        }
      };
      await Promise.all([sleep(seconds * 1000), ...Array.from({ length: body === null ? 0 : concurrency }, fire)]);
      const after = await fetchMetrics(`${service.httpUrl}/metrics`);
      const cpuAfter = await service.sample();
      const span = (cpuAfter.at - cpuBefore.at) / 1000;
      const a = cpuAfter.threads;
      const b = cpuBefore.threads;
      const workersCpu = (t: typeof a): number => [...(t?.workers.values() ?? [])].reduce((x, y) => x + y, 0);
      const cpu = a === undefined || b === undefined ? null : { main: (a.main - b.main) / span, workers: (workersCpu(a) - workersCpu(b)) / span, other: (a.other - b.other) / span };
      phases.push({ name, gaps, scrape: delta(before, after), validations, validateMs, statuses, cpu });
    };

    await run('quiet (no validation)', null);
    for (const body of BODIES) await run(`${body.name}, ${(Buffer.byteLength(body.text) / 1024).toFixed(0)} KiB`, body);
    await run('quiet again', null);

    console.log(formatMachine(machineInfo()));
    console.log(`service: node ${nodeArgs.join(' ') || '(no flags)'}, ${workers} worker thread(s), ${agents} agents + 1 pulse agent at ${HZ} Hz, CANOPY_MAX_VALIDATE_BYTES ${maxBytes}; ${concurrency} validate request(s) in flight; ${seconds} s per phase`);
    console.log('The machine is shared with other work: compare phases of this run, not absolute figures across runs.\n');
    const quiet = phases[0]!;
    const rows: string[][] = [['phase', 'validations', 'validate ms p50', 'ticks', 'ticks > 10 ms late', 'lateness p99 ≤', 'frame gap max', 'gap − 50 ms, max', 'vs quiet', 'CPU main/workers/other']];
    for (const p of phases) {
      const late = buckets(p.scrape, 'canopy_tick_lateness_seconds');
      const ticks = late.at(-1)?.count ?? 0;
      const within10 = late.find((b) => b.le >= 0.01)?.count ?? 0;
      const p99 = late.find((b) => b.count >= 0.99 * ticks)?.le ?? Number.NaN;
      const maxGap = Math.max(0, ...p.gaps);
      const over = maxGap - PERIOD_MS;
      const quietOver = Math.max(0, ...quiet.gaps) - PERIOD_MS;
      rows.push([
        p.name,
        `${p.validations}${p.statuses.size > 0 ? ` (${[...p.statuses].map(([s, n]) => `${n}×${s}`).join(', ')})` : ''}`,
        p.validateMs.length === 0 ? '—' : median(p.validateMs).toFixed(0),
        String(ticks),
        String(ticks - within10),
        Number.isFinite(p99) ? `${(p99 * 1000).toFixed(1)} ms` : '—',
        `${maxGap.toFixed(1)} ms`,
        `${over.toFixed(1)} ms`,
        p === quiet ? '—' : `${over - quietOver >= 0 ? '+' : ''}${(over - quietOver).toFixed(1)} ms`,
        p.cpu === null ? '—' : `${pct(p.cpu.main)}/${pct(p.cpu.workers)}/${pct(p.cpu.other)}`,
      ]);
    }
    console.log(formatTable(rows));
  } finally {
    await client.close();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function pct(x: number): string {
  return `${(x * 100).toFixed(0)}%`;
}

function median(xs: number[]): number {
  const s = xs.toSorted((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

await main();
