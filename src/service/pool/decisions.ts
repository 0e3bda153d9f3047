// How a host's decisions travel back to the router, and how the router merges them into one Decisions.
// The travel form is chosen here and only here: the host packs (DecisionColumns), the router unpacks.
//
// Measured (13.5k decisions per reply, 7.5k actions with shared literal args + 6k done; Node 20, 2-core EPYC):
// structured clone of the tuple lists 5.3 ms to serialize + 4.9 ms to deserialize; msgpackr 1.9 + 0.8 ms;
// columns of numbers 0.16 ms to fill + 0.05 ms to clone + 0.13 ms to rebuild the tuples (the form before the
// tuples were encoded on the worker, below).
//
// Actions, cancels and done entries cross as the wire carries them: the sink encodes each tuple on the worker as the
// protocol would (written in place where the values are simple, writeActionTuple, writeCancelTuple, writeDoneTuple; else
// encodeActionTuple and its kind),
// the router merges the hosts' bytes in spawn order, and the session splices them into its `decisions` frame. The main
// thread neither reads nor writes a tuple; a reader of the values (the inspector, the HTTP transport, tests) decodes
// them when it asks (Decisions.actions, .cancels, .done). Per session tick of 280 actions: msgpackr's encodeDecisions
// of the tuples took 56–62 µs on the main thread, besides reading the args back from the worker (about 30 µs per
// reply) and rebuilding the tuples; splicing the bytes takes about 12 µs (Node 26, 2-core EPYC). Merging two hosts'
// lists (570 actions, 96 cancels, 178 done) takes 51–53 µs, against 90–119 µs when cancels and done were rebuilt as
// tuples and the merge went through lists of references.

import { threadId } from 'node:worker_threads';
import type { Agent, AgentId, DecisionSink } from '../../bt/index.js';
import {
  EncodedTuples,
  SMALL_TUPLE_BYTES,
  carve,
  encodeActionTuple,
  encodeCancelTuple,
  encodeDoneTuple,
  writeActionTuple,
  writeCancelTuple,
  writeDoneTuple,
  type ActionDecision,
  type CancelDecision,
  type DecisionsFields,
  type DoneDecision,
} from '../../protocol/index.js';
import type { Decisions } from './types.js';
import { copyBytes } from './copy-bytes.js';
import { LOG_LINES_PER_TICK, hasLogs, levelIndex, type LogColumns } from './logs.js';

const MIN_ENTRIES = 64;
/** Bytes of a tuple, to size a new buffer (it grows when a tick needs more). */
const TUPLE_BYTES = 40;

/**
 * One list of a host's decisions for one tick: `n` tuples encoded as the wire carries them, back to back in `bytes`
 * (`size` of them used); `index[2i]` is the slot of the agent that made tuple i and `index[2i + 1]` where its bytes end.
 */
export interface TupleColumn extends ColumnBuffers {
  n: number;
  size: number;
}

/**
 * One host's decisions for one tick, by agent slot: actions, cancels and done as encoded tuples (in buffers the host
 * writes again at the session's next tick: SharedColumns), errors and log lines as they are (rare).
 */
export interface DecisionColumns {
  /** `[id, seq, action, args]` tuples. */
  actions: TupleColumn;
  /** `[id, seq]` tuples. */
  cancels: TupleColumn;
  /** `[id, 'success' | 'failure']` tuples. */
  done: TupleColumn;
  errors: Array<[number, string, string]>;
  /** `log` node lines, at most LOG_LINES_PER_TICK (the router caps the session's total again). */
  logs: LogColumns;
}

/** A list's buffers. */
export interface ColumnBuffers {
  index: Float64Array;
  bytes: Uint8Array;
}

/** The buffers of a sink's three lists, as they cross once to the router: index and bytes of actions, cancels, done. */
export type ColumnBufferSet = [Float64Array, Uint8Array, Float64Array, Uint8Array, Float64Array, Uint8Array];

/**
 * One host's decisions for one tick as they cross to the router (TickReply.decisions). The lists' buffers are shared
 * memory that the host writes during a tick and the router reads while it merges, before it sends that session's next
 * tick; they cross only when the router does not hold them yet (the tick order's `columns` is not their `gen`: the
 * first tick, a list grown, a replacement worker). So a reply is a few numbers, where it transferred six buffers
 * there and back every tick (docs/capacity.md, *Round eighteen*).
 */
export interface SharedColumns {
  /** Which buffers the lists are in: unique to a sink's set of buffers in this process (any thread). */
  gen: number;
  /** `n` and `size` of actions, cancels and done, in that order. */
  used: number[];
  /** The buffers, when the router holds another `gen`; else null. */
  buffers: ColumnBufferSet | null;
  /** Null when none. */
  errors: Array<[number, string, string]> | null;
  /** Null when no line was logged and none dropped. */
  logs: LogColumns | null;
}

/** Buffer sets made on this thread; with the thread's id, a `gen` no other thread's set has. */
let buffersMade = 0;

function nextGen(): number {
  // threadId < 2^21 and 2^32 sets per thread: exact in a double.
  return threadId * 2 ** 32 + buffersMade++;
}

/** What a reply without errors or log lines reads as: shared by every such reply, never written (frozen). */
const NO_ERRORS = Object.freeze([]) as unknown as DecisionColumns['errors'];
const NO_LOGS = Object.freeze({ lines: Object.freeze([]), dropped: Object.freeze([0, 0, 0, 0]) }) as unknown as LogColumns;

/** The lists of `d` in the buffers the router holds for its host (`held`, of generation `d.gen`). */
export function columnsOf(d: SharedColumns, held: ColumnBufferSet): DecisionColumns {
  const u = d.used;
  return {
    actions: { index: held[0], bytes: held[1], n: u[0]!, size: u[1]! },
    cancels: { index: held[2], bytes: held[3], n: u[2]!, size: u[3]! },
    done: { index: held[4], bytes: held[5], n: u[4]!, size: u[5]! },
    errors: d.errors ?? NO_ERRORS,
    logs: d.logs ?? NO_LOGS,
  };
}

/**
 * The decisions of one host for one tick as the router merges them: the host's columns as they came (read in place:
 * the merge copies each list's tuples once, in their final order; keepParts copies them for a later tick), with the
 * agent in each slot (`ids`) and its spawn order (`ordinals`) when the tick was sent.
 */
export interface DecisionLists {
  readonly columns: DecisionColumns;
  readonly ids: readonly AgentId[];
  readonly ordinals: readonly number[];
  /** The host's slot order was spawn order when the tick was sent (RouterShard.slotsInSpawnOrder). */
  readonly slotsInSpawnOrder?: boolean;
}

/**
 * The DecisionSink a host ticks its agents into: set `slot` before ticking the agent in that slot
 * (an agent's decisions all come during its own tick, so the slot identifies it without a lookup).
 */
export class ColumnSink implements DecisionSink {
  /** Slot of the agent being ticked (or halted). */
  slot = 0;
  private readonly out: DecisionColumns = newColumns();
  /** Actions whose args could not be encoded (a cycle a plugin made): slot and why, for the host to stop the agent. */
  private unsendable: Array<[number, string]> | null = null;
  /** The buffers last stamped with `gen` (a list that grew has others). */
  private stamped: ColumnBufferSet | null = null;
  private gen = -1;

  /**
   * Starts the next tick's lists in the same buffers, the router having read the previous tick's (it merges a
   * reply before it sends the session's next tick). A host keeps one sink per session: each agent stores the sink it
   * ticks into, and a sink that lives on (old, like the agents) spares the collector a remembered old-to-new pointer
   * per agent per tick.
   */
  reset(): void {
    const o = this.out;
    o.actions.n = o.actions.size = o.cancels.n = o.cancels.size = o.done.n = o.done.size = 0;
    if (o.errors.length > 0) o.errors = [];
    if (hasLogs(o.logs)) o.logs = { lines: [], dropped: [0, 0, 0, 0] };
    this.unsendable = null;
    this.slot = 0;
  }

  action(agent: Agent, seq: number, action: string, args: Readonly<Record<string, unknown>>): void {
    // Written in place where writeActionTuple applies; else (and if reading the args throws: a plugin's getter) the
    // codec writes the tuple, or says why it cannot.
    const t = room(this.out.actions, ACTION_ROOM);
    let end = -1;
    try {
      end = writeActionTuple(t.bytes, t.size, t.bytes.length, agent.id, seq, action, args);
    } catch {
      end = -1;
    }
    if (end >= 0) {
      ended(t, this.slot, end);
      return;
    }
    let tuple: Uint8Array;
    try {
      tuple = encodeActionTuple(agent.id, seq, action, args);
    } catch (err) {
      (this.unsendable ??= []).push([this.slot, `action '${action}': its args cannot be sent as MessagePack (${err instanceof Error ? err.message : String(err)})`]);
      return;
    }
    append(this.out.actions, this.slot, tuple);
  }

  /** The actions dropped this tick because their args could not be encoded, once (then null until another). */
  takeUnsendable(): Array<[number, string]> | null {
    const u = this.unsendable;
    this.unsendable = null;
    return u;
  }

  // Cancels and done entries of integer and short string ids are written in place; others go through the codec.
  cancel(agent: Agent, seq: number): void {
    const t = room(this.out.cancels, pairRoom(agent.id));
    const end = writeCancelTuple(t.bytes, t.size, t.bytes.length, agent.id, seq);
    if (end < 0) append(t, this.slot, encodeCancelTuple(agent.id, seq));
    else ended(t, this.slot, end);
  }

  finished(agent: Agent, status: 'success' | 'failure'): void {
    const t = room(this.out.done, pairRoom(agent.id));
    const end = writeDoneTuple(t.bytes, t.size, t.bytes.length, agent.id, status);
    if (end < 0) append(t, this.slot, encodeDoneTuple(agent.id, status));
    else ended(t, this.slot, end);
  }

  error(_agent: Agent, code: string, message: string): void {
    this.out.errors.push([this.slot, code, message]);
  }

  log(_agent: Agent, level: string, message: string, node = -1): void {
    const logs = this.out.logs;
    // Past the cap, count only: a `log` node on 50,000 agents costs a counter, not 50,000 strings in the reply.
    const index = levelIndex(level);
    if (logs.lines.length >= LOG_LINES_PER_TICK) logs.dropped[index] = (logs.dropped[index] ?? 0) + 1;
    else logs.lines.push([this.slot, index, message, node]);
  }

  /** The columns filled so far. */
  columns(): DecisionColumns {
    return this.out;
  }

  /** The lists filled so far as they cross to the router, which holds the buffers of generation `held` (-1: none). */
  shared(held: number): SharedColumns {
    const o = this.out;
    const a = o.actions;
    const c = o.cancels;
    const d = o.done;
    let b = this.stamped;
    if (b === null || b[0] !== a.index || b[1] !== a.bytes || b[2] !== c.index || b[3] !== c.bytes || b[4] !== d.index || b[5] !== d.bytes) {
      b = this.stamped = [a.index, a.bytes, c.index, c.bytes, d.index, d.bytes];
      this.gen = nextGen();
    }
    return {
      gen: this.gen,
      used: [a.n, a.size, c.n, c.size, d.n, d.size],
      buffers: held === this.gen ? null : b,
      errors: o.errors.length === 0 ? null : o.errors,
      logs: hasLogs(o.logs) ? o.logs : null,
    };
  }
}

/** Room an action is written in place within (its args are small); larger ones go through the codec. */
const ACTION_ROOM = 256;

/** Room a cancel or done entry of agent `id` is written in place within: a short string id takes more than a number. */
function pairRoom(id: AgentId): number {
  return typeof id === 'number' ? SMALL_TUPLE_BYTES : ACTION_ROOM;
}

/** Appends `tuple` (copied: a view of the codec's shared output) made by the agent in `slot`. */
function append(t: TupleColumn, slot: number, tuple: Uint8Array): void {
  room(t, tuple.length).bytes.set(tuple, t.size);
  ended(t, slot, t.size + tuple.length);
}

/** `t`, with room for `bytes` more bytes after what it holds. */
function room(t: TupleColumn, bytes: number): TupleColumn {
  if (t.size + bytes > t.bytes.length) {
    const grown = sharedBytes(Math.max(t.bytes.length * 2, t.size + bytes));
    grown.set(t.bytes.subarray(0, t.size));
    t.bytes = grown;
  }
  return t;
}

/** Counts the tuple written up to `end` by the agent in `slot`. */
function ended(t: TupleColumn, slot: number, end: number): void {
  t.size = end;
  if ((t.n + 1) * 2 > t.index.length) {
    const index = sharedIndex(t.index.length * 2);
    index.set(t.index);
    t.index = index;
  }
  const at = t.n++ * 2;
  t.index[at] = slot;
  t.index[at + 1] = end;
}

/**
 * Columns start small and grow, in shared memory (a sink keeps the size its session needed): the router reads them
 * where the host wrote them, and a buffer that crossed each tick counted its whole length as new external memory on
 * the main thread, which drove its collections (docs/capacity.md, "Round eight").
 */
function newColumns(): DecisionColumns {
  return { actions: newColumn(), cancels: newColumn(), done: newColumn(), errors: [], logs: { lines: [], dropped: [0, 0, 0, 0] } };
}

function newColumn(): TupleColumn {
  return { n: 0, index: sharedIndex(MIN_ENTRIES * 2), bytes: sharedBytes(MIN_ENTRIES * TUPLE_BYTES), size: 0 };
}

function sharedIndex(length: number): Float64Array {
  return new Float64Array(new SharedArrayBuffer(length * Float64Array.BYTES_PER_ELEMENT));
}

function sharedBytes(length: number): Uint8Array {
  return new Uint8Array(new SharedArrayBuffer(length));
}

/**
 * Merges the hosts' lists into one Decisions, every list in spawn order (an agent's own entries keep
 * the order its tree made them): the same trees, spawns and snapshots give the same bytes whatever
 * the number of workers. Each host ticks its agents in slot order, which is spawn order until a
 * despawned slot is reused: sorted parts are merged in one pass, others are sorted (stable).
 */
export function mergeDecisions(tick: number, basedOn: number, parts: readonly DecisionLists[], lost: Decisions['errors']): Decisions {
  const errors = lost.slice();
  const n = spawnOrder(parts, ERRORS);
  for (let m = 0; m < n; m++) {
    const { columns: c, ids } = parts[order[m]! >>> 24]!;
    const [slot, code, message] = c.errors[order[m]! & 0xffffff]!;
    errors.push([ids[slot]!, code, message]);
  }
  return decisions(tick, basedOn, mergeTuples(parts, ACTIONS), mergeTuples(parts, CANCELS), mergeTuples(parts, DONES), errors);
}

/**
 * A Decisions whose `actions`, `cancels` and `done` are decoded from their encoded tuples when first read (enumerable
 * properties, so that comparing two Decisions compares them), with `encodedActions`, `encodedCancels` and
 * `encodedDone` beside them (not enumerable).
 */
function decisions(
  tick: number,
  basedOn: number,
  actions: EncodedTuples<ActionDecision>,
  cancels: EncodedTuples<CancelDecision>,
  done: EncodedTuples<DoneDecision>,
  errors: Decisions['errors'],
): Decisions {
  const d = { tick, basedOn } as Decisions;
  // The same descriptors every time (getters shared, not closures made per Decisions): V8 then reuses the object's
  // shapes from one Decisions to the next instead of building new ones (these calls: 1.6 → 1.1 % of the main thread).
  Object.defineProperty(d, 'actions', LAZY_ACTIONS);
  Object.defineProperty(d, 'cancels', LAZY_CANCELS);
  Object.defineProperty(d, 'done', LAZY_DONE);
  d.errors = errors;
  Object.defineProperty(d, 'encodedActions', { value: actions });
  Object.defineProperty(d, 'encodedCancels', { value: cancels });
  Object.defineProperty(d, 'encodedDone', { value: done });
  return d;
}

/** A list's property that decodes `encoded` when first read, and keeps what it decoded under `cache` (not enumerable). */
function lazyList(encoded: 'encodedActions' | 'encodedCancels' | 'encodedDone', cache: symbol): PropertyDescriptor {
  return {
    enumerable: true,
    get(this: Decisions & Record<symbol, unknown[] | undefined>): unknown[] {
      let values = this[cache];
      if (values === undefined) {
        values = this[encoded].decode();
        Object.defineProperty(this, cache, { value: values });
      }
      return values;
    },
  };
}

const LAZY_ACTIONS = lazyList('encodedActions', Symbol('actions'));
const LAZY_CANCELS = lazyList('encodedCancels', Symbol('cancels'));
const LAZY_DONE = lazyList('encodedDone', Symbol('done'));

/**
 * The `decisions` frame's fields of a pool's Decisions, its lists as they came encoded (spliced into the frame, not
 * decoded): what the session sends and records, and what the warm-up and `bench/rowpath` write as it does.
 */
export function frameFields(d: Decisions, tick: number, basedOn: number | undefined): DecisionsFields {
  return {
    tick,
    basedOn,
    encodedActions: d.encodedActions,
    encodedCancels: d.encodedCancels,
    encodedDone: d.encodedDone,
    errors: d.errors as DecisionsFields['errors'],
  };
}

/**
 * Parts kept past the tick that made them (a host failed: they go out with the next tick): their columns copied, as
 * the columns go back to their hosts, and the slots' ids and spawn orders as they were.
 */
export function keepParts(parts: DecisionLists[]): DecisionLists[] {
  return parts.map(({ columns: c, ids, ordinals, slotsInSpawnOrder }) => ({
    slotsInSpawnOrder,
    columns: { actions: copyColumn(c.actions), cancels: copyColumn(c.cancels), done: copyColumn(c.done), errors: c.errors, logs: c.logs },
    ids: ids.slice(),
    ordinals: ordinals.slice(),
  }));
}

function copyColumn(t: TupleColumn): TupleColumn {
  return { n: t.n, index: t.index.slice(0, t.n * 2), bytes: t.bytes.slice(0, t.size), size: t.size };
}

/** The lists the merge orders. */
const ACTIONS = 0;
const CANCELS = 1;
const DONES = 2;
const ERRORS = 3;

function column(c: DecisionColumns, list: number): TupleColumn {
  return list === ACTIONS ? c.actions : list === CANCELS ? c.cancels : c.done;
}

/** One list's tuples of every part in spawn order, as one list of bytes (a copy). */
function mergeTuples<T>(parts: readonly DecisionLists[], list: number): EncodedTuples<T> {
  if (parts.length === 1) {
    // One part (a session on one worker): its bytes as they are when its entries are in spawn order.
    const only = parts[0]!;
    const t = column(only.columns, list);
    if (t.n === 0) return EncodedTuples.EMPTY;
    // Slots in spawn order: entries in slot order are in spawn order (a scan of the index, not a lookup of each
    // entry's ordinal: those misses were 1.5 % of the main thread).
    if (only.slotsInSpawnOrder === true ? inSlotOrder(t) : inSpawnOrder(t, only.ordinals)) {
      const out = carve(t.size);
      copyBytes(t.bytes, out, 0, 0, t.size);
      return new EncodedTuples(t.n, out);
    }
  }
  const n = spawnOrder(parts, list);
  if (n === 0) return EncodedTuples.EMPTY;
  let size = 0;
  for (const p of parts) size += column(p.columns, list).size;
  const out = carve(size);
  let to = 0;
  for (let m = 0; m < n; m++) {
    const k = order[m]! >>> 24;
    const first = order[m]! & 0xffffff;
    // A run: entries of one part that follow one another in its list (all of them when one host holds the session).
    let last = first;
    while (m + 1 < n && order[m + 1] === order[m]! + 1) {
      m++;
      last++;
    }
    const t = column(parts[k]!.columns, list);
    const bytes = t.bytes;
    // As small integers: a loop over a double index is several times slower.
    const start = first === 0 ? 0 : t.index[(first - 1) * 2 + 1]! | 0;
    const end = t.index[last * 2 + 1]! | 0;
    // A tuple is some 5 to 40 bytes: a loop copies that faster than a view and set() would.
    if (end - start < 128) for (let b = start; b < end; b++) out[to++] = bytes[b]!;
    else {
      copyBytes(bytes, out, to, start, end);
      to += end - start;
    }
  }
  return new EncodedTuples(n, out);
}

/** True when the entries of `t` come in spawn order (their agents' ordinals never decrease): spawnOrder's check for one part. */
function inSpawnOrder(t: TupleColumn, ordinals: readonly number[]): boolean {
  const index = t.index;
  let last = -1;
  for (let i = 0; i < t.n; i++) {
    // The slot as a small integer (see mergeTuples).
    const o = ordinals[index[i * 2]! | 0]!;
    if (o < last) return false;
    last = o;
  }
  return true;
}

/** True when the entries of `t` come in slot order (their slots never decrease). */
function inSlotOrder(t: TupleColumn): boolean {
  const index = t.index;
  let last = -1;
  for (let i = 0; i < t.n; i++) {
    const slot = index[i * 2]!;
    if (slot < last) return false;
    last = slot;
  }
  return true;
}

/** The merge's output, reused: entry m in spawn order is `order[m]`, its part × 2^24 + its index in the part's list. */
let order = new Int32Array(1024);
/** Makes room for `total` entries in `order`. */
function orderRoom(total: number): void {
  if (total > order.length) order = new Int32Array(Math.max(total, order.length * 2));
}

/**
 * Per part k, reused: the list's index (slot, end per entry; null for errors, read from `listErrors`), how many
 * entries, the spawn ordinals by slot, where the merge is and the key there.
 */
const listIndex: Array<Float64Array | null> = [];
const listErrors: Array<DecisionColumns['errors']> = [];
const listCounts: number[] = [];
const listOrdinals: Array<readonly number[]> = [];
const cursor: number[] = [];
const headKey: number[] = [];

/** The spawn ordinal of entry i of part k's list, Infinity past its end. */
function keyOf(k: number, i: number): number {
  if (i >= listCounts[k]!) return Infinity;
  const index = listIndex[k]!;
  // Errors are [slot, code, message] tuples; a slot from an index as a small integer (read as a double, it is a
  // slower element access).
  return listOrdinals[k]![index === null ? listErrors[k]![i]![0] : index[i * 2]! | 0]!;
}

/**
 * Fills `order` with the entries of `list` over all parts in spawn order and returns how many there are. Ties (an
 * agent's entries in a part carried from a failed tick and in this tick's) keep part order. Parts in spawn order (the
 * usual case) are merged in one pass without allocating, which checks each part's order as it goes; at the first
 * entry out of order, every entry is sorted by its key instead (stable).
 */
function spawnOrder(parts: readonly DecisionLists[], list: number): number {
  const K = parts.length;
  let total = 0;
  for (let k = 0; k < K; k++) {
    const { columns: c, ordinals } = parts[k]!;
    listIndex[k] = list === ERRORS ? null : column(c, list).index;
    listErrors[k] = c.errors;
    listCounts[k] = list === ERRORS ? c.errors.length : column(c, list).n;
    listOrdinals[k] = ordinals;
    cursor[k] = 0;
    headKey[k] = keyOf(k, 0);
    total += listCounts[k]!;
  }
  orderRoom(total);
  if (mergeInOrder(K, total)) return total;
  const keys: number[] = [];
  const refs: number[] = [];
  for (let k = 0; k < K; k++) {
    for (let i = 0; i < listCounts[k]!; i++) {
      keys.push(keyOf(k, i));
      refs.push(k * 0x1000000 + i);
    }
  }
  const sortedRefs = Array.from(refs, (_, x) => x).toSorted((x, y) => keys[x]! - keys[y]! || x - y);
  for (let m = 0; m < total; m++) order[m] = refs[sortedRefs[m]!]!;
  return total;
}

/**
 * The k-way merge of spawnOrder (k = parts: a handful; ties go to the earlier part): false as soon as a part's next
 * entry comes before the one just taken from it, the part not being in spawn order.
 */
function mergeInOrder(K: number, total: number): boolean {
  for (let m = 0; m < total; m++) {
    let best = 0;
    let bestKey = headKey[0]!;
    for (let k = 1; k < K; k++) {
      if (headKey[k]! < bestKey) {
        best = k;
        bestKey = headKey[k]!;
      }
    }
    const i = cursor[best]!;
    order[m] = best * 0x1000000 + i;
    cursor[best] = i + 1;
    const next = keyOf(best, i + 1);
    if (next < bestKey) return false;
    headKey[best] = next;
  }
  return true;
}
