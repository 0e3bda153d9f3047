// Reading XML into a small element tree with each element's line and column, using fast-xml-parser
// (no hand-written XML parsing). Syntax errors come back with the parser's line and column.

import { XMLParser, XMLValidator } from 'fast-xml-parser';

/** One XML element: its tag, attributes (entity-decoded), child elements, and where it starts (1-based). */
export interface XmlElement {
  readonly tag: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly children: readonly XmlElement[];
  /** Non-blank text directly inside the element (BehaviorTree.CPP never uses it; we report it). */
  readonly text: string;
  readonly line: number;
  readonly column: number;
}

export type XmlReadResult =
  | { readonly ok: true; readonly elements: readonly XmlElement[] }
  | { readonly ok: false; readonly message: string; readonly line: number; readonly column: number };

const ATTRS = ':@';
const META = XMLParser.getMetaDataSymbol() as unknown as symbol;

/** Parses `text` into its top-level elements (comments, processing instructions and the prolog are dropped). */
export function readXml(text: string): XmlReadResult {
  const valid = XMLValidator.validate(text);
  if (valid !== true) return { ok: false, message: valid.err.msg, line: valid.err.line, column: valid.err.col };
  const parser = new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    parseAttributeValue: false,
    parseTagValue: false,
    allowBooleanAttributes: false,
    commentPropName: '#comment',
    captureMetaData: true,
    // Numeric character references (&#10;, &#x9;) are XML, and the export writes them; without this they stay raw.
    htmlEntities: true,
    // Trees nest deeper than the parser's default of 100 elements only in pathological files; engine caps depth anyway.
    maxNestedTags: 400,
  });
  const lines = lineStarts(text);
  let raw: unknown[];
  try {
    raw = parser.parse(text) as unknown[];
  } catch (err) {
    // Past the validator, the parser still refuses some documents (nesting deeper than maxNestedTags).
    return { ok: false, message: (err as Error).message, line: 1, column: 1 };
  }
  return { ok: true, elements: convert(raw, lines) };
}

function convert(items: readonly unknown[], lines: readonly number[]): XmlElement[] {
  const out: XmlElement[] = [];
  for (const item of items) {
    const obj = item as Record<string | symbol, unknown>;
    const tag = Object.keys(obj).find((k) => k !== ATTRS);
    if (tag === undefined || tag === '#text' || tag === '#comment' || tag.startsWith('?')) continue;
    const body = (obj[tag] as unknown[]) ?? [];
    const attrs = { ...(obj[ATTRS] as Record<string, string> | undefined) };
    const text = body
      .map((b) => (b as Record<string, unknown>)['#text'])
      .filter((t): t is string | number => t !== undefined)
      .join('')
      .trim();
    const start = (obj[META] as { startIndex?: number } | undefined)?.startIndex ?? 0;
    const { line, column } = position(lines, start);
    out.push({ tag, attrs, children: convert(body, lines), text, line, column });
  }
  return out;
}

/** Offsets where each line starts. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

/** 1-based line and column of an offset (binary search over line starts). */
function position(starts: readonly number[], offset: number): { line: number; column: number } {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: offset - starts[lo]! + 1 };
}
