// The ids a session's snapshot rows named last time, by row, for the readers of the next frame (rows.ts): a row that
// spells row i's known string id again is that very string, with no new string built. The characters of those ids
// are laid end to end in one byte array, so the check reads them beside the frame's bytes rather than through each
// string object, wherever the collector put it (a cache miss per row: 30 against 9 ns a row, measured over 12,500
// ids scattered in the heap, and more under load).

import type { AgentId } from './messages.js';
import { LIMITS } from './limits.js';

export class KnownRowIds {
  /** The id row i named (a copy: the list it was made from may change). */
  readonly ids: readonly AgentId[];
  /**
   * Row i's id's characters are `bytes[ends[i - 1] .. ends[i])` (`ends[-1]` being 0), when it is a string readId reads
   * (ASCII, 1 to maxAgentIdLength characters); nothing for any other id, which no row's bytes then match.
   */
  readonly bytes: Uint8Array;
  readonly ends: Int32Array;

  private constructor(ids: readonly AgentId[], bytes: Uint8Array, ends: Int32Array) {
    this.ids = ids;
    this.bytes = bytes;
    this.ends = ends;
  }

  /** The known ids of `list`, or null when none is a string readId reads (integer ids read fast as they are). */
  static of(list: readonly AgentId[]): KnownRowIds | null {
    const ends = new Int32Array(list.length);
    let total = 0;
    for (let i = 0; i < list.length; i++) {
      total += readable(list[i]!);
      ends[i] = total;
    }
    if (total === 0) return null;
    const ids = list.slice();
    const bytes = new Uint8Array(total);
    for (let i = 0; i < ids.length; i++) {
      const at = i === 0 ? 0 : ends[i - 1]!;
      // A string readId reads where the row has room; nothing else has any.
      for (let k = 0; k < ends[i]! - at; k++) bytes[at + k] = (ids[i] as string).charCodeAt(k);
    }
    return new KnownRowIds(ids, bytes, ends);
  }
}

/** How many bytes `id` spells as a fixstr or str8 that readId reads back as that string: its length, or 0 for no such string. */
function readable(id: AgentId): number {
  if (typeof id !== 'string' || id.length === 0 || id.length > LIMITS.maxAgentIdLength) return 0;
  for (let k = 0; k < id.length; k++) if (id.charCodeAt(k) >= 0x80) return 0;
  return id.length;
}

/**
 * Where the string at byte `p` of `frame` ends when it spells row `i`'s known id, as a fixstr or str8; -1 otherwise.
 * The known id's characters are ASCII and 1 to maxAgentIdLength long, so equal bytes pass or fail exactly as readId
 * would judge them, and readId would build a string equal to it.
 */
export function knownRowEnd(known: KnownRowIds, i: number, frame: Uint8Array, p: number, last: number): number {
  const ends = known.ends;
  if (i >= ends.length) return -1;
  const from = i === 0 ? 0 : ends[i - 1]!;
  const n = ends[i]! - from;
  if (n === 0) return -1;
  const b = frame[p]!;
  let at = p + 1;
  if (b >= 0xa0 && b <= 0xbf) {
    if ((b & 0x1f) !== n) return -1;
  } else if (b === 0xd9 && at < last) {
    if (frame[at++] !== n) return -1;
  } else return -1;
  if (at + n > last) return -1;
  const bytes = known.bytes;
  for (let k = 0; k < n; k++) if (frame[at + k] !== bytes[from + k]) return -1;
  return at + n;
}
