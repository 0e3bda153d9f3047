// The fast path for the protocol's hottest frame: a `snapshot` whose `agents` are positional rows.
// The rows are read straight from the bytes into typed columns (no checkFrame pass, no array per row,
// no msgpackr), which the agent pool copies into its per-worker batches. Anything unusual makes the
// fast path step aside, and the frame is decoded and validated the ordinary way: so it never accepts
// what the ordinary path refuses, and never reports an error of its own.

import type { AgentId } from './messages.js';
import { ResultColumns, type IdIndex, type KnownIds } from './results.js';
import { knownRowEnd, type KnownRowIds } from './known-rows.js';
import { checkFrame, decode, decodeItems } from './codec.js';
import { LIMITS } from './limits.js';

/** Type tag of one row value: the value itself lives in `values` (numbers), `vectors` or `other`. */
export const Tag = {
  NUMBER: 0,
  TRUE: 1,
  FALSE: 2,
  NULL: 3,
  /** Strings, objects, other arrays, bigints: `values[i]` is the index into `other`. */
  OTHER: 4,
  /**
   * A short array of numbers (a position `[x, y]`): `values[i]` is its offset in `vectors`, which holds
   * its length, then its elements.
   */
  VECTOR: 5,
} as const;

/** Longest array of numbers kept as a VECTOR (a MessagePack fixarray); longer ones are OTHER values. */
export const MAX_VECTOR = 15;

/**
 * Positional rows in columns: row i is agent `ids[i]`; its value k is `tags[i * width + k]` with
 * `values[i * width + k]` (a number, a `vectors` offset, an `other` index).
 */
export interface ColumnRows {
  readonly kind: 'packed';
  readonly count: number;
  /** Values per row: the session's field count. */
  readonly width: number;
  readonly ids: readonly AgentId[];
  readonly tags: Uint8Array;
  readonly values: Float64Array;
  readonly vectors: Float64Array;
  readonly other: readonly unknown[];
}

/**
 * Positional rows left in the frame they came in (checked, not decoded): row i is agent `ids[i]`, its
 * `width` values start at byte `offsets[i]` of `bytes`. The agent pool hands the bytes to the thread that
 * owns the agents, which reads the values straight into the agents' observations ({@link FrameCursor}):
 * the main thread decodes no value.
 */
export interface FrameRows {
  readonly kind: 'frame';
  readonly count: number;
  readonly width: number;
  readonly ids: readonly AgentId[];
  readonly offsets: Int32Array;
  readonly bytes: Uint8Array;
}

/**
 * Positional rows the main thread never read (docs/capacity.md, "rows the main thread never reads"): `count` rows
 * of `width` values start at byte `start` of `bytes` and end with the frame. The workers holding agents of the
 * session checked them all (exactly as scanRows would have) and each kept its own agents' rows: `kept[h]` lists
 * worker h's (slot, offset) pairs, `unknown` counts the rows no worker kept. `version` is the session's routing
 * version when the workers looked; the pool routes the rows the ordinary way if it moved since.
 */
export interface StagedRows {
  readonly kind: 'staged';
  readonly count: number;
  readonly width: number;
  readonly start: number;
  readonly bytes: Uint8Array;
  /** The frame's shared copy the workers read. */
  readonly frame: Uint8Array;
  readonly kept: ReadonlyArray<{ readonly host: number; readonly count: number; readonly slots: Int32Array; readonly offsets: Int32Array }>;
  readonly unknown: number;
  readonly version: number;
}

/** Rows the fast path read: decoded into columns, or checked and left in their frame (by this thread or the workers). */
export type PackedRows = ColumnRows | FrameRows | StagedRows;

export function isPackedRows(value: unknown): value is PackedRows {
  if (typeof value !== 'object' || value === null) return false;
  const kind = (value as { kind?: unknown }).kind;
  return kind === 'packed' || kind === 'frame' || kind === 'staged';
}

/** The rows as `[id, ...values]` arrays, as the ordinary path decodes them. */
export function unpackRows(rows: PackedRows): unknown[][] {
  const out: unknown[][] = [];
  if (rows.kind === 'staged') return unpackRows(stagedAsFrameRows(rows));
  if (rows.kind === 'frame') {
    const cursor = new FrameCursor();
    cursor.frame(rows.bytes);
    for (let i = 0; i < rows.count; i++) {
      cursor.pos = rows.offsets[i]!;
      const row: unknown[] = [rows.ids[i]];
      for (let k = 0; k < rows.width; k++) row.push(cursor.next());
      out.push(row);
    }
    return out;
  }
  for (let i = 0; i < rows.count; i++) {
    const row: unknown[] = [rows.ids[i]];
    for (let k = 0; k < rows.width; k++) row.push(rowValue(rows, i * rows.width + k));
    out.push(row);
  }
  return out;
}

/** Value `at` (= row * width + field) of rows in columns. */
export function rowValue(rows: ColumnRows, at: number): unknown {
  switch (rows.tags[at]) {
    case Tag.NUMBER:
      return rows.values[at];
    case Tag.TRUE:
      return true;
    case Tag.FALSE:
      return false;
    case Tag.NULL:
      return null;
    case Tag.VECTOR: {
      const start = rows.values[at]!;
      return Array.from(rows.vectors.subarray(start + 1, start + 1 + rows.vectors[start]!));
    }
    default:
      return rows.other[rows.values[at]!];
  }
}

/** A snapshot frame read by the fast path: its other fields decoded (still to validate), its rows packed (or checked, `inFrame`). */
export interface FastSnapshot {
  readonly fields: Record<string, unknown>;
  readonly rows: PackedRows;
}

/** Longest string (id or value) the fast path reads itself; longer ones go the ordinary way. */
const MAX_FAST_STRING = 255;

// The reader's state: the frame, a DataView over it, the position, the session's known ids. Synchronous; reading() nests.
let frameIds: KnownIds | null = null;
let src: Uint8Array = new Uint8Array(0);
let view = new DataView(src.buffer);
let pos = 0;
let end = 0;

/**
 * Reads a frame that is a map holding `agents` as rows of exactly `width` values after the id, ids
 * integers or ASCII strings, values nil, booleans, numbers, short ASCII strings or arrays of at most
 * MAX_VECTOR numbers. Returns undefined for anything else (the caller decodes the ordinary way). `ids`: the
 * session's string ids, which `results` entries then name without a string built (KnownIds).
 */
export function readSnapshotRows(bytes: Uint8Array, width: number, inFrame = false, ids: KnownIds | null = null): FastSnapshot | undefined {
  return reading(bytes, () => readFrame(width, inFrame), ids);
}

/** What smallField returns for a field that is not one. */
const REFUSED = Symbol('refused');

/** Runs `read` over `bytes` as the reader's frame; undefined if it throws (a small field the ordinary decoder refused: it will say why). */
function reading<T>(bytes: Uint8Array, read: () => T | undefined, ids: KnownIds | null = null): T | undefined {
  // Saved and put back: results left in a frame (readResultsAt) may be read while another frame is.
  const outerIds = frameIds;
  const outerSrc = src;
  const outerView = view;
  const outerPos = pos;
  const outerEnd = end;
  frameIds = ids;
  src = bytes;
  view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  pos = 0;
  end = bytes.length;
  try {
    return read();
  } catch {
    return undefined;
  } finally {
    frameIds = outerIds;
    src = outerSrc;
    view = outerView;
    pos = outerPos;
    end = outerEnd;
  }
}

/** Reads the frame's map header (fixmap or map16): its entry count, or -1. */
function frameMapHeader(): number {
  if (end === 0) return -1;
  const b = src[pos++]!;
  if (b >= 0x80 && b <= 0x8f) return b & 0x0f;
  if (b === 0xde && end >= 3) {
    pos = 3;
    return (src[1]! << 8) | src[2]!;
  }
  return -1;
}

/**
 * Decodes a small field of the frame (t, tick, time, results, world...) with the ordinary decoder, checks
 * included; REFUSED if it is not a well-formed value. The field sits one level below the frame's map, so it
 * may nest one level less than a whole frame.
 */
function smallField(): unknown {
  const start = pos;
  if (!skipValue(1)) return REFUSED;
  const field = src.subarray(start, pos);
  if (checkFrame(field, LIMITS.maxDepth - 1) !== undefined) return REFUSED;
  return decode(field);
}

/**
 * The `results` field: in columns when every entry is as validation keeps it, else as smallField decodes it. `leave`:
 * the entries are checked, not read (ResultColumns.unread): they are read where they are used.
 */
function resultsField(leave = false): unknown {
  const start = pos;
  const columns = readResults(!leave);
  if (columns !== undefined) return columns;
  pos = start;
  return smallField();
}

/**
 * A results list whose every entry is a fixarray [id, seq, "success" | "failure"] that validation keeps; undefined for
 * anything else. A string id the session knows (KnownIds) is found from its bytes with the number it is filed with.
 * `keep` false: the entries are checked exactly so, but left in the frame, to be read by readResultsAt when asked.
 */
function readResults(keep: boolean): ResultColumns | undefined {
  const start = pos;
  const count = listHeader();
  // An entry takes at least 11 bytes (header, id, seq, a 7-letter fixstr); the ordinary path reports lists above the limit.
  if (count < 0 || count > LIMITS.maxListLength || count * 11 > end - pos) return undefined;
  const ids: AgentId[] | null = keep ? [] : null;
  const seqs = keep ? new Float64Array(count) : null;
  const ok = keep ? new Uint8Array(count) : null;
  // A session of integer ids has none in its index: nothing to look up, nothing to file.
  const index = frameIds === null || frameIds.ids.size === 0 ? null : frameIds.ids;
  const filed = index === null || !keep ? null : new Int32Array(count);
  for (let i = 0; i < count; i++) {
    if (pos >= end || src[pos] !== 0x93) return undefined;
    pos++;
    let id: AgentId | undefined;
    let value = -1;
    const uint = uintIdAt(src, pos, end);
    if (uint >= 0) {
      id = uint;
      pos += uintIdWidth(src[pos]!);
    } else {
      // Left in the frame (keep false), a string id is only checked here: it is found where it is read.
      const to = keep ? -1 : asciiIdEnd();
      if (to >= 0) pos = to;
      else {
        const slot = index === null ? -1 : knownId(index);
        if (slot >= 0) {
          id = index!.idAt(slot);
          value = index!.valueAt(slot);
        } else id = readId();
        if (id === undefined) return undefined;
      }
    }
    const seq = src[pos]! <= 0x7f ? src[pos++]! : readNumber();
    if (!(Number.isSafeInteger(seq) && seq >= 1)) return undefined;
    const status = readStatus();
    if (status < 0) return undefined;
    if (ids === null || seqs === null || ok === null) continue;
    // Kept: every id was read above (only entries left in the frame skip reading a string id).
    ids.push(id!);
    seqs[i] = seq;
    ok[i] = status;
    if (filed !== null) filed[i] = value;
  }
  if (ids === null || seqs === null || ok === null) {
    const bytes = src;
    const known = frameIds;
    return ResultColumns.unread(count, bytes, start, () => readResultsAt(bytes, start, known)!);
  }
  return ResultColumns.of({ ids, seqs, ok, filed, version: filed === null ? -1 : frameIds!.version });
}

/**
 * The results list whose header is at byte `start` of `bytes`, as readResults reads it (`known`: the session's ids, if
 * the caller has them); undefined if it is not one. For entries a frame reader checked and left there (`keep` false).
 */
export function readResultsAt(bytes: Uint8Array, start: number, known: KnownIds | null = null): ResultColumns | undefined {
  return reading(
    bytes,
    () => {
      pos = start;
      return readResults(true);
    },
    known,
  );
}

/** Set by textAt: the length of the string whose text it found. */
let textLength = 0;

/** Where the text of the fixstr or str8 at `pos` starts (its length in textLength), or -1: not one, or cut short. */
function textAt(): number {
  const b = src[pos]!;
  let at = pos + 1;
  if (b >= 0xa0 && b <= 0xbf) textLength = b & 0x1f;
  else if (b === 0xd9 && at < end) textLength = src[at++]!;
  else return -1;
  return at + textLength <= end ? at : -1;
}

/** The end of the string id readId would read at `pos` (a fixstr or str8 of 1 to maxAgentIdLength ASCII characters), else -1. */
function asciiIdEnd(): number {
  const from = textAt();
  const n = textLength;
  if (from < 0 || n < 1 || n > LIMITS.maxAgentIdLength || n > MAX_FAST_STRING) return -1;
  for (let i = from; i < from + n; i++) if (src[i]! >= 0x80) return -1;
  return from + n;
}

/** The IdIndex slot of the known id a fixstr or str8 at `pos` spells, `pos` past it; else -1, `pos` unmoved. */
function knownId(index: IdIndex): number {
  const at = textAt();
  if (at < 0) return -1;
  const slot = index.find(src, at, at + textLength);
  if (slot >= 0) pos = at + textLength;
  return slot;
}

/** A fixstr "success" (1) or "failure" (0) at `pos`, compared as bytes; -1 for anything else (the ordinary path reads it). */
function readStatus(): number {
  if (pos + 8 > end || src[pos] !== 0xa7) return -1;
  const b = src;
  const p = pos + 1;
  let status = -1;
  // "success": 73 75 63 63 65 73 73; "failure": 66 61 69 6c 75 72 65.
  if (b[p] === 0x73 && b[p + 1] === 0x75 && b[p + 2] === 0x63 && b[p + 3] === 0x63 && b[p + 4] === 0x65 && b[p + 5] === 0x73 && b[p + 6] === 0x73) status = 1;
  else if (b[p] === 0x66 && b[p + 1] === 0x61 && b[p + 2] === 0x69 && b[p + 3] === 0x6c && b[p + 4] === 0x75 && b[p + 5] === 0x72 && b[p + 6] === 0x65) status = 0;
  if (status >= 0) pos += 8;
  return status;
}

function readFrame(width: number, inFrame: boolean): FastSnapshot | undefined {
  const entries = frameMapHeader();
  if (entries < 0) return undefined;
  const fields: Record<string, unknown> = {};
  let rows: PackedRows | undefined;
  for (let e = 0; e < entries; e++) {
    const key = readShortString();
    if (key === undefined || key === '__proto__') return undefined;
    if (key === 'agents') {
      if (rows !== undefined) return undefined;
      rows = inFrame ? scanRows(width) : readRows(width);
      if (rows === undefined) return undefined;
      continue;
    }
    const value = key === 'results' ? resultsField() : smallField();
    if (value === REFUSED) return undefined;
    setField(fields, key, value);
  }
  if (pos !== end || rows === undefined || fields['t'] !== 'snapshot') return undefined;
  return { fields, rows };
}

/** A frame whose list `key` is cut into parts (splitFrameList). */
export interface SplitFrame {
  /** The frame's other fields, decoded, in frame order; `key` holds its place (null until the caller sets it). */
  readonly fields: Record<string, unknown>;
  /** The list's items, `count` consecutive MessagePack values each (decodeItems decodes them at level 2). */
  readonly parts: ReadonlyArray<{ readonly count: number; readonly bytes: Uint8Array }>;
}

/**
 * Cuts the list `key` of a frame (a map of short string keys) into parts of at most `per` items, without
 * decoding them; the other fields are decoded and checked as a whole frame's would be. Undefined for anything
 * else (no such list, a key twice, a map32, bytes that do not add up): the caller decodes the ordinary way.
 */
export function splitFrameList(bytes: Uint8Array, key: string, per: number): SplitFrame | undefined {
  return reading(bytes, () => split(key, per));
}

function split(list: string, per: number): SplitFrame | undefined {
  const entries = frameMapHeader();
  if (entries < 0) return undefined;
  const fields: Record<string, unknown> = {};
  const parts: Array<{ count: number; bytes: Uint8Array }> = [];
  let found = false;
  for (let e = 0; e < entries; e++) {
    const key = readShortString();
    if (key === undefined || key === '__proto__' || Object.hasOwn(fields, key)) return undefined;
    if (key === list) {
      const count = listHeader();
      if (count < 0) return undefined;
      found = true;
      fields[key] = null;
      for (let from = 0; from < count; from += per) {
        const start = pos;
        const n = Math.min(per, count - from);
        for (let i = 0; i < n; i++) if (!skipValue(2)) return undefined;
        parts.push({ count: n, bytes: src.subarray(start, pos) });
      }
      continue;
    }
    const value = smallField();
    if (value === REFUSED) return undefined;
    fields[key] = value;
  }
  if (pos !== end || !found) return undefined;
  return { fields, parts };
}

/**
 * `count` spawn entries (a part of `agents` that splitFrameList cut), read straight from the bytes as the ordinary
 * decoder would read them, when each is a map (fixmap or map16) of distinct keys among `id`, `tree`, `label`, `seed`
 * and `every` whose values validation keeps (an id readId reads, ASCII strings for the tree and label within their
 * limits, a safe integer seed, a tick interval from 1 to LIMITS.maxEvery) and the bytes end with the last entry;
 * undefined for anything else, so the caller decodes them the ordinary way (decodeItems), and a refusal is worded
 * there. A tree name or label with the bytes of the entry before it is that entry's string: one string for a spawn's
 * one tree, not one per agent.
 */
export function readSpawnEntries(bytes: Uint8Array, count: number): Array<Record<string, unknown>> | undefined {
  return reading(bytes, () => spawnEntries(count));
}

/**
 * A part of a spawn's `agents` (splitFrameList) decoded: its entries read straight from the bytes when they have the
 * usual shape (readSpawnEntries), else decoded and checked as the whole frame would be (decodeItems); undefined when
 * they do not pass, as decodeItems says.
 */
export function decodeSpawnPart(bytes: Uint8Array, count: number): unknown[] | undefined {
  return readSpawnEntries(bytes, count) ?? decodeItems(bytes, count, 2);
}

/** The keys spawnEntries reads, as bits of the keys an entry has shown. */
const ID = 1;
const TREE = 2;
const LABEL = 4;
const SEED = 8;
const EVERY = 16;

function spawnEntries(count: number): Array<Record<string, unknown>> | undefined {
  const out: Array<Record<string, unknown>> = [];
  const tree = new SameText(LIMITS.maxTreeNameLength, 1);
  const label = new SameText(LIMITS.maxLabelLength, 0);
  for (let i = 0; i < count; i++) {
    const keys = entryMapHeader();
    if (keys < 0) return undefined;
    const entry: Record<string, unknown> = {};
    let seen = 0;
    for (let k = keys; k > 0; k--) {
      const key = spawnKey();
      if (key === 0 || (seen & key) !== 0) return undefined;
      seen |= key;
      if (key === ID) {
        const id = readId();
        if (id === undefined) return undefined;
        entry['id'] = id;
      } else if (key === TREE) {
        const name = tree.read();
        if (name === undefined) return undefined;
        entry['tree'] = name;
      } else if (key === LABEL) {
        const text = label.read();
        if (text === undefined) return undefined;
        entry['label'] = text;
      } else if (key === SEED) {
        const seed = readNumber();
        if (!Number.isSafeInteger(seed)) return undefined;
        entry['seed'] = seed;
      } else {
        const every = readNumber();
        if (!Number.isInteger(every) || every < 1 || every > LIMITS.maxEvery) return undefined;
        entry['every'] = every;
      }
    }
    if ((seen & (ID | TREE)) !== (ID | TREE)) return undefined;
    out.push(entry);
  }
  return pos === end ? out : undefined;
}

/** A map header at `pos` (a fixmap, or a map16 as msgpackr writes maps by default), `pos` past it: its entry count, or -1. */
function entryMapHeader(): number {
  if (pos >= end) return -1;
  const b = src[pos++]!;
  if (b >= 0x80 && b <= 0x8f) return b & 0x0f;
  if (b !== 0xde || pos + 2 > end) return -1;
  pos += 2;
  return (src[pos - 2]! << 8) | src[pos - 1]!;
}

/** The spawn entry key (a fixstr) at `pos`, `pos` past it: ID, TREE, LABEL, SEED or EVERY; 0 for any other. */
function spawnKey(): number {
  const b = src[pos]!;
  const p = pos + 1;
  const s = src;
  let key = 0;
  // "id": 69 64; "tree": 74 72 65 65; "seed": 73 65 65 64; "label": 6c 61 62 65 6c; "every": 65 76 65 72 79.
  if (b === 0xa2 && p + 2 <= end && s[p] === 0x69 && s[p + 1] === 0x64) key = ID;
  else if (b === 0xa4 && p + 4 <= end) {
    if (s[p] === 0x74 && s[p + 1] === 0x72 && s[p + 2] === 0x65 && s[p + 3] === 0x65) key = TREE;
    else if (s[p] === 0x73 && s[p + 1] === 0x65 && s[p + 2] === 0x65 && s[p + 3] === 0x64) key = SEED;
  } else if (b === 0xa5 && p + 5 <= end) {
    if (s[p] === 0x6c && s[p + 1] === 0x61 && s[p + 2] === 0x62 && s[p + 3] === 0x65 && s[p + 4] === 0x6c) key = LABEL;
    else if (s[p] === 0x65 && s[p + 1] === 0x76 && s[p + 2] === 0x65 && s[p + 3] === 0x72 && s[p + 4] === 0x79) key = EVERY;
  }
  if (key !== 0) pos = p + (b & 0x1f);
  return key;
}

/** Short ASCII strings of `min` to `max` characters, the previous one given again for the same bytes. */
class SameText {
  private text = '';
  private from = -1;
  private length = -1;

  constructor(
    private readonly max: number,
    private readonly min: number,
  ) {}

  /** The fixstr or str8 at `pos`, `pos` past it; undefined (position unspecified) to give up. */
  read(): string | undefined {
    const at = textAt();
    const n = textLength;
    if (at < 0 || n < this.min || n > this.max) return undefined;
    if (n === this.length && sameBytes(this.from, at, n)) {
      pos = at + n;
      return this.text;
    }
    const text = readShortString();
    if (text === undefined) return undefined;
    this.text = text;
    this.from = at;
    this.length = n;
    return text;
  }
}

function sameBytes(a: number, b: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (src[a + i] !== src[b + i]) return false;
  return true;
}

/** Reads a MessagePack array header at `pos`: its length, or -1 (and `pos` wherever it stopped) when there is none. */
function listHeader(): number {
  if (pos >= end) return -1;
  const b = src[pos++]!;
  if (b >= 0x90 && b <= 0x9f) return b & 0x0f;
  if (b === 0xdc && pos + 2 <= end) {
    pos += 2;
    return view.getUint16(pos - 2);
  }
  if (b === 0xdd && pos + 4 <= end) {
    pos += 4;
    return view.getUint32(pos - 4);
  }
  return -1;
}

function readRows(width: number): ColumnRows | undefined {
  const count = listHeader();
  if (count < 0) return undefined;
  // Every row takes at least one byte per value; the ordinary path reports lists above the limit.
  if (count > LIMITS.maxListLength || count * (width + 1) > end - pos) return undefined;
  const header = 0x90 + width + 1;
  if (width + 1 > 15) return undefined;
  const ids: AgentId[] = [];
  const tags = new Uint8Array(count * width);
  const values = new Float64Array(count * width);
  let vectors = new Float64Array(64);
  let vectorsLength = 0;
  const other: unknown[] = [];
  // Locals in the loop (module-level bindings cost a context load each); `pos` is synced around calls.
  const bytes = src;
  const dv = view;
  const last = end;
  let p = pos;
  for (let i = 0; i < count; i++) {
    if (p >= last || bytes[p] !== header) return undefined;
    p++;
    // The id: an unsigned integer of up to 32 bits inline, anything else through readId.
    const uint = uintIdAt(bytes, p, last);
    if (uint >= 0) {
      ids.push(uint);
      p += uintIdWidth(bytes[p]!);
    } else {
      pos = p;
      const id = readId();
      if (id === undefined) return undefined;
      ids.push(id);
      p = pos;
    }
    const base = i * width;
    for (let k = 0; k < width; k++) {
      if (p >= last) return undefined;
      const v = bytes[p]!;
      if (v === 0xcb) {
        if (p + 9 > last) return undefined;
        values[base + k] = dv.getFloat64(p + 1);
        tags[base + k] = Tag.NUMBER;
        p += 9;
      } else if (v <= 0x7f) {
        values[base + k] = v;
        tags[base + k] = Tag.NUMBER;
        p++;
      } else if (v === 0xc0) {
        tags[base + k] = Tag.NULL;
        p++;
      } else if (v === 0xc3) {
        tags[base + k] = Tag.TRUE;
        p++;
      } else if (v === 0xc2) {
        tags[base + k] = Tag.FALSE;
        p++;
      } else if (v >= 0x90 && v <= 0x9f) {
        const n = v & 0x0f;
        if (n > MAX_VECTOR) return undefined;
        p++;
        if (vectorsLength + 1 + n > vectors.length) {
          const grown = new Float64Array(Math.max(vectors.length * 2, vectorsLength + 1 + n));
          grown.set(vectors.subarray(0, vectorsLength));
          vectors = grown;
        }
        const at = vectorsLength;
        vectors[at] = n;
        for (let j = 1; j <= n; j++) {
          if (p + 9 <= last && bytes[p] === 0xcb) {
            vectors[at + j] = dv.getFloat64(p + 1);
            p += 9;
            continue;
          }
          pos = p;
          const x = readNumber();
          if (x !== x && !lastWasNaN) return undefined;
          vectors[at + j] = x;
          p = pos;
        }
        vectorsLength += 1 + n;
        values[base + k] = at;
        tags[base + k] = Tag.VECTOR;
      } else if ((v >= 0xa0 && v <= 0xbf) || v === 0xd9) {
        pos = p;
        const str = readShortString();
        if (str === undefined) return undefined;
        p = pos;
        values[base + k] = other.length;
        other.push(str);
        tags[base + k] = Tag.OTHER;
      } else {
        pos = p;
        const x = readNumber();
        if (x !== x && !lastWasNaN) return undefined;
        p = pos;
        values[base + k] = x;
        tags[base + k] = Tag.NUMBER;
      }
    }
  }
  pos = p;
  return { kind: 'packed', count, width, ids, tags, values, vectors: vectors.subarray(0, vectorsLength), other };
}

/**
 * Checks rows exactly as readRows reads them (it accepts and refuses the same frames) but decodes no value:
 * it keeps each row's id and the offset of its first value, for a FrameCursor on the thread owning the agent.
 */
function scanRows(width: number): FrameRows | undefined {
  const count = listHeader();
  if (count < 0 || !rowsFit(count, width)) return undefined;
  // Sized once: pushing 12,500 ids grew the array a dozen times, half of the main thread's allocation per frame
  // (Array.from({ length }) would fill it first, one more pass).
  // oxlint-disable-next-line unicorn/no-new-array -- a length, every slot is written below before the array is used
  const ids = new Array<AgentId>(count);
  const offsets = new Int32Array(count);
  // The ids the session's rows named last time (KnownIds.rowIds): string ids spelled the same are those strings.
  if (!scanRowsAt(count, width, ids, offsets, frameIds === null ? null : frameIds.rowIds())) return undefined;
  return { kind: 'frame', count, width, ids, offsets, bytes: src };
}

/** The bounds scanRows checks before the rows: at most the list limit, one byte per value at least, a fixarray per row. */
function rowsFit(count: number, width: number): boolean {
  return count <= LIMITS.maxListLength && count * (width + 1) <= end - pos && width + 1 <= 15;
}

/**
 * The rows' loop of scanRows, from `pos`: writes row i's id into `ids[i]` and the offset of its first value into
 * `offsets[i]` (both at least `count` long); false to give up. The one copy of the check: the main thread's
 * scanRows and the workers' checkFrameRows both run it, so they accept and refuse the same rows. `known`, when
 * given, holds the ids the rows named in an earlier frame: a row whose id's bytes spell row i's known string id is
 * that very string, not a new one (knownRowEnd): the row memo (row-memo.ts) then finds it by identity rather than by
 * comparing or hashing a fresh one. `reader`, when given, takes each row's values in place of the check's own loop
 * (RowReader).
 */
function scanRowsAt(count: number, width: number, ids: AgentId[], offsets: Int32Array, known: KnownRowIds | null = null, reader: RowReader | null = null): boolean {
  const header = 0x90 + width + 1;
  const bytes = src;
  const last = end;
  let p = pos;
  for (let i = 0; i < count; i++) {
    if (p >= last || bytes[p] !== header) return false;
    p++;
    const uint = uintIdAt(bytes, p, last);
    if (uint >= 0) {
      ids[i] = uint;
      p += uintIdWidth(bytes[p]!);
    } else {
      const to = known !== null ? knownRowEnd(known, i, bytes, p, last) : -1;
      if (to >= 0) {
        ids[i] = known!.ids[i]!;
        p = to;
      } else {
        pos = p;
        const id = readId();
        if (id === undefined) return false;
        ids[i] = id;
        p = pos;
      }
    }
    offsets[i] = p;
    if (reader !== null) {
      p = reader.values(i, ids[i]!, p);
      if (p < 0) return false;
      continue;
    }
    // checkRowValue, written out: the loop over a call per value was 10–15 % slower.
    for (let k = 0; k < width; k++) {
      if (p >= last) return false;
      const v = bytes[p]!;
      if (v === 0xcb) {
        if (p + 9 > last) return false;
        p += 9;
      } else if (v <= 0x7f || v === 0xc0 || v === 0xc3 || v === 0xc2) {
        p++;
      } else {
        p = checkOtherValue(bytes, p, last, v);
        if (p < 0) return false;
      }
    }
  }
  pos = p;
  return true;
}

/** The check of a row value in the forms other than the common ones: arrays of numbers, short ASCII strings, other number forms. */
function checkOtherValue(bytes: Uint8Array, p: number, last: number, v: number): number {
  if (v >= 0x90 && v <= 0x9f) {
    const m = v & 0x0f;
    p++;
    for (let j = 1; j <= m; j++) {
      const e = bytes[p];
      if (e === 0xcb && p + 9 <= last) {
        p += 9;
        continue;
      }
      if (e !== undefined && (e <= 0x7f || e >= 0xe0)) {
        p++;
        continue;
      }
      pos = p;
      const x = readNumber();
      if (x !== x && !lastWasNaN) return -1;
      p = pos;
    }
    return p;
  }
  pos = p;
  if ((v >= 0xa0 && v <= 0xbf) || v === 0xd9) return readShortString() === undefined ? -1 : pos;
  const x = readNumber();
  return x !== x && !lastWasNaN ? -1 : pos;
}

/**
 * Takes the values of each row checkFrameRows checks, in place of the check's own loop over them: a check and an
 * apply in one pass over the frame's bytes (the agent pool's hosts: host.ts, StageReader). `values(i, id, p)` reads
 * row i's values from byte `p` of the frame and returns the position after them, or -1 to give up: for bytes the
 * check would refuse, and for any form it does not read itself. It may call checkRowValue for the check of one value.
 */
export interface RowReader {
  values(i: number, id: AgentId, p: number): number;
}

/**
 * For a RowReader, while checkFrameRows runs it: the check of the one value at byte `p` of the frame, exactly as the
 * check's own loop makes it; the position after the value, or -1 when the check refuses it.
 */
export function checkRowValue(p: number): number {
  if (p >= end) return -1;
  const v = src[p]!;
  if (v === 0xcb) return p + 9 <= end ? p + 9 : -1;
  if (v <= 0x7f || v === 0xc0 || v === 0xc3 || v === 0xc2) return p + 1;
  return checkOtherValue(src, p, end, v);
}

/**
 * A snapshot frame whose rows are left unread: the frame's other fields decoded (still to validate), and where its
 * `count` rows start. Only for frames whose `agents` list is their last field (the rows then end with the frame).
 */
export interface UnreadSnapshot {
  readonly fields: Record<string, unknown>;
  readonly start: number;
  readonly count: number;
}

/**
 * The frame as readSnapshotRows(bytes, width, true) reads it, but its rows not read: every field before `agents`
 * decoded and checked, the list's header and bounds checked, the rows left for checkFrameRows (on the threads that
 * own the agents). Undefined when `agents` is not the frame's last field or anything before it is not as the fast
 * path wants it: the caller then reads the frame the ordinary way (readSnapshotRows, or the decoder).
 */
export function readSnapshotHead(bytes: Uint8Array, width: number, ids: KnownIds | null = null): UnreadSnapshot | undefined {
  return reading(bytes, () => readHead(width), ids);
}

function readHead(width: number): UnreadSnapshot | undefined {
  const entries = frameMapHeader();
  if (entries < 0) return undefined;
  const fields: Record<string, unknown> = {};
  for (let e = 0; e < entries; e++) {
    const key = readShortString();
    if (key === undefined || key === '__proto__') return undefined;
    if (key === 'agents') {
      if (e !== entries - 1) return undefined;
      const count = listHeader();
      if (count < 0 || !rowsFit(count, width)) return undefined;
      if (fields['t'] !== 'snapshot') return undefined;
      return { fields, start: pos, count };
    }
    const value = key === 'results' ? resultsField(true) : headField();
    if (value === REFUSED || (key === 't' && value !== 'snapshot')) return undefined;
    setField(fields, key, value);
  }
  return undefined;
}

/**
 * `fields[key] = value`, a snapshot's own keys stored by name: one keyed store for every key went megamorphic, 1–1.5 %
 * of the main thread at 50,000 agents (docs/capacity.md, *Round twenty*). Any other key is stored as before.
 */
function setField(fields: Record<string, unknown>, key: string, value: unknown): void {
  switch (key) {
    case 't':
      fields['t'] = value;
      return;
    case 'tick':
      fields['tick'] = value;
      return;
    case 'time':
      fields['time'] = value;
      return;
    case 'id':
      fields['id'] = value;
      return;
    case 'results':
      fields['results'] = value;
      return;
    case 'world':
      fields['world'] = value;
      return;
    case 'full':
      fields['full'] = value;
      return;
    default:
      fields[key] = value;
  }
}

/**
 * A field of a snapshot's head: a number or a short ASCII string (`t`, `tick`, `time`) read in place, as the ordinary
 * decoder gives them; anything else as smallField decodes it. The decoder's set-up for each small value was 1–2 % of
 * the main thread, three fields a frame (docs/capacity.md, *Round seventeen*).
 */
function headField(): unknown {
  const start = pos;
  const b = src[pos];
  if (b !== undefined) {
    const width = b <= 0x7f ? 1 : b === 0xcc ? 2 : b === 0xcd ? 3 : b === 0xce ? 5 : b === 0xcb ? 9 : 0;
    if (width > 0 && start + width <= end) return readNumber();
    if ((b >= 0xa0 && b <= 0xbf) || b === 0xd9) {
      const text = readShortString();
      if (text !== undefined) return text;
      pos = start;
    }
  }
  return smallField();
}

/**
 * Checks `count` rows of `width` values from byte `start` of a frame read by readSnapshotHead, exactly as the fast
 * path does (the same loop as scanRows), and that they end with the frame: true if they all pass, with row i's id
 * in `ids[i]` and its values' offset in `offsets[i]` (both grown as needed; reused by the caller from frame to frame).
 * `known`: the ids the rows named in an earlier frame, if the caller keeps them (the same strings are then reused).
 * `reader`: takes each row's values in place of the check's loop over them (RowReader); false when it gives up too.
 */
export function checkFrameRows(
  bytes: Uint8Array,
  start: number,
  count: number,
  width: number,
  ids: AgentId[],
  offsets: Int32Array,
  known: KnownRowIds | null = null,
  reader: RowReader | null = null,
): boolean {
  if (offsets.length < count) throw new RangeError('checkFrameRows: offsets is shorter than the rows');
  const passed = reading(bytes, () => {
    pos = start;
    return scanRowsAt(count, width, ids, offsets, known, reader) && pos === end;
  });
  return passed === true;
}

/** Staged rows as FrameRows (the main thread checks them itself: a frame a worker's routing no longer matches). */
export function stagedAsFrameRows(rows: StagedRows): FrameRows {
  // oxlint-disable-next-line unicorn/no-new-array -- a length, every slot is written by checkFrameRows
  const ids = new Array<AgentId>(rows.count);
  const offsets = new Int32Array(rows.count);
  if (!checkFrameRows(rows.bytes, rows.start, rows.count, rows.width, ids, offsets)) throw new Error('staged rows that do not pass the check (a bug)');
  return { kind: 'frame', count: rows.count, width: rows.width, ids, offsets, bytes: rows.bytes };
}

/**
 * Reads the values of FrameRows, one after the other, from a frame scanRows checked (so without checks of
 * its own): `frame(bytes)`, set `pos` to a row's offset, then `next()` once per value. Values come out as
 * the ordinary decoder gives them: numbers, booleans, null, strings, arrays of numbers (a fresh array).
 */
export class FrameCursor {
  pos = 0;
  /** The frame and a view of it (read-only to callers: generated row writers read the common forms inline). */
  bytes: Uint8Array = new Uint8Array(0);
  view: DataView = new DataView(this.bytes.buffer);

  frame(bytes: Uint8Array): void {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  next(): unknown {
    const b = this.bytes;
    const p = this.pos;
    const v = b[p]!;
    if (v === 0xcb) {
      this.pos = p + 9;
      return this.view.getFloat64(p + 1);
    }
    if (v <= 0x7f) {
      this.pos = p + 1;
      return v;
    }
    if (v === 0xc0) {
      this.pos = p + 1;
      return null;
    }
    if (v === 0xc3) {
      this.pos = p + 1;
      return true;
    }
    if (v === 0xc2) {
      this.pos = p + 1;
      return false;
    }
    if (v >= 0x90 && v <= 0x9f) {
      const n = v & 0x0f;
      this.pos = p + 1;
      if (n === 2) {
        const x = this.number();
        return [x, this.number()];
      }
      const out: number[] = [];
      for (let j = 0; j < n; j++) out.push(this.number());
      return out;
    }
    if ((v >= 0xa0 && v <= 0xbf) || v === 0xd9) {
      let at = p + 1;
      let n = v & 0x1f;
      if (v === 0xd9) n = b[at++]!;
      let s = '';
      for (let i = at; i < at + n; i++) s += String.fromCharCode(b[i]!);
      this.pos = at + n;
      return s;
    }
    return this.number();
  }

  /** One number of any MessagePack numeric form, read as readNumber (and msgpackr) reads it. */
  private number(): number {
    const b = this.bytes;
    const dv = this.view;
    const p = this.pos;
    const v = b[p]!;
    if (v <= 0x7f) {
      this.pos = p + 1;
      return v;
    }
    if (v >= 0xe0) {
      this.pos = p + 1;
      return v - 0x100;
    }
    switch (v) {
      case 0xcb:
        this.pos = p + 9;
        return dv.getFloat64(p + 1);
      case 0xca:
        this.pos = p + 5;
        return dv.getFloat32(p + 1);
      case 0xcc:
        this.pos = p + 2;
        return b[p + 1]!;
      case 0xcd:
        this.pos = p + 3;
        return dv.getUint16(p + 1);
      case 0xce:
        this.pos = p + 5;
        return dv.getUint32(p + 1);
      case 0xd0:
        this.pos = p + 2;
        return dv.getInt8(p + 1);
      case 0xd1:
        this.pos = p + 3;
        return dv.getInt16(p + 1);
      case 0xd2:
        this.pos = p + 5;
        return dv.getInt32(p + 1);
      case 0xcf:
        this.pos = p + 9;
        return dv.getUint32(p + 1) * 0x100000000 + dv.getUint32(p + 5);
      case 0xd3:
        this.pos = p + 9;
        return dv.getInt32(p + 1) * 0x100000000 + dv.getUint32(p + 5);
      default:
        throw new Error(`FrameCursor: byte 0x${v.toString(16)} at ${p} is not a number (the frame was not checked by scanRows)`);
    }
  }
}

/** True when the last readNumber() read a NaN from the frame (rather than giving up). */
let lastWasNaN = false;

/** A number of any MessagePack numeric form, read as msgpackr reads it; NaN (lastWasNaN false) to give up. */
function readNumber(): number {
  lastWasNaN = false;
  if (pos >= end) return NaN;
  const b = src[pos++]!;
  if (b <= 0x7f) return b;
  if (b >= 0xe0) return b - 0x100;
  let x: number;
  switch (b) {
    case 0xcb:
      if (pos + 8 > end) return NaN;
      x = view.getFloat64(pos);
      pos += 8;
      break;
    case 0xca:
      if (pos + 4 > end) return NaN;
      x = view.getFloat32(pos);
      pos += 4;
      break;
    case 0xcc:
      if (pos + 1 > end) return NaN;
      return src[pos++]!;
    case 0xcd:
      if (pos + 2 > end) return NaN;
      x = view.getUint16(pos);
      pos += 2;
      return x;
    case 0xce:
      if (pos + 4 > end) return NaN;
      x = view.getUint32(pos);
      pos += 4;
      return x;
    case 0xd0:
      if (pos + 1 > end) return NaN;
      return view.getInt8(pos++);
    case 0xd1:
      if (pos + 2 > end) return NaN;
      x = view.getInt16(pos);
      pos += 2;
      return x;
    case 0xd2:
      if (pos + 4 > end) return NaN;
      x = view.getInt32(pos);
      pos += 4;
      return x;
    case 0xcf:
      // As msgpackr with int64AsType 'number' (codec.ts): high word × 2^32 + low word.
      if (pos + 8 > end) return NaN;
      x = view.getUint32(pos) * 0x100000000 + view.getUint32(pos + 4);
      pos += 8;
      return x;
    case 0xd3:
      if (pos + 8 > end) return NaN;
      x = view.getInt32(pos) * 0x100000000 + view.getUint32(pos + 4);
      pos += 8;
      return x;
    default:
      pos--;
      return NaN;
  }
  if (x !== x) lastWasNaN = true;
  return x;
}

/**
 * The id at byte `p` of `bytes` when it is an unsigned integer of up to 32 bits (a positive fixint, a uint16, a uint32:
 * sparse ids such as k·1,000,000 + i are uint32s), taking uintIdWidth bytes; -1 for any other id, or one cut by
 * `last`. readId reads these the same, through readNumber: the readers of rows and results take them inline.
 */
function uintIdAt(bytes: Uint8Array, p: number, last: number): number {
  const b = bytes[p]!;
  if (b <= 0x7f) return b;
  if (b === 0xcd && p + 3 <= last) return (bytes[p + 1]! << 8) | bytes[p + 2]!;
  if (b === 0xce && p + 5 <= last) return ((bytes[p + 1]! << 24) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 8) | bytes[p + 4]!) >>> 0;
  return -1;
}

/** The bytes of an id uintIdAt read, from its first byte. */
function uintIdWidth(first: number): number {
  return first <= 0x7f ? 1 : first === 0xcd ? 3 : 5;
}

/** An agent id: an integer (safe) or a string of 1–128 ASCII characters; undefined to give up. */
function readId(): AgentId | undefined {
  if (pos >= end) return undefined;
  const b = src[pos]!;
  if ((b >= 0xa0 && b <= 0xbf) || b === 0xd9) {
    const s = readShortString();
    return s !== undefined && s.length >= 1 && s.length <= LIMITS.maxAgentIdLength ? s : undefined;
  }
  const x = readNumber();
  return Number.isSafeInteger(x) ? x : undefined;
}

/** A fixstr or str8 of ASCII characters; undefined (position unspecified) to give up. */
function readShortString(): string | undefined {
  if (pos >= end) return undefined;
  const b = src[pos++]!;
  let n: number;
  if (b >= 0xa0 && b <= 0xbf) n = b & 0x1f;
  else if (b === 0xd9 && pos < end) n = src[pos++]!;
  else return undefined;
  if (n > MAX_FAST_STRING || pos + n > end) return undefined;
  const from = pos;
  const to = from + n;
  for (let i = from; i < to; i++) if (src[i]! >= 0x80) return undefined;
  pos = to;
  return ascii(src, from, to);
}

/**
 * The ASCII bytes [from, to) of `bytes` as a string, up to 8 characters per String.fromCharCode: a 10-character
 * id ("npc-3-1234") costs 3 strings instead of 10 (measured: 44 vs 102 ns; string ids were 3× dearer to read
 * than integer ids).
 */
function ascii(bytes: Uint8Array, from: number, to: number): string {
  let s = '';
  let i = from;
  for (; i + 8 <= to; i += 8) {
    s += String.fromCharCode(bytes[i]!, bytes[i + 1]!, bytes[i + 2]!, bytes[i + 3]!, bytes[i + 4]!, bytes[i + 5]!, bytes[i + 6]!, bytes[i + 7]!);
  }
  if (i + 4 <= to) {
    s += String.fromCharCode(bytes[i]!, bytes[i + 1]!, bytes[i + 2]!, bytes[i + 3]!);
    i += 4;
  }
  if (i + 2 <= to) {
    s += String.fromCharCode(bytes[i]!, bytes[i + 1]!);
    i += 2;
  }
  if (i < to) s += String.fromCharCode(bytes[i]!);
  return s;
}

/** Skips one value (bounds only: the ordinary decoder checks it next); false to give up. */
function skipValue(depth: number): boolean {
  if (pos >= end || depth > LIMITS.maxDepth) return false;
  const b = src[pos++]!;
  if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) return true;
  let count = -1;
  let bytes = -1;
  if (b >= 0xa0 && b <= 0xbf) bytes = b & 0x1f;
  else if (b >= 0x90 && b <= 0x9f) count = b & 0x0f;
  else if (b >= 0x80 && b <= 0x8f) count = (b & 0x0f) * 2;
  else {
    switch (b) {
      case 0xcc:
      case 0xd0:
        bytes = 1;
        break;
      case 0xcd:
      case 0xd1:
        bytes = 2;
        break;
      case 0xce:
      case 0xd2:
      case 0xca:
        bytes = 4;
        break;
      case 0xcf:
      case 0xd3:
      case 0xcb:
        bytes = 8;
        break;
      case 0xd9:
      case 0xc4:
        if (pos + 1 > end) return false;
        bytes = src[pos]!;
        pos += 1;
        break;
      case 0xda:
      case 0xc5:
        if (pos + 2 > end) return false;
        bytes = view.getUint16(pos);
        pos += 2;
        break;
      case 0xdb:
      case 0xc6:
        if (pos + 4 > end) return false;
        bytes = view.getUint32(pos);
        pos += 4;
        break;
      case 0xdc:
      case 0xde:
        if (pos + 2 > end) return false;
        count = view.getUint16(pos) * (b === 0xde ? 2 : 1);
        pos += 2;
        break;
      case 0xdd:
      case 0xdf:
        if (pos + 4 > end) return false;
        count = view.getUint32(pos) * (b === 0xdf ? 2 : 1);
        pos += 4;
        break;
      default:
        // Extensions, the reserved byte: the ordinary path says what is wrong.
        return false;
    }
  }
  if (bytes >= 0) {
    if (pos + bytes > end) return false;
    pos += bytes;
    return true;
  }
  if (count > end - pos) return false;
  for (let i = 0; i < count; i++) if (!skipValue(depth + 1)) return false;
  return true;
}
