// Durable sessions across instances (CANOPY_REDIS_URL; docs/durability.md, "Across instances"): every WebSocket
// session gets a journal (journal.ts) and an owner lease; a resume token unknown here is looked up in Redis and the
// session adopted (its owner dead: the lease expired) or handed over (its owner alive: asked on its channel to flush
// and release); a drain flushes and releases every session instead of dropping it.

import { deserialize } from 'node:v8';
import type { Logger } from 'pino';
import { parseClientFrame, type ActionResult, type AgentId, type BlackboardEntry, type LodEntry, type SnapshotMessage, type SpawnAgent } from '../../protocol/index.js';
import { DurableStore } from '../../durable/store.js';
import { endsWithTick, Kind, payloadValue, readEntry, type LogRecord } from '../../durable/log.js';
import type { Metrics } from '../metrics.js';
import type { AgentPool } from '../pool/index.js';
import type { Session } from '../sessions/session.js';
import type { SessionRegistry } from '../sessions/registry.js';
import { SessionJournal, type JournalHost, type StoredCheckpoint } from './journal.js';

export interface DurabilityOptions {
  readonly url: string;
  readonly pool: AgentPool;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly leaseMs: number;
  /** Session time between checkpoints, ms. */
  readonly checkpointMs: number;
  /** Longest a lockstep answer waits for its inputs to be stored, ms. */
  readonly waitMs: number;
  /** How long stored sessions outlive their owner (the resume grace period plus a lease). */
  readonly ttlMs: number;
}

/** What adopting a resume token found. */
export type Adoption = { readonly session: Session; readonly how: 'adopted' | 'handed over' } | { readonly unknown: true } | { readonly retry: string };

/** The instance's durable sessions. */
export class Durability {
  readonly store: DurableStore;
  private readonly opts: DurabilityOptions;
  private readonly journals = new Map<string, SessionJournal>();
  private sessions: SessionRegistry | null = null;
  private readonly renewal: NodeJS.Timeout;
  private readonly host: JournalHost;
  /** Sessions being handed over or adopted right now (one at a time each). */
  private readonly busy = new Set<string>();
  /** Sessions whose lease this instance took and which it is restoring. */
  private readonly adopting = new Set<string>();

  constructor(opts: DurabilityOptions) {
    this.opts = opts;
    const metrics = opts.metrics;
    this.store = new DurableStore({
      url: opts.url,
      leaseMs: opts.leaseMs,
      ttlMs: opts.ttlMs,
      slowMs: Math.max(opts.waitMs, 250),
      maxInflightBytes: 256 * 1024 * 1024,
      onHealth: (degraded, why) => {
        metrics.durableDegraded.set(degraded ? 1 : 0);
        if (degraded) {
          metrics.durableDegradations.inc();
          opts.logger.warn({ why }, 'durable sessions degraded: sessions keep ticking, but their state is not being stored in Redis');
        } else opts.logger.info({ why }, 'durable sessions: Redis is keeping up again');
      },
      onWritten: (bytes, kind) => metrics.durableBytes.inc({ kind }, bytes),
      onHandover: (session) => void this.handOver(session),
    });
    this.host = {
      store: this.store,
      pool: opts.pool,
      checkpointMs: opts.checkpointMs,
      waitMs: opts.waitMs,
      lost: (session) => void this.lost(session),
      ended: (session, reason) => this.ended(session, reason),
      failed: (session, err) => opts.logger.warn({ err, session }, 'durable sessions: a checkpoint failed; the next tick tries again'),
      checkpointed: () => metrics.durableCheckpoints.inc(),
    };
    this.renewal = setInterval(() => void this.renew(), Math.max(50, Math.floor(opts.leaseMs / 3)));
    this.renewal.unref();
  }

  /** The registry whose sessions these are (set once, by createServer). */
  bind(sessions: SessionRegistry): void {
    this.sessions = sessions;
  }

  /** A new WebSocket session: lease, token, an empty checkpoint, then its inputs as they come. */
  attach(session: Session): void {
    if (session.transport !== 'ws') return; // HTTP sessions stay on their instance
    const journal = new SessionJournal(this.host, session, 0);
    this.journals.set(session.id, journal);
    session.durable = journal;
    this.store.setToken(session.id, session.resumeToken, null);
    void this.store.acquire(session.id).then((ok) => {
      if (ok !== null) journal.start();
      else journal.restart(); // Redis unreachable: the lease is taken again, and the log restarted, by the renewal
    });
  }

  /** The session's resume token changed (a takeover): the old one leads nowhere now. */
  tokenRotated(session: Session, previous: string): void {
    if (this.journals.has(session.id)) this.store.setToken(session.id, session.resumeToken, previous);
  }

  /**
   * A resume token this instance does not know: the session it names, adopted from Redis. Its owner, if alive,
   * is asked to hand it over; a dead owner's lease is waited out. The session comes back exactly as it was
   * after its last stored tick, its decisions since not sent again. `left` says whether the client that asked has
   * gone meanwhile: the wait for a lease ends then, so no instance takes a session nobody is waiting for (it would
   * take it from the instance the client went to next).
   */
  async adopt(token: string, left: () => boolean): Promise<Adoption> {
    const sessions = this.sessions!;
    let id: string | null;
    try {
      id = await this.store.lookup(token);
    } catch {
      return { retry: 'the session store (Redis) is unreachable' };
    }
    if (id === null) return { unknown: true };
    if (sessions.get(id) !== undefined || this.busy.has(id)) return { retry: 'the session is being moved' };
    this.busy.add(id);
    const started = performance.now();
    try {
      const deadline = started + this.opts.leaseMs + 5000;
      let asked = false;
      let took: 'free' | 'handed' | null;
      while ((took = await this.store.acquire(id)) === null) {
        if (!asked) {
          const owner = await this.store.owner(id).catch(() => null);
          if (owner !== null && owner !== this.store.instance) {
            await this.store.requestHandover(owner, id).catch(() => {});
            asked = true;
          }
        }
        if (left()) return { retry: 'the client left' };
        if (performance.now() > deadline) return { retry: "the session's owner did not release it in time" };
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const how = took === 'handed' ? 'handed over' : 'adopted';
      const leased = performance.now();
      // Renewed from now on, while the restore runs (it may take longer than a lease).
      this.adopting.add(id);
      const session = await this.restore(id);
      if (session === null) return { unknown: true };
      this.opts.metrics.durableAdoptions.inc({ how });
      const now = performance.now();
      this.opts.logger.info(
        { session: id, how, restoreMs: Math.round(now - leased), ms: Math.round(now - started), agents: session.agentCount(), tick: session.lastTick },
        'durable session restored on this instance',
      );
      return { session, how };
    } catch (err) {
      if (err instanceof Unrestorable) {
        // Its trees changed (a deploy with other trees), or its state cannot be read here: it never will be. The
        // client starts a new session (resumed: false) instead of retrying until the stored state expires.
        this.opts.logger.error({ err: err.cause, session: id }, 'durable sessions: a stored session cannot be restored here; it is dropped');
        await this.store.forget(id, token);
        return { unknown: true };
      }
      this.opts.logger.error({ err, session: id }, 'durable sessions: restoring a session failed');
      await this.store.release(id);
      return { retry: 'restoring the session failed' };
    } finally {
      this.busy.delete(id);
      this.adopting.delete(id);
    }
  }

  /** Flushes and releases every session (drain): other instances adopt them as their clients come back. */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.journals.keys()].map((id) => this.release(id)));
  }

  async close(): Promise<void> {
    clearInterval(this.renewal);
    await this.store.close();
  }

  /** The session ended here; bye and an expired grace delete its stored state, a move or a drain keeps it. */
  private ended(session: Session, reason: string): void {
    const journal = this.journals.get(session.id);
    if (journal === undefined) return;
    this.journals.delete(session.id);
    journal.stop();
    if (reason !== 'moved' && reason !== 'shutdown') void this.store.forget(session.id, session.resumeToken);
  }

  private async release(id: string): Promise<void> {
    const journal = this.journals.get(id);
    if (journal === undefined) return;
    await journal.flush();
    // Not ours from here on: a renewal or a late fenced write that finds the lease released must not take it for one
    // another instance took (lost() would tell the client goodbye for good, while it is to resume elsewhere).
    this.journals.delete(id);
    journal.stop();
    await this.store.release(id);
  }

  /** Another instance asks for session `id` (its client resumed there): stop it here, flush, release. */
  private async handOver(id: string): Promise<void> {
    const session = this.sessions?.get(id);
    if (session === undefined || !this.journals.has(id) || this.busy.has(id)) return;
    this.busy.add(id);
    try {
      session.letGo();
      await session.quiesce();
      await this.release(id);
      await this.sessions!.free(session, 'moved');
      this.opts.logger.info({ session: id }, 'durable session handed over to another instance');
    } finally {
      this.busy.delete(id);
    }
  }

  /** The lease of `id` is another instance's: the session continues there. */
  private async lost(id: string): Promise<void> {
    const session = this.sessions?.get(id);
    this.journals.get(id)?.stop();
    if (session === undefined) return;
    this.opts.logger.warn({ session: id }, 'durable sessions: another instance owns this session now; it stops here');
    session.letGo();
    await this.sessions!.free(session, 'moved');
  }

  private async renew(): Promise<void> {
    const ids = new Set([...this.journals.keys(), ...this.adopting]);
    const list = [...ids].map((session) => ({ session, token: this.sessions?.get(session)?.resumeToken ?? null }));
    const out = await this.store.renew(list);
    out.forEach((r, i) => {
      const id = list[i]!.session;
      if (r === 0 && this.journals.has(id)) void this.lost(id);
      else if (r === 2 && this.journals.has(id)) {
        // The lease had gone (Redis restarted empty, or was out of reach longer than a lease): taken again; the
        // token is stored again and the next tick's checkpoint restarts the log.
        this.journals.get(id)!.restart();
        const token = list[i]!.token;
        if (token !== null) this.store.setToken(id, token, null);
      }
    });
  }

  /** Rebuilds session `id` from its checkpoint and log (the lease is ours). Null when nothing is stored. */
  private async restore(id: string): Promise<Session | null> {
    const stored = await this.store.load(id);
    if (stored.checkpoint === null) {
      await this.store.release(id);
      return null;
    }
    let ckpt: StoredCheckpoint;
    let entries: Array<{ id: number; records: LogRecord[] }>;
    try {
      ckpt = deserialize(stored.checkpoint) as StoredCheckpoint;
      if (ckpt.v !== 1) throw new Error(`unsupported durable checkpoint version ${String(ckpt.v)}`);
      entries = stored.entries.filter((e) => e.id > ckpt.covers).map((e) => ({ id: e.id, records: readEntry(e.blob) }));
    } catch (err) {
      throw new Unrestorable(err);
    }
    // Lockstep: inputs after the last stored tick are the client's to send again (it re-sends everything after the
    // last tick it knows ran); they are dropped here and from the log.
    let keep = entries.length;
    if (ckpt.mode === 'lockstep') {
      while (keep > 0 && !endsWithTick(entries[keep - 1]!.records)) keep--;
      await this.store.dropEntries(id, entries.slice(keep).map((e) => e.id));
    }
    const replay = entries.slice(0, keep);
    let session: Session;
    try {
      session = this.sessions!.restore({
        mode: ckpt.mode,
        hz: ckpt.hz,
        fields: ckpt.fields,
        transport: 'ws',
        restore: { id, createdAt: ckpt.createdAt, exported: ckpt.exported, basedOn: ckpt.basedOn, lastTick: ckpt.lastTick, lastTime: ckpt.lastTime },
      });
    } catch (err) {
      throw new Unrestorable(err); // a tree missing, or of another version than the checkpoint's
    }
    try {
      await session.replay(async (s) => {
        for (const e of replay) for (const r of e.records) await applyRecord(s, r);
      });
    } catch (err) {
      await this.sessions!.free(session, 'moved');
      throw err;
    }
    const lastId = replay.length > 0 ? replay[replay.length - 1]!.id : ckpt.covers;
    const journal = new SessionJournal(this.host, session, Math.max(lastId, ...entries.map((e) => e.id), ckpt.covers));
    this.journals.set(id, journal);
    session.durable = journal;
    journal.checkpointNow();
    return session;
  }
}

/** A stored session this instance can never restore (its trees differ, its state is unreadable). */
class Unrestorable extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'Unrestorable';
  }
}

/** Applies one stored input to a session being restored, through the same paths live inputs take. */
async function applyRecord(s: Session, r: LogRecord): Promise<void> {
  switch (r.kind) {
    case Kind.SPAWN:
      s.spawn(payloadValue<SpawnAgent[]>(r));
      return;
    case Kind.DESPAWN:
      s.despawn(payloadValue<AgentId[]>(r));
      return;
    case Kind.BB:
      s.setBlackboard(payloadValue<BlackboardEntry[]>(r));
      return;
    case Kind.RESULTS:
      s.results(payloadValue<ActionResult[]>(r));
      return;
    case Kind.LOD:
      s.setLod(payloadValue<LodEntry[]>(r));
      return;
    case Kind.SNAPSHOT_FRAME:
    case Kind.SNAPSHOT: {
      const parsed = parseClientFrame(r.payload, Number.MAX_SAFE_INTEGER, { fieldCount: s.fields?.length ?? 0, mode: s.mode, packRows: true });
      if (parsed.ok && parsed.msg.t === 'snapshot') s.applySnapshot(parsed.msg as SnapshotMessage);
      return;
    }
    case Kind.TICK: {
      const [tick, time, dt] = payloadValue<[number, number, number, number | null]>(r);
      await s.replayTick(tick, time, dt);
      return;
    }
    default:
      return;
  }
}
