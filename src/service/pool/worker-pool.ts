// WorkerPool: agents live in worker threads (one AgentHost each); the main thread only routes. A crashed worker
// never takes the process down: its requests reject, its agents are reported lost, and a fresh worker replaces it.
// A stalled one (a plugin in an endless loop) is treated the same way once it has made no progress for `stallMs`.

import { serialize, setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { TreeLookup } from './host.js';
import { DEFAULT_ELU_WINDOW_MS, EluWindows } from './elu.js';
import { ProgressWatch, newProgressBuffer } from './progress.js';
import { PoolRouter } from './router.js';
import { framePool } from './frames.js';
import { DEFAULT_CHECKPOINT_MS, DEFAULT_CHECKPOINT_TICKS, RecoveryJournal, type RecoveryStats } from './recovery.js';
import type { PoolLogger, PoolOptions, TickParts } from './types.js';
import { monotonicMs } from './monotonic.js';
import { framesOf, type FromHost, type HostRequest, type SparesOrder, type TickReply, type ToHost, type TreesOrder, type WorkerHello, type WorldUpdate } from './wire.js';
import type { TreeLibrary } from '../../bt/library.js';

/**
 * Starts a worker running worker.ts's compiled form (dist/: worker.js, started directly). Under vitest the pool
 * runs from its TypeScript sources (import.meta.url ends in `.ts`) and the worker must run worker.ts through tsx.
 * `execArgv: ['--import', 'tsx']` is not enough on Node 20: hooks registered that way do not reach the worker's
 * own modules ("Unknown file extension .ts"). So the worker boots from a two-line script that registers tsx's
 * loader inside the thread, then imports worker.ts.
 */
function startWorker(
  data: { trees: string; plugins: string | undefined; progress: SharedArrayBuffer; definitions?: Record<string, unknown> },
  youngMb: number,
  youngFromStart: boolean,
): Worker {
  const resourceLimits = youngMb > 0 ? { maxYoungGenerationSizeMb: youngMb } : {};
  // The young generation at its full size from the start (V8 counts it as three semi-spaces), or grown from V8's
  // smallest as V8 sees fit (0), whatever the process's own flag says (`--min-semi-space-size` in the start
  // commands, for the main thread). A worker's isolate reads the flag when it is created, after this; the isolates
  // made before keep theirs.
  setFlagsFromString(`--min-semi-space-size=${youngMb > 0 && youngFromStart ? Math.floor(youngMb / 3) : 0}`);
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./worker.js', import.meta.url), { workerData: data, resourceLimits });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData: data, resourceLimits });
}

/**
 * Default PoolOptions.workerYoungGenerationMb. With V8's default young generation (semi-spaces of 32 MB on a
 * large machine, Node 26), a worker's old generation (~23 MB live, its limit ~60 MB) never has more room left
 * than the young generation's capacity, so V8 starts marking right after a GC: one mark-compact per one or two
 * scavenges (docs/capacity.md, "Round five"). 48 MB (semi-spaces of 16 MB) leaves that room.
 */
export const DEFAULT_WORKER_YOUNG_GENERATION_MB = 48;

interface Pending {
  resolve(reply: FromHost): void;
  reject(err: Error): void;
  /** A tick order's post, on the process-wide clock (monotonic.ts), when its parts are reported (tickParts); else 0. */
  postedAt: number;
}

/**
 * Replacements tried for one crash: the first replays as is (the crash may not come back); each further one stops,
 * with E_PLUGIN, the agent whose tick killed the previous replacement during the tick in flight.
 */
const MAX_RECOVERY_ATTEMPTS = 3;

/** Default PoolOptions.stallMs: far beyond any sane tick, short enough that a game notices little. */
export const DEFAULT_STALL_MS = 10_000;

/** One worker thread and the requests waiting on it. */
class HostThread {
  readonly worker: Worker;
  readonly pending = new Map<number, Pending>();
  /** Settles with the worker's `ready`; rejects with the loader's error text. */
  readonly ready: Promise<void>;
  /** The worker's own progress, read by the stall watchdog. */
  readonly progress: ProgressWatch;
  isReady = false;
  gone = false;
  /** The thread's id in the OS, from its `ready` (Linux). */
  threadId: number | undefined;
  /** A replacement still replaying its predecessor's orders (recovery.ts): crashing now loses its agents. */
  recovering = false;
  /** The request whose reply says the replay is done. */
  replayDone = -1;
  /** Recovery attempts that led to this thread without a completed replay in between (0: a fresh worker). */
  attempts = 0;
  settleReady: (err: Error | null) => void = () => {};

  constructor(worker: Worker, progress: SharedArrayBuffer) {
    this.worker = worker;
    this.progress = new ProgressWatch(progress);
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = (err) => (err === null ? resolve() : reject(err));
    });
    this.ready.catch(() => {}); // rejections are delivered through ready() and logged; never unhandled
  }
}

/** The pool over worker threads; see AgentPool. Build it with createAgentPool({ workers: n }). */
export class WorkerPool extends PoolRouter {
  readonly workerCount: number;
  protected override readonly stagesRows = true;
  private readonly options: PoolOptions;
  private readonly threads: HostThread[];
  private readonly started: Promise<void>;
  /** Tree fingerprints the main thread compiled; every worker must have the same. */
  private hashes: Record<string, string>;
  /** After a reload: the definitions a replacement worker loads instead of the folder. */
  private definitions: Record<string, unknown> | undefined;
  private readonly replaced: Array<Array<() => void>>;
  private readonly watchdog: NodeJS.Timeout | undefined;
  private readonly eluWindows: EluWindows;
  private closed = false;
  /** Checkpoints and order logs for crash recovery; null when PoolOptions.checkpointMs is negative. */
  private readonly journal: RecoveryJournal | null;
  /** Where each tick order's round trip is reported, in its three parts (the service's metrics); null: nowhere. */
  tickParts: TickParts | null = null;

  constructor(options: PoolOptions, trees: TreeLookup & { names(): string[] }, logger: PoolLogger | undefined) {
    super(trees, options.workers, logger);
    if (options.sessionAffinity !== undefined) this.sessionAffinity = options.sessionAffinity;
    if (options.spawningMs !== undefined) this.spawningMs = options.spawningMs;
    if (options.minStagedRows !== undefined) this.minStagedRows = options.minStagedRows;
    this.workerCount = options.workers;
    this.options = options;
    this.hashes = {};
    for (const name of trees.names()) this.hashes[name] = trees.get(name)!.hash;
    this.replaced = Array.from({ length: options.workers }, () => []);
    const checkpointMs = options.checkpointMs ?? DEFAULT_CHECKPOINT_MS;
    this.journal = checkpointMs < 0 ? null : new RecoveryJournal(options.workers, checkpointMs, options.checkpointTicks ?? DEFAULT_CHECKPOINT_TICKS, framePool);
    this.eluWindows = new EluWindows(options.workers, options.eluWindowMs ?? DEFAULT_ELU_WINDOW_MS, (i) => {
      const t = this.threads[i];
      return t === undefined || !t.isReady || t.gone ? null : t.worker.performance.eventLoopUtilization();
    });
    this.threads = Array.from({ length: options.workers }, (_, i) => this.startThread(i));
    this.started = Promise.all(this.threads.map((t) => t.ready)).then(() => undefined);
    this.started.catch(() => {});
    const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
    if (stallMs > 0) {
      this.watchdog = setInterval(() => this.checkStalls(stallMs), Math.max(10, Math.min(1000, stallMs / 4)));
      this.watchdog.unref();
    }
  }

  ready(): Promise<void> {
    return this.started;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watchdog);
    this.eluWindows.stop();
    for (const t of this.threads) {
      t.gone = true;
      failAll(t, new Error('agent pool closed'));
    }
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  /** Test hook (crashWorkerForTests): worker `i` dies; resolves when its replacement is ready and, with recovery, restored. */
  crashForTests(i: number, how: 'throw' | 'terminate'): Promise<void> {
    const t = this.threads[i];
    if (t === undefined) throw new RangeError(`no worker ${i}`);
    const replaced = new Promise<void>((resolve) => this.replaced[i]!.push(resolve));
    if (how === 'terminate') {
      void t.worker.terminate();
      return replaced;
    }
    t.progress.posting();
    t.worker.postMessage({ t: 'crash' }, []);
    return replaced;
  }

  private settleReplaced(i: number): void {
    for (const resolve of this.replaced[i]!.splice(0)) resolve();
  }

  /** Recovery figures: agents held in checkpoints and tick orders logged since, over every worker and session. */
  recoveryStats(): RecoveryStats {
    return this.journal?.stats() ?? { checkpointedAgents: 0, checkpointBytes: 0, loggedTicks: 0, checkpoints: 0, packMs: 0, packMedianMs: 0, partMedianMs: 0, partMaxMs: 0, reusedPacks: 0 };
  }

  protected post(host: number, msg: ToHost, transfer: ArrayBuffer[]): void {
    const t = this.threads[host]!;
    this.journal?.record(host, msg);
    t.progress.posting();
    t.worker.postMessage(msg, transfer);
  }

  protected request(host: number, msg: HostRequest, transfer: ArrayBuffer[]): Promise<FromHost> {
    const t = this.threads[host]!;
    if (t.gone) return Promise.reject(new Error(`worker ${host} is down`));
    // A stage order changes nothing on the worker (its rows come back with the tick order, which is logged).
    const due = msg.t === 'stage' ? false : (this.journal?.record(host, msg) ?? false);
    // The frames of a tick or read order are held until the worker answers it (it reads them before ticking), whether
    // by this worker or, after a crash, by its replacement (the journal holds them meanwhile).
    const frames = framesOf(msg);
    if (frames !== null) for (const f of frames) framePool.hold(f);
    let reply = new Promise<FromHost>((resolve, reject) => {
      t.pending.set(msg.req, { resolve, reject, postedAt: msg.t === 'tick' && this.tickParts !== null ? monotonicMs() : 0 });
      t.progress.posting();
      t.worker.postMessage(msg, transfer);
    });
    if (frames !== null) {
      const release = (): void => {
        for (const f of frames) framePool.release(f);
      };
      reply = reply.finally(release);
    }
    if (due && msg.t === 'tick') this.requestCheckpoint(host, msg.session, msg.time);
    return reply;
  }

  /**
   * A tick order's round trip in its parts (TickParts). A clock that two threads read alike, so the parts add up to
   * the round trip; one that the order waited for a replacement worker's recovery counts that wait as `waiting`.
   */
  private observeTick(postedAt: number, reply: TickReply): void {
    const parts = this.tickParts;
    if (parts === null) return;
    const now = monotonicMs();
    parts.waiting.observe(Math.max(0, reply.startedAt - postedAt) / 1000);
    parts.working.observe(reply.ms / 1000);
    parts.returning.observe(Math.max(0, now - reply.startedAt - reply.ms) / 1000);
  }

  /** Asks worker `host` for a checkpoint of `session`, right behind a tick order: it runs once that tick is answered. */
  private requestCheckpoint(host: number, session: string, time: number): void {
    const journal = this.journal!;
    const req = this.nextRequestId();
    journal.requested(host, session, req, time);
    this.request(host, { t: 'checkpoint', req, session, local: true }, []).then(
      (reply) => {
        if (reply.t !== 'checkpointed') return;
        journal.checkpointed(host, session, reply);
        this.giveSpares(host);
      },
      (err: unknown) => {
        journal.abandoned(host, session, req);
        const message = err instanceof Error ? err.message : String(err);
        if (!message.includes('crashed') && !message.includes('closed')) this.logger?.warn({ err, worker: host, session }, 'agent pool: checkpoint failed; the next is due one period later');
      },
    );
  }

  /**
   * The buffers of worker `host`'s replaced checkpoints (recovery.ts, takeSpares), back to it at once: held until its
   * next checkpoint request, several sessions' replaced buffers piled up and most were dropped (half the packs took
   * new memory), and at 1 Hz they waited seconds on the main thread.
   */
  private giveSpares(host: number): void {
    const buffers = this.journal!.takeSpares(host);
    const t = this.threads[host];
    if (buffers.length === 0 || t === undefined || t.gone) return;
    t.progress.posting();
    t.worker.postMessage({ t: 'spares', buffers } satisfies SparesOrder, buffers);
  }

  /** Posted to every worker in one go: no session tick can fall between two workers' installs. */
  protected installTrees(library: TreeLibrary, restart: ReadonlyArray<Array<[string, number[]]>>): void {
    const defs: Record<string, unknown> = {};
    const hashes: Record<string, string> = {};
    for (const name of library.names()) {
      defs[name] = library.definition(name);
      hashes[name] = library.get(name)!.hash;
    }
    this.definitions = defs;
    this.hashes = hashes;
    this.journal?.treesChanged();
    this.threads.forEach((t, i) => {
      if (t.gone) return;
      const order: TreesOrder = { t: 'trees', defs, restart: restart[i] ?? [] };
      t.progress.posting();
      t.worker.postMessage(order, []);
    });
  }

  /** Serialized once, then the bytes are copied to each worker: two workers do not cost two structured clones. */
  protected shareWorld(world: unknown): WorldUpdate {
    return { bytes: serialize(world) };
  }

  /**
   * Copied once into a SharedArrayBuffer of the process's frame pool (reused once the workers and the journal let go),
   * unless it was received into one (receive.ts): every worker reads the same bytes (posting it copies nothing), and
   * the recovery log keeps it by reference. Measured against a structured clone per worker: see docs/capacity.md.
   */
  protected shareFrame(bytes: Uint8Array): Uint8Array {
    return framePool.copy(bytes);
  }

  protected elu(host: number): number {
    return this.eluWindows.utilization(host);
  }

  protected override threadId(host: number): number | undefined {
    const t = this.threads[host];
    return t === undefined || t.gone ? undefined : t.threadId;
  }

  private startThread(i: number): HostThread {
    const progress = newProgressBuffer();
    // The fingerprints this worker must load: a reload posted while it starts arrives after its `ready`.
    const expected = this.hashes;
    const definitions = this.definitions;
    const t = new HostThread(startWorker({ trees: this.options.trees, plugins: this.options.plugins, progress, ...(definitions !== undefined ? { definitions } : {}) }, this.options.workerYoungGenerationMb ?? DEFAULT_WORKER_YOUNG_GENERATION_MB, this.options.workerYoungGenerationFromStart ?? true), progress);
    t.worker.on('message', (msg: FromHost | WorkerHello) => {
      if (msg.t === 'ready') {
        if (!msg.ok) {
          t.settleReady(new Error(msg.error));
          return;
        }
        const mismatch = Object.keys(expected).find((name) => msg.trees[name] !== expected[name]);
        if (mismatch !== undefined || Object.keys(msg.trees).length !== Object.keys(expected).length) {
          t.settleReady(new Error(`worker ${i} loaded different trees than the main thread${mismatch === undefined ? '' : ` (tree '${mismatch}')`}: was the tree folder changed?`));
          return;
        }
        t.isReady = true;
        t.threadId = msg.tid;
        // Node caches the worker's loop start time in the Worker object on the first eventLoopUtilization() call,
        // an integer field turning into a double: that changes the object's hidden class and throws away every
        // optimized function that embeds it (spawn, despawn, tick through post). Take that first reading now,
        // before the start-up warm-up optimizes them, not on the first ELU sample after the service listens.
        t.worker.performance.eventLoopUtilization();
        t.settleReady(null);
        return;
      }
      if (msg.req === t.replayDone) {
        t.recovering = false;
        this.settleReplaced(i);
      }
      const p = t.pending.get(msg.req);
      if (p === undefined) return;
      t.pending.delete(msg.req);
      if (msg.t === 'failed') p.reject(new Error(`worker ${i}: ${msg.message}`));
      else {
        if (p.postedAt > 0 && msg.t === 'ticked') this.observeTick(p.postedAt, msg);
        p.resolve(msg);
      }
    });
    t.worker.on('error', (err) => this.onThreadDown(i, t, err));
    t.worker.on('exit', (code) => this.onThreadDown(i, t, new Error(`worker exited with code ${code}`)));
    t.worker.on('messageerror', (err) => this.logger?.error({ err, worker: i }, 'agent pool: a worker message could not be deserialized'));
    t.ready.then(
      () => {
        this.up[i] = true;
        if (!t.recovering) this.settleReplaced(i);
      },
      (err: unknown) => {
        this.up[i] = false;
        this.logger?.error({ err, worker: i }, 'agent pool: worker failed to load trees and plugins');
        void t.worker.terminate(); // a worker with other trees than the router's must not host agents
      },
    );
    return t;
  }

  /**
   * A worker that owes work and has made no progress of its own for `stallMs` is stuck (a plugin in an endless
   * loop, say): it is terminated and replaced like a crashed one, so every other worker's agents and sessions go
   * on. Judged by the worker's progress count (progress.ts), not by how long its replies wait: when the main
   * thread is the one blocked, the replies wait unread and the workers are healthy.
   */
  private checkStalls(stallMs: number): void {
    const now = performance.now();
    this.threads.forEach((t, i) => {
      if (t.gone || !t.isReady) return;
      const stalled = t.progress.stalledFor(now);
      if (stalled < stallMs) return;
      this.onThreadDown(i, t, new Error(`no answer for ${Math.round(stalled)} ms (stalled: no progress of its own; a plugin in an endless loop?)`));
    });
  }

  /**
   * The worker crashed, exited or stalled. With recovery, a replacement restores its agents and replays the
   * orders since their checkpoints (recovery.ts); a replacement that goes down before its replay is done is
   * replaced again, at most MAX_RECOVERY_ATTEMPTS times. After that, or in a pool without recovery, they are
   * lost: its requests fail, its agents are reported lost, a fresh worker starts.
   */
  private onThreadDown(i: number, t: HostThread, err: Error): void {
    if (t.gone) return; // 'error' is followed by 'exit'; a closed pool expects both
    t.gone = true;
    const wasReady = t.isReady;
    if (!wasReady) t.settleReady(new Error(`worker ${i} stopped before loading: ${err.message}`));
    if (this.journal !== null && !this.closed && (wasReady || t.recovering)) {
      if (!t.recovering) {
        this.recover(i, t, err, this.journal, 1);
        return;
      }
      // The replacement went down while replaying. During an awaited tick, the agent it was ticking is the
      // culprit: it alone is stopped and the replay tried again. With no agent to blame (killed from outside,
      // out of memory, down between orders), the same replay is tried again. Both within the same bound.
      const at = t.progress.agentAtDeath();
      const blamed = at !== null && t.pending.has(at.req) ? at : null;
      if (t.attempts < MAX_RECOVERY_ATTEMPTS) {
        const why = /stalled/.test(err.message) ? 'stalled' : 'crashed';
        if (blamed === null || this.journal.stopAgent(i, blamed.req, blamed.slot, `agent stopped: plugin code ${why} its worker thread on every attempt`)) {
          this.recover(i, t, err, this.journal, t.attempts + 1);
          return;
        }
      }
    }
    this.up[i] = false;
    failAll(t, new Error(`worker ${i} crashed: ${err.message}`));
    const lost = this.loseHost(i);
    this.journal?.forget(i);
    void t.worker.terminate();
    if (this.closed) return;
    if (!wasReady && !t.recovering) return; // it never loaded: a replacement would fail the same way
    this.logger?.error({ err, worker: i, lostAgents: lost }, 'agent pool: worker crashed; its agents are lost; starting a replacement');
    this.eluWindows.reset(i);
    this.threads[i] = this.startThread(i);
  }

  /**
   * Starts a replacement for worker `i` and sends it, before anything else, every session's checkpoint and the
   * orders logged since. Ticks still awaited move to the replacement: their replayed orders keep their request
   * ids, so they are answered; the replies of the ticks already answered find nobody waiting and are dropped.
   */
  private recover(i: number, t: HostThread, err: Error, journal: RecoveryJournal, attempt: number): void {
    const ticks = journal.tickRequests(i);
    const awaited = new Map<number, Pending>();
    for (const [req, p] of t.pending) {
      if (ticks.has(req)) awaited.set(req, p);
      else p.reject(new Error(`worker ${i} crashed: ${err.message}`)); // inspector requests, checkpoints
    }
    t.pending.clear();
    void t.worker.terminate();
    const { orders, agents, ticks: replayed } = journal.replay(i);
    // The replacement knows no other worker's routes (they are not logged): sessions it scanned alone are re-sent them.
    this.forgetScans(i);
    this.options.onRecovery?.();
    this.logger?.error({ err, worker: i, agents, ticks: replayed, attempt }, 'agent pool: worker crashed; restoring its agents on a replacement from their checkpoint and the orders since');
    this.eluWindows.reset(i);
    const next = this.startThread(i);
    this.threads[i] = next;
    next.recovering = true;
    next.attempts = attempt;
    for (const [req, p] of awaited) next.pending.set(req, p);
    next.progress.posting();
    // Posted now, before any new order: the port keeps them in order until the worker has loaded.
    for (const o of orders) next.worker.postMessage(o, []);
    next.replayDone = this.nextRequestId();
    next.worker.postMessage({ t: 'inspect', req: next.replayDone, session: '', slot: -1 } satisfies ToHost, []);
  }
}

function failAll(t: HostThread, err: Error): void {
  for (const p of t.pending.values()) p.reject(err);
  t.pending.clear();
}
