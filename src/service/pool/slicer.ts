// Large work on a worker, in slices: creating thousands of agents, or packing a large session for a crash-recovery
// checkpoint, takes a worker milliseconds to tens of milliseconds (more while the code is still cold), and every
// session on that worker would wait for it. The slicer holds a large spawn or checkpoint, and everything its session
// sends after it, and works through them a slice at a time between the worker's other messages: other sessions'
// ticks go first, the session's own messages keep their order (a tick right behind a spawn still sees every agent
// of it; a checkpoint packs the agents as they were when it was asked for, since nothing of theirs runs meanwhile).

import { performance } from 'node:perf_hooks';
import { spawnPart } from './spawns.js';
import type { ToHost } from './wire.js';

/** A worker spends at most about this long (ms) on held work before it looks at its messages again. */
export const SLICE_MS = 2;
/** Spawns of more agents than this are sliced; smaller ones run at once (unless their session has work held). */
export const SLICED_SPAWN = 64;
/** Sessions with more agent slots than this on a worker have their checkpoints packed in parts (~0.5 µs an agent). */
export const SLICED_PACK = 2000;
/** Agents created between two looks at the clock. */
const STEP = 32;

/**
 * A held message worked through in parts (a checkpoint's packing): each call works until `until` (performance.now()
 * time; Infinity: to the end) and says whether the message is finished, its reply posted.
 */
export type Parts = (until: number) => boolean;

/**
 * One held message; `next`: the first agent of a spawn not created yet; `parts`: a checkpoint's packing (undefined:
 * not started; null: small enough to run whole).
 */
interface Held {
  readonly msg: ToHost;
  next: number;
  parts: Parts | null | undefined;
}

/** Holds and runs the large spawns and checkpoints of one worker (and what their sessions send behind them). */
export class Slicer {
  /** Per session, its held messages in arrival order; sessions are served in the order their first was held. */
  private readonly queues = new Map<string, Held[]>();
  private scheduled = false;

  /**
   * @param run handles one message (a spawn possibly cut to a part of its agents), posting its reply if any
   * @param done called once a held message is finished (the worker's progress board: it owed that message)
   * @param schedule runs the next slice later, after the messages waiting now (setImmediate)
   * @param parts a checkpoint's packing in parts, or null to run it whole (a small session)
   */
  constructor(
    private readonly run: (msg: ToHost) => void,
    private readonly done: () => void,
    private readonly sliceMs = SLICE_MS,
    private readonly schedule: (next: () => void) => void = (next) => void setImmediate(next),
    private readonly parts: (msg: ToHost) => Parts | null = () => null,
  ) {}

  /** Messages held now. */
  get held(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /**
   * Takes `msg` when it must wait: a large spawn or checkpoint, or any message of a session with messages held.
   * False: the caller runs it now. A message naming no session (crash recovery's "replay done" marker) first finishes every
   * held message, so it is answered after everything sent before it.
   */
  take(msg: ToHost): boolean {
    const session = msg.session;
    if (session === '') {
      this.finishAll();
      return false;
    }
    const q = this.queues.get(session);
    if (q !== undefined) {
      q.push({ msg, next: 0, parts: undefined });
      return true;
    }
    let parts: Parts | null | undefined;
    if (msg.t === 'spawn') {
      if (msg.agents.count <= SLICED_SPAWN) return false;
    } else if (msg.t === 'checkpoint') {
      parts = this.parts(msg);
      if (parts === null) return false;
    } else {
      return false;
    }
    this.queues.set(session, [{ msg, next: 0, parts }]);
    this.later();
    return true;
  }

  /** Runs every held message to the end, now (before a reload, or a message that must come after them). */
  finishAll(): void {
    while (this.queues.size > 0) this.slice(Infinity);
  }

  private later(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => {
      this.scheduled = false;
      this.slice(performance.now() + this.sliceMs);
      if (this.queues.size > 0) this.later();
    });
  }

  /** Works on held messages until `until` (performance.now() time): the first session's first, and on. */
  private slice(until: number): void {
    for (const [session, q] of this.queues) {
      while (q.length > 0) {
        const held = q[0]!;
        const msg = held.msg;
        if (msg.t === 'spawn') {
          const agents = msg.agents;
          while (held.next < agents.count) {
            const to = Math.min(agents.count, held.next + STEP);
            this.run(held.next === 0 && to === agents.count ? msg : { ...msg, agents: spawnPart(agents, held.next, to) });
            held.next = to;
            if (held.next < agents.count && performance.now() >= until) return;
          }
        } else if (msg.t === 'checkpoint') {
          if (held.parts === undefined) held.parts = this.parts(msg);
          if (held.parts === null) this.run(msg);
          else if (!held.parts(until)) return;
        } else {
          this.run(msg);
        }
        q.shift();
        this.done();
        if (performance.now() >= until) {
          if (q.length === 0) this.queues.delete(session);
          return;
        }
      }
      this.queues.delete(session);
    }
  }
}
