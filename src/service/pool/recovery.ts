// Crash and stall recovery of a WorkerPool (docs/durability.md): per worker and session, the newest checkpoint of
// the agents' state and every order sent to that worker since. A replacement worker is rebuilt from them, exactly.

import { MIN_REUSED_CHECKPOINT_BYTES } from './checkpoint.js';
import type { FrameHolds } from './frames.js';
import { FreeBuffers } from './free-buffers.js';
import { DOUBLE_FIELD_START } from './progress.js';
import { framesOf, type CheckpointReply, type FrameBatch, type ReadOrder, type ResultBatch, type RowBatch, type TickOrder, type ToHost } from './wire.js';

/** Default PoolOptions.checkpointMs. */
export const DEFAULT_CHECKPOINT_MS = 2000;
/** Default PoolOptions.checkpointTicks. */
export const DEFAULT_CHECKPOINT_TICKS = 20;
/** A log never holds more tick orders than this, whatever checkpointMs: memory and replay time stay bounded. */
export const MAX_LOGGED_TICKS = 200;

/** One session's share of one worker, as recovery keeps it. */
interface SessionLog {
  fields: readonly string[] | null;
  /**
   * The agents and the world after some tick, packed by the worker (checkpoint.ts); null: before the first checkpoint.
   * `local`: in the local form, in a buffer of its own that goes back to the worker once a newer one replaces it.
   */
  checkpoint: { agents: number; bytes: Uint8Array; local: boolean } | null;
  /** Orders sent to the worker since the checkpoint, in order (rows and results copied: the sent ones are transferred). */
  orders: ToHost[];
  /** Tick orders among `orders`. */
  ticks: number;
  /** Bytes of input (rows, results) the tick orders among `orders` hold, about. */
  loggedBytes: number;
  /**
   * Session time (`time` of the tick order, s) of the latest checkpoint requested; -Infinity: one is due at the
   * next tick (after a reload or a replay); NaN: a new session, whose clock starts at its first tick.
   */
  requestedAt: number;
  /** How much earlier than `everyMs` after its first tick the session's first checkpoint is due (ms, < everyMs / 2). */
  phaseMs: number;
  /** The checkpoint on its way: its request id and how many of `orders` it covers. */
  inflight: { req: number; covers: number } | null;
  /** Agents whose plugin kills the worker: stopped with E_PLUGIN at the tick order `req` in every replay. */
  stops: Array<{ req: number; slot: number; message: string }>;
}

/** Recovery figures: what the journal holds now, and the checkpoints taken so far with the workers' time packing them. */
export interface RecoveryStats {
  checkpointedAgents: number;
  checkpointBytes: number;
  loggedTicks: number;
  checkpoints: number;
  packMs: number;
  /** Median packing time of the latest 100 checkpoints (ms of the worker's wall clock). */
  packMedianMs: number;
  /**
   * How long each of the latest 100 packs held its worker at a time (its longest part, or the whole of a small pack),
   * ms: the median and the largest.
   */
  partMedianMs: number;
  partMaxMs: number;
  /** Checkpoints packed into memory given back by the main thread (of `checkpoints`). */
  reusedPacks: number;
}

/** Buffers of replaced checkpoints waiting to go back to a worker, at most (the rest are left to the collector). */
const MAX_SPARES_PER_HOST = 4;

/** Checkpoints and order logs of every worker of a pool; the pool calls it on every message it sends. */
export class RecoveryJournal {
  /** Per worker: session name → its log. */
  private readonly hosts: Array<Map<string, SessionLog>>;
  private readonly everyMs: number;
  private readonly minTicks: number;
  /** Checkpoints received, the workers' time spent packing them (ms) and the latest 100 packing times, for figures. */
  private checkpoints = 0;
  /** Fractions of a ms: starts at -0, a double, not 0 (progress.ts, DOUBLE_FIELD_START says why). */
  private packMs = DOUBLE_FIELD_START;
  private readonly packTimes: number[] = [];
  private readonly packLongest: number[] = [];
  /** Per worker: sessions whose log it opened so far (the phase of each new session's checkpoints, `phaseMs`). */
  private readonly opened: number[];
  /** The buffers of logged copies, reused once a checkpoint covers their order. */
  private readonly copies = new CopyBuffers();
  /** Per worker: buffers of its replaced local checkpoints, on their way back to it (takeSpares). */
  private readonly spares: ArrayBuffer[][];
  private reusedPacks = 0;

  /**
   * @param frames told of every snapshot frame a logged tick or read order keeps (hold) and of those a checkpoint lets go
   *   (release), so shared frame buffers can be reused (frames.ts); other ways a log goes (dropped, forgotten) let
   *   go of nothing: those frames are left to the garbage collector
   */
  constructor(hostCount: number, everyMs: number, minTicks = DEFAULT_CHECKPOINT_TICKS, private readonly frames: FrameHolds | null = null) {
    this.hosts = Array.from({ length: hostCount }, () => new Map());
    this.opened = Array.from({ length: hostCount }, () => 0);
    this.spares = Array.from({ length: hostCount }, () => []);
    this.everyMs = everyMs;
    this.minTicks = minTicks;
  }

  /**
   * Logs an order on its way to worker `host`. Returns true when the session's checkpoint is due: the caller
   * then sends a `checkpoint` request right behind this tick order and reports it with `requested`. Due by
   * session time (`everyMs` of the ticks' `time`, so 40 ticks at 20 Hz whatever the machine's speed), or after
   * MAX_LOGGED_TICKS ticks whatever the time says (a lockstep game may keep time still). Once due by time, it
   * waits for `minTicks` logged ticks or logged input as large as the previous checkpoint, whichever first: a
   * session ticking slowly (1 Hz) is not packed every other tick (at 1,000,000 agents that cost more CPU, garbage
   * collection and memory than ticking), and a log of large inputs never outgrows a checkpoint for long. The
   * first checkpoint of a session is due `everyMs` after its first tick; the first after a reload or a replay
   * at the next tick; both by time alone.
   */
  record(host: number, msg: ToHost): boolean {
    const logs = this.hosts[host]!;
    switch (msg.t) {
      case 'spawn': {
        let log = logs.get(msg.session);
        if (log === undefined) {
          log = { fields: msg.fields, checkpoint: null, orders: [], ticks: 0, loggedBytes: 0, requestedAt: Number.NaN, phaseMs: this.phaseMs(host), inflight: null, stops: [] };
          logs.set(msg.session, log);
        }
        log.orders.push(msg);
        return false;
      }
      case 'despawn':
        logs.get(msg.session)?.orders.push(msg);
        return false;
      case 'restore':
        // A session imported from another instance (durable sessions): its agents start from this checkpoint.
        logs.set(msg.session, { fields: msg.fields, checkpoint: { agents: msg.count ?? 0, bytes: msg.bytes, local: false }, orders: [], ticks: 0, loggedBytes: 0, requestedAt: -Infinity, phaseMs: 0, inflight: null, stops: [] });
        return false;
      case 'drop': {
        // Nothing replays the session's orders any more: their frames and copies go back to be reused by the next
        // sessions (the start-up warm-up's among them, for a game's first frames), not to the collector.
        const log = logs.get(msg.session);
        logs.delete(msg.session);
        if (log !== undefined) {
          for (const o of log.orders) this.letGo(o);
          this.spare(host, log.checkpoint);
        }
        return false;
      }
      case 'read': {
        // A fixed-mode frame's rows, read by the worker as they come: replayed in their place among the tick orders.
        const log = logs.get(msg.session);
        if (log === undefined) return false;
        log.orders.push(msg);
        log.loggedBytes += inputBytes(msg);
        this.hold(msg);
        return false;
      }
      case 'settle':
        logs.get(msg.session)?.orders.push(msg);
        return false;
      case 'tick': {
        const log = logs.get(msg.session);
        if (log === undefined) return false; // the router only ticks a worker it spawned agents on
        const copy = copyTick(msg, this.copies);
        log.orders.push(copy);
        log.ticks++;
        log.loggedBytes += inputBytes(copy);
        this.hold(msg);
        if (log.inflight !== null) return false;
        // A new session's first checkpoint is due `everyMs` of session time after its first tick, not on it: a game
        // server that spawns its agents and ticks at once would pay for packing them all right then, and so would
        // every other session on the worker (docs/capacity.md, "Bursts"). Until then a crash replays the spawns.
        // Sessions that start together (a burst) are spread over the first half of that window (phaseMs), so that
        // their checkpoints, every `everyMs` from then on, do not all fall on one tick of the worker.
        if (Number.isNaN(log.requestedAt)) log.requestedAt = msg.time - log.phaseMs / 1000;
        if (log.ticks >= MAX_LOGGED_TICKS) return true;
        if (Math.abs(msg.time - log.requestedAt) * 1000 < this.everyMs) return false;
        return log.checkpoint === null || log.requestedAt === -Infinity || log.ticks >= this.minTicks || log.loggedBytes >= log.checkpoint.bytes.length;
      }
      default:
        return false; // inspector requests change no agent
    }
  }

  /** A logged order no replay needs any more: its frames released, its copies back to be handed out again. */
  private letGo(o: ToHost): void {
    if (o.t !== 'tick' && o.t !== 'read') return;
    if (this.frames !== null) for (const f of framesOf(o) ?? []) this.frames.release(f);
    if (o.t === 'tick') releaseTick(o, this.copies);
  }

  /** Holds the frames a logged order reads until a checkpoint covers it (checkpointed). */
  private hold(order: TickOrder | ReadOrder): void {
    if (this.frames !== null) for (const f of framesOf(order) ?? []) this.frames.hold(f);
  }

  /**
   * The checkpoint phase of the next session worker `host` opens: 0 for the first, then spread over [0, everyMs / 2)
   * by the golden ratio (each new one lands in the largest gap left), so sessions that start together checkpoint on
   * different ticks — at 20 Hz and 2 s, four sessions 0, 12, 5 and 17 ticks apart.
   */
  private phaseMs(host: number): number {
    const k = this.opened[host]!++;
    const golden = 0.6180339887498949;
    return ((k * golden) % 1) * (this.everyMs / 2);
  }

  /**
   * New tree versions were installed (hot reload): every session's next tick takes a checkpoint, so that the
   * window in which a crash finds a checkpoint of the older versions (which cannot be restored: agents lost,
   * as before recovery existed) is one tick long.
   */
  treesChanged(): void {
    for (const logs of this.hosts) for (const log of logs.values()) log.requestedAt = -Infinity;
  }

  /** A checkpoint request `req` left for `session` on `host` after the tick of session time `time`: it covers every order logged so far. */
  requested(host: number, session: string, req: number, time: number): void {
    const log = this.hosts[host]!.get(session);
    if (log === undefined) return;
    log.inflight = { req, covers: log.orders.length };
    log.requestedAt = time;
  }

  /** The reply to a checkpoint request: the new checkpoint; the orders it covers are dropped. */
  checkpointed(host: number, session: string, reply: CheckpointReply): void {
    const log = this.hosts[host]?.get(session);
    if (log === undefined || log.inflight?.req !== reply.req) return; // dropped, or the worker was replaced meanwhile
    const covered = log.orders.splice(0, log.inflight.covers);
    for (const o of covered) {
      if (o.t !== 'tick' && o.t !== 'read') continue;
      log.loggedBytes -= inputBytes(o);
      // Covered by the checkpoint: the worker read these frames before it packed it.
      this.letGo(o);
      if (o.t === 'read') continue;
      log.ticks--;
      // The checkpoint holds the stopped agent: the stop need not be replayed any more.
      if (log.stops.length > 0) log.stops = log.stops.filter((x) => x.req !== o.req);
    }
    this.spare(host, log.checkpoint);
    log.checkpoint = { agents: reply.agents, bytes: reply.bytes, local: reply.reused !== undefined };
    if (reply.reused === true) this.reusedPacks++;
    this.checkpoints++;
    this.packMs += reply.ms;
    if (this.packTimes.push(reply.ms) > 100) this.packTimes.shift();
    if (this.packLongest.push(reply.longestMs) > 100) this.packLongest.shift();
    log.inflight = null;
  }

  /**
   * Worker `host`'s replaced local checkpoints, for it to pack into again: the pool hands them back (transferred,
   * SparesOrder) right after each checkpoint it receives from that worker.
   */
  takeSpares(host: number): ArrayBuffer[] {
    return this.spares[host]!.splice(0);
  }

  /**
   * A checkpoint nothing reads any more (replaced, or its session dropped): a local one's buffer goes back to its
   * worker (takeSpares). Nothing else holds it: a restore order posted earlier was a copy.
   */
  private spare(host: number, checkpoint: SessionLog['checkpoint']): void {
    if (checkpoint === null || !checkpoint.local) return;
    const buffer = checkpoint.bytes.buffer;
    const spares = this.spares[host]!;
    if (buffer instanceof ArrayBuffer && buffer.byteLength >= MIN_REUSED_CHECKPOINT_BYTES && spares.length < MAX_SPARES_PER_HOST) spares.push(buffer);
  }

  /**
   * A checkpoint request that failed: the worker could not pack (a value that cannot be serialized) and asks
   * again one period later (the log keeps growing meanwhile), or it crashed (then `replay` starts over anyway).
   */
  abandoned(host: number, session: string, req: number): void {
    const log = this.hosts[host]?.get(session);
    if (log?.inflight?.req === req) log.inflight = null;
  }

  /**
   * What rebuilds worker `host` on a replacement, in order: per session, a restore from its checkpoint then
   * the logged orders (tick orders keep their request ids: a tick still awaited is answered, the others'
   * replies are dropped as nobody waits for them). Checkpoints in flight are forgotten: their replies never come.
   */
  replay(host: number): { orders: ToHost[]; agents: number; ticks: number } {
    const orders: ToHost[] = [];
    let agents = 0;
    let ticks = 0;
    for (const [session, log] of this.hosts[host]!) {
      log.inflight = null;
      log.requestedAt = -Infinity;
      if (log.checkpoint !== null) {
        orders.push({ t: 'restore', session, fields: log.fields, bytes: log.checkpoint.bytes });
        agents += log.checkpoint.agents;
      }
      for (const o of log.orders) {
        if (o.t === 'tick') for (const x of log.stops) if (x.req === o.req) orders.push({ t: 'stop', session, slot: x.slot, message: x.message });
        orders.push(o);
      }
      ticks += log.ticks;
    }
    return { orders, agents, ticks };
  }

  /**
   * Makes every replay stop the agent in `slot` with E_PLUGIN at tick order `req` instead of ticking it (its
   * plugin killed the worker there on every attempt). False if no logged tick order of `host` has that id.
   */
  stopAgent(host: number, req: number, slot: number, message: string): boolean {
    for (const log of this.hosts[host]!.values()) {
      if (!log.orders.some((o) => o.t === 'tick' && o.req === req)) continue;
      log.stops.push({ req, slot, message });
      return true;
    }
    return false;
  }

  /** Forgets worker `host`'s logs: its agents were lost, the replacement starts empty. */
  forget(host: number): void {
    this.hosts[host]!.clear();
  }

  /** Request ids of the tick and read orders logged for `host` (the ones a replay can answer). */
  tickRequests(host: number): Set<number> {
    const reqs = new Set<number>();
    for (const log of this.hosts[host]!.values()) for (const o of log.orders) if (o.t === 'tick' || o.t === 'read') reqs.add(o.req);
    return reqs;
  }

  /** Totals for figures and tests: checkpointed agents and logged tick orders over every worker and session. */
  stats(): RecoveryStats {
    let checkpointedAgents = 0;
    let checkpointBytes = 0;
    let loggedTicks = 0;
    for (const logs of this.hosts) {
      for (const log of logs.values()) {
        checkpointedAgents += log.checkpoint?.agents ?? 0;
        checkpointBytes += log.checkpoint?.bytes.length ?? 0;
        loggedTicks += log.ticks;
      }
    }
    return { checkpointedAgents, checkpointBytes, loggedTicks, checkpoints: this.checkpoints, packMs: this.packMs + 0, packMedianMs: median(this.packTimes), partMedianMs: median(this.packLongest), partMaxMs: Math.max(0, ...this.packLongest), reusedPacks: this.reusedPacks };
  }
}

/** A tick order as logged: its own copies of the row and result buffers (the sent ones are transferred). */
function copyTick(o: TickOrder, copies: CopyBuffers): TickOrder {
  return {
    ...o,
    rows: o.rows === null ? null : copyRows(o.rows, copies),
    frameRows: o.frameRows === null ? null : copyFrameRows(o.frameRows, copies),
    results: o.results === null ? null : copyResults(o.results, copies),
  };
}

/** The copies of a logged tick order a checkpoint covered, back to `copies` (nothing reads them any more). */
function releaseTick(o: TickOrder, copies: CopyBuffers): void {
  if (o.rows !== null) copies.release(o.rows.slots, o.rows.values, o.rows.tags, o.rows.vectors);
  if (o.frameRows !== null) copies.release(o.frameRows.slots, o.frameRows.offsets);
  if (o.results !== null) copies.release(o.results.data);
}

/** About the bytes of input a logged tick order holds (frames shared with other workers' logs counted in full). */
function inputBytes(o: TickOrder | ReadOrder): number {
  if (o.t === 'read') return o.frame.byteLength;
  let n = 0;
  if (o.rows !== null) n += o.rows.slots.byteLength + o.rows.values.byteLength + o.rows.tags.byteLength + o.rows.vectors.byteLength + 16 * o.rows.other.length;
  if (o.frameRows !== null) {
    n += o.frameRows.slots.byteLength + o.frameRows.offsets.byteLength;
    for (const f of o.frameRows.frames) n += f.byteLength;
  }
  if (o.results !== null) n += o.results.data.byteLength;
  if (o.stage !== undefined && o.stage !== null) n += o.stage.frame.byteLength;
  return n;
}

/** Rows in frames: two numbers a row copied; the frames themselves by reference (they are never changed). */
function copyFrameRows(r: FrameBatch, copies: CopyBuffers): FrameBatch {
  const rows = Math.max(r.count, 1);
  return { count: r.count, slots: copies.copy(r.slots, rows), offsets: copies.copy(r.offsets, rows), frames: r.frames.slice(), ends: r.ends.slice() };
}

function copyRows(r: RowBatch, copies: CopyBuffers): RowBatch {
  // At least one row of room: a batch handed back by the replayed tick is reused, and growth doubles its room.
  const rows = Math.max(r.count, 1);
  const n = rows * r.width;
  return {
    count: r.count,
    width: r.width,
    slots: copies.copy(r.slots, rows),
    values: copies.copy(r.values, n),
    tags: copies.copy(r.tags, n),
    vectors: copies.copy(r.vectors, r.vectorsLength),
    vectorsLength: r.vectorsLength,
    other: r.other.slice(),
  };
}

function copyResults(r: ResultBatch, copies: CopyBuffers): ResultBatch {
  return { count: r.count, data: copies.copy(r.data, Math.max(r.count, 1) * 3) };
}

/** Spare buffers kept at most (bytes): a 2 s log of four sessions of 12,500 rows each holds about 9 MB of copies. */
const MAX_SPARE_COPY_BYTES = 32 * 1024 * 1024;
/** Smallest buffer handed out, bytes; sizes are powers of two from there. */
const MIN_COPY_BYTES = 1024;

/**
 * The buffers a log copies inputs into, reused. A logged copy lives until a checkpoint covers its order (about 2 s),
 * long enough to outlive two scavenges: each copy a new ArrayBuffer, the log was the largest source of the main
 * thread's old garbage (6 of about 15 MB a second at 50,000 agents), which only a major collection frees. A copy
 * is a view of exactly the length asked for, on a buffer whose size is the next power of two; covered copies come
 * back (release) and are handed out again. A copy never released (a log dropped or forgotten with its worker) is
 * left to the garbage collector.
 */
class CopyBuffers {
  private readonly free = new FreeBuffers<ArrayBuffer>(MAX_SPARE_COPY_BYTES);
  /** Buffers handed out by this pool, so that release() takes back nothing else. */
  private readonly mine = new WeakSet<ArrayBuffer>();

  /** The first `n` elements of `src`, copied into a buffer of the pool. */
  copy<T extends Int32Array | Float64Array | Uint8Array>(src: T, n: number): T {
    const Ctor = src.constructor as new (buffer: ArrayBuffer, offset: number, length: number) => T;
    const view = new Ctor(this.take(n * src.BYTES_PER_ELEMENT), 0, n);
    view.set(src.subarray(0, n));
    return view;
  }

  release(...views: ArrayBufferView[]): void {
    for (const v of views) {
      const b = v.buffer;
      if (!(b instanceof ArrayBuffer) || !this.mine.delete(b)) continue;
      this.free.give(b);
    }
  }

  private take(bytes: number): ArrayBuffer {
    const size = bytes <= MIN_COPY_BYTES ? MIN_COPY_BYTES : 2 ** (32 - Math.clz32(bytes - 1));
    const b = this.free.take(size) ?? new ArrayBuffer(size);
    this.mine.add(b);
    return b;
  }
}

function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
