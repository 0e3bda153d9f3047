// The traced build of a tree (CompiledTree.traced): one call per node, each wrapper telling the watched
// agent's Tracer what happened. Unwatched agents never run this code; the inlined tree stays untouched.

import type { Agent } from './agent.js';
import type { AbortMode } from './definition.js';
import { truthy, type CompiledExpr } from './expr/index.js';
import type { WhyCheck } from './frames.js';
import type { CompiledService } from './program.js';
import { Status, type TickStatus } from './status.js';

/** What an expression is to the why. */
export type CheckKind = WhyCheck['kind'];

type TickFn = (agent: Agent) => TickStatus;
type Guard = { guard: CompiledExpr; slot: number; abort: AbortMode };

/** How compileTree builds the traced variant: it hands every guard, expression, halt and node wrapper here. */
export interface TraceHooks {
  /** An expression whose evaluations are recorded as checks of node `node`. */
  expression(fn: CompiledExpr, node: number, kind: CheckKind, source: string): CompiledExpr;
  /** A child's guard as its ordered parent evaluates it for abort "lower" (the parent fires the abort). */
  lowerGuard(guard: CompiledExpr, node: number, slot: number, mode: AbortMode): CompiledExpr;
  /** The tree's halt, recording each halted node. */
  halt(children: ReadonlyArray<readonly number[]>, onHalt: ReadonlyArray<((a: Agent) => void) | undefined>): (agent: Agent, node: number) => void;
  /** The engine's wrapper around node `i` (guard, abort "self", services, status), recording as it goes. */
  wrap(
    i: number,
    tick: (agent: Agent, fresh: boolean) => TickStatus,
    guard: Guard | null,
    services: CompiledService[] | null,
    halt: (agent: Agent, node: number) => void,
    runServices: (agent: Agent, services: CompiledService[], fresh: boolean) => void,
  ): TickFn;
}

/**
 * The hooks. Each reads `a.trace`: the traced program is only run for watched agents, but an agent
 * unwatched mid-tick (or restored without its Tracer) still ticks correctly, just without a record.
 */
export const TRACE_HOOKS: TraceHooks = {
  expression(fn, node, kind, source) {
    return (c) => {
      const v = fn(c);
      const t = (c as Agent).trace;
      if (t !== null && t !== undefined) t.check(c as Agent, node, kind, source, v);
      return v;
    };
  },

  lowerGuard(guard, node, slot, mode) {
    return (c) => {
      const a = c as Agent;
      const before = a.slots[slot];
      const v = guard(a);
      const t = a.trace;
      if (t !== null) {
        const now = truthy(v);
        t.guard[node] = now ? 1 : 0;
        // The ordered parent aborts exactly when the guard turns true (orderedComposite, abort "lower").
        if (now && before === 0) t.abort(node, mode);
      }
      return v;
    };
  },

  halt(children, onHalt) {
    const halt = (agent: Agent, node: number): void => {
      const st = agent.status;
      if (st[node] !== Status.RUNNING) return;
      const list = children[node]!;
      for (let k = 0; k < list.length; k++) halt(agent, list[k]!);
      const t = agent.trace;
      const previous = t === null ? -1 : t.current;
      if (t !== null) {
        t.halted[node] = 1;
        t.current = node;
      }
      const h = onHalt[node];
      if (h !== undefined) h(agent);
      if (t !== null) t.current = previous;
      st[node] = Status.HALTED;
    };
    return halt;
  },

  wrap(i, tick, guard, services, halt, runServices) {
    const check = guard?.guard ?? null;
    const guardSlot = guard?.slot ?? 0;
    const mode = guard?.abort ?? 'none';
    const abortSelf = mode === 'self' || mode === 'both';
    return (a) => {
      const t = a.trace;
      const st = a.status;
      const fresh = st[i] !== Status.RUNNING;
      const previous = t === null ? -1 : t.current;
      if (t !== null) {
        t.ticked[i] = 1;
        t.current = i;
      }
      let s: TickStatus;
      const forced = t === null ? -1 : t.forced[i]!;
      if (forced !== -1) {
        // Fault injection: the node is not run; a running node forced to finish halts what it started.
        if (forced !== Status.RUNNING && !fresh) halt(a, i);
        s = forced as TickStatus;
      } else if (check !== null && (fresh || abortSelf) && !passes(a, check, guardSlot, i)) {
        if (!fresh) {
          if (t !== null) t.abort(i, mode);
          halt(a, i);
        }
        s = Status.FAILURE;
      } else {
        if (services !== null) runServices(a, services, fresh);
        s = tick(a, fresh);
      }
      st[i] = s;
      if (t !== null) t.current = previous;
      return s;
    };
  },
};

/** Evaluates node i's guard as the engine does (the slot remembers it for abort "lower"); records its value. */
function passes(a: Agent, check: CompiledExpr, slot: number, i: number): boolean {
  const ok = truthy(check(a));
  a.slots[slot] = ok ? 1 : 0;
  const t = a.trace;
  if (t !== null) t.guard[i] = ok ? 1 : 0;
  return ok;
}
