// Builders for the messages the server sends: each leaves out absent fields and empty lists, and
// writes integers wider than 32 bits as MessagePack int64 so typed clients read them as integers.

import type { ErrorCode } from './codes.js';
import { decodeTrusted, encode } from './codec.js';
import { PROTOCOL_VERSION } from './limits.js';
import type {
  ActionDecision,
  AgentError,
  AgentId,
  CancelDecision,
  DoneDecision,
  EntryError,
  Mode,
  SpawnWarning,
  TreeReads,
  WelcomeLimits,
} from './messages.js';

/** True for an integer that msgpackr would write as float64 (outside int32/uint32). */
function isWide(value: unknown): value is number {
  return typeof value === 'number' && (value > 0xffffffff || value < -0x80000000) && Number.isInteger(value);
}

/**
 * The form in which an integer goes on the wire: numbers that fit 32 bits unchanged, wider
 * integers as a bigint (msgpackr writes bigints as int64, numbers as float64), anything else
 * unchanged. C#, Go and C++ decoders then read ids, ticks and seqs as integers.
 */
export function wireInt<T>(value: T): T | bigint {
  return isWide(value) ? BigInt(value) : value;
}

/**
 * Any value ready for the wire: the same value unless it holds a wide integer somewhere (in arrays
 * and plain objects, at any depth); then a copy with those integers as bigints. For replies built
 * outside the hot path (HTTP bodies); the per-tick builders below check only where ids can be.
 */
export function wireDeep(value: unknown): unknown {
  if (isWide(value)) return BigInt(value);
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = wireDeep(value[i]);
      if (v !== value[i]) (copy ??= value.slice())[i] = v;
    }
    return copy ?? value;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value)) {
    const w = wireDeep(v);
    if (w !== v) (copy ??= { ...(value as Record<string, unknown>) })[k] = w;
  }
  return copy ?? value;
}

/** `ids` ready for the wire: the same array unless one of them is a wide integer. */
function wireIds(ids: readonly AgentId[]): readonly (AgentId | bigint)[] {
  for (let i = 0; i < ids.length; i++) {
    if (isWide(ids[i])) return ids.map(wireInt);
  }
  return ids;
}

/**
 * Tuples ready for the wire: the same array unless a tuple's id (or seq, the second element,
 * when `withSeq`) is a wide integer; then a copy with those tuples copied. Decisions are built
 * once per session per tick, so the common case is one pass and no allocation.
 */
export function wireTuples<R extends readonly unknown[]>(rows: readonly R[], withSeq: boolean): readonly unknown[] {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (isWide(row[0]) || (withSeq && isWide(row[1]))) {
      return rows.map((r) => {
        const copy: unknown[] = r.slice();
        copy[0] = wireInt(copy[0]);
        if (withSeq) copy[1] = wireInt(copy[1]);
        return copy;
      });
    }
  }
  return rows;
}

function wireEntryErrors(errors: readonly EntryError[]): readonly unknown[] {
  for (let i = 0; i < errors.length; i++) {
    if (isWide(errors[i]!.id)) {
      return errors.map((e) => (e.id === undefined ? e : { id: wireInt(e.id), code: e.code, message: e.message }));
    }
  }
  return errors;
}

/** What {@link encodeWelcome} needs; `v` is always {@link PROTOCOL_VERSION}. */
export interface WelcomeFields {
  readonly session: string;
  readonly resume: string;
  readonly mode: Mode;
  /** Ticks per second of fixed mode (not used in lockstep mode). */
  readonly hz: number;
  readonly trees: readonly string[];
  readonly limits: WelcomeLimits;
  /** Per tree, the observation fields it reads (left out when absent). */
  readonly reads?: Readonly<Record<string, TreeReads>> | undefined;
  /** The recording's id when the session is recorded. */
  readonly recording?: string | undefined;
  /** On a resume: the last tick the session has run (a lockstep client re-sends what came after it). */
  readonly tick?: number | undefined;
}

/** Encodes `welcome` (answer to `hello`), with `re` when the hello had an `id`. */
export function encodeWelcome(fields: WelcomeFields, re?: number): Buffer {
  const msg: Record<string, unknown> = {
    t: 'welcome',
    v: PROTOCOL_VERSION,
    session: fields.session,
    resume: fields.resume,
    mode: fields.mode,
    hz: fields.hz,
    trees: fields.trees,
    limits: fields.limits,
  };
  if (fields.reads !== undefined) msg.reads = fields.reads;
  if (fields.recording !== undefined) msg.recording = fields.recording;
  if (fields.tick !== undefined) msg.tick = fields.tick;
  if (re !== undefined) msg.re = wireInt(re);
  return encode(msg);
}

/** Encodes `spawned`: the ids created and, when there are any, the errors for the rest and the warnings. */
export function encodeSpawned(ids: readonly AgentId[], errors: readonly EntryError[], re?: number, warnings: readonly SpawnWarning[] = []): Buffer {
  return encodeIdsReply('spawned', ids, errors, re, warnings);
}

/** Encodes `despawned`: the ids removed and, when there are any, the errors for the rest. */
export function encodeDespawned(ids: readonly AgentId[], errors: readonly EntryError[] = [], re?: number): Buffer {
  return encodeIdsReply('despawned', ids, errors, re);
}

function encodeIdsReply(
  t: 'spawned' | 'despawned',
  ids: readonly AgentId[],
  errors: readonly EntryError[],
  re: number | undefined,
  warnings: readonly SpawnWarning[] = [],
): Buffer {
  const msg: Record<string, unknown> = { t, ids: wireIds(ids) };
  if (errors.length > 0) msg.errors = wireEntryErrors(errors);
  if (warnings.length > 0) msg.warnings = warnings;
  if (re !== undefined) msg.re = wireInt(re);
  return encode(msg);
}

/**
 * A list of tuples kept as the wire carries them: their MessagePack encodings back to back, without the list's
 * header. Built where the tuples are made (a pool worker's sink), spliced into frames as they are, decoded only
 * where a reader wants the values.
 */
export class EncodedTuples<T> {
  static readonly EMPTY = new EncodedTuples<never>(0, new Uint8Array(0));

  constructor(
    readonly count: number,
    readonly bytes: Uint8Array,
  ) {}

  /** The tuples as a client of the wire reads them (maps as plain objects, 64-bit integers as numbers). */
  decode(): T[] {
    if (this.count === 0) return [];
    // A Buffer, as a frame read from a socket is: binary values then decode as Buffers there and here alike.
    return decodeTrusted(Buffer.concat([arrayHeader(this.count), this.bytes])) as T[];
  }
}

/** A MessagePack array header for `n` items, as msgpackr writes it (from Node's shared pool: no ArrayBuffer of its own). */
export function arrayHeader(n: number): Buffer {
  const b = Buffer.allocUnsafe(n < 16 ? 1 : n < 0x10000 ? 3 : 5);
  writeArrayHeader(b, n);
  return b;
}

/**
 * The MessagePack map `{ ...head, ...more }` where `more` is `extra` entries already encoded (keys and values back
 * to back in `pieces`): head encoded, the rest copied after it, the head's fixmap header widened to every entry
 * (at most 15 in all), in `size` bytes from `alloc` (by default carved from a shared slab). Frames of spliced lists
 * are built so: encodeDecisions, HeldDecisions, the SDK's snapshots.
 */
export function joinMap(head: Record<string, unknown>, extra: number, pieces: readonly Uint8Array[], alloc: (size: number) => Buffer = carve): Buffer {
  const start = smallMap(head) ?? encode(head);
  let size = start.length;
  for (const p of pieces) size += p.length;
  const out = alloc(size);
  out.set(start, 0);
  let at = start.length;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  out[0] = 0x80 | (Object.keys(head).length + extra);
  return out;
}

const mapScratch = new Uint8Array(1024);

/**
 * `map` as encode(map) writes it, for at most 15 entries whose keys and string values are ASCII of fewer than 32
 * characters and whose numbers are integers within 32 bits; null for anything else (the caller encodes it). A
 * `decisions` frame's head (`t`, `tick`, `basedOn`) is written so once a frame, without the codec's set-up per call
 * (1 % of the main thread at 50,000 agents: docs/capacity.md, *Round seventeen*). A view of a buffer the next call
 * overwrites.
 */
export function smallMap(map: Record<string, unknown>): Uint8Array | null {
  const keys = Object.keys(map);
  if (keys.length > 15) return null;
  const b = mapScratch;
  b[0] = 0x80 | keys.length;
  let at = 1;
  for (const key of keys) {
    at = writeShortAscii(b, at, key);
    if (at < 0) return null;
    const v = map[key];
    if (typeof v === 'string') at = writeShortAscii(b, at, v);
    else if (typeof v === 'number') at = writeInt(b, at, v);
    else return null;
    if (at < 0) return null;
  }
  return b.subarray(0, at);
}

/** `s` as a fixstr at `at` when it is ASCII of fewer than 32 characters; where it ends, or -1. */
function writeShortAscii(target: Uint8Array, at: number, s: string): number {
  const n = s.length;
  if (n >= 32) return -1;
  target[at] = 0xa0 | n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) return -1;
    target[at + 1 + i] = c;
  }
  return at + 1 + n;
}

const actionTuple: [unknown, unknown, string, unknown] = [0, 0, '', null];

/**
 * One `[id, seq, action, args]` entry of `decisions.actions` as encodeDecisions writes it, for an
 * EncodedTuples list. A view of the codec's shared output: copy it before the next encode.
 * @throws what msgpackr throws for args it cannot write (a cycle: only plugin code can make one).
 */
export function encodeActionTuple(id: AgentId, seq: number, action: string, args: unknown): Buffer {
  const t = actionTuple;
  t[0] = wireInt(id);
  t[1] = wireInt(seq);
  t[2] = action;
  t[3] = args;
  try {
    return encode(t);
  } finally {
    t[3] = null;
  }
}

/**
 * Writes the integer `v` at `at` as msgpackr writes it (this codec's options), for an integer within 32 bits (signed
 * or unsigned); returns where it ends, or -1 for any other number (the caller encodes the ordinary way).
 */
function writeInt(target: Uint8Array, at: number, v: number): number {
  if (v >>> 0 === v) {
    if (v < 0x80) {
      target[at] = v;
      return at + 1;
    }
    if (v < 0x100) {
      target[at] = 0xcc;
      target[at + 1] = v;
      return at + 2;
    }
    if (v < 0x10000) {
      target[at] = 0xcd;
      target[at + 1] = v >> 8;
      target[at + 2] = v & 0xff;
      return at + 3;
    }
    target[at] = 0xce;
    target[at + 1] = v >>> 24;
    target[at + 2] = (v >> 16) & 0xff;
    target[at + 3] = (v >> 8) & 0xff;
    target[at + 4] = v & 0xff;
    return at + 5;
  }
  if (v >> 0 === v) {
    if (v >= -0x20) {
      target[at] = 0x100 + v;
      return at + 1;
    }
    if (v >= -0x80) {
      target[at] = 0xd0;
      target[at + 1] = v + 0x100;
      return at + 2;
    }
    if (v >= -0x8000) {
      target[at] = 0xd1;
      target[at + 1] = (v >> 8) & 0xff;
      target[at + 2] = v & 0xff;
      return at + 3;
    }
    target[at] = 0xd2;
    target[at + 1] = (v >> 24) & 0xff;
    target[at + 2] = (v >> 16) & 0xff;
    target[at + 3] = (v >> 8) & 0xff;
    target[at + 4] = v & 0xff;
    return at + 5;
  }
  return -1;
}

/** Most bytes writeCancelTuple and writeDoneTuple write for an integer id: the array's header, a 5-byte id and a status (8 bytes). */
export const SMALL_TUPLE_BYTES = 14;

/**
 * Writes the `[id, seq]` entry of `decisions.cancels` at `at`, as encodeCancelTuple would, writing no byte at or past
 * `limit`, where `id` is an integer within 32 bits or a string of fewer than 64 UTF-16 units and `seq` an integer
 * within 32 bits; returns where it ends, or -1 where it does not apply (wide ids and seqs, long strings, no room:
 * encodeCancelTuple then). A worker's sink writes most cancels so, without the codec.
 */
export function writeCancelTuple(target: Uint8Array, at: number, limit: number, id: AgentId, seq: number): number {
  const afterId = writePairHead(target, at, limit, id);
  return afterId < 0 || afterId + 5 > limit ? -1 : writeInt(target, afterId, seq);
}

const SUCCESS = Buffer.from(encode('success'));
const FAILURE = Buffer.from(encode('failure'));

/** Writes the `[id, status]` entry of `decisions.done` at `at`, as writeCancelTuple writes a cancel. */
export function writeDoneTuple(target: Uint8Array, at: number, limit: number, id: AgentId, status: 'success' | 'failure'): number {
  const afterId = writePairHead(target, at, limit, id);
  if (afterId < 0 || afterId + SUCCESS.length > limit) return -1;
  const s = status === 'success' ? SUCCESS : FAILURE;
  for (let i = 0; i < s.length; i++) target[afterId + i] = s[i]!;
  return afterId + s.length;
}

/** A two-element array's header and its first element, the id; -1 for an id writeId does not write. */
function writePairHead(target: Uint8Array, at: number, limit: number, id: AgentId): number {
  if (at >= limit) return -1;
  target[at] = 0x92;
  return writeId(target, at + 1, limit, id);
}

/** An agent id at `at`: an integer within 32 bits (5 bytes at most) or a string writeString writes; else -1. */
function writeId(target: Uint8Array, at: number, limit: number, id: AgentId): number {
  if (typeof id !== 'number') return writeString(target, at, limit, id);
  return at + 5 > limit ? -1 : writeInt(target, at, id);
}

/**
 * Writes the `[id, seq, action, args]` entry of `decisions.actions` at `at`, as encodeActionTuple would, writing no
 * byte at or past `limit`; returns where it ends, or -1 where it does not apply: then encodeActionTuple, which writes
 * any value. It writes what trees' args are made of: 32-bit integer ids and seqs, string ids; in args, numbers,
 * strings of fewer than 64 UTF-16 units, booleans, nil, and arrays and plain objects of fewer than 16 entries, at most
 * MAX_INLINE_DEPTH deep. A worker's sink writes most actions so, without the codec's per-call set-up (about half of
 * an action's cost). The bytes are exactly msgpackr's for this codec's options (test/protocol/encoded-actions.test.ts
 * compares them on generated values).
 */
export function writeActionTuple(target: Uint8Array, at: number, limit: number, id: AgentId, seq: number, action: string, args: unknown): number {
  if (at + 11 > limit) return -1;
  target[at] = 0x94;
  let p = writeId(target, at + 1, limit, id);
  if (p < 0) return -1;
  p = writeInt(target, p, seq);
  if (p < 0) return -1;
  p = writeString(target, p, limit, action);
  return p < 0 ? -1 : writeValue(target, p, limit, args, 0);
}

/** The output of encodeRows, kept and grown: a game server's snapshot rows are about the same size tick after tick. */
let rowsOut: Uint8Array = new Uint8Array(64 * 1024);

/**
 * A list of rows (a snapshot's `agents`: positional rows or maps) as encode(rows) writes it, byte for byte: each row
 * written by writeValue where it can (numbers, strings of fewer than 64 UTF-16 units, booleans, nil, and arrays and
 * plain objects of fewer than 16 entries, as writeActionTuple writes args), any other row by the codec and copied in.
 * A client's snapshots are mostly their rows, and msgpackr's general path was most of a game server's cost of
 * sending them (docs/capacity.md, "Round thirty"). A view of a buffer the next call overwrites.
 */
export function encodeRows(rows: readonly unknown[]): Uint8Array {
  const n = rows.length;
  let out = rowsOut;
  let at = writeArrayHeader(out, n);
  for (let i = 0; i < n; i++) {
    // Room for any row writeValue writes is not known ahead: grown while rows fit, the codec for one that does not.
    if (out.length - at < 4096) out = rowsOut = grown(out, at, out.length * 2);
    const row = rows[i];
    let end = Array.isArray(row) ? writeRow(out, at, row) : writeValue(out, at, out.length, row, 0);
    if (end < 0) {
      const bytes = encode(row);
      if (out.length - at < bytes.length) out = rowsOut = grown(out, at, 2 * (at + bytes.length));
      out.set(bytes, at);
      end = at + bytes.length;
    }
    at = end;
  }
  return out.subarray(0, at);
}

/**
 * A number at `at` as encodeRows writes a row's number (a 32-bit integer in its smallest form, any other as float64);
 * where it ends. `target` needs 9 bytes from `at`. For a writer that puts rows straight into bytes (the SDK's RowEncoder).
 */
export function writeRowNumber(target: Uint8Array, at: number, v: number): number {
  const end = writeInt(target, at, v);
  return end >= 0 ? end : writeFloat(target, at, v);
}

/**
 * Any row value at `at` as encodeRows writes it, writing no byte at or past `limit`; where it ends, or -1 where this
 * does not write it (no room, or a value only the codec writes: the caller encodes it so).
 */
export function writeRowValue(target: Uint8Array, at: number, limit: number, v: unknown): number {
  return writeValue(target, at, limit, v, 1);
}

/**
 * One row at `at` as writeValue writes it, its numbers, booleans and nils written in this loop (most of a row's
 * values; a call to writeValue for each cost as much as the codec), anything else by writeValue; where it ends, or -1.
 */
function writeRow(out: Uint8Array, at: number, row: readonly unknown[]): number {
  const n = row.length;
  // Room for n values of 9 bytes at most each (those written here) and the header; writeValue checks its own.
  if (n >= 16 || out.length - at < 1 + n * 9) return writeValue(out, at, out.length, row, 0);
  out[at] = 0x90 | n;
  let p = at + 1;
  for (let k = 0; k < n && p >= 0; k++) {
    const v = row[k];
    if (typeof v === 'number') {
      const end = writeInt(out, p, v);
      p = end >= 0 ? end : writeFloat(out, p, v);
    } else if (v === null || v === undefined) {
      out[p++] = 0xc0;
    } else if (v === true) {
      out[p++] = 0xc3;
    } else if (v === false) {
      out[p++] = 0xc2;
    } else {
      p = writeValue(out, p, out.length, v, 1);
    }
  }
  return p;
}

/** `out`'s first `used` bytes in a new buffer of `size` bytes. */
function grown(out: Uint8Array, used: number, size: number): Uint8Array {
  const bigger = new Uint8Array(size);
  bigger.set(out.subarray(0, used));
  return bigger;
}

/** A MessagePack array header for `n` items at the start of `target`, as msgpackr writes it; where it ends. */
function writeArrayHeader(target: Uint8Array, n: number): number {
  if (n < 16) {
    target[0] = 0x90 | n;
    return 1;
  }
  if (n < 0x10000) {
    target[0] = 0xdc;
    target[1] = n >> 8;
    target[2] = n & 0xff;
    return 3;
  }
  target[0] = 0xdd;
  target[1] = n >>> 24;
  target[2] = (n >> 16) & 0xff;
  target[3] = (n >> 8) & 0xff;
  target[4] = n & 0xff;
  return 5;
}

/** Nesting writeActionTuple writes itself; deeper args go through the codec. */
const MAX_INLINE_DEPTH = 4;

/** `v` at `at` as msgpackr writes it, or -1 (see writeActionTuple). */
function writeValue(target: Uint8Array, at: number, limit: number, v: unknown, depth: number): number {
  switch (typeof v) {
    case 'number': {
      if (at + 9 > limit) return -1;
      const end = writeInt(target, at, v);
      return end >= 0 ? end : writeFloat(target, at, v);
    }
    case 'string':
      return writeString(target, at, limit, v);
    case 'boolean':
      if (at >= limit) return -1;
      target[at] = v ? 0xc3 : 0xc2;
      return at + 1;
    case 'undefined':
      // encodeUndefinedAsNil
      if (at >= limit) return -1;
      target[at] = 0xc0;
      return at + 1;
    case 'object': {
      if (at >= limit) return -1;
      if (v === null) {
        target[at] = 0xc0;
        return at + 1;
      }
      if (depth >= MAX_INLINE_DEPTH) return -1;
      const constructor = (v as { constructor?: unknown }).constructor;
      if (constructor === Array) {
        const list = v as readonly unknown[];
        const n = list.length;
        if (n >= 16) return -1;
        target[at] = 0x90 | n;
        let p = at + 1;
        for (let i = 0; i < n && p >= 0; i++) p = writeValue(target, p, limit, list[i], depth + 1);
        return p;
      }
      if (constructor === Object) {
        const obj = v as Record<string, unknown>;
        const keys = Object.keys(obj);
        const n = keys.length;
        if (n >= 16) return -1;
        target[at] = 0x80 | n;
        let p = at + 1;
        for (let i = 0; i < n && p >= 0; i++) {
          const key = keys[i]!;
          p = writeString(target, p, limit, key);
          if (p >= 0) p = writeValue(target, p, limit, obj[key], depth + 1);
        }
        return p;
      }
      return -1;
    }
    default:
      return -1;
  }
}

/** A number that is not a 32-bit integer: float64, big-endian, through a DataView of `target` kept while it is the same. */
function writeFloat(target: Uint8Array, at: number, v: number): number {
  target[at] = 0xcb;
  if (target !== viewed) {
    viewed = target;
    view = new DataView(target.buffer, target.byteOffset, target.byteLength);
  }
  view.setFloat64(at + 1, v);
  return at + 9;
}
let viewed: Uint8Array = new Uint8Array(0);
let view = new DataView(viewed.buffer);

/**
 * A string of fewer than 64 UTF-16 units as msgpackr writes one: its own UTF-8 loop (which writes a lone surrogate as
 * three bytes, as msgpackr does below 64 units), a fixstr or str8 header for the byte length; -1 for longer strings.
 */
function writeString(target: Uint8Array, at: number, limit: number, s: string): number {
  const n = s.length;
  if (n >= 64 || at + 2 + n * 3 > limit) return -1;
  let p = at + 1;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      target[p++] = c;
    } else if (c < 0x800) {
      target[p++] = (c >> 6) | 0xc0;
      target[p++] = (c & 0x3f) | 0x80;
    } else if ((c & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c & 0x03ff) << 10) + (s.charCodeAt(i + 1) & 0x03ff);
      i++;
      target[p++] = (c >> 18) | 0xf0;
      target[p++] = ((c >> 12) & 0x3f) | 0x80;
      target[p++] = ((c >> 6) & 0x3f) | 0x80;
      target[p++] = (c & 0x3f) | 0x80;
    } else {
      target[p++] = (c >> 12) | 0xe0;
      target[p++] = ((c >> 6) & 0x3f) | 0x80;
      target[p++] = (c & 0x3f) | 0x80;
    }
  }
  const length = p - at - 1;
  if (length < 0x20) {
    target[at] = 0xa0 | length;
    return p;
  }
  // More than 31 bytes: str8 (at most 189 bytes here), the bytes one further on.
  target.copyWithin(at + 2, at + 1, p);
  target[at] = 0xd9;
  target[at + 1] = length;
  return p + 1;
}

const cancelTuple: [unknown, unknown] = [0, 0];

/** One `[id, seq]` entry of `decisions.cancels` as encodeDecisions writes it (a view, as encodeActionTuple's). */
export function encodeCancelTuple(id: AgentId, seq: number): Buffer {
  cancelTuple[0] = wireInt(id);
  cancelTuple[1] = wireInt(seq);
  return encode(cancelTuple);
}

const doneTuple: [unknown, string] = [0, ''];

/** One `[id, status]` entry of `decisions.done` as encodeDecisions writes it (a view, as encodeActionTuple's). */
export function encodeDoneTuple(id: AgentId, status: 'success' | 'failure'): Buffer {
  doneTuple[0] = wireInt(id);
  doneTuple[1] = status;
  return encode(doneTuple);
}

/** What one tick decided, as the service collects it. Lists may be empty or absent. */
export interface DecisionsFields {
  readonly tick: number;
  /** Latest snapshot tick applied; leave undefined before the first snapshot. */
  readonly basedOn?: number | undefined;
  readonly actions?: readonly ActionDecision[] | undefined;
  /**
   * The same actions already encoded (a pool's decisions carry them so): writers splice these bytes and leave
   * `actions` unread. Readers of the values read `actions`, or decisionActions(…) where only this may be set.
   */
  readonly encodedActions?: EncodedTuples<ActionDecision> | undefined;
  readonly cancels?: readonly CancelDecision[] | undefined;
  /** The cancels already encoded, as `encodedActions`. */
  readonly encodedCancels?: EncodedTuples<CancelDecision> | undefined;
  readonly done?: readonly DoneDecision[] | undefined;
  /** The done entries already encoded, as `encodedActions`. */
  readonly encodedDone?: EncodedTuples<DoneDecision> | undefined;
  readonly errors?: readonly AgentError[] | undefined;
}

/**
 * Encodes `decisions`, leaving out empty lists and an undefined `basedOn`. Allocates one small
 * envelope object (plus copies only for tuples holding integers wider than 32 bits); the lists
 * themselves are written as they are and may be reused by the caller once this returns. Lists given
 * encoded are spliced in as they are: the frame is byte for byte the one their values would make.
 */
export function encodeDecisions(d: DecisionsFields): Buffer {
  const msg: Record<string, unknown> = { t: 'decisions', tick: wireInt(d.tick) };
  if (d.basedOn !== undefined) msg.basedOn = wireInt(d.basedOn);
  const lists = frameLists(d);
  if (lists.every((l) => l.encoded === undefined)) {
    for (const l of lists) if (l.values !== undefined && l.values.length > 0) msg[l.name] = wireTuples(l.values, l.withSeq);
    return encode(msg);
  }
  // The same bytes, the lists spliced in after the head in the same order: each key, then its list.
  const pieces: Uint8Array[] = [];
  let entries = 0;
  for (const l of lists) {
    if (l.encoded !== undefined) {
      if (l.encoded.count === 0) continue;
      pieces.push(l.key, arrayHeader(l.encoded.count), l.encoded.bytes);
    } else {
      if (l.values === undefined || l.values.length === 0) continue;
      // A view of the codec's output that later encodes (joinMap's head) leave alone.
      pieces.push(l.key, encode(wireTuples(l.values, l.withSeq)));
    }
    entries++;
  }
  return joinMap(msg, entries, pieces);
}

/** One list of a `decisions` frame as a writer sees it: given encoded (spliced as it is) or as values. */
export interface FrameList {
  readonly name: 'actions' | 'cancels' | 'done' | 'errors';
  /** The key, encoded. */
  readonly key: Buffer;
  readonly encoded: EncodedTuples<unknown> | undefined;
  readonly values: readonly (readonly unknown[])[] | undefined;
  /** The tuples' second element is a seq (written as int64 when wide, as the id is). */
  readonly withSeq: boolean;
}

/** The lists' keys, encoded, in the frame's order. */
export const LIST_KEYS: readonly [Buffer, Buffer, Buffer, Buffer] = [keyBytes('actions'), keyBytes('cancels'), keyBytes('done'), keyBytes('errors')];

function keyBytes(name: string): Buffer {
  return Buffer.from(encode(name));
}

/** The lists of `d` in the order the frame has them (encodeDecisions, HeldDecisions). */
export function frameLists(d: DecisionsFields): readonly [FrameList, FrameList, FrameList, FrameList] {
  return [
    { name: 'actions', key: LIST_KEYS[0], encoded: d.encodedActions, values: d.actions, withSeq: true },
    { name: 'cancels', key: LIST_KEYS[1], encoded: d.encodedCancels, values: d.cancels, withSeq: true },
    { name: 'done', key: LIST_KEYS[2], encoded: d.encodedDone, values: d.done, withSeq: false },
    { name: 'errors', key: LIST_KEYS[3], encoded: undefined, values: d.errors, withSeq: false },
  ];
}

const SLAB_BYTES = 256 * 1024;
let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let slabUsed = 0;

/**
 * `size` bytes of output space that nothing else writes, carved from a shared slab as msgpackr carves its output:
 * one ArrayBuffer per 256 KB of frames, not one per frame. Each ArrayBuffer costs the collector: one per frame and per
 * merged list tripled the main thread's major collections at 50,000 agents (docs/capacity.md, "Round eight").
 */
export function carve(size: number): Buffer {
  if (size > SLAB_BYTES / 4) return Buffer.allocUnsafeSlow(size);
  if (slabUsed + size > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    slabUsed = 0;
  }
  const out = slab.subarray(slabUsed, slabUsed + size);
  slabUsed = (slabUsed + size + 7) & ~7;
  return out;
}

/** The actions of `d` as values, whichever form they came in. */
export function decisionActions(d: DecisionsFields): readonly ActionDecision[] {
  return d.encodedActions?.decode() ?? d.actions ?? [];
}

/** The cancels of `d` as values, whichever form they came in. */
export function decisionCancels(d: DecisionsFields): readonly CancelDecision[] {
  return d.encodedCancels?.decode() ?? d.cancels ?? [];
}

/** The done entries of `d` as values, whichever form they came in. */
export function decisionDone(d: DecisionsFields): readonly DoneDecision[] {
  return d.encodedDone?.decode() ?? d.done ?? [];
}

/** How many actions `d` holds, whichever form they came in. */
export function actionCount(d: DecisionsFields): number {
  return d.encodedActions?.count ?? d.actions?.length ?? 0;
}

/** True when a tick's decisions hold something (fixed mode sends no frame for a tick without). */
export function hasContent(d: DecisionsFields): boolean {
  return actionCount(d) + cancelCount(d) + doneCount(d) + (d.errors?.length ?? 0) > 0;
}

/** How many cancels `d` holds, whichever form they came in. */
export function cancelCount(d: DecisionsFields): number {
  return d.encodedCancels?.count ?? d.cancels?.length ?? 0;
}

/** How many done entries `d` holds, whichever form they came in. */
export function doneCount(d: DecisionsFields): number {
  return d.encodedDone?.count ?? d.done?.length ?? 0;
}

/** Encodes `error` for a message refused as a whole, with `re` when it had an `id`. */
export function encodeError(code: ErrorCode, message: string, re?: number): Buffer {
  const msg: Record<string, unknown> = { t: 'error', code, message };
  if (re !== undefined) msg.re = wireInt(re);
  return encode(msg);
}

/**
 * Encodes `error` for one refused entry of a `bb`, `result` or `snapshot` list whose other
 * entries were applied: `entry: true`, plus `agent` when the entry's id was readable. Clients
 * use `entry` to tell it from a refusal of the whole message (which, for a lockstep snapshot,
 * means no decisions will come).
 */
export function encodeEntryError(error: EntryError, re?: number): Buffer {
  const msg: Record<string, unknown> = { t: 'error', code: error.code, message: error.message, entry: true };
  if (error.id !== undefined) msg.agent = wireInt(error.id);
  if (re !== undefined) msg.re = wireInt(re);
  return encode(msg);
}

/** Encodes `goodbye`, sent just before the server closes the socket. */
export function encodeGoodbye(reason: string, retryAfterMs?: number): Buffer {
  const msg: Record<string, unknown> = { t: 'goodbye', reason };
  if (retryAfterMs !== undefined) msg.retryAfterMs = wireInt(retryAfterMs);
  return encode(msg);
}

/** Encodes `pong` with the ping's `n` (and `re` when the ping had an `id`). */
export function encodePong(n: number | undefined, re?: number): Buffer {
  const msg: Record<string, unknown> = { t: 'pong' };
  if (n !== undefined) msg.n = wireInt(n);
  if (re !== undefined) msg.re = wireInt(re);
  return encode(msg);
}
