// Bursts (`--burst`): what spawning and despawning many agents at once does to everybody else's ticks.
//
// - `spawn` (noisy neighbour): `--sessions` game servers tick in lockstep; after a steady stretch a new game
//   server connects, spawns `--burst-agents` agents in one message and sends one tick right behind it (its
//   answer says every agent exists); after 2 s it ticks them for 2 s, stops, waits for its last ticks' answers
//   and half a second, despawns them in one message and leaves, `--burst-repeat` times. The other game servers' latency is reported for the steady stretch, the 2 s
//   after each spawn was sent and the 2 s after each despawn was sent (the newcomer's regular ticks fall outside
//   both: the windows hold the bursts, not the steady cost of 10,000 more agents).
// - `start` (cold start): a fresh service; `--sessions` game servers connect, then all spawn their agents at
//   once and tick from that instant on (their first snapshots queue behind their spawns). The latency of the
//   first 2 s is reported against the steady state after the warm-up.
//
// Latency is lockstep latency, from each snapshot's scheduled send to its decisions (as in run.ts).

import { GameServer } from './game.js';
import { LatencyHistogram, type LatencySummary } from './histogram.js';
import type { IdStyle } from './ids.js';
import { Schedule, phaseOffsets } from './schedule.js';
import { split } from './run.js';
import { readThreads, type Target } from './service.js';

export type BurstKind = 'spawn' | 'start';

export interface BurstSpec {
  readonly kind: BurstKind;
  /** Game servers ticking all along (spawn: the neighbours; start: the ones that start together). */
  readonly sessions: number;
  /** Their agents in all. */
  readonly agents: number;
  /** spawn: agents the newcomer spawns (one message) and despawns (one message). */
  readonly burstAgents: number;
  /** spawn: bursts in one run. */
  readonly repeat: number;
  readonly hz: number;
  /** spawn: seconds of steady ticking before the first burst; start: seconds before the steady window. */
  readonly warmup: number;
  /** Seconds of the steady window. */
  readonly seconds: number;
  readonly tree: string;
  readonly seed: number;
  readonly ids: IdStyle;
  readonly apiKey?: string;
  readonly progress?: (line: string) => void;
}

/** Latency of one phase, ms. */
export type PhaseLatency = LatencySummary;

export interface BurstResult {
  readonly kind: BurstKind;
  /** Worker threads of the service (null: a service given by URL); set by the caller. */
  readonly workers?: number | null;
  /**
   * `start`: whether the generator rehearsed the run first against a throwaway service (`--no-rehearse`, `--url`:
   * not), so that its own code was compiled: a cold generator is late with its first snapshots and competes for the
   * cores with the service it measures. Set by the caller (false for `spawn`: its steady stretch warms the generator).
   */
  readonly rehearsed?: boolean;
  readonly ids: IdStyle;
  readonly sessions: number;
  readonly agents: number;
  readonly burstAgents: number;
  readonly hz: number;
  /** The other game servers' latency in the steady window. */
  readonly steady: PhaseLatency;
  /** spawn: the 2 s after each spawn was sent; start: the first 2 s. */
  readonly burst: PhaseLatency;
  /** spawn: the 2 s after each despawn was sent; null for start. */
  readonly despawn: PhaseLatency | null;
  /** spawn: ms from sending the spawn to its reply, and to the newcomer's first tick answered (its agents all exist), per burst. */
  readonly spawnAckMs: number[];
  readonly firstTickMs: number[];
  /**
   * start: every tick due in the first 2 s, by due time: [ms from the spawns' send to its due time, latency (ms from
   * its due time), ms from its hand-off to its socket]. The first rounds of ticks, right behind the spawns, are what
   * the first 2 s p99 is made of (docs/capacity.md, *Round twenty-seven*).
   */
  readonly firstTicks: ReadonlyArray<readonly [number, number, number]>;
  /** spawn: ms from sending the despawn to its reply. */
  readonly despawnAckMs: number[];
  /**
   * How late the generator itself handed the other game servers' snapshots to their sockets (scheduled send →
   * sent: its timer, world step, rows and encoding), in the steady window and in the burst windows. Latency counts
   * from the scheduled send, so this much of `burst` is the generator's, not the service's.
   */
  readonly sendLate: { readonly steady: PhaseLatency; readonly burst: PhaseLatency };
  /**
   * The same ticks' latency counted from the generator's hand-off of each snapshot to its socket instead of its
   * scheduled send: the service's part, the generator's own lateness left out (`ratioP99FromSend`: burst p99 / steady p99).
   */
  readonly fromSend: { readonly steady: PhaseLatency; readonly burst: PhaseLatency };
  readonly ratioP99FromSend: number;
  /**
   * The service's CPU time by thread (/proc, Linux, a service the generator started; null otherwise), ms per
   * window: what the service itself did, whatever else the machine ran. `steady`: the steady window scaled to
   * 2 s; `burst`, `despawn`: the mean of the windows, with `excess` = that minus the steady rate over as long.
   * For `start` the burst window is everything before the steady window (`--warmup` s), not only the first 2 s.
   */
  readonly cpu: { readonly steady: CpuSpan; readonly burst: CpuSpan; readonly despawn: CpuSpan | null } | null;
  /** burst p99 − steady p99 (ms); and burst p99 / steady p99. */
  readonly delayP99Ms: number;
  readonly ratioP99: number;
  /** Lockstep ticks unanswered at the end, and error frames. */
  readonly lost: number;
  readonly errors: number;
  readonly sampleError: string | null;
}

/** Service CPU time in a window, ms by thread (main; worker threads together; the rest: GC and compiler helpers, libuv). */
export interface CpuSpan {
  /** The window's length as measured, ms. */
  readonly ms: number;
  readonly main: number;
  readonly workers: number;
  readonly other: number;
  /** Minor page faults in the window: the main thread, the worker threads together (ThreadCpu's `faults`). */
  readonly faults: { readonly main: number; readonly workers: number };
  /** burst and despawn windows: main and workers beyond the steady rate over as long. */
  readonly excess?: { readonly main: number; readonly workers: number };
}

interface CpuMark {
  readonly at: number;
  readonly main: number;
  readonly workers: number;
  readonly other: number;
  readonly faults: { readonly main: number; readonly workers: number };
}

/** The service's thread CPU now (ms), or null when it cannot be read. */
function cpuMark(target: Target): CpuMark | null {
  if (target.pid === undefined) return null;
  const t = readThreads(target.pid);
  if (t === undefined) return null;
  let workers = 0;
  for (const w of t.workers.values()) workers += w;
  return { at: performance.now(), main: t.main * 1000, workers: workers * 1000, other: t.other * 1000, faults: t.faults };
}

/** The mean span of `pairs` (null if any mark is missing). */
function cpuSpan(pairs: ReadonlyArray<readonly [CpuMark | null, CpuMark | null]>): CpuSpan | null {
  if (pairs.length === 0 || pairs.some(([a, b]) => a === null || b === null)) return null;
  const n = pairs.length;
  const sum = (of: (a: CpuMark, b: CpuMark) => number): number => pairs.reduce((acc, [a, b]) => acc + of(a!, b!), 0) / n;
  return {
    ms: sum((a, b) => b.at - a.at),
    main: sum((a, b) => b.main - a.main),
    workers: sum((a, b) => b.workers - a.workers),
    other: sum((a, b) => b.other - a.other),
    faults: { main: sum((a, b) => b.faults.main - a.faults.main), workers: sum((a, b) => b.faults.workers - a.faults.workers) },
  };
}

/** `span` with its excess over the steady rate. */
function withExcess(span: CpuSpan | null, steady: CpuSpan): CpuSpan | null {
  if (span === null || steady.ms <= 0) return span;
  const k = span.ms / steady.ms;
  return { ...span, excess: { main: span.main - steady.main * k, workers: span.workers - steady.workers * k } };
}

function cpuResult(steady: readonly [CpuMark | null, CpuMark | null], bursts: ReadonlyArray<readonly [CpuMark | null, CpuMark | null]>, despawns: ReadonlyArray<readonly [CpuMark | null, CpuMark | null]> | null): BurstResult['cpu'] {
  const s = cpuSpan([steady]);
  const b = cpuSpan(bursts);
  if (s === null || b === null) return null;
  // The steady window scaled to BURST_WINDOW_MS, so the figures read "per 2 s" side by side.
  const k = BURST_WINDOW_MS / s.ms;
  const steady2 = { ms: BURST_WINDOW_MS, main: s.main * k, workers: s.workers * k, other: s.other * k, faults: { main: s.faults.main * k, workers: s.faults.workers * k } };
  return { steady: round1(steady2), burst: round1(withExcess(b, steady2)!), despawn: despawns === null ? null : round1(withExcess(cpuSpan(despawns), steady2)) };
}

const tenth = (n: number): number => Math.round(n * 10) / 10;

function round1<T extends CpuSpan | null>(c: T): T {
  if (c === null) return c;
  const faults = { main: Math.round(c.faults.main), workers: Math.round(c.faults.workers) };
  return { ms: tenth(c.ms), main: tenth(c.main), workers: tenth(c.workers), other: tenth(c.other), faults, ...(c.excess !== undefined ? { excess: { main: tenth(c.excess.main), workers: tenth(c.excess.workers) } } : {}) } as T;
}

/** A phase: ticks scheduled in [from, to) go to `hist`, how late the generator sent them to `late`. */
interface Window {
  readonly from: number;
  readonly to: number;
  readonly hist: LatencyHistogram;
  readonly late?: LatencyHistogram;
  /** Latency from the hand-off to the socket (see BurstResult.fromSend). */
  readonly sent?: LatencyHistogram;
}

const BURST_WINDOW_MS = 2000;

export async function runBurst(spec: BurstSpec, target: Target): Promise<BurstResult> {
  const periodMs = 1000 / spec.hz;
  const log = spec.progress ?? (() => undefined);
  const sizes = split(spec.agents, spec.sessions);
  const game = (agents: number, k: number, spawnBatch?: number): GameServer =>
    new GameServer({
      url: target.wsUrl,
      ...(spec.apiKey !== undefined ? { apiKey: spec.apiKey } : {}),
      mode: 'lockstep',
      hz: spec.hz,
      agents,
      tree: spec.tree,
      seed: spec.seed + k,
      requestTimeoutMs: 30_000,
      ids: spec.ids,
      index: k,
      ...(spawnBatch !== undefined ? { spawnBatch } : {}),
    });
  const games = sizes.map((n, k) => game(n, k, spec.kind === 'start' ? n : undefined));
  const steady = new LatencyHistogram();
  const burst = new LatencyHistogram();
  const despawn = new LatencyHistogram();
  const steadyLate = new LatencyHistogram();
  const burstLate = new LatencyHistogram();
  const windows: Window[] = [];
  const steadySent = new LatencyHistogram();
  const burstSent = new LatencyHistogram();
  /** start: when the spawns were sent (-1 before), and the ticks due in the first 2 s after (BurstResult.firstTicks). */
  let startedAt = -1;
  const firstTicks: Array<[number, number, number]> = [];
  const record = (dueAt: number, ms: number, fromSend: number): void => {
    // The first-2-s window's own bounds (a tick due at 2,000 ms lies on one side of both, whatever the rounding).
    if (startedAt >= 0 && dueAt >= startedAt && dueAt < startedAt + BURST_WINDOW_MS) firstTicks.push([+(dueAt - startedAt).toFixed(1), +ms.toFixed(1), +fromSend.toFixed(1)]);
    for (const w of windows) {
      if (dueAt < w.from || dueAt >= w.to) continue;
      w.hist.record(ms);
      w.sent?.record(fromSend);
    }
  };
  const recordLate = (dueAt: number, ms: number): void => {
    for (const w of windows) if (dueAt >= w.from && dueAt < w.to) w.late?.record(ms);
  };
  for (const g of games) g.onLatency = record;

  // The pacer: every game server on its own schedule, one timer for all; game servers join and leave.
  const running: Array<{ g: GameServer; s: Schedule }> = [];
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const pace = (): void => {
    timer = undefined;
    if (stopped) return;
    const now = performance.now() + 0.5;
    const dt = 1 / spec.hz;
    for (const { g, s } of running)
      s.take(now, (n, dueAt) => {
        g.tick(n, dueAt, dt);
        if (g !== newcomer) recordLate(dueAt, performance.now() - dueAt);
      });
    let next = Infinity;
    for (const { s } of running) next = Math.min(next, s.nextDue());
    if (next !== Infinity) timer = setTimeout(pace, Math.max(0, Math.floor(next - performance.now() - 0.5)));
  };
  const join = (g: GameServer, origin: number, offsetMs: number, first = 1): void => {
    running.push({ g, s: new Schedule({ hz: spec.hz, origin: origin - (first - 1) * periodMs, offsetMs, maxBehindMs: 5000, first }) });
    if (timer !== undefined) clearTimeout(timer);
    pace();
  };
  const leave = (g: GameServer): void => {
    const i = running.findIndex((x) => x.g === g);
    if (i >= 0) running.splice(i, 1);
  };

  const spawnAckMs: number[] = [];
  const firstTickMs: number[] = [];
  const despawnAckMs: number[] = [];
  const extra: GameServer[] = [];
  /** spawn: the newcomer now ticking (its ticks are not the others'). */
  let newcomer: GameServer | null = null;
  /** The newcomers' errors, counted before they say bye (which ends their sessions). */
  let extraErrors = 0;
  /** The service's thread CPU at the start and end of the steady window and of each burst and despawn window. */
  let cpuSteady: readonly [CpuMark | null, CpuMark | null] = [null, null];
  const cpuBursts: Array<readonly [CpuMark | null, CpuMark | null]> = [];
  const cpuDespawns: Array<readonly [CpuMark | null, CpuMark | null]> = [];
  try {
    await Promise.all(games.map((g) => g.connect()));
    const offsets = phaseOffsets(games.length, periodMs, true);
    if (spec.kind === 'start') {
      // All at once: spawns go out now, and every game server ticks from now on. The spawn messages' agent lists
      // are built before that instant: a game server has its spawn ready when it sends it.
      for (const g of games) g.prepareSpawn();
      const cpuAtOrigin = cpuMark(target);
      const origin = performance.now();
      startedAt = origin;
      windows.push({ from: origin, to: origin + BURST_WINDOW_MS, hist: burst, late: burstLate, sent: burstSent });
      const steadyFrom = origin + spec.warmup * 1000;
      windows.push({ from: steadyFrom, to: steadyFrom + spec.seconds * 1000, hist: steady, late: steadyLate, sent: steadySent });
      const spawned = Promise.all(games.map((g) => g.spawn()));
      games.forEach((g, k) => join(g, origin, offsets[k]!));
      await spawned;
      log(`  all ${spec.agents} agents spawned after ${(performance.now() - origin).toFixed(0)} ms`);
      await sleepUntil(steadyFrom);
      const cpuAtSteady = cpuMark(target);
      // The whole stretch before the steady window: by then every late tick is answered, so beyond the steady
      // rate is the burst's own cost (the first 2 s alone would count less work when the service falls behind).
      cpuBursts.push([cpuAtOrigin, cpuAtSteady]);
      await sleepUntil(steadyFrom + spec.seconds * 1000);
      cpuSteady = [cpuAtSteady, cpuMark(target)];
      await sleepUntil(steadyFrom + spec.seconds * 1000 + periodMs);
    } else {
      await Promise.all(games.map((g) => g.spawn()));
      const origin = performance.now() + 50;
      games.forEach((g, k) => join(g, origin, offsets[k]!));
      const steadyFrom = origin + spec.warmup * 1000;
      const steadyTo = steadyFrom + spec.seconds * 1000;
      windows.push({ from: steadyFrom, to: steadyTo, hist: steady, late: steadyLate, sent: steadySent });
      await sleepUntil(steadyFrom);
      const cpuAtSteady = cpuMark(target);
      await sleepUntil(steadyTo);
      cpuSteady = [cpuAtSteady, cpuMark(target)];
      for (let k = 0; k < spec.repeat; k++) {
        const b = game(spec.burstAgents, spec.sessions + k, spec.burstAgents);
        extra.push(b);
        await b.connect();
        await sleep(200); // the connection's own cost is not the spawn's
        b.prepareSpawn();
        const cpuAtSpawn = cpuMark(target);
        const sent = performance.now();
        windows.push({ from: sent, to: sent + BURST_WINDOW_MS, hist: burst, late: burstLate, sent: burstSent });
        let first = -1;
        b.onLatency = () => {
          if (first < 0) first = performance.now() - sent;
        };
        await b.spawn();
        spawnAckMs.push(performance.now() - sent);
        // One tick at once (it queues behind the spawn on the service's workers: its answer says the agents all
        // exist); its regular ticks start after the window, so the window holds the spawn, not 10,000 more agents
        // ticking at 20 Hz. Then it ticks for 2 s, stops, and despawns everything in one message.
        b.tick(1, performance.now(), 1 / spec.hz);
        await sleepUntil(sent + BURST_WINDOW_MS);
        cpuBursts.push([cpuAtSpawn, cpuMark(target)]);
        newcomer = b;
        join(b, performance.now(), 0, 2);
        await sleep(2000);
        leave(b);
        newcomer = null;
        // Its last ticks answered, and a moment for the others to settle: the despawn window is the despawn's.
        const settleBy = performance.now() + 10_000;
        while (b.outstanding > 0 && performance.now() < settleBy) await sleep(10);
        await sleep(500);
        firstTickMs.push(first);
        const cpuAtDespawn = cpuMark(target);
        const dsent = performance.now();
        windows.push({ from: dsent, to: dsent + BURST_WINDOW_MS, hist: despawn, late: burstLate });
        await b.despawnAll();
        despawnAckMs.push(performance.now() - dsent);
        await sleepUntil(dsent + BURST_WINDOW_MS);
        cpuDespawns.push([cpuAtDespawn, cpuMark(target)]);
        extraErrors += b.counters.serviceErrors + b.counters.agentErrors + (b.failure !== undefined ? 1 : 0);
        await b.close();
        log(
          `  burst ${k + 1}/${spec.repeat}: spawn of ${spec.burstAgents} answered in ${spawnAckMs.at(-1)!.toFixed(1)} ms, first tick after ${first.toFixed(0)} ms; ` +
            `despawn answered in ${despawnAckMs.at(-1)!.toFixed(1)} ms`,
        );
        await sleep(1000);
      }
    }
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    // Ticks still in flight: a little time to answer, then recorded with their age (a lower bound).
    const drainUntil = performance.now() + 5000;
    while (games.some((g) => g.outstanding > 0) && performance.now() < drainUntil) await sleep(10);
    let lost = 0;
    const now = performance.now();
    for (const g of games) {
      for (const dueAt of g.unansweredDue()) {
        record(dueAt, now - dueAt, now - dueAt); // its hand-off is not kept: counted from its scheduled send, the longer
        lost++;
      }
    }
    const errors = extraErrors + games.reduce((a, g) => a + g.counters.serviceErrors + g.counters.agentErrors, 0) + games.filter((g) => g.failure !== undefined).length;
    const s = steady.summary();
    const b = burst.summary();
    return {
      kind: spec.kind,
      ids: spec.ids,
      sessions: spec.sessions,
      agents: spec.agents,
      burstAgents: spec.kind === 'spawn' ? spec.burstAgents : 0,
      hz: spec.hz,
      steady: round(s),
      burst: round(b),
      despawn: spec.kind === 'spawn' ? round(despawn.summary()) : null,
      spawnAckMs: spawnAckMs.map((x) => +x.toFixed(1)),
      firstTickMs: firstTickMs.map((x) => +x.toFixed(1)),
      firstTicks: firstTicks.toSorted((x, y) => x[0] - y[0]),
      despawnAckMs: despawnAckMs.map((x) => +x.toFixed(1)),
      sendLate: { steady: round(steadyLate.summary()), burst: round(burstLate.summary()) },
      fromSend: { steady: round(steadySent.summary()), burst: round(burstSent.summary()) },
      ratioP99FromSend: ratio(burstSent.summary().p99, steadySent.summary().p99),
      cpu: cpuResult(cpuSteady, cpuBursts, spec.kind === 'spawn' ? cpuDespawns : null),
      delayP99Ms: +(b.p99 - s.p99).toFixed(3),
      ratioP99: ratio(b.p99, s.p99),
      lost,
      errors,
      sampleError: games.map((g) => g.failure ?? g.sampleError).find((e) => e !== undefined) ?? null,
    };
  } finally {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    await Promise.all([...games, ...extra].map((g) => g.close()));
  }
}

/** The slowest latency of the ticks due in each of the first `rounds` periods after the spawns (the rounds of ticks behind them). */
function firstRounds(ticks: BurstResult['firstTicks'], periodMs: number, rounds: number): string {
  const slowest: number[] = [];
  for (let k = 0; k < rounds; k++) {
    const inRound = ticks.filter(([due]) => due >= k * periodMs && due < (k + 1) * periodMs).map(([, ms]) => ms);
    slowest.push(inRound.length === 0 ? Number.NaN : Math.max(...inRound));
  }
  return slowest.map((x) => (Number.isNaN(x) ? '–' : x.toFixed(0))).join(', ');
}

/** a / b, 0 when b is 0. */
function ratio(a: number, b: number): number {
  return b > 0 ? +(a / b).toFixed(3) : 0;
}

function f(p: PhaseLatency): string {
  return `p50 ${p.p50.toFixed(1)} / p99 ${p.p99.toFixed(1)} / max ${p.max.toFixed(1)} ms (${p.count} ticks)`;
}

/** One line per result, for the report. */
export function burstLines(res: BurstResult): string[] {
  const head =
    res.kind === 'spawn'
      ? `burst spawn, ids ${res.ids}: ${res.sessions} game servers with ${res.agents} agents tick while a newcomer spawns and despawns ${res.burstAgents} (${res.spawnAckMs.length}×)`
      : `burst start, ids ${res.ids}: ${res.sessions} game servers spawn ${res.agents} agents at once and tick at once`;
  const lines = [head, `  steady:              ${f(res.steady)}`, `  ${res.kind === 'spawn' ? 'spawn (2 s after): ' : 'first 2 s:         '} ${f(res.burst)}`];
  if (res.despawn !== null) lines.push(`  despawn (2 s after): ${f(res.despawn)}`);
  lines.push(
    res.kind === 'spawn'
      ? `  other game servers delayed by p99 +${res.delayP99Ms.toFixed(1)} ms (×${res.ratioP99.toFixed(2)}); spawn answered in ${res.spawnAckMs.join(', ')} ms; ` +
          `newcomer's first tick after ${res.firstTickMs.join(', ')} ms; despawn answered in ${res.despawnAckMs.join(', ')} ms`
      : `  first 2 s p99 / steady p99 = ×${res.ratioP99.toFixed(2)}`,
  );
  if (res.kind === 'start' && res.firstTicks.length > 0) lines.push(`  slowest tick due in each of the first periods (${(1000 / res.hz).toFixed(0)} ms) after the spawns: ${firstRounds(res.firstTicks, 1000 / res.hz, 6)} ms`);
  lines.push(
    `  the generator sent them late by p99 ${res.sendLate.steady.p99.toFixed(1)} / max ${res.sendLate.steady.max.toFixed(1)} ms steady, ` +
      `p99 ${res.sendLate.burst.p99.toFixed(1)} / max ${res.sendLate.burst.max.toFixed(1)} ms in the ${res.kind === 'spawn' ? 'spawn and despawn windows' : 'first 2 s'} (counted in their latency)`,
  );
  const fs = res.fromSend;
  lines.push(
    `  from each snapshot's hand-off to its socket (the generator's lateness left out): steady p99 ${fs.steady.p99.toFixed(1)} ms, ` +
      (res.kind === 'spawn'
        ? `spawn windows p99 ${fs.burst.p99.toFixed(1)} ms (+${(fs.burst.p99 - fs.steady.p99).toFixed(1)})`
        : `first 2 s p99 ${fs.burst.p99.toFixed(1)} ms (×${res.ratioP99FromSend.toFixed(2)})`),
  );
  if (res.cpu !== null) {
    const c = res.cpu;
    const one = (name: string, x: CpuSpan): string =>
      `${name} main ${x.main.toFixed(0)}${x.excess !== undefined ? ` (${sign(x.excess.main)})` : ''} / workers ${x.workers.toFixed(0)}${x.excess !== undefined ? ` (${sign(x.excess.workers)})` : ''}`;
    lines.push(
      `  the service's CPU, thread time in ms (beyond the steady rate): ${one('steady per 2 s', c.steady)}; ` +
        `${one(res.kind === 'spawn' ? 'spawn (2 s)' : `first ${(c.burst.ms / 1000).toFixed(1)} s`, c.burst)}${c.despawn !== null ? `; ${one('despawn (2 s)', c.despawn)}` : ''}`,
    );
    const faults = (name: string, x: CpuSpan): string => `${name} main ${x.faults.main} / workers ${x.faults.workers}`;
    lines.push(
      `  the service's page faults (minor): ${faults('steady per 2 s', c.steady)}; ` +
        `${faults(res.kind === 'spawn' ? 'spawn (2 s)' : `first ${(c.burst.ms / 1000).toFixed(1)} s`, c.burst)}${c.despawn !== null ? `; ${faults('despawn (2 s)', c.despawn)}` : ''}`,
    );
  }
  if (res.lost > 0 || res.errors > 0) lines.push(`  ${res.lost} ticks unanswered, ${res.errors} errors${res.sampleError === null ? '' : `: ${res.sampleError}`}`);
  return lines;
}

function sign(n: number): string {
  return `${n >= 0 ? '+' : '−'}${Math.abs(n).toFixed(0)}`;
}

function r(n: number): number {
  return Math.round(n * 1000) / 1000;
}

function round(s: LatencySummary): LatencySummary {
  return { count: s.count, mean: r(s.mean), p50: r(s.p50), p90: r(s.p90), p99: r(s.p99), p999: r(s.p999), max: r(s.max) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function sleepUntil(at: number): Promise<void> {
  return sleep(Math.max(0, at - performance.now()));
}
