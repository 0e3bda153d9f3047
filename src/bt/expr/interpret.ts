// Expressions without code generation: a checked syntax tree → nested closures, same helpers and rules as
// compiler.ts. Used where strings may not become code (node --disallow-code-generation-from-strings).

import type { CompiledExpr, ExprContext } from './index.js';
import type { Expr } from './parser.js';
import { BINARY, HELPERS } from './runtime.js';

type Eval = (c: ExprContext) => unknown;

const { nn, get, at, bbGet, bbAt, neg, num, min2, max2, nearest } = HELPERS;
const CALLS = HELPERS as unknown as Readonly<Record<string, (...args: unknown[]) => unknown>>;


/**
 * The closure form of `e`. `folded` holds the values of root-free subexpressions computed at load time
 * (compiler.ts foldConstants); they are returned as they are, like the generated code's hoisted constants.
 */
export function interpret(e: Expr, folded: ReadonlyMap<Expr, unknown>): CompiledExpr {
  return closure(e, folded) as CompiledExpr;
}

function closure(e: Expr, folded: ReadonlyMap<Expr, unknown>): Eval {
  if (folded.has(e)) return constant(folded.get(e));
  const inner = (x: Expr): Eval => closure(x, folded);
  switch (e.kind) {
    case 'literal':
      return constant(e.value);
    case 'array': {
      const items = e.items.map(inner);
      return (c) => items.map((i) => i(c));
    }
    case 'name':
      return root(e.name);
    case 'member':
      return read(e.object, e.name, folded);
    case 'index': {
      const k = e.index.kind === 'literal' ? e.index.value : undefined;
      if (typeof k === 'string') return read(e.object, k, folded);
      if (typeof k === 'number' && isBlackboard(e.object)) return read(e.object, String(k), folded);
      const index = inner(e.index);
      if (isBlackboard(e.object)) return (c) => bbAt(c.bb as Record<string, unknown>, index(c));
      const object = objectOf(e.object, folded);
      if (typeof k === 'number') return (c) => get(object(c), k);
      return (c) => at(object(c), index(c));
    }
    case 'call':
      return call(e.name, e.args.map(inner));
    case 'unary': {
      const v = inner(e.operand);
      return e.op === '!' ? (c) => !v(c) : (c) => neg(v(c));
    }
    case 'binary': {
      const [l, r, op] = [inner(e.left), inner(e.right), BINARY[e.op]];
      return (c) => op(l(c), r(c));
    }
    case 'logical': {
      const [l, r] = [inner(e.left), inner(e.right)];
      if (e.op === '&&') return (c) => l(c) && r(c);
      if (e.op === '||') return (c) => l(c) || r(c);
      return (c) => l(c) ?? r(c);
    }
    case 'conditional': {
      const [t, y, n] = [inner(e.test), inner(e.ifTrue), inner(e.ifFalse)];
      return (c) => (t(c) ? y(c) : n(c));
    }
  }
}

/** A load-time value (undefined becomes null, as the generated code writes it). */
function constant(v: unknown): Eval {
  const value = v === undefined ? null : v;
  return () => value;
}

/** A root as a value: `self`/`world` with undefined and functions made null. */
function root(name: string): Eval {
  switch (name) {
    case 'self':
      return (c) => nn(c.self);
    case 'world':
      return (c) => nn(c.world);
    case 'time':
      return (c) => c.time;
    case 'dt':
      return (c) => c.dt;
    default:
      throw new Error(`internal: root '${name}' cannot be evaluated as a value`);
  }
}

/** The object a read looks into: roots as they are (the helpers check them), else the value. */
function objectOf(e: Expr, folded: ReadonlyMap<Expr, unknown>): Eval {
  if (e.kind !== 'name') return closure(e, folded);
  switch (e.name) {
    case 'self':
      return (c) => c.self;
    case 'world':
      return (c) => c.world;
    default:
      return root(e.name);
  }
}

/** `object.key` with a key known at load time. */
function read(object: Expr, key: string, folded: ReadonlyMap<Expr, unknown>): Eval {
  if (isBlackboard(object)) return (c) => bbGet(c.bb as Record<string, unknown>, key);
  if (object.kind === 'name' && object.name === 'agent') return key === 'id' ? (c) => c.agent.id : (c) => c.agent.label;
  const o = objectOf(object, folded);
  return (c) => get(o(c), key);
}

function call(name: string, args: readonly Eval[]): Eval {
  switch (name) {
    case 'min':
    case 'max': {
      const pair = name === 'min' ? min2 : max2;
      const first = args[0]!;
      if (args.length === 1) return (c) => num(first(c));
      const rest = args.slice(1);
      return (c) => {
        let acc: unknown = first(c);
        for (const x of rest) acc = pair(acc, x(c));
        return acc;
      };
    }
    case 'nearest': {
      const [list, from, max] = args;
      return (c) => nearest(list!(c), from!(c), max === undefined ? Infinity : max(c));
    }
    case 'rand':
      return (c) => c.random();
    case 'abs':
    case 'floor':
    case 'ceil':
    case 'round':
    case 'sqrt':
    case 'clamp':
    case 'len':
    case 'count':
    case 'has':
    case 'dist':
    case 'dist2': {
      const fn = CALLS[name]!;
      return (c) => fn(...args.map((x) => x(c)));
    }
    default:
      throw new Error(`internal: unknown function '${name}'`);
  }
}

function isBlackboard(e: Expr): boolean {
  return e.kind === 'name' && e.name === 'bb';
}
