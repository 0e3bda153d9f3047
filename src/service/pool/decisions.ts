// How a host's decisions travel back to the router, and how the router merges them into one Decisions.
// The travel form is chosen here and only here: the host packs (DecisionColumns), the router unpacks.
//
// Measured (13.5k decisions per reply, 7.5k actions with shared literal args + 6k done; Node 20, 2-core EPYC):
// structured clone of the tuple lists 5.3 ms to serialize + 4.9 ms to deserialize; msgpackr 1.9 + 0.8 ms;
// these columns 0.16 ms to fill + 0.05 ms to clone + 0.13 ms to rebuild the tuples. Tuples are only ever
// built once, on the main thread, where the session layer needs them.
//
// Computed args (one fresh object per action, `{ at: self.enemyPos }`) cross from a worker as one MessagePack
// buffer, not as objects in the structured clone (packArgs, unpackArgs). 159 such args (a worker's reply at
// 50,000 agents): structured clone 33 µs to write on the worker and 94 µs to read on the main thread; MessagePack
// 23 + 30 µs (Node 26, 2-core EPYC).

import { Packr } from 'msgpackr';
import type { Agent, AgentId, DecisionSink } from '../../bt/index.js';
import type { Decisions } from './types.js';
import { LOG_LINES_PER_TICK, levelIndex, type LogColumns } from './logs.js';

/** Numbers per entry of each column buffer. */
const ACTION = 4; // slot, seq, name index, args index
const CANCEL = 2; // slot, seq
const DONE = 2; // slot, 1 success / 0 failure
const MIN_ENTRIES = 64;

/**
 * One host's decisions for one tick, by agent slot: numbers in Float64Arrays (transferred, then handed back to
 * the host with the next tick for reuse), action names and args in small side tables. Literal args are one
 * shared frozen object per action node: they enter the args table once, however many agents issued them.
 */
export interface DecisionColumns {
  nActions: number;
  actions: Float64Array;
  nCancels: number;
  cancels: Float64Array;
  nDone: number;
  done: Float64Array;
  names: string[];
  args: unknown[];
  /** `args` as MessagePack while the columns cross from a worker to the main thread (packArgs); else null. */
  packedArgs: Uint8Array | null;
  errors: Array<[number, string, string]>;
  /** `log` node lines, at most LOG_LINES_PER_TICK (the router caps the session's total again). */
  logs: LogColumns;
}

/** Buffers of a previous reply, for the next tick's sink. */
export interface SpareColumns {
  actions: Float64Array;
  cancels: Float64Array;
  done: Float64Array;
}

/** The decision lists of one host for one tick, protocol-shaped, with each entry's agent spawn order. */
export interface DecisionLists {
  actions: Array<[AgentId, number, string, unknown]>;
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
  private readonly nameIndex = new Map<string, number>();
  private readonly argsIndex = new Map<object, number>();

  constructor(capacity: number, spare: SpareColumns | null) {
    this.out = newColumns(capacity, spare);
  }

  /**
   * Starts the next tick's columns, the previous ones having gone out with their reply. A host keeps one sink
   * per session: each agent stores the sink it ticks into, and a sink that lives on (old, like the agents) spares
   * the collector a remembered old-to-new pointer per agent per tick.
   */
  reset(capacity: number, spare: SpareColumns | null): void {
    this.out = newColumns(capacity, spare);
    this.nameIndex.clear();
    this.argsIndex.clear();
    this.slot = 0;
  }

  action(_agent: Agent, seq: number, action: string, args: Readonly<Record<string, unknown>>): void {
    const o = this.out;
    let name = this.nameIndex.get(action);
    if (name === undefined) {
      name = o.names.push(action) - 1;
      this.nameIndex.set(action, name);
    }
    let arg: number;
    // Literal args are shared and frozen (the compiler makes them so); computed args are fresh objects.
    if (Object.isFrozen(args)) {
      const known = this.argsIndex.get(args);
      if (known === undefined) {
        arg = o.args.push(args) - 1;
        this.argsIndex.set(args, arg);
      } else arg = known;
    } else arg = o.args.push(args) - 1;
    if ((o.nActions + 1) * ACTION > o.actions.length) o.actions = grow(o.actions);
    const at = o.nActions++ * ACTION;
    const a = o.actions;
    a[at] = this.slot;
    a[at + 1] = seq;
    a[at + 2] = name;
    a[at + 3] = arg;
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

function newColumns(capacity: number, spare: SpareColumns | null): DecisionColumns {
  const n = Math.max(MIN_ENTRIES, capacity);
  return {
    nActions: 0,
    actions: spare?.actions ?? new Float64Array(n * ACTION),
    nCancels: 0,
    cancels: spare?.cancels ?? new Float64Array(MIN_ENTRIES * CANCEL),
    nDone: 0,
    done: spare?.done ?? new Float64Array(n * DONE),
    names: [],
    args: [],
    packedArgs: null,
    errors: [],
    logs: { lines: [], dropped: [0, 0, 0, 0] },
  };
}

function grow(a: Float64Array): Float64Array {
  const b = new Float64Array(a.length * 2);
  b.set(a);
  return b;
}

/**
 * Args of the columns' actions as MessagePack: msgpackr's types beyond the standard ones (Date, Set, typed arrays,
 * RegExp, Error) and 64-bit integers as BigInt, so that what the main thread reads back is what the worker had, as
 * structured clone gives it, with three exceptions the game server never sees (the wire is MessagePack too): a Map
 * comes back as a plain object, -0 as 0, and an own `__proto__` key (only plugin code can make one) as `__proto_`.
 */
const argsCodec = new Packr({ useRecords: false, moreTypes: true, int64AsType: 'bigint' });

/**
 * Before the columns are posted to the main thread: their args packed into `packedArgs` (a copy of its own), the
 * objects dropped. Args MessagePack cannot carry (a cycle) stay objects, for the structured clone.
 */
export function packArgs(c: DecisionColumns): void {
  if (c.args.length === 0) return;
  let packed: Uint8Array;
  try {
    packed = argsCodec.pack(c.args);
  } catch {
    return;
  }
  // msgpackr's result is a view of its reused output buffer, which the structured clone would copy whole.
  c.packedArgs = new Uint8Array(packed);
  c.args = [];
}

/** On the main thread, when columns arrive from a worker: the args packArgs packed, as objects again. */
export function unpackArgs(c: DecisionColumns): void {
  const packed = c.packedArgs;
  if (packed === null) return;
  c.args = argsCodec.unpack(packed) as unknown[];
  c.packedArgs = null;
}

/**
 * Rebuilds protocol tuples from a host's columns; `ids[slot]` is the agent in each slot when the tick was sent
 * and `ordinals[slot]` its spawn order, kept beside each list so the merge can order entries by spawn.
 */
export function unpackDecisions(c: DecisionColumns, ids: readonly AgentId[], ordinals: readonly number[]): DecisionLists {
  const actions: Array<[AgentId, number, string, unknown]> = [];
  const actionOrder: number[] = [];
  const a = c.actions;
  for (let i = 0; i < c.nActions; i++) {
    const at = i * ACTION;
    actions.push([ids[a[at]!]!, a[at + 1]!, c.names[a[at + 2]!]!, c.args[a[at + 3]!]]);
    actionOrder.push(ordinals[a[at]!]!);
  }
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
  return {
    tick,
    basedOn,
    actions: mergeBySpawn(parts.map((p) => p.actions), parts.map((p) => p.order.actions)),
    cancels: mergeBySpawn(parts.map((p) => p.cancels), parts.map((p) => p.order.cancels)),
    done: mergeBySpawn(parts.map((p) => p.done), parts.map((p) => p.order.done)),
    errors: lost.concat(mergeBySpawn(parts.map((p) => p.errors), parts.map((p) => p.order.errors))),
  };
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
