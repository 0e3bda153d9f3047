// The row position memo. Game servers list their agents in a snapshot in the same order tick after tick, so row i
// names the same agent as it did last time, and one comparison (of numbers, or of two short strings) finds it
// whatever the ids look like: sparse integers and strings miss the dense id tables and would otherwise pay a Map
// lookup (a string: hashed anew each frame) per row. The router keeps one per session for routes, a worker keeps
// one per session for the slots of its own agents; each decides what to remember and when to forget.

import type { AgentId } from '../../bt/index.js';
import { KnownRowIds } from '../../protocol/index.js';

/** `get`'s answer when row i named another id last time, or was never seen: look the id up. */
export const MISS = -2;

export class RowMemo {
  private ids: AgentId[] = [];
  private values = new Int32Array(0);
  /** Moves whenever a row's id is learned or forgotten. */
  private version = 0;
  /** `version` at the last `known()` call. */
  private seen = -1;
  /** The rows' ids for the frame readers as made at `rowsVersion` (null: none to give, no string among them). */
  private rows: KnownRowIds | null = null;
  private rowsVersion = -1;

  /** What row `i` resolved to when it last named `id` (an int32 the owner chose, ≥ -1), or MISS. */
  get(i: number, id: AgentId): number {
    const ids = this.ids;
    return i < ids.length && ids[i] === id ? this.values[i]! : MISS;
  }

  /** Remembers what row `i`, naming `id`, resolved to. Rows are learned in order: one past the rows known is skipped. */
  set(i: number, id: AgentId, value: number): void {
    const ids = this.ids;
    if (i > ids.length) return;
    if (i >= this.values.length) {
      const grown = new Int32Array(Math.max(1024, this.values.length * 2));
      grown.set(this.values);
      this.values = grown;
    }
    this.values[i] = value;
    // Only a row's id moves the version: the known ids (`known`) hold while the rows name the same agents.
    if (i < ids.length && ids[i] === id) return;
    if (i === ids.length) ids.push(id);
    else ids[i] = id;
    this.version++;
  }

  /**
   * The id each row named when last looked up (by row; fewer than a frame's rows until they are all learned), for the
   * next frame's reader; null when none are known, or while they are still changing: they are copied out once the
   * rows held still over a frame (a session that lists its agents in a new order every frame would pay the copy on
   * every frame, for nothing).
   */
  known(): KnownRowIds | null {
    if (this.rowsVersion === this.version) return this.rows;
    const still = this.seen === this.version;
    this.seen = this.version;
    if (!still) return null;
    this.rows = KnownRowIds.of(this.ids);
    this.rowsVersion = this.version;
    return this.rows;
  }

  /** Forgets every row: an agent came or went, so what a row resolved to may be stale. */
  clear(): void {
    if (this.ids.length === 0) return;
    this.ids = [];
    this.rows = null;
    this.version++;
  }
}
