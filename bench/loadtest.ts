// The load generator: how many agents, at what tick rate, on this hardware? Simulates K game servers
// with N agents each (client SDK, positional rows, a moving world), open-loop at H Hz, and reports what
// the service sustained. See docs/capacity.md.
//
//   npm run loadtest -- [--mode lockstep|fixed|both] [--agents 20000] [--sessions 4] [--hz 20] [--seconds 60]
//                       [--workers 1,2] [--find-capacity] [--url ws://host:port] [--watch 0,10] [--json FILE] ...   (--help)

import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Mode } from '../src/client/index.js';
import { findCapacity, type CapacityResult } from './load/capacity.js';
import { OptionsError, parseOptions, type LoadOptions } from './load/options.js';
import { capacityLine, capacityTable, failureLines, resultsTable } from './load/report.js';
import { lodRowsOf, runLoad, type RunResult, type RunSpec } from './load/run.js';
import { burstLines, runBurst, type BurstResult, type BurstSpec } from './load/burst.js';
import { existingService, startService, treesFolderFor, type Target } from './load/service.js';
import { formatLodMix } from './load/lod.js';
import { formatMachine, machineInfo } from './lib/machine.js';
import { partIndex } from '../src/record/index.js';
import { generatorGc, withGeneratorGc } from './lib/generator-gc.js';

let options: LoadOptions;
try {
  options = parseOptions(process.argv.slice(2));
} catch (err) {
  if (err instanceof OptionsError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(err.message.startsWith('usage:') ? 0 : 2);
  }
  throw err;
}

const o = options;
// Before anything runs: with --generator-gc single the generator starts itself again so (generator-gc.ts says why).
await withGeneratorGc(o.generatorGc);
const log = (line: string): void => void process.stderr.write(`${line}\n`);

// Every run is bounded: set-up, warm-up, window and drain, times the number of runs, then we give up.
const runSeconds = (seconds: number): number => o.warmup + seconds + 180;
const runsPlanned =
  (o.url === undefined ? o.workers.length : 1) * o.ids.length * (o.burst !== null ? o.burst.length * (1 + o.burstRepeat / 4) : o.modes.length * (o.findCapacity ? o.maxProbes : o.watch.length * (o.record === 'both' ? 2 : 1)));
const watchdog = setTimeout(() => {
  log(`loadtest: still running after ${runsPlanned} × ${runSeconds(o.findCapacity ? o.probeSeconds : o.seconds)} s; giving up`);
  process.exit(3);
}, runsPlanned * runSeconds(o.findCapacity ? o.probeSeconds : o.seconds) * 1000);
watchdog.unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const machine = machineInfo();
console.log('Canopy load test');
console.log(formatMachine(machine));
console.log(`generator: garbage collection ${generatorGc() === 'single' ? 'on its main thread (--single-threaded-gc)' : "with V8's helper threads"} (--generator-gc)`);
console.log(
  `target: ${o.url ?? `a service started per run on 127.0.0.1 (${o.workers.join(' and ')} worker${o.workers.length === 1 && o.workers[0] === 1 ? '' : 's'})`}; ` +
    `${o.sessions} game servers, ${o.agents} agents, ${o.hz} Hz, tree ${o.tree}${o.lod !== null ? `, level of detail ${formatLodMix(o.lod)} with rows ${o.lodRows ?? (o.modes.includes('fixed') ? 'due in lockstep, all in fixed' : 'due')}` : ''}, ${o.warmup} s warm-up + ${o.findCapacity ? `${o.probeSeconds} s per probe` : `${o.seconds} s`}`,
);

/** Recording figures of one run: bytes the service wrote for it. */
const recorded = new Map<RunResult, { bytes: number; files: number; ticks: number }>();

/** Bytes and files of the recordings of the last run with `--record` (read after its service stopped). */
let lastRecording: { bytes: number; files: number; ticks: number } | null = null;

/** Acquires a fresh target for one run (a new child service, or the given URL), runs, and releases it. */
async function withTarget<T>(
  workers: number,
  use: (target: Target) => Promise<T>,
  { record = o.record === 'on', profile = true }: { record?: boolean; profile?: boolean } = {},
): Promise<T> {
  const recordDir = record ? mkdtempSync(join(tmpdir(), 'canopy-loadtest-rec-')) : null;
  const target =
    o.url !== undefined
      ? await existingService(o.url, o.apiKey)
      : await startService({
          workers,
          trees: treesFolderFor(o.tree),
          ...(o.serviceNode !== undefined ? { node: o.serviceNode } : {}),
          nodeArgs: [...o.nodeArgs, ...(o.cpuProf !== undefined && profile ? ['--cpu-prof', '--cpu-prof-dir', o.cpuProf] : [])],
          env: {
            ...(recordDir !== null ? { CANOPY_RECORD: 'all', CANOPY_RECORD_DIR: recordDir, CANOPY_RECORD_MAX_TOTAL_BYTES: '0' } : {}),
            ...(o.redis !== null ? { CANOPY_REDIS_URL: o.redis } : {}),
          },
        });
  try {
    return await use(target);
  } finally {
    await target.stop();
    if (recordDir !== null) {
      const files = readdirSync(recordDir);
      // Ticks recorded, from each file's index (block headers only, nothing inflated).
      let ticks = 0;
      for (const f of files) {
        try {
          // Block headers only: a zstd recording of a newer Node's service is counted on any Node.
          const blocks = partIndex(join(recordDir, f)).filter((b) => !Number.isNaN(b.firstTick));
          if (blocks.length > 0) ticks += blocks.at(-1)!.lastTick - blocks[0]!.firstTick + 1;
        } catch {
          // a part cut off before its first bytes (the service stopped first): no ticks
        }
      }
      lastRecording = { bytes: files.reduce((n, f) => n + statSync(join(recordDir, f)).size, 0), files: files.length, ticks };
      rmSync(recordDir, { recursive: true, force: true });
    }
  }
}

function spec(mode: Mode, agents: number, seconds: number, failFast: boolean, watch = o.watch[0]!, ids = o.ids[0]!): RunSpec {
  return {
    ...(ids !== 'dense' || o.ids.length > 1 ? { ids } : {}),
    watch,
    mode,
    sessions: o.sessions,
    agents,
    hz: o.hz,
    seconds,
    warmup: o.warmup,
    tree: o.tree,
    seed: o.seed,
    stagger: o.stagger,
    budgetMs: o.budgetMs,
    ...(o.apiKey !== undefined ? { apiKey: o.apiKey } : {}),
    progressMs: o.progress * 1000,
    failFast,
    lod: o.lod,
    ...(o.lodRows !== undefined ? { lodRows: o.lodRows } : {}),
  };
}

const progress = { progress: (line: string) => log(line) };

if (o.burst !== null) {
  // Burst runs (bench/load/burst.ts): their own report, then the command ends.
  const bursts: BurstResult[] = [];
  const failedBursts: string[] = [];
  for (const workers of o.url === undefined ? o.workers : [null]) {
    for (const kind of o.burst) {
      for (const ids of o.ids) {
        log(`\n— burst ${kind}, ${workers ?? 'remote'} workers, ${ids} ids${workers === null && kind === 'start' ? ' (no rehearsal against a given service: the generator starts cold)' : ''}`);
        const burstSpec: BurstSpec = {
          kind,
          sessions: o.sessions,
          agents: o.agents,
          burstAgents: o.burstAgents,
          repeat: o.burstRepeat,
          hz: o.hz,
          warmup: o.warmup,
          seconds: o.seconds,
          tree: o.tree,
          seed: o.seed,
          ids,
          ...(o.apiKey !== undefined ? { apiKey: o.apiKey } : {}),
          progress: log,
        };
        // Only the cold start: a spawn burst comes after seconds of steady ticking, which warm the generator as well.
        const rehearse = o.rehearse && workers !== null && kind === 'start';
        if (rehearse) {
          // The generator's own code (world, rows, encoding the spawns, reading the decisions) is as cold as a new
          // service's the first time it runs: a rehearsal against a throwaway service first, so that the burst
          // measures the service's cold start and not the generator's compiler.
          const from = performance.now();
          const rehearsed = await withTarget(workers, (t) => runBurst({ ...burstSpec, warmup: 1, seconds: 1, progress: () => undefined }, t), { record: false, profile: false }).catch((err: unknown) =>
            err instanceof Error ? err.message : String(err),
          );
          log(`  rehearsed against a throwaway service in ${((performance.now() - from) / 1000).toFixed(1)} s${typeof rehearsed === 'string' ? ` (it failed: ${rehearsed})` : ''}`);
        }
        const r = await withTarget(workers ?? 0, (t) => runBurst(burstSpec, t).catch((err: unknown) => (err instanceof Error ? err.message : String(err))));
        if (typeof r === 'string') {
          failedBursts.push(`burst ${kind}, ids ${ids}: ${r}`);
          console.log(`burst ${kind}, ids ${ids}: failed: ${r}`);
          continue;
        }
        bursts.push({ ...r, workers, rehearsed: rehearse });
        for (const line of burstLines(r)) console.log(line);
      }
    }
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  if (o.json !== undefined) {
    const out = {
      machine: { cpu: machine.cpu, cores: machine.cores, v8: machine.v8, node: machine.node, platform: machine.platform, loadAverage: machine.load, loadAverageAtEnd: loadavg(), date: machine.date },
      generatorGc: generatorGc(),
      command: `npm run loadtest -- ${process.argv.slice(2).join(' ')}`,
      bursts,
      failed: failedBursts,
    };
    writeFileSync(o.json, `${JSON.stringify(out, null, 2)}\n`);
    log(`wrote ${o.json}`);
  }
  process.exit(failedBursts.length === 0 && bursts.every((b) => b.lost === 0 && b.errors === 0) ? 0 : 1);
}
const results: RunResult[] = [];
const searches: Array<{ workers: number | null; mode: Mode; search: CapacityResult<RunResult> }> = [];
const workerCounts: ReadonlyArray<number | null> = o.url === undefined ? o.workers : [null];

for (const workers of workerCounts) {
  for (const mode of o.modes) {
    if (!o.findCapacity) {
      for (const record of o.record === 'both' ? [false, true] : [o.record === 'on']) {
        for (const watch of o.watch) {
          for (const ids of o.ids) {
            log(`\n— ${mode}, ${workers ?? 'remote'} workers, ${o.agents} agents${o.lod !== null ? `, level of detail ${formatLodMix(o.lod)}, rows ${lodRowsOf({ mode, ...(o.lodRows !== undefined ? { lodRows: o.lodRows } : {}) })}` : ''}${record ? ', every session recorded' : ''}${watch > 0 ? `, ${watch} watched by inspector pages` : ''}${ids !== 'dense' ? `, ${ids} ids` : ''}`);
            lastRecording = null;
            const r = await withTarget(workers ?? 0, (t) => runLoad(spec(mode, o.agents, o.seconds, false, watch, ids), t, progress), { record });
            results.push(r);
            if (record && lastRecording !== null) recorded.set(r, lastRecording);
          }
        }
      }
      continue;
    }
    const step = o.sessions * 100;
    const search = await findCapacity(
      { start: o.agents, min: o.minAgents, max: o.maxAgents, step, resolution: o.resolution, maxProbes: o.maxProbes },
      async (agents) => {
        for (let attempt = 1; ; attempt++) {
          log(`\n— capacity probe: ${mode}, ${workers ?? 'remote'} workers, ${agents} agents${o.lod !== null ? `, level of detail ${formatLodMix(o.lod)}, rows ${lodRowsOf({ mode, ...(o.lodRows !== undefined ? { lodRows: o.lodRows } : {}) })}` : ''}`);
          const r = await withTarget(workers ?? 0, (t) => runLoad(spec(mode, agents, o.probeSeconds, true), t, progress));
          log(`  → ${r.ok ? 'ok' : `fail: ${r.failures.join('; ')}`}`);
          // A run that never got going (its sessions lost before anything was ticked) says nothing about
          // capacity: try once more with a fresh service before counting it as a failure.
          if (r.ok || attempt === 2 || r.achievedAgentTicksPerSec > 0 || r.errorDetail.lostSessions === 0) return { ok: r.ok, detail: r };
          log('  the run never got going: trying this probe again with a fresh service');
        }
      },
    );
    searches.push({ workers, mode, search });
    const atCapacity = search.probes.filter((p) => p.ok && p.agents === search.capacity).at(-1)?.detail;
    if (atCapacity !== undefined) results.push(atCapacity);
    log(`  ${mode}, ${workers ?? 'remote'} workers: ${capacityLine(search)}`);
  }
}

console.log();
for (const s of searches) {
  console.log(`capacity search — ${s.mode}, ${s.workers ?? 'remote'} workers, p99 budget ${o.budgetMs.toFixed(1)} ms, no missed ticks, no errors`);
  console.log(capacityTable(s.search));
  console.log(capacityLine(s.search));
  console.log();
}
if (results.length > 0) {
  console.log(o.findCapacity ? 'figures at capacity' : 'figures');
  console.log(resultsTable(results));
  for (const line of failureLines(results)) console.log(line);
}

/** Service CPU (cores) per achieved agent-tick/s: what capacity is made of. */
function cpuPerAgentTick(r: RunResult): number {
  return r.achievedAgentTicksPerSec > 0 ? r.server.cpuCores / r.achievedAgentTicksPerSec : Infinity;
}

// The cost of watching (--watch 0,N): service CPU per achieved agent-tick, each watched run against the first.
const watchCosts: Array<{ mode: Mode; workers: number | null; watched: number; cpuPerAgentTickRatio: number; inspectorMessages: number }> = [];
if (o.watch.length > 1) {
  console.log();
  for (const workers of workerCounts) {
    for (const mode of o.modes) {
      const runs = results.filter((r) => r.mode === mode && (o.url !== undefined || r.workers === workers) && !recorded.has(r));
      const base = runs[0];
      if (base === undefined) continue;
      for (const r of runs.slice(1)) {
        const ratio = cpuPerAgentTick(r) / cpuPerAgentTick(base);
        watchCosts.push({ mode, workers, watched: r.watched ?? 0, cpuPerAgentTickRatio: ratio, inspectorMessages: r.inspector?.messages ?? 0 });
        console.log(
          `watch cost, ${mode}, ${workers ?? 'remote'} workers: ${r.watched ?? 0} watched vs ${base.watched ?? 0} — service CPU per agent-tick ×${ratio.toFixed(3)} ` +
            `(${(100 * (ratio - 1)).toFixed(1)} % of capacity; ${base.server.cpuCores.toFixed(2)} → ${r.server.cpuCores.toFixed(2)} cores, ` +
            `${base.achievedAgentTicksPerSec} → ${r.achievedAgentTicksPerSec} agent-ticks/s; ${r.inspector?.messages ?? 0} inspector pushes)`,
        );
      }
    }
  }
}

// Recording: what it cost (A/B in the same process, same load) and how many bytes it wrote.
const recordingFigures: Array<Record<string, unknown>> = [];
for (const [r, rec] of recorded) {
  // Session ticks recorded (warm-up and window) × agents per session.
  const agentTicks = Math.max(1, rec.ticks * (r.agents / r.sessions));
  const perAgentTick = rec.bytes / agentTicks;
  const off = results.find((x) => x !== r && !recorded.has(x) && x.mode === r.mode && x.workers === r.workers);
  const fig: Record<string, unknown> = { mode: r.mode, workers: r.workers, bytes: rec.bytes, files: rec.files, bytesPerAgentTick: perAgentTick, mbPerSec: rec.bytes / (r.warmupSeconds + r.seconds) / 2 ** 20 };
  let line = `recording, ${r.mode}: ${(rec.bytes / 2 ** 20).toFixed(1)} MB in ${rec.files} files = ${perAgentTick.toFixed(2)} bytes per agent-tick (compressed), ${(fig.mbPerSec as number).toFixed(2)} MB/s`;
  if (off !== undefined) {
    // CPU per agent-tick achieved: the capacity cost at this load (the service is CPU-bound).
    const cpuOff = off.server.cpuCores / Math.max(1, off.achievedAgentTicksPerSec);
    const cpuOn = r.server.cpuCores / Math.max(1, r.achievedAgentTicksPerSec);
    fig.serverCpuCores = { off: off.server.cpuCores, on: r.server.cpuCores };
    fig.cpuCostRatio = cpuOn / cpuOff;
    fig.latencyP99Ms = { off: off.latencyMs.p99, on: r.latencyMs.p99 };
    line += `; service CPU per agent-tick off → on: ×${(cpuOn / cpuOff).toFixed(3)} (${off.server.cpuCores.toFixed(2)} → ${r.server.cpuCores.toFixed(2)} cores); p99 ${off.latencyMs.p99.toFixed(1)} → ${r.latencyMs.p99.toFixed(1)} ms; ok ${off.ok} → ${r.ok}`;
  }
  recordingFigures.push(fig);
  console.log(line);
}

// Worker scaling: the same mode with more than one worker count.
const scaling: Array<{ mode: Mode; from: number; to: number; ratio: number; basis: string; generatorCpuShare: number[] }> = [];
if (workerCounts.length > 1) {
  console.log();
  for (const mode of o.modes) {
    const byWorkers = workerCounts.map((w) => ({ w: w!, search: searches.find((s) => s.mode === mode && s.workers === w), run: results.find((r) => r.mode === mode && r.workers === w) }));
    const first = byWorkers[0]!;
    for (const other of byWorkers.slice(1)) {
      const basis = o.findCapacity ? 'capacity (agents within budget)' : 'achieved agent-ticks/s at the same offered load';
      const a = o.findCapacity ? (first.search?.search.capacity ?? 0) : (first.run?.achievedAgentTicksPerSec ?? 0);
      const b = o.findCapacity ? (other.search?.search.capacity ?? 0) : (other.run?.achievedAgentTicksPerSec ?? 0);
      const ratio = a > 0 ? b / a : 0;
      const shares = [first.run, other.run].map((r) => r?.generator.cpuShare ?? 0);
      scaling.push({ mode, from: first.w, to: other.w, ratio, basis, generatorCpuShare: shares });
      console.log(
        `worker scaling, ${mode}: ${other.w} workers / ${first.w} worker${first.w === 1 ? '' : 's'} = ${ratio.toFixed(2)}× ${basis} ` +
          `(${a} → ${b}); generator CPU share ${shares.map((s) => `${(100 * s).toFixed(0)} %`).join(' → ')} of the CPU used`,
      );
    }
  }
}

if (o.json !== undefined) {
  const primary = results[0];
  const out: Record<string, unknown> = {
    ...primary,
    machine: { cpu: machine.cpu, cores: machine.cores, v8: machine.v8, platform: machine.platform, loadAverage: machine.load, date: machine.date },
    generatorGc: generatorGc(),
    command: `npm run loadtest -- ${process.argv.slice(2).join(' ')}`,
    runs: results,
  };
  if (o.findCapacity) {
    const first = searches[0];
    out.capacityAgents = first?.search.capacity ?? 0;
    out.capacity = searches.map((s) => ({
      mode: s.mode,
      workers: s.workers,
      capacityAgents: s.search.capacity,
      atLeast: s.search.atLeast,
      failedAt: s.search.failedAt ?? null,
      probes: s.search.probes.map((p) => ({
        agents: p.agents,
        ok: p.ok,
        latencyP99Ms: p.detail.latencyMs.p99,
        missedTicks: p.detail.missedTicks,
        serverCpuCores: p.detail.server.cpuCores,
        generatorCpuCores: p.detail.generator.cpuCores,
        otherCpuCores: p.detail.otherCpuCores,
        failures: p.detail.failures,
      })),
    }));
  }
  if (scaling.length > 0) out.scaling = scaling;
  if (watchCosts.length > 0) out.watchCosts = watchCosts;
  if (recordingFigures.length > 0) out.recording = recordingFigures;
  writeFileSync(o.json, `${JSON.stringify(out, null, 2)}\n`);
  log(`wrote ${o.json}`);
}
process.exitCode = results.length > 0 && results.every((r) => r.ok) ? 0 : 1;
