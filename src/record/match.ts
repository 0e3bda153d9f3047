// Exact replay's comparison without re-encoding: checks a recorded `decisions` frame against replayed
// decision lists by walking the recorded bytes, value by value, and asking of each replayed value whether
// the service's encoder (`encodeDecisions`, msgpackr with the protocol's options) would have written
// exactly these bytes. Nothing is encoded and nothing allocated on the common path.
//
// It only ever proves equality. For anything it does not model (integers wider than 32 bits, which the
// encoder writes as int64; strings other than ASCII; objects that are not plain; bigints...) or any
// mismatch it answers `false`, and the caller falls back to encoding the frame and comparing the bytes:
// so the verdict is always the one of `encodeDecisions(d).equals(recorded)`, only cheaper when they match.

import type { DecisionsFields } from '../protocol/index.js';

let src: Uint8Array = new Uint8Array(0);
let view = new DataView(src.buffer);
let pos = 0;

/**
 * True when `recorded` is byte for byte what `encodeDecisions(d)` writes. False means "not proven": the
 * frames may differ, or `d` holds something this walker leaves to the encoder.
 */
export function matchesDecisions(recorded: Uint8Array, d: DecisionsFields): boolean {
  src = recorded;
  view = new DataView(recorded.buffer, recorded.byteOffset, recorded.byteLength);
  pos = 0;
  try {
    return matchFrame(d) && pos === recorded.length;
  } finally {
    src = EMPTY;
    view = EMPTY_VIEW;
  }
}

const EMPTY = new Uint8Array(0);
const EMPTY_VIEW = new DataView(EMPTY.buffer);

// encodeDecisions: { t, tick, basedOn?, actions?, cancels?, done?, errors? }, empty lists left out.
function matchFrame(d: DecisionsFields): boolean {
  const actions = d.actions !== undefined && d.actions.length > 0 ? d.actions : null;
  const cancels = d.cancels !== undefined && d.cancels.length > 0 ? d.cancels : null;
  const done = d.done !== undefined && d.done.length > 0 ? d.done : null;
  const errors = d.errors !== undefined && d.errors.length > 0 ? d.errors : null;
  const entries = 2 + (d.basedOn !== undefined ? 1 : 0) + (actions !== null ? 1 : 0) + (cancels !== null ? 1 : 0) + (done !== null ? 1 : 0) + (errors !== null ? 1 : 0);
  if (src[pos++] !== (0x80 | entries)) return false;
  if (!matchString('t') || !matchString('decisions')) return false;
  if (!matchString('tick') || !matchValue(d.tick)) return false;
  if (d.basedOn !== undefined && (!matchString('basedOn') || !matchValue(d.basedOn))) return false;
  if (actions !== null && (!matchString('actions') || !matchTuples(actions))) return false;
  if (cancels !== null && (!matchString('cancels') || !matchTuples(cancels))) return false;
  if (done !== null && (!matchString('done') || !matchTuples(done))) return false;
  if (errors !== null && (!matchString('errors') || !matchArray(errors))) return false;
  return true;
}

/** An array header as msgpackr writes it for `length` items. */
function matchArrayHeader(length: number): boolean {
  const b = src;
  if (length < 0x10) return b[pos++] === (0x90 | length);
  if (length < 0x10000) {
    if (b[pos] !== 0xdc || b[pos + 1] !== length >> 8 || b[pos + 2] !== (length & 0xff)) return false;
    pos += 3;
    return true;
  }
  if (b[pos] !== 0xdd || pos + 5 > b.length || view.getUint32(pos + 1) !== length) return false;
  pos += 5;
  return true;
}

/** A list of decision tuples (`[id, seq, name, args]`, `[id, seq]`, `[id, status]`): the common forms inline. */
function matchTuples(list: ReadonlyArray<readonly unknown[]>): boolean {
  const n = list.length;
  if (!matchArrayHeader(n)) return false;
  for (let i = 0; i < n; i++) {
    const t = list[i]!;
    // Anything but a plain array (msgpackr writes only those as arrays) goes the general way.
    if ((t as { constructor?: unknown }).constructor !== Array) return matchValueAt(list, i, n);
    const width = t.length;
    if (width >= 0x10 || src[pos++] !== (0x90 | width)) return false;
    for (let k = 0; k < width; k++) {
      const v = t[k];
      // Ids and seqs below 128 are one byte: the most common value of a decisions frame.
      if (typeof v === 'number' && v >= 0 && v < 0x80 && (v | 0) === v) {
        if (src[pos++] !== v) return false;
      } else if (!matchValue(v)) return false;
    }
  }
  return true;
}

/** The rest of a list from item `from` on, item by item (a list whose items are not all tuples). */
function matchValueAt(list: readonly unknown[], from: number, n: number): boolean {
  for (let i = from; i < n; i++) if (!matchValue(list[i])) return false;
  return true;
}

function matchArray(list: readonly unknown[]): boolean {
  const n = list.length;
  if (!matchArrayHeader(n)) return false;
  for (let i = 0; i < n; i++) if (!matchValue(list[i])) return false;
  return true;
}

function matchValue(value: unknown): boolean {
  const b = src;
  switch (typeof value) {
    case 'number': {
      if (value >>> 0 === value) {
        // Positive integers of 32 bits or less (useRecords: false, so up to 0x7f as a fixint).
        if (value < 0x80) return b[pos++] === value;
        if (value < 0x100) {
          if (b[pos] !== 0xcc || b[pos + 1] !== value) return false;
          pos += 2;
          return true;
        }
        if (value < 0x10000) {
          if (b[pos] !== 0xcd || b[pos + 1] !== value >> 8 || b[pos + 2] !== (value & 0xff)) return false;
          pos += 3;
          return true;
        }
        if (b[pos] !== 0xce || pos + 5 > b.length || view.getUint32(pos + 1) !== value) return false;
        pos += 5;
        return true;
      }
      if (value >> 0 === value) {
        if (value >= -0x20) return b[pos++] === 0x100 + value;
        if (value >= -0x80) {
          if (b[pos] !== 0xd0 || b[pos + 1] !== value + 0x100) return false;
          pos += 2;
          return true;
        }
        if (value >= -0x8000) {
          if (b[pos] !== 0xd1 || pos + 3 > b.length || view.getInt16(pos + 1) !== value) return false;
          pos += 3;
          return true;
        }
        if (b[pos] !== 0xd2 || pos + 5 > b.length || view.getInt32(pos + 1) !== value) return false;
        pos += 5;
        return true;
      }
      // Wider integers: the protocol's wireInt makes ids and seqs bigints (int64); leave it to the encoder.
      if (Number.isInteger(value)) return false;
      // Other numbers are float64. Equal doubles have equal bits except 0 / -0 (integers, above) and NaN
      // (never equal): a NaN is left to the encoder.
      if (b[pos] !== 0xcb || pos + 9 > b.length || view.getFloat64(pos + 1) !== value) return false;
      pos += 9;
      return true;
    }
    case 'string':
      return matchString(value);
    case 'boolean':
      return b[pos++] === (value ? 0xc3 : 0xc2);
    case 'undefined':
      return b[pos++] === 0xc0;
    case 'object': {
      if (value === null) return b[pos++] === 0xc0;
      const ctor = (value as object).constructor;
      if (ctor === Array) return matchArray(value as unknown[]);
      if (ctor === Object) return matchObject(value as Record<string, unknown>);
      return false;
    }
    default:
      return false;
  }
}

// A plain object as msgpackr writes it with variableMapSize: its own enumerable keys in Object.keys order.
// for-in gives that order without allocating the keys array; inherited enumerable keys (nothing on
// Object.prototype has any unless a library added one) are refused, leaving the object to the encoder.
function matchObject(object: Record<string, unknown>): boolean {
  let n = 0;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) return false;
    n++;
  }
  const b = src;
  if (n < 0x10) {
    if (b[pos++] !== (0x80 | n)) return false;
  } else if (n < 0x10000) {
    if (b[pos] !== 0xde || b[pos + 1] !== n >> 8 || b[pos + 2] !== (n & 0xff)) return false;
    pos += 3;
  } else return false;
  for (const key in object) if (!matchString(key) || !matchValue(object[key])) return false;
  return true;
}

/**
 * An ASCII string as msgpackr writes it (fixstr, str8, str16 by byte length). Strings with other
 * characters are left to the encoder (its UTF-8 paths differ on lone surrogates).
 */
function matchString(s: string): boolean {
  const b = src;
  const n = s.length;
  let p = pos;
  if (n < 0x20) {
    if (b[p] !== (0xa0 | n)) return false;
    p += 1;
  } else if (n < 0x100) {
    if (b[p] !== 0xd9 || b[p + 1] !== n) return false;
    p += 2;
  } else if (n < 0x10000) {
    if (b[p] !== 0xda || b[p + 1] !== n >> 8 || b[p + 2] !== (n & 0xff)) return false;
    p += 3;
  } else return false;
  if (p + n > b.length) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    // A non-ASCII character never equals a single byte below 0x80; above, it is left to the encoder.
    if (c >= 0x80 || b[p + i] !== c) return false;
  }
  pos = p + n;
  return true;
}
