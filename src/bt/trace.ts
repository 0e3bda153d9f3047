// The recorder of one watched agent: fills a frame per tick from the traced program's hooks, keeps the last
// frames in a ring buffer (time travel), and computes the why of a tick on demand by re-evaluating its checks.

import type { Agent } from './agent.js';
import type { DecisionSink } from './decisions.js';
import { explainExpression } from './expr/explain.js';
import type { ExprContext } from './expr/index.js';
import type { AgentFrame, NodeFrame, TraceEvent, WhyCheck, WhyReport } from './frames.js';
import type { TracedProgram } from './program.js';
import { Status, type TickStatus } from './status.js';
import type { CheckKind } from './trace-program.js';

/**
 * Most frames one watched agent keeps (10 minutes at 20 Hz); larger requests are clamped. A frame of a
 * 57-node tree is ~3 KB as JSON, so one agent's ring stays within tens of megabytes.
 */
export const MAX_WATCH_TICKS = 12_000;

/** One guard, condition or service expression evaluated during a tick, with the inputs the why needs. */
interface CheckRecord {
  readonly node: number;
  readonly kind: CheckKind;
  readonly source: string;
  readonly value: unknown;
  /**
   * The blackboard as the expression saw it: a shallow copy (values are shared, not cloned). Assumes
   * values are replaced, never mutated in place — true of everything the engine writes; a plugin that
   * mutates a blackboard object in place makes the why show the later contents.
   */
  readonly bb: Readonly<Record<string, unknown>>;
}

/** A frame plus what only the why needs (kept on the agent's thread, never shipped). */
interface TickRecord {
  readonly frame: AgentFrame;
  readonly checks: readonly CheckRecord[];
  /** The session's world by reference: the pool replaces the world, never mutates it (AgentPool contract). */
  readonly world: unknown;
  readonly dt: number;
}

const STATUS: readonly NodeFrame['status'][] = ['idle', 'success', 'failure', 'running', 'idle'];

/**
 * Records a watched agent's ticks. Created by `Agent.watch`; the agent ticks through `program` (the
 * traced call-per-node variant of its tree) while this is attached. Also a DecisionSink: the agent's
 * decisions pass through it (recorded as events) on their way to the real sink.
 */
export class Tracer implements DecisionSink {
  readonly program: TracedProgram;
  /** Per node, this tick: visited, halted, aborted (1/0); guard value (1/0, -1 not evaluated). */
  readonly ticked: Uint8Array;
  readonly halted: Uint8Array;
  readonly aborted: Uint8Array;
  readonly guard: Int8Array;
  /** Per node, the status the inspector forces (fault injection): -1 none, else a TickStatus. */
  readonly forced: Int8Array;
  /** The node whose code runs now (actions and logs are attributed to it); -1 outside nodes. */
  current = -1;
  /** The session tick number of the next tick; when null, the previous tick's number + 1. */
  nextTick: number | null = null;

  private capacity: number;
  private ring: TickRecord[] = [];
  /** Index in `ring` of the oldest record once the ring is full. */
  private head = 0;
  private events: TraceEvent[] = [];
  /** Events between ticks (results delivered), reported first in the next frame. */
  private pending: TraceEvent[] = [];
  private checks: CheckRecord[] = [];
  private out: DecisionSink | null = null;
  private tickNo = -1;
  private self: unknown = null;
  private lastBb: Record<string, unknown>;
  /** seq → tick it was issued on, for `waiting[].since`. */
  private readonly issued = new Map<number, number>();
  /** The first tick recorded: actions issued before watching began report it as their `since`. */
  private firstTick = -1;

  constructor(agent: Agent, ticks: number) {
    this.program = agent.tree.traced();
    const n = agent.tree.nodeCount;
    this.ticked = new Uint8Array(n);
    this.halted = new Uint8Array(n);
    this.aborted = new Uint8Array(n);
    this.guard = new Int8Array(n).fill(-1);
    this.forced = new Int8Array(n).fill(-1);
    this.capacity = clampTicks(ticks);
    this.lastBb = cloneData(agent.bb) as Record<string, unknown>;
  }

  /**
   * Forces node `node` to return `status` (null: runs normally again) from the next tick on, without
   * running it. False when the node does not exist.
   */
  force(node: number, status: TickStatus | null): boolean {
    if (!Number.isInteger(node) || node < 0 || node >= this.forced.length) return false;
    this.forced[node] = status ?? -1;
    return true;
  }

  /** Ring size in frames. Shrinking keeps the newest frames. */
  resize(ticks: number): void {
    const frames = this.ordered();
    this.capacity = clampTicks(ticks);
    this.ring = frames.slice(Math.max(0, frames.length - this.capacity));
    this.head = 0;
  }

  /** Called by Agent.tick before the root runs; returns the sink the agent should write to. */
  begin(agent: Agent, out: DecisionSink): DecisionSink {
    this.tickNo = this.nextTick ?? this.tickNo + 1;
    this.nextTick = null;
    if (this.firstTick < 0) this.firstTick = this.tickNo;
    this.ticked.fill(0);
    this.halted.fill(0);
    this.aborted.fill(0);
    this.guard.fill(-1);
    this.current = -1;
    this.events = this.pending;
    this.pending = [];
    this.checks = [];
    this.out = out;
    this.self = cloneData(agent.self);
    return this;
  }

  /** Called by Agent.tick after the root ran (or the agent stopped): builds and stores the frame. */
  end(agent: Agent): void {
    const t = agent.tree;
    const st = agent.status;
    const { states, serviceSlots } = this.program;
    const nodes: NodeFrame[] = [];
    for (let i = 0; i < t.nodeCount; i++) {
      const f: NodeFrame = { status: STATUS[st[i]!] ?? 'idle', ticked: this.ticked[i] === 1 };
      if (this.halted[i] === 1) f.halted = true;
      if (this.aborted[i] === 1) f.aborted = true;
      if (this.forced[i] !== -1 && this.ticked[i] === 1) f.forced = true;
      if (this.guard[i] !== -1) f.guard = this.guard[i] === 1;
      const state = states[i]?.(agent) ?? null;
      const due = serviceSlots[i];
      if (state !== null || (due !== null && due !== undefined)) {
        const s: Record<string, number> = state === null ? {} : { ...state };
        if (due !== null && due !== undefined) for (let k = 0; k < due.length; k++) s[k === 0 ? 'nextDue' : `nextDue${k}`] = agent.slots[due[k]!]!;
        f.state = s;
      }
      nodes.push(f);
    }
    const bb = cloneData(agent.bb) as Record<string, unknown>;
    const changed: string[] = [];
    for (const key of Object.keys(bb)) if (!sameData(bb[key], this.lastBb[key])) changed.push(key);
    this.lastBb = bb;
    const frame: AgentFrame = { tick: this.tickNo, time: agent.time, nodes, bb, changed, self: this.self, waiting: this.waiting(agent), events: this.events };
    const record: TickRecord = { frame, checks: this.checks, world: agent.world, dt: agent.dt };
    if (this.ring.length < this.capacity) this.ring.push(record);
    else {
      this.ring[this.head] = record;
      this.head = (this.head + 1) % this.capacity;
    }
    this.out = null;
    this.current = -1;
  }

  /** The newest frame, or null before the first tick. */
  latest(): AgentFrame | null {
    if (this.ring.length === 0) return null;
    const last = this.ring.length < this.capacity ? this.ring.length - 1 : (this.head + this.capacity - 1) % this.capacity;
    return this.ring[last]!.frame;
  }

  /** The ring buffer, oldest first; only frames with tick ≥ sinceTick when given. Treat them as read-only. */
  frames(sinceTick?: number): AgentFrame[] {
    const all = this.ordered().map((r) => r.frame);
    return sinceTick === undefined ? all : all.filter((f) => f.tick >= sinceTick);
  }

  /** The why of tick `tick`, or null when it is no longer (or never was) in the ring buffer. */
  why(agent: Agent, tick: number): WhyReport | null {
    const record = this.ordered().find((r) => r.frame.tick === tick);
    if (record === undefined) return null;
    const { frame } = record;
    const checks: WhyCheck[] = record.checks.map((c) => {
      const context: ExprContext = {
        self: frame.self,
        bb: c.bb as Record<string, unknown>,
        world: record.world,
        agent: agent.agent,
        time: frame.time,
        dt: record.dt,
        random: () => 0,
      };
      const term = explainExpression(c.source, context) ?? { text: c.source, value: c.value, children: [] };
      return { node: c.node, path: agent.tree.nodes[c.node]!.path, kind: c.kind, source: c.source, value: c.value, term };
    });
    return { tick, checks };
  }

  // Hooks of the traced program (trace-program.ts).

  /** An expression of node `node` was evaluated to `value`. */
  check(agent: Agent, node: number, kind: CheckKind, source: string, value: unknown): void {
    this.checks.push({ node, kind, source, value, bb: { ...agent.bb } });
  }

  /** Node `node`'s guard fired an abort. */
  abort(node: number, mode: string): void {
    this.aborted[node] = 1;
    this.events.push({ kind: 'abort', node, mode });
  }

  /** A result was accepted for `seq` between ticks: the next frame reports it first. */
  result(seq: number, success: boolean): void {
    this.pending.push({ kind: 'result', seq, status: success ? 'success' : 'failure' });
  }

  // DecisionSink: record, then pass on.

  action(agent: Agent, seq: number, action: string, args: Readonly<Record<string, unknown>>): void {
    this.events.push({ kind: 'action', node: this.current, seq, action, args });
    this.issued.set(seq, this.tickNo);
    this.out?.action(agent, seq, action, args);
  }
  cancel(agent: Agent, seq: number): void {
    this.events.push({ kind: 'cancel', node: actionNode(agent, seq) ?? this.current, seq });
    this.out?.cancel(agent, seq);
  }
  finished(agent: Agent, status: 'success' | 'failure'): void {
    this.events.push({ kind: 'done', status });
    this.out?.finished(agent, status);
  }
  error(agent: Agent, code: string, message: string): void {
    this.events.push({ kind: 'error', code, message });
    this.out?.error(agent, code, message);
  }
  log(agent: Agent, level: string, message: string): void {
    this.events.push({ kind: 'log', node: this.current, level, message });
    this.out?.log(agent, level, message);
  }

  private waiting(agent: Agent): AgentFrame['waiting'] {
    const t = agent.tree;
    const list: AgentFrame['waiting'] = [];
    const live = new Set<number>();
    for (let k = 0; k < t.actionNodes.length; k++) {
      const node = t.actionNodes[k]!;
      if (agent.status[node] !== Status.RUNNING || agent.slots[t.actionResultSlots[k]!] !== 0) continue;
      const seq = agent.slots[t.actionSeqSlots[k]!]!;
      live.add(seq);
      list.push({ seq, node, action: t.nodes[node]!.action ?? '', since: this.issued.get(seq) ?? this.firstTick });
    }
    for (const seq of this.issued.keys()) if (!live.has(seq)) this.issued.delete(seq);
    return list;
  }

  private ordered(): TickRecord[] {
    return this.ring.length < this.capacity ? this.ring.slice() : [...this.ring.slice(this.head), ...this.ring.slice(0, this.head)];
  }
}

/** The action node running `seq`, if any. */
function actionNode(agent: Agent, seq: number): number | null {
  const t = agent.tree;
  for (let k = 0; k < t.actionNodes.length; k++) {
    const node = t.actionNodes[k]!;
    if (agent.status[node] === Status.RUNNING && agent.slots[t.actionSeqSlots[k]!] === seq) return node;
  }
  return null;
}

function clampTicks(ticks: number): number {
  if (!Number.isFinite(ticks) || ticks < 1) throw new RangeError(`ticks: expected a number ≥ 1, got ${ticks}`);
  return Math.min(MAX_WATCH_TICKS, Math.floor(ticks));
}

/** Most values one copy visits: a blackboard or observation larger than this is cut (null beyond). */
const MAX_COPY_VALUES = 100_000;

/**
 * A deep copy of plain data (what observations and blackboards hold): plain objects, arrays, primitives.
 * A hand-written walk: several times faster than structuredClone on the small objects frames copy, which
 * matters because watched agents' frames are copied every tick. Other objects go through structuredClone;
 * what cannot be cloned (a plugin's function, say), cycles, and anything past MAX_COPY_VALUES become null.
 */
function cloneData(v: unknown): unknown {
  const budget = { left: MAX_COPY_VALUES };
  return copy(v, budget, []);
}

function copy(v: unknown, budget: { left: number }, ancestors: object[]): unknown {
  if (--budget.left < 0) return null;
  if (v === null || typeof v !== 'object') return typeof v === 'function' || typeof v === 'symbol' || v === undefined ? null : v;
  if (ancestors.includes(v)) return null;
  const proto: unknown = Object.getPrototypeOf(v);
  if (Array.isArray(v)) {
    ancestors.push(v);
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) out.push(copy(v[i], budget, ancestors));
    ancestors.pop();
    return out;
  }
  if (proto === Object.prototype || proto === null) {
    ancestors.push(v);
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(v)) {
      const value = copy((v as Record<string, unknown>)[key], budget, ancestors);
      // An own `__proto__` key (JSON.parse makes them) stays a key, never a prototype.
      if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      else out[key] = value;
    }
    ancestors.pop();
    return out;
  }
  try {
    return structuredClone(v);
  } catch {
    return null;
  }
}

/** Deep equality of plain data (what cloneData returns). */
function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return Number.isNaN(a) && Number.isNaN(b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !sameData((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  return true;
}
