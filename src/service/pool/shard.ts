// One session's share of one host, as the router sees it: the slots it handed out there and the input buffered
// for that host until the session's next tick (rows packed into typed arrays, results, bb writes, observations).

import type { AgentId, CompiledTree } from '../../bt/index.js';
import { columnsOf, type ColumnBufferSet, type DecisionColumns, type SharedColumns } from './decisions.js';
import { FrameCursor, type ColumnRows } from '../../protocol/index.js';
import { isVector, writeVector } from './vectors.js';
import { Tag, type FrameBatch, type ResultBatch, type RowBatch, type TickOrder } from './wire.js';

/** The input of one tick for one host, taken out of a shard by `take()`. */
export type ShardInput = Pick<TickOrder, 'clear' | 'bb' | 'objects' | 'rows' | 'frameRows' | 'results' | 'columns' | 'lod'>;

const MIN_ROWS = 64;
/** Buffers handed back by hosts and kept for reuse; two cover one tick in flight while the next fills. */
const MAX_SPARES = 2;

/** Slot allocation and buffered input of one (session, host) pair. */
export class SessionShard {
  /** Values per row: the session's field count. */
  readonly width: number;
  /** Agents of the session on this host. */
  count = 0;
  /** The session's world version this host has; -1: none yet. */
  worldSent = -1;
  /**
   * The agent id in each slot, to turn the host's slot-numbered decisions back into ids. A freed slot keeps
   * its id until reused, and it is not reused before the next tick is sent: so a reply always finds the ids
   * its tick was sent with.
   */
  readonly ids: AgentId[] = [];
  /** The session-wide spawn order of the agent in each slot: decisions are merged in this order. */
  readonly ordinals: number[] = [];
  /** Per slot: the agent's tree (the version its checks run against) and label, for the router's routes. */
  readonly trees: CompiledTree[] = [];
  readonly labels: string[] = [];
  /**
   * True while slot order is spawn order: every slot was new when allocated (none reused) and took a larger ordinal
   * than the slot before it. Once false, false for good. A one-worker merge then checks its entries' slots, not their
   * ordinals (mergeTuples).
   */
  slotsInSpawnOrder = true;
  private lastOrdinal = -Infinity;
  private nextSlot = 0;
  private readonly free: number[] = [];
  /** Slots freed since the last tick: not reused until a tick has carried them, so buffered input never reaches a newcomer. */
  private quarantine: number[] = [];

  private clear = false;
  private bb: Array<[number, Record<string, unknown>]> | null = null;
  private objects: Array<[number, Record<string, unknown>]> | null = null;
  private rows: RowBatch | null = null;
  /** Rows still in their frames; always after `rows` in arrival order (a row of another kind flushes them first). */
  private frameRows: FrameBatch | null = null;
  private results: ResultBatch | null = null;
  private lod: Array<[number, number]> | null = null;
  private readonly spareRows: RowBatch[] = [];
  private readonly spareFrameRows: FrameBatch[] = [];
  private readonly spareResults: ResultBatch[] = [];
  /** The host's decision buffers for this session (SharedColumns) and their generation; -1: none yet. */
  private columnBuffers: ColumnBufferSet | null = null;
  private columnsGen = -1;

  constructor(width: number) {
    this.width = width;
  }

  /** A slot for agent `id`: a freed one if any (keeps the host's array dense), else a new one. */
  allocate(id: AgentId, ordinal: number): number {
    this.count++;
    const reused = this.free.pop();
    const slot = reused ?? this.nextSlot++;
    if (reused !== undefined || !(ordinal > this.lastOrdinal)) this.slotsInSpawnOrder = false;
    this.lastOrdinal = ordinal;
    this.ids[slot] = id;
    this.ordinals[slot] = ordinal;
    return slot;
  }

  /** Frees a slot; it becomes reusable after the next tick is sent. */
  release(slot: number): void {
    this.count--;
    this.quarantine.push(slot);
  }

  /** Results buffered for the next tick. */
  get resultCount(): number {
    return this.results?.count ?? 0;
  }

  /** True when something is buffered for the next tick. */
  get hasInput(): boolean {
    return this.hasObservations || this.bb !== null || this.results !== null;
  }

  /** True when observations are buffered for the next tick (rows, objects, or a full snapshot's clearing). */
  get hasObservations(): boolean {
    return this.clear || this.objects !== null || this.rows !== null || this.frameRows !== null;
  }

  /**
   * Rows of `frame` follow (FrameRows: checked by the protocol, decoded by the host): call before writing
   * them into the batch's `slots`, `offsets` and `count` (room for `rows` more rows is made here), and
   * endFrame() after. The hot path of snapshots: two numbers per row.
   */
  startFrame(frame: Uint8Array, rows = 0): FrameBatch {
    let b = this.frameRows;
    if (b === null) b = this.frameRows = this.spareFrameRows.pop() ?? newFrameBatch(Math.max(MIN_ROWS, this.count));
    while (b.slots.length < b.count + rows) growFrameRows(b);
    if (b.frames.length === 0 || b.frames[b.frames.length - 1] !== frame) {
      b.frames.push(frame);
      b.ends.push(b.count);
    }
    return b;
  }

  /** The rows of the frame are in: its end is where the next frame's rows start. */
  endFrame(): void {
    const b = this.frameRows;
    if (b === null) return;
    b.ends[b.ends.length - 1] = b.count;
  }

  /** Appends one positional row `[id, v1, v2, ...]` for the agent in `slot`; missing values read null. */
  pushRow(slot: number, row: readonly unknown[]): void {
    if (this.frameRows !== null) this.flushFrameRows();
    this.writeRow(slot, row);
  }

  private writeRow(slot: number, row: readonly unknown[]): void {
    const b = this.startRow(slot);
    const width = this.width;
    const values = b.values;
    const tags = b.tags;
    const base = (b.count - 1) * width;
    const n = row.length - 1 < width ? row.length - 1 : width;
    let k = 0;
    for (; k < n; k++) {
      const v = row[k + 1];
      if (typeof v === 'number') {
        values[base + k] = v;
        tags[base + k] = Tag.NUMBER;
      } else if (v === true) tags[base + k] = Tag.TRUE;
      else if (v === false) tags[base + k] = Tag.FALSE;
      else if (v === null || v === undefined) tags[base + k] = Tag.NULL;
      else if (isVector(v)) {
        values[base + k] = pushVector(b, v);
        tags[base + k] = Tag.VECTOR;
      } else {
        values[base + k] = b.other.length;
        b.other.push(v);
        tags[base + k] = Tag.OTHER;
      }
    }
    for (; k < width; k++) tags[base + k] = Tag.NULL;
  }

  /**
   * Rows still in frames are followed by rows of another kind: they are decoded here, into the row batch, so
   * that the host applies every row in arrival order (rare: a frame the fast path declined between two ticks).
   */
  private flushFrameRows(): void {
    const b = this.frameRows!;
    this.frameRows = null;
    const cursor = new FrameCursor();
    const row: unknown[] = Array.from({ length: this.width + 1 }, () => null);
    let j = -1;
    let end = 0;
    for (let i = 0; i < b.count; i++) {
      if (i >= end) {
        while (i >= end) end = b.ends[++j]!;
        cursor.frame(b.frames[j]!);
      }
      cursor.pos = b.offsets[i]!;
      for (let k = 1; k <= this.width; k++) row[k] = cursor.next();
      this.writeRow(b.slots[i]!, row);
    }
    this.recycleFrameRows(b);
  }

  /** Appends row `row` of packed rows (the protocol's fast path: tags and numbers copied as they are). */
  pushPacked(slot: number, packed: ColumnRows, row: number): void {
    if (this.frameRows !== null) this.flushFrameRows();
    const b = this.startRow(slot);
    const width = this.width;
    const base = (b.count - 1) * width;
    const from = row * width;
    const { values, tags } = b;
    const pTags = packed.tags;
    const pValues = packed.values;
    for (let k = 0; k < width; k++) {
      const tag = pTags[from + k]!;
      tags[base + k] = tag;
      if (tag === Tag.NUMBER) values[base + k] = pValues[from + k]!;
      else if (tag === Tag.VECTOR) {
        const at = pValues[from + k]!;
        values[base + k] = copyVector(b, packed.vectors, at, packed.vectors[at]!);
      } else if (tag === Tag.OTHER) {
        values[base + k] = b.other.length;
        b.other.push(packed.other[pValues[from + k]!]);
      }
    }
  }

  /** Adds a row for `slot` to this tick's batch (its values still to write, at index `count - 1`). */
  private startRow(slot: number): RowBatch {
    const b = this.rows ?? (this.rows = this.spareRows.pop() ?? newRowBatch(this.width, Math.max(MIN_ROWS, this.count)));
    const i = b.count;
    if (i === b.slots.length) growRows(b);
    b.count = i + 1;
    b.slots[i] = slot;
    return b;
  }

  /** Replaces the observation of the agent in `slot` with a whole object (map form: cloned, the slow path). */
  pushObject(slot: number, obs: Record<string, unknown>): void {
    (this.objects ??= []).push([slot, obs]);
  }

  /** A full snapshot starts: drop the observations buffered so far; the host clears every agent's first. */
  startFull(): void {
    this.clear = true;
    this.objects = null;
    if (this.rows !== null) emptyRows(this.rows);
    if (this.frameRows !== null) {
      this.recycleFrameRows(this.frameRows);
      this.frameRows = null;
    }
  }

  pushResult(slot: number, seq: number, success: boolean): void {
    const r = this.results ?? (this.results = this.spareResults.pop() ?? { count: 0, data: new Float64Array(3 * MIN_ROWS) });
    if (r.count * 3 === r.data.length) {
      const data = new Float64Array(r.data.length * 2);
      data.set(r.data);
      r.data = data;
    }
    const at = r.count * 3;
    r.data[at] = slot;
    r.data[at + 1] = seq;
    r.data[at + 2] = success ? 1 : 0;
    r.count++;
  }

  /** A new tick interval for the agent in `slot` (level of detail), applied before the next tick. */
  pushLod(slot: number, every: number): void {
    (this.lod ??= []).push([slot, every]);
  }

  pushBlackboard(slot: number, values: Record<string, unknown>): void {
    (this.bb ??= []).push([slot, values]);
  }

  /** Takes the buffered input for a tick and releases quarantined slots: the tick order carries their despawn. */
  take(): ShardInput {
    const input: ShardInput = { clear: this.clear, bb: this.bb, objects: this.objects, rows: this.rows, frameRows: this.frameRows, results: this.results, columns: this.columnsGen };
    this.clear = false;
    this.bb = null;
    this.objects = null;
    this.rows = null;
    this.frameRows = null;
    this.results = null;
    this.endTick();
    // Level of detail rides only when there is some: a session without it sends the tick order it always did.
    if (this.lod !== null) {
      input.lod = this.lod;
      this.lod = null;
    }
    return input;
  }

  /** Forgets the buffered input (the host has no agent of the session left) and releases quarantined slots. */
  discard(): void {
    const { rows, results, frameRows } = this.take();
    this.recycle(rows, results, frameRows);
  }

  /**
   * A tick reply's decisions, read in the host's buffers: those it sent now, or those it sent before (it sends them
   * whenever the order named another generation than theirs). Read them before this session's next tick is sent:
   * the host writes that tick's decisions over them.
   */
  decisions(d: SharedColumns): DecisionColumns {
    if (d.buffers !== null) {
      this.columnBuffers = d.buffers;
      this.columnsGen = d.gen;
    } else if (d.gen !== this.columnsGen || this.columnBuffers === null) {
      throw new Error(`decisions in buffers ${d.gen} not sent (held: ${this.columnsGen})`);
    }
    return columnsOf(d, this.columnBuffers);
  }

  /** Keeps input buffers handed back by the host for the next ticks. */
  recycle(rows: RowBatch | null, results: ResultBatch | null, frameRows: FrameBatch | null = null): void {
    if (frameRows !== null) this.recycleFrameRows(frameRows);
    if (rows !== null && rows.width === this.width && this.spareRows.length < MAX_SPARES) {
      emptyRows(rows);
      this.spareRows.push(rows);
    }
    if (results !== null && this.spareResults.length < MAX_SPARES) {
      results.count = 0;
      this.spareResults.push(results);
    }
  }

  private recycleFrameRows(b: FrameBatch): void {
    if (this.spareFrameRows.length >= MAX_SPARES) return;
    b.count = 0;
    b.frames.length = 0;
    b.ends.length = 0;
    this.spareFrameRows.push(b);
  }

  private endTick(): void {
    for (let i = 0; i < this.quarantine.length; i++) this.free.push(this.quarantine[i]!);
    this.quarantine.length = 0;
  }
}

function newRowBatch(width: number, capacity: number): RowBatch {
  return {
    count: 0,
    width,
    slots: new Int32Array(capacity),
    values: new Float64Array(capacity * width),
    tags: new Uint8Array(capacity * width),
    vectors: new Float64Array(MIN_VECTORS),
    vectorsLength: 0,
    other: [],
  };
}

function newFrameBatch(capacity: number): FrameBatch {
  return { count: 0, slots: new Int32Array(capacity), offsets: new Int32Array(capacity), frames: [], ends: [] };
}

function growFrameRows(b: FrameBatch): void {
  const slots = new Int32Array(b.slots.length * 2);
  slots.set(b.slots);
  const offsets = new Int32Array(b.offsets.length * 2);
  offsets.set(b.offsets);
  b.slots = slots;
  b.offsets = offsets;
}

const MIN_VECTORS = 256;

function emptyRows(b: RowBatch): void {
  b.count = 0;
  b.vectorsLength = 0;
  b.other.length = 0;
}

/** Room for `n` more numbers in the batch's vectors; returns the offset where they go. */
function reserveVector(b: RowBatch, n: number): number {
  const at = b.vectorsLength;
  const end = at + n;
  if (end > b.vectors.length) {
    const grown = new Float64Array(Math.max(end, b.vectors.length * 2));
    grown.set(b.vectors.subarray(0, at));
    b.vectors = grown;
  }
  b.vectorsLength = end;
  return at;
}

/** Appends a vector (its length, then its elements); returns its offset. */
function pushVector(b: RowBatch, v: readonly number[]): number {
  const at = reserveVector(b, 1 + v.length);
  writeVector(b.vectors, at, v);
  return at;
}

/** Appends the vector of `n` numbers at `from` in `source` (length included); returns its offset. */
function copyVector(b: RowBatch, source: Float64Array, from: number, n: number): number {
  const at = reserveVector(b, 1 + n);
  // A loop, not set(subarray()): no view allocated per vector.
  const vectors = b.vectors;
  for (let k = 0; k <= n; k++) vectors[at + k] = source[from + k]!;
  return at;
}

function growRows(b: RowBatch): void {
  const capacity = b.slots.length * 2;
  const slots = new Int32Array(capacity);
  slots.set(b.slots);
  const values = new Float64Array(capacity * b.width);
  values.set(b.values);
  const tags = new Uint8Array(capacity * b.width);
  tags.set(b.tags);
  b.slots = slots;
  b.values = values;
  b.tags = tags;
}
