// A snapshot's action results as the fast path reads them (rows.ts readResults), and the string ids of a session
// that a frame's bytes can name without a string built: both are plain data, apart from the frame reader.

import type { ActionResult, AgentId } from './messages.js';
import { LIMITS } from './limits.js';
import type { KnownRowIds } from './known-rows.js';

/**
 * A snapshot's `results` as the fast path reads them: straight from the frame into columns, every entry one that
 * validation keeps (an `[id, seq, status]` with a valid id, a positive safe-integer seq and "success" or
 * "failure"). Entry i is `[ids[i], seqs[i], ok[i] === 1 ? 'success' : 'failure']`. Three objects per frame
 * where the decoder made an array and a string per entry (a third of the main thread's allocation at 50,000
 * agents). Only the fast path makes one (a decoded JSON body never holds it), so validation trusts it.
 */
export class ResultColumns {
  readonly count: number;
  readonly ids: readonly AgentId[];
  readonly seqs: Float64Array;
  /** 1 for "success", 0 for "failure". */
  readonly ok: Uint8Array;

  constructor(ids: readonly AgentId[], seqs: Float64Array, ok: Uint8Array) {
    this.count = ids.length;
    this.ids = ids;
    this.seqs = seqs;
    this.ok = ok;
  }
}

/** A snapshot's results: as decoded, or as the fast path read them. */
export type ResultList = readonly ActionResult[] | ResultColumns;

/** How many results `results` holds, in either form. */
export function resultCount(results: ResultList): number {
  return results instanceof ResultColumns ? results.count : results.length;
}

/** The results as the list the wire carries (for tools and records; the agent pool reads columns as they are). */
export function resultTuples(results: ResultList): readonly ActionResult[] {
  if (!(results instanceof ResultColumns)) return results;
  const out: ActionResult[] = [];
  for (let i = 0; i < results.count; i++) out.push([results.ids[i]!, results.seqs[i]!, results.ok[i] === 1 ? 'success' : 'failure']);
  return out;
}

/** The ids of a session's agents, found from a frame's bytes without a string built first (readResults, scanRows). */
export interface KnownIds {
  /** The known id spelled by the bytes [from, to) of `bytes`, or undefined. */
  find(bytes: Uint8Array, from: number, to: number): string | undefined;
  /**
   * The id each row of the session's last snapshots named, by row (as far as known), or null: a row spelling the same
   * id is it.
   */
  rowIds(): KnownRowIds | null;
}

/**
 * KnownIds' `find` as the agent pool keeps it per session: string ids by a hash of their characters (FNV-1a, cut to a
 * small integer so the Map's keys stay unboxed). Only ASCII ids of at most maxAgentIdLength characters, the ones
 * readId reads: bytes that spell one are ASCII, and the id found is the one readId would have built. A result for
 * an agent with a string id then costs no new string, and the routing table finds it by identity (its hash is
 * already computed), where a fresh string was hashed anew for every result of every frame.
 */
export class IdIndex {
  private readonly byHash = new Map<number, string | string[]>();

  add(id: string): void {
    const h = asciiHash(id);
    if (h < 0) return;
    const there = this.byHash.get(h);
    if (there === undefined) this.byHash.set(h, id);
    else if (typeof there === 'string') {
      if (there !== id) this.byHash.set(h, [there, id]);
    } else if (!there.includes(id)) there.push(id);
  }

  delete(id: string): void {
    const h = asciiHash(id);
    if (h < 0) return;
    const there = this.byHash.get(h);
    if (there === id) this.byHash.delete(h);
    else if (Array.isArray(there)) {
      const rest = there.filter((x) => x !== id);
      if (rest.length === 1) this.byHash.set(h, rest[0]!);
      else this.byHash.set(h, rest);
    }
  }

  find(bytes: Uint8Array, from: number, to: number): string | undefined {
    let h = FNV_OFFSET;
    for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
    const there = this.byHash.get(h & HASH_MASK);
    if (there === undefined) return undefined;
    if (typeof there === 'string') return spells(bytes, from, to, there) ? there : undefined;
    for (const id of there) if (spells(bytes, from, to, id)) return id;
    return undefined;
  }
}

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;
/** 30 bits: a small integer on every platform (an unboxed Map key). */
const HASH_MASK = 0x3fffffff;

/** The hash IdIndex files `id` under, or -1 when it is no id readId reads (non-ASCII, empty, too long). */
function asciiHash(id: string): number {
  if (id.length === 0 || id.length > LIMITS.maxAgentIdLength) return -1;
  let h = FNV_OFFSET;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c >= 0x80) return -1;
    h = Math.imul(h ^ c, FNV_PRIME);
  }
  return h & HASH_MASK;
}

/** True when the bytes [from, to) are the characters of `id`. */
function spells(bytes: Uint8Array, from: number, to: number, id: string): boolean {
  if (to - from !== id.length) return false;
  for (let i = from; i < to; i++) if (bytes[i] !== id.charCodeAt(i - from)) return false;
  return true;
}
