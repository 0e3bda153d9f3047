// The engine's one way to write and run generated JavaScript: a `js` tagged template that accepts only
// numbers, generated identifiers, quoted literals and other generated code, and `generate`, its one `new Function`.

/**
 * A piece of generated JavaScript. Only this module makes one, from template text written in the engine's
 * source (`js`), identifiers checked by `ident`, literals quoted by `literal`, and finite numbers: no
 * string from a tree file, the wire or HTTP can reach generated source except through `literal`.
 */
export class Code {
  readonly #text: string;
  /** Not for use outside this module: the token is private to it, so only its helpers build Code. */
  constructor(token: symbol, text: string) {
    if (token !== TOKEN) throw new TypeError('generated code: build Code with js, ident or literal');
    this.#text = text;
  }
  toString(): string {
    return this.#text;
  }
}
const TOKEN = Symbol('Code');
const make = (text: string): Code => new Code(TOKEN, text);

/** What `js` accepts between `${}`: generated code (identifiers included), finite numbers and booleans. */
export type CodePart = Code | number | boolean;

const IDENT = /^[A-Za-z_$][\w$]*$/;

/** A generated identifier: letters, digits, `_` and `$`, not starting with a digit. Throws otherwise. */
export function ident(name: string): Code {
  if (typeof name !== 'string' || !IDENT.test(name)) throw new TypeError(`generated code: '${String(name)}' is not an identifier`);
  return make(name);
}

/** JavaScript source of a finite number, parenthesised when negative (so `a - ${n}` stays right). */
function numberSource(n: number): string {
  if (!Number.isFinite(n)) throw new TypeError(`generated code: ${n} is not a finite number`);
  if (Object.is(n, -0)) return '(-0)';
  return n < 0 ? `(${String(n)})` : String(n);
}

/**
 * A value as a JavaScript literal: null, booleans, finite numbers, and strings quoted by JSON.stringify
 * (which escapes quotes, backslashes, control characters and lone surrogates; U+2028/2029 are escaped
 * too, though legal in string literals since ES2019). Anything else throws: bind it instead.
 */
export function literal(value: unknown): Code {
  if (value === null) return make('null');
  if (typeof value === 'boolean') return make(value ? 'true' : 'false');
  if (typeof value === 'number') return make(numberSource(value));
  if (typeof value === 'string') return make(JSON.stringify(value).replaceAll('\u2028', '\\u2028').replaceAll('\u2029', '\\u2029'));
  throw new TypeError(`generated code: a ${typeof value} cannot be written as a literal`);
}

/**
 * The tagged template generated code is written with: js`if (${t} === ${Status.RUNNING}) break ${label};`.
 * Interpolations must be Code, finite numbers or booleans; a string (or anything else) throws, so a
 * name, message or key from a tree can never be pasted into code by mistake.
 */
export function js(strings: TemplateStringsArray, ...parts: readonly CodePart[]): Code {
  if (!Array.isArray(strings.raw)) throw new TypeError('generated code: js must be used as a tagged template');
  let text = strings[0]!;
  for (let k = 0; k < parts.length; k++) text += part(parts[k]) + strings[k + 1]!;
  return make(text);
}

function part(p: unknown): string {
  if (p instanceof Code) return p.toString();
  if (typeof p === 'number') return numberSource(p);
  if (typeof p === 'boolean') return p ? 'true' : 'false';
  throw new TypeError(`generated code: cannot interpolate a ${p === null ? 'null' : typeof p} (bind it, or quote it with literal())`);
}

/** Joins generated code with a fixed separator (`', '`, `'\n'`, `' && '`…, written in the engine). */
export function joinCode(items: readonly Code[], separator: ', ' | '\n' | '' | ' && ' | ' || ' = ''): Code {
  for (const c of items) if (!(c instanceof Code)) throw new TypeError('generated code: joinCode takes Code only');
  return make(items.map(String).join(separator));
}

/** True when this process may compile strings (false under `node --disallow-code-generation-from-strings`). */
export const CODE_GENERATION: boolean = probe();

function probe(): boolean {
  try {
    // oxlint-disable-next-line no-new-func -- fixed source: the probe for --disallow-code-generation-from-strings
    return new Function('return true')() === true;
  } catch (e) {
    if (isCodeGenerationDisabled(e)) return false;
    throw e;
  }
}

/** The error V8 throws when strings may not be compiled (an EvalError); anything else is a bug. */
export function isCodeGenerationDisabled(e: unknown): boolean {
  return e instanceof EvalError;
}

/**
 * Compiles `body` as a function of `params` (identifiers) and calls it with `args`: the engine's only
 * string-to-code site (lint: no-new-func is off here alone). Throws when code generation is disabled;
 * callers check CODE_GENERATION first and use their plain-TypeScript path instead.
 */
export function generate(params: readonly Code[], body: Code, args: readonly unknown[]): unknown {
  if (params.length !== args.length) throw new TypeError('generated code: one argument per parameter');
  for (const p of params) if (!(p instanceof Code) || !IDENT.test(p.toString())) throw new TypeError('generated code: parameters must be identifiers');
  if (!(body instanceof Code)) throw new TypeError('generated code: the body must be Code');
  // oxlint-disable-next-line no-new-func -- the one generation site; body is Code built by js/ident/literal only
  return new Function(...params.map(String), `"use strict";\n${body.toString()}`)(...args);
}
