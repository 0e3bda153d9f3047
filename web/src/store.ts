// The page's state and its one WebSocket to the service (GET /v1/inspector/ws, docs/inspector.md).
// Components read `store.state` and re-render on `useStore()`; only this file talks to the server.

import { useEffect, useState } from 'preact/hooks';
import type { AgentFrame, AgentId, RecordingInfo, RecordingListing, SessionSample, TreeView, WhatIfReport, WhyReport } from './types';

/** Frames the page keeps of the watched agent (the server's ring holds at least 30 s). */
const KEEP_FRAMES = 3000;
/** Chart points kept per session (1 a second). */
const KEEP_SAMPLES = 300;

export interface Agents {
  session: string;
  trees: string[];
  rows: Array<[AgentId, number, string]>;
}

/** Per agent: last action decided, tree finished ('success' | 'failure'), last error code. */
export interface Activity {
  session: string;
  actions: string[];
  byId: Map<AgentId, { action: string | null; done: 'success' | 'failure' | null; error: string | null }>;
}

export interface State {
  connected: boolean;
  error: string | null;
  view: 'live' | 'trees' | 'recordings';
  trees: TreeView[];
  sessions: SessionSample[];
  charts: Map<string, SessionSample[]>;
  session: string | null;
  agents: Agents | null;
  watching: { session: string; agent: AgentId; label: string; tree: TreeView | null } | null;
  frames: AgentFrame[];
  /** The tick shown; null follows the newest frame. */
  cursor: number | null;
  /** The last why answered (`report` null: that tick had left the ring buffer). */
  why: { tick: number; report: WhyReport | null } | null;
  /** The tick whose why was asked last. */
  whyAsked: number | null;
  selectedTree: string | null;
  recordings: RecordingListing[] | null;
  /** The recording open in the recordings view (its agents in `agents`). */
  recording: RecordingInfo | null;
  opening: string | null;
  whatif: { running: boolean; report: WhatIfReport | null } | null;
  /** What each agent of the live session last decided (asked for while an activity filter is on). */
  activity: Activity | null;
  /** Tick to show once the next ring arrives (a what-if divergence picked). */
  pendingSeek: number | null;
  /** The development-only control (docs/inspector.md "Control"): null when the service refuses it to this page. */
  control: { heartbeatMs: number } | null;
  /** What this page forces and breaks on, and the ticks held. */
  controlState: ControlState;
}

export interface ControlTarget {
  session: string;
  agent: AgentId;
  node: number;
}

export interface ControlState {
  forces: Array<ControlTarget & { status: 'success' | 'failure' | 'running' }>;
  breaks: ControlTarget[];
  paused: Array<{ session: string; tick: number; agent: AgentId; node: number }>;
}

type Listener = () => void;

class Store {
  state: State = {
    connected: false,
    error: null,
    view: 'live',
    trees: [],
    sessions: [],
    charts: new Map(),
    session: null,
    agents: null,
    watching: null,
    frames: [],
    cursor: null,
    why: null,
    whyAsked: null,
    selectedTree: null,
    recordings: null,
    recording: null,
    opening: null,
    whatif: null,
    pendingSeek: null,
    activity: null,
    control: null,
    controlState: { forces: [], breaks: [], paused: [] },
  };
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private listeners = new Set<Listener>();
  private socket: WebSocket | null = null;
  private retry = 0;
  private agentsAsked = 0;
  /** The page's link (location.hash) was followed. */
  private linked = false;

  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  set(patch: Partial<State>): void {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) l();
  }

  connect(): void {
    const key = new URLSearchParams(location.search).get('key');
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const url = `${proto}//${location.host}/v1/inspector/ws${key !== null ? `?key=${encodeURIComponent(key)}` : ''}`;
    const ws = new WebSocket(url);
    this.socket = ws;
    ws.addEventListener('open', () => {
      this.retry = 0;
      this.set({ connected: true, error: null });
      // After a reconnect: subscribe again to what the page shows.
      if (this.state.session !== null) this.send({ t: 'session', session: this.state.session });
      if (this.state.watching !== null) this.send({ t: 'watch', agent: this.state.watching.agent });
    });
    ws.addEventListener('message', (e) => this.receive(JSON.parse(String(e.data)) as Record<string, unknown>));
    ws.addEventListener('close', () => {
      this.socket = null;
      this.set({ connected: false });
      setTimeout(() => this.connect(), Math.min(5000, 250 * 2 ** this.retry++));
    });
  }

  /** Forces node `node` of the watched agent (null: clears). */
  force(node: number, status: 'success' | 'failure' | 'running' | null): void {
    this.send({ t: 'control.force', node, status });
  }

  /** Sets or removes a breakpoint on node `node` of the watched agent. */
  breakAt(node: number, on: boolean): void {
    this.send({ t: 'control.break', node, on });
  }

  /** Releases the held tick of the shown session. */
  release(): void {
    this.send({ t: 'control.release' });
  }

  /** While control is on, tells the service this page is alive (else it releases everything after 6 s). */
  private startHeartbeat(): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
    const c = this.state.control;
    if (c !== null) this.heartbeat = setInterval(() => this.send({ t: 'heartbeat' }), c.heartbeatMs);
  }

  send(msg: Record<string, unknown>): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(msg));
  }

  /** Switches views; the live and recordings views each watch their own agent. */
  setView(view: State['view']): void {
    const was = this.state.view;
    if (view === was) return;
    const entering = view === 'recordings';
    if (view === 'trees') this.send({ t: 'trees' });
    if (!entering && was !== 'recordings') return this.set({ view });
    // Leaving one of them ends its watch (and frees the open recording's replay).
    this.send(entering ? { t: 'watch', agent: null } : { t: 'rec.close' });
    this.set({ view, agents: null, watching: null, frames: [], cursor: null, why: null, whyAsked: null, recording: null, whatif: null, opening: null });
    if (entering) this.send({ t: 'recordings' });
    else if (this.state.session !== null) this.selectSession(this.state.session);
  }

  openRecording(id: string): void {
    this.set({ opening: id, recording: null, agents: null, watching: null, frames: [], cursor: null, why: null, whyAsked: null, whatif: null });
    this.send({ t: 'rec.open', id });
  }

  runWhatIf(): void {
    this.set({ whatif: { running: true, report: null } });
    this.send({ t: 'rec.whatif' });
  }

  /** Watches `agent` and shows `tick` once its frames arrive. */
  watchAt(agent: AgentId, label: string, tick: number): void {
    if (this.state.watching?.agent === agent && this.state.frames.length > 0) return this.seek(tick);
    this.watch(agent, label);
    this.set({ pendingSeek: tick });
  }

  selectSession(session: string | null): void {
    this.set({ session, agents: null, watching: null, frames: [], cursor: null, why: null, whyAsked: null, activity: null });
    this.send({ t: 'session', session });
  }

  watch(agent: AgentId, label: string): void {
    const recording = this.state.view === 'recordings' ? this.state.recording : null;
    const session = recording?.id ?? this.state.session;
    if (session === null) return;
    this.set({ watching: { session, agent, label, tree: null }, frames: [], cursor: null, why: null, whyAsked: null, pendingSeek: null });
    this.send({ t: recording !== null ? 'rec.watch' : 'watch', agent });
  }

  /** Shows an earlier tick (null: follow the newest). */
  seek(tick: number | null): void {
    this.set({ cursor: tick });
  }

  askWhy(tick: number): void {
    if (this.state.whyAsked === tick) return;
    this.set({ whyAsked: tick });
    this.send({ t: this.state.view === 'recordings' ? 'rec.why' : 'why', tick });
  }

  /** The frame on screen. */
  frame(): AgentFrame | null {
    const { frames, cursor } = this.state;
    if (frames.length === 0) return null;
    if (cursor === null) return frames.at(-1) ?? null;
    return frames.find((f) => f.tick === cursor) ?? frames.at(-1) ?? null;
  }

  /**
   * A link into the page (`/inspector/#/session/<id>/agent/<agent>`, e.g. from a game's debug view) opens
   * that session and watches that agent, once, on the first hello. An agent written in decimal digits is
   * an integer id, as in the HTTP routes.
   */
  private followLink(): void {
    const m = /^#\/session\/([^/]+)(?:\/agent\/([^/]+))?$/.exec(location.hash);
    if (m === null || this.linked) return;
    this.linked = true;
    this.selectSession(decodeURIComponent(m[1]!));
    if (m[2] === undefined) return;
    const raw = decodeURIComponent(m[2]);
    const agent: AgentId = /^(0|[1-9]\d{0,14})$/.test(raw) ? Number(raw) : raw;
    this.watch(agent, '');
  }

  private receive(msg: Record<string, unknown>): void {
    switch (msg.t) {
      case 'hello':
        this.set({ trees: msg.trees as TreeView[], sessions: msg.sessions as SessionSample[], control: (msg.control as State['control']) ?? null });
        this.startHeartbeat();
        return this.followLink();
      case 'trees':
        return this.set({ trees: msg.trees as TreeView[] });
      case 'history': {
        const charts = new Map(this.state.charts);
        charts.set(msg.session as string, msg.samples as SessionSample[]);
        return this.set({ charts });
      }
      case 'agents':
        if (msg.session !== this.state.session) return;
        if (this.state.view === 'recordings') return;
        return this.set({ agents: { session: msg.session as string, trees: msg.trees as string[], rows: msg.rows as Agents['rows'] } });
      case 'watching': {
        const w = this.state.watching;
        if (w === null || w.agent !== msg.agent) return;
        return this.set({ watching: { ...w, label: msg.label as string, tree: msg.tree as TreeView | null } });
      }
      case 'ring': {
        if (this.state.watching?.agent !== msg.agent) return;
        const frames = msg.frames as AgentFrame[];
        // A recording keeps every frame (the server caps it); live, the newest KEEP_FRAMES.
        const seek = this.state.pendingSeek;
        const cursor = seek !== null && frames.some((f) => f.tick === seek) ? seek : this.state.view === 'recordings' ? (frames[0]?.tick ?? null) : null;
        return this.set({ frames: msg.recording !== undefined ? frames : frames.slice(-KEEP_FRAMES), cursor, pendingSeek: null });
      }
      case 'recordings':
        return this.set({ recordings: msg.list as RecordingListing[] });
      case 'activity': {
        if (msg.session !== this.state.session || this.state.view === 'recordings') return;
        const actions = msg.actions as string[];
        const byId: Activity['byId'] = new Map();
        for (const [id, a, done, error] of msg.rows as Array<[AgentId, number, 'success' | 'failure' | null, string | null]>) {
          byId.set(id, { action: a >= 0 ? (actions[a] ?? null) : null, done, error });
        }
        return this.set({ activity: { session: msg.session as string, actions, byId } });
      }
      case 'rec.opened': {
        if (this.state.opening !== msg.id) return;
        const info = msg as unknown as RecordingInfo & { trees: string[]; rows: Agents['rows'] };
        return this.set({
          opening: null,
          recording: { id: info.id, header: info.header, firstTick: info.firstTick, lastTick: info.lastTick, problem: info.problem },
          agents: { session: info.id, trees: info.trees, rows: info.rows },
        });
      }
      case 'whatif':
        if (this.state.recording?.id !== msg.recording) return;
        return this.set({ whatif: { running: false, report: msg.report as WhatIfReport } });
      case 'why': {
        if (this.state.whyAsked !== msg.tick) return;
        return this.set({ why: { tick: msg.tick as number, report: msg.report as WhyReport | null } });
      }
      case 'push':
        return this.push(msg);
      case 'control':
        return this.set({ controlState: { forces: msg.forces as ControlState['forces'], breaks: msg.breaks as ControlState['breaks'], paused: msg.paused as ControlState['paused'] } });
      case 'control.paused': {
        const c = this.state.controlState;
        const p = { session: msg.session as string, tick: msg.tick as number, agent: msg.agent as AgentId, node: msg.node as number };
        return this.set({ controlState: { ...c, paused: [...c.paused.filter((x) => x.session !== p.session), p] } });
      }
      case 'control.released': {
        const c = this.state.controlState;
        return this.set({ controlState: { ...c, paused: c.paused.filter((x) => x.session !== msg.session) } });
      }
      case 'control.expired':
        return this.set({ controlState: { forces: [], breaks: [], paused: [] }, error: String(msg.message) });
      case 'error':
        return this.set({ error: String(msg.message), opening: null });
    }
  }

  private push(msg: Record<string, unknown>): void {
    const patch: Partial<State> = {};
    const sessions = msg.sessions as SessionSample[] | undefined;
    if (sessions !== undefined) {
      patch.sessions = sessions;
      const charts = new Map<string, SessionSample[]>();
      for (const s of sessions) {
        const list = [...(this.state.charts.get(s.session) ?? []), s];
        charts.set(s.session, list.slice(-KEEP_SAMPLES));
      }
      patch.charts = charts;
      // Agents came or went: fetch the list again (at most every 2 s; it can be 100,000 rows).
      const mine = this.state.view === 'recordings' ? undefined : sessions.find((s) => s.session === this.state.session);
      if (mine !== undefined && this.state.agents !== null && mine.agents !== this.state.agents.rows.length && Date.now() - this.agentsAsked > 2000) {
        this.agentsAsked = Date.now();
        this.send({ t: 'agents' });
      }
      if (this.state.view !== 'recordings' && this.state.session !== null && mine === undefined) Object.assign(patch, { session: null, agents: null, watching: null, frames: [], cursor: null });
    }
    const f = msg.frames as { session: string; agent: AgentId; frames: AgentFrame[] } | undefined;
    if (f !== undefined && this.state.view !== 'recordings' && this.state.watching?.agent === f.agent && this.state.watching.session === f.session) {
      const frames = [...this.state.frames, ...f.frames];
      patch.frames = frames.length > KEEP_FRAMES ? frames.slice(-KEEP_FRAMES) : frames;
    }
    this.set(patch);
  }
}

/** The page's one store. */
export const store = new Store();

/** Re-renders the calling component on every change of the store. */
export function useStore(): State {
  const [, setN] = useState(0);
  useEffect(() => store.subscribe(() => setN((n) => n + 1)), []);
  return store.state;
}
