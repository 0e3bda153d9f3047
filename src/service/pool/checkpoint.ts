// Packed checkpoints of a session's agents on one host (crash recovery, recovery.ts): every agent's state in a few
// typed arrays and flat value lists, serialized once by the host into bytes the main thread keeps without reading.
// Two forms of the same arrays (CheckpointForm): v8-serialized for other instances (durable sessions), or raw
// sections in memory the worker reuses for its own process's crash recovery.

import { serialize, deserialize } from 'node:v8';
import { performance } from 'node:perf_hooks';
import { Agent, type AgentId, type AgentState, type CompiledTree } from '../../bt/index.js';
import { LodTable, type PackedLod } from './lod.js';
import { FreeBuffers } from './free-buffers.js';
// Arrays of numbers kept as numbers, as the row batches keep them.
import { isVector, readVector, writeVector } from './vectors.js';
// The engine's one code generation site and its template (as host.ts's row writers).
import { CODE_GENERATION, generate, joinCode, js, literal } from '../../bt/codegen.js';

/**
 * What `packAgents` serializes. Per agent k (in slot order): its slot, id, label, tree (index into `trees`), its
 * node statuses and numeric slots (tree-sized runs of `status` / `numbers`), five scalars (rng, seq, time, dt,
 * stopped) and its blackboard values in declared-key order. `self` is null (0), the session's fields in order
 * (1: values in `selfValues`), or any other object (2: in `selfOther`).
 */
interface Packed {
  /**
   * 4: the local form (writeLocal: raw sections, never stored outside this process); 3: arrays of numbers in the
   * observations' column as VECTOR values (written only when there are some); 2: numeric columns as PackedNumbers;
   * 1: as Float64Arrays. Durable sessions keep portable checkpoints in Redis (SessionExport), so versions 1 to 3 are
   * read; an older version refuses a v3 one (docs/durability.md).
   */
  v: 1 | 2 | 3 | 4;
  count: number;
  trees: string[];
  /** Per entry of `trees`: the compiled tree's hash (a hot reload makes a new version under the same name). */
  hashes: string[];
  treeOf: Uint16Array;
  slots: Int32Array;
  ids: PackedColumn;
  /** [k, label] of the agents whose label is not empty. */
  labels: Array<[number, string]>;
  status: Uint8Array;
  numbers: Float64Array | PackedNumbers;
  scalars: Float64Array | PackedNumbers;
  bb: PackedColumn;
  selfKind: Uint8Array;
  selfValues: PackedColumn;
  selfOther: unknown[];
  world: unknown;
  /** Level of detail (lod.ts), per packed agent; absent when the session's agents all tick every tick. */
  lod?: PackedLod;
  /** Tree time of the host's last tick of the session (NaN: none): level of detail's dt after a restore. */
  previous?: number;
}

/**
 * A list of values: numbers, booleans and null in typed arrays (serialized as memory copies), the rest in `other`;
 * in v3, arrays of numbers (an observation's positions) in `vectors` as their length and numbers.
 */
interface PackedColumn {
  length: number;
  tags: Uint8Array;
  nums: Float64Array | PackedNumbers;
  other: unknown[];
  vectors?: Float64Array;
}

/**
 * The two forms of a checkpoint's bytes. `portable`: the Packed object v8-serialized (v2, or v3 with observations'
 * arrays of numbers), which other instances and versions read: durable sessions' exports, kept in Redis. `local`
 * (v4): the same arrays as raw sections after a small serialized head, written into memory this thread reuses —
 * buffers of earlier local checkpoints the main thread gives back (giveCheckpointMemory) — for crash recovery in
 * this process, whose checkpoints never leave it. v8.serialize writes into a new buffer that grows by doubling: at
 * 20,000 agents, 3.4 MB of fresh memory a pack for the kernel to fault in page by page, which more than doubled a
 * pack's time on the service's machine (docs/capacity.md, *Round thirty-one*).
 */
export type CheckpointForm = 'portable' | 'local';

/**
 * Float64s packed by kind (v2): a zero takes 1 byte, an int32 5, any other number 9 (instead of 8 each). Agents'
 * numeric slots are mostly zeros and small integers (cursors, counters, seqs): a `guard` agent's checkpoint
 * shrinks from ~314 to ~170 bytes, which the main thread keeps per agent and the worker allocates anew each time.
 */
interface PackedNumbers {
  kinds: Uint8Array;
  ints: Int32Array;
  floats: Float64Array;
}

/** Kinds of packed numbers: 0 a zero (the zero-filled kinds array's default), INT an int32, FLOAT any other. */
const INT = 1;
const FLOAT = 2;

/**
 * Float64s packed as they are written (v2's PackedNumbers, the same bytes as packing a Float64Array of them
 * afterwards): a kind per number, then the int32s and the other numbers in their own arrays. A writer is reused
 * from pack to pack (`reset`): its int32s and other numbers grow as they come, not to the worst case up front.
 */
class NumberWriter {
  length = 0;
  private nInts = 0;
  private nFloats = 0;
  private kinds: Uint8Array;
  private ints: Int32Array;
  private floats: Float64Array;
  constructor(capacity: number) {
    this.kinds = new Uint8Array(Math.max(16, capacity)); // zero-filled: every number a zero until written otherwise
    this.ints = new Int32Array(Math.max(16, capacity >> 2));
    this.floats = new Float64Array(Math.max(16, capacity >> 2));
  }

  /** Empties the writer for a pack of about `capacity` numbers, keeping its arrays (the kinds zeroed again). */
  reset(capacity: number): void {
    if (this.kinds.length < capacity) this.kinds = new Uint8Array(capacity);
    else this.kinds.fill(0, 0, this.length);
    this.length = 0;
    this.nInts = 0;
    this.nFloats = 0;
  }

  /** Bytes its arrays hold. */
  get bytes(): number {
    return this.kinds.byteLength + this.ints.byteLength + this.floats.byteLength;
  }

  push(v: number): void {
    const i = this.length++;
    if (i === this.kinds.length) this.kinds = grown(this.kinds, i * 2);
    if (v === 0) {
      // -0 is not an int32 (it would come back as 0): a float.
      if (Object.is(v, -0)) this.float(i, v);
    } else if ((v | 0) === v) {
      this.kinds[i] = INT;
      if (this.nInts === this.ints.length) this.ints = grown(this.ints, this.nInts * 2);
      this.ints[this.nInts++] = v;
    } else this.float(i, v);
  }

  /**
   * push() of `src[from]` .. `src[to - 1]`, in order: an agent's numeric slots, room made once for all of them (a
   * call per number, each checking its own room: push was 18 % of a pack's time, docs/capacity.md "Round twenty-five").
   */
  pushRange(src: Float64Array, from: number, to: number): void {
    const n = to - from;
    const start = this.length;
    if (start + n > this.kinds.length) this.kinds = grown(this.kinds, Math.max(this.kinds.length * 2, start + n));
    if (this.nInts + n > this.ints.length) this.ints = grown(this.ints, Math.max(this.ints.length * 2, this.nInts + n));
    if (this.nFloats + n > this.floats.length) this.floats = grown(this.floats, Math.max(this.floats.length * 2, this.nFloats + n));
    const kinds = this.kinds;
    const ints = this.ints;
    const floats = this.floats;
    let nInts = this.nInts;
    let nFloats = this.nFloats;
    for (let j = 0; j < n; j++) {
      const v = src[from + j]!;
      if (v === 0) {
        if (!Object.is(v, -0)) continue; // a zero: its kind is already 0 (a sign test, not a division)
        kinds[start + j] = FLOAT;
        floats[nFloats++] = v;
      } else if ((v | 0) === v) {
        kinds[start + j] = INT;
        ints[nInts++] = v;
      } else {
        kinds[start + j] = FLOAT;
        floats[nFloats++] = v;
      }
    }
    this.length = start + n;
    this.nInts = nInts;
    this.nFloats = nFloats;
  }

  /** Appends a zero (nothing but its kind, 0, which the zero-filled array already holds). */
  zero(): void {
    const i = this.length++;
    if (i === this.kinds.length) this.kinds = grown(this.kinds, i * 2);
  }

  private float(i: number, v: number): void {
    this.kinds[i] = FLOAT;
    if (this.nFloats === this.floats.length) this.floats = grown(this.floats, this.nFloats * 2);
    this.floats[this.nFloats++] = v;
  }

  /** Views of what was written (serialize copies a view's bytes only). */
  done(): PackedNumbers {
    return { kinds: this.kinds.subarray(0, this.length), ints: this.ints.subarray(0, this.nInts), floats: this.floats.subarray(0, this.nFloats) };
  }
}

/** A copy of `a` in a new array of `n` elements. */
function grown<T extends Uint8Array | Int32Array | Float64Array>(a: T, n: number): T {
  const out = new (a.constructor as new (n: number) => T)(n);
  out.set(a);
  return out;
}

function unpackNumbers(p: Float64Array | PackedNumbers): Float64Array {
  if (p instanceof Float64Array) return p; // a v1 checkpoint
  const n = p.kinds.length;
  const out = new Float64Array(n);
  let ints = 0;
  let floats = 0;
  for (let i = 0; i < n; i++) {
    const k = p.kinds[i];
    if (k === INT) out[i] = p.ints[ints++]!;
    else if (k === FLOAT) out[i] = p.floats[floats++]!;
  }
  return out;
}

/** A column with its numbers as a Float64Array again (read reads them so). */
function unpackColumn(c: PackedColumn): PackedColumn & { nums: Float64Array } {
  return { ...c, nums: unpackNumbers(c.nums) };
}

const NUM = 0;
const TRUE = 1;
const FALSE = 2;
const NULL = 3;
const OTHER = 4;
const UNDEFINED = 5;
/** An array of numbers (v3, observations only): its number is where its length and numbers start in `vectors`. */
const VECTOR = 6;

/**
 * A growable Column being written, its numbers packed as they come (v2); reused from pack to pack (`reset`).
 * `vectors`: arrays of numbers are kept as numbers (VECTOR) rather than as arrays in `other`, which serialize walks
 * one by one (a position per observation doubled a checkpoint's time). Only for observations: the wire's decoders
 * make them, so such an array is never more than its numbers (no holes, no properties of its own, no other prototype).
 */
class ColumnWriter {
  length = 0;
  private tags: Uint8Array;
  private readonly nums: NumberWriter;
  private other: unknown[] = [];
  private vectors: Float64Array | null;
  private nVectors = 0;
  constructor(capacity: number, vectors = false) {
    this.tags = new Uint8Array(Math.max(16, capacity));
    this.nums = new NumberWriter(capacity);
    this.vectors = vectors ? new Float64Array(16) : null; // grown as arrays come: many games send none
  }

  /** Empties the column for a pack of about `capacity` values. */
  reset(capacity: number): void {
    if (this.tags.length < capacity) this.tags = new Uint8Array(capacity);
    this.length = 0;
    this.nums.reset(capacity);
    this.other = [];
    this.nVectors = 0;
  }

  /** Bytes its arrays hold. */
  get bytes(): number {
    return this.tags.byteLength + this.nums.bytes + (this.vectors?.byteLength ?? 0);
  }

  push(v: unknown): void {
    const i = this.length++;
    if (i === this.tags.length) this.tags = grown(this.tags, i * 2);
    // A value that is not a number has 0 as its number, but an OTHER, which has its index in `other`.
    if (typeof v === 'number') {
      this.tags[i] = NUM;
      this.nums.push(v);
      return;
    }
    if (v === true) this.tags[i] = TRUE;
    else if (v === false) this.tags[i] = FALSE;
    else if (v === null) this.tags[i] = NULL;
    else if (v === undefined) this.tags[i] = UNDEFINED;
    else if (this.vectors !== null && isVector(v)) {
      this.tags[i] = VECTOR;
      this.nums.push(this.nVectors);
      this.vector(v);
      return;
    } else {
      this.tags[i] = OTHER;
      this.nums.push(this.other.length);
      this.other.push(v);
      return;
    }
    this.nums.zero();
  }

  private vector(v: readonly number[]): void {
    const n = v.length;
    let vectors = this.vectors!;
    const at = this.nVectors;
    if (at + 1 + n > vectors.length) vectors = this.vectors = grown(vectors, Math.max(vectors.length * 2, at + 1 + n));
    writeVector(vectors, at, v);
    this.nVectors = at + 1 + n;
  }

  done(): PackedColumn {
    const column: PackedColumn = { length: this.length, tags: this.tags.subarray(0, this.length), nums: this.nums.done(), other: this.other };
    if (this.nVectors > 0) column.vectors = this.vectors!.subarray(0, this.nVectors);
    return column;
  }
}

function read(c: PackedColumn & { nums: Float64Array }, i: number): unknown {
  switch (c.tags[i]) {
    case NUM:
      return c.nums[i];
    case TRUE:
      return true;
    case FALSE:
      return false;
    case NULL:
      return null;
    case UNDEFINED:
      return undefined;
    case VECTOR:
      return readVector(c.vectors!, c.nums[i]!);
    default:
      return c.other[c.nums[i]!];
  }
}

const SCALARS = 5;
/** A new packer's first guess of an agent's statuses and numeric slots (both grow as they come). */
const STATUSES_PER_AGENT = 16;
const NUMBERS_PER_AGENT = 24;

/**
 * Serializes the agents (by slot; null: empty) and the world. Measured at 25,000 guard agents: ~30× cheaper than
 * `exportState()` per agent and a structured clone of the list (no per-agent arrays or object copies).
 */
export function packAgents(
  agents: ReadonlyArray<Agent | null>,
  fields: readonly string[] | null,
  world: unknown,
  lod: LodTable | null = null,
  previous = Number.NaN,
  form: CheckpointForm = 'portable',
): Uint8Array {
  const packing = new AgentPacking(agents, fields);
  packing.step(Infinity);
  return packing.finish(world, lod, previous, form);
}

/** Agents packed between two looks at the clock. */
const PACK_STEP = 64;

/**
 * packAgents a part at a time (a worker packs a large session between its other messages, slicer.ts): `step`
 * until it says done, then `finish`. The agents must not change meanwhile — the worker holds the session's other
 * messages until the pack is finished — so the bytes are packAgents' own.
 */
export class AgentPacking {
  private readonly packer: Packer;
  private next = 0;
  /** Agents packed once `finish` gave the bytes (the packer is another pack's then). */
  private packed = -1;
  /** Once `finish` gave local bytes: true when they were written into memory given back (giveCheckpointMemory). */
  reused = false;

  /**
   * No pass over the agents to size the pack first (a tenth of its time as a loop of its own): the slots bound the
   * agents, and statuses and numbers grow as they come, in a packer whose arrays are kept from pack to pack.
   */
  constructor(
    private readonly agents: ReadonlyArray<Agent | null>,
    fields: readonly string[] | null,
  ) {
    this.packer = takePacker(agents.length, fields);
  }

  /** Agents packed so far: all of them once `step` said done. */
  get count(): number {
    return this.packed >= 0 ? this.packed : this.packer.added;
  }

  /** Packs agents until `until` (performance.now() time; Infinity: all of them). True once every agent is packed. */
  step(until: number): boolean {
    const agents = this.agents;
    const packer = this.packer;
    let slot = this.next;
    while (slot < agents.length) {
      const to = Math.min(agents.length, slot + PACK_STEP);
      for (; slot < to; slot++) {
        const a = agents[slot];
        if (a !== null && a !== undefined) packer.add(slot, a);
      }
      if (slot < agents.length && until !== Infinity && performance.now() >= until) break;
    }
    this.next = slot;
    return slot >= agents.length;
  }

  /** The bytes, once `step` said done, in `form`. */
  finish(world: unknown, lod: LodTable | null, previous: number, form: CheckpointForm = 'portable'): Uint8Array {
    const packed = this.packer.done(world);
    this.packed = packed.count;
    if (lod !== null) packed.lod = lod.pack(Array.from(packed.slots));
    if (!Number.isNaN(previous)) packed.previous = previous;
    let bytes: Uint8Array;
    try {
      if (form === 'local') {
        const local = writeLocal(packed);
        bytes = local.bytes;
        this.reused = local.reused;
      } else {
        bytes = serialize(packed);
      }
    } finally {
      // The packed arrays are views of the packer's own, copied into the bytes: the next pack may write them again.
      releasePacker(this.packer);
    }
    return bytes;
  }
}

/**
 * The agents of one checkpoint being packed, one `add` per agent. Packing runs once per checkpoint period, a
 * long loop every time: the per-agent work is a method of its own so that it is optimized as a whole function
 * after the first checkpoints (a loop in one long function is compiled on stack, mid-loop, and was seen to
 * drop back and recompile at every checkpoint). Copies are plain loops (TypedArray#set is a call into the
 * runtime per agent), the last agent's tree is kept at hand, blackboard and observation values are read by
 * generated code (one constant-name load per key), and numbers are packed as they are written.
 *
 * A thread keeps its last packer's arrays for the next pack (takePacker, releasePacker): allocated anew for each
 * checkpoint, they were megabytes of zero-filled memory per session every checkpoint period, which the GC's
 * helpers then had to account for.
 */
class Packer {
  private trees: string[] = [];
  private hashes: string[] = [];
  private readonly treeIndex = new Map<CompiledTree, number>();
  private bbReaders: ValuesReader[] = [];
  private readonly ids: ColumnWriter;
  private readonly bb: ColumnWriter;
  private readonly selfValues: ColumnWriter;
  private readonly numbers: NumberWriter;
  private readonly scalars: NumberWriter;
  private treeOf: Uint16Array;
  private slots: Int32Array;
  private labels: Array<[number, string]> = [];
  private status: Uint8Array;
  private selfKind: Uint8Array;
  private selfOther: unknown[] = [];
  private fields: readonly string[] | null = null;
  private readSelf: ValuesReader | null = null;
  private k = 0;
  private s = 0;
  private lastTree: CompiledTree | null = null;
  private t = 0;
  private readBb: ValuesReader | null = null;
  /** An agent's scalars on their way into `scalars`. */
  private readonly five = new Float64Array(SCALARS);

  constructor(count: number, fields: readonly string[] | null) {
    this.ids = new ColumnWriter(count);
    this.bb = new ColumnWriter(count * 2);
    this.selfValues = new ColumnWriter(count * (fields?.length ?? 0), true);
    this.numbers = new NumberWriter(count * NUMBERS_PER_AGENT);
    this.scalars = new NumberWriter(count * SCALARS);
    this.treeOf = new Uint16Array(count);
    this.slots = new Int32Array(count);
    this.status = new Uint8Array(count * STATUSES_PER_AGENT);
    this.selfKind = new Uint8Array(count);
    this.reset(count, fields);
  }

  /** Empties the packer for a pack of at most `count` agents, keeping its arrays (statuses and numbers grow as they come). */
  reset(count: number, fields: readonly string[] | null): void {
    this.trees = [];
    this.hashes = [];
    this.treeIndex.clear();
    this.bbReaders = [];
    this.labels = [];
    this.selfOther = [];
    this.ids.reset(count);
    this.bb.reset(count * 2);
    this.selfValues.reset(count * (fields?.length ?? 0));
    this.numbers.reset(0);
    this.scalars.reset(count * SCALARS);
    if (this.treeOf.length < count) {
      this.treeOf = new Uint16Array(count);
      this.slots = new Int32Array(count);
      this.selfKind = new Uint8Array(count);
    }
    this.fields = fields;
    this.readSelf = fields === null ? null : valuesReader(fields);
    this.k = 0;
    this.s = 0;
    this.lastTree = null;
    this.t = 0;
    this.readBb = null;
  }

  /** Agents added since the last reset. */
  get added(): number {
    return this.k;
  }

  /** Bytes its arrays hold. */
  get bytes(): number {
    return this.ids.bytes + this.bb.bytes + this.selfValues.bytes + this.numbers.bytes + this.scalars.bytes + this.treeOf.byteLength + this.slots.byteLength + this.status.byteLength + this.selfKind.byteLength;
  }

  add(slot: number, a: Agent): void {
    const k = this.k++;
    if (a.tree !== this.lastTree) this.useTree(a.tree);
    this.treeOf[k] = this.t;
    this.slots[k] = slot;
    this.ids.push(a.id);
    if (a.label !== '') this.labels.push([k, a.label]);
    // Statuses and numbers from the chunks the agent's views are views of (the views are two objects more to reach).
    const tree = this.lastTree!;
    const st = a.statusChunk;
    const at = a.statusAt;
    const n = tree.nodeCount;
    const s = this.s;
    if (s + n > this.status.length) this.status = grown(this.status, Math.max(this.status.length * 2, s + n));
    const status = this.status;
    for (let j = 0; j < n; j++) status[s + j] = st[at + j]!;
    this.s = s + n;
    const chunk = a.clockChunk;
    const clock = a.clock;
    const numbers = this.numbers;
    numbers.pushRange(chunk, clock - tree.slotCount, clock);
    // The five scalars through one run, as the numeric slots (five calls, each checking its room, cost as much).
    const five = this.five;
    five[0] = chunk[clock + 2]!; // the random generator's state
    five[1] = a.seq;
    five[2] = chunk[clock]!; // time
    five[3] = chunk[clock + 1]!; // dt
    five[4] = a.stopped ? 1 : 0;
    this.scalars.pushRange(five, 0, SCALARS);
    this.readBb!(a.bb, this.bb);
    const self = a.self;
    if (self === null || self === undefined) this.selfKind[k] = 0;
    else if (this.readSelf !== null && hasExactly(self, this.fields!)) {
      this.selfKind[k] = 1;
      this.readSelf(self as Record<string, unknown>, this.selfValues);
    } else {
      this.selfKind[k] = 2;
      this.selfOther.push(self);
    }
  }

  private useTree(tree: CompiledTree): void {
    this.lastTree = tree;
    let t = this.treeIndex.get(tree);
    if (t === undefined) {
      t = this.trees.length;
      this.trees.push(tree.name);
      this.hashes.push(tree.hash);
      this.treeIndex.set(tree, t);
      this.bbReaders.push(valuesReader([...tree.blackboardKeys]));
    }
    this.t = t;
    this.readBb = this.bbReaders[t]!;
  }

  /**
   * What serialize writes, its properties in the order they have always had (the same bytes as before). Its arrays
   * are views of the packer's: serialize them before the packer packs again.
   */
  done(world: unknown): Packed {
    const count = this.k;
    const selfValues = this.selfValues.done();
    return {
      // v2 where no observation held an array of numbers: the same bytes as before v3, which older versions read.
      v: selfValues.vectors === undefined ? 2 : 3,
      count: this.k,
      trees: this.trees,
      hashes: this.hashes,
      treeOf: this.treeOf.subarray(0, count),
      slots: this.slots.subarray(0, count),
      labels: this.labels,
      status: this.status.subarray(0, this.s),
      selfKind: this.selfKind.subarray(0, count),
      selfOther: this.selfOther,
      world,
      numbers: this.numbers.done(),
      scalars: this.scalars.done(),
      ids: this.ids.done(),
      bb: this.bb.done(),
      selfValues,
    };
  }
}

/** The packer a thread keeps between packs (none while one packs: two packs at once each have their own). */
let sparePacker: Packer | null = null;
/** A packer larger than this is not kept (a session of a hundred thousand agents or more: its memory is given back). */
const KEEP_PACKER_BYTES = 8 << 20;

function takePacker(count: number, fields: readonly string[] | null): Packer {
  const p = sparePacker;
  if (p === null) return new Packer(count, fields);
  sparePacker = null;
  p.reset(count, fields);
  return p;
}

function releasePacker(p: Packer): void {
  if (p.bytes <= KEEP_PACKER_BYTES) sparePacker = p;
}

/** Pushes `obj`'s values of a fixed list of keys, in that order, onto a column. */
type ValuesReader = (obj: Record<string, unknown>, column: ColumnWriter) => void;

const readers = new Map<string, ValuesReader>();

/**
 * A reader for these keys: generated code with one constant-name load per key (loads from one hidden class stay
 * monomorphic, where a loop of `obj[keys[i]]` goes through the megamorphic cache), the same loads as the loop,
 * so the same values. Names enter the source only through `literal`. Cached by key list; a loop without code
 * generation.
 */
function valuesReader(keys: readonly string[]): ValuesReader {
  const cacheKey = JSON.stringify(keys);
  let reader = readers.get(cacheKey);
  if (reader !== undefined) return reader;
  if (CODE_GENERATION) {
    const body = joinCode(keys.map((key) => js`  column.push(obj[${literal(key)}]);\n`));
    reader = generate([], js`return function readValues(obj, column) {\n${body}};`, []) as ValuesReader;
  } else {
    reader = (obj, column) => {
      for (let i = 0; i < keys.length; i++) column.push(obj[keys[i]!]);
    };
  }
  if (readers.size < 256) readers.set(cacheKey, reader);
  return reader;
}

/** Rebuilds the agents of `packAgents` bytes: [slot, agent] pairs and the world. Throws if a tree is missing or changed. */
export function unpackAgents(
  bytes: Uint8Array,
  fields: readonly string[] | null,
  trees: { get(name: string): CompiledTree | undefined },
): { agents: Array<[number, Agent]>; world: unknown; lod: LodTable | null; previous: number } {
  const packed = isLocal(bytes) ? readLocal(bytes) : (deserialize(bytes) as Packed);
  if (packed.v !== 1 && packed.v !== 2 && packed.v !== 3 && packed.v !== 4) throw new Error(`unsupported checkpoint version ${String(packed.v)}`);
  const p = {
    ...packed,
    numbers: unpackNumbers(packed.numbers),
    scalars: unpackNumbers(packed.scalars),
    ids: unpackColumn(packed.ids),
    bb: unpackColumn(packed.bb),
    selfValues: unpackColumn(packed.selfValues),
  };
  const compiled = p.trees.map((name, i) => {
    const tree = trees.get(name);
    if (tree === undefined) throw new Error(`host has no tree '${name}'`);
    // A reload between the checkpoint and the crash (or an agent kept on an older version): the state's layout
    // belongs to another version, so restoring it would misread it. Refuse; recovery then reports the agents lost.
    if (tree.hash !== p.hashes[i]) throw new Error(`tree '${name}' is version ${tree.hash} here, the checkpoint has ${String(p.hashes[i])}`);
    return { tree, keys: [...tree.blackboardKeys] };
  });
  const agents: Array<[number, Agent]> = [];
  const labels = new Map(p.labels);
  let s = 0;
  let n = 0;
  let b = 0;
  let sv = 0;
  let so = 0;
  for (let k = 0; k < p.count; k++) {
    const { tree, keys } = compiled[p.treeOf[k]!]!;
    const bb: Record<string, unknown> = {};
    for (const key of keys) bb[key] = read(p.bb, b++);
    let self: unknown = null;
    if (p.selfKind[k] === 1) {
      const obs: Record<string, unknown> = {};
      for (const f of fields!) obs[f] = read(p.selfValues, sv++);
      self = obs;
    } else if (p.selfKind[k] === 2) self = p.selfOther[so++];
    const at = k * SCALARS;
    const state: AgentState = {
      v: 1,
      tree: tree.name,
      treeHash: tree.hash,
      id: read(p.ids, k) as AgentId,
      label: labels.get(k) ?? '',
      status: Array.from(p.status.subarray(s, s + tree.nodeCount)),
      slots: Array.from(p.numbers.subarray(n, n + tree.slotCount)),
      bb,
      self,
      rng: p.scalars[at]!,
      seq: p.scalars[at + 1]!,
      time: p.scalars[at + 2]!,
      dt: p.scalars[at + 3]!,
      stopped: p.scalars[at + 4] === 1,
    };
    s += tree.nodeCount;
    n += tree.slotCount;
    agents.push([p.slots[k]!, Agent.restore(tree, state)]);
  }
  return { agents, world: p.world, lod: p.lod === undefined ? null : LodTable.unpack(p.lod, p.slots), previous: p.previous ?? Number.NaN };
}

/** True when `obj` is a plain object whose own keys are exactly `fields`, in that order (a row's observation). */
function hasExactly(obj: unknown, fields: readonly string[]): boolean {
  if (typeof obj !== 'object' || Array.isArray(obj)) return false;
  let i = 0;
  for (const key in obj) {
    if (key !== fields[i]) return false;
    i++;
  }
  return i === fields.length;
}

/** A local checkpoint's first four bytes, 'CHK4' (a v8 serialization starts with 0xFF): then the head's length. */
const LOCAL_MAGIC = [0x43, 0x48, 0x4b, 0x34] as const;
/** The sections of a local checkpoint, in order: each one's array type (the head lists their byte lengths). */
const SECTIONS = [
  // treeOf, slots, status, selfKind
  Uint16Array, Int32Array, Uint8Array, Uint8Array,
  // numbers, then scalars: kinds, ints, floats
  Uint8Array, Int32Array, Float64Array,
  Uint8Array, Int32Array, Float64Array,
  // ids, bb, selfValues: tags, then their numbers' kinds, ints and floats, then vectors
  Uint8Array, Uint8Array, Int32Array, Float64Array, Float64Array,
  Uint8Array, Uint8Array, Int32Array, Float64Array, Float64Array,
  Uint8Array, Uint8Array, Int32Array, Float64Array, Float64Array,
  // lod: every, wait, last (when the session has level of detail)
  Int32Array, Int32Array, Float64Array,
] as const;
/** Sections without level of detail. */
const BASE_SECTIONS = SECTIONS.length - 3;

/** What a local checkpoint's head holds (v8-serialized): everything of Packed that is not a typed array. */
interface LocalHead {
  v: 4;
  count: number;
  trees: string[];
  hashes: string[];
  labels: Array<[number, string]>;
  selfOther: unknown[];
  world: unknown;
  /** `other` of ids, bb and selfValues. */
  other: [unknown[], unknown[], unknown[]];
  /** Byte length of each section, in SECTIONS order (without the last three when there is no level of detail). */
  lengths: number[];
  previous?: number;
}

/** Local checkpoints from this size on are written into reused memory, in sizes rounded up to it; smaller ones take new memory. */
export const MIN_REUSED_CHECKPOINT_BYTES = 64 * 1024;
/** Given-back memory a thread keeps at most (the largest sessions' buffers are left to the collector beyond it). */
const MAX_KEPT_CHECKPOINT_BYTES = 16 * 1024 * 1024;
/** This thread's given-back memory, by size. */
const memory = new FreeBuffers<ArrayBuffer>(MAX_KEPT_CHECKPOINT_BYTES);

/**
 * Buffers of local checkpoints the main thread no longer keeps (a newer one replaced them), for this thread's next
 * local packs. Buffers smaller than MIN_REUSED_CHECKPOINT_BYTES are left to the collector.
 */
export function giveCheckpointMemory(buffers: readonly ArrayBuffer[]): void {
  // A detached buffer's length is 0.
  for (const b of buffers) if (b.byteLength >= MIN_REUSED_CHECKPOINT_BYTES) memory.give(b);
}

/** `n` rounded up to a multiple of MIN_REUSED_CHECKPOINT_BYTES. */
function roundUp(n: number): number {
  return Math.ceil(n / MIN_REUSED_CHECKPOINT_BYTES) * MIN_REUSED_CHECKPOINT_BYTES;
}

function align8(n: number): number {
  return (n + 7) & ~7;
}

function bytesOf(a: Uint8Array | Uint16Array | Int32Array | Float64Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

const NO_VECTORS = new Float64Array(0);

/** Numbers as the packer writes them (only an old checkpoint read back has a Float64Array). */
function packedNumbers(n: Float64Array | PackedNumbers): PackedNumbers {
  return n as PackedNumbers;
}

function localSections(p: Packed): Array<Uint8Array | Uint16Array | Int32Array | Float64Array> {
  const column = (c: PackedColumn) => {
    const nums = packedNumbers(c.nums);
    return [c.tags, nums.kinds, nums.ints, nums.floats, c.vectors ?? NO_VECTORS];
  };
  const n = packedNumbers(p.numbers);
  const sc = packedNumbers(p.scalars);
  const sections = [p.treeOf, p.slots, p.status, p.selfKind, n.kinds, n.ints, n.floats, sc.kinds, sc.ints, sc.floats, ...column(p.ids), ...column(p.bb), ...column(p.selfValues)];
  if (p.lod !== undefined) sections.push(p.lod.every, p.lod.wait, p.lod.last);
  return sections;
}

/**
 * `p` as a local checkpoint: 'CHK4', the head's length (uint32, little-endian), the head, then each section from an
 * offset that is a multiple of 8 (padding zeroed: the same agents give the same bytes, whatever the memory held).
 * Typed arrays are written in this machine's byte order: local bytes are read by the same process only.
 */
function writeLocal(p: Packed): { bytes: Uint8Array; reused: boolean } {
  const sections = localSections(p);
  const ids = p.ids;
  const bb = p.bb;
  const selfValues = p.selfValues;
  const head: LocalHead = {
    v: 4,
    count: p.count,
    trees: p.trees,
    hashes: p.hashes,
    labels: p.labels,
    selfOther: p.selfOther,
    world: p.world,
    other: [ids.other, bb.other, selfValues.other],
    lengths: sections.map((a) => a.byteLength),
  };
  if (p.previous !== undefined) head.previous = p.previous;
  const headBytes = serialize(head);
  let size = align8(8 + headBytes.length);
  for (const a of sections) size += align8(a.byteLength);
  let buffer: ArrayBuffer | undefined;
  let reused = false;
  if (size >= MIN_REUSED_CHECKPOINT_BYTES) {
    buffer = memory.take(roundUp(size));
    reused = buffer !== undefined;
    // New memory with an eighth more room: a session's next checkpoints, and another session's of about its size,
    // fit it (an exact size fitted only the smaller of two sessions, half the packs). Room never written is never
    // faulted in.
    buffer ??= new ArrayBuffer(roundUp(size + (size >> 3)));
  } else {
    buffer = new ArrayBuffer(size);
  }
  const out = new Uint8Array(buffer, 0, size);
  out.set(LOCAL_MAGIC, 0);
  const length = headBytes.length;
  out[4] = length & 0xff;
  out[5] = (length >>> 8) & 0xff;
  out[6] = (length >>> 16) & 0xff;
  out[7] = length >>> 24;
  out.set(headBytes, 8);
  let at = 8 + length;
  for (const a of sections) {
    const start = align8(at);
    out.fill(0, at, start);
    out.set(bytesOf(a), start);
    at = start + a.byteLength;
  }
  out.fill(0, at, size);
  return { bytes: out, reused };
}

function isLocal(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && bytes[0] === LOCAL_MAGIC[0] && bytes[1] === LOCAL_MAGIC[1] && bytes[2] === LOCAL_MAGIC[2] && bytes[3] === LOCAL_MAGIC[3];
}

/** The Packed of local bytes, its arrays views of the bytes (a copy first if the bytes do not start on a multiple of 8). */
function readLocal(bytes: Uint8Array): Packed {
  const aligned = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const length = (aligned[4]! | (aligned[5]! << 8) | (aligned[6]! << 16) | (aligned[7]! << 24)) >>> 0;
  const head = deserialize(aligned.subarray(8, 8 + length)) as LocalHead;
  if (head.lengths.length !== BASE_SECTIONS && head.lengths.length !== SECTIONS.length) throw new Error(`checkpoint v4: ${head.lengths.length} sections`);
  let at = align8(8 + length);
  const views = head.lengths.map((n, i) => {
    const Type = SECTIONS[i]!;
    if (at + n > aligned.length) throw new Error('checkpoint v4: truncated');
    const view = new Type(aligned.buffer as ArrayBuffer, aligned.byteOffset + at, n / Type.BYTES_PER_ELEMENT);
    at = align8(at + n);
    return view;
  });
  // The sections in SECTIONS order, each typed by where it goes.
  let k = 0;
  const next = (): never => views[k++] as never;
  const numbers = (): PackedNumbers => ({ kinds: next(), ints: next(), floats: next() });
  const column = (other: unknown[]): PackedColumn => {
    const tags: Uint8Array = next();
    const nums = numbers();
    const vectors: Float64Array = next();
    const c: PackedColumn = { length: tags.length, tags, nums, other };
    if (vectors.length > 0) c.vectors = vectors;
    return c;
  };
  const packed: Packed = {
    v: 4,
    count: head.count,
    trees: head.trees,
    hashes: head.hashes,
    treeOf: next(),
    slots: next(),
    labels: head.labels,
    status: next(),
    selfKind: next(),
    numbers: numbers(),
    scalars: numbers(),
    ids: column(head.other[0]),
    bb: column(head.other[1]),
    selfValues: column(head.other[2]),
    selfOther: head.selfOther,
    world: head.world,
  };
  if (k < views.length) packed.lod = { every: next(), wait: next(), last: next() };
  if (head.previous !== undefined) packed.previous = head.previous;
  return packed;
}
