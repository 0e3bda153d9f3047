// One session's durable journal (docs/durability.md, "Across instances"): the inputs the session applies, sealed
// into one log entry per tick and appended to Redis without the tick waiting, and a session checkpoint (the pool's
// export of every agent, plus the session's clocks) every checkpointMs of session time, which trims the log.

import { serialize } from 'node:v8';
import { encode, type ActionResult, type AgentId, type BlackboardEntry, type LodEntry, type SnapshotMessage } from '../../protocol/index.js';
import { EntryBuilder, Kind } from '../../durable/log.js';
import { snapshotRecordFields } from '../../record/format.js';
import type { DurableStore, WriteOutcome } from '../../durable/store.js';
import type { AgentPool, SessionExport, SpawnEntry } from '../pool/index.js';
import type { DurableTap, Session } from '../sessions/session.js';

/** A checkpoint never waits for more than this many ticks, whatever the session time says. */
export const MAX_TICKS_BETWEEN_CHECKPOINTS = 200;
/** Entries held back while a checkpoint that restarts the log is being written, at most (bytes). */
const MAX_HELD_BYTES = 64 * 1024 * 1024;

/** What a stored checkpoint holds (v8-serialized). */
export interface StoredCheckpoint {
  readonly v: 1;
  readonly session: string;
  readonly mode: 'fixed' | 'lockstep';
  readonly hz: number;
  readonly fields: readonly string[] | null;
  readonly createdAt: string;
  readonly basedOn: number | undefined;
  readonly lastTick: number | undefined;
  readonly lastTime: number | undefined;
  /** The last log entry whose inputs the checkpoint includes. */
  readonly covers: number;
  readonly exported: SessionExport;
}

/** What every journal of an instance shares. */
export interface JournalHost {
  readonly store: DurableStore;
  readonly pool: AgentPool;
  /** Session time between two checkpoints, ms. */
  readonly checkpointMs: number;
  /** Longest a lockstep answer waits for its inputs to be stored, ms (then the store counts as slow). */
  readonly waitMs: number;
  /** The session ended (`reason` from the registry). */
  ended(session: Session, reason: string): void;
  /** The lease is another instance's now: the session must stop here. */
  lost(session: string): void;
  /** A checkpoint could not be made or stored. */
  failed(session: string, err: unknown): void;
  checkpointed(bytes: number): void;
}

const EMPTY_EXPORT: SessionExport = { v: 1, nextOrdinal: 0, world: null, parts: [] };

/** The journal of one session; the session calls it as a DurableTap. */
export class SessionJournal implements DurableTap {
  private readonly host: JournalHost;
  private readonly session: Session;
  private readonly entry = new EntryBuilder();
  /** Id of the last entry sealed. */
  private lastId: number;
  /** Resolves once every entry sealed so far is written (or failed). */
  private lastWrite: Promise<unknown> | null = null;
  private lastWriteDone = true;
  /** Session time of the latest checkpoint requested, and ticks since. */
  private checkpointAt = -Infinity;
  private ticksSince = 0;
  private checkpointing = false;
  /** A write failed or was dropped: the stored log has a hole; the next checkpoint starts it over. */
  private gap = false;
  /** While a log-restarting checkpoint is being made: the entries sealed meanwhile, sent once it is stored. */
  private held: Array<{ id: number; blob: Buffer }> | null = null;
  private heldBytes = 0;
  private stopped = false;

  constructor(host: JournalHost, session: Session, lastId: number) {
    this.host = host;
    this.session = session;
    this.lastId = lastId;
  }

  /** A new session: its empty checkpoint restarts the log (the lease is taken by the caller first). */
  start(): void {
    this.checkpoint(this.session.lastTick, Promise.resolve(EMPTY_EXPORT), true);
  }

  /** A checkpoint now, between ticks (an adopted session, after its replay). */
  checkpointNow(): void {
    this.checkpoint(this.session.lastTick, this.host.pool.exportSession(this.session.id), this.gap);
  }

  /** The store lost the session's data (its lease had to be taken again): the next tick's checkpoint restarts the log. */
  restart(): void {
    this.gap = true;
  }

  spawn(entries: readonly SpawnEntry[]): void {
    if (!this.stopped) this.entry.value(Kind.SPAWN, entries);
  }

  despawn(ids: readonly AgentId[]): void {
    if (!this.stopped) this.entry.value(Kind.DESPAWN, ids);
  }

  bb(set: readonly BlackboardEntry[]): void {
    if (!this.stopped) this.entry.value(Kind.BB, set);
  }

  results(results: readonly ActionResult[]): void {
    if (!this.stopped) this.entry.value(Kind.RESULTS, results);
  }

  lod(entries: readonly LodEntry[]): void {
    if (!this.stopped) this.entry.value(Kind.LOD, entries);
  }

  snapshot(msg: SnapshotMessage, raw: Uint8Array | undefined): void {
    if (this.stopped) return;
    if (raw !== undefined) {
      this.entry.bytesRecord(Kind.SNAPSHOT_FRAME, raw);
      return;
    }
    this.entry.bytesRecord(Kind.SNAPSHOT, encode({ t: 'snapshot', ...snapshotRecordFields(msg) }));
  }

  tick(tick: number, time: number, dt: number, basedOn: number | undefined): void {
    if (this.stopped) return;
    this.entry.value(Kind.TICK, [tick, time, dt, basedOn ?? null]);
    this.seal();
  }

  tickSent(tick: number, time: number): void {
    if (this.stopped) return;
    this.ticksSince++;
    if (this.checkpointing) return;
    if (this.gap || Math.abs(time - this.checkpointAt) * 1000 >= this.host.checkpointMs || this.ticksSince >= MAX_TICKS_BETWEEN_CHECKPOINTS) {
      this.checkpointAt = time;
      this.checkpoint(tick, this.host.pool.exportSession(this.session.id), this.gap);
    }
  }

  settled(): Promise<void> | null {
    const last = this.lastWrite;
    if (last === null || this.lastWriteDone || this.gap || this.host.waitMs === 0 || this.host.store.degraded) return null;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.host.waitMs);
      void last.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  ended(reason: string): void {
    this.stopped = true;
    this.host.ended(this.session, reason);
  }

  /** Hand-over or drain: the inputs not yet sealed are written, then every write is awaited. The lease is the caller's to release. */
  async flush(): Promise<void> {
    if (this.stopped) return;
    this.seal();
    this.stopped = true;
    await this.lastWrite;
  }

  /** Stops writing (the lease went to another instance). */
  stop(): void {
    this.stopped = true;
    this.entry.clear();
    this.held = null;
  }

  private seal(): void {
    if (this.entry.empty) return;
    const blob = this.entry.seal();
    const id = ++this.lastId;
    if (this.held !== null) {
      this.heldBytes += blob.length;
      if (this.heldBytes > MAX_HELD_BYTES) {
        this.held = null; // the checkpoint on its way cannot be followed by an unbroken log: another one is due
        this.gap = true;
      } else this.held.push({ id, blob });
      return;
    }
    if (this.gap) return; // dropped: the next checkpoint restarts the log
    this.send(id, blob);
  }

  private send(id: number, blob: Buffer): Promise<WriteOutcome> {
    const write = this.host.store.append(this.session.id, id, blob);
    this.track(write);
    void write.then((out) => this.outcome(out));
    return write;
  }

  private track(write: Promise<unknown>): void {
    this.lastWrite = write;
    this.lastWriteDone = false;
    void write.then(() => {
      if (this.lastWrite === write) this.lastWriteDone = true;
    });
  }

  private outcome(out: WriteOutcome): void {
    if (out === 'failed') this.gap = true;
    else if (out === 'lost' && !this.stopped) {
      this.stop();
      this.host.lost(this.session.id);
    }
  }

  /**
   * Stores a checkpoint of the state after tick `lastTick` covering every entry sealed so far. `reset`: the
   * stored log has a hole (or none exists yet), so the checkpoint replaces it, and entries sealed meanwhile wait
   * for it.
   */
  private checkpoint(lastTick: number | undefined, exported: Promise<SessionExport>, reset: boolean): void {
    const s = this.session;
    const covers = this.lastId;
    this.checkpointing = true;
    this.ticksSince = 0;
    if (reset) {
      this.gap = false;
      this.held = [];
      this.heldBytes = 0;
    }
    const meta = { v: 1 as const, session: s.id, mode: s.mode, hz: s.hz, fields: s.fields, createdAt: s.createdAt.toISOString(), basedOn: s.basedOn, lastTick, lastTime: s.time, covers };
    const done = exported
      .then(async (exp) => {
        const blob = serialize({ ...meta, exported: exp } satisfies StoredCheckpoint);
        const out = await this.host.store.checkpoint(s.id, blob, covers, reset);
        if (out === 'ok') this.host.checkpointed(blob.length);
        return out;
      })
      .catch((err: unknown) => {
        this.host.failed(s.id, err);
        return 'failed' as const;
      })
      .then(async (out) => {
        this.checkpointing = false;
        if (!reset) {
          if (out === 'lost') this.outcome(out);
          return; // a failed checkpoint leaves the previous one and the log as they were
        }
        const held = this.held;
        this.held = null;
        if (out !== 'ok' || held === null) {
          this.outcome(out === 'ok' ? 'failed' : out);
          this.gap = true;
          return;
        }
        let last: Promise<WriteOutcome> | null = null;
        for (const e of held) last = this.send(e.id, e.blob);
        if (last !== null) await last;
      });
    if (reset) this.track(done);
  }
}
