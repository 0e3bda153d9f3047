// A snapshot's action results as the fast path reads them (rows.ts), and the string ids of a session that a frame's
// bytes can name without a string built: both are plain data, apart from the frame reader.

import type { ActionResult, AgentId } from './messages.js';
import { LIMITS } from './limits.js';
import type { KnownRowIds } from './known-rows.js';

/** The columns of a ResultColumns: entry i is `[ids[i], seqs[i], ok[i] === 1 ? 'success' : 'failure']`. */
export interface ResultData {
  readonly ids: readonly AgentId[];
  readonly seqs: Float64Array;
  /** 1 for "success", 0 for "failure". */
  readonly ok: Uint8Array;
  /**
   * For entries whose string id the session's IdIndex knew, the number the session filed it with (the agent pool: its
   * route), else -1; null when the reader had no index. Good while the session's ids are at `version` (KnownIds).
   */
  readonly filed: Int32Array | null;
  readonly version: number;
}

/**
 * A snapshot's `results` as the fast path reads them: every entry one that validation keeps (an `[id, seq, status]`
 * with a valid id, a positive safe-integer seq and "success" or "failure"). Three objects per frame where the
 * decoder made an array and a string per entry (a third of the main thread's allocation at 50,000 agents). Only the
 * fast path makes one (a decoded JSON body never holds it), so validation trusts it.
 *
 * The fast path checks a frame's entries and leaves them in its bytes (`frame`, the list's header at `start`): the
 * agent pool's worker that ticks the session reads them there (docs/capacity.md, *Round twenty*), and anyone else
 * who asks for the columns gets them read on first use.
 */
export class ResultColumns implements ResultData {
  readonly count: number;
  /** The frame whose bytes hold the entries, checked but unread, or null: read already. */
  readonly frame: Uint8Array | null;
  /** Where the entries' list starts in `frame` (its header). */
  readonly start: number;
  private data: ResultData | null;
  private readonly read: (() => ResultData) | null;

  private constructor(count: number, frame: Uint8Array | null, start: number, data: ResultData | null, read: (() => ResultData) | null) {
    this.count = count;
    this.frame = frame;
    this.start = start;
    this.data = data;
    this.read = read;
  }

  /** Columns read already. */
  static of(data: ResultData): ResultColumns {
    return new ResultColumns(data.ids.length, null, 0, data, null);
  }

  /** `count` checked entries still in `frame` from byte `start`; `read` reads them (once, when first asked). */
  static unread(count: number, frame: Uint8Array, start: number, read: () => ResultData): ResultColumns {
    return new ResultColumns(count, frame, start, null, read);
  }

  private columns(): ResultData {
    return (this.data ??= this.read!());
  }

  get ids(): readonly AgentId[] {
    return this.columns().ids;
  }

  get seqs(): Float64Array {
    return this.columns().seqs;
  }

  get ok(): Uint8Array {
    return this.columns().ok;
  }

  get filed(): Int32Array | null {
    return this.columns().filed;
  }

  get version(): number {
    return this.columns().version;
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
  /** The session's string ids, each with the number it is filed with. */
  readonly ids: IdIndex;
  /** Moves whenever an id comes, goes or is filed anew: what `ids` said holds while it stays. */
  readonly version: number;
  /**
   * The id each row of the session's last snapshots named, by row (as far as known), or null: a row spelling the same
   * id is it.
   */
  rowIds(): KnownRowIds | null;
}

/**
 * A session's string ids by a hash of their characters (FNV-1a, 30 bits), each with a number its owner files it with
 * (the agent pool: the agent's route), in an open-addressing table of typed arrays: a result naming an agent by a
 * string id finds the id and its route from the frame's bytes in one probe, with no string built and no Map entry
 * read (two Map lookups per result, one by hash and one by the id, were a quarter of the main thread at 50,000
 * agents with string ids). Only ASCII ids of 1 to maxAgentIdLength characters, the ones readId reads: bytes that
 * spell one are ASCII, and the id found is the one readId would have built.
 */
export class IdIndex {
  /** Slot k: `meta[2k]` the id's hash + 1 (0: empty), `meta[2k + 1]` its number; `keys[k]` the id. */
  private meta = new Int32Array(2 * MIN_SLOTS);
  private keys: Array<string | undefined> = Array.from<string | undefined>({ length: MIN_SLOTS });
  private mask = MIN_SLOTS - 1;
  private count = 0;

  /** How many ids it holds. */
  get size(): number {
    return this.count;
  }

  /** Files `id` with `value` (again, if it was); false, filing nothing, for an id readId would not read. */
  set(id: string, value: number): boolean {
    const h = asciiHash(id);
    if (h < 0) return false;
    const k = this.probe(id, h);
    const { meta } = this;
    meta[2 * k + 1] = value;
    if (meta[2 * k] !== 0) return true;
    meta[2 * k] = h + 1;
    this.keys[k] = id;
    if (++this.count * 2 > this.mask + 1) this.grow();
    return true;
  }

  /**
   * The value `id` is filed with, or -1 (not filed, or no id readId would read). Found by a hash of its characters:
   * a Map lookup of a string the decoder just made interns it in V8's string table first (Node 26: about half a
   * microsecond per new string).
   */
  get(id: string): number {
    const h = asciiHash(id);
    if (h < 0) return -1;
    const k = this.probe(id, h);
    return this.meta[2 * k] === 0 ? -1 : this.meta[2 * k + 1]!;
  }

  /** Every id filed and its value, in no particular order. */
  forEach(each: (id: string, value: number) => void): void {
    const { meta, keys } = this;
    for (let k = 0; k < keys.length; k++) if (meta[2 * k] !== 0) each(keys[k]!, meta[2 * k + 1]!);
  }

  /** Removes `id`; false when it was not filed. */
  delete(id: string): boolean {
    const h = asciiHash(id);
    if (h < 0) return false;
    const k = this.probe(id, h);
    const { meta, keys, mask } = this;
    if (meta[2 * k] === 0) return false;
    // Backward shift: the entries after the hole that may sit in it move up, so every probe still ends at an empty slot.
    let hole = k;
    for (let j = (k + 1) & mask; meta[2 * j] !== 0; j = (j + 1) & mask) {
      const home = (meta[2 * j]! - 1) & mask;
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      meta[2 * hole] = meta[2 * j]!;
      meta[2 * hole + 1] = meta[2 * j + 1]!;
      keys[hole] = keys[j];
      hole = j;
    }
    meta[2 * hole] = 0;
    keys[hole] = undefined;
    this.count--;
    return true;
  }

  /** The slot holding `id` (hashed `h`), or the empty slot where its probe ends: where `set` would file it. */
  private probe(id: string, h: number): number {
    const { meta, keys, mask } = this;
    let k = h & mask;
    while (meta[2 * k] !== 0 && !(meta[2 * k] === h + 1 && keys[k] === id)) k = (k + 1) & mask;
    return k;
  }

  /** The slot of the id spelled by the bytes [from, to) of `bytes`, or -1: `idAt` and `valueAt` read it. */
  find(bytes: Uint8Array, from: number, to: number): number {
    let h = FNV_OFFSET;
    for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
    h &= HASH_MASK;
    const { meta, keys, mask } = this;
    for (let k = h & mask; meta[2 * k] !== 0; k = (k + 1) & mask) {
      if (meta[2 * k] === h + 1 && spells(bytes, from, to, keys[k]!)) return k;
    }
    return -1;
  }

  idAt(slot: number): string {
    return this.keys[slot]!;
  }

  valueAt(slot: number): number {
    return this.meta[2 * slot + 1]!;
  }

  private grow(): void {
    const { meta, keys } = this;
    const slots = 2 * (this.mask + 1);
    this.meta = new Int32Array(2 * slots);
    // No callback per slot: a grow runs rarely, so in V8's interpreter, where a callback per slot
    // cost a game server's string-id spawn of 2,500 agents milliseconds of grows on each thread.
    this.keys = Array.from<string | undefined>({ length: slots });
    this.mask = slots - 1;
    for (let k = 0; k < keys.length; k++) {
      if (meta[2 * k] === 0) continue;
      let j = (meta[2 * k]! - 1) & this.mask;
      while (this.meta[2 * j] !== 0) j = (j + 1) & this.mask;
      this.meta[2 * j] = meta[2 * k]!;
      this.meta[2 * j + 1] = meta[2 * k + 1]!;
      this.keys[j] = keys[k];
    }
  }
}

/** Slots of a new IdIndex (a power of two); it doubles at half full. */
const MIN_SLOTS = 16;
const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;
/** 30 bits: a small integer on every platform (stored + 1 in an Int32Array). */
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
