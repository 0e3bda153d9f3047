// Prometheus metrics of one service instance (its own registry, so several servers can live in one
// process, as in tests) and the fastify plugin serving them at GET /metrics.

import type { FastifyPluginAsync } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RecoveryStats } from './pool/recovery.js';
import type { TickParts } from './pool/types.js';

/** Where the point-in-time gauges read their values when scraped. */
export interface MetricsSources {
  sessions(): ReadonlyArray<{ readonly mode: string; readonly transport: string; readonly connected: boolean }>;
  agents(): number;
  workers(): ReadonlyArray<{ readonly worker: number; readonly agents: number; readonly elu: number; readonly lastTickMs: number }>;
  /** Crash recovery's figures (recovery.ts); null without worker threads (all zeros with recovery turned off). */
  recovery(): RecoveryStats | null;
  /** The shared frame buffers handed out so far (pool/frames.ts): taken from the free list, or new memory. */
  frameBuffers(): { readonly reused: number; readonly allocated: number };
  /** CPU seconds and minor page faults by thread role (pool/thread-cpu.ts); undefined where the OS cannot say. */
  threads(): ReadonlyArray<{ readonly thread: string; readonly cpuSeconds: number; readonly minorFaults: number }> | undefined;
}

/** Every metric the service updates; names are documented in docs/configuration.md. */
export class Metrics {
  readonly registry = new Registry();
  readonly ticks: FastCounter<'mode'>;
  readonly tickDuration: FastHistogram<'mode'>;
  /** canopy_worker_tick_seconds: each tick order's round trip to a worker, in its parts. */
  readonly workerTicks: FastHistogram<'part'>;
  /** The pool's reporting of those parts (WorkerPool.tickParts). */
  readonly workerTickParts: TickParts;
  readonly tickLateness: FastHistogram;
  readonly missedTicks: Counter;
  readonly decisionsFrames: FastCounter<'mode'>;
  readonly heldDecisions: Counter;
  readonly actions: FastCounter;
  readonly cancels: FastCounter;
  readonly bytesIn: FastCounter<'transport'>;
  readonly bytesOut: FastCounter<'transport'>;
  readonly errors: Counter<'code'>;
  readonly unknownRows: Counter;
  /** Lockstep snapshots by how their rows were read, with pre-bound children (one increment a frame). */
  readonly snapshotPaths: FastCounter<'path'>;
  readonly snapshotPath: Readonly<Record<SnapshotPath, Tally>>;
  readonly fixedSnapshotPaths: FastCounter<'path'>;
  readonly fixedSnapshotPath: Readonly<Record<FixedSnapshotPath, Tally>>;
  readonly goodbyes: Counter<'reason'>;
  readonly recordingBytes: Counter;
  readonly recordingFailures: Counter;
  readonly recordingsStarted: Counter;
  readonly workerRecoveries: Counter;
  readonly durableDegraded: Gauge;
  readonly durableDegradations: Counter;
  readonly durableBytes: Counter<'kind'>;
  readonly durableCheckpoints: Counter;
  readonly durableAdoptions: Counter<'how'>;
  /** canopy_frame_buffers_total, read from `sources` at scrape time. */
  readonly frameBuffers: Counter<'outcome'>;
  /** canopy_thread_cpu_seconds_total and canopy_thread_minor_page_faults_total, read from `sources` at scrape time. */
  readonly threadCounters: ReadonlyArray<Counter<'thread'>>;
  /** Point-in-time gauges, read from `sources` at scrape time. */
  readonly gauges: Gauge[] = [];

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.gauges.push(new Gauge({
      name: 'canopy_sessions',
      help: 'Open sessions, by mode, transport and whether a client is connected (a dropped WebSocket session in its grace period is not)',
      labelNames: ['mode', 'transport', 'connected'],
      registers,
      collect() {
        this.reset();
        for (const s of sources.sessions()) this.inc({ mode: s.mode, transport: s.transport, connected: String(s.connected) });
      },
    }));
    this.gauges.push(new Gauge({
      name: 'canopy_agents',
      help: 'Agents alive in all sessions',
      registers,
      collect() {
        this.set(sources.agents());
      },
    }));
    const workerGauge = (name: string, help: string, read: (w: ReturnType<MetricsSources['workers']>[number]) => number): void => {
      this.gauges.push(new Gauge({
        name,
        help,
        labelNames: ['worker'],
        registers,
        collect() {
          this.reset();
          for (const w of sources.workers()) this.set({ worker: String(w.worker) }, read(w));
        },
      }));
    };
    workerGauge('canopy_worker_event_loop_utilization', 'Event-loop utilization of each worker thread over the last completed 5 s window measured inside the service (the same for every scraper), 0 to 1', (w) => w.elu);
    workerGauge('canopy_worker_agents', 'Agents held by each worker thread', (w) => w.agents);
    workerGauge('canopy_worker_last_tick_seconds', 'Duration of the last tick slice each worker ran', (w) => w.lastTickMs / 1000);
    // Crash recovery (docs/durability.md): what its checkpoints and logs hold now, and what packing them has cost.
    const recovery = (name: string, help: string, read: (r: RecoveryStats) => number, Kind: typeof Gauge | typeof Counter = Gauge): void => {
      const metric = new Kind({
        name,
        help,
        registers,
        collect() {
          const r = sources.recovery();
          this.reset();
          if (r !== null) (this as Gauge).inc(read(r));
        },
      });
      if (metric instanceof Gauge) this.gauges.push(metric);
    };
    recovery('canopy_recovery_checkpoint_bytes', "Bytes of the workers' latest checkpoints the main thread holds for crash recovery", (r) => r.checkpointBytes);
    recovery('canopy_recovery_checkpointed_agents', 'Agents in those checkpoints', (r) => r.checkpointedAgents);
    recovery('canopy_recovery_logged_ticks', 'Tick orders logged since the checkpoints, over every worker and session: what a crash would run again', (r) => r.loggedTicks);
    recovery('canopy_recovery_checkpoints_total', 'Crash-recovery checkpoints received from the workers', (r) => r.checkpoints, Counter);
    recovery('canopy_recovery_pack_seconds_total', "Workers' time spent packing crash-recovery checkpoints", (r) => r.packMs / 1000, Counter);
    recovery('canopy_recovery_reused_packs_total', 'Crash-recovery checkpoints packed into memory given back by the main thread (the rest took new memory)', (r) => r.reusedPacks, Counter);
    this.frameBuffers = new Counter({
      name: 'canopy_frame_buffers_total',
      help: "Shared buffers the snapshots' frames were received or copied into for the workers, by outcome: reused from the free list, or allocated (new memory, freed only by garbage collection); in a steady load nearly all are reused",
      labelNames: ['outcome'],
      registers,
      collect() {
        const f = sources.frameBuffers();
        this.reset();
        this.inc({ outcome: 'reused' }, f.reused);
        this.inc({ outcome: 'allocated' }, f.allocated);
      },
    });
    // Whether the main thread (one for the whole process) or the workers limit the service: docs/capacity.md, "Cores".
    const threadCounter = (name: string, help: string, read: (t: NonNullable<ReturnType<MetricsSources['threads']>>[number]) => number): Counter<'thread'> =>
      new Counter({
        name,
        help,
        labelNames: ['thread'],
        registers,
        collect() {
          this.reset();
          for (const t of sources.threads() ?? []) this.inc({ thread: t.thread }, read(t));
        },
      });
    this.threadCounters = [threadCounter('canopy_thread_cpu_seconds_total', "CPU seconds (user + system) of the service's threads: `main` (sockets, protocol, routing), `worker-<i>` (trees), `other` (V8's collector and compiler helpers, libuv, the tree-validation thread); Linux only", (t) => t.cpuSeconds),
      threadCounter('canopy_thread_minor_page_faults_total', "Minor page faults of the service's threads, by the same roles as canopy_thread_cpu_seconds_total; Linux only", (t) => t.minorFaults),
    ];

    this.ticks = new FastCounter({ name: 'canopy_ticks_total', help: 'Session ticks run', labelNames: ['mode'], registers });
    this.tickDuration = new FastHistogram({
      name: 'canopy_tick_duration_seconds',
      help: 'Time to tick every agent of one session once, workers included',
      labelNames: ['mode'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
    this.workerTicks = new FastHistogram({
      name: 'canopy_worker_tick_seconds',
      help: "Each tick order's round trip to a worker thread, by part: waiting (posted until the worker starts it: the worker busy with other work or waiting for a core), working (the worker's tick), returning (the worker's reply until the main thread reads it: the main thread busy or waiting for a core)",
      labelNames: ['part'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.workerTickParts = { waiting: this.workerTicks.of('waiting'), working: this.workerTicks.of('working'), returning: this.workerTicks.of('returning') };
    this.tickLateness = new FastHistogram({
      name: 'canopy_tick_lateness_seconds',
      help: 'How late fixed-rate ticks started against their schedule',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.missedTicks = new Counter({
      name: 'canopy_missed_ticks_total',
      help: 'Fixed-rate ticks skipped because the service was late by more than a period or the previous tick still ran',
      registers,
    });
    this.decisionsFrames = new FastCounter({ name: 'canopy_decisions_frames_total', help: '`decisions` messages sent (heartbeats included)', labelNames: ['mode'], registers });
    this.heldDecisions = new Counter({
      name: 'canopy_decisions_merged_total',
      help: 'Decisions held back and merged because the client read too slowly',
      registers,
    });
    this.actions = new FastCounter({ name: 'canopy_actions_total', help: 'Actions issued to game servers', registers });
    this.cancels = new FastCounter({ name: 'canopy_cancels_total', help: 'Running actions cancelled by the trees', registers });
    this.bytesIn = new FastCounter({ name: 'canopy_bytes_received_total', help: 'Bytes of protocol messages received', labelNames: ['transport'], registers });
    this.bytesOut = new FastCounter({ name: 'canopy_bytes_sent_total', help: 'Bytes of protocol messages sent', labelNames: ['transport'], registers });
    this.errors = new Counter({ name: 'canopy_errors_total', help: 'Errors reported to clients, by protocol code', labelNames: ['code'], registers });
    this.unknownRows = new Counter({ name: 'canopy_unknown_agent_rows_total', help: 'Snapshot observations for agents the session does not have (ignored)', registers });
    this.snapshotPaths = new FastCounter({
      name: 'canopy_lockstep_snapshots_total',
      help: 'Lockstep snapshots by how their rows were read: applied and ticked in one message to the worker holding the session (one_message), checked by the workers first (staged), or read on the main thread (main_thread)',
      labelNames: ['path'],
      registers,
    });
    this.snapshotPath = {
      one_message: this.snapshotPaths.tally('one_message'),
      staged: this.snapshotPaths.tally('staged'),
      main_thread: this.snapshotPaths.tally('main_thread'),
    };
    this.fixedSnapshotPaths = new FastCounter({
      name: 'canopy_fixed_snapshots_total',
      help: 'Fixed-mode snapshots with observations by how their rows were read: by the worker holding the session, as they arrived (worker), or on the main thread (main_thread)',
      labelNames: ['path'],
      registers,
    });
    this.fixedSnapshotPath = {
      worker: this.fixedSnapshotPaths.tally('worker'),
      main_thread: this.fixedSnapshotPaths.tally('main_thread'),
    };
    this.recordingBytes = new Counter({ name: 'canopy_recording_bytes_total', help: 'Compressed bytes of recordings written to disk', registers });
    this.recordingFailures = new Counter({ name: 'canopy_recording_failures_total', help: 'Recordings stopped by an error (disk full, folder not writable, fell behind)', registers });
    this.recordingsStarted = new Counter({ name: 'canopy_recordings_started_total', help: 'Session recordings started', registers });
    this.workerRecoveries = new Counter({ name: 'canopy_worker_recoveries_total', help: 'Worker threads that crashed or stalled and were replaced, their agents restored from checkpoints (docs/durability.md)', registers });
    this.durableDegraded = new Gauge({ name: 'canopy_durable_degraded', help: '1 while durable sessions cannot keep their state in Redis (unreachable, failing or too slow); sessions keep ticking', registers });
    this.durableDegradations = new Counter({ name: 'canopy_durable_degradations_total', help: 'Times the durable session store became degraded', registers });
    this.durableBytes = new Counter({ name: 'canopy_durable_bytes_total', help: 'Bytes written to Redis for durable sessions, by kind (log entries, checkpoints)', labelNames: ['kind'], registers });
    this.durableCheckpoints = new Counter({ name: 'canopy_durable_checkpoints_total', help: 'Session checkpoints stored in Redis', registers });
    this.durableAdoptions = new Counter({ name: 'canopy_durable_adoptions_total', help: 'Sessions restored on this instance from Redis, by how (adopted from a dead owner, handed over by a live one)', labelNames: ['how'], registers });
    this.goodbyes = new Counter({ name: 'canopy_goodbyes_total', help: 'Sockets closed by the service with `goodbye`, by reason', labelNames: ['reason'], registers });
  }

  /**
   * Zeroes what a session's traffic counts (ticks, bytes, frames, actions): the start-up warm-up's own session
   * leaves no trace. Errors are kept: the warm-up makes none unless something is wrong (then it is logged too).
   */
  resetTraffic(): void {
    for (const m of [this.ticks, this.tickDuration, this.workerTicks, this.tickLateness, this.missedTicks, this.decisionsFrames, this.heldDecisions, this.actions, this.cancels, this.bytesIn, this.bytesOut, this.unknownRows, this.snapshotPaths, this.fixedSnapshotPaths]) m.reset();
  }
}

// prom-client's `inc` and `observe`, called from all over a busy main thread (every frame, label objects of many shapes,
// cold caches), cost 3–10 µs a call: 4 % of the main thread's CPU at 50,000 agents in lockstep. In a loop they cost a
// few hundred ns. So the hot path adds to plain numbers (FastCounter) or a buffer (FastHistogram), and prom-client is
// handed them when the metric is read — scraped, or `get()` — or a histogram's buffer is full: the figures are exactly
// prom-client's (docs/capacity.md, *Round seventeen*). At most one label each.

/** What a fast metric holds for one label value until it is read. */
interface Held {
  /** Hands what is held to prom-client. */
  flush(): void;
  /** Drops what is held (a reset). */
  clear(): void;
}

/** The held values of a fast metric by label value (the empty string when it has no label). */
class ByLabel<T extends Held> {
  private readonly held = new Map<string, T>();

  constructor(private readonly name: string, private readonly label: string | undefined, private readonly make: (labels: Record<string, string> | undefined) => T) {}

  of(labelValue: string): T {
    let h = this.held.get(labelValue);
    if (h === undefined) {
      if (this.label === undefined && labelValue !== '') throw new Error(`${this.name}: a metric without a label counted with one`);
      // No value for the label: a series without it, as prom-client keeps one.
      h = this.make(this.label === undefined || labelValue === '' ? undefined : { [this.label]: labelValue });
      this.held.set(labelValue, h);
    }
    return h;
  }

  /** The label value `labels` names (prom-client's signature: `{ label: value }`). */
  valueIn(labels: Partial<Record<string, string>>): string {
    return this.label === undefined ? '' : (labels[this.label] ?? '');
  }

  flush(): void {
    for (const h of this.held.values()) h.flush();
  }

  clear(): void {
    for (const h of this.held.values()) h.clear();
  }
}

/**
 * What a fast counter and a fast histogram share: the prom-client metric, made with a `collect` that hands it what is
 * held; what each label value holds; reading and resetting.
 */
abstract class FastMetric<M extends Counter<string> | Histogram<string>, H extends Held> {
  protected readonly metric: M;
  protected readonly byLabel: ByLabel<H>;
  /** What a metric without a label holds. */
  protected readonly unlabelled: H | null;

  protected constructor(name: string, labelNames: readonly string[] | undefined, metric: (collect: () => void) => M, held: (metric: M, labels: Record<string, string> | undefined) => H) {
    if ((labelNames?.length ?? 0) > 1) throw new Error(`${name}: a fast metric has at most one label`);
    const label = labelNames?.[0];
    this.metric = metric(() => this.byLabel.flush());
    this.byLabel = new ByLabel(name, label, (labels) => held(this.metric, labels));
    this.unlabelled = label === undefined ? this.byLabel.of('') : null;
  }

  /** The metric as prom-client gives it, everything held so far included. */
  get(): ReturnType<M['get']> {
    return this.metric.get() as ReturnType<M['get']>;
  }

  reset(): void {
    this.byLabel.clear();
    this.metric.reset();
  }
}

/** One label value's count of a FastCounter. */
export class Tally implements Held {
  private pending = 0;

  constructor(private readonly counter: Counter<string>, private readonly labels: Record<string, string> | undefined) {}

  inc(value = 1): void {
    // prom-client's checks, made here: a bad value fails where it is counted, not at the next scrape.
    if (!(value >= 0) || value === Infinity) throw new TypeError(`a counter cannot add ${value}`);
    this.pending += value;
  }

  flush(): void {
    if (this.pending === 0) return;
    const n = this.pending;
    this.pending = 0;
    if (this.labels === undefined) this.counter.inc(n);
    else this.counter.inc(this.labels, n);
  }

  clear(): void {
    this.pending = 0;
  }
}

/** A prom-client counter whose increments are added up in plain numbers until it is read. */
export class FastCounter<L extends string = never> extends FastMetric<Counter<string>, Tally> {
  constructor(config: { name: string; help: string; labelNames?: readonly L[]; registers: Registry[] }) {
    super(config.name, config.labelNames, (collect) => new Counter<string>({ ...config, labelNames: config.labelNames ?? [], collect }), (counter, labels) => new Tally(counter, labels));
  }

  /** `inc(value)` without a label, `inc({ label: value }, n)` with one (prom-client's signature). */
  inc(labelsOrValue?: Partial<Record<L, string>> | number, value?: number): void {
    if (typeof labelsOrValue === 'object') this.byLabel.of(this.byLabel.valueIn(labelsOrValue)).inc(value);
    else (this.unlabelled ?? this.byLabel.of('')).inc(labelsOrValue);
  }

  /** The count of one label value (the empty string without a label), bound once and incremented on a hot path. */
  tally(labelValue: string): Tally {
    return this.byLabel.of(labelValue);
  }
}

/**
 * Observations a FastHistogram holds per label value before it hands them over without waiting to be read: handing
 * over 1,024 takes the main thread about 0.3 ms in one go, about once a minute where nothing scrapes.
 */
const MAX_HELD_OBSERVATIONS = 1024;

/** One label value's observations of a FastHistogram, in the order they came. */
export class Observations implements Held {
  private values = new Float64Array(64);
  private count = 0;

  constructor(private readonly histogram: Histogram<string>, private readonly labels: Record<string, string> | undefined) {}

  observe(value: number): void {
    // prom-client's check, made here: a bad value fails where it is observed, not at the next scrape.
    if (!Number.isFinite(value)) throw new TypeError(`a histogram cannot observe ${value}`);
    if (this.count === this.values.length) {
      if (this.count < MAX_HELD_OBSERVATIONS) {
        const grown = new Float64Array(this.count * 2);
        grown.set(this.values);
        this.values = grown;
      } else this.flush();
    }
    this.values[this.count++] = value;
  }

  flush(): void {
    const h = this.histogram;
    for (let i = 0; i < this.count; i++) {
      if (this.labels === undefined) h.observe(this.values[i]!);
      else h.observe(this.labels, this.values[i]!);
    }
    this.count = 0;
  }

  clear(): void {
    this.count = 0;
  }
}

/** A prom-client histogram whose observations wait in a buffer until it is read or the buffer is full. */
export class FastHistogram<L extends string = never> extends FastMetric<Histogram<string>, Observations> {
  constructor(config: { name: string; help: string; labelNames?: readonly L[]; buckets: number[]; registers: Registry[] }) {
    super(config.name, config.labelNames, (collect) => new Histogram<string>({ ...config, labelNames: config.labelNames ?? [], collect }), (histogram, labels) => new Observations(histogram, labels));
  }

  /** `observe(value)` without a label, `observe({ label: value }, v)` with one (prom-client's signature). */
  observe(labelsOrValue: Partial<Record<L, string>> | number, value?: number): void {
    if (typeof labelsOrValue === 'number') (this.unlabelled ?? this.byLabel.of('')).observe(labelsOrValue);
    else this.byLabel.of(this.byLabel.valueIn(labelsOrValue)).observe(value ?? Number.NaN);
  }

  /** The observations of one label value (the empty string without a label), bound once and observed into on a hot path. */
  of(labelValue: string): Observations {
    return this.byLabel.of(labelValue);
  }
}

/** How a lockstep snapshot's rows were read (docs/capacity.md, *Round sixteen*). */
export type SnapshotPath = 'one_message' | 'staged' | 'main_thread';
/** How a fixed-mode snapshot's rows were read (docs/capacity.md, *Round twenty-six*). */
export type FixedSnapshotPath = 'worker' | 'main_thread';

/** GET /metrics in the Prometheus text format. */
export const metricsRoutes: FastifyPluginAsync<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.get('/metrics', async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
};
