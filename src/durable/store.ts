// The Redis side of durable sessions (docs/durability.md, "Across instances"): per session a checkpoint blob, a
// stream of input entries written since, an owner lease, and the resume token's index; per instance a channel on
// which other instances ask it to hand a session over. Every write is fenced by the lease (a Lua script checks the
// owner first), issued without being awaited by any tick, and failures only mark the store degraded.

import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

/** The keys of one session. Braces: one hash slot per session, so scripts touching them work on a cluster too. */
export function sessionKeys(session: string): { owner: string; checkpoint: string; log: string } {
  const base = `canopy:{${session}}`;
  return { owner: `${base}:owner`, checkpoint: `${base}:ckpt`, log: `${base}:log` };
}

/** Where a resume token leads: its SHA-256, never the token itself. */
export function tokenKey(token: string): string {
  return `canopy:token:${createHash('sha256').update(token).digest('hex')}`;
}

/** The lease value of a session its owner handed over (released) and nobody took yet. */
const RELEASED = 'released';

/** The channel on which instance `instance` hears hand-over requests. */
export function handoverChannel(instance: string): string {
  return `canopy:handover:${instance}`;
}

// The lease check every write starts with: ours, or nobody's (it expired while Redis was slow or unreachable: taken
// again, since nobody else took it). A lease another instance holds, or one released by a hand-over, refuses.
const FENCE = `
local owner = redis.call('GET', KEYS[1])
if owner == false then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[#ARGV])
elseif owner ~= ARGV[1] then return 0 end`;

// KEYS: owner, log. ARGV: me, entry id, blob, data ttl ms, lease ms. 1 written, 0 the lease is not ours.
const APPEND = `${FENCE}
redis.call('XADD', KEYS[2], ARGV[2] .. '-1', 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1`;

// KEYS: owner, ckpt, log. ARGV: me, blob, covers (last entry id it includes), data ttl ms, reset (1: the log starts
// over), lease ms.
const CHECKPOINT = `${FENCE}
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
if ARGV[5] == '1' then redis.call('DEL', KEYS[3])
elseif redis.call('EXISTS', KEYS[3]) == 1 then redis.call('XTRIM', KEYS[3], 'MINID', (tonumber(ARGV[3]) + 1) .. '-0') end
return 1`;

// KEYS: owner, ckpt, log, token. ARGV: me, lease ms, data ttl ms. 1 renewed, 2 taken again (the key had gone:
// Redis lost its data, or was unreachable for longer than the lease), 0 another instance owns the session now.
const RENEW = `
local owner = redis.call('GET', KEYS[1])
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  if KEYS[4] ~= '' then redis.call('PEXPIRE', KEYS[4], ARGV[3]) end
  return 1
end
if owner then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 2`;

// KEYS: owner. ARGV: me, ttl ms. Marks the lease released if it is ours: the next instance takes it at once (and
// knows it was handed over), while this one's late writes are refused.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], '${RELEASED}', 'PX', ARGV[2]) return 1 end return 0`;

// KEYS: owner. ARGV: me, lease ms. 1 taken (nobody owned it: expired, or new), 2 taken after a hand-over, 0 owned.
const ACQUIRE = `
local owner = redis.call('GET', KEYS[1])
if owner ~= false and owner ~= '${RELEASED}' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if owner == false then return 1 end
return 2`;

// KEYS: owner, ckpt, log. ARGV: me. Deletes the session's data if its lease is ours.
const FORGET = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) end return 0`;

interface Scripts {
  canopyAppend(owner: string, log: string, me: string, id: number, blob: Buffer, ttl: number, lease: number): Promise<number>;
  canopyCheckpoint(owner: string, ckpt: string, log: string, me: string, blob: Buffer, covers: number, ttl: number, reset: string, lease: number): Promise<number>;
  canopyAcquire(owner: string, me: string, lease: number): Promise<number>;
  canopyRenew(owner: string, ckpt: string, log: string, token: string, me: string, lease: number, ttl: number): Promise<number>;
  canopyRelease(owner: string, me: string, ttl: number): Promise<number>;
  canopyForget(owner: string, ckpt: string, log: string, me: string): Promise<number>;
}

export interface StoreOptions {
  /** `redis://host:port/db` (CANOPY_REDIS_URL). */
  readonly url: string;
  /** Owner lease, ms: renewed every third of it; an owner that stops renewing loses its sessions after it. */
  readonly leaseMs: number;
  /** How long a session's data outlives its last renewal (a session nobody resumes), ms. */
  readonly ttlMs: number;
  /** A write unanswered this long makes the store degraded. */
  readonly slowMs: number;
  /** Bytes of writes in flight above which new writes are dropped (durability degrades; ticks go on). */
  readonly maxInflightBytes: number;
  /** The store became degraded (true) or healthy again (false); `why` says why. */
  readonly onHealth?: (degraded: boolean, why: string) => void;
  /** Bytes handed to Redis (entries and checkpoints), for the metrics. */
  readonly onWritten?: (bytes: number, kind: 'log' | 'checkpoint') => void;
  /** Another instance asks this one to hand `session` over. */
  readonly onHandover?: (session: string) => void;
}

/** What a stored session holds: its checkpoint blob and the entries written since, in order. */
export interface StoredSession {
  readonly checkpoint: Buffer | null;
  readonly entries: Array<{ id: number; blob: Buffer }>;
}

/** Outcome of a fenced write: written, refused (the lease is another's), or failed (Redis down, slow, full). */
export type WriteOutcome = 'ok' | 'lost' | 'failed';

/** One instance's connection to the session store. */
export class DurableStore {
  /** This process's id: lease values name it, hand-over requests reach it on its own channel. */
  readonly instance: string = randomUUID();
  private readonly opts: StoreOptions;
  private readonly redis: Redis;
  private readonly scripts: Scripts;
  private readonly sub: Redis;
  private inflight = 0;
  private inflightBytes = 0;
  /** Start times of writes in flight (oldest first is enough: they settle roughly in order). */
  private readonly started = new Map<number, number>();
  private nextWrite = 0;
  private degradedNow = false;
  private readonly watch: NodeJS.Timeout;
  private closed = false;

  constructor(opts: StoreOptions) {
    this.opts = opts;
    const common = {
      // Never queue commands while disconnected: a write that cannot go now fails now (durability degrades).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times: number) => Math.min(100 * times, 1000),
      lazyConnect: false,
    };
    this.redis = new Redis(opts.url, { ...common, connectionName: `canopy-${this.instance}` });
    this.redis.defineCommand('canopyAppend', { numberOfKeys: 2, lua: APPEND });
    this.redis.defineCommand('canopyCheckpoint', { numberOfKeys: 3, lua: CHECKPOINT });
    this.redis.defineCommand('canopyRenew', { numberOfKeys: 4, lua: RENEW });
    this.redis.defineCommand('canopyRelease', { numberOfKeys: 1, lua: RELEASE });
    this.redis.defineCommand('canopyAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    this.redis.defineCommand('canopyForget', { numberOfKeys: 3, lua: FORGET });
    this.scripts = this.redis as unknown as Scripts;
    this.redis.on('error', () => {}); // reported through writes failing and 'close'
    this.redis.on('close', () => {
      if (!this.closed) this.health(true, 'connection to Redis lost');
    });
    this.redis.on('ready', () => {
      if (this.inflight === 0) this.health(false, 'connected to Redis');
    });
    // Subscriptions need a connection of their own; it queues its SUBSCRIBE until connected.
    this.sub = new Redis(opts.url, { retryStrategy: common.retryStrategy, maxRetriesPerRequest: null, connectionName: `canopy-sub-${this.instance}` });
    this.sub.on('error', () => {});
    this.sub.on('message', (_channel: string, session: string) => this.opts.onHandover?.(session));
    void this.sub.subscribe(handoverChannel(this.instance)).catch(() => {});
    this.watch = setInterval(() => this.checkSlow(), Math.max(50, Math.min(1000, opts.slowMs / 4)));
    this.watch.unref();
  }

  /** True while writes fail, lag behind (slowMs) or are being dropped (maxInflightBytes). */
  get degraded(): boolean {
    return this.degradedNow;
  }

  /** Bytes of writes sent and not yet answered. */
  get pendingBytes(): number {
    return this.inflightBytes;
  }

  /** Appends entry `id` (its records, `blob`) to the session's log. Never throws. */
  append(session: string, id: number, blob: Buffer): Promise<WriteOutcome> {
    const k = sessionKeys(session);
    return this.write(blob.length, 'log', () => this.scripts.canopyAppend(k.owner, k.log, this.instance, id, blob, this.opts.ttlMs, this.opts.leaseMs));
  }

  /** Stores a checkpoint covering the log up to entry `covers` (trimmed), or replacing it all (`reset`). Never throws. */
  checkpoint(session: string, blob: Buffer, covers: number, reset: boolean): Promise<WriteOutcome> {
    const k = sessionKeys(session);
    return this.write(blob.length, 'checkpoint', () => this.scripts.canopyCheckpoint(k.owner, k.checkpoint, k.log, this.instance, blob, covers, this.opts.ttlMs, reset ? '1' : '0', this.opts.leaseMs));
  }

  /**
   * Takes the lease of a session nobody owns: 'free' (nobody did: new, or its owner's lease expired), 'handed'
   * (its owner released it), or null: another instance owns it (or Redis is unreachable).
   */
  async acquire(session: string): Promise<'free' | 'handed' | null> {
    try {
      const out = await this.scripts.canopyAcquire(sessionKeys(session).owner, this.instance, this.opts.leaseMs);
      return out === 1 ? 'free' : out === 2 ? 'handed' : null;
    } catch {
      return null;
    }
  }

  /** The instance owning `session` now, or null. */
  async owner(session: string): Promise<string | null> {
    return this.redis.get(sessionKeys(session).owner);
  }

  /** Renews the leases of the sessions this instance owns, in one round trip; per session 1 renewed, 2 taken again, 0 lost, -1 failed. */
  async renew(sessions: ReadonlyArray<{ session: string; token: string | null }>): Promise<number[]> {
    if (sessions.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const { session, token } of sessions) {
      const k = sessionKeys(session);
      (pipeline as unknown as Scripts).canopyRenew(k.owner, k.checkpoint, k.log, token === null ? '' : tokenKey(token), this.instance, this.opts.leaseMs, this.opts.ttlMs);
    }
    try {
      const out = (await pipeline.exec()) ?? [];
      return out.map(([err, value]) => (err === null ? Number(value) : -1));
    } catch {
      return sessions.map(() => -1);
    }
  }

  /** Gives up the lease (after the last writes): another instance may adopt the session at once. */
  async release(session: string): Promise<void> {
    try {
      await this.scripts.canopyRelease(sessionKeys(session).owner, this.instance, this.opts.ttlMs);
    } catch {
      // Unreachable: the lease expires by itself.
    }
  }

  /** Deletes a session that ended for good (bye, grace expired), with its token. */
  async forget(session: string, token: string | null): Promise<void> {
    const k = sessionKeys(session);
    try {
      await this.scripts.canopyForget(k.owner, k.checkpoint, k.log, this.instance);
      if (token !== null) await this.redis.del(tokenKey(token));
    } catch {
      // Unreachable: the data expires after ttlMs.
    }
  }

  /** Points `token` at `session` (and drops the previous token). Fire and forget. */
  setToken(session: string, token: string, previous: string | null): void {
    const pipeline = this.redis.pipeline().set(tokenKey(token), session, 'PX', this.opts.ttlMs);
    if (previous !== null) pipeline.del(tokenKey(previous));
    pipeline.exec().catch(() => {});
  }

  /** The session a resume token leads to, or null. Throws when Redis is unreachable. */
  async lookup(token: string): Promise<string | null> {
    return this.redis.get(tokenKey(token));
  }

  /** Asks the owner of a session to hand it over (PUBLISH on its channel). */
  async requestHandover(owner: string, session: string): Promise<void> {
    await this.redis.publish(handoverChannel(owner), session);
  }

  /** Reads a session's checkpoint and log entries. Throws when Redis is unreachable. */
  async load(session: string): Promise<StoredSession> {
    const k = sessionKeys(session);
    const [ckpt, entries] = await Promise.all([this.redis.getBuffer(k.checkpoint), this.redis.xrangeBuffer(k.log, '-', '+')]);
    return {
      checkpoint: ckpt,
      entries: entries.map(([id, fields]) => ({ id: Number(id.toString().split('-')[0]), blob: fields[1]! })),
    };
  }

  /** Deletes log entries (ids) an adopter will not replay (inputs after the last tick, which the client sends again). */
  async dropEntries(session: string, ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await this.redis.xdel(sessionKeys(session).log, ...ids.map((id) => `${id}-1`)).catch(() => 0);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watch);
    this.sub.disconnect();
    if (this.redis.status !== 'ready') {
      this.redis.disconnect(); // nothing to wait for: quit would wait for a reconnection
      return;
    }
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

  private async write(bytes: number, kind: 'log' | 'checkpoint', run: () => Promise<number>): Promise<WriteOutcome> {
    if (this.inflightBytes + bytes > this.opts.maxInflightBytes) {
      this.health(true, `writes in flight passed ${this.opts.maxInflightBytes} bytes (Redis is slower than the sessions)`);
      return 'failed';
    }
    const n = this.nextWrite++;
    this.inflight++;
    this.inflightBytes += bytes;
    this.started.set(n, performance.now());
    let answered = false;
    try {
      const out = await run();
      answered = true;
      this.opts.onWritten?.(bytes, kind);
      return out === 1 ? 'ok' : 'lost';
    } catch (err) {
      this.health(true, `a write failed: ${err instanceof Error ? err.message : String(err)}`);
      return 'failed';
    } finally {
      this.inflight--;
      this.inflightBytes -= bytes;
      this.started.delete(n);
      if (answered && this.inflight === 0 && this.degradedNow) this.health(false, 'writes caught up');
    }
  }

  private checkSlow(): void {
    const oldest = this.started.values().next();
    if (!oldest.done && performance.now() - oldest.value > this.opts.slowMs) this.health(true, `a write has waited more than ${this.opts.slowMs} ms`);
  }

  private health(degraded: boolean, why: string): void {
    if (degraded === this.degradedNow) return;
    this.degradedNow = degraded;
    this.opts.onHealth?.(degraded, why);
  }
}
