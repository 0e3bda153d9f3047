// Where a validation problem is in the tree's text: maps a JSON path (`root.children[2]`, field `if`)
// to a line and column, so errors read `trees/guard.json:12:5: …`. JSON is YAML, so one parser serves both.

import { isMap, isScalar, isSeq, LineCounter, type Document, type Scalar } from 'yaml';
import type { ValidationError, ValidationWarning } from './errors.js';

/** A 1-based line and column in a text. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

/** What the yaml package gives for any node: a range of offsets into the text. */
interface Ranged {
  readonly range?: readonly [number, number, number] | null;
}

/**
 * Positions in one tree text. For JSON the text is parsed for positions only when first asked (valid
 * trees never pay for it); a YAML text reuses the document it was parsed into.
 */
export class SourcePositions {
  private readonly text: string;
  private lazy: { readonly lines: LineCounter; readonly base: unknown } | null;
  private readonly load: () => { readonly lines: LineCounter; readonly base: unknown };

  private constructor(text: string, load: () => { readonly lines: LineCounter; readonly base: unknown }) {
    this.text = text;
    this.lazy = null;
    this.load = load;
  }

  /**
   * Positions in `text`: a YAML text with the document it was parsed into, or a JSON text (already
   * checked to be valid JSON), scanned directly when asked, much cheaper than parsing it as YAML.
   */
  static of(text: string, parsed?: { readonly doc: Document; readonly lines: LineCounter }): SourcePositions {
    return new SourcePositions(text, () => {
      if (parsed !== undefined) return { lines: parsed.lines, base: parsed.doc.contents };
      return { lines: lineCounterOf(text), base: new JsonNode(text, 0) };
    });
  }

  private get parsed(): { readonly lines: LineCounter; readonly base: unknown } {
    this.lazy ??= this.load();
    return this.lazy;
  }

  /** Positions of the value under top-level key `key` (the `definition` of a wrapped request), sharing this text. */
  within(key: string): SourcePositions {
    return new SourcePositions(this.text, () => {
      const { lines, base } = this.parsed;
      const found = base instanceof JsonNode ? base.resolve(key) : resolve(base, key);
      return { lines, base: found.complete ? found.node : null };
    });
  }

  /**
   * Where `path` (and `field`, when the problem is in one) is: the node's start; a field's key; for
   * an expression error (`exprColumn`, 1-based inside the expression) the character it points at.
   * A path that goes further than the text (a missing field) gives the deepest part found. Null when
   * nothing of it is in the text.
   */
  locate(path: string, field?: string, exprColumn?: number): TextPosition | null {
    const { lines, base } = this.parsed;
    if (base === null || base === undefined) return null;
    const full = field === undefined ? path : path === '' ? field : `${path}.${field}`;
    const found = base instanceof JsonNode ? base.resolve(full) : resolve(base, full);
    let offset: number | null = null;
    if (found.complete && exprColumn !== undefined && found.node instanceof JsonNode && this.text[found.node.start] === '"') {
      offset = quotedOffset(this.text, found.node.start, skipString(this.text, found.node.start), '"', exprColumn);
    } else if (found.complete && exprColumn !== undefined && isScalar(found.node)) offset = expressionOffset(this.text, found.node, exprColumn);
    // A field's key when the field is there; a missing field points at its node.
    if (offset === null && found.complete && found.key !== null && (field !== undefined || !hasRange(found.node))) offset = offsetOf(found.key);
    offset ??= offsetOf(found.node) ?? offsetOf(found.key);
    if (offset === null) return null;
    const at = lines.linePos(offset);
    return { line: at.line, column: at.col };
  }
}

/**
 * Adds `line` and `column` in the text to each problem (an expression problem's column becomes the
 * file's). Problems whose place is not in the text are returned unchanged.
 */
export function locateProblems<T extends ValidationError | ValidationWarning>(problems: readonly T[], positions: SourcePositions): T[] {
  return problems.map((p) => {
    if (p.line !== undefined) return p;
    const exprColumn = p.code.startsWith('E_EXPR_') ? p.column : undefined;
    const at = positions.locate(p.path, p.field, exprColumn);
    return at === null ? p : { ...p, line: at.line, column: at.column };
  });
}

/** Walks `path` down from `node` as far as it goes; `key` is the map key of the last step (null after a list index). */
function resolve(node: unknown, path: string): { node: unknown; key: unknown; complete: boolean } {
  let key: unknown = null;
  let rest = path;
  while (rest !== '') {
    if (rest.startsWith('.')) rest = rest.slice(1);
    const index = /^\[(\d+)\]/.exec(rest);
    if (index !== null) {
      const item: unknown = isSeq(node) ? node.items[Number(index[1])] : undefined;
      if (item === undefined) break;
      node = item;
      key = null;
      rest = rest.slice(index[0].length);
      continue;
    }
    if (!isMap(node)) break;
    // Keys may hold dots themselves ('values.a.b'): the longest key that fits wins.
    let best: { key: unknown; value: unknown; length: number } | null = null;
    for (const pair of node.items) {
      const k = isScalar(pair.key) ? String(pair.key.value) : null;
      if (k === null || !rest.startsWith(k) || (best !== null && best.length >= k.length)) continue;
      const next = rest[k.length];
      if (next === undefined || next === '.' || next === '[') best = { key: pair.key, value: pair.value, length: k.length };
    }
    if (best === null) break;
    key = best.key;
    node = best.value;
    rest = rest.slice(best.length);
  }
  return { node, key, complete: rest === '' };
}

function hasRange(node: unknown): boolean {
  return offsetOf(node) !== null;
}

function offsetOf(node: unknown): number | null {
  if (node instanceof JsonNode) return node.start;
  if (node === null || typeof node !== 'object') return null;
  const range = (node as Ranged).range;
  return range === undefined || range === null ? null : range[0];
}

/**
 * The offset of the expression's `column`-th code point inside a one-line scalar, through its quoting
 * and escapes. Null for block and multi-line scalars (the caller falls back to the field's key).
 */
function expressionOffset(text: string, scalar: Scalar, column: number): number | null {
  const range = scalar.range;
  if (range === undefined || range === null) return null;
  const raw = text.slice(range[0], range[1]);
  if (raw.includes('\n')) return null;
  const quote = scalar.type === 'QUOTE_DOUBLE' ? '"' : scalar.type === 'QUOTE_SINGLE' ? "'" : scalar.type === 'PLAIN' ? '' : null;
  if (quote === null) return null;
  return quotedOffset(text, range[0], range[1], quote, column);
}

/** The offset of the `column`-th code point of the scalar text[from, to) (quotes included when `quote` is set). */
function quotedOffset(text: string, from: number, to: number, quote: string, column: number): number | null {
  const raw = text.slice(from, to);
  if (raw.includes('\n')) return null;
  let i = quote.length;
  for (let cp = 1; cp < column && i < raw.length; cp++) {
    if (quote === '"' && raw[i] === '\\') i += raw[i + 1] === 'u' ? 6 : 2;
    else if (quote === "'" && raw[i] === "'" && raw[i + 1] === "'") i += 2;
    else i += (raw.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
  }
  return from + Math.min(i, raw.length);
}

/** Line starts of `text`, for offsets → line and column. */
function lineCounterOf(text: string): LineCounter {
  const lines = new LineCounter();
  lines.addNewLine(0);
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines.addNewLine(i + 1);
  return lines;
}

/**
 * A value in a JSON text (known to be valid), found by scanning: no tree of the whole document is
 * built. Lists remember how far they were walked, so problems reported in file order cost one pass.
 */
class JsonNode {
  readonly text: string;
  /** Offset of the value's first character. */
  readonly start: number;
  private walked: { index: number; offset: number } | null = null;
  private readonly items = new Map<number, JsonNode>();
  private memberCache: Map<string, { key: JsonNode; value: JsonNode }> | null = null;

  constructor(text: string, start: number) {
    this.text = text;
    this.start = skipSpace(text, start);
  }

  /** Like `resolve` for YAML nodes: as far as `path` goes from this value. */
  resolve(path: string): { node: unknown; key: unknown; complete: boolean } {
    return resolveJson(this, path);
  }

  /** List item `k` (null when this is not a list, or a shorter one). */
  item(k: number): { value: JsonNode; key: null; length: number } | null {
    const cached = this.items.get(k);
    if (cached !== undefined) return { value: cached, key: null, length: 0 };
    const s = this.text;
    if (s[this.start] !== '[') return null;
    let at = this.walked !== null && this.walked.index <= k ? this.walked : { index: 0, offset: skipSpace(s, this.start + 1) };
    while (at.index < k) {
      if (s[at.offset] === ']') return null;
      let after = skipSpace(s, skipValue(s, at.offset));
      if (s[after] !== ',') return null;
      after = skipSpace(s, after + 1);
      at = { index: at.index + 1, offset: after };
    }
    if (s[at.offset] === ']') return null;
    this.walked = at;
    const value = new JsonNode(s, at.offset);
    this.items.set(k, value);
    return { value, key: null, length: 0 };
  }

  /** The member whose key is the longest prefix of `rest` followed by '.', '[' or the end (keys may hold dots). */
  member(rest: string): { value: JsonNode; key: JsonNode; length: number } | null {
    let best: { value: JsonNode; key: JsonNode; length: number } | null = null;
    for (const [k, m] of this.members()) {
      const follow = rest[k.length];
      if (rest.startsWith(k) && (follow === undefined || follow === '.' || follow === '[') && (best === null || k.length > best.length)) {
        best = { value: m.value, key: m.key, length: k.length };
      }
    }
    return best;
  }

  /** An object's members, scanned once (a node's `children` may span most of the file). */
  private members(): ReadonlyMap<string, { key: JsonNode; value: JsonNode }> {
    if (this.memberCache !== null) return this.memberCache;
    const found = new Map<string, { key: JsonNode; value: JsonNode }>();
    this.memberCache = found;
    const s = this.text;
    if (s[this.start] !== '{') return found;
    let i = skipSpace(s, this.start + 1);
    while (s[i] === '"') {
      const keyEnd = skipString(s, i);
      const raw = s.slice(i + 1, keyEnd - 1);
      const k = raw.includes('\\') ? (JSON.parse(s.slice(i, keyEnd)) as string) : raw;
      const valueStart = skipSpace(s, skipSpace(s, keyEnd) + 1);
      found.set(k, { key: new JsonNode(s, i), value: new JsonNode(s, valueStart) });
      const after = skipSpace(s, skipValue(s, valueStart));
      if (s[after] !== ',') break;
      i = skipSpace(s, after + 1);
    }
    return found;
  }
}

/** As far as `path` goes from `root` in a JSON text. */
function resolveJson(root: JsonNode, path: string): { node: unknown; key: unknown; complete: boolean } {
  let node = root;
  let key: JsonNode | null = null;
  let rest = path;
  while (rest !== '') {
    if (rest.startsWith('.')) rest = rest.slice(1);
    const index = /^\[(\d+)\]/.exec(rest);
    const next = index !== null ? node.item(Number(index[1])) : node.member(rest);
    if (next === null) break;
    node = next.value;
    key = next.key;
    rest = rest.slice(index !== null ? index[0].length : next.length);
  }
  return { node, key, complete: rest === '' };
}

function skipSpace(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) break;
    i++;
  }
  return i;
}

/** The offset just after the string starting at `i` (a '"'). */
function skipString(s: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = s.indexOf('"', j);
    if (q === -1) return s.length;
    let slashes = 0;
    while (s[q - 1 - slashes] === '\\') slashes++;
    if (slashes % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** The offset just after the value starting at `i`. */
function skipValue(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return skipString(s, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const d = s[j];
      if (d === '"') j = skipString(s, j) - 1;
      else if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return s.length;
  }
  let j = i;
  while (j < s.length && !',}] \t\r\n'.includes(s[j]!)) j++;
  return j;
}
