// Every live session of the service, by id and by resume token, with the timers that free
// sessions nobody comes back for: a dropped WebSocket session, or an idle HTTP session.

import { timingSafeEqual } from 'node:crypto';
import { rotateToken, Session, type SessionHost, type SessionOptions } from './session.js';

/** `free`'s reason for the start-up warm-up's own sessions (warmup.ts): logged at debug, not info. */
export const WARMUP_REASON = 'start-up warm-up';

/** The registry. Freed sessions leave both maps at once. */
export class SessionRegistry {
  private readonly byId = new Map<string, Session>();
  private readonly timers = new Map<Session, NodeJS.Timeout>();
  private readonly host: SessionHost;
  private readonly graceMs: number;

  constructor(host: SessionHost, graceMs: number) {
    this.host = host;
    this.graceMs = graceMs;
  }

  /** Opens a new session. */
  create(options: SessionOptions): Session {
    const session = new Session(this.host, options);
    this.byId.set(session.id, session);
    this.host.sessionCreated?.(session);
    return session;
  }

  /** A session rebuilt from another instance's stored state (durable sessions); `options.restore` is required. */
  restore(options: SessionOptions): Session {
    const session = new Session(this.host, options);
    this.byId.set(session.id, session);
    return session;
  }

  get(id: string): Session | undefined {
    return this.byId.get(id);
  }

  list(): Session[] {
    return [...this.byId.values()];
  }

  get size(): number {
    return this.byId.size;
  }

  /**
   * The WebSocket session `token` resumes, with a fresh token, its grace timer cancelled; undefined
   * when no live session has that token. Comparison takes the same time whatever the token.
   */
  takeOver(token: string): Session | undefined {
    const wanted = Buffer.from(token);
    for (const session of this.byId.values()) {
      if (session.transport !== 'ws' || session.ended) continue;
      const have = Buffer.from(session.resumeToken);
      if (have.length === wanted.length && timingSafeEqual(have, wanted)) {
        this.cancelTimer(session);
        rotateToken(session);
        return session;
      }
    }
    return undefined;
  }

  /** Starts (or restarts) the countdown after which `session` is freed unless taken over or touched. */
  keepFor(session: Session, ms: number = this.graceMs): void {
    this.cancelTimer(session);
    const timer = setTimeout(() => {
      this.timers.delete(session);
      void this.free(session, session.transport === 'http' ? 'idle timeout' : 'resume grace expired');
    }, ms);
    timer.unref();
    this.timers.set(session, timer);
  }

  /** Ends a session and frees its agents; logged at info with `reason`. */
  async free(session: Session, reason = 'freed'): Promise<void> {
    this.cancelTimer(session);
    if (this.byId.delete(session.id)) {
      this.host.logger[reason === WARMUP_REASON ? 'debug' : 'info'](
        { session: session.id, mode: session.mode, transport: session.transport, agents: this.host.pool.agentCount(session.id), reason },
        'session closed',
      );
    }
    await session.end(reason);
  }

  /** Ends every session (shutdown). */
  async freeAll(): Promise<void> {
    await Promise.all(this.list().map((s) => this.free(s, 'shutdown')));
  }

  private cancelTimer(session: Session): void {
    const timer = this.timers.get(session);
    if (timer !== undefined) {
      clearTimeout(timer);
      this.timers.delete(session);
    }
  }
}
