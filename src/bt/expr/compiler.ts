// Compiler of the expression language: a checked syntax tree → one JavaScript function, built once.
// Generated code is made only of fixed helper names, `c.<root>`, and JSON.stringify'd literals and
// keys: no text of the expression is ever copied into it raw.

import type { CompiledExpr, ExprContext } from './index.js';
import type { BinaryOp, Expr } from './parser.js';
import { HELPERS, type HelperName } from './runtime.js';

/** Options of `compile`; the defaults are what compileExpression uses. */
export interface CompileOptions {
  /** Evaluate root-free subexpressions once at load time (default true). Tests turn it off to check folding. */
  readonly fold?: boolean;
}

/** A compiled expression and whether it is a constant (reads no root and draws no random number). */
export interface Compiled {
  readonly fn: CompiledExpr;
  readonly constant: boolean;
  /** The value of a constant expression (arrays are frozen: every agent shares them). */
  readonly value: unknown;
}

type Factory = (...args: unknown[]) => CompiledExpr;

const HELPER_NAMES = Object.keys(HELPERS) as HelperName[];
const HELPER_VALUES: unknown[] = HELPER_NAMES.map((n) => HELPERS[n]);

// The context parameter's name in generated code; nothing else is called `c` there.
const CTX = 'c';

/** Compiles a checked syntax tree. Throws only on internal errors (compileExpression catches them). */
export function compile(ast: Expr, options: CompileOptions = {}): Compiled {
  const fold = options.fold ?? true;
  const constant = isConstant(ast, new Map());
  if (constant && fold) {
    const [value] = evaluateAll([ast]);
    const frozen = deepFreeze(value);
    return { fn: () => frozen, constant: true, value: frozen };
  }
  const folded = fold ? foldConstants(ast) : new Map<Expr, unknown>();
  const hoisted: unknown[] = [];
  const emitter = new Emitter(folded, hoisted);
  const body = emitter.emit(ast);
  const prelude = hoisted.map((_, i) => `const k${i} = k[${i}];`).join('\n');
  const temps = emitter.temps > 0 ? `let ${Array.from({ length: emitter.temps }, (_, i) => `t${i}`).join(', ')}; ` : '';
  const source = `"use strict";\n${prelude}\nreturn function canopyExpression(${CTX}) { ${temps}return ${body}; };`;
  // Built once per expression at load time from generated code only (see the file header).
  const factory = new Function(...HELPER_NAMES, 'k', source) as Factory;
  const fn = factory(...HELPER_VALUES, hoisted);
  if (!constant) return { fn, constant: false, value: undefined };
  const value = deepFreeze(fn(NO_CONTEXT));
  return { fn, constant: true, value };
}

/** Passed to constant expressions, which never read it. */
const NO_CONTEXT: ExprContext = {
  self: null,
  bb: {},
  world: null,
  agent: { id: 0, label: '' },
  time: 0,
  dt: 0,
  random: () => 0,
};

/** True when `e` reads no root and draws no random number; every node below is memoised in `memo`. */
function isConstant(e: Expr, memo: Map<Expr, boolean>): boolean {
  const known = memo.get(e);
  if (known !== undefined) return known;
  // Every child is visited (no short-circuit) so that foldConstants finds all of them in `memo`.
  const allChildren = children(e)
    .map((k) => isConstant(k, memo))
    .every(Boolean);
  const r = e.kind !== 'name' && !(e.kind === 'call' && e.name === 'rand') && allChildren;
  memo.set(e, r);
  return r;
}

function children(e: Expr): readonly Expr[] {
  switch (e.kind) {
    case 'literal':
    case 'name':
      return [];
    case 'array':
      return e.items;
    case 'member':
      return [e.object];
    case 'index':
      return [e.object, e.index];
    case 'call':
      return e.args;
    case 'unary':
      return [e.operand];
    case 'binary':
    case 'logical':
      return [e.left, e.right];
    case 'conditional':
      return [e.test, e.ifTrue, e.ifFalse];
  }
}

/** Finds the largest constant subexpressions (other than literals) and evaluates them all at once. */
function foldConstants(ast: Expr): Map<Expr, unknown> {
  const memo = new Map<Expr, boolean>();
  isConstant(ast, memo);
  const targets: Expr[] = [];
  const stack: Expr[] = [ast];
  while (stack.length > 0) {
    const e = stack.pop()!;
    if (memo.get(e) === true) {
      if (e.kind !== 'literal') targets.push(e);
    } else {
      stack.push(...children(e));
    }
  }
  const values = evaluateAll(targets);
  return new Map(targets.map((e, i) => [e, values[i]]));
}

/** Evaluates root-free expressions with one generated function. */
function evaluateAll(exprs: readonly Expr[]): unknown[] {
  if (exprs.length === 0) return [];
  const emitter = new Emitter(new Map(), []);
  const items = exprs.map((e) => emitter.emit(e)).join(',\n');
  const temps = emitter.temps > 0 ? `let ${Array.from({ length: emitter.temps }, (_, i) => `t${i}`).join(', ')};\n` : '';
  const source = `"use strict";\n${temps}return [${items}];`;
  const evaluate = new Function(...HELPER_NAMES, source) as (...args: unknown[]) => unknown[];
  return evaluate(...HELPER_VALUES);
}

function deepFreeze(v: unknown): unknown {
  if (Array.isArray(v) && !Object.isFrozen(v)) {
    for (const item of v) deepFreeze(item);
    Object.freeze(v);
  }
  return v;
}

/** JavaScript source of a number literal (finite, checked by the lexer or by folding). */
function numberCode(n: number): string {
  if (Object.is(n, -0)) return '(-0)';
  return n < 0 ? `(${String(n)})` : String(n);
}

/** Writes the JavaScript of an expression. Every compound result is parenthesised or a call. */
class Emitter {
  temps = 0;
  constructor(
    private readonly folded: ReadonlyMap<Expr, unknown>,
    private readonly hoisted: unknown[],
  ) {}

  emit(e: Expr): string {
    if (this.folded.has(e)) return this.value(this.folded.get(e));
    switch (e.kind) {
      case 'literal':
        return this.value(e.value);
      case 'array':
        return `[${e.items.map((i) => this.emit(i)).join(', ')}]`;
      case 'name':
        return this.root(e.name, false);
      case 'member':
        return this.read(e.object, JSON.stringify(e.name), e.name);
      case 'index': {
        const k = e.index.kind === 'literal' ? e.index.value : undefined;
        if (typeof k === 'string') return this.read(e.object, JSON.stringify(k), k);
        if (typeof k === 'number' && isBlackboard(e.object)) return this.read(e.object, JSON.stringify(String(k)), String(k));
        if (isBlackboard(e.object)) return `bbAt(${CTX}.bb, ${this.emit(e.index)})`;
        if (typeof k === 'number') return `get(${this.object(e.object)}, ${numberCode(k)})`;
        return `at(${this.object(e.object)}, ${this.emit(e.index)})`;
      }
      case 'call':
        return this.call(e.name, e.args);
      case 'unary':
        return e.op === '!' ? `(!${this.emit(e.operand)})` : `neg(${this.emit(e.operand)})`;
      case 'binary':
        return this.binary(e.op, e.left, e.right);
      case 'logical':
        return `(${this.emit(e.left)} ${e.op} ${this.emit(e.right)})`;
      case 'conditional':
        return `(${this.emit(e.test)} ? ${this.emit(e.ifTrue)} : ${this.emit(e.ifFalse)})`;
    }
  }

  /** A load-time value: primitives inline, arrays hoisted into a frozen constant. */
  private value(v: unknown): string {
    if (v === null || v === undefined) return 'null';
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (typeof v === 'string') return JSON.stringify(v);
    if (typeof v === 'number' && Number.isFinite(v)) return numberCode(v);
    this.hoisted.push(deepFreeze(v));
    return `k${this.hoisted.length - 1}`;
  }

  /** A root as a value (`nn` keeps undefined out) or as an object to read from (helpers check it). */
  private root(name: string, asObject: boolean): string {
    switch (name) {
      case 'self':
      case 'world':
        return asObject ? `${CTX}.${name}` : `nn(${CTX}.${name})`;
      case 'time':
      case 'dt':
        return `${CTX}.${name}`;
      default:
        // The checker allows `bb` and `agent` only before a key; anything else is a bug here.
        throw new Error(`internal: root '${name}' cannot be compiled as a value`);
    }
  }

  private object(e: Expr): string {
    return e.kind === 'name' ? this.root(e.name, true) : this.emit(e);
  }

  /** `object.key` with a key known at load time; `keyCode` is its JSON.stringify'd form. */
  private read(object: Expr, keyCode: string, key: string): string {
    if (object.kind === 'name' && object.name === 'bb') return `bbGet(${CTX}.bb, ${keyCode})`;
    if (object.kind === 'name' && object.name === 'agent') return key === 'id' ? `${CTX}.agent.id` : `${CTX}.agent.label`;
    // Inline named read: a monomorphic load per expression (the shared get() sees every key and shape).
    const t = `t${this.temps++}`;
    return `((${t} = ${this.object(object)}) !== null && typeof ${t} === 'object' && hasOwn(${t}, ${keyCode}) && isPlain(${t}) ? val(${t}[${keyCode}]) : null)`;
  }

  /** The value of `e` when it is known at load time and is a primitive (a literal or a folded constant). */
  private primitive(e: Expr): { readonly value: null | boolean | number | string } | undefined {
    const v = e.kind === 'literal' ? e.value : this.folded.has(e) ? this.folded.get(e) : undefined;
    if (v === null || typeof v === 'boolean' || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return { value: v };
    return undefined;
  }

  private binary(op: BinaryOp, left: Expr, right: Expr): string {
    const a = this.emit(left);
    const b = this.emit(right);
    switch (op) {
      case '==':
      case '!=': {
        const negate = op === '!=';
        // A literal side lets the comparison inline: `x === 3`, `x == null` (null and undefined).
        const l = this.primitive(left);
        const r = l === undefined ? this.primitive(right) : undefined;
        const lit = l ?? r;
        if (lit !== undefined) {
          const other = l !== undefined ? b : a;
          if (lit.value === null) return `(${other} ${negate ? '!=' : '=='} null)`;
          return `(${other} ${negate ? '!==' : '==='} ${this.value(lit.value)})`;
        }
        return negate ? `(!eq(${a}, ${b}))` : `eq(${a}, ${b})`;
      }
      case '<':
        return `lt(${a}, ${b})`;
      case '<=':
        return `le(${a}, ${b})`;
      case '>':
        return `gt(${a}, ${b})`;
      case '>=':
        return `ge(${a}, ${b})`;
      case '+':
        return `add(${a}, ${b})`;
      case '-':
        return `sub(${a}, ${b})`;
      case '*':
        return `mul(${a}, ${b})`;
      case '/':
        return `div(${a}, ${b})`;
      case '%':
        return `mod(${a}, ${b})`;
    }
  }

  private call(name: string, args: readonly Expr[]): string {
    const a = args.map((x) => this.emit(x));
    switch (name) {
      case 'min':
      case 'max': {
        // No arrays at run time: min(a, b, c) is min2(min2(a, b), c), which propagates null the same way.
        const pair = name === 'min' ? 'min2' : 'max2';
        return a.length === 1 ? `num(${a[0]})` : a.slice(1).reduce((acc, x) => `${pair}(${acc}, ${x})`, a[0]!);
      }
      case 'nearest':
        return `nearest(${a[0]}, ${a[1]}, ${a[2] ?? 'Infinity'})`;
      case 'rand':
        return `${CTX}.random()`;
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
      case 'dist2':
        return `${name}(${a.join(', ')})`;
      default:
        throw new Error(`internal: unknown function '${name}'`);
    }
  }
}

function isBlackboard(e: Expr): boolean {
  return e.kind === 'name' && e.name === 'bb';
}
