// Where a validation problem is in the tree's text: maps a JSON path (`root.children[2]`, field `if`)
// to a line and column, so errors read `trees/guard.json:12:5: …`. JSON is YAML, so one parser serves both.

import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Scalar } from 'yaml';
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

  /** Positions in `text`; `doc` and `lines` when it was parsed already (YAML), else it is parsed on first use. */
  static of(text: string, parsed?: { readonly doc: Document; readonly lines: LineCounter }): SourcePositions {
    return new SourcePositions(text, () => {
      if (parsed !== undefined) return { lines: parsed.lines, base: parsed.doc.contents };
      const lines = new LineCounter();
      const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
      return { lines, base: doc.contents };
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
      const found = resolve(base, key);
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
    const found = resolve(base, full);
    let offset: number | null = null;
    if (found.complete && exprColumn !== undefined && isScalar(found.node)) offset = expressionOffset(this.text, found.node, exprColumn);
    if (offset === null && found.key !== null && (field !== undefined || !hasRange(found.node))) offset = start(found.key);
    offset ??= start(found.node) ?? start(found.key);
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
  return start(node) !== null;
}

function start(node: unknown): number | null {
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
  let i = quote.length;
  for (let cp = 1; cp < column && i < raw.length; cp++) {
    if (quote === '"' && raw[i] === '\\') i += raw[i + 1] === 'u' ? 6 : 2;
    else if (quote === "'" && raw[i] === "'" && raw[i + 1] === "'") i += 2;
    else i += (raw.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
  }
  return range[0] + Math.min(i, raw.length);
}
