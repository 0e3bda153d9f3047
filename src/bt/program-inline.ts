// The compiler's code generation: the engine's wrapper around each node, and the whole tree as one function
// built from the kinds' `emit`s. Both have a plain path for `--disallow-code-generation-from-strings`.

import type { Agent } from './agent.js';
import { CODE_GENERATION, generate, ident, isCodeGenerationDisabled, joinCode, js, type Code } from './codegen.js';
import type { AbortMode } from './definition.js';
import { truthy, type CompiledExpr } from './expr/index.js';
import type { NodeBehavior } from './node.js';
import { Status, TIME_EPSILON, type TickStatus } from './status.js';

type TickFn = (agent: Agent) => TickStatus;

/** A compiled service entry of a node: its period, the slot holding its next due time, and its run. */
export interface CompiledService {
  readonly every: number;
  readonly slot: number;
  readonly run: (agent: Agent) => void;
}

/** A node's compiled guard: the expression, the slot remembering its last value, its abort mode. */
export interface CompiledGuard {
  readonly guard: CompiledExpr;
  readonly slot: number;
  readonly abort: AbortMode;
}

/** What the engine wraps around one node's own tick: its guard (abort "self"/"both") and services. */
export interface NodeWrapping {
  readonly guard: CompiledGuard | null;
  readonly services: CompiledService[] | null;
}

/** Generated source beyond this is not worth it (V8 stops optimizing very large functions). */
const MAX_INLINE_SOURCE = 48 * 1024;

/**
 * One function for the whole tree: every node is written inline with the engine's bookkeeping (fresh,
 * guard, services, status); its own logic inline too when its kind can `emit` it, else a call to its
 * tick. Same statuses, slots and decisions as the call-per-node tree, in the same order
 * (test/bt/properties.test.ts compares them on random trees). Null when code generation is disabled or
 * the tree is too large to be worth it. A broken `emit` (a plugin's included) throws: it is a bug to
 * fix, not something to hide behind the call-per-node tree.
 */
export function inlineRoot(
  behaviors: readonly NodeBehavior[],
  wrapping: readonly NodeWrapping[],
  childLists: ReadonlyArray<readonly number[]>,
  halt: (agent: Agent, node: number) => void,
): TickFn | null {
  if (!CODE_GENERATION) return null;
  const bound: unknown[] = [];
  const names = new Map<unknown, Code>();
  const bind = (value: unknown): Code => {
    let name = names.get(value);
    if (name === undefined) {
      name = ident(`b${bound.length}`);
      bound.push(value);
      names.set(value, name);
    }
    return name;
  };
  let temps = 0;
  const temp = (): Code => ident(`t${temps++}`);
  const emitNode = (i: number, target: Code): Code => {
    const { tick, emit } = behaviors[i]!;
    const { guard, services } = wrapping[i]!;
    const fresh = temp();
    const label = ident(`n${i}`);
    const parts: Code[] = [js`${fresh} = st[${i}] !== ${Status.RUNNING};\n${label}: {\n`];
    if (guard !== null) {
      const abortSelf = guard.abort === 'self' || guard.abort === 'both';
      parts.push(js`${abortSelf ? js`` : js`if (${fresh}) `}{
  const ok = ${bind(truthy)}(${bind(guard.guard)}(a));
  a.slots[${guard.slot}] = ok ? 1 : 0;
  if (!ok) { if (!${fresh}) ${bind(halt)}(a, ${i}); ${target} = ${Status.FAILURE}; break ${label}; }
}\n`);
    }
    if (services !== null) parts.push(js`${bind(runServices)}(a, ${bind(services)}, ${fresh});\n`);
    if (emit === undefined) parts.push(js`${target} = ${bind(tick)}(a, ${fresh});\n`);
    else {
      const children = childLists[i]!;
      const inner = ident(`b_n${i}`);
      parts.push(js`${inner}: {\n${emit({ label: inner, bind, temp, child: (k, t) => emitNode(children[k]!, t) }, fresh, target)}}\n`);
    }
    parts.push(js`}\nst[${i}] = ${target};\n`);
    return joinCode(parts);
  };
  const body = emitNode(0, ident('s'));
  if (body.toString().length > MAX_INLINE_SOURCE) return null;
  const locals = joinCode(Array.from({ length: temps }, (_, k) => js`, ${ident(`t${k}`)}`));
  const source = js`return function tree(a) {\nconst st = a.status;\nlet s${locals};\n${body}return s;\n};`;
  try {
    return generate(bound.map((_, k) => ident(`b${k}`)), source, bound) as TickFn;
  } catch (e) {
    // Only a process that forbids code generation falls back; a SyntaxError from an emit is a bug.
    if (isCodeGenerationDisabled(e)) return null;
    throw e;
  }
}

/**
 * The engine's wrapper around a node's own tick: guard and abort "self", services, and the status
 * bookkeeping every node shares. Nodes without guard or services get the lean variant (hot path).
 */
export function wrapNode(
  i: number,
  tick: (agent: Agent, fresh: boolean) => TickStatus,
  guard: CompiledGuard | null,
  services: CompiledService[] | null,
  halt: (agent: Agent, node: number) => void,
): TickFn {
  if (guard === null && services === null) {
    // One compiled copy per node (fixed source, no tree data in it): each wrapper gets its own
    // feedback, so V8 sees one target at its call site and inlines the node's tick.
    if (CODE_GENERATION) return generate([ident('tick'), ident('i')], LEAN_WRAPPER, [tick, i]) as TickFn;
    return (a) => {
      const st = a.status;
      const s = tick(a, st[i] !== Status.RUNNING);
      st[i] = s;
      return s;
    };
  }
  const check = guard?.guard ?? null;
  const guardSlot = guard?.slot ?? 0;
  const abortSelf = guard !== null && (guard.abort === 'self' || guard.abort === 'both');
  if (CODE_GENERATION) {
    // A per-node copy here too, for the same reason as the lean wrapper.
    const params = ['tick', 'i', 'check', 'guardSlot', 'abortSelf', 'services', 'halt', 'truthy', 'runServices'].map(ident);
    return generate(params, GUARDED_WRAPPER, [tick, i, check, guardSlot, abortSelf, services, halt, truthy, runServices]) as TickFn;
  }
  // The readable form of GUARDED_WRAPPER, for processes that forbid code generation.
  return (a) => {
    const st = a.status;
    const fresh = st[i] !== Status.RUNNING;
    if (check !== null && (fresh || abortSelf)) {
      const ok = truthy(check(a));
      a.slots[guardSlot] = ok ? 1 : 0;
      if (!ok) {
        if (!fresh) halt(a, i);
        st[i] = Status.FAILURE;
        return Status.FAILURE;
      }
    }
    if (services !== null) runServices(a, services, fresh);
    const s = tick(a, fresh);
    st[i] = s;
    return s;
  };
}

const GUARDED_WRAPPER = js`return function guardedNode(a) {
  const st = a.status;
  const fresh = st[i] !== ${Status.RUNNING};
  if (check !== null && (fresh || abortSelf)) {
    const ok = truthy(check(a));
    a.slots[guardSlot] = ok ? 1 : 0;
    if (!ok) {
      if (!fresh) halt(a, i);
      st[i] = ${Status.FAILURE};
      return ${Status.FAILURE};
    }
  }
  if (services !== null) runServices(a, services, fresh);
  const s = tick(a, fresh);
  st[i] = s;
  return s;
};`;

const LEAN_WRAPPER = js`return function node(a) { const st = a.status; const s = tick(a, st[i] !== ${Status.RUNNING}); st[i] = s; return s; };`;

/** Runs a node's services: all on entry, then each when due (at most once per tick, no bursts). */
export function runServices(a: Agent, services: CompiledService[], fresh: boolean): void {
  const slots = a.slots;
  const now = a.time;
  for (let k = 0; k < services.length; k++) {
    const s = services[k]!;
    if (fresh) {
      s.run(a);
      slots[s.slot] = now + s.every;
    } else if (now + TIME_EPSILON >= slots[s.slot]!) {
      s.run(a);
      const next = slots[s.slot]! + s.every;
      // No bursts after a long pause: the next run is one period from now at the latest.
      slots[s.slot] = next + TIME_EPSILON > now ? next : now + s.every;
    }
  }
}
