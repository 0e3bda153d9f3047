// The inspector's control, for development only (docs/inspector.md "Control"): fault injection (a node of
// a watched agent returns a forced status) and breakpoints (a lockstep session's decisions wait for release).
// Everything a page set is undone when it closes, changes agent, or stops sending heartbeats.

import type { AgentId, WatchedFrame } from '../bt/index.js';
import type { ServiceContext } from '../service/context.js';
import type { Session } from '../service/sessions/session.js';

/** The page sends a heartbeat this often while it controls something, ms. */
export const HEARTBEAT_MS = 2000;
/** Without a heartbeat for this long, everything a page set is released, ms. */
export const HEARTBEAT_TIMEOUT_MS = 6000;

/** Statuses a node can be forced to, as the stream spells them; the engine's numbers. */
export const FORCE_STATUS = { success: 1, failure: 2, running: 3 } as const;
export type ForceStatus = keyof typeof FORCE_STATUS;

/** What the control tells a page (its `control` state, a pause, a release). */
export interface ControlSink {
  control(msg: Record<string, unknown>): void;
}

interface Target {
  session: string;
  agent: AgentId;
  node: number;
}

interface Owner {
  forces: Map<string, Target & { status: ForceStatus }>;
  breaks: Map<string, Target>;
  lastBeat: number;
}

interface Pause {
  tick: number;
  agent: AgentId;
  node: number;
  resolve: (() => void) | null;
}

const targetKey = (t: Target): string => `${t.session}\u0000${typeof t.agent}\u0000${String(t.agent)}\u0000${t.node}`;

/** One per service; pages reach it through their stream (only when control is allowed for them). */
export class InspectorControl {
  private readonly owners = new Map<ControlSink, Owner>();
  /** Breakpoints hit on the tick being run, by session: the session's hold() pauses on them. */
  private readonly hits = new Map<string, Pause>();
  private readonly paused = new Map<string, Pause>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: ServiceContext) {
    const before = ctx.pool.onFrames;
    ctx.pool.onFrames = (session, frames) => {
      before?.(session, frames);
      this.onFrames(session, frames);
    };
  }

  /** The page is alive (any control message counts too). */
  beat(sink: ControlSink): void {
    const o = this.owners.get(sink);
    if (o !== undefined) o.lastBeat = performance.now();
  }

  /** Forces (or clears, status null) node `node` of an agent the page watches. Null on success, else why not. */
  async force(sink: ControlSink, session: string, agent: AgentId, node: number, status: ForceStatus | null): Promise<string | null> {
    const o = this.owner(sink);
    const t: Target = { session, agent, node };
    const ok = await this.ctx.pool.force(session, agent, node, status === null ? null : FORCE_STATUS[status]);
    if (!ok) return `cannot force node ${node} of agent ${JSON.stringify(agent)}: no such node, or the agent is not watched`;
    if (status === null) o.forces.delete(targetKey(t));
    else o.forces.set(targetKey(t), { ...t, status });
    this.state(sink);
    return null;
  }

  /** Sets or removes a breakpoint on node `node` of an agent of a lockstep session. Null on success, else why not. */
  setBreak(sink: ControlSink, session: Session, agent: AgentId, node: number, on: boolean): string | null {
    if (session.mode !== 'lockstep') return `breakpoints need a lockstep session: ${session.id} is ${session.mode}`;
    const o = this.owner(sink);
    const t: Target = { session: session.id, agent, node };
    if (on) o.breaks.set(targetKey(t), t);
    else o.breaks.delete(targetKey(t));
    this.attach(session.id);
    // The last breakpoint removed lets a held tick go.
    if (!this.hasBreaks(session.id)) this.release(session.id);
    this.state(sink);
    return null;
  }

  /** Releases the paused tick of `session`, if any. */
  release(session: string): void {
    const p = this.paused.get(session);
    if (p === undefined) return;
    this.paused.delete(session);
    p.resolve?.();
    for (const sink of this.owners.keys()) sink.control({ t: 'control.released', session, tick: p.tick });
  }

  /** Undoes everything the page set: forces cleared, breakpoints removed, sessions it paused released. */
  async releaseAll(sink: ControlSink): Promise<void> {
    const o = this.owners.get(sink);
    if (o === undefined) return;
    this.owners.delete(sink);
    if (this.owners.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
    const sessions = new Set([...o.breaks.values()].map((t) => t.session));
    for (const id of sessions) {
      this.attach(id);
      if (!this.hasBreaks(id)) this.release(id);
    }
    await Promise.all([...o.forces.values()].map((t) => this.ctx.pool.force(t.session, t.agent, t.node, null)));
  }

  /** The session's hook (Session.hold): a promise when a breakpoint was hit on this tick, else null. */
  private hold(session: string, tick: number): Promise<void> | null {
    const hit = this.hits.get(session);
    this.hits.delete(session);
    if (hit === undefined || hit.tick !== tick || !this.hasBreaks(session)) return null;
    this.paused.set(session, hit);
    for (const sink of this.owners.keys()) sink.control({ t: 'control.paused', session, tick, agent: hit.agent, node: hit.node });
    return new Promise((resolve) => {
      hit.resolve = resolve;
    });
  }

  private onFrames(session: string, frames: readonly WatchedFrame[]): void {
    for (const o of this.owners.values()) {
      for (const b of o.breaks.values()) {
        if (b.session !== session) continue;
        for (const { agent, frame } of frames) {
          if (agent === b.agent && frame.nodes[b.node]?.ticked === true) {
            this.hits.set(session, { tick: frame.tick, agent, node: b.node, resolve: null });
            return;
          }
        }
      }
    }
  }

  private hasBreaks(session: string): boolean {
    for (const o of this.owners.values()) for (const b of o.breaks.values()) if (b.session === session) return true;
    return false;
  }

  /** Hooks the session while any breakpoint is set on it, unhooks it after. */
  private attach(id: string): void {
    const s = this.ctx.sessions.get(id);
    if (s === undefined) return;
    s.hold = this.hasBreaks(id) ? (tick) => this.hold(id, tick) : null;
  }

  private owner(sink: ControlSink): Owner {
    let o = this.owners.get(sink);
    if (o === undefined) {
      o = { forces: new Map(), breaks: new Map(), lastBeat: performance.now() };
      this.owners.set(sink, o);
      if (this.timer === null) {
        this.timer = setInterval(() => this.expire(), 1000);
        this.timer.unref();
      }
    }
    o.lastBeat = performance.now();
    return o;
  }

  /** Pages silent for longer than the timeout lose their control; a session that ended is never held. */
  private expire(): void {
    for (const id of this.paused.keys()) if (this.ctx.sessions.get(id)?.ended !== false) this.release(id);
    const now = performance.now();
    for (const [sink, o] of this.owners) {
      if (now - o.lastBeat <= HEARTBEAT_TIMEOUT_MS) continue;
      void this.releaseAll(sink).then(() => sink.control({ t: 'control.expired', message: `no heartbeat for ${HEARTBEAT_TIMEOUT_MS / 1000} s: forces and breakpoints released` }));
    }
  }

  /** Sends the page what it controls now. */
  private state(sink: ControlSink): void {
    const o = this.owners.get(sink);
    if (o === undefined) return;
    const paused = [...this.paused].map(([session, p]) => ({ session, tick: p.tick, agent: p.agent, node: p.node }));
    sink.control({ t: 'control', forces: [...o.forces.values()], breaks: [...o.breaks.values()], paused });
  }
}
