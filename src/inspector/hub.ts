// The inspector's shared state on the main thread: which pages are open, which agents they watch
// (reference-counted: two pages on one agent share its ring buffer), the 1 s session sampler that
// feeds the charts, and the routing of watched agents' frames to the pages that show them.
// With no page open nothing runs: no timer, no watched agent, no frame.

import type { AgentFrame, AgentId, WatchedFrame } from '../bt/index.js';
import type { ServiceContext } from '../service/context.js';
import type { Session } from '../service/sessions/session.js';
import { AgentActivity } from './activity.js';

/** One second of one session, as the sessions view charts it. */
export interface SessionSample {
  /** When it was taken, ms since the epoch. */
  t: number;
  session: string;
  mode: string;
  hz: number;
  transport: string;
  connected: boolean;
  agents: number;
  tick: number | null;
  /** Ticks, decisions (actions + cancels + done) and errors per second over the last sample period. */
  ticksPerSec: number;
  decisionsPerSec: number;
  errorsPerSec: number;
  lateMs: number;
  missed: number;
  tickMs: number;
  /** Agents watched by inspectors. */
  watched: number;
}

/** What a page must implement to receive data from the hub. */
export interface PageSink {
  /** The sampler ran: every live session's sample (called once a second). */
  samples(list: readonly SessionSample[], t: number): void;
  /** New frames of an agent this page watches. */
  frames(session: string, agent: AgentId, frames: readonly AgentFrame[]): void;
}

/** Seconds of history every watched agent keeps at least; lockstep sessions keep {@link LOCKSTEP_TICKS}. */
export const WATCH_SECONDS = 30;
/** Ring buffer of a watched agent of a lockstep session (no hz to convert seconds). */
export const LOCKSTEP_TICKS = 600;
/** Samples kept per session for the charts of a page opened later (5 min at 1 Hz). */
export const HISTORY = 300;

const watchKey = (session: string, agent: AgentId): string => `${session}\u0000${typeof agent}\u0000${String(agent)}`;

interface Previous {
  at: number;
  ticks: number;
  decisions: number;
  errors: number;
}

/** One per service. */
export class InspectorHub {
  private readonly ctx: ServiceContext;
  private readonly pages = new Set<PageSink>();
  /** (session, agent) → pages watching it. */
  private readonly watchers = new Map<string, { session: string; agent: AgentId; pages: Set<PageSink> }>();
  private readonly previous = new Map<string, Previous>();
  private readonly history = new Map<string, SessionSample[]>();
  private sampler: NodeJS.Timeout | null = null;
  /** Sessions shown by a page: the pages, and their agents' activity (kept only while shown). */
  private readonly shown = new Map<string, { session: Session; pages: Set<PageSink>; activity: AgentActivity }>();

  constructor(ctx: ServiceContext) {
    this.ctx = ctx;
    // Called only for sessions that have watched agents: free when nobody watches.
    const before = ctx.pool.onFrames;
    ctx.pool.onFrames = (session, frames) => {
      before?.(session, frames);
      this.route(session, frames);
    };
  }

  /** A page opened: the sampler starts with the first one. */
  open(page: PageSink): void {
    this.pages.add(page);
    if (this.sampler === null) {
      this.sample(); // prime the rates
      this.sampler = setInterval(() => this.broadcast(), 1000);
      this.sampler.unref();
    }
  }

  /** A page closed: its watches end; the sampler stops with the last page. */
  async close(page: PageSink): Promise<void> {
    this.pages.delete(page);
    this.show(page, null);
    await Promise.all([...this.watchers.values()].filter((w) => w.pages.has(page)).map((w) => this.unwatch(page, w.session, w.agent)));
    if (this.pages.size === 0 && this.sampler !== null) {
      clearInterval(this.sampler);
      this.sampler = null;
      this.previous.clear();
      this.history.clear();
    }
  }

  /** `page` shows `session` (null: none): the session's decisions are followed while any page shows it. */
  show(page: PageSink, session: Session | null): void {
    for (const [id, entry] of this.shown) {
      if (entry.session === session || !entry.pages.delete(page) || entry.pages.size > 0) continue;
      entry.session.stats.listener = null;
      this.shown.delete(id);
    }
    if (session === null) return;
    let entry = this.shown.get(session.id);
    if (entry === undefined) {
      const activity = new AgentActivity();
      entry = { session, pages: new Set(), activity };
      session.stats.listener = (d) => activity.record(d);
      this.shown.set(session.id, entry);
    }
    entry.pages.add(page);
  }

  /** What the agents of a shown session last decided; null when no page shows it. */
  activityOf(session: string): AgentActivity | null {
    return this.shown.get(session)?.activity ?? null;
  }

  /** The charts' history of one session, oldest first. */
  historyOf(session: string): readonly SessionSample[] {
    return this.history.get(session) ?? [];
  }

  /** Starts (or joins) watching; false when the agent is unknown. The ring holds ≥ 30 s of ticks. */
  async watch(page: PageSink, session: Session, agent: AgentId): Promise<boolean> {
    const key = watchKey(session.id, agent);
    const ticks = session.hz > 0 ? Math.ceil(session.hz * WATCH_SECONDS) : LOCKSTEP_TICKS;
    const existing = this.watchers.get(key);
    if (existing !== undefined) {
      existing.pages.add(page);
      return true;
    }
    const entry = { session: session.id, agent, pages: new Set([page]) };
    this.watchers.set(key, entry);
    const ok = await this.ctx.pool.watch(session.id, agent, ticks);
    if (!ok && this.watchers.get(key) === entry) this.watchers.delete(key);
    return ok;
  }

  /** The page stops watching; the ring buffer is freed when no page watches the agent any more. */
  async unwatch(page: PageSink, session: string, agent: AgentId): Promise<void> {
    const key = watchKey(session, agent);
    const entry = this.watchers.get(key);
    if (entry === undefined || !entry.pages.delete(page)) return;
    if (entry.pages.size > 0) return;
    this.watchers.delete(key);
    await this.ctx.pool.unwatch(session, agent);
  }

  private route(session: string, frames: readonly WatchedFrame[]): void {
    for (const { agent, frame } of frames) {
      const entry = this.watchers.get(watchKey(session, agent));
      if (entry === undefined) continue;
      for (const page of entry.pages) page.frames(session, agent, [frame]);
    }
  }

  private broadcast(): void {
    const list = this.sample();
    const t = Date.now();
    for (const page of this.pages) page.samples(list, t);
  }

  /** Reads every live session's totals and turns them into rates since the previous sample. */
  private sample(): SessionSample[] {
    const now = performance.now();
    const live = new Set<string>();
    const list: SessionSample[] = [];
    const watchedBySession = new Map<string, number>();
    for (const w of this.watchers.values()) watchedBySession.set(w.session, (watchedBySession.get(w.session) ?? 0) + 1);
    for (const s of this.ctx.sessions.list()) {
      if (s.ended) continue;
      live.add(s.id);
      const st = s.stats;
      const decisions = st.actions + st.cancels + st.done;
      const prev = this.previous.get(s.id);
      const secs = prev === undefined ? 0 : (now - prev.at) / 1000;
      const rate = (a: number, b: number | undefined): number => (secs > 0 && b !== undefined ? Math.max(0, (a - b) / secs) : 0);
      const sample: SessionSample = {
        t: Date.now(),
        session: s.id,
        mode: s.mode,
        hz: s.hz,
        transport: s.transport,
        connected: s.connected,
        agents: this.ctx.pool.agentCount(s.id),
        tick: s.lastTick ?? null,
        ticksPerSec: rate(st.ticks, prev?.ticks),
        decisionsPerSec: rate(decisions, prev?.decisions),
        errorsPerSec: rate(st.errors, prev?.errors),
        lateMs: st.lastLateMs,
        missed: st.missed,
        tickMs: st.lastTickMs,
        watched: watchedBySession.get(s.id) ?? 0,
      };
      this.previous.set(s.id, { at: now, ticks: st.ticks, decisions, errors: st.errors });
      const h = this.history.get(s.id) ?? [];
      h.push(sample);
      if (h.length > HISTORY) h.shift();
      this.history.set(s.id, h);
      list.push(sample);
    }
    for (const id of this.previous.keys()) {
      if (!live.has(id)) {
        this.previous.delete(id);
        this.history.delete(id);
      }
    }
    return list;
  }
}
