// The inspector's data stream: one WebSocket per open page (GET /v1/inspector/ws, JSON both ways,
// docs/inspector.md). The page subscribes to one session and watches one agent; the server pushes
// only that, coalesced to at most 10 messages a second. Read-only, but for the control messages (control.ts),
// refused unless CANOPY_INSPECTOR_CONTROL is on and the page's API key may control.

import type { FastifyPluginAsync } from 'fastify';
import type { WebSocket } from 'ws';
import type { AgentFrame, AgentId } from '../bt/index.js';
import type { TreeLibrary } from '../bt/library.js';
import { requestKey } from '../service/http/auth.js';
import type { ServiceContext } from '../service/context.js';
import { HEARTBEAT_MS, InspectorControl, type ControlSink, type ForceStatus } from './control.js';
import { InspectorHub, type PageSink, type SessionSample } from './hub.js';
import { RecordingView } from './recording.js';
import { treeView, treesView, type TreeStatus } from './views.js';

/** Minimum time between two pushes to one page, ms (≤ 10 a second). */
export const PUSH_INTERVAL_MS = 100;
/** Unsent bytes above which a page's pushes are skipped until its socket drains (a slow page never grows memory). */
const MAX_BUFFERED = 4 * 1024 * 1024;
/** A page's messages are small; anything larger is refused. */
const MAX_MESSAGE = 4096;

/** GET /v1/inspector/ws. Registered inside the API scope: API keys apply (`?key=` from a browser). */
export const inspectorStream: FastifyPluginAsync<{ ctx: ServiceContext; library: TreeLibrary | (() => TreeLibrary); status?: TreeStatus }> = async (app, opts) => {
  const { ctx } = opts;
  // A getter follows hot reloads (docs/reload.md): a tree watched after a reload shows its new version.
  const library = typeof opts.library === 'function' ? opts.library : () => opts.library as TreeLibrary;
  const hub = new InspectorHub(ctx);
  const control = ctx.config.inspectorControl ? new InspectorControl(ctx) : null;
  app.get('/v1/inspector/ws', { websocket: true }, (socket, request) => {
    const page = new Page(socket, ctx, library, hub, opts.status, controlFor(ctx, control, requestKey(request)));
    hub.open(page);
    socket.on('close', () => {
      page.closed = true;
      if (control !== null) void control.releaseAll(page);
      void hub.close(page);
      void page.closeRecording();
    });
  });
};

/** The control a page gets, or why it gets none (the refusal its control messages receive). */
function controlFor(ctx: ServiceContext, control: InspectorControl | null, key: string | undefined): InspectorControl | string {
  if (control === null) return 'inspector control is off: start the service with CANOPY_INSPECTOR_CONTROL=true (development only)';
  const keys = ctx.config.apiKeys;
  if (keys.length > 0 && (key === undefined || !ctx.config.inspectorControlKeys.includes(key))) {
    return 'this API key may not use the inspector control: list it in CANOPY_INSPECTOR_CONTROL_KEYS';
  }
  return control;
}

const FORCE_NAMES: ReadonlySet<unknown> = new Set(['success', 'failure', 'running', null]);

type Incoming =
  | { t: 'control.force'; node: number; status: ForceStatus | null }
  | { t: 'control.break'; node: number; on?: boolean }
  | { t: 'control.release' }
  | { t: 'heartbeat' }
  | { t: 'session'; session: string | null }
  | { t: 'agents' }
  | { t: 'activity' }
  | { t: 'watch'; agent: AgentId | null }
  | { t: 'frames' }
  | { t: 'why'; tick: number }
  | { t: 'recordings' }
  | { t: 'rec.open'; id: string }
  | { t: 'rec.watch'; agent: AgentId }
  | { t: 'rec.why'; tick: number }
  | { t: 'rec.whatif' }
  | { t: 'rec.close' }
  | { t: 'trees' };

/** One open page. */
class Page implements PageSink, ControlSink {
  closed = false;
  private session: string | null = null;
  private watched: { session: string; agent: AgentId } | null = null;
  private pending: AgentFrame[] = [];
  private pendingSamples: { list: readonly SessionSample[]; t: number } | null = null;
  private lastPush = 0;
  private timer: NodeJS.Timeout | null = null;
  private watchRequest = 0;
  private recording: RecordingView | null = null;
  /** Bumped by every recording request: a slow answer to an older one is dropped. */
  private recordingRequest = 0;

  constructor(
    private readonly socket: WebSocket,
    private readonly ctx: ServiceContext,
    private readonly trees: () => TreeLibrary,
    private readonly hub: InspectorHub,
    private readonly status: TreeStatus | undefined,
    private readonly controller: InspectorControl | string,
  ) {
    socket.on('message', (data, isBinary) => {
      if (isBinary || (data as Buffer).length > MAX_MESSAGE) return this.send({ t: 'error', message: 'messages are JSON text of at most 4 KiB' });
      let msg: unknown;
      try {
        msg = JSON.parse(String(data));
      } catch {
        return this.send({ t: 'error', message: 'not JSON' });
      }
      void this.handle(msg as Incoming).catch((err: unknown) => {
        this.send({ t: 'error', message: err instanceof Error ? err.message : String(err) });
      });
    });
    const controlOn = typeof controller !== 'string';
    this.send({ t: 'hello', trees: treesView(trees(), status), sessions: this.sessionsNow(), control: controlOn ? { heartbeatMs: HEARTBEAT_MS } : null });
  }

  control(msg: Record<string, unknown>): void {
    this.send(msg);
  }

  /** The control messages: refused (code E_UNAUTHORIZED) unless control is on for this page. */
  private async handleControl(msg: Incoming & { t: `control.${string}` | 'heartbeat' }): Promise<void> {
    const control = this.controller;
    if (typeof control === 'string') return this.send({ t: 'error', code: 'E_UNAUTHORIZED', request: msg.t, message: control });
    control.beat(this);
    if (msg.t === 'heartbeat') return;
    const w = this.watched;
    if (msg.t === 'control.release') {
      if (this.session !== null) control.release(this.session);
      return;
    }
    if (w === null) return this.send({ t: 'error', request: msg.t, message: 'watch an agent first: control acts on the watched agent' });
    if (typeof msg.node !== 'number' || !Number.isInteger(msg.node) || msg.node < 0) {
      return this.send({ t: 'error', request: msg.t, message: `${msg.t}.node: expected a node index (integer ≥ 0)` });
    }
    let problem: string | null;
    if (msg.t === 'control.force') {
      if (!FORCE_NAMES.has(msg.status)) return this.send({ t: 'error', request: msg.t, message: 'control.force.status: expected "success", "failure", "running" or null' });
      problem = await control.force(this, w.session, w.agent, msg.node, msg.status);
    } else {
      const session = this.live(w.session);
      if (session === undefined) return this.send({ t: 'error', request: msg.t, message: `no session ${w.session}` });
      problem = control.setBreak(this, session, w.agent, msg.node, msg.on !== false);
    }
    if (problem !== null) this.send({ t: 'error', request: msg.t, message: problem });
  }

  samples(list: readonly SessionSample[], t: number): void {
    this.pendingSamples = { list, t };
    this.schedule();
  }

  frames(session: string, agent: AgentId, frames: readonly AgentFrame[]): void {
    const w = this.watched;
    if (w === null || w.session !== session || w.agent !== agent) return;
    this.pending.push(...frames);
    // A page that stopped reading keeps only the newest second of frames; it can ask for the ring again.
    if (this.pending.length > 600) this.pending.splice(0, this.pending.length - 600);
    this.schedule();
  }

  private sessionsNow(): SessionSample[] {
    return this.ctx.sessions.list().filter((s) => !s.ended).map((s) => this.hub.historyOf(s.id).at(-1) ?? {
      t: Date.now(), session: s.id, mode: s.mode, hz: s.hz, transport: s.transport, connected: s.connected,
      agents: this.ctx.pool.agentCount(s.id), tick: s.lastTick ?? null, ticksPerSec: 0, decisionsPerSec: 0,
      errorsPerSec: 0, lateMs: s.stats.lastLateMs, missed: s.stats.missed, tickMs: s.stats.lastTickMs, watched: 0,
    });
  }

  private async handle(msg: Incoming): Promise<void> {
    if (typeof msg !== 'object' || msg === null) return this.send({ t: 'error', message: 'expected an object with t' });
    switch (msg.t) {
      case 'control.force':
      case 'control.break':
      case 'control.release':
      case 'heartbeat':
        return this.handleControl(msg);
      case 'session': {
        ++this.watchRequest;
        await this.stopWatching();
        this.session = typeof msg.session === 'string' ? msg.session : null;
        const shown = this.session === null ? undefined : this.live(this.session);
        this.hub.show(this, shown ?? null);
        if (this.session === null) return;
        if (shown === undefined) return this.send({ t: 'error', message: `no session ${this.session}` });
        this.send({ t: 'history', session: this.session, samples: this.hub.historyOf(this.session) });
        return this.sendAgents();
      }
      case 'agents':
        return this.sendAgents();
      case 'trees':
        // The trees view asks each time it opens: versions and refused changes move with hot reload.
        return this.send({ t: 'trees', trees: treesView(this.trees(), this.status) });
      case 'activity': {
        const activity = this.session === null ? null : this.hub.activityOf(this.session);
        if (activity === null) return;
        return this.send({ t: 'activity', session: this.session, ...activity.view() });
      }
      case 'watch': {
        // Clicking through agents sends watches faster than they are answered: only the last one stays.
        const n = ++this.watchRequest;
        await this.stopWatching();
        const session = this.session === null ? undefined : this.live(this.session);
        if (session === undefined || msg.agent === null || (typeof msg.agent !== 'string' && typeof msg.agent !== 'number')) return;
        const listing = this.ctx.pool.listAgents(session.id).find((a) => a.id === msg.agent);
        if (listing === undefined || !(await this.hub.watch(this, session, msg.agent))) {
          return this.send({ t: 'error', message: `no agent ${JSON.stringify(msg.agent)} in session ${session.id}` });
        }
        if (this.closed || n !== this.watchRequest) return void this.hub.unwatch(this, session.id, msg.agent);
        this.watched = { session: session.id, agent: msg.agent };
        this.send({ t: 'watching', session: session.id, agent: msg.agent, label: listing.label, tree: treeView(this.trees(), listing.tree, this.status) });
        return this.sendRing();
      }
      case 'frames':
        return this.sendRing();
      case 'why': {
        const w = this.watched;
        if (w === null || typeof msg.tick !== 'number') return;
        const report = await this.ctx.pool.why(w.session, w.agent, msg.tick);
        return this.send({ t: 'why', session: w.session, agent: w.agent, tick: msg.tick, report });
      }
      case 'recordings':
        return this.send({ t: 'recordings', list: await this.ctx.recordings.list() });
      case 'rec.open': {
        const n = ++this.recordingRequest;
        await this.closeRecording();
        const path = typeof msg.id === 'string' ? this.ctx.recordings.file(msg.id) : null;
        if (path === null) return this.send({ t: 'error', message: `no recording ${JSON.stringify(msg.id)}` });
        const view = await RecordingView.open(msg.id, path);
        if (n !== this.recordingRequest || this.closed) return void view.close();
        this.recording = view;
        const trees: string[] = [];
        const rows = view.agents.map((a) => {
          let i = trees.indexOf(a.tree);
          if (i < 0) i = trees.push(a.tree) - 1;
          return [a.id, i, a.label];
        });
        return this.send({ t: 'rec.opened', id: view.id, header: view.header, firstTick: view.firstTick, lastTick: view.lastTick, problem: view.problem, trees, rows });
      }
      case 'rec.watch': {
        const view = this.recording;
        if (view === null || (typeof msg.agent !== 'string' && typeof msg.agent !== 'number')) return;
        const n = ++this.recordingRequest;
        const out = await view.watch(msg.agent);
        if (n !== this.recordingRequest) return;
        if (out === null) return this.send({ t: 'error', message: `agent ${JSON.stringify(msg.agent)} never ran a tick in this recording` });
        this.send({ t: 'watching', recording: view.id, agent: msg.agent, label: out.label, tree: out.tree });
        return this.send({ t: 'ring', recording: view.id, agent: msg.agent, frames: out.frames });
      }
      case 'rec.why': {
        const view = this.recording;
        if (view === null || typeof msg.tick !== 'number') return;
        return this.send({ t: 'why', recording: view.id, tick: msg.tick, report: view.why(msg.tick) });
      }
      case 'rec.whatif': {
        const view = this.recording;
        if (view === null) return;
        return this.send({ t: 'whatif', recording: view.id, report: await view.whatIf(this.trees(), this.ctx.config.plugins) });
      }
      case 'rec.close':
        ++this.recordingRequest;
        return this.closeRecording();
      default:
        return this.send({ t: 'error', message: `unknown message ${JSON.stringify((msg as { t?: unknown }).t)}` });
    }
  }

  /** Frees the open recording's replay. */
  async closeRecording(): Promise<void> {
    const view = this.recording;
    this.recording = null;
    if (view !== null) await view.close();
  }

  private live(id: string) {
    const s = this.ctx.sessions.get(id);
    return s === undefined || s.ended ? undefined : s;
  }

  /** The session's agents from the routing table, compact: trees named once, rows `[id, tree index, label]`. */
  private sendAgents(): void {
    if (this.session === null) return;
    const trees: string[] = [];
    const index = new Map<string, number>();
    const rows = this.ctx.pool.listAgents(this.session).map((a) => {
      let i = index.get(a.tree);
      if (i === undefined) {
        i = trees.push(a.tree) - 1;
        index.set(a.tree, i);
      }
      return [a.id, i, a.label];
    });
    this.send({ t: 'agents', session: this.session, trees, rows });
  }

  private async sendRing(): Promise<void> {
    const w = this.watched;
    if (w === null) return;
    const frames = await this.ctx.pool.frames(w.session, w.agent);
    this.pending = [];
    this.send({ t: 'ring', session: w.session, agent: w.agent, frames });
  }

  private async stopWatching(): Promise<void> {
    const w = this.watched;
    this.watched = null;
    this.pending = [];
    // Control acts on the watched agent: watching another one (or none) undoes what this page set.
    if (w !== null && typeof this.controller !== 'string') await this.controller.releaseAll(this);
    if (w !== null) await this.hub.unwatch(this, w.session, w.agent);
  }

  private schedule(): void {
    if (this.timer !== null || this.closed) return;
    const wait = Math.max(0, this.lastPush + PUSH_INTERVAL_MS - performance.now());
    this.timer = setTimeout(() => this.flush(), wait);
    this.timer.unref();
  }

  private flush(): void {
    this.timer = null;
    if (this.closed) return;
    if (this.socket.bufferedAmount > MAX_BUFFERED) return void this.schedule();
    this.lastPush = performance.now();
    const out: Record<string, unknown> = { t: 'push' };
    if (this.pendingSamples !== null) {
      out.sessions = this.pendingSamples.list;
      this.pendingSamples = null;
    }
    if (this.pending.length > 0 && this.watched !== null) {
      out.frames = { session: this.watched.session, agent: this.watched.agent, frames: this.pending };
      this.pending = [];
    }
    this.send(out);
  }

  private send(msg: Record<string, unknown>): void {
    if (this.closed || this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(JSON.stringify(msg));
  }
}
