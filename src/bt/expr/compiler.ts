// Compiler of the expression language: a checked syntax tree → one JavaScript function, built once.
// Generated code is made only of fixed helper names, `c.<root>`, and quoted literals and keys (codegen.ts
// `js` and `literal`): no text of the expression is ever copied into it raw.

import { CODE_GENERATION, generate, ident, joinCode, js, literal, type Code } from '../codegen.js';
import type { CompiledExpr, ExprContext } from './index.js';
import { interpret } from './interpret.js';
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

const HELPER_NAMES = Object.keys(HELPERS) as HelperName[];
/**
 * The prototypes a plain object's or an array's missing keys are looked up in, for `key in objectProto ||
 * key in arrayProto` (see Emitter.read): not helpers callable from an expression, only bound for the code.
 */
const PROTO_PARAMS: readonly Code[] = [ident('objectProto'), ident('arrayProto')];
const HELPER_VALUES: unknown[] = [...HELPER_NAMES.map((n) => HELPERS[n]), Object.prototype, Array.prototype];
const HELPER_PARAMS: readonly Code[] = [...HELPER_NAMES.map(ident), ...PROTO_PARAMS];
/** The helpers as identifiers of generated code. */
const H = Object.fromEntries(HELPER_NAMES.map((n) => [n, ident(n)])) as Readonly<Record<HelperName, Code>>;

// The context parameter's name in generated code; nothing else is called `c` there.
const CTX = ident('c');

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
  // Where strings may not become code, the same tree runs as closures (same helpers, same rules).
  const fn = CODE_GENERATION ? generated(ast, folded) : interpret(ast, folded);
  if (!constant) return { fn, constant: false, value: undefined };
  const value = deepFreeze(fn(NO_CONTEXT));
  return { fn, constant: true, value };
}

/** The expression as one generated function (built once per expression at load time). */
function generated(ast: Expr, folded: ReadonlyMap<Expr, unknown>): CompiledExpr {
  const hoisted: unknown[] = [];
  const emitter = new Emitter(folded, hoisted);
  const body = emitter.emit(ast);
  const prelude = joinCode(hoisted.map((_, i) => js`const ${ident(`k${i}`)} = k[${i}];\n`));
  const temps = emitter.temps > 0 ? js`let ${joinCode(Array.from({ length: emitter.temps }, (_, i) => ident(`t${i}`)), ', ')}; ` : js``;
  const source = js`${prelude}return function canopyExpression(${CTX}) { ${temps}return ${body}; };`;
  return generate([...HELPER_PARAMS, ident('k')], source, [...HELPER_VALUES, hoisted]) as CompiledExpr;
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

/** Evaluates root-free expressions with one generated function (closures where code generation is off). */
function evaluateAll(exprs: readonly Expr[]): unknown[] {
  if (exprs.length === 0) return [];
  if (!CODE_GENERATION) return exprs.map((e) => interpret(e, new Map())(NO_CONTEXT));
  const emitter = new Emitter(new Map(), []);
  const items = joinCode(exprs.map((e) => emitter.emit(e)), ', ');
  const temps = emitter.temps > 0 ? js`let ${joinCode(Array.from({ length: emitter.temps }, (_, i) => ident(`t${i}`)), ', ')};\n` : js``;
  return generate(HELPER_PARAMS, js`${temps}return [${items}];`, HELPER_VALUES) as unknown[];
}

function deepFreeze(v: unknown): unknown {
  if (Array.isArray(v) && !Object.isFrozen(v)) {
    for (const item of v) deepFreeze(item);
    Object.freeze(v);
  }
  return v;
}

/** Writes the JavaScript of an expression. Every compound result is parenthesised or a call. */
class Emitter {
  temps = 0;
  constructor(
    private readonly folded: ReadonlyMap<Expr, unknown>,
    private readonly hoisted: unknown[],
  ) {}

  emit(e: Expr): Code {
    if (this.folded.has(e)) return this.value(this.folded.get(e));
    switch (e.kind) {
      case 'literal':
        return this.value(e.value);
      case 'array':
        return js`[${joinCode(e.items.map((i) => this.emit(i)), ', ')}]`;
      case 'name':
        return this.root(e.name, false);
      case 'member':
        return this.read(e.object, e.name);
      case 'index': {
        const k = e.index.kind === 'literal' ? e.index.value : undefined;
        if (typeof k === 'string') return this.read(e.object, k);
        if (typeof k === 'number' && isBlackboard(e.object)) return this.read(e.object, String(k));
        if (isBlackboard(e.object)) return js`${H.bbAt}(${CTX}.bb, ${this.emit(e.index)})`;
        if (typeof k === 'number') return js`${H.get}(${this.object(e.object)}, ${k})`;
        return js`${H.at}(${this.object(e.object)}, ${this.emit(e.index)})`;
      }
      case 'call':
        return this.call(e.name, e.args);
      case 'unary':
        return e.op === '!' ? js`(!${this.emit(e.operand)})` : js`${H.neg}(${this.emit(e.operand)})`;
      case 'binary':
        return this.binary(e.op, e.left, e.right);
      case 'logical': {
        const [l, r] = [this.emit(e.left), this.emit(e.right)];
        return e.op === '&&' ? js`(${l} && ${r})` : e.op === '||' ? js`(${l} || ${r})` : js`(${l} ?? ${r})`;
      }
      case 'conditional':
        return js`(${this.emit(e.test)} ? ${this.emit(e.ifTrue)} : ${this.emit(e.ifFalse)})`;
    }
  }

  /** A load-time value: primitives inline (strings quoted by `literal`), arrays hoisted into a frozen constant. */
  private value(v: unknown): Code {
    if (v === null || v === undefined) return js`null`;
    if (typeof v === 'boolean' || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return literal(v);
    this.hoisted.push(deepFreeze(v));
    return ident(`k${this.hoisted.length - 1}`);
  }

  /** A root as a value (`nn` keeps undefined out) or as an object to read from (helpers check it). */
  private root(name: string, asObject: boolean): Code {
    switch (name) {
      case 'self':
        return asObject ? js`${CTX}.self` : js`${H.nn}(${CTX}.self)`;
      case 'world':
        return asObject ? js`${CTX}.world` : js`${H.nn}(${CTX}.world)`;
      case 'time':
        return js`${CTX}.time`;
      case 'dt':
        return js`${CTX}.dt`;
      default:
        // The checker allows `bb` and `agent` only before a key; anything else is a bug here.
        throw new Error(`internal: root '${name}' cannot be compiled as a value`);
    }
  }

  private object(e: Expr): Code {
    return e.kind === 'name' ? this.root(e.name, true) : this.emit(e);
  }

  /** `object.key` with a key known at load time (quoted into the code by `literal`). */
  private read(object: Expr, key: string): Code {
    const k = literal(key);
    if (object.kind === 'name' && object.name === 'bb') {
      // A declared key is always an own property of the blackboard, whose prototype is Object.prototype:
      // a plain load here (monomorphic, with this expression's own feedback; the shared bbGet sees every
      // key of every tree) reads the same, since Object.prototype holds only functions besides __proto__.
      if (key === '__proto__') return js`${H.bbGet}(${CTX}.bb, ${k})`;
      const t = ident(`t${this.temps++}`);
      return js`((${t} = ${CTX}.bb[${k}]) === undefined || typeof ${t} === 'function' ? null : ${t})`;
    }
    if (object.kind === 'name' && object.name === 'agent') return key === 'id' ? js`${CTX}.agent.id` : js`${CTX}.agent.label`;
    // Inline named read: a monomorphic load per expression (the shared get() sees every key and shape).
    const t = ident(`t${this.temps++}`);
    const full = js`((${t} = ${this.object(object)}) !== null && typeof ${t} === 'object' && ${H.hasOwn}(${t}, ${k}) && ${H.isPlain}(${t}) ? ${H.val}(${t}[${k}]) : null)`;
    if (object.kind === 'name' && (object.name === 'self' || object.name === 'world')) {
      // A context that checked its root when it was set (the engine's Agent: plainSelf, plainWorld hold the root
      // if it is an array or plain object, else an object without properties) needs only the own-property test,
      // and not even that while no prototype such an object can inherit from has the key: a missing own key then
      // reads undefined (null, as before) and a present one is own. `key in objectProto || key in arrayProto` is
      // evaluated on every read, but with constant receivers and key the optimiser folds it to false, dependent
      // on the prototypes' maps: adding the key to either prototype later undoes the fold, and the read is
      // checked again (the call to hasOwn, a builtin, was about a sixth of the guard tree's tick).
      const plain = object.name === 'self' ? js`${CTX}.plainSelf` : js`${CTX}.plainWorld`;
      const [op, ap] = PROTO_PARAMS as [Code, Code];
      const own = js`(${k} in ${op} || ${k} in ${ap} ? (${H.hasOwn}(${t}, ${k}) ? ${H.val}(${t}[${k}]) : null) : ${H.val}(${t}[${k}]))`;
      return js`((${t} = ${plain}) !== undefined ? ${own} : ${full})`;
    }
    return full;
  }

  /** The value of `e` when it is known at load time and is a primitive (a literal or a folded constant). */
  private primitive(e: Expr): { readonly value: null | boolean | number | string } | undefined {
    const v = e.kind === 'literal' ? e.value : this.folded.has(e) ? this.folded.get(e) : undefined;
    if (v === null || typeof v === 'boolean' || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return { value: v };
    return undefined;
  }

  private binary(op: BinaryOp, left: Expr, right: Expr): Code {
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
          if (lit.value === null) return negate ? js`(${other} != null)` : js`(${other} == null)`;
          return negate ? js`(${other} !== ${this.value(lit.value)})` : js`(${other} === ${this.value(lit.value)})`;
        }
        return negate ? js`(!${H.eq}(${a}, ${b}))` : js`${H.eq}(${a}, ${b})`;
      }
      case '<':
        return js`${H.lt}(${a}, ${b})`;
      case '<=':
        return js`${H.le}(${a}, ${b})`;
      case '>':
        return js`${H.gt}(${a}, ${b})`;
      case '>=':
        return js`${H.ge}(${a}, ${b})`;
      case '+':
        return js`${H.add}(${a}, ${b})`;
      case '-':
        return js`${H.sub}(${a}, ${b})`;
      case '*':
        return js`${H.mul}(${a}, ${b})`;
      case '/':
        return js`${H.div}(${a}, ${b})`;
      case '%':
        return js`${H.mod}(${a}, ${b})`;
    }
  }

  private call(name: string, args: readonly Expr[]): Code {
    const a = args.map((x) => this.emit(x));
    switch (name) {
      case 'min':
      case 'max': {
        // No arrays at run time: min(a, b, c) is min2(min2(a, b), c), which propagates null the same way.
        const pair = name === 'min' ? H.min2 : H.max2;
        return a.length === 1 ? js`${H.num}(${a[0]!})` : a.slice(1).reduce((acc, x) => js`${pair}(${acc}, ${x})`, a[0]!);
      }
      case 'nearest':
        return js`${H.nearest}(${a[0]!}, ${a[1]!}, ${a[2] ?? js`Infinity`})`;
      case 'rand':
        return js`${CTX}.random()`;
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
        return js`${H[name]}(${joinCode(a, ', ')})`;
      default:
        throw new Error(`internal: unknown function '${name}'`);
    }
  }
}

function isBlackboard(e: Expr): boolean {
  return e.kind === 'name' && e.name === 'bb';
}
