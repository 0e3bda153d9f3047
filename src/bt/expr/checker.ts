// Checker of the expression language: names, functions, arity, blackboard keys, forbidden names.
// Collects every problem it finds (each at its offset) and what the expression reads.

import type { Expr } from './parser.js';

/** Error codes the checker reports (a subset of ExprError's codes). */
export type CheckCode =
  | 'E_EXPR_UNKNOWN_FUNCTION'
  | 'E_EXPR_ARITY'
  | 'E_EXPR_UNKNOWN_ROOT'
  | 'E_EXPR_FORBIDDEN_NAME'
  | 'E_EXPR_UNDECLARED_KEY';

/** One problem at a UTF-16 offset of the source. */
export interface CheckProblem {
  readonly code: CheckCode;
  readonly message: string;
  readonly offset: number;
}

/** The roots an expression can read, in the order the docs list them. */
export const ROOTS = ['self', 'bb', 'world', 'agent', 'time', 'dt'] as const;
/** One root of the expression language. */
export type Root = (typeof ROOTS)[number];

/** Names that could lead to JavaScript internals; rejected wherever they name a property. */
export { FORBIDDEN_NAMES } from '../definition.js';
import { FORBIDDEN_NAMES } from '../definition.js';

/** A library function's signature: parameter names (for messages and docs) and argument counts. */
export interface FunctionSignature {
  /** Shown in messages and docs, e.g. ['list', 'from', 'maxDist?']. */
  readonly params: readonly string[];
  readonly minArgs: number;
  /** Infinity for `min` and `max`. */
  readonly maxArgs: number;
}

const fixed = (...params: string[]): FunctionSignature => ({
  params,
  minArgs: params.filter((p) => !p.endsWith('?')).length,
  maxArgs: params.length,
});
const variadic: FunctionSignature = { params: ['a', 'b', '...'], minArgs: 1, maxArgs: Infinity };

/** The fixed function library, in the order the spec lists it. */
export const FUNCTIONS: Readonly<Record<string, FunctionSignature>> = {
  abs: fixed('x'),
  min: variadic,
  max: variadic,
  floor: fixed('x'),
  ceil: fixed('x'),
  round: fixed('x'),
  sqrt: fixed('x'),
  clamp: fixed('x', 'lo', 'hi'),
  len: fixed('x'),
  dist: fixed('a', 'b'),
  dist2: fixed('a', 'b'),
  nearest: fixed('list', 'from', 'maxDist?'),
  count: fixed('list'),
  has: fixed('obj', 'key'),
  rand: fixed(),
};

/** What the checker found: problems, and what a correct expression reads. */
export interface CheckResult {
  readonly problems: readonly CheckProblem[];
  /** Blackboard keys read, in order of first appearance (all declared keys when a key is computed at run time). */
  readonly reads: readonly string[];
  /** The roots read, in ROOTS order. */
  readonly roots: readonly Root[];
  readonly usesRandom: boolean;
}

/** Checks a syntax tree against the language's rules and the tree's declared blackboard keys. */
export function check(ast: Expr, blackboardKeys: ReadonlySet<string>): CheckResult {
  const c = new Checker(blackboardKeys);
  c.visit(ast);
  const reads = c.dynamicBlackboard ? [...new Set([...c.reads, ...blackboardKeys])] : [...c.reads];
  return {
    problems: c.problems,
    reads,
    roots: ROOTS.filter((r) => c.roots.has(r)),
    usesRandom: c.usesRandom,
  };
}

/** The closest candidate to `name` (case-insensitive match first, then edit distance ≤ 2), or undefined. */
export function suggest(name: string, candidates: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  const limit = name.length <= 3 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const c of candidates) {
    if (c === name) continue;
    if (c.toLowerCase() === lower) return c;
    if (Math.abs(c.length - name.length) > limit) continue;
    const d = editDistance(lower, c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** Edit distance where swapping two neighbouring letters costs 1 (optimal string alignment). */
function editDistance(a: string, b: string): number {
  let prev2: number[] = [];
  let prev: number[] = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2]! + 1);
      row.push(d);
    }
    prev2 = prev;
    prev = row;
  }
  return prev[b.length]!;
}

const didYouMean = (s: string | undefined): string => (s === undefined ? '' : ` (did you mean '${s}'?)`);

function plural(n: number): string {
  return n === 1 ? '1 argument' : `${n} arguments`;
}

/** "takes 3 arguments (x, lo, hi)" and friends. */
function arityText(sig: FunctionSignature): string {
  if (sig.maxArgs === 0) return 'takes no arguments';
  if (sig.maxArgs === Infinity) return `takes at least ${plural(sig.minArgs)}`;
  const counts = sig.minArgs === sig.maxArgs ? plural(sig.minArgs) : `${sig.minArgs} or ${plural(sig.maxArgs)}`;
  return `takes ${counts} (${sig.params.join(', ')})`;
}

class Checker {
  readonly problems: CheckProblem[] = [];
  readonly reads = new Set<string>();
  readonly roots = new Set<Root>();
  usesRandom = false;
  dynamicBlackboard = false;

  constructor(private readonly blackboardKeys: ReadonlySet<string>) {}

  private report(code: CheckCode, message: string, offset: number): void {
    this.problems.push({ code, message, offset });
  }

  private forbidden(name: string, offset: number): boolean {
    if (!FORBIDDEN_NAMES.has(name)) return false;
    this.report('E_EXPR_FORBIDDEN_NAME', `the name '${name}' is not allowed in expressions`, offset);
    return true;
  }

  visit(e: Expr): void {
    switch (e.kind) {
      case 'literal':
        return;
      case 'array':
        for (const item of e.items) this.visit(item);
        return;
      case 'name':
        this.bareName(e.name, e.start);
        return;
      case 'member':
        if (this.forbidden(e.name, e.start)) return this.visitObject(e.object);
        this.property(e.object, e.name, e.start, null);
        return;
      case 'index': {
        const k = e.index.kind === 'literal' && (typeof e.index.value === 'string' || typeof e.index.value === 'number') ? String(e.index.value) : null;
        if (k !== null && this.forbidden(k, e.index.start)) return this.visitObject(e.object);
        // A literal key is reported where it is written; a computed one at its '['.
        this.property(e.object, k, k === null ? e.start : e.index.start, e.index);
        return;
      }
      case 'call':
        this.call(e.name, e.args, e.start);
        return;
      case 'unary':
        this.visit(e.operand);
        return;
      case 'binary':
      case 'logical':
        this.visit(e.left);
        this.visit(e.right);
        return;
      case 'conditional':
        this.visit(e.test);
        this.visit(e.ifTrue);
        this.visit(e.ifFalse);
        return;
    }
  }

  /** The object of a rejected property: checked too, except `bb` and `agent`, which were used correctly. */
  private visitObject(object: Expr): void {
    if (object.kind !== 'name' || (object.name !== 'bb' && object.name !== 'agent')) this.visit(object);
  }

  /** `object.key` or `object[index]`: `key` is null when the key is computed at run time. */
  private property(object: Expr, key: string | null, keyOffset: number, index: Expr | null): void {
    if (object.kind === 'name' && object.name === 'bb') {
      this.roots.add('bb');
      if (key === null) {
        this.dynamicBlackboard = true;
        if (index !== null) this.visit(index);
      } else if (this.blackboardKeys.has(key)) {
        this.reads.add(key);
      } else {
        this.report(
          'E_EXPR_UNDECLARED_KEY',
          `blackboard key '${key}' is not declared in this tree's blackboard${didYouMean(suggest(key, this.blackboardKeys))}`,
          keyOffset,
        );
      }
      return;
    }
    if (object.kind === 'name' && object.name === 'agent') {
      this.roots.add('agent');
      if (key === null) {
        this.report('E_EXPR_UNKNOWN_ROOT', 'agent can only be read as agent.id or agent.label', keyOffset);
      } else if (key !== 'id' && key !== 'label') {
        this.report('E_EXPR_UNKNOWN_ROOT', `agent has no field '${key}' (use agent.id or agent.label)`, keyOffset);
      }
      return;
    }
    this.visit(object);
    if (index !== null) this.visit(index);
  }

  private bareName(name: string, offset: number): void {
    switch (name) {
      case 'self':
      case 'world':
      case 'time':
      case 'dt':
        this.roots.add(name);
        return;
      case 'bb':
        this.report('E_EXPR_UNKNOWN_ROOT', "'bb' must be followed by a blackboard key, like bb.target", offset);
        return;
      case 'agent':
        this.report('E_EXPR_UNKNOWN_ROOT', "'agent' must be followed by a field: agent.id or agent.label", offset);
        return;
      case 'undefined':
        this.report('E_EXPR_UNKNOWN_ROOT', "unknown name 'undefined' (write null instead)", offset);
        return;
    }
    if (this.forbidden(name, offset)) return;
    if (Object.hasOwn(FUNCTIONS, name)) {
      this.report('E_EXPR_UNKNOWN_ROOT', `'${name}' is a function: call it with parentheses, like ${name}(...)`, offset);
      return;
    }
    const s = suggest(name, ROOTS);
    this.report(
      'E_EXPR_UNKNOWN_ROOT',
      s === undefined
        ? `unknown name '${name}': expressions can only read self, bb, world, agent, time and dt`
        : `unknown name '${name}'${didYouMean(s)}`,
      offset,
    );
  }

  private call(name: string, args: readonly Expr[], offset: number): void {
    if (!this.forbidden(name, offset)) {
      const sig = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
      if (sig === undefined) {
        this.report('E_EXPR_UNKNOWN_FUNCTION', `unknown function '${name}'${didYouMean(suggest(name, Object.keys(FUNCTIONS)))}`, offset);
      } else if (args.length < sig.minArgs || args.length > sig.maxArgs) {
        this.report('E_EXPR_ARITY', `'${name}' ${arityText(sig)} but was given ${args.length}`, offset);
      }
      if (name === 'rand') this.usesRandom = true;
      // has(obj, 'constructor') names a property as surely as obj.constructor does.
      const key = name === 'has' ? args[1] : undefined;
      if (key !== undefined && key.kind === 'literal' && typeof key.value === 'string') this.forbidden(key.value, key.start);
    }
    for (const a of args) this.visit(a);
  }
}
