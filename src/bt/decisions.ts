// Where ticking agents put what they decided: new actions, cancels, finished roots, errors, log lines.

import type { Agent } from './agent.js';

/** Receives an agent's decisions while it ticks. The service merges them into one `decisions` frame. */
export interface DecisionSink {
  /** An action leaf was entered: the game server should start `action` with `args`; `seq` identifies it. */
  action(agent: Agent, seq: number, action: string, args: Readonly<Record<string, unknown>>): void;
  /** A running action was abandoned by the tree (halt, `until`, `timeout`, agent stopped): the game stops it. */
  cancel(agent: Agent, seq: number): void;
  /** The agent's root finished this tick (reported as `done`). */
  finished(agent: Agent, status: 'success' | 'failure'): void;
  /** The agent was stopped by an error (a plugin threw): it will not tick again. */
  error(agent: Agent, code: string, message: string): void;
  /** A `log` leaf fired; `node` is its node number (absent from sinks written before it was passed). */
  log(agent: Agent, level: string, message: string, node?: number): void;
}

type AgentId = number | string;

/**
 * A DecisionSink that keeps the decisions as protocol-shaped tuples (`[id, seq, action, args]`, ...)
 * until `clear()`. Arrays are reused between ticks; only the tuples themselves are allocated.
 */
export class DecisionBuffer implements DecisionSink {
  readonly actions: Array<[AgentId, number, string, Readonly<Record<string, unknown>>]> = [];
  readonly cancels: Array<[AgentId, number]> = [];
  readonly done: Array<[AgentId, 'success' | 'failure']> = [];
  readonly errors: Array<[AgentId, string, string]> = [];
  readonly logs: Array<[AgentId, string, string]> = [];
  /** When false, `log` lines are dropped (the common case: nobody is debugging). */
  keepLogs: boolean;

  constructor(keepLogs = false) {
    this.keepLogs = keepLogs;
  }

  action(agent: Agent, seq: number, action: string, args: Readonly<Record<string, unknown>>): void {
    this.actions.push([agent.id, seq, action, args]);
  }
  cancel(agent: Agent, seq: number): void {
    this.cancels.push([agent.id, seq]);
  }
  finished(agent: Agent, status: 'success' | 'failure'): void {
    this.done.push([agent.id, status]);
  }
  error(agent: Agent, code: string, message: string): void {
    this.errors.push([agent.id, code, message]);
  }
  log(agent: Agent, level: string, message: string): void {
    if (this.keepLogs) this.logs.push([agent.id, level, message]);
  }
  /** True when nothing was decided since the last clear(). */
  get empty(): boolean {
    return this.actions.length === 0 && this.cancels.length === 0 && this.done.length === 0 && this.errors.length === 0;
  }
  clear(): void {
    this.actions.length = 0;
    this.cancels.length = 0;
    this.done.length = 0;
    this.errors.length = 0;
    this.logs.length = 0;
  }
}
