// Positional observation rows written straight into MessagePack as the game fills them: the cheapest way for a Node
// game server to send tens of thousands of agents' observations a tick (docs/integration.md, "Large snapshots").

import { encode } from '../protocol/codec.js';
import { arrayHeader, writeRowNumber, writeRowValue, type AgentId } from '../protocol/index.js';

/** Room for the rows' array header (array32: 5 bytes), written in front of the rows once their count is known. */
const HEADER_ROOM = 5;
/** Most bytes a value written without a size check takes: a point (fixarray, two float64s). */
const MAX_FIXED_VALUE = 19;
/** Most bytes an integer or float id takes (float64). */
const MAX_NUMBER_ID = 9;

/**
 * Builds the rows of one snapshot as bytes, value by value, in the order of the fields declared in `hello`: the
 * same bytes as a {@link RowWriter} with the same values, without an array per row or a heap number per value, so
 * a snapshot costs the game server less than half the CPU (`npm run bench:client`).
 *
 * ```ts
 * const rows = client.rowEncoder();      // fields from hello: ['hp', 'enemyVisible', 'enemyPos']
 * // every tick:
 * rows.begin();
 * for (const u of units) {
 *   rows.row(u.id).number(u.hp).boolean(u.enemy !== null);
 *   if (u.enemy !== null) rows.point(u.enemy.x, u.enemy.y); else rows.nil();
 * }
 * client.snapshot({ tick, time, agents: rows });
 * ```
 *
 * Each row takes exactly one value per field, in field order: a row with too few or too many throws a RangeError
 * naming the agent when the next row starts or the rows are sent. Numbers are written as the protocol's row encoder
 * writes them (a 32-bit integer in its smallest form, any other number as float64), so the service reads them on
 * its fast path (docs/protocol.md, *What the service reads fastest*). The bytes are valid until the next
 * {@link begin}; `snapshot()` copies them into the frame, so reusing the encoder on the next tick is safe.
 */
export class RowEncoder {
  /** The observation fields, in row order. */
  readonly fields: readonly string[];
  /** Values per row: one per field. */
  readonly width: number;
  private buf = new Uint8Array(64 * 1024);
  private at = HEADER_ROOM;
  private count = 0;
  /** Values written in the current row; `width` between rows (before the first, too). */
  private filled: number;
  /** The current row's id (for the error of a row that does not fit the fields). */
  private id: AgentId = 0;
  /** Bytes reserved at a row's start for its values written without a size check. */
  private readonly rowRoom: number;
  /** Every row's array header (the id and one value per field). */
  private readonly rowHeader: Uint8Array;
  /** That header's one byte (a fixarray, under 15 fields), or -1. */
  private readonly rowHeaderByte: number;

  /** @param fields the field names declared in `hello.fields`, in the same order. */
  constructor(fields: readonly string[]) {
    this.fields = Object.freeze(fields.slice());
    this.width = fields.length;
    this.filled = this.width;
    this.rowHeader = Uint8Array.from(arrayHeader(this.width + 1));
    this.rowHeaderByte = this.rowHeader.length === 1 ? this.rowHeader[0]! : -1;
    this.rowRoom = this.rowHeader.length + MAX_NUMBER_ID + this.width * MAX_FIXED_VALUE;
  }

  /** Starts a new batch; the memory of the previous one is reused. */
  begin(): this {
    this.at = HEADER_ROOM;
    this.count = 0;
    this.filled = this.width;
    return this;
  }

  /** Number of rows in this batch. */
  get length(): number {
    return this.count;
  }

  /** Starts the row of agent `id`; its values follow, one per field. */
  row(id: AgentId): this {
    if (this.filled !== this.width) this.misfit();
    this.room(this.rowRoom);
    const b = this.buf;
    if (this.rowHeaderByte >= 0) {
      b[this.at++] = this.rowHeaderByte;
    } else {
      b.set(this.rowHeader, this.at);
      this.at += this.rowHeader.length;
    }
    if (typeof id === 'number') {
      this.at = writeRowNumber(b, this.at, id);
    } else {
      this.write(id);
      this.room(this.rowRoom);
    }
    this.id = id;
    this.filled = 0;
    this.count++;
    return this;
  }

  /** The next field's value: a number. */
  number(v: number): this {
    this.at = writeRowNumber(this.buf, this.at, v);
    this.filled++;
    return this;
  }

  /** The next field's value: a boolean. */
  boolean(v: boolean): this {
    this.buf[this.at++] = v ? 0xc3 : 0xc2;
    this.filled++;
    return this;
  }

  /** The next field's value: nil (no value this tick; the tree reads `null`). */
  nil(): this {
    this.buf[this.at++] = 0xc0;
    this.filled++;
    return this;
  }

  /** The next field's value: a point `[x, y]`. */
  point(x: number, y: number): this {
    const b = this.buf;
    b[this.at] = 0x92;
    this.at = writeRowNumber(b, writeRowNumber(b, this.at + 1, x), y);
    this.filled++;
    return this;
  }

  /** The next field's value: anything a row holds (a string, a list, a map...), as a {@link RowWriter}'s row would send it. */
  value(v: unknown): this {
    this.write(v);
    this.filled++;
    // The values after this one are written without a size check: keep a row's worth of room.
    this.room(this.rowRoom);
    return this;
  }

  /** The batch as the `agents` array of a snapshot, in MessagePack: valid until the next {@link begin}. */
  bytes(): Uint8Array {
    if (this.filled !== this.width) this.misfit();
    const header = arrayHeader(this.count);
    const start = HEADER_ROOM - header.length;
    this.buf.set(header, start);
    return this.buf.subarray(start, this.at);
  }

  /** Writes `v` at the end, through the codec where the row encoder's own forms do not cover it. */
  private write(v: unknown): void {
    this.room(64);
    const end = writeRowValue(this.buf, this.at, this.buf.length, v);
    if (end >= 0) {
      this.at = end;
      return;
    }
    const bytes = encode(v);
    this.room(bytes.length);
    this.buf.set(bytes, this.at);
    this.at += bytes.length;
  }

  /** At least `n` more bytes after the end. */
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.at + n) size *= 2;
    const bigger = new Uint8Array(size);
    bigger.set(this.buf.subarray(0, this.at));
    this.buf = bigger;
  }

  /** The current row has too few or too many values. */
  private misfit(): never {
    const id = this.id;
    const filled = this.filled;
    // The batch is dropped: the encoder goes on with an empty one, as after begin().
    this.filled = this.width;
    this.at = HEADER_ROOM;
    this.count = 0;
    throw new RangeError(`the row of agent ${JSON.stringify(id)} has ${filled} values; the fields are ${this.width} (${this.fields.join(', ')})`);
  }
}
