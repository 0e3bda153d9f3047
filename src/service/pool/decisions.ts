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

/** The decision lists of one host for one tick, protocol-shaped, with each entry's agent spawn order. */
export interface DecisionLists {
  /** The actions' tuples (a view of the columns until keepParts copies it), `ends[i]` where tuple i ends. */
  actions: { bytes: Uint8Array; ends: number[] };
  cancels: Array<[AgentId, number]>;
  done: Array<[AgentId, 'success' | 'failure']>;
  errors: Array<[AgentId, string, string]>;
  order: { actions: number[]; cancels: number[]; done: number[]; errors: number[] };
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
 * A host's columns as lists: cancels, done and errors as protocol tuples, actions as their encoded bytes with where
 * each ends. `ids[slot]` is the agent in each slot when the tick was sent and `ordinals[slot]` its spawn order, kept
 * beside each list so the merge can order entries by spawn.
 */
export function unpackDecisions(c: DecisionColumns, ids: readonly AgentId[], ordinals: readonly number[]): DecisionLists {
  const ends: number[] = [];
  const actionOrder: number[] = [];
  const a = c.actions;
  for (let i = 0; i < c.nActions; i++) {
    actionOrder.push(ordinals[a[i * ACTION]!]!);
    ends.push(a[i * ACTION + 1]!);
  }
  // A view: the merge copies it before the columns go back to their host (carried parts are copied, keepParts).
  const actions = { bytes: c.actionBytes.subarray(0, c.nActionBytes), ends };
  const cancels: Array<[AgentId, number]> = [];
  const cancelOrder: number[] = [];
  for (let i = 0; i < c.nCancels; i++) {
    cancels.push([ids[c.cancels[i * CANCEL]!]!, c.cancels[i * CANCEL + 1]!]);
    cancelOrder.push(ordinals[c.cancels[i * CANCEL]!]!);
  }
  const done: Array<[AgentId, 'success' | 'failure']> = [];
  const doneOrder: number[] = [];
  for (let i = 0; i < c.nDone; i++) {
    done.push([ids[c.done[i * DONE]!]!, c.done[i * DONE + 1] === 1 ? 'success' : 'failure']);
    doneOrder.push(ordinals[c.done[i * DONE]!]!);
  }
  const errors = c.errors.map(([slot, code, message]): [AgentId, string, string] => [ids[slot]!, code, message]);
  const errorOrder = c.errors.map(([slot]) => ordinals[slot]!);
  return { actions, cancels, done, errors, order: { actions: actionOrder, cancels: cancelOrder, done: doneOrder, errors: errorOrder } };
}

/**
 * Merges the hosts' lists into one Decisions, every list in spawn order (an agent's own entries keep
 * the order its tree made them): the same trees, spawns and snapshots give the same bytes whatever
 * the number of workers. Each host ticks its agents in slot order, which is spawn order until a
 * despawned slot is reused: sorted parts are merged in one pass, others are sorted (stable).
 */
export function mergeDecisions(tick: number, basedOn: number, parts: readonly DecisionLists[], lost: Decisions['errors']): Decisions {
  return decisions(
    tick,
    basedOn,
    mergeActions(parts),
    mergeBySpawn(parts.map((p) => p.cancels), parts.map((p) => p.order.cancels)),
    mergeBySpawn(parts.map((p) => p.done), parts.map((p) => p.order.done)),
    lost.concat(mergeBySpawn(parts.map((p) => p.errors), parts.map((p) => p.order.errors))),
  );
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
 * Parts kept past the tick that made them (a host failed: they go out with the next tick): their action bytes
 * copied out of the columns, which go back to their hosts.
 */
export function keepParts(parts: DecisionLists[]): DecisionLists[] {
  for (const p of parts) p.actions = { bytes: p.actions.bytes.slice(), ends: p.actions.ends };
  return parts;
}

/** The hosts' action tuples in spawn order, as one list of bytes (a copy): runs of one host's tuples copied at once. */
function mergeActions(parts: readonly DecisionLists[]): EncodedTuples<ActionDecision> {
  // Each entry as host × 2^24 + its index in the host's list (a host has fewer than 2^24 slots), merged like the other lists.
  const refs = parts.map((p, k) => Array.from(p.order.actions, (_unused, i) => k * 0x1000000 + i));
  const merged = mergeBySpawn(refs, parts.map((p) => p.order.actions));
  if (merged.length === 0) return EncodedTuples.EMPTY;
  let size = 0;
  for (const p of parts) size += p.actions.bytes.length;
  const out = carve(size);
  let at = 0;
  for (let m = 0; m < merged.length; ) {
    const ref = merged[m]!;
    const k = Math.floor(ref / 0x1000000);
    const first = ref - k * 0x1000000;
    // The run: entries of the same host that follow one another in its list.
    let n = 1;
    while (m + n < merged.length && merged[m + n] === ref + n) n++;
    const { bytes, ends } = parts[k]!.actions;
    const from = first === 0 ? 0 : ends[first - 1]!;
    const to = ends[first + n - 1]!;
    out.set(bytes.subarray(from, to), at);
    at += to - from;
    m += n;
  }
  return new EncodedTuples(merged.length, out);
}

function mergeBySpawn<T>(lists: ReadonlyArray<readonly T[]>, orders: ReadonlyArray<readonly number[]>): T[] {
  const sorted = orders.every(ascending);
  if (lists.length === 1 && sorted) return lists[0] as T[];
  const out: T[] = [];
  if (sorted && lists.length === 2) return mergeTwo(lists[0]!, orders[0]!, lists[1]!, orders[1]!);
  if (sorted) {
    // k-way merge, k = hosts (a handful): pick the smallest head each time; ties keep host order.
    const at = lists.map(() => 0);
    for (;;) {
      let best = -1;
      for (let k = 0; k < lists.length; k++) {
        if (at[k]! < lists[k]!.length && (best === -1 || orders[k]![at[k]!]! < orders[best]![at[best]!]!)) best = k;
      }
      if (best === -1) return out;
      out.push(lists[best]![at[best]!++]!);
    }
  }
  const keys: number[] = [];
  for (let k = 0; k < lists.length; k++) {
    for (let i = 0; i < lists[k]!.length; i++) {
      out.push(lists[k]![i]!);
      keys.push(orders[k]![i]!);
    }
  }
  const index = Array.from(out, (_, i) => i).toSorted((x, y) => keys[x]! - keys[y]! || x - y);
  return index.map((i) => out[i]!);
}

/** The two-host case of the merge (ties: the first list first), in one pass with its indices in locals. */
function mergeTwo<T>(a: readonly T[], ao: readonly number[], b: readonly T[], bo: readonly number[]): T[] {
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(bo[j]! < ao[i]! ? b[j++]! : a[i++]!);
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

function ascending(order: readonly number[]): boolean {
  for (let i = 1; i < order.length; i++) if (order[i]! < order[i - 1]!) return false;
  return true;
}
