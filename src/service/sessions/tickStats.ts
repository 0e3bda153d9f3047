// Running totals of one session's ticks (ticks, decisions, lateness, missed ticks) that a tool samples
// to show rates; counting costs a few additions per tick, nothing per agent.

import type { AgentId } from '../../bt/index.js';

/** What one tick decided, as the pool returns it (docs/protocol.md, `decisions`). */
export interface TickDecisions {
  /** Decoded when read (a pool's Decisions): counting reads `encodedActions` (`encodedCancels`, `encodedDone`) instead. */
  readonly actions: ReadonlyArray<readonly [AgentId, number, string, unknown]>;
  readonly encodedActions?: { readonly count: number };
  readonly cancels: ReadonlyArray<readonly [AgentId, number]>;
  readonly encodedCancels?: { readonly count: number };
  readonly encodedDone?: { readonly count: number };
  readonly done: ReadonlyArray<readonly [AgentId, 'success' | 'failure']>;
  readonly errors: ReadonlyArray<readonly [AgentId, string, string]>;
}

/** Totals since the session opened; readers compute rates from two samples. */
export class TickStats {
  ticks = 0;
  actions = 0;
  cancels = 0;
  done = 0;
  errors = 0;
  missed = 0;
  /** How late the last fixed-rate tick started, ms (0 in lockstep). */
  lastLateMs = 0;
  /** Duration of the last tick, ms. */
  lastTickMs = 0;
  /** Sees every tick's decisions while a tool (the inspector) listens; null otherwise: then nothing is kept. */
  listener: ((d: TickDecisions) => void) | null = null;

  /** One tick ran: what it decided and how long it took. */
  ticked(d: TickDecisions, ms: number): void {
    this.ticks++;
    this.actions += d.encodedActions?.count ?? d.actions.length;
    this.cancels += d.encodedCancels?.count ?? d.cancels.length;
    this.done += d.encodedDone?.count ?? d.done.length;
    this.errors += d.errors.length;
    this.lastTickMs = ms;
    this.listener?.(d);
  }

  /** A fixed-rate tick started `lateMs` late after skipping `missed` ticks. */
  scheduled(lateMs: number, missed: number): void {
    this.lastLateMs = lateMs;
    this.missed += missed;
  }
}
