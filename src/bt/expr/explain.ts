// The why of an expression: evaluates its syntax tree step by step and keeps every sub-expression's value.
// Slow on purpose (an interpreter that allocates); used only on demand for one watched agent's tick.

import type { WhyTerm } from '../frames.js';
import type { ExprContext } from './index.js';
import { parse, type Expr } from './parser.js';
import { BINARY, HELPERS } from './runtime.js';

const { nn, get, at, bbGet, bbAt, neg, num, min2, max2, nearest } = HELPERS;

/**
 * Evaluates `source` against `c` the way the compiled expression does (same helpers, same rules) and
 * returns the term tree: each node's text (printed from the syntax tree) and value. Operands that
 * `&&`, `||`, `??` or `? :` did not evaluate are kept with `skipped: true` and value null. `rand()`
 * draws nothing (the draw cannot be replayed): its value is null and it is marked skipped.
 * Returns null when the source does not parse (never the case for a loaded tree's expression).
 */
export function explainExpression(source: string, c: ExprContext): WhyTerm | null {
  const parsed = parse(source);
  if (!parsed.ok) return null;
  return explain(parsed.ast, c);
}

function term(e: Expr, value: unknown, children: WhyTerm[]): WhyTerm {
  return { text: print(e), value: value === undefined ? null : value, children };
}

function skipped(e: Expr): WhyTerm {
  return { text: print(e), value: null, children: [], skipped: true };
}

function explain(e: Expr, c: ExprContext): WhyTerm {
  switch (e.kind) {
    case 'literal':
      return term(e, e.value, []);
    case 'array': {
      const items = e.items.map((i) => explain(i, c));
      return term(e, items.map((i) => i.value), items);
    }
    case 'name':
      return term(e, e.name === 'time' ? c.time : e.name === 'dt' ? c.dt : nn(e.name === 'self' ? c.self : c.world), []);
    case 'member': {
      const o = e.object;
      if (o.kind === 'name' && o.name === 'bb') return term(e, bbGet(c.bb, e.name), []);
      if (o.kind === 'name' && o.name === 'agent') return term(e, e.name === 'id' ? c.agent.id : c.agent.label, []);
      const obj = explain(o, c);
      return term(e, get(object(o, obj, c), e.name), [obj]);
    }
    case 'index': {
      const o = e.object;
      const idx = explain(e.index, c);
      if (o.kind === 'name' && o.name === 'bb') return term(e, bbAt(c.bb, idx.value), [idx]);
      const obj = explain(o, c);
      return term(e, at(object(o, obj, c), idx.value), [obj, idx]);
    }
    case 'unary': {
      const v = explain(e.operand, c);
      return term(e, e.op === '!' ? !v.value : neg(v.value), [v]);
    }
    case 'binary': {
      const l = explain(e.left, c);
      const r = explain(e.right, c);
      return term(e, BINARY[e.op]!(l.value, r.value), [l, r]);
    }
    case 'logical': {
      const l = explain(e.left, c);
      const lv = l.value;
      const decided = e.op === '&&' ? !lv : e.op === '||' ? !!lv : lv != null;
      if (decided) return term(e, lv, [l, skipped(e.right)]);
      const r = explain(e.right, c);
      return term(e, r.value, [l, r]);
    }
    case 'conditional': {
      const t = explain(e.test, c);
      const yes = explain(t.value ? e.ifTrue : e.ifFalse, c);
      const children = t.value ? [t, yes, skipped(e.ifFalse)] : [t, skipped(e.ifTrue), yes];
      return term(e, yes.value, children);
    }
    case 'call':
      return call(e, c);
  }
}

/** The object a read looks into: `self` and `world` as they are (the compiled code does not null them first). */
function object(o: Expr, evaluated: WhyTerm, c: ExprContext): unknown {
  if (o.kind === 'name' && (o.name === 'self' || o.name === 'world')) return o.name === 'self' ? c.self : c.world;
  return evaluated.value;
}


function call(e: Extract<Expr, { kind: 'call' }>, c: ExprContext): WhyTerm {
  if (e.name === 'rand') return skipped(e);
  const args = e.args.map((x) => explain(x, c));
  const v = args.map((a) => a.value);
  let value: unknown;
  switch (e.name) {
    case 'min':
    case 'max': {
      const pair = e.name === 'min' ? min2 : max2;
      value = v.length === 1 ? num(v[0]) : v.slice(1).reduce((acc, x) => pair(acc, x), v[0]);
      break;
    }
    case 'nearest':
      value = nearest(v[0], v[1], v.length > 2 ? v[2] : Infinity);
      break;
    default: {
      const fn = (HELPERS as unknown as Record<string, (...a: unknown[]) => unknown>)[e.name];
      value = fn === undefined ? null : fn(...v);
    }
  }
  return term(e, value, args);
}

const PRECEDENCE: Readonly<Record<string, number>> = {
  '??': 1, '||': 2, '&&': 3, '==': 4, '!=': 4, '<': 5, '<=': 5, '>': 5, '>=': 5, '+': 6, '-': 6, '*': 7, '/': 7, '%': 7,
};

/** How tightly `e` binds when printed (operators by precedence; everything else is atomic). */
function strength(e: Expr): number {
  if (e.kind === 'binary' || e.kind === 'logical') return PRECEDENCE[e.op]!;
  if (e.kind === 'conditional') return 0;
  if (e.kind === 'unary') return 8;
  return 9;
}

/** The expression's text, printed from its syntax tree with the parentheses it needs. */
export function print(e: Expr): string {
  const wrap = (x: Expr, min: number): string => (strength(x) < min ? `(${print(x)})` : print(x));
  switch (e.kind) {
    case 'literal':
      return JSON.stringify(e.value);
    case 'array':
      return `[${e.items.map(print).join(', ')}]`;
    case 'name':
      return e.name;
    case 'member':
      return `${wrap(e.object, 9)}.${e.name}`;
    case 'index':
      return `${wrap(e.object, 9)}[${print(e.index)}]`;
    case 'call':
      return `${e.name}(${e.args.map(print).join(', ')})`;
    case 'unary':
      return `${e.op}${wrap(e.operand, 8)}`;
    case 'binary':
    case 'logical': {
      const p = PRECEDENCE[e.op]!;
      return `${wrap(e.left, p)} ${e.op} ${wrap(e.right, p + 1)}`;
    }
    case 'conditional':
      return `${wrap(e.test, 1)} ? ${print(e.ifTrue)} : ${print(e.ifFalse)}`;
  }
}
