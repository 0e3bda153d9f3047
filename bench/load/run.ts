// One load run: K game servers connect to the target, spawn their agents, then send snapshots open-loop
// on their schedules through a warm-up and a measured window; the run ends with the figures of the
// window, from the generator's own histograms and counters, the service's /metrics and its process.

import { InspectorPages, watchPlan } from './inspect.js';
import { machineInfo } from '../lib/machine.js';
import type { Mode } from '../../src/client/index.js';
import { referenceWorkMs } from './calibrate.js';
import { GameServer } from './game.js';
import type { IdStyle } from './ids.js';
import { formatLodMix, tickFraction, type LodMix, type LodRows } from './lod.js';
import { mergeHistograms, type LatencySummary } from './histogram.js';
import { buckets, byLabel, delta, fractionAtMost, maxBound, quantile, fetchMetrics, sum, type Scrape } from './prom.js';
import { Schedule, phaseOffsets } from './schedule.js';
import { machineBusySeconds, type ProcessSample, type Target } from './service.js';

/** What to run. */
export interface RunSpec {
  readonly mode: Mode;
  /** Game servers (sessions). */
  readonly sessions: number;
  /** Agents in all, split evenly over the sessions. */
  readonly agents: number;
  readonly hz: number;
  /** Length of the measured window, seconds. */
  readonly seconds: number;
  /** Warm-up before it (JIT, first encounters), seconds. */
  readonly warmup: number;
  readonly tree: string;
  readonly seed: number;
  /** Spread the game servers' sends over the period (default) rather than sending all at once. */
  readonly stagger: boolean;
  /** Budget the verdict checks: lockstep latency p99, fixed tick lateness p99 (ms). */
  readonly budgetMs: number;
  readonly apiKey?: string;
  /** Progress line period (ms); 0 for none. */
  readonly progressMs: number;
  /** Stop early once the run cannot pass (missed ticks, a backlog): for capacity probes. */
  readonly failFast: boolean;
  /** Agents watched by inspector pages (bench/load/inspect.ts) from the warm-up on; 0 or absent: none. */
  readonly watch?: number;
  /** Agent id style (bench/load/ids.ts); absent: dense. */
  readonly ids?: IdStyle;
  /** Level of detail (`--lod`): tick intervals given at spawn; absent or null: every agent ticks every tick. */
  readonly lod?: LodMix | null;
  /**
   * With `lod`: `due`, a game sends an agent's row only on the session ticks the service ticks it (lockstep only);
   * `all`, every agent's row every tick. Default: `due` in lockstep, `all` in fixed mode.
   */
  readonly lodRows?: LodRows;
}

/** Percentiles in ms (`max` of a Prometheus histogram is the upper bound of its highest non-empty bucket). */
export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** Everything a run measured; also the JSON written by `--json`. */
export interface RunResult {
  readonly node: string;
  readonly mode: Mode;
  readonly workers: number | null;
  readonly sessions: number;
  readonly agents: number;
  readonly hz: number;
  /** Measured window, seconds (as run: shorter when the run stopped early). */
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly tree: string;
  readonly target: string;
  /** Time of a fixed piece of work just before the run (bench/load/calibrate.ts): the machine's speed then; lower is faster. */
  readonly referenceWorkMs: number;
  readonly offeredAgentTicksPerSec: number;
  readonly achievedAgentTicksPerSec: number;
  /** `decisions` frames per second expected (one per snapshot in lockstep, one per service tick in fixed) and received. */
  readonly offeredDecisionsPerSec: number;
  readonly achievedDecisionsPerSec: number;
  readonly actionsPerSec: number;
  readonly cancelsPerSec: number;
  readonly donePerSec: number;
  readonly resultsPerSec: number;
  /**
   * Lockstep: scheduled snapshot send → its decisions received (client HDR histogram).
   * Fixed: the service's tick lateness, actual tick start − scheduled (its Prometheus histogram).
   */
  readonly latencyMs: Percentiles & { readonly source: string };
  /** Lockstep latency in full (null in fixed mode). */
  readonly lockstepLatencyMs: LatencySummary | null;
  /**
   * Lockstep: the same from each snapshot's hand-off to the socket, the generator's lateness in starting its ticks left
   * out (null in fixed mode). The verdict stays on `latencyMs`, which counts it.
   */
  readonly fromSendMs: LatencySummary | null;
  /** Fixed: the service's tick lateness, and the share of ticks starting within 10 ms. */
  readonly tickLatenessMs: (Percentiles & { readonly within10ms: number }) | null;
  /** Fixed: time between consecutive decisions frames at the client (ideal: one period). */
  readonly decisionSpacingMs: LatencySummary | null;
  /** Fixed: decisions received − scheduled send of the snapshot they were based on. */
  readonly stalenessMs: LatencySummary | null;
  readonly missedTicks: number;
  /**
   * Lockstep: the window's snapshots by how the service read their rows (canopy_lockstep_snapshots_total): applied and
   * ticked in one message to the worker holding the session, staged on the workers, read on the main thread.
   */
  readonly snapshotPaths: { readonly oneMessage: number; readonly staged: number; readonly mainThread: number } | null;
  /** Fixed: the window's snapshots by how the service read their rows (canopy_fixed_snapshots_total): by a worker, on the main thread. */
  readonly fixedSnapshotPaths: { readonly worker: number; readonly mainThread: number } | null;
  /** Service time to tick every agent of one session once (workers included): mean and bucket p99. */
  readonly tickDurationMs: { readonly mean: number; readonly p99: number };
  /**
   * Each tick order's round trip to a worker by part, bucket p99s (canopy_worker_tick_seconds): waiting for the
   * worker, on it, waiting for the main thread to read the reply. Null: no worker threads, or a service without it.
   */
  readonly workerTickP99Ms: { readonly waiting: number; readonly working: number; readonly returning: number } | null;
  readonly server: {
    readonly cpuCores: number;
    readonly rssMB: number;
    readonly peakRssMB: number;
    /** CPU by thread (cores), when the service runs on this machine: main thread, each worker, the rest (GC, JIT). */
    /** CPU by thread, and minor page faults a second of the main thread and of the workers together. */
    readonly threads: { readonly mainCores: number; readonly workerCores: number[]; readonly otherCores: number; readonly mainFaultsPerSec: number; readonly workerFaultsPerSec: number } | null;
    /** Service CPU per agent-tick achieved, µs (every thread: cpuCores / achieved agent-ticks per second). */
    readonly cpuUsPerAgentTick: number;
    /**
     * The main thread's share of the service's CPU (null without thread figures), and the speed-up Amdahl's law
     * allows it on 16 cores: 1 / (s + (1 − s) / 16). The main thread is the service's serial part.
     */
    readonly mainShare: number | null;
    readonly amdahl16: number | null;
  };
  /** CPU (cores) other programs used during the window (machine busy − service − generator); null off Linux. */
  readonly otherCpuCores: number | null;
  readonly generator: {
    readonly cpuCores: number;
    readonly rssMB: number;
    /** Generator CPU / (generator + service CPU). */
    readonly cpuShare: number;
    /** How late the generator started its ticks against their schedule. */
    readonly sendLagMs: LatencySummary;
    /** The generator's work per game tick: world step, rows, encoding and sending the snapshot. */
    readonly tickWorkMs: LatencySummary;
    /** Ticks the generator skipped because it was over a second behind. */
    readonly skippedTicks: number;
  };
  readonly bytesPerSec: { readonly toService: number; readonly fromService: number };
  /** Errors in all: error frames, agent errors, lost lockstep ticks, lost sessions. */
  readonly errors: number;
  readonly errorDetail: {
    readonly service: number;
    readonly agent: number;
    readonly lostTicks: number;
    readonly lostSessions: number;
    readonly byCode: Record<string, number>;
    readonly sample: string | null;
  };
  readonly budgetMs: number;
  /** True when the run held the budget: latency p99 within it, no missed ticks, no errors, everything answered. */
  readonly ok: boolean;
  /** Why not, when not ok. */
  readonly failures: string[];
  /** Set when the run stopped early (failFast, a lost session). */
  readonly stoppedEarly: string | null;
  /** Agents watched by inspector pages, and what the pages received (`--watch`). */
  readonly watched?: number;
  /** Level of detail (`--lod`): the mix, and the agent-ticks per session tick as a fraction of the agents. */
  lod?: {
    mix: string;
    tickFraction: number;
    /** `due`: rows only on an agent's ticks; `all`: every agent's row every tick. */
    rows: LodRows;
    /** Rows sent per snapshot, as a fraction of the agents (measured window). */
    rowFraction: number;
  };
  readonly inspector?: { readonly messages: number; readonly bytes: number };
  /** Agent id style (`--ids`). */
  readonly ids?: IdStyle;
}

/** Hooks for the caller: progress lines. */
export interface RunHooks {
  progress?(line: string): void;
}

const SPAWN_TIMEOUT_MS = 120_000;

/** Splits `agents` over `sessions` as evenly as possible. */
export function split(agents: number, sessions: number): number[] {
  return Array.from({ length: sessions }, (_, k) => Math.floor(agents / sessions) + (k < agents % sessions ? 1 : 0));
}

/** Runs one load test against `target`. Rejects only when the sessions cannot be opened. */
export async function runLoad(spec: RunSpec, target: Target, hooks: RunHooks = {}): Promise<RunResult> {
  const reference = referenceWorkMs();
  const periodMs = 1000 / spec.hz;
  const sizes = split(spec.agents, spec.sessions);
  const games = sizes.map(
    (n, k) =>
      new GameServer({
        url: target.wsUrl,
        ...(spec.apiKey !== undefined ? { apiKey: spec.apiKey } : {}),
        mode: spec.mode,
        hz: spec.hz,
        agents: n,
        tree: spec.tree,
        seed: spec.seed + k,
        requestTimeoutMs: 10_000,
        ...(spec.ids !== undefined ? { ids: spec.ids, index: k } : {}),
        ...(spec.lod !== undefined && spec.lod !== null ? { lod: spec.lod, lodRows: lodRowsOf(spec) } : {}),
      }),
  );
  const metricsUrl = `${target.httpUrl}/metrics`;
  const headers: Record<string, string> = spec.apiKey === undefined ? {} : { authorization: `Bearer ${spec.apiKey}` };
  let pages: InspectorPages | null = null;
  try {
    // Fixed-mode sessions tick on the service's clock from the moment they connect: connecting the game
    // servers spread over one period (as real ones would be) keeps their ticks from all landing at once.
    const connectGap = spec.mode === 'fixed' && spec.stagger ? periodMs / spec.sessions : 0;
    await withTimeout(
      (async () => {
        await Promise.all(games.map((g, k) => sleep(k * connectGap).then(() => g.connect())));
        await Promise.all(games.map((g) => g.spawn()));
      })(),
      SPAWN_TIMEOUT_MS,
      'opening the sessions and spawning the agents',
    );
    if ((spec.watch ?? 0) > 0) {
      pages = await InspectorPages.open(target.httpUrl, spec.apiKey, watchPlan(games.map((g) => g.client.session), sizes, spec.watch!));
    }

    const origin = performance.now() + 50;
    const windowFrom = origin + spec.warmup * 1000;
    const windowTo = windowFrom + spec.seconds * 1000;
    const offsets = phaseOffsets(games.length, periodMs, spec.stagger);
    // More than 1 s behind and the generator skips ticks rather than bursting: the run is then invalid.
    const schedules = offsets.map((offsetMs) => new Schedule({ hz: spec.hz, origin, offsetMs, maxBehindMs: 1000 }));
    for (const s of schedules) s.end = s.tickAt(windowTo);
    for (const g of games) g.startWindow(windowFrom, windowTo);
    const dt = 1 / spec.hz;

    let start: Sample | undefined;
    let end: Sample | undefined;
    let stoppedEarly: string | null = null;
    let peakRss = 0;

    // The pacer: one timer for every game server, set to the next tick due.
    let timer: NodeJS.Timeout | undefined;
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const stop = (why: string | null): void => {
      if (why !== null) stoppedEarly ??= why;
      for (const s of schedules) s.end = Math.min(s.end, s.next);
    };
    const pace = (): void => {
      timer = undefined;
      // Sends up to half a millisecond early rather than sleeping again: timers are ms-grained.
      const now = performance.now() + 0.5;
      for (let k = 0; k < games.length; k++) {
        const g = games[k]!;
        schedules[k]!.take(now, (n, dueAt) => g.tick(n, dueAt, dt));
      }
      let next = Infinity;
      for (const s of schedules) next = Math.min(next, s.nextDue());
      if (next === Infinity) {
        finished();
        return;
      }
      timer = setTimeout(pace, Math.max(0, Math.floor(next - performance.now() - 0.5)));
    };

    // Samples at the window's edges, and progress lines in between.
    const sampleNow = async (): Promise<Sample> => {
      const [metrics, proc] = await Promise.all([fetchMetrics(metricsUrl, headers), target.sample()]);
      peakRss = Math.max(peakRss, proc.rssBytes);
      return { metrics, proc, cpu: process.cpuUsage(), machine: machineBusySeconds(), at: performance.now() };
    };
    let startTimer: NodeJS.Timeout | undefined;
    let skipStart!: () => void;
    const startSampled = new Promise<void>((resolve) => {
      skipStart = resolve;
      startTimer = setTimeout(() => void sampleNow().then((s) => (start = s), () => undefined).finally(resolve), Math.max(0, windowFrom - performance.now()));
    });
    let progress: Progress | undefined;
    if (spec.progressMs > 0 || spec.failFast) {
      progress = new Progress(spec, games, schedules, target, metricsUrl, headers, origin, windowFrom, windowTo, hooks, (why) => stop(why));
      // Without progress lines, a probe still watches for missed ticks, every 3 s (a scrape costs the service a few ms).
      progress.begin(spec.progressMs > 0 ? spec.progressMs : 3000);
    }
    const watch = setInterval(() => {
      for (const g of games) if (g.failure !== undefined) stop(g.failure);
    }, 100);
    watch.unref();

    pace();
    await done;
    clearInterval(watch);
    const stoppedAt = performance.now();
    if (stoppedAt < windowFrom) {
      // Stopped during the warm-up: there is no window to sample.
      clearTimeout(startTimer);
      skipStart();
    }
    await startSampled;
    end = await sampleNow().catch(() => undefined);
    // Lockstep ticks still in flight: wait for them a little (at least 2 s, or 4 budgets).
    const drainUntil = performance.now() + Math.max(2000, 4 * spec.budgetMs);
    while (games.some((g) => g.outstanding > 0) && performance.now() < drainUntil) await sleep(10);
    const settledAt = performance.now();
    for (const g of games) g.settleOutstanding(settledAt);
    progress?.end();
    if (timer !== undefined) clearTimeout(timer);
    const windowEnd = stoppedEarly === null ? windowTo : Math.min(windowTo, stoppedAt);
    const result = summarize(spec, target, games, schedules, start, end, windowFrom, windowEnd, peakRss, stoppedEarly, reference);
    const diagnosis = target.diagnose();
    if (diagnosis !== undefined && !result.ok) result.failures.push(diagnosis);
    if (spec.lod !== undefined && spec.lod !== null) {
      const rows = games.reduce((n, g) => n + g.counters.rows, 0);
      const offered = games.reduce((n, g) => n + g.counters.snapshots * g.options.agents, 0);
      result.lod = { mix: formatLodMix(spec.lod), tickFraction: tickFraction(spec.lod), rows: lodRowsOf(spec), rowFraction: offered === 0 ? 0 : rows / offered };
    }
    const tagged = spec.ids === undefined ? result : { ...result, ids: spec.ids };
    return pages === null ? tagged : { ...tagged, watched: spec.watch ?? 0, inspector: { messages: pages.messages, bytes: pages.bytes } };
  } finally {
    pages?.close();
    await Promise.all(games.map((g) => g.close()));
  }
}

interface Sample {
  readonly metrics: Scrape;
  readonly proc: ProcessSample;
  readonly cpu: NodeJS.CpuUsage;
  /** Busy CPU seconds of the whole machine. */
  readonly machine: number;
  readonly at: number;
}

function summarize(
  spec: RunSpec,
  target: Target,
  games: readonly GameServer[],
  schedules: readonly Schedule[],
  start: Sample | undefined,
  end: Sample | undefined,
  windowFrom: number,
  windowTo: number,
  peakRss: number,
  stoppedEarly: string | null,
  reference: number,
): RunResult {
  const seconds = Math.max(1e-3, (windowTo - windowFrom) / 1000);
  const failures: string[] = [];
  const total = (pick: (g: GameServer) => number): number => games.reduce((a, g) => a + pick(g), 0);
  const m = start !== undefined && end !== undefined ? delta(start.metrics, end.metrics) : undefined;
  const sampleSeconds = start !== undefined && end !== undefined ? (end.at - start.at) / 1000 : seconds;
  if (m === undefined) failures.push('could not read /metrics at both edges of the window');

  const mode = spec.mode;
  const agentsPerSession = spec.agents / spec.sessions;
  const serviceTicks = m === undefined ? 0 : sum(m, 'canopy_ticks_total', { mode });
  const answered = total((g) => g.counters.answered);
  const achievedAgentTicks =
    mode === 'lockstep' ? games.reduce((a, g) => a + g.counters.answered * g.options.agents, 0) / seconds : (serviceTicks * agentsPerSession) / sampleSeconds;
  const frames = total((g) => g.counters.frames);
  const missedTicks = m === undefined ? 0 : sum(m, 'canopy_missed_ticks_total');

  const latency = mergeHistograms(games.map((g) => g.latency)).summary();
  const lateness = m === undefined ? [] : buckets(m, 'canopy_tick_lateness_seconds');
  const tickLatenessMs =
    mode === 'fixed'
      ? {
          p50: 1000 * orZero(quantile(0.5, lateness)),
          p99: 1000 * orZero(quantile(0.99, lateness)),
          p999: 1000 * orZero(quantile(0.999, lateness)),
          max: 1000 * maxBound(lateness),
          within10ms: orZero(fractionAtMost(0.01, lateness)),
        }
      : null;
  const latencyMs =
    mode === 'lockstep'
      ? { p50: latency.p50, p99: latency.p99, p999: latency.p999, max: latency.max, source: 'client: scheduled snapshot send → its decisions received (HDR)' }
      : { ...tickLatenessMs!, source: 'service: tick start − scheduled tick (canopy_tick_lateness_seconds buckets, interpolated)' };

  const duration = m === undefined ? [] : buckets(m, 'canopy_tick_duration_seconds', { mode });
  const durationCount = m === undefined ? 0 : sum(m, 'canopy_tick_duration_seconds_count', { mode });
  const durationSum = m === undefined ? 0 : sum(m, 'canopy_tick_duration_seconds_sum', { mode });

  const serverCpu = start !== undefined && end !== undefined ? (end.proc.cpuSeconds - start.proc.cpuSeconds) / ((end.proc.at - start.proc.at) / 1000) : 0;
  const genCpu = start !== undefined && end !== undefined ? (end.cpu.user - start.cpu.user + end.cpu.system - start.cpu.system) / 1e6 / ((end.at - start.at) / 1000) : 0;
  const machineCpu = start !== undefined && end !== undefined ? (end.machine - start.machine) / ((end.at - start.at) / 1000) : Number.NaN;
  // Other programs on the machine (other benchmarks, builds): they skew every figure, so the report says how much.
  const otherCpu = Number.isNaN(machineCpu) ? null : round(Math.max(0, machineCpu - serverCpu - genCpu), 3);

  const serviceErrors = total((g) => g.counters.serviceErrors);
  const agentErrors = total((g) => g.counters.agentErrors);
  const lostTicks = total((g) => g.counters.lost);
  const lostSessions = games.filter((g) => g.failure !== undefined).length;
  const errors = serviceErrors + agentErrors + lostTicks + lostSessions;
  const skipped = schedules.reduce((a, s) => a + s.skipped, 0);
  const sendLag = mergeHistograms(games.map((g) => g.sendLag)).summary();
  const offeredSnapshots = spec.sessions * spec.hz * seconds;
  const offeredAgentTicks = spec.agents * spec.hz;

  // The verdict.
  if (stoppedEarly !== null) failures.push(`stopped early: ${stoppedEarly}`);
  if (latencyMs.p99 > spec.budgetMs) failures.push(`${mode === 'lockstep' ? 'latency' : 'tick lateness'} p99 ${latencyMs.p99.toFixed(1)} ms > budget ${spec.budgetMs} ms`);
  if (missedTicks > 0) failures.push(`${missedTicks} missed ticks`);
  if (errors > 0) failures.push(`${errors} errors`);
  if (skipped > 0) failures.push(`the generator fell over 1 s behind and skipped ${skipped} ticks`);
  if (achievedAgentTicks < 0.98 * offeredAgentTicks) failures.push(`achieved ${fmtRate(achievedAgentTicks)} agent-ticks/s of ${fmtRate(offeredAgentTicks)} offered`);
  if (mode === 'lockstep' && answered < 0.98 * offeredSnapshots) failures.push(`${answered} of ${Math.round(offeredSnapshots)} snapshots answered`);

  const byCode = m === undefined ? {} : byLabel(m, 'canopy_errors_total', 'code');
  for (const k of Object.keys(byCode)) if (byCode[k] === 0) delete byCode[k];
  return {
    node: machineInfo().node,
    mode,
    workers: target.workers ?? null,
    sessions: spec.sessions,
    agents: spec.agents,
    hz: spec.hz,
    seconds: round(seconds, 3),
    warmupSeconds: spec.warmup,
    tree: spec.tree,
    target: target.pid !== undefined ? `child process ${target.httpUrl}` : target.httpUrl,
    referenceWorkMs: reference,
    offeredAgentTicksPerSec: offeredAgentTicks,
    achievedAgentTicksPerSec: Math.round(achievedAgentTicks),
    offeredDecisionsPerSec: spec.sessions * spec.hz,
    achievedDecisionsPerSec: round(frames / seconds, 2),
    actionsPerSec: Math.round(total((g) => g.counters.actions) / seconds),
    cancelsPerSec: Math.round(total((g) => g.counters.cancels) / seconds),
    donePerSec: Math.round(total((g) => g.counters.done) / seconds),
    resultsPerSec: Math.round(total((g) => g.counters.results) / seconds),
    latencyMs: { p50: round(latencyMs.p50, 3), p99: round(latencyMs.p99, 3), p999: round(latencyMs.p999, 3), max: round(latencyMs.max, 3), source: latencyMs.source },
    lockstepLatencyMs: mode === 'lockstep' ? roundSummary(latency) : null,
    fromSendMs: mode === 'lockstep' ? roundSummary(mergeHistograms(games.map((g) => g.fromSend)).summary()) : null,
    tickLatenessMs: tickLatenessMs === null ? null : { p50: round(tickLatenessMs.p50, 3), p99: round(tickLatenessMs.p99, 3), p999: round(tickLatenessMs.p999, 3), max: tickLatenessMs.max, within10ms: round(tickLatenessMs.within10ms, 5) },
    decisionSpacingMs: mode === 'fixed' ? roundSummary(mergeHistograms(games.map((g) => g.spacing)).summary()) : null,
    stalenessMs: mode === 'fixed' ? roundSummary(mergeHistograms(games.map((g) => g.staleness)).summary()) : null,
    missedTicks,
    snapshotPaths: mode === 'lockstep' && m !== undefined ? snapshotPaths(m) : null,
    fixedSnapshotPaths: mode === 'fixed' && m !== undefined ? fixedSnapshotPaths(m) : null,
    tickDurationMs: { mean: round(durationCount > 0 ? (1000 * durationSum) / durationCount : 0, 3), p99: round(1000 * orZero(quantile(0.99, duration)), 3) },
    workerTickP99Ms: m === undefined ? null : workerTickP99(m),
    server: {
      cpuCores: round(serverCpu, 3),
      rssMB: round((end?.proc.rssBytes ?? 0) / 2 ** 20, 1),
      peakRssMB: round(peakRss / 2 ** 20, 1),
      ...serialPart(serverCpu, achievedAgentTicks, start !== undefined && end !== undefined ? threadCores(start.proc, end.proc) : null),
    },
    otherCpuCores: target.pid === undefined ? null : otherCpu,
    generator: {
      cpuCores: round(genCpu, 3),
      rssMB: round(process.memoryUsage().rss / 2 ** 20, 1),
      cpuShare: round(genCpu + serverCpu > 0 ? genCpu / (genCpu + serverCpu) : 0, 3),
      sendLagMs: roundSummary(sendLag),
      tickWorkMs: roundSummary(mergeHistograms(games.map((g) => g.work)).summary()),
      skippedTicks: skipped,
    },
    bytesPerSec: {
      toService: Math.round((m === undefined ? 0 : sum(m, 'canopy_bytes_received_total', { transport: 'ws' })) / sampleSeconds),
      fromService: Math.round((m === undefined ? 0 : sum(m, 'canopy_bytes_sent_total', { transport: 'ws' })) / sampleSeconds),
    },
    errors,
    errorDetail: {
      service: serviceErrors,
      agent: agentErrors,
      lostTicks,
      lostSessions,
      byCode,
      sample: games.map((g) => g.failure ?? g.sampleError).find((e) => e !== undefined) ?? null,
    },
    budgetMs: spec.budgetMs,
    ok: failures.length === 0,
    failures,
    stoppedEarly,
  };
}

/** How the service read the window's lockstep snapshots (a service before the metric existed: all zero). */
function snapshotPaths(m: Scrape): NonNullable<RunResult['snapshotPaths']> {
  const paths = byLabel(m, 'canopy_lockstep_snapshots_total', 'path');
  return { oneMessage: paths['one_message'] ?? 0, staged: paths['staged'] ?? 0, mainThread: paths['main_thread'] ?? 0 };
}

/** The p99 of each part of the window's tick orders to workers (canopy_worker_tick_seconds), or null where none were counted. */
function workerTickP99(m: Scrape): RunResult['workerTickP99Ms'] {
  if (sum(m, 'canopy_worker_tick_seconds_count', { part: 'working' }) === 0) return null;
  const p99 = (part: string): number => round(1000 * orZero(quantile(0.99, buckets(m, 'canopy_worker_tick_seconds', { part }))), 3);
  return { waiting: p99('waiting'), working: p99('working'), returning: p99('returning') };
}

/** How the service read the window's fixed-mode snapshots (a service before the metric existed: all zero). */
function fixedSnapshotPaths(m: Scrape): NonNullable<RunResult['fixedSnapshotPaths']> {
  const paths = byLabel(m, 'canopy_fixed_snapshots_total', 'path');
  return { worker: paths['worker'] ?? 0, mainThread: paths['main_thread'] ?? 0 };
}

/** The service's threads, its CPU per agent-tick, and its main thread's share with the Amdahl bound on 16 cores. */
function serialPart(
  cores: number,
  agentTicksPerSec: number,
  threads: RunResult['server']['threads'],
): Pick<RunResult['server'], 'threads' | 'cpuUsPerAgentTick' | 'mainShare' | 'amdahl16'> {
  const share = threads === null || cores <= 0 ? null : Math.min(1, threads.mainCores / cores);
  return {
    threads,
    cpuUsPerAgentTick: round(agentTicksPerSec > 0 ? (cores * 1e6) / agentTicksPerSec : 0, 4),
    mainShare: share === null ? null : round(share, 4),
    amdahl16: share === null ? null : round(1 / (share + (1 - share) / 16), 2),
  };
}

/** CPU (cores) of each thread between two samples; null when either has no thread figures. */
function threadCores(a: ProcessSample, b: ProcessSample): RunResult['server']['threads'] {
  if (a.threads === undefined || b.threads === undefined) return null;
  const secs = (b.at - a.at) / 1000;
  const workerCores: number[] = [];
  for (const [tid, cpu] of b.threads.workers) workerCores.push(round((cpu - (a.threads.workers.get(tid) ?? 0)) / secs, 3));
  return {
    mainCores: round((b.threads.main - a.threads.main) / secs, 3),
    workerCores,
    otherCores: round((b.threads.other - a.threads.other) / secs, 3),
    mainFaultsPerSec: Math.round((b.threads.faults.main - a.threads.faults.main) / secs),
    workerFaultsPerSec: Math.round((b.threads.faults.workers - a.threads.faults.workers) / secs),
  };
}

/** The live progress line, and the early stop of capacity probes. */
class Progress {
  private timer: NodeJS.Timeout | undefined;
  private last: { at: number; sent: number; frames: number; cpu: NodeJS.CpuUsage; proc: ProcessSample | undefined } | undefined;
  private baseline: Scrape | undefined;
  private busy = false;

  constructor(
    private readonly spec: RunSpec,
    private readonly games: readonly GameServer[],
    private readonly schedules: readonly Schedule[],
    private readonly target: Target,
    private readonly metricsUrl: string,
    private readonly headers: Record<string, string>,
    private readonly origin: number,
    private readonly windowFrom: number,
    private readonly windowTo: number,
    private readonly hooks: RunHooks,
    private readonly stop: (why: string) => void,
  ) {}

  begin(everyMs: number): void {
    this.timer = setInterval(() => {
      if (this.busy) return;
      this.busy = true;
      void this.tick().finally(() => (this.busy = false));
    }, everyMs);
  }

  end(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    const now = performance.now();
    const spec = this.spec;
    const sent = this.schedules.reduce((a, s) => a + s.next - 1, 0);
    const frames = this.games.reduce((a, g) => a + g.framesSeen, 0);
    const cpu = process.cpuUsage();
    let metrics: Scrape | undefined;
    let proc: ProcessSample | undefined;
    try {
      [metrics, proc] = await Promise.all([fetchMetrics(this.metricsUrl, this.headers), this.target.sample()]);
    } catch {
      // the service is busy or gone: the line says so below
    }
    const measuring = now >= this.windowFrom;
    if (measuring && this.baseline === undefined && metrics !== undefined) this.baseline = metrics;
    const missed = metrics !== undefined && this.baseline !== undefined ? sum(metrics, 'canopy_missed_ticks_total') - sum(this.baseline, 'canopy_missed_ticks_total') : 0;
    const outstanding = this.games.reduce((a, g) => a + g.outstanding, 0);
    const recent = mergeHistograms(this.games.map((g) => g.recent));
    for (const g of this.games) g.recent.reset();
    const errors = this.games.reduce((a, g) => a + g.counters.serviceErrors + g.counters.agentErrors + g.counters.lost, 0);
    const last = this.last;
    this.last = { at: now, sent, frames, cpu, proc };
    if (spec.failFast && measuring) {
      if (missed > 0) this.stop('a tick was missed');
      // A backlog of more than two seconds of lockstep ticks never drains within a probe.
      if (spec.mode === 'lockstep' && outstanding > Math.max(20, 2 * spec.hz * spec.sessions)) this.stop(`${outstanding} lockstep ticks unanswered: the service is saturated`);
    }
    if (last === undefined || spec.progressMs === 0) return;
    const secs = (now - last.at) / 1000;
    const agentsPerSnapshot = spec.agents / spec.sessions;
    const srvCpu = proc !== undefined && last.proc !== undefined ? (proc.cpuSeconds - last.proc.cpuSeconds) / ((proc.at - last.proc.at) / 1000) : NaN;
    const genCpu = (cpu.user - last.cpu.user + cpu.system - last.cpu.system) / 1e6 / secs;
    const phase = now < this.windowFrom ? 'warm-up' : now < this.windowTo ? 'measure' : 'drain';
    const label = spec.mode === 'lockstep' ? 'p99' : 'stale p99';
    this.hooks.progress?.(
      `[${((now - this.origin) / 1000).toFixed(0).padStart(4)} s ${phase.padEnd(7)}] ` +
      [
        `${spec.mode} ${spec.agents} agents @ ${spec.hz} Hz`,
        `sent ${fmtRate(((sent - last.sent) * agentsPerSnapshot) / secs)}/${fmtRate(spec.agents * spec.hz)} agent-ticks/s`,
        `decisions ${((frames - last.frames) / secs).toFixed(0)}/s`,
        `${label} ${recent.count === 0 ? '-' : recent.percentile(99).toFixed(1)} ms`,
        spec.mode === 'lockstep' ? `in flight ${outstanding}` : `missed ${missed}`,
        `service ${Number.isNaN(srvCpu) ? '-' : srvCpu.toFixed(2)} cores ${proc === undefined ? '-' : (proc.rssBytes / 2 ** 20).toFixed(0)} MB`,
        `generator ${genCpu.toFixed(2)} cores`,
        `errors ${errors}`,
      ].join(' | '),
    );
  }
}

function roundSummary(s: LatencySummary): LatencySummary {
  return { count: s.count, mean: round(s.mean, 3), p50: round(s.p50, 3), p90: round(s.p90, 3), p99: round(s.p99, 3), p999: round(s.p999, 3), max: round(s.max, 3) };
}

function round(n: number, digits: number): number {
  const k = 10 ** digits;
  return Math.round(n * k) / k;
}

function orZero(n: number): number {
  return Number.isNaN(n) ? 0 : n;
}

/** 412k, 1.2M. */
export function fmtRate(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(0)}k`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return n.toFixed(0);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took over ${ms / 1000} s`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The rows a run's games send with level of detail: as asked, else `due` in lockstep and `all` in fixed mode. */
export function lodRowsOf(spec: Pick<RunSpec, 'mode' | 'lodRows'>): LodRows {
  return spec.lodRows ?? (spec.mode === 'lockstep' ? 'due' : 'all');
}
