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
  if (n < 16) {
    const b = Buffer.allocUnsafe(1);
    b[0] = 0x90 | n;
    return b;
  }
  const b = Buffer.allocUnsafe(n < 0x10000 ? 3 : 5);
  if (n < 0x10000) {
    b[0] = 0xdc;
    b.writeUInt16BE(n, 1);
  } else {
    b[0] = 0xdd;
    b.writeUInt32BE(n, 1);
  }
  return b;
}

/**
 * The MessagePack map `{ ...head, ...more }` where `more` is `extra` entries already encoded (keys and values back
 * to back in `pieces`): head encoded, the rest copied after it, the head's fixmap header widened to every entry
 * (at most 15 in all). Frames of spliced lists are built so: encodeDecisions, HeldDecisions.
 */
export function joinMap(head: Record<string, unknown>, extra: number, pieces: readonly Uint8Array[]): Buffer {
  const start = encode(head);
  let size = start.length;
  for (const p of pieces) size += p.length;
  const out = carve(size);
  out.set(start, 0);
  let at = start.length;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  out[0] = 0x80 | (Object.keys(head).length + extra);
  return out;
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
  readonly done?: readonly DoneDecision[] | undefined;
  readonly errors?: readonly AgentError[] | undefined;
}

/**
 * Encodes `decisions`, leaving out empty lists and an undefined `basedOn`. Allocates one small
 * envelope object (plus copies only for tuples holding integers wider than 32 bits); the lists
 * themselves are written as they are and may be reused by the caller once this returns.
 */
export function encodeDecisions(d: DecisionsFields): Buffer {
  const msg: Record<string, unknown> = { t: 'decisions', tick: wireInt(d.tick) };
  if (d.basedOn !== undefined) msg.basedOn = wireInt(d.basedOn);
  const encoded = d.encodedActions;
  if (encoded === undefined && d.actions !== undefined && d.actions.length > 0) msg.actions = wireTuples(d.actions, true);
  const rest: Record<string, unknown> = encoded === undefined ? msg : {};
  if (d.cancels !== undefined && d.cancels.length > 0) rest.cancels = wireTuples(d.cancels, true);
  if (d.done !== undefined && d.done.length > 0) rest.done = wireTuples(d.done, false);
  if (d.errors !== undefined && d.errors.length > 0) rest.errors = wireTuples(d.errors, false);
  if (encoded === undefined) return encode(msg);
  // The same bytes as above, with the actions spliced in: head, `actions` and its list, then the other lists.
  const pieces: Uint8Array[] = [];
  if (encoded.count > 0) pieces.push(ACTIONS_KEY, arrayHeader(encoded.count), encoded.bytes);
  const restCount = Object.keys(rest).length;
  // A fixmap of its own entries (at most 3): its header byte dropped, the entries follow the others.
  if (restCount > 0) pieces.push(encode(rest).subarray(1));
  return joinMap(msg, (encoded.count > 0 ? 1 : 0) + restCount, pieces);
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

const ACTIONS_KEY = Buffer.from(encode('actions'));

/** The actions of `d` as values, whichever form they came in. */
export function decisionActions(d: DecisionsFields): readonly ActionDecision[] {
  return d.encodedActions?.decode() ?? d.actions ?? [];
}

/** How many actions `d` holds, whichever form they came in. */
export function actionCount(d: DecisionsFields): number {
  return d.encodedActions?.count ?? d.actions?.length ?? 0;
}

/** True when a tick's decisions hold something (fixed mode sends no frame for a tick without). */
export function hasContent(d: DecisionsFields): boolean {
  return actionCount(d) + (d.cancels?.length ?? 0) + (d.done?.length ?? 0) + (d.errors?.length ?? 0) > 0;
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
