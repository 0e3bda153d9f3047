// Lexer of the expression language: turns source text into tokens with their offsets.
// Linear in the source length and never throws; the first lexical error stops it.

/** What a token is. Punctuation and operators are all 'op' tokens, told apart by their text. */
export type TokenKind = 'number' | 'string' | 'name' | 'op' | 'end';

/** One token. `start`/`end` are UTF-16 offsets into the source (use `columnAt` for designers). */
export interface Token {
  readonly kind: TokenKind;
  /** For 'op' the operator text, for 'name' the identifier, for 'string' the decoded value, for 'number' the literal text. */
  readonly text: string;
  /** The decoded value of a 'number' token (NaN for other kinds). */
  readonly num: number;
  readonly start: number;
  readonly end: number;
}

/** A lexical or syntax problem at a source offset, before it is turned into an ExprError. */
export interface SyntaxProblem {
  readonly message: string;
  readonly offset: number;
}

/** The tokens, ending with one 'end' token, or the first problem found. */
export type LexResult =
  | { readonly ok: true; readonly tokens: readonly Token[] }
  | { readonly ok: false; readonly problem: SyntaxProblem };

// Longest first, so '<=' wins over '<'.
const OPERATORS = ['??', '&&', '||', '==', '!=', '<=', '>=', '<', '>', '+', '-', '*', '/', '%', '!', '?', ':', '.', ',', '(', ')', '[', ']'] as const;

const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t' };

const NAME_START = /[\p{ID_Start}_$]/u;
const NAME_PART = /[\p{ID_Continue}_$\u200C\u200D]/u;

/** 1-based column of a UTF-16 offset, counting Unicode code points (what an editor shows). */
export function columnAt(source: string, offset: number): number {
  let column = 1;
  for (let i = 0; i < offset && i < source.length; i++) {
    const code = source.charCodeAt(i);
    // The high half of a surrogate pair starts a code point; the low half does not add a column.
    if (code < 0xdc00 || code > 0xdfff || i === 0 || !isHighSurrogate(source.charCodeAt(i - 1))) column++;
  }
  return column;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isDigit(ch: string | undefined): boolean {
  return ch !== undefined && ch >= '0' && ch <= '9';
}

function isSpace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || /\s/u.test(ch);
}

/** The code point at `i` as a string (one or two UTF-16 units). */
function codePointAt(source: string, i: number): string {
  const cp = source.codePointAt(i);
  return cp === undefined ? '' : String.fromCodePoint(cp);
}

/** A character quoted for a message, or its code point when it would not print. */
function describeChar(cp: string): string {
  if (/[\p{C}\p{Z}]/u.test(cp)) return `U+${(cp.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  return `'${cp}'`;
}

function fail(message: string, offset: number): LexResult {
  return { ok: false, problem: { message, offset } };
}

/** Splits `source` into tokens. */
export function tokenize(source: string): LexResult {
  const tokens: Token[] = [];
  const n = source.length;
  let i = 0;
  while (i < n) {
    const ch = source[i]!;
    if (isSpace(ch)) {
      i++;
      continue;
    }
    const start = i;

    if (isDigit(ch)) {
      while (isDigit(source[i])) i++;
      if (source[i] === '.' && isDigit(source[i + 1])) {
        i++;
        while (isDigit(source[i])) i++;
      }
      if (source[i] === 'e' || source[i] === 'E') {
        let j = i + 1;
        if (source[j] === '+' || source[j] === '-') j++;
        if (isDigit(source[j])) {
          while (isDigit(source[j])) j++;
          i = j;
        }
      }
      if (i < n && NAME_PART.test(codePointAt(source, i))) {
        let j = i;
        while (j < n && NAME_PART.test(codePointAt(source, j))) j += codePointAt(source, j).length;
        return fail(`'${source.slice(start, j)}' is not a valid number`, start);
      }
      const text = source.slice(start, i);
      const num = Number(text);
      if (!Number.isFinite(num)) return fail('number literal out of range', start);
      tokens.push({ kind: 'number', text, num, start, end: i });
      continue;
    }

    if (ch === "'" || ch === '"') {
      let value = '';
      i++;
      for (;;) {
        if (i >= n) return fail(`this string is not closed: add a closing ${ch}`, start);
        const c = source[i]!;
        if (c === ch) {
          i++;
          break;
        }
        if (c === '\\') {
          const e = source[i + 1];
          const decoded = e === undefined ? undefined : ESCAPES[e];
          if (decoded === undefined) {
            if (e === undefined) return fail(`this string is not closed: add a closing ${ch}`, start);
            return fail(`unknown escape '\\${codePointAt(source, i + 1)}' in a string (use \\\\, \\', \\", \\n or \\t)`, i);
          }
          value += decoded;
          i += 2;
          continue;
        }
        value += c;
        i++;
      }
      tokens.push({ kind: 'string', text: value, num: NaN, start, end: i });
      continue;
    }

    const cp = codePointAt(source, i);
    if (NAME_START.test(cp)) {
      i += cp.length;
      while (i < n) {
        const part = codePointAt(source, i);
        if (!NAME_PART.test(part)) break;
        i += part.length;
      }
      tokens.push({ kind: 'name', text: source.slice(start, i), num: NaN, start, end: i });
      continue;
    }

    if (source.startsWith('===', i) || source.startsWith('!==', i)) {
      return fail(`use '${ch}=' instead of '${ch}==' (it already compares strictly)`, start);
    }
    const op = OPERATORS.find((o) => source.startsWith(o, i));
    if (op !== undefined) {
      tokens.push({ kind: 'op', text: op, num: NaN, start, end: i + op.length });
      i += op.length;
      continue;
    }
    if (ch === '=') return fail("'=' cannot be used here: expressions only read values (to compare, use '==')", start);
    if (ch === '&') return fail("unexpected character '&' (did you mean '&&'?)", start);
    if (ch === '|') return fail("unexpected character '|' (did you mean '||'?)", start);
    return fail(`unexpected character ${describeChar(cp)}`, start);
  }
  tokens.push({ kind: 'end', text: '', num: NaN, start: n, end: n });
  return { ok: true, tokens };
}
