// A recording opened in the inspector: its agents, any agent's frames over the whole recording (the
// replay is run with that agent watched), the why of any of its ticks, and a what-if against the
// service's current trees. Replays run on the main thread in slices of at most ~8 ms, yielding between
// them, so an open recording never stalls live sessions' clocks.

import { setImmediate as yieldNow } from 'node:timers/promises';
import { MAX_WATCH_TICKS, type Agent, type AgentFrame, type AgentId, type Tracer, type WhyReport } from '../bt/index.js';
import type { TreeLibrary } from '../bt/library.js';
import { ReplaySession, type WhatIfReport } from '../record/index.js';
import { whatIfInWorker } from './whatif.js';
import { compiledView, type TreeView } from './views.js';

/** Longest run of replayed ticks between two yields to the event loop, ms: live sessions' clocks stay on time. */
const SLICE_MS = 8;

/** Yields to the event loop once `SLICE_MS` have passed since the last yield. */
class Slicer {
  private last = performance.now();
  async maybeYield(): Promise<void> {
    if (performance.now() - this.last < SLICE_MS) return;
    await yieldNow();
    this.last = performance.now();
  }
}

/** An agent seen in the recording. */
export interface RecordedAgent {
  id: AgentId;
  tree: string;
  label: string;
  /** The first tick it was alive at the end of. */
  from: number;
}

/** One recording open in one page. */
export class RecordingView {
  readonly id: string;
  readonly path: string;
  private closed = false;
  private watched: { agent: Agent; tracer: Tracer; replay: ReplaySession } | null = null;

  private constructor(
    id: string,
    path: string,
    readonly header: { mode: string; hz: number; session: string; startedAt: string },
    readonly firstTick: number | null,
    readonly lastTick: number | null,
    readonly agents: RecordedAgent[],
    readonly problem: string | null,
  ) {
    this.id = id;
    this.path = path;
  }

  /** Opens `path` and replays it once to list every agent it ever held. @throws {RecordingError} */
  static async open(id: string, path: string): Promise<RecordingView> {
    const replay = await ReplaySession.open(path);
    try {
      const seen = new Map<AgentId, RecordedAgent>();
      const slicer = new Slicer();
      let n = 0;
      while (n < MAX_WATCH_TICKS && (await replay.next())) {
        for (const a of replay.agents()) if (!seen.has(a.id)) seen.set(a.id, { ...a, from: replay.tick ?? 0 });
        n++;
        await slicer.maybeYield();
      }
      const h = replay.header;
      return new RecordingView(
        id,
        path,
        { mode: h.mode, hz: h.hz, session: h.session, startedAt: h.startedAt },
        replay.firstTick,
        replay.lastTick,
        [...seen.values()],
        replay.problem,
      );
    } finally {
      await replay.close();
    }
  }

  /**
   * Replays the recording from its start with `agent` watched from the tick it appears: its frames over
   * the whole recording (up to MAX_WATCH_TICKS) and its tree as recorded. Null for an unknown agent.
   */
  async watch(agent: AgentId): Promise<{ frames: AgentFrame[]; tree: TreeView; label: string } | null> {
    await this.unwatch();
    const known = this.agents.find((a) => a.id === agent);
    if (known === undefined) return null;
    const replay = await ReplaySession.open(this.path);
    let watched: { agent: Agent; tracer: Tracer } | null = null;
    const slicer = new Slicer();
    let n = 0;
    for (;;) {
      // Guess the next tick's number so `waiting[].since` is right; corrected below when ticks skip.
      if (watched !== null) watched.tracer.nextTick = (replay.tick ?? 0) + 1;
      if (n >= MAX_WATCH_TICKS || this.closed || !(await replay.next())) break;
      if (watched !== null) {
        const f = watched.tracer.latest();
        if (f !== null && replay.tick !== null) f.tick = replay.tick;
      } else {
        const a = replay.agent(agent);
        // Watched at the end of its first tick: from the next tick on it records frames.
        if (a !== null) watched = { agent: a, tracer: a.watch(MAX_WATCH_TICKS) };
      }
      n++;
      await slicer.maybeYield();
    }
    if (watched === null || this.closed) {
      await replay.close();
      return null;
    }
    this.watched = { ...watched, replay };
    return { frames: watched.tracer.frames(), tree: compiledView(watched.agent.tree, null), label: known.label };
  }

  /** The why of one tick of the watched agent. */
  why(tick: number): WhyReport | null {
    const w = this.watched;
    return w === null ? null : w.tracer.why(w.agent, tick);
  }

  /** What the service's current trees would have decided differently over this recording (in a worker thread). */
  whatIf(library: TreeLibrary, plugins: string | null): Promise<WhatIfReport> {
    return whatIfInWorker(this.path, library, plugins);
  }

  private async unwatch(): Promise<void> {
    const w = this.watched;
    this.watched = null;
    if (w !== null) await w.replay.close();
  }

  /** Frees the replay. */
  async close(): Promise<void> {
    this.closed = true;
    await this.unwatch();
  }
}
