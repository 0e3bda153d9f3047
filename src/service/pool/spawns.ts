// Spawn orders as they travel to a worker: packed in a few typed arrays and string tables instead of one array per
// agent. postMessage clones a message object by object, and a spawn of thousands of agents as one small array each
// took the main thread's structured clone (and the worker's deserializer) a good part of a large spawn
// (docs/capacity.md, "Bursts"); typed arrays are copied in one piece, tree names and labels once per message.

import type { AgentId } from '../../bt/index.js';
import type { SpawnOrder } from './wire.js';

/** Agents for one worker: agent `i` is in `slots[i]`, `ids[i]` (NaN: its id is `names[i]`), and so on. */
export interface SpawnBatch {
  readonly count: number;
  readonly slots: Int32Array;
  /** Integer ids; NaN where the id is a string (then in `names`). */
  readonly ids: Float64Array;
  /** String ids by position ('' where the id is an integer); null when every id is an integer. */
  readonly names: string[] | null;
  /** Distinct tree names; `tree[i]` indexes it. */
  readonly trees: string[];
  readonly tree: Uint16Array;
  /** Distinct labels; `label[i]` indexes it. */
  readonly labels: string[];
  readonly label: Uint16Array;
  /** Seeds; `seeded[i]` 0: the agent has none. */
  readonly seeds: Float64Array;
  readonly seeded: Uint8Array;
  /** Tick intervals (level of detail); null: every agent ticks every tick. */
  readonly every: Uint32Array | null;
  /** Initial blackboards, [position, values] (few agents have one); null: none. */
  readonly bbs: Array<[number, Record<string, unknown>]> | null;
}

/** Builds one SpawnBatch of at most `capacity` agents. */
export class SpawnBatchBuilder {
  private n = 0;
  private readonly slots: Int32Array;
  private readonly ids: Float64Array;
  private names: string[] | null = null;
  private readonly trees: string[] = [];
  private readonly treeIndex = new Map<string, number>();
  private readonly tree: Uint16Array;
  private readonly labels: string[] = [];
  private readonly labelIndex = new Map<string, number>();
  private readonly label: Uint16Array;
  private readonly seeds: Float64Array;
  private readonly seeded: Uint8Array;
  private every: Uint32Array | null = null;
  private bbs: Array<[number, Record<string, unknown>]> | null = null;
  /** The previous agent's tree and label, and their indexes: spawns mostly repeat them. */
  private lastTree = '';
  private lastTreeIndex = -1;
  private lastLabel = '';
  private lastLabelIndex = -1;

  constructor(private readonly capacity: number) {
    this.slots = new Int32Array(capacity);
    this.ids = new Float64Array(capacity);
    this.tree = new Uint16Array(capacity);
    this.label = new Uint16Array(capacity);
    this.seeds = new Float64Array(capacity);
    this.seeded = new Uint8Array(capacity);
  }

  get count(): number {
    return this.n;
  }

  get full(): boolean {
    return this.n >= this.capacity;
  }

  add(slot: number, id: AgentId, tree: string, label: string, seed: number | null, bb: Record<string, unknown> | null, every: number): void {
    const i = this.n++;
    this.slots[i] = slot;
    if (typeof id === 'number') {
      this.ids[i] = id;
      if (this.names !== null) this.names.push('');
    } else {
      this.ids[i] = Number.NaN;
      if (this.names === null) this.names = Array.from({ length: i }, () => '');
      this.names.push(id);
    }
    if (tree !== this.lastTree || this.lastTreeIndex < 0) {
      this.lastTree = tree;
      this.lastTreeIndex = indexOf(tree, this.trees, this.treeIndex);
    }
    this.tree[i] = this.lastTreeIndex;
    if (label !== this.lastLabel || this.lastLabelIndex < 0) {
      this.lastLabel = label;
      this.lastLabelIndex = indexOf(label, this.labels, this.labelIndex);
    }
    this.label[i] = this.lastLabelIndex;
    if (seed !== null) {
      this.seeds[i] = seed;
      this.seeded[i] = 1;
    }
    if (every !== 1) {
      this.every ??= new Uint32Array(this.capacity).fill(1);
      this.every[i] = every;
    }
    if (bb !== null) (this.bbs ??= []).push([i, bb]);
  }

  /** The batch: trimmed copies when not full (the builder is not reused). */
  build(): SpawnBatch {
    const n = this.n;
    const cut = <T extends Int32Array | Float64Array | Uint16Array | Uint8Array | Uint32Array>(a: T): T => (n === this.capacity ? a : (a.slice(0, n) as T));
    return {
      count: n,
      slots: cut(this.slots),
      ids: cut(this.ids),
      names: this.names,
      trees: this.trees,
      tree: cut(this.tree),
      labels: this.labels,
      label: cut(this.label),
      seeds: cut(this.seeds),
      seeded: cut(this.seeded),
      every: this.every === null ? null : cut(this.every),
      bbs: this.bbs,
    };
  }
}

function indexOf(value: string, table: string[], index: Map<string, number>): number {
  let k = index.get(value);
  if (k === undefined) {
    if (table.length >= 0xffff) throw new Error('a spawn batch holds at most 65,535 distinct trees or labels');
    k = table.length;
    table.push(value);
    index.set(value, k);
  }
  return k;
}

/** Agents `from` to `to` (exclusive) of `b`, as views (for slicing on the worker; never posted). */
export function spawnPart(b: SpawnBatch, from: number, to: number): SpawnBatch {
  return {
    count: to - from,
    slots: b.slots.subarray(from, to),
    ids: b.ids.subarray(from, to),
    names: b.names === null ? null : b.names.slice(from, to),
    trees: b.trees,
    tree: b.tree.subarray(from, to),
    labels: b.labels,
    label: b.label.subarray(from, to),
    seeds: b.seeds.subarray(from, to),
    seeded: b.seeded.subarray(from, to),
    every: b.every === null ? null : b.every.subarray(from, to),
    bbs: b.bbs === null ? null : b.bbs.filter(([i]) => i >= from && i < to).map(([i, bb]) => [i - from, bb]),
  };
}

/** Agent `i` of `b` as a tuple (tests, benchmarks, and tools that read orders one by one). */
export function spawnOrderAt(b: SpawnBatch, i: number): SpawnOrder {
  const id = Number.isNaN(b.ids[i]!) ? b.names![i]! : b.ids[i]!;
  const bb = b.bbs?.find(([k]) => k === i)?.[1] ?? null;
  const order: SpawnOrder = [b.slots[i]!, id, b.trees[b.tree[i]!]!, b.labels[b.label[i]!]!, b.seeded[i] === 1 ? b.seeds[i]! : null, bb];
  const every = b.every?.[i] ?? 1;
  if (every !== 1) order.push(every);
  return order;
}

/** Tuples packed into one batch (benchmarks and tests that build orders by hand). */
export function packSpawnOrders(orders: readonly SpawnOrder[]): SpawnBatch {
  const b = new SpawnBatchBuilder(Math.max(orders.length, 0));
  for (const [slot, id, tree, label, seed, bb, every] of orders) b.add(slot, id, tree, label, seed, bb, every ?? 1);
  return b.build();
}
