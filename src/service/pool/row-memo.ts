// The row position memo. Game servers list their agents in a snapshot in the same order tick after tick, so row i
// names the same agent as it did last time, and one comparison (of numbers, or of two short strings) finds it
// whatever the ids look like: sparse integers and strings miss the dense id tables and would otherwise pay a Map
// lookup (a string: hashed anew each frame) per row. The router keeps one per session for routes, a worker keeps
// one per session for the slots of its own agents; each decides what to remember and when to forget.

import type { AgentId } from '../../bt/index.js';

/** `get`'s answer when row i named another id last time, or was never seen: look the id up. */
export const MISS = -2;

export class RowMemo {
  private ids: AgentId[] = [];
  private values = new Int32Array(0);

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
    if (i === ids.length) ids.push(id);
    else ids[i] = id;
    this.values[i] = value;
  }

  /** The id each row named when last looked up (by row; shorter than a frame's rows until they are all learned). */
  known(): readonly AgentId[] {
    return this.ids;
  }

  /** Forgets every row: an agent came or went, so what a row resolved to may be stale. */
  clear(): void {
    if (this.ids.length > 0) this.ids = [];
  }
}
