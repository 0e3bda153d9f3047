// How a host's decisions travel back to the router, and how the router merges them into one Decisions.
// The travel form is chosen here and only here: the host packs (DecisionColumns), the router unpacks.
//
// Measured (13.5k decisions per reply, 7.5k actions with shared literal args + 6k done; Node 20, 2-core EPYC):
// structured clone of the tuple lists 5.3 ms to serialize + 4.9 ms to deserialize; msgpackr 1.9 + 0.8 ms;
// these columns 0.16 ms to fill + 0.05 ms to clone + 0.13 ms to rebuild the tuples. Tuples are only ever
// built once, on the main thread, where the session layer needs them.
//
// Actions cross as the wire carries them: the sink encodes each `[id, seq, action, args]` tuple on the worker as the
// protocol would (encodeActionTuple), the router merges the hosts' bytes in spawn order, and the session splices them
// into its `decisions` frame. The main thread neither reads nor writes an action's args; a reader of the values
// (the inspector, the HTTP transport, tests) decodes them when it asks (Decisions.actions). Per session tick of 280
// actions: msgpackr's encodeDecisions of the tuples took 56–62 µs on the main thread, besides reading the args back
// from the worker (about 30 µs per reply) and rebuilding the tuples; splicing the bytes takes about 12 µs (Node 26,
// 2-core EPYC).

import type { Agent, AgentId, DecisionSink } from '../../bt/index.js';
import { EncodedTuples, carve, encodeActionTuple, type ActionDecision } from '../../protocol/index.js';
import type { Decisions } from './types.js';
import { LOG_LINES_PER_TICK, levelIndex, type LogColumns } from './logs.js';

/** Numbers per entry of each column buffer. */
const ACTION = 2; // slot, end of the action's tuple in actionBytes
const CANCEL = 2; // slot, seq
const DONE = 2; // slot, 1 success / 0 failure
const MIN_ENTRIES = 64;
/** Bytes of an action's tuple, to size a new buffer (it grows when a tick needs more). */
const TUPLE_BYTES = 40;

/**
 * One host's decisions for one tick, by agent slot: numbers in Float64Arrays and the actions' encoded tuples in a
 * Uint8Array (transferred, then handed back to the host with the next tick for reuse).
 */
export interface DecisionColumns {
  nActions: number;
  actions: Float64Array;
  /** The actions' `[id, seq, action, args]` tuples, encoded as the wire carries them, back to back. */
  actionBytes: Uint8Array;
  nActionBytes: number;
  nCancels: number;
  cancels: Float64Array;
  nDone: number;
  done: Float64Array;
  errors: Array<[number, string, string]>;
  /** `log` node lines, at most LOG_LINES_PER_TICK (the router caps the session's total again). */
  logs: LogColumns;
}

/** Buffers of a previous reply, for the next tick's sink. */
export interface SpareColumns {
  actions: Float64Array;
  actionBytes: Uint8Array;
  cancels: Float64Array;
  done: Float64Array;
}

/**
 * The decisions of one host for one tick as the router merges them: the host's columns (a view until keepParts copies
 * them), with the agent in each slot (`ids`) and its spawn order (`ordinals`) when the tick was sent.
 */
export interface DecisionLists {
  readonly columns: DecisionColumns;
  readonly ids: readonly AgentId[];
  readonly ordinals: readonly number[];
}

/**
 * The DecisionSink a host ticks its agents into: set `slot` before ticking the agent in that slot
 * (an agent's decisions all come during its own tick, so the slot identifies it without a lookup).
 */
export class ColumnSink implements DecisionSink {
  /** Slot of the agent being ticked (or halted). */
  slot = 0;
  private out: DecisionColumns;
  /** Actions whose args could not be encoded (a cycle a plugin made): slot and why, for the host to stop the agent. */
  private unsendable: Array<[number, string]> | null = null;

  constructor(spare: SpareColumns | null) {
    this.out = newColumns(spare);
  }

  /**
   * Starts the next tick's columns, the previous ones having gone out with their reply. A host keeps one sink
   * per session: each agent stores the sink it ticks into, and a sink that lives on (old, like the agents) spares
   * the collector a remembered old-to-new pointer per agent per tick.
   */
  reset(spare: SpareColumns | null): void {
    this.out = newColumns(spare);
    this.unsendable = null;
    this.slot = 0;
  }

  action(agent: Agent, seq: number, action: string, args: Readonly<Record<string, unknown>>): void {
    let tuple: Uint8Array;
    try {
      tuple = encodeActionTuple(agent.id, seq, action, args);
    } catch (err) {
      (this.unsendable ??= []).push([this.slot, `action '${action}': its args cannot be sent as MessagePack (${err instanceof Error ? err.message : String(err)})`]);
      return;
    }
    const o = this.out;
    const end = o.nActionBytes + tuple.length;
    if (end > o.actionBytes.length) o.actionBytes = growBytes(o.actionBytes, end);
    o.actionBytes.set(tuple, o.nActionBytes);
    o.nActionBytes = end;
    if ((o.nActions + 1) * ACTION > o.actions.length) o.actions = grow(o.actions);
    const at = o.nActions++ * ACTION;
    o.actions[at] = this.slot;
    o.actions[at + 1] = end;
  }

  /** The actions dropped this tick because their args could not be encoded, once (then null until another). */
  takeUnsendable(): Array<[number, string]> | null {
    const u = this.unsendable;
    this.unsendable = null;
    return u;
  }

  cancel(_agent: Agent, seq: number): void {
    const o = this.out;
    if ((o.nCancels + 1) * CANCEL > o.cancels.length) o.cancels = grow(o.cancels);
    const at = o.nCancels++ * CANCEL;
    o.cancels[at] = this.slot;
    o.cancels[at + 1] = seq;
  }

  finished(_agent: Agent, status: 'success' | 'failure'): void {
    const o = this.out;
    if ((o.nDone + 1) * DONE > o.done.length) o.done = grow(o.done);
    const at = o.nDone++ * DONE;
    o.done[at] = this.slot;
    o.done[at + 1] = status === 'success' ? 1 : 0;
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
}

/**
 * Columns start small and grow (a spare keeps the size its session needed): they cross to the main thread every tick,
 * and a transferred buffer counts its whole length as new external memory there, which drives its collections
 * (docs/capacity.md, "Round eight").
 */
function newColumns(spare: SpareColumns | null): DecisionColumns {
  return {
    nActions: 0,
    actions: spare?.actions ?? new Float64Array(MIN_ENTRIES * ACTION),
    actionBytes: spare?.actionBytes ?? new Uint8Array(MIN_ENTRIES * TUPLE_BYTES),
    nActionBytes: 0,
    nCancels: 0,
    cancels: spare?.cancels ?? new Float64Array(MIN_ENTRIES * CANCEL),
    nDone: 0,
    done: spare?.done ?? new Float64Array(MIN_ENTRIES * DONE),
    errors: [],
    logs: { lines: [], dropped: [0, 0, 0, 0] },
  };
}

function grow(a: Float64Array): Float64Array {
  const b = new Float64Array(a.length * 2);
  b.set(a);
  return b;
}

function growBytes(a: Uint8Array, atLeast: number): Uint8Array {
  const b = new Uint8Array(Math.max(a.length * 2, atLeast));
  b.set(a);
  return b;
}

/**
 * A host's columns as the merge reads them. Nothing is copied or built here: the merge reads the columns in place and
 * builds each protocol tuple once, in its final order (before, a reply's entries were first unpacked into tuples and
 * order lists, then merged through lists of references: at 50,000 agents, 60 % of what the main thread allocated).
 */
export function unpackDecisions(columns: DecisionColumns, ids: readonly AgentId[], ordinals: readonly number[]): DecisionLists {
  return { columns, ids, ordinals };
}

/**
 * Merges the hosts' lists into one Decisions, every list in spawn order (an agent's own entries keep
 * the order its tree made them): the same trees, spawns and snapshots give the same bytes whatever
 * the number of workers. Each host ticks its agents in slot order, which is spawn order until a
 * despawned slot is reused: sorted parts are merged in one pass by runs, others are sorted (stable).
 */
export function mergeDecisions(tick: number, basedOn: number, parts: readonly DecisionLists[], lost: Decisions['errors']): Decisions {
  const cancels: Array<[AgentId, number]> = [];
  let n = spawnOrder(parts, CANCELS);
  for (let m = 0; m < n; m++) {
    const { columns: c, ids } = parts[order[m]! >>> 24]!;
    const at = (order[m]! & 0xffffff) * CANCEL;
    cancels.push([ids[c.cancels[at]!]!, c.cancels[at + 1]!]);
  }
  const done: Array<[AgentId, 'success' | 'failure']> = [];
  n = spawnOrder(parts, DONES);
  for (let m = 0; m < n; m++) {
    const { columns: c, ids } = parts[order[m]! >>> 24]!;
    const at = (order[m]! & 0xffffff) * DONE;
    done.push([ids[c.done[at]!]!, c.done[at + 1] === 1 ? 'success' : 'failure']);
  }
  const errors = lost.slice();
  n = spawnOrder(parts, ERRORS);
  for (let m = 0; m < n; m++) {
    const { columns: c, ids } = parts[order[m]! >>> 24]!;
    const [slot, code, message] = c.errors[order[m]! & 0xffffff]!;
    errors.push([ids[slot]!, code, message]);
  }
  return decisions(tick, basedOn, mergeActions(parts), cancels, done, errors);
}

/**
 * A Decisions whose `actions` are decoded from `encoded` when first read (an enumerable property, so that
 * comparing two Decisions compares the actions), with `encodedActions` beside them (not enumerable).
 */
function decisions(
  tick: number,
  basedOn: number,
  encoded: EncodedTuples<ActionDecision>,
  cancels: Decisions['cancels'],
  done: Decisions['done'],
  errors: Decisions['errors'],
): Decisions {
  let actions: Decisions['actions'] | null = null;
  const d = { tick, basedOn, cancels, done, errors } as Decisions;
  Object.defineProperty(d, 'actions', {
    enumerable: true,
    get: () => (actions ??= encoded.decode() as Decisions['actions']),
  });
  Object.defineProperty(d, 'encodedActions', { value: encoded, enumerable: false });
  return d;
}

/**
 * Parts kept past the tick that made them (a host failed: they go out with the next tick): their columns copied, as
 * the columns go back to their hosts, and the slots' ids and spawn orders as they were.
 */
export function keepParts(parts: DecisionLists[]): DecisionLists[] {
  return parts.map(({ columns: c, ids, ordinals }) => ({
    columns: {
      nActions: c.nActions,
      actions: c.actions.slice(0, c.nActions * ACTION),
      actionBytes: c.actionBytes.slice(0, c.nActionBytes),
      nActionBytes: c.nActionBytes,
      nCancels: c.nCancels,
      cancels: c.cancels.slice(0, c.nCancels * CANCEL),
      nDone: c.nDone,
      done: c.done.slice(0, c.nDone * DONE),
      errors: c.errors,
      logs: c.logs,
    },
    ids: ids.slice(),
    ordinals: ordinals.slice(),
  }));
}

/** The hosts' action tuples in spawn order, as one list of bytes (a copy). */
function mergeActions(parts: readonly DecisionLists[]): EncodedTuples<ActionDecision> {
  const n = spawnOrder(parts, ACTIONS);
  if (n === 0) return EncodedTuples.EMPTY;
  let size = 0;
  for (const p of parts) size += p.columns.nActionBytes;
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
    const c = parts[k]!.columns;
    const bytes = c.actionBytes;
    const start = first === 0 ? 0 : c.actions[(first - 1) * ACTION + 1]!;
    const end = c.actions[last * ACTION + 1]!;
    // A tuple is some 30 bytes: a loop copies that faster than a view and set() would.
    if (end - start < 128) for (let b = start; b < end; b++) out[to++] = bytes[b]!;
    else {
      out.set(bytes.subarray(start, end), to);
      to += end - start;
    }
  }
  return new EncodedTuples(n, out);
}

/** The lists the merge orders: which column holds them, two numbers an entry, the entry's slot first. */
const ACTIONS = 0;
const CANCELS = 1;
const DONES = 2;
const ERRORS = 3;

/** The merge's output, reused: entry m in spawn order is `order[m]`, its part × 2^24 + its index in the part's list. */
let order = new Int32Array(1024);
/** Per part: the list's slots (two numbers an entry), how many entries, where the merge is. Reused. */
const listSlots: Array<Float64Array | null> = [];
const listCounts: number[] = [];
const cursor: number[] = [];

/** The slot of entry i of a list: errors are [slot, code, message] tuples, the others columns of two numbers. */
function slotOf(c: DecisionColumns, slots: Float64Array | null, i: number): number {
  return slots === null ? c.errors[i]![0] : slots[i * 2]!;
}

/**
 * Fills `order` with the entries of `list` over all parts in spawn order and returns how many there are. Ties (an
 * agent's entries in a part carried from a failed tick and in this tick's) keep part order. Parts in spawn order (the
 * usual case) are merged in one pass without allocating; otherwise every entry is sorted by its key (stable).
 */
function spawnOrder(parts: readonly DecisionLists[], list: number): number {
  const K = parts.length;
  let total = 0;
  let sorted = true;
  for (let k = 0; k < K; k++) {
    const { columns: c, ordinals } = parts[k]!;
    const slots = list === ACTIONS ? c.actions : list === CANCELS ? c.cancels : list === DONES ? c.done : null;
    const n = list === ACTIONS ? c.nActions : list === CANCELS ? c.nCancels : list === DONES ? c.nDone : c.errors.length;
    listSlots[k] = slots;
    listCounts[k] = n;
    cursor[k] = 0;
    total += n;
    for (let i = 1; i < n && sorted; i++) if (ordinals[slotOf(c, slots, i)]! < ordinals[slotOf(c, slots, i - 1)]!) sorted = false;
  }
  if (total > order.length) order = new Int32Array(Math.max(total, order.length * 2));
  if (!sorted) {
    const keys: number[] = [];
    const refs: number[] = [];
    for (let k = 0; k < K; k++) {
      const { columns: c, ordinals } = parts[k]!;
      for (let i = 0; i < listCounts[k]!; i++) {
        keys.push(ordinals[slotOf(c, listSlots[k]!, i)]!);
        refs.push(k * 0x1000000 + i);
      }
    }
    const index = Array.from(refs, (_, x) => x).sort((x, y) => keys[x]! - keys[y]! || x - y);
    for (let m = 0; m < total; m++) order[m] = refs[index[m]!]!;
    return total;
  }
  for (let m = 0; m < total; m++) {
    // The part whose next entry comes first (k-way, k = parts: a handful); ties go to the earlier part.
    let best = -1;
    let bestKey = 0;
    for (let k = 0; k < K; k++) {
      const i = cursor[k]!;
      if (i >= listCounts[k]!) continue;
      const key = parts[k]!.ordinals[slotOf(parts[k]!.columns, listSlots[k]!, i)]!;
      if (best === -1 || key < bestKey) {
        best = k;
        bestKey = key;
      }
    }
    order[m] = best * 0x1000000 + cursor[best]!++;
  }
  return total;
}
