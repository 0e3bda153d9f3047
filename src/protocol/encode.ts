// Builders for the messages the server sends: each leaves out absent fields and empty lists, and
// writes integers wider than 32 bits as MessagePack int64 so typed clients read them as integers.

import type { ErrorCode } from './codes.js';
import { encode } from './codec.js';
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

/** What one tick decided, as the service collects it. Lists may be empty or absent. */
export interface DecisionsFields {
  readonly tick: number;
  /** Latest snapshot tick applied; leave undefined before the first snapshot. */
  readonly basedOn?: number | undefined;
  readonly actions?: readonly ActionDecision[] | undefined;
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
  if (d.actions !== undefined && d.actions.length > 0) msg.actions = wireTuples(d.actions, true);
  if (d.cancels !== undefined && d.cancels.length > 0) msg.cancels = wireTuples(d.cancels, true);
  if (d.done !== undefined && d.done.length > 0) msg.done = wireTuples(d.done, false);
  if (d.errors !== undefined && d.errors.length > 0) msg.errors = wireTuples(d.errors, false);
  return encode(msg);
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
