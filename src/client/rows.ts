// Positional observation rows, filled in place tick after tick: the allocation-light way to
// send 50k agents' observations (`snapshot.agents` as `[id, v1, v2, ...]`).

import type { AgentId, ObservationRow } from '../protocol/index.js';

/**
 * Builds the rows of one snapshot, reusing the row arrays of the previous one.
 *
 * ```ts
 * const rows = client.rows();            // fields from hello: ['x', 'y', 'hp']
 * const X = rows.column('x'), HP = rows.column('hp');
 * // every tick:
 * rows.begin();
 * for (const u of units) { const r = rows.row(u.id); r[X] = u.x; r[X + 1] = u.y; r[HP] = u.hp; }
 * client.snapshot({ tick, time, agents: rows });
 * ```
 *
 * Guarantees: a row has exactly `1 + fields.length` elements, the id first. Once the batch
 * reaches the same size as the previous one, no array is allocated. A row keeps the values of its
 * previous use until overwritten (write every field, or call {@link RowWriter.clear}). Rows are
 * valid until the next {@link begin}; `snapshot()` encodes synchronously, so reusing them on the
 * next tick is safe.
 */
export class RowWriter {
  /** The observation fields, in row order (row index `i + 1` holds `fields[i]`). */
  readonly fields: readonly string[];
  /** Elements per row: the id plus one per field. */
  readonly width: number;
  private readonly pool: unknown[][] = [];
  private count = 0;
  private readonly columns = new Map<string, number>();

  /** @param fields the field names declared in `hello.fields`, in the same order. */
  constructor(fields: readonly string[]) {
    this.fields = Object.freeze(fields.slice());
    this.width = fields.length + 1;
    fields.forEach((name, i) => this.columns.set(name, i + 1));
  }

  /** Index of `field` in a row (1 for the first field; 0 is the id). Throws for an unknown field. */
  column(field: string): number {
    const index = this.columns.get(field);
    if (index === undefined) throw new RangeError(`unknown observation field ${JSON.stringify(field)}`);
    return index;
  }

  /** Starts a new batch; the rows of the previous batch will be reused. */
  begin(): this {
    this.count = 0;
    return this;
  }

  /** Adds a row for agent `id` and returns it for filling; `row[0]` is the id. */
  row(id: AgentId): unknown[] {
    let row = this.pool[this.count];
    if (row === undefined) {
      row = [];
      for (let i = 0; i < this.width; i++) row.push(null);
      this.pool.push(row);
    }
    row[0] = id;
    this.count++;
    return row;
  }

  /** Sets every field of every row of this batch to nil. */
  clear(): this {
    for (let r = 0; r < this.count; r++) {
      const row = this.pool[r]!;
      for (let i = 1; i < this.width; i++) row[i] = null;
    }
    return this;
  }

  /** Number of rows in this batch. */
  get length(): number {
    return this.count;
  }

  /**
   * The rows of this batch, as a list to put in `snapshot.agents`. The same array is returned
   * tick after tick (it is the pool itself, trimmed to this batch).
   */
  rows(): readonly ObservationRow[] {
    // Trim instead of slicing: in the steady state the length does not change and nothing is copied.
    if (this.pool.length !== this.count) this.pool.length = this.count;
    return this.pool as unknown as readonly ObservationRow[];
  }
}
