// The expression language's public API: compile a designer's expression once, run it for every agent.
// The language itself is described in docs (spec: trees.md, "Expressions") and in compileExpression below.

import { check, FUNCTIONS, type Root } from './checker.js';
import { compile } from './compiler.js';
import { columnAt } from './lexer.js';
import { parse } from './parser.js';

/**
 * Everything a compiled expression may read. The engine's Agent class implements this (same
 * hidden class for every agent, so keep accesses monomorphic: compiled code reads c.self, c.bb,
 * c.world, c.agent, c.time, c.dt and calls c.random()).
 */
export interface ExprContext {
  /** This agent's latest observation (object or null). */
  readonly self: unknown;
  /** The blackboard: an object with the declared keys as own properties. */
  readonly bb: Record<string, unknown>;
  /** The session's world state (object or null). */
  readonly world: unknown;
  /**
   * Optional: `self` if it is an array or plain object (not a Proxy), else an object with no properties at all.
   * Compiled `self.key` reads then skip the prototype check; the Agent keeps it. Undefined (or absent): reads
   * check `self` in full (the Agent's choice for a Proxy, whose reads may answer what its own-property test denies).
   */
  readonly plainSelf?: object;
  /** Optional: `world` checked the same way as plainSelf. */
  readonly plainWorld?: object;
  readonly agent: { readonly id: number | string; readonly label: string };
  /** Tree time, seconds. */
  readonly time: number;
  /** Seconds since the previous tick. */
  readonly dt: number;
  /** The agent's seeded generator, [0, 1). */
  random(): number;
}

/**
 * A compiled expression. On contexts whose self, world and blackboard hold JSON/MessagePack-like
 * data it never throws and never returns undefined (missing data is null); it allocates only for
 * array literals that read a root. Calling it draws from `c.random()` only if the expression calls rand().
 */
export type CompiledExpr = (c: ExprContext) => unknown;

/** What an expression is checked against. */
export interface ExprScope {
  /** Declared blackboard keys; reading `bb.x` (or `bb['x']` with a literal) where x is not declared is an error. */
  readonly blackboardKeys: ReadonlySet<string>;
}

/** A problem found when loading an expression; `message` is written for a game designer. */
export interface ExprError {
  readonly code:
    | 'E_EXPR_SYNTAX'
    | 'E_EXPR_UNKNOWN_FUNCTION'
    | 'E_EXPR_ARITY'
    | 'E_EXPR_UNKNOWN_ROOT'
    | 'E_EXPR_FORBIDDEN_NAME'
    | 'E_EXPR_UNDECLARED_KEY'
    | 'E_EXPR_TOO_COMPLEX';
  /** A sentence a game designer understands, e.g. "unknown function 'nearst' (did you mean 'nearest'?)". */
  readonly message: string;
  /** 1-based column (in Unicode code points) where the problem starts. */
  readonly column: number;
}

/** A root an expression reads (see the spec: self, bb, world, agent, time, dt). */
export type ExprRoot = Root;

/**
 * The result of compileExpression. On success: the function, the blackboard keys it may read,
 * the roots it reads, whether it calls rand(), and whether it is constant (then `value` is its value).
 */
export type ExprResult =
  | {
      readonly ok: true;
      readonly fn: CompiledExpr;
      /** Blackboard keys the expression may read; every declared key when it computes a key at run time (`bb[self.slot]`). */
      readonly reads: readonly string[];
      /** The roots read, in the order self, bb, world, agent, time, dt (an addition to the agreed API; see the report). */
      readonly roots: readonly ExprRoot[];
      readonly usesRandom: boolean;
      /** True when the expression reads no root and does not call rand(). */
      readonly constant: boolean;
      /** The value of a constant expression (arrays are frozen, since all agents share them). */
      readonly value?: unknown;
    }
  | { readonly ok: false; readonly errors: readonly ExprError[] };

/** The fixed function library, in the spec's order, for docs and the JSON schema. */
export const EXPRESSION_FUNCTIONS: readonly string[] = Object.freeze(Object.keys(FUNCTIONS));

/**
 * Parses, checks and compiles `source`. Never throws, whatever the input. A syntax error or a size
 * limit stops at the first problem; otherwise every problem found is reported, in source order.
 * `reads` lists blackboard keys read; `constant` is true when the expression reads no root (then
 * `value` is its value).
 *
 * Semantics of the compiled function, beyond the spec:
 * - `.name` and `[key]` read only own properties of arrays and plain objects; anything else, a
 *   function, or a missing property reads null. Numeric keys index arrays; on objects they read the
 *   key's string form. Forbidden names computed at run time (`self['constr' + 'uctor']`) read null.
 * - `+ - * / %` need two numbers (`+` also joins two strings) and never convert: `'hp ' + 3` is null.
 *   A result that is not a finite number (division by zero, overflow) is null.
 * - `< <= > >=` compare two numbers or two strings; anything else is false. `==` is strict, except
 *   that null equals undefined; arrays and objects compare by identity.
 * - `&&`, `||`, `??` and `? :` behave as in JavaScript (they return an operand); `!` gives a boolean.
 * - Limits: MAX_SOURCE_LENGTH characters, MAX_NESTING levels, MAX_NODES parts (see parser.ts).
 */
export function compileExpression(source: string, scope: ExprScope): ExprResult {
  try {
    if (typeof source !== 'string') return failure('E_EXPR_SYNTAX', 'an expression must be a string', 1);
    const parsed = parse(source);
    if (!parsed.ok) return failure(parsed.problem.code, parsed.problem.message, columnAt(source, parsed.problem.offset));
    const checked = check(parsed.ast, scope.blackboardKeys);
    if (checked.problems.length > 0) {
      const errors = checked.problems
        .map((p): ExprError => ({ code: p.code, message: p.message, column: columnAt(source, p.offset) }))
        .toSorted((a, b) => a.column - b.column);
      return { ok: false, errors };
    }
    const compiled = compile(parsed.ast);
    const base = { ok: true, fn: compiled.fn, reads: checked.reads, roots: checked.roots, usesRandom: checked.usesRandom } as const;
    return compiled.constant ? { ...base, constant: true, value: compiled.value } : { ...base, constant: false };
  } catch {
    // Not reachable with the limits above; kept so that no input can ever make loading throw.
    return failure('E_EXPR_TOO_COMPLEX', 'the expression is too complex to compile', 1);
  }
}

/** What checkExpression finds: nothing wrong, or every problem (as compileExpression would report them). */
export type ExprCheck = { readonly ok: true } | { readonly ok: false; readonly errors: readonly ExprError[] };

/**
 * Parses and checks `source` without generating code or evaluating anything: what validation needs.
 * Reports exactly the errors compileExpression would, about four times cheaper, and no text of the
 * expression ever reaches `new Function`. Never throws.
 */
export function checkExpression(source: string, scope: ExprScope): ExprCheck {
  try {
    if (typeof source !== 'string') return failure('E_EXPR_SYNTAX', 'an expression must be a string', 1);
    const parsed = parse(source);
    if (!parsed.ok) return failure(parsed.problem.code, parsed.problem.message, columnAt(source, parsed.problem.offset));
    const checked = check(parsed.ast, scope.blackboardKeys);
    if (checked.problems.length === 0) return { ok: true };
    const errors = checked.problems
      .map((p): ExprError => ({ code: p.code, message: p.message, column: columnAt(source, p.offset) }))
      .toSorted((a, b) => a.column - b.column);
    return { ok: false, errors };
  } catch {
    return failure('E_EXPR_TOO_COMPLEX', 'the expression is too complex to compile', 1);
  }
}

function failure(code: ExprError['code'], message: string, column: number): { readonly ok: false; readonly errors: readonly ExprError[] } {
  return { ok: false, errors: [{ code, message, column }] };
}

/** JS truthiness as the spec's conditions use it: null, undefined, false, 0, NaN and '' are false. */
export function truthy(v: unknown): boolean {
  return !!v;
}
