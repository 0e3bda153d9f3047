// The compiler's code generation: the engine's wrapper around each node, and the whole tree as one function
// built from the kinds' `emit`s. Both have a plain path for `--disallow-code-generation-from-strings`.

import type { Agent } from './agent.js';
import { CODE_GENERATION, generate, ident, isCodeGenerationDisabled, joinCode, js, literal, type Code } from './codegen.js';
import type { AbortMode } from './definition.js';
import { truthy, type CompiledExpr } from './expr/index.js';
import type { NodeBehavior, NodeEmitter } from './node.js';
import { Status, TIME_EPSILON, type TickStatus } from './status.js';

type TickFn = (agent: Agent) => TickStatus;

/** A compiled service entry of a node: its period, the slot holding its next due time, and its run. */
export interface CompiledService {
  readonly every: number;
  readonly slot: number;
  readonly run: (agent: Agent) => void;
  /** For a `values` service: its blackboard writes, in order (run applies them one after the other). */
  readonly writes?: ReadonlyArray<readonly [string, CompiledExpr]>;
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

/** A function's generated source beyond this is not worth it (V8 stops optimizing very large functions). */
const MAX_INLINE_SOURCE = 48 * 1024;

/**
 * A node whose inline code grows beyond this becomes a function of its own, called from its parent's
 * code: each function stays small enough for V8 to optimise quickly and to inline the calls it makes
 * (its inlining budget is per function), and a tree of any size still compiles.
 */
const SPLIT_SOURCE = 6 * 1024;

/** What a bound value looks like to generated code: `bind` gives it a name. */
type Bind = (value: unknown) => Code;

/** Constant args objects of action nodes (frozen, shared by every agent): generated code uses them directly. */
const CONSTANT_ARGS = new WeakMap<object, Readonly<Record<string, unknown>>>();

/** Marks `args` as returning the same frozen object every time (see {@link constantArgs}). */
export function markConstantArgs<F extends object>(args: F, value: Readonly<Record<string, unknown>>): F {
  CONSTANT_ARGS.set(args, value);
  return args;
}

/** The object an args function always returns, when it is constant (all values literal); else undefined. */
export function constantArgs(args: object): Readonly<Record<string, unknown>> | undefined {
  return CONSTANT_ARGS.get(args);
}

/**
 * Blackboard writes as statements with the keys as quoted literals (one monomorphic store each).
 * `sequential`: each value is written before the next is evaluated (services' `values`); otherwise all
 * values are evaluated first, then written (`set`, subtree `args`), as blackboardWriter does.
 */
export function emitWrites(bind: Bind, writes: ReadonlyArray<readonly [string, CompiledExpr]>, sequential: boolean): Code {
  if (sequential || writes.length === 1) return joinCode(writes.map(([key, expr]) => js`a.bb[${literal(key)}] = ${bind(expr)}(a);\n`));
  const values = writes.map(([, expr], k) => js`const ${ident(`w${k}`)} = ${bind(expr)}(a);\n`);
  const stores = writes.map(([key], k) => js`a.bb[${literal(key)}] = ${ident(`w${k}`)};\n`);
  return js`{\n${joinCode(values)}${joinCode(stores)}}\n`;
}

/** A node's services inline: all on entry, then each when due; the same rules as runServices. */
function emitServices(bind: Bind, services: readonly CompiledService[], fresh: Code): Code {
  return joinCode(
    services.map((sv) => {
      const run = sv.writes !== undefined ? emitWrites(bind, sv.writes, true) : js`${bind(sv.run)}(a);\n`;
      const every = bind(sv.every);
      return js`if (${fresh}) {\n${run}sl[${sv.slot}] = a.time + ${every};\n} else if (a.time + ${TIME_EPSILON} >= sl[${sv.slot}]) {
${run}const next = sl[${sv.slot}] + ${every};
sl[${sv.slot}] = next + ${TIME_EPSILON} > a.time ? next : a.time + ${every};
}\n`;
    }),
  );
}

/**
 * One function for the whole tree: every node is written inline with the engine's bookkeeping (fresh,
 * guard, services, status); its own logic inline too when its kind can `emit` it, else a call to its
 * tick. A node whose code grows large becomes a function of its own (SPLIT_SOURCE). Same statuses, slots
 * and decisions as the call-per-node tree, in the same order (test/bt/properties.test.ts compares them on
 * random trees). Null when code generation is disabled or a single function would be too large to be
 * worth it. A broken `emit` (a plugin's included) throws: it is a bug to fix, not something to hide
 * behind the call-per-node tree.
 */
export function inlineRoot(
  behaviors: readonly NodeBehavior[],
  wrapping: readonly NodeWrapping[],
  childLists: ReadonlyArray<readonly number[]>,
  halt: (agent: Agent, node: number) => void,
  splitSource = SPLIT_SOURCE,
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
  // Temps declared by a split-off function (the rest are the root function's).
  const owned = new Set<number>();
  const functions: Code[] = [];
  let tooLarge = false;
  /** `let` of the temps in [from, to) no split-off function declared yet, plus `extra`, then marks them owned. */
  const declare = (from: number, to: number, extra: readonly Code[]): Code => {
    const list: Code[] = [...extra];
    for (let k = from; k < to; k++) {
      if (owned.has(k)) continue;
      owned.add(k);
      list.push(ident(`t${k}`));
    }
    return js`let ${joinCode(list, ', ')};\n`;
  };
  const emitNode = (i: number, target: Code): Code => {
    const { tick, emit } = behaviors[i]!;
    const { guard, services } = wrapping[i]!;
    const start = temps;
    const fresh = temp();
    const label = ident(`n${i}`);
    const parts: Code[] = [js`${fresh} = st[${i}] !== ${Status.RUNNING};\n${label}: {\n`];
    if (guard !== null) {
      const abortSelf = guard.abort === 'self' || guard.abort === 'both';
      parts.push(js`${abortSelf ? js`` : js`if (${fresh}) `}{
  const ok = ${bind(guard.guard)}(a) ? true : false;
  sl[${guard.slot}] = ok ? 1 : 0;
  if (!ok) { if (!${fresh}) ${bind(halt)}(a, ${i}); ${target} = ${Status.FAILURE}; break ${label}; }
}\n`);
    }
    if (services !== null) parts.push(emitServices(bind, services, fresh));
    if (emit === undefined) parts.push(js`${target} = ${bind(tick)}(a, ${fresh});\n`);
    else {
      const children = childLists[i]!;
      const inner = ident(`b_n${i}`);
      const emitter: NodeEmitter = {
        label: inner,
        bind,
        temp,
        child: (k, t) => emitNode(children[k]!, t),
        writes: (writes) => emitWrites(bind, writes, false),
      };
      parts.push(js`${inner}: {\n${emit(emitter, fresh, target)}}\n`);
    }
    parts.push(js`}\nst[${i}] = ${target};\n`);
    const code = joinCode(parts);
    const size = code.toString().length;
    if (i === 0 || size <= splitSource) return code;
    // Split off: a function of its own with its own temps (and `target`, which the caller declares).
    if (size > MAX_INLINE_SOURCE) tooLarge = true;
    const name = ident(`f${i}`);
    functions.push(js`function ${name}(a) {\nconst st = a.status, sl = a.slots;\n${declare(start, temps, [target])}${code}return ${target};\n}\n`);
    return js`${target} = ${name}(a);\n`;
  };
  const body = emitNode(0, ident('s'));
  if (tooLarge || body.toString().length > MAX_INLINE_SOURCE) return null;
  const source = js`${joinCode(functions)}return function tree(a) {\nconst st = a.status, sl = a.slots;\n${declare(0, temps, [ident('s')])}${body}return s;\n};`;
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
