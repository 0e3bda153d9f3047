// One session: a game server's agents, world state and clock, whatever carries its messages (a
// WebSocket connection, or HTTP requests in lockstep mode). Messages arrive here already validated.

import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import {
  ErrorCode,
  Msg,
  hasContent,
  isPackedRows,
  resultCount,
  type ActionResult,
  type AgentId,
  type BlackboardEntry,
  type DecisionsFields,
  type EntryError,
  type LodEntry,
  type Mode,
  type ResultList,
  type SnapshotMessage,
  type SpawnAgent,
  type TreesMessage,
} from '../../protocol/index.js';
import { TickStats } from './tickStats.js';
import { FixedClock, nextPhaseMs, type ClockTick } from './clock.js';
import type { Metrics, Observations, Tally } from '../metrics.js';
import { frameFields, type AgentPool, type Decisions, type EntryError as PoolEntryError, type FrameTick, type SessionExport, type SpawnEntry } from '../pool/index.js';

/** A fixed-mode session with nothing to say still sends an empty `decisions` this often. */
export const HEARTBEAT_MS = 1000;

/** Where a session's unsolicited output goes: the connection it is attached to. */
export interface SessionOutput {
  /** Fixed-mode decisions (the connection may hold and merge them for a slow reader). */
  decisions(d: DecisionsFields): void;
  /** Another connection took the session over (resume): this one must say goodbye and close. */
  replaced(): void;
  /** Something went wrong beside the session's messages (its recording stopped): an `error` to the client. */
  notice?(code: ErrorCode, message: string): void;
  /** A tree changed (a reload): the `trees` message (docs/reload.md). */
  trees?(msg: TreesNotice): void;
}

/** The `trees` message's fields: the tree, its new version, and what the reload did to this session's agents. */
export type TreesNotice = Omit<TreesMessage, 't'>;

/** The inputs a session applies, in the order it applies them: what the recorder and the durable journal both log. */
export interface InputTap {
  spawn(entries: readonly SpawnEntry[]): void;
  despawn(ids: readonly AgentId[]): void;
  bb(set: readonly BlackboardEntry[]): void;
  results(results: readonly ActionResult[]): void;
  /** Level of detail: new tick intervals (a `lod` message), in force from the next tick. */
  lod(entries: readonly LodEntry[]): void;
  /** `raw`: the frame as received, when it came over the WebSocket. */
  snapshot(msg: SnapshotMessage, raw: Uint8Array | undefined): void;
  /** A tick starts now: inputs before this call take effect in it, inputs after it in the next one. */
  tick(tick: number, time: number, dt: number, basedOn: number | undefined): void;
}

/**
 * Sees what a session hands the pool and what each tick decided, in that order (the flight recorder,
 * src/service/recording/recorder.ts). Called synchronously; must not throw and must not wait.
 */
export interface SessionTap extends InputTap {
  /** The tick's decisions; returns the frame when it encoded one, so a lockstep connection sends those bytes (encoded once). */
  decisions(d: DecisionsFields): Buffer | undefined;
  ended(): void;
}

/**
 * Durable sessions (src/service/durable): sees the same inputs as the flight recorder, in the same order, plus
 * the moment each tick order has gone to the pool (when a checkpoint can be taken without holding the tick).
 * Called synchronously; must not throw and must not wait.
 */
export interface DurableTap extends InputTap {
  /** The tick order of `tick` just went to the pool (its replies not yet in). */
  tickSent(tick: number, time: number): void;
  /**
   * Lockstep: resolves once the inputs of the ticks run so far are stored (write-ahead: a decision never
   * reaches the client before the inputs it came from can be replayed elsewhere), or at once while the store
   * is degraded, or after a bounded wait. Null: nothing to wait for.
   */
  settled(): Promise<void> | null;
  /** The session ends here: `reason` says whether its stored state goes too (bye, grace expired) or stays (hand-over, drain). */
  ended(reason: string): void;
}

/** A session rebuilt from a durable checkpoint (another instance's): its pool state and clocks. */
export interface SessionRestore {
  readonly id: string;
  readonly createdAt: string;
  readonly exported: SessionExport;
  readonly basedOn: number | undefined;
  readonly lastTick: number | undefined;
  readonly lastTime: number | undefined;
}

/** Lockstep decisions kept for a client that re-sends the snapshot of a tick whose answer it lost (resume). */
const KEPT_DECISIONS = 8;

/** What every session shares: the pool, metrics, logger and limits. */
export interface SessionHost {
  readonly pool: AgentPool;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly maxAgents: number;
  /** Called for every new session (the recordings start `CANOPY_RECORD=all` recording here). */
  readonly sessionCreated?: (session: Session) => void;
  /** Called before `agents` are spawned (V8's helper threads yield to the ticks after a large spawn: spawn-priority.ts). */
  readonly spawning?: (agents: number) => void;
}

export interface SessionOptions {
  readonly mode: Mode;
  /** Ticks per second in fixed mode (ignored in lockstep). */
  readonly hz: number;
  /** Observation field names for positional rows, or null. */
  readonly fields: readonly string[] | null;
  readonly transport: 'ws' | 'http';
  /** Rebuild a session from a durable checkpoint instead of opening an empty one. */
  readonly restore?: SessionRestore;
}

/** What applying a snapshot (or a `result` message) refused, entry by entry. */
export interface ApplyOutcome {
  readonly errors: readonly EntryError[];
}

/** A lockstep tick's answer: its decisions, the snapshot's refused entries, and the decisions frame when the recorder already encoded it. */
export interface LockstepOutcome {
  readonly decisions: DecisionsFields;
  readonly errors: EntryError[];
  readonly encoded?: Buffer;
}

/** A lockstep snapshot was refused as a whole (it is not ticked). */
export class SnapshotRefused extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * One session. Fixed mode: a {@link FixedClock} ticks every agent at `hz` while a client is attached
 * (the clock pauses while the session waits in its resume grace period, so no action is issued to
 * a game server that cannot hear it). Lockstep mode: {@link lockstep} applies a snapshot and ticks
 * once; concurrent calls run one after another in call order.
 */
export class Session {
  readonly id: string;
  readonly mode: Mode;
  /** Ticks per second; 0 in lockstep mode. */
  readonly hz: number;
  readonly fields: readonly string[] | null;
  readonly transport: 'ws' | 'http';
  readonly createdAt: Date;
  /** Totals the inspector samples for its charts. */
  readonly stats = new TickStats();
  /** Token to take the session over from a new connection; replaced at each takeover. */
  resumeToken: string = newToken();
  /** The latest snapshot tick applied (undefined before the first). */
  basedOn: number | undefined;
  /** Last tick run: the service tick (fixed) or the last snapshot tick ticked (lockstep). */
  lastTick: number | undefined;
  /** Game time of the last lockstep tick. */
  private lastTime: number | undefined;
  private readonly host: SessionHost;
  private readonly clock: FixedClock | undefined;
  private output: SessionOutput | null = null;
  private lastDecisionsAt = performance.now();
  /** Lockstep ticks run one after another: each waits for this. */
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The flight recorder while the session is recorded. */
  recorder: SessionTap | null = null;
  /** Durable sessions: the journal writing this session's checkpoints and inputs to the shared store. */
  durable: DurableTap | null = null;
  /** True while the session re-runs stored inputs after a restore: nothing is logged again, decisions are kept, not sent. */
  private replaying = false;
  /** Lockstep: the latest ticks' decisions, for a resumed client re-sending a snapshot whose answer it lost. */
  private readonly kept: DecisionsFields[] = [];
  /** Set by a resume until the next tick runs: a re-sent snapshot of a tick already run is answered from `kept`. */
  private answerKept = false;
  /** True while a frame is applied and ticked in one message: inputs are recorded after it (record). */
  private holdingRecords = false;
  /** The records held meanwhile; null while none came (the usual frame: nothing allocated). */
  private heldRecords: Array<() => void> | null = null;
  /** Fixed mode: the snapshot frame its worker is reading (applyFrame) until it answers; the next tick waits for it. */
  private reading: Promise<unknown> | null = null;
  /** Inspector control (breakpoints, src/inspector/control.ts): may hold a lockstep tick's decisions until released. */
  hold: ((tick: number) => Promise<void> | null) | null = null;
  /** canopy_tick_duration_seconds and canopy_ticks_total of this session's mode, counted on every tick. */
  private readonly tickDurations: Observations;
  private readonly tickCount: Tally;

  constructor(host: SessionHost, options: SessionOptions) {
    this.host = host;
    this.mode = options.mode;
    this.tickDurations = host.metrics.tickDuration.of(options.mode);
    this.tickCount = host.metrics.ticks.tally(options.mode);
    this.hz = options.mode === 'fixed' ? options.hz : 0;
    this.fields = options.fields;
    this.transport = options.transport;
    const restore = options.restore;
    if (restore === undefined) {
      this.id = randomUUID();
      this.createdAt = new Date();
      host.pool.createSession(this.id, { fields: options.fields, maxAgents: host.maxAgents, clocked: options.mode === 'fixed' });
    } else {
      this.id = restore.id;
      this.createdAt = new Date(restore.createdAt);
      host.pool.importSession(this.id, { fields: options.fields, maxAgents: host.maxAgents }, restore.exported);
      this.basedOn = restore.basedOn;
      this.lastTick = restore.lastTick;
      this.lastTime = restore.lastTime;
    }
    if (options.mode === 'fixed') {
      this.clock = new FixedClock(options.hz, {
        tick: (t) => this.fixedTick(t),
        idle: () => this.heartbeat(),
        idleAt: () => this.lastDecisionsAt + HEARTBEAT_MS,
      }, { phaseMs: nextPhaseMs(options.hz) });
      if (restore?.lastTick !== undefined) this.clock.continueFrom(restore.lastTick);
    }
  }

  /** Game time of the last lockstep tick (undefined before the first). */
  get time(): number | undefined {
    return this.lastTime;
  }

  /**
   * Restore: re-runs stored inputs through the same paths as live ones, logging nothing again and sending
   * nothing (the decisions already went out from the previous owner; lockstep keeps the last few for a client
   * that re-sends a snapshot whose answer it lost).
   */
  async replay(run: (session: Session) => Promise<void>): Promise<void> {
    this.replaying = true;
    try {
      await run(this);
    } finally {
      this.replaying = false;
    }
    if (this.lastTick !== undefined) this.clock?.continueFrom(this.lastTick);
  }

  /** The session moves to another instance: the attached client is told goodbye (it resumes there). */
  letGo(): void {
    const output = this.output;
    this.output = null;
    output?.replaced();
  }

  /**
   * A client resumed the session (another connection, perhaps another instance): until the next tick runs, a
   * snapshot of a tick already run is answered with that tick's decisions instead of being applied again.
   */
  resumed(): void {
    this.answerKept = true;
  }

  /** Restore: runs one stored tick (its inputs were applied before). Lockstep ticks keep the game time. */
  async replayTick(tick: number, time: number, dt: number): Promise<void> {
    if (this.mode === 'lockstep') this.lastTime = time;
    await this.runTick(tick, time, dt);
  }

  /** True while a client is attached. */
  get connected(): boolean {
    return this.output !== null;
  }

  /** True once the session ended (bye, grace expired, DELETE, shutdown). */
  get ended(): boolean {
    return this.closed;
  }

  /** True if `output` is the connection attached now. */
  isAttachedTo(output: SessionOutput): boolean {
    return this.output === output;
  }

  /**
   * Attaches a connection; a fixed-mode clock (re)starts. A connection still attached (a takeover
   * by resume before the old socket was seen to drop) is told it was replaced.
   */
  attach(output: SessionOutput): void {
    if (this.closed) return;
    const previous = this.output;
    this.output = output;
    this.lastDecisionsAt = performance.now();
    if (previous !== null && previous !== output) previous.replaced();
    this.clock?.start();
  }

  /**
   * Detaches `output` if it is the attached connection: nothing more is sent, and the fixed clock
   * pauses after the tick in flight (tree time does not advance while nobody listens).
   */
  async detach(output: SessionOutput): Promise<void> {
    if (this.output !== output) return;
    this.output = null;
    await this.clock?.stop();
  }

  /** Stops ticking: resolves after the tick in flight (fixed) or the queued lockstep ticks. */
  async quiesce(): Promise<void> {
    await this.clock?.stop();
    await this.tail.catch(() => undefined);
  }

  /** Ends the session and frees its agents (after the tick in flight). Idempotent. */
  async end(reason = 'freed'): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.output = null;
    await this.quiesce();
    this.recorder?.ended();
    this.durable?.ended(reason);
    this.host.pool.destroySession(this.id);
  }

  /**
   * Creates agents; each entry succeeds or fails alone. `refused` are entries validation already dropped; `more`:
   * agents of the same spawn still to come in later calls (AgentPool.spawn).
   */
  spawn(agents: readonly SpawnAgent[], refused: readonly EntryError[] = [], more = 0): { ids: AgentId[]; errors: EntryError[] } {
    const entries = agents.map(spawnEntry);
    this.record(() => {
      this.recorder?.spawn(entries);
      this.durable?.spawn(entries);
    });
    this.host.spawning?.(entries.length);
    const out = this.host.pool.spawn(this.id, entries, more);
    return { ids: out.ids, errors: [...refused, ...entryErrors(out.errors)] };
  }

  /**
   * Records an input the session applies now (recording, durable journal), or, while a frame is being applied and
   * ticked in one message (lockstepFrame), right after that frame's records: the input reaches the pool after the
   * frame's tick was sent, so it applies at the next tick, and a replay must read it after that tick too.
   */
  private record(write: () => void): void {
    if (this.replaying) return;
    if (this.holdingRecords) (this.heldRecords ??= []).push(write);
    else write();
  }

  /** Frees agents; unknown ids come back as E_UNKNOWN_AGENT. */
  despawn(ids: readonly AgentId[], refused: readonly EntryError[] = []): { ids: AgentId[]; errors: EntryError[] } {
    this.record(() => {
      this.recorder?.despawn(ids);
      this.durable?.despawn(ids);
    });
    const out = this.host.pool.despawn(this.id, ids);
    return { ids: out.ids, errors: [...refused, ...entryErrors(out.errors)] };
  }

  /** Blackboard writes, applied at the next tick. */
  setBlackboard(set: readonly BlackboardEntry[]): EntryError[] {
    if (set.length === 0) return [];
    this.record(() => {
      this.recorder?.bb(set);
      this.durable?.bb(set);
    });
    return entryErrors(this.host.pool.setBlackboard(this.id, set as ReadonlyArray<readonly [AgentId, Record<string, unknown>]>));
  }

  /** Level of detail: new tick intervals `[id, every]`, in force from the next tick. */
  setLod(entries: readonly LodEntry[]): EntryError[] {
    if (entries.length === 0) return [];
    this.record(() => {
      this.recorder?.lod(entries);
      this.durable?.lod(entries);
    });
    return entryErrors(this.host.pool.lod(this.id, entries));
  }

  /** Action results; a result for a seq no longer running is ignored by the agent. */
  results(results: readonly ActionResult[]): EntryError[] {
    if (results.length === 0) return [];
    this.record(() => {
      this.recorder?.results(results);
      this.durable?.results(results);
    });
    return this.applyResults(results);
  }

  private applyResults(results: ResultList): EntryError[] {
    if (resultCount(results) === 0) return [];
    return entryErrors(this.host.pool.results(this.id, results));
  }

  /**
   * Applies a snapshot: world, observations, results; `basedOn` becomes its tick. In fixed mode the
   * next clock tick sees it. Observations for unknown agents are ignored and counted. `raw`: the frame
   * as received (recorded as is when the session is recorded).
   */
  applySnapshot(msg: SnapshotMessage, raw?: Uint8Array): EntryError[] {
    const pool = this.host.pool;
    if (!this.replaying) {
      this.recorder?.snapshot(msg, raw);
      this.durable?.snapshot(msg, raw);
    }
    if (msg.world !== undefined) pool.setWorld(this.id, msg.world);
    if (this.mode === 'fixed' && msg.agents !== undefined && !this.replaying) this.host.metrics.fixedSnapshotPath.main_thread.inc();
    if (msg.agents !== undefined || msg.full === true) {
      const { unknown } = pool.observe(
        this.id,
        (msg.agents ?? []) as Parameters<AgentPool['observe']>[1],
        msg.full === true,
      );
      if (unknown > 0) this.host.metrics.unknownRows.inc(unknown);
    }
    const errors = msg.results !== undefined ? this.applyResults(msg.results) : [];
    this.basedOn = msg.tick;
    return errors;
  }

  /**
   * Fixed mode, a snapshot whose rows the main thread did not read (docs/capacity.md, *Round twenty-six*): the worker
   * holding the session's agents checks the rows and reads them as the frame arrives (AgentPool.readFrame); then the
   * rest of the frame applies as applySnapshot applies it, and `basedOn` becomes its tick. The next tick waits for the
   * worker's answer, so it sees the frame and says so in `basedOn`. Resolves with the errors of the frame's results,
   * or null when the rows fail the check: nothing of the frame applied, `refused` has read it the ordinary way (before
   * any tick). Null at once where this does not apply (a recorded or durable session, whose logs keep the inputs in
   * arrival order; a full snapshot; a replay; where the pool cannot). The caller sends the session nothing else
   * meanwhile.
   */
  applyFrame(msg: SnapshotMessage, rows: { start: number; count: number; width: number }, raw: Uint8Array, refused: () => void): Promise<EntryError[] | null> | null {
    if (this.mode !== 'fixed' || this.closed || this.replaying || this.recorder !== null || this.durable !== null || msg.full === true) return null;
    const pending = this.host.pool.readFrame(this.id, raw, rows.start, rows.count, rows.width);
    if (pending === null) return null;
    const run = pending.then((read) => {
      if (this.closed) return null;
      if (read === null) {
        refused();
        return null;
      }
      this.host.metrics.fixedSnapshotPath.worker.inc();
      if (read.unknown > 0) this.host.metrics.unknownRows.inc(read.unknown);
      if (msg.world !== undefined) this.host.pool.setWorld(this.id, msg.world);
      const errors = msg.results !== undefined ? this.applyResults(msg.results) : [];
      this.basedOn = msg.tick;
      return errors;
    });
    const reading = run.catch(() => undefined);
    this.reading = reading;
    void reading.then(() => {
      if (this.reading === reading) this.reading = null;
    });
    return run;
  }

  /**
   * Lockstep: applies the snapshot and ticks every agent exactly once at tree time `msg.time`,
   * after every earlier call has finished. Resolves with the decisions to send (`tick` = the
   * snapshot's tick), and the per-entry errors of the snapshot.
   * @throws {SnapshotRefused} when `time` is missing or goes backwards (nothing is applied).
   */
  lockstep(msg: SnapshotMessage, raw?: Uint8Array): Promise<LockstepOutcome> {
    const run = this.tail.then(() => this.lockstepNow(msg, raw));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async lockstepNow(msg: SnapshotMessage, raw: Uint8Array | undefined): Promise<LockstepOutcome> {
    if (this.closed) throw new SnapshotRefused(ErrorCode.E_BAD_FIELD, 'the session has ended');
    // A resumed client re-sending the snapshot of a tick that already ran (its answer was lost with the old
    // connection): the tick's decisions again, nothing applied twice.
    if (this.answerKept && this.lastTick !== undefined && msg.tick <= this.lastTick) {
      const kept = this.kept.find((d) => d.tick === msg.tick);
      if (kept !== undefined) return { decisions: kept, errors: [] };
    }
    const time = msg.time;
    if (time === undefined) {
      throw new SnapshotRefused(ErrorCode.E_BAD_FIELD, Msg.badField('snapshot.time', 'expected a number (required in lockstep mode)'));
    }
    if (this.lastTime !== undefined && time < this.lastTime) {
      throw new SnapshotRefused(
        ErrorCode.E_BAD_FIELD,
        Msg.badField('snapshot.time', `must not go backwards: the previous snapshot had time ${this.lastTime}, this one ${time}`),
      );
    }
    if (!this.replaying) this.host.metrics.snapshotPath[isPackedRows(msg.agents) && msg.agents.kind === 'staged' ? 'staged' : 'main_thread'].inc();
    const errors = this.applySnapshot(msg, raw);
    const dt = this.lastTime === undefined ? 0 : time - this.lastTime;
    this.lastTime = time;
    this.answerKept = false;
    const { decisions, encoded } = await this.runTick(msg.tick, time, dt);
    await this.durable?.settled();
    await this.hold?.(msg.tick);
    return encoded === undefined ? { decisions, errors } : { decisions, errors, encoded };
  }

  /**
   * Lockstep with the snapshot's rows unread (docs/capacity.md, *Round sixteen*): where the pool can, the frame is
   * applied and ticked in one message to the worker holding the session's agents (AgentPool.tickFrame). Resolves
   * with null, nothing of the frame applied, where it cannot or the rows fail the protocol's check, and for anything
   * but a plain next tick (a resent tick, time missing or going backwards, a full snapshot): the caller reads the
   * frame the ordinary way and calls lockstep(), which answers as it always did. `msg`: the snapshot without its
   * rows; `rows`: where they are in `raw`, and their width.
   */
  lockstepFrame(msg: SnapshotMessage, rows: { start: number; count: number; width: number }, raw: Uint8Array): Promise<LockstepOutcome | null> {
    const run = this.tail.then(() => this.lockstepFrameNow(msg, rows, raw));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async lockstepFrameNow(msg: SnapshotMessage, rows: { start: number; count: number; width: number }, raw: Uint8Array): Promise<LockstepOutcome | null> {
    const time = msg.time;
    if (this.closed || this.replaying || msg.full === true || time === undefined) return null;
    if (this.answerKept && this.lastTick !== undefined && msg.tick <= this.lastTick) return null;
    if (this.lastTime !== undefined && time < this.lastTime) return null;
    const dt = this.lastTime === undefined ? 0 : time - this.lastTime;
    const started = performance.now();
    // basedOn is the snapshot's tick, as applySnapshot makes it before a lockstep tick.
    const pending = this.host.pool.tickFrame(this.id, msg.tick, time, dt, msg.tick, { bytes: raw, start: rows.start, count: rows.count, width: rows.width, world: msg.world, results: msg.results });
    if (pending === null) return null;
    this.holdingRecords = true;
    let out: FrameTick | null;
    try {
      out = await pending;
    } catch (err) {
      // The tick failed (a worker crashed): the frame was applied as far as the ordinary path applies it then.
      this.frameApplied(msg, raw, time, dt);
      this.releaseRecords();
      this.tickDurations.observe((performance.now() - started) / 1000);
      throw err;
    }
    if (out !== null) this.frameApplied(msg, raw, time, dt);
    this.releaseRecords();
    if (out === null) return null;
    this.host.metrics.snapshotPath.one_message.inc();
    if (out.unknown > 0) this.host.metrics.unknownRows.inc(out.unknown);
    const { decisions, encoded } = this.ticked(msg.tick, msg.tick, out.decisions, started);
    await this.durable?.settled();
    await this.hold?.(msg.tick);
    const errors = entryErrors(out.errors);
    return encoded === undefined ? { decisions, errors } : { decisions, errors, encoded };
  }

  /** Records the inputs held while a frame was in flight (record), in the order they came. */
  private releaseRecords(): void {
    const held = this.heldRecords;
    this.holdingRecords = false;
    this.heldRecords = null;
    if (held !== null) for (const write of held) write();
  }

  /** A lockstep frame the pool applied and ticked (tickFrame): recorded, and the session's clock moved, as lockstepNow does. */
  private frameApplied(msg: SnapshotMessage, raw: Uint8Array, time: number, dt: number): void {
    this.recorder?.snapshot(msg, raw);
    this.durable?.snapshot(msg, raw);
    this.basedOn = msg.tick;
    this.lastTime = time;
    this.answerKept = false;
    this.recorder?.tick(msg.tick, time, dt, msg.tick);
    this.durable?.tick(msg.tick, time, dt, msg.tick);
    this.durable?.tickSent(msg.tick, time);
  }

  private async fixedTick(t: ClockTick): Promise<void> {
    const metrics = this.host.metrics;
    if (t.missed > 0) metrics.missedTicks.inc(t.missed);
    this.stats.scheduled(t.lateMs, t.missed);
    metrics.tickLateness.observe(t.lateMs / 1000);
    let d: DecisionsFields;
    try {
      d = (await this.runTick(t.n, t.time, t.dt)).decisions;
    } catch (err) {
      // A worker crashed: its agents are reported as E_INTERNAL in the next tick's decisions.
      this.host.logger.warn({ err, session: this.id, tick: t.n }, 'tick failed');
      return;
    }
    const output = this.output;
    if (output === null) return; // detached meanwhile: decisions made now are not replayed
    if (hasContent(d)) this.emit(output, d);
    else this.heartbeat();
  }

  /** Tells the attached client about a problem beside its messages (an `error` frame). */
  notice(code: ErrorCode, message: string): void {
    this.output?.notice?.(code, message);
  }

  /** Tells the attached client that a tree changed (a `trees` message). */
  treesChanged(msg: TreesNotice): void {
    this.output?.trees?.(msg);
  }

  /** Sends an empty `decisions` when nothing was sent for a second (fixed mode). */
  private heartbeat(): void {
    const output = this.output;
    if (output === null) return;
    // 1 ms of slack: timers may fire a fraction of a millisecond early.
    if (performance.now() - this.lastDecisionsAt < HEARTBEAT_MS - 1) return;
    // Before the first tick there is no service tick yet: the heartbeat says tick 0.
    this.emit(output, { tick: this.lastTick ?? 0, basedOn: this.basedOn });
  }

  private emit(output: SessionOutput, d: DecisionsFields): void {
    this.lastDecisionsAt = performance.now();
    output.decisions(d);
  }

  /** Ticks every agent once; counts the tick and what it decided. */
  private async runTick(tick: number, time: number, dt: number): Promise<{ decisions: DecisionsFields; encoded: Buffer | undefined }> {
    if (this.reading !== null) await this.reading;
    const basedOn = this.basedOn;
    const started = performance.now();
    let d: Decisions;
    if (!this.replaying) {
      this.recorder?.tick(tick, time, dt, basedOn);
      this.durable?.tick(tick, time, dt, basedOn);
    }
    try {
      const pending = this.host.pool.tick(this.id, tick, time, dt, basedOn ?? -1);
      if (!this.replaying) this.durable?.tickSent(tick, time);
      d = await pending;
    } catch (err) {
      this.tickDurations.observe((performance.now() - started) / 1000);
      throw err;
    }
    return this.ticked(tick, basedOn, d, started);
  }

  /** A tick the pool answered: counted, what it decided counted, the decisions kept (lockstep) and recorded. */
  private ticked(tick: number, basedOn: number | undefined, d: Decisions, started: number): { decisions: DecisionsFields; encoded: Buffer | undefined } {
    const metrics = this.host.metrics;
    this.tickDurations.observe((performance.now() - started) / 1000);
    this.lastTick = tick;
    this.stats.ticked(d, performance.now() - started);
    this.tickCount.inc();
    const actions = d.encodedActions.count;
    if (actions > 0) metrics.actions.inc(actions);
    if (d.encodedCancels.count > 0) metrics.cancels.inc(d.encodedCancels.count);
    for (const e of d.errors) metrics.errors.inc({ code: e[1] });
    // Spliced into the frame as they are: the lists are not decoded on the session's path.
    const decisions = frameFields(d, tick, basedOn);
    if (this.mode === 'lockstep') {
      if (this.kept.push(decisions) > KEPT_DECISIONS) this.kept.shift();
    }
    return { decisions, encoded: this.replaying ? undefined : this.recorder?.decisions(decisions) };
  }

  /** Agents the session has now. */
  agentCount(): number {
    return this.host.pool.agentCount(this.id);
  }

  /** A plain description for `GET /v1/sessions` (never the resume token). */
  describe(): Record<string, unknown> {
    return {
      session: this.id,
      mode: this.mode,
      hz: this.hz,
      transport: this.transport,
      connected: this.connected,
      agents: this.host.pool.agentCount(this.id),
      tick: this.lastTick ?? null,
      basedOn: this.basedOn ?? null,
      fields: this.fields,
      createdAt: this.createdAt.toISOString(),
    };
  }
}

/** An unguessable resume token: 192 random bits. */
function newToken(): string {
  return randomBytes(24).toString('base64url');
}

/** Replaces the token after a takeover, so a token works once. */
export function rotateToken(session: Session): string {
  session.resumeToken = newToken();
  return session.resumeToken;
}

/** The pool's entry errors in protocol form (no `id` when it could not be read). */
function entryErrors(errors: readonly PoolEntryError[]): EntryError[] {
  return errors.map((e) => (e.id === null ? { code: e.code, message: e.message } : { id: e.id, code: e.code, message: e.message }));
}

/**
 * A validated spawn entry as the pool, the recorder and the journal take it: only the keys it sets, in the order
 * id, tree, label, seed, bb, reload, every (a recording's bytes depend on it). Built key by key: spreading a
 * temporary object per optional key cost the main thread about 50 ns an agent in a large spawn.
 */
function spawnEntry(a: SpawnAgent): SpawnEntry {
  const e: SpawnEntry = { id: a.id, tree: a.tree };
  if (a.label !== undefined) e.label = a.label;
  if (a.seed !== undefined) e.seed = a.seed;
  if (a.bb !== undefined) e.bb = a.bb as Record<string, unknown>;
  if (a.reload !== undefined) e.reload = a.reload;
  if (a.every !== undefined && a.every !== 1) e.every = a.every;
  return e;
}
