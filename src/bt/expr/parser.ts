// Parser of the expression language: tokens → syntax tree (AST), with limits against hostile input.
// Recursive descent whose depth is bounded by MAX_NESTING, so no input can overflow the stack.

import { columnAt, tokenize, type Token } from './lexer.js';

/** Longest source accepted, in UTF-16 units. */
export const MAX_SOURCE_LENGTH = 4096;
/** Deepest nesting accepted: parentheses, brackets, call arguments, unary operators, `? :` branches. */
export const MAX_NESTING = 64;
/** Most syntax-tree nodes accepted in one expression. */
export const MAX_NODES = 1000;

/** Arithmetic and comparison operators (evaluated to a new value). */
export type BinaryOp = '*' | '/' | '%' | '+' | '-' | '<' | '<=' | '>' | '>=' | '==' | '!=';
/** Short-circuit operators: they return one of their operands, as in JavaScript. */
export type LogicalOp = '&&' | '||' | '??';

/**
 * A syntax-tree node. `start` is the UTF-16 offset where the node's problem would be reported:
 * the first character for values and names, the operator for operators.
 */
export type Expr =
  | { readonly kind: 'literal'; readonly value: null | boolean | number | string; readonly start: number }
  | { readonly kind: 'array'; readonly items: readonly Expr[]; readonly start: number }
  | { readonly kind: 'name'; readonly name: string; readonly start: number }
  | { readonly kind: 'member'; readonly object: Expr; readonly name: string; readonly start: number }
  | { readonly kind: 'index'; readonly object: Expr; readonly index: Expr; readonly start: number }
  | { readonly kind: 'call'; readonly name: string; readonly args: readonly Expr[]; readonly start: number }
  | { readonly kind: 'unary'; readonly op: '!' | '-'; readonly operand: Expr; readonly start: number }
  | { readonly kind: 'binary'; readonly op: BinaryOp; readonly left: Expr; readonly right: Expr; readonly start: number }
  | { readonly kind: 'logical'; readonly op: LogicalOp; readonly left: Expr; readonly right: Expr; readonly start: number }
  | { readonly kind: 'conditional'; readonly test: Expr; readonly ifTrue: Expr; readonly ifFalse: Expr; readonly start: number };

/** Why parsing stopped: a syntax error, or one of the size limits. */
export interface ParseProblem {
  readonly code: 'E_EXPR_SYNTAX' | 'E_EXPR_TOO_COMPLEX';
  readonly message: string;
  /** UTF-16 offset of the problem. */
  readonly offset: number;
}

/** The syntax tree, or the first problem found. */
export type ParseResult = { readonly ok: true; readonly ast: Expr } | { readonly ok: false; readonly problem: ParseProblem };

const PRECEDENCE: Readonly<Record<string, number>> = {
  '??': 1,
  '||': 2,
  '&&': 3,
  '==': 4,
  '!=': 4,
  '<': 5,
  '<=': 5,
  '>': 5,
  '>=': 5,
  '+': 6,
  '-': 6,
  '*': 7,
  '/': 7,
  '%': 7,
};

/** Thrown inside the parser to stop at the first problem; never escapes `parse`. */
class Abort {
  constructor(readonly problem: ParseProblem) {}
}

/** Parses `source` into a syntax tree. Never throws. */
export function parse(source: string): ParseResult {
  if (source.length > MAX_SOURCE_LENGTH) {
    return tooComplex(`the expression is too long (${source.length} characters; the limit is ${MAX_SOURCE_LENGTH})`, 0);
  }
  const lexed = tokenize(source);
  if (!lexed.ok) return { ok: false, problem: { code: 'E_EXPR_SYNTAX', ...lexed.problem } };
  try {
    return { ok: true, ast: new Parser(source, lexed.tokens).parseAll() };
  } catch (e) {
    if (e instanceof Abort) return { ok: false, problem: e.problem };
    throw e;
  }
}

function tooComplex(message: string, offset: number): ParseResult {
  return { ok: false, problem: { code: 'E_EXPR_TOO_COMPLEX', message, offset } };
}

/** How a token reads in a message. */
function describe(t: Token): string {
  switch (t.kind) {
    case 'end':
      return 'the end of the expression';
    case 'string':
      return 'a string';
    case 'number':
    case 'name':
    case 'op':
      return `'${t.text}'`;
  }
}

class Parser {
  private pos = 0;
  private depth = 0;
  private nodes = 0;

  constructor(
    private readonly source: string,
    private readonly tokens: readonly Token[],
  ) {}

  parseAll(): Expr {
    if (this.peek().kind === 'end') this.fail('the expression is empty', 0);
    const e = this.parseConditional();
    const t = this.peek();
    if (t.kind !== 'end') {
      this.fail(`unexpected ${describe(t)} after a complete expression (is an operator missing?)`, t.start);
    }
    return e;
  }

  private peek(): Token {
    // The token list always ends with an 'end' token and `pos` never moves past it.
    return this.tokens[this.pos]!;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'end') this.pos++;
    return t;
  }

  private isOp(text: string): boolean {
    const t = this.peek();
    return t.kind === 'op' && t.text === text;
  }

  private fail(message: string, offset: number): never {
    throw new Abort({ code: 'E_EXPR_SYNTAX', message, offset });
  }

  private node<T extends Expr>(n: T): T {
    if (++this.nodes > MAX_NODES) {
      throw new Abort({
        code: 'E_EXPR_TOO_COMPLEX',
        message: `the expression is too large (more than ${MAX_NODES} parts); split it or move the logic into a plugin`,
        offset: n.start,
      });
    }
    return n;
  }

  private enter(offset: number): void {
    if (++this.depth > MAX_NESTING) {
      throw new Abort({
        code: 'E_EXPR_TOO_COMPLEX',
        message: `the expression nests too deeply (more than ${MAX_NESTING} levels)`,
        offset,
      });
    }
  }

  private leave(): void {
    this.depth--;
  }

  private expectClose(close: ')' | ']' | ':', open: Token, what: string): void {
    if (this.isOp(close)) {
      this.next();
      return;
    }
    const t = this.peek();
    this.fail(`expected '${close}' ${what} '${open.text}' at column ${columnAt(this.source, open.start)}, but found ${describe(t)}`, t.start);
  }

  private parseConditional(): Expr {
    const test = this.parseBinary(1);
    if (!this.isOp('?')) return test;
    const q = this.next();
    this.enter(q.start);
    const ifTrue = this.parseConditional();
    this.expectClose(':', q, 'to go with the');
    const ifFalse = this.parseConditional();
    this.leave();
    return this.node({ kind: 'conditional', test, ifTrue, ifFalse, start: q.start });
  }

  private parseBinary(minPrecedence: number): Expr {
    let left = this.parseUnary();
    for (;;) {
      const t = this.peek();
      const p = t.kind === 'op' ? PRECEDENCE[t.text] : undefined;
      if (p === undefined || p < minPrecedence) return left;
      this.next();
      const right = this.parseBinary(p + 1);
      if (t.text === '&&' || t.text === '||' || t.text === '??') {
        left = this.node({ kind: 'logical', op: t.text, left, right, start: t.start });
      } else {
        left = this.node({ kind: 'binary', op: t.text as BinaryOp, left, right, start: t.start });
      }
    }
  }

  private parseUnary(): Expr {
    if (this.isOp('!') || this.isOp('-')) {
      const t = this.next();
      this.enter(t.start);
      const operand = this.parseUnary();
      this.leave();
      return this.node({ kind: 'unary', op: t.text as '!' | '-', operand, start: t.start });
    }
    return this.parsePostfix();
  }

  private parsePostfix(): Expr {
    let e = this.parsePrimary();
    for (;;) {
      if (this.isOp('.')) {
        this.next();
        const name = this.peek();
        if (name.kind !== 'name') this.fail(`expected a field name after '.', but found ${describe(name)}`, name.start);
        this.next();
        e = this.node({ kind: 'member', object: e, name: name.text, start: name.start });
      } else if (this.isOp('[')) {
        const open = this.next();
        this.enter(open.start);
        const index = this.parseConditional();
        this.expectClose(']', open, 'to close the');
        this.leave();
        e = this.node({ kind: 'index', object: e, index, start: open.start });
      } else if (this.isOp('(')) {
        this.fail('only library functions can be called, like len(x); this is not a function name', this.peek().start);
      } else {
        return e;
      }
    }
  }

  private parsePrimary(): Expr {
    const t = this.peek();
    switch (t.kind) {
      case 'number':
        this.next();
        return this.node({ kind: 'literal', value: t.num, start: t.start });
      case 'string':
        this.next();
        return this.node({ kind: 'literal', value: t.text, start: t.start });
      case 'name': {
        this.next();
        if (t.text === 'true' || t.text === 'false') return this.node({ kind: 'literal', value: t.text === 'true', start: t.start });
        if (t.text === 'null') return this.node({ kind: 'literal', value: null, start: t.start });
        if (this.isOp('(')) {
          const open = this.next();
          this.enter(open.start);
          const args = this.parseList(')', open);
          this.leave();
          return this.node({ kind: 'call', name: t.text, args, start: t.start });
        }
        return this.node({ kind: 'name', name: t.text, start: t.start });
      }
      case 'op':
        if (t.text === '(') {
          this.next();
          this.enter(t.start);
          const e = this.parseConditional();
          this.expectClose(')', t, 'to close the');
          this.leave();
          return e;
        }
        if (t.text === '[') {
          this.next();
          this.enter(t.start);
          const items = this.parseList(']', t);
          this.leave();
          return this.node({ kind: 'array', items, start: t.start });
        }
        if (t.text === '.' && this.tokens[this.pos + 1]?.kind === 'number') {
          return this.fail('a number must start with a digit: write 0.5, not .5', t.start);
        }
        return this.fail(`expected a value but found ${describe(t)}`, t.start);
      case 'end':
        return this.fail('the expression ends too early: a value is missing', t.start);
    }
  }

  /** Comma-separated expressions up to `close` (the opening token is consumed already). */
  private parseList(close: ')' | ']', open: Token): Expr[] {
    const items: Expr[] = [];
    if (this.isOp(close)) {
      this.next();
      return items;
    }
    for (;;) {
      items.push(this.parseConditional());
      if (this.isOp(',')) {
        this.next();
        continue;
      }
      this.expectClose(close, open, 'to close the');
      return items;
    }
  }
}
