// What the inspector sees of one watched agent: a frame per tick (node statuses, data, events) and the why.
// Plain JSON-able data; the engine fills it only for watched agents (trace.ts), the service ships it as is.

import type { AgentId } from './agent.js';

/** One tick of one watched agent. */
export interface AgentFrame {
  /** The session tick this frame belongs to. */
  tick: number;
  /** Tree time of the tick. */
  time: number;
  /** Indexed by node number (CompiledTree.nodes). */
  nodes: NodeFrame[];
  /** The blackboard after the tick. */
  bb: Record<string, unknown>;
  /** Blackboard keys whose value changed during this tick (or by bb input before it). */
  changed: string[];
  /** The observation the tick read. */
  self: unknown;
  /** Actions the tree waits on after this tick; `since` is the tick the action was issued on. */
  waiting: Array<{ seq: number; node: number; action: string; since: number }>;
  /** In the order they happened this tick. */
  events: TraceEvent[];
}

/** One node in a frame. */
export interface NodeFrame {
  /** Status after this tick (the last known one if the node was not ticked). */
  status: 'idle' | 'running' | 'success' | 'failure';
  /** Visited this tick (false: draw faded with its last status). */
  ticked: boolean;
  /** Halted this tick (by a parent, an abort, a time limit or a despawn). */
  halted?: boolean;
  /** This node's guard fired an abort this tick. */
  aborted?: boolean;
  /** The inspector forced this node's status (fault injection, docs/inspector.md "Control"): it was not run. */
  forced?: boolean;
  /** The guard's value if it was evaluated this tick. */
  guard?: boolean;
  /**
   * Decorator/service state where it explains behaviour: repeat/retry {count, limit}, cooldown {left},
   * timeLimit {left}, delay/wait {left}, services {nextDue}, random/rotator {child}.
   */
  state?: Record<string, number>;
}

/** Something that happened during a watched agent's tick, in order. */
export type TraceEvent =
  | { kind: 'action'; node: number; seq: number; action: string; args: unknown }
  | { kind: 'cancel'; node: number; seq: number }
  | { kind: 'result'; seq: number; status: 'success' | 'failure' }
  | { kind: 'done'; status: 'success' | 'failure' }
  | { kind: 'error'; code: string; message: string }
  | { kind: 'log'; node: number; level: string; message: string }
  | { kind: 'abort'; node: number; mode: string };

/** The why of one tick: every guard, condition and service expression evaluated on the path. */
export interface WhyReport {
  tick: number;
  checks: WhyCheck[];
}

/** One expression evaluated during the tick, with the value of each of its sub-expressions. */
export interface WhyCheck {
  node: number;
  /** The node's path in its tree file, e.g. `root.children[1]`. */
  path: string;
  kind: 'guard' | 'condition' | 'service';
  /** The expression text, e.g. `self.hp < 30`. */
  source: string;
  /** Its value at that tick. */
  value: unknown;
  /** The expression tree with every sub-expression's value. */
  term: WhyTerm;
}

/** One (sub-)expression and its value; the UI prints `self.hp < 30 → 42 < 30 → false`. */
export interface WhyTerm {
  text: string;
  value: unknown;
  children: WhyTerm[];
  /** Not evaluated: the other side of `&&`/`||`/`??`/`? :` decided, or `rand()` (its draw is not replayed). */
  skipped?: boolean;
}

/** The newest frame of one watched agent, as the pools hand it to `onFrames`. */
export interface WatchedFrame {
  agent: AgentId;
  frame: AgentFrame;
}
