// AI level of detail (docs/protocol.md, `every` and `lod`): an agent ticked every N session ticks. The host keeps
// one small table per session, created the first time an agent of that session gets N ≠ 1: a session that never
// uses level of detail pays one null test per tick.

import type { AgentId } from '../../bt/index.js';
import { LIMITS } from '../../protocol/index.js';

/** The largest tick interval accepted (`every`): about 14 hours at 20 Hz; keeps the counters in an Int32. */
export const MAX_EVERY = LIMITS.maxEvery;

/** The first problem with an `every` value, as a reason for E_BAD_FIELD, or null when it is valid. */
export function badEvery(every: unknown): string | null {
  if (typeof every !== 'number' || !Number.isInteger(every) || every < 1 || every > MAX_EVERY) {
    return `expected an integer from 1 to ${MAX_EVERY} (tick every N session ticks)`;
  }
  return null;
}

/**
 * The agent's phase for interval `every`, in [0, every): how many session ticks it waits before its first tick
 * under that interval. A hash of the id, so that agents with the same interval spread evenly over the interval's
 * ticks (no thundering herd every N ticks), and the same agent gets the same phase in the service, after crash
 * recovery and in a replay, whatever the worker it lives on and whenever a recording started.
 */
export function lodPhase(id: AgentId, every: number): number {
  if (every === 1) return 0;
  let h: number;
  if (typeof id === 'number') {
    // Both 32-bit halves of an integer id (ids up to 2^53), then a full avalanche (murmur3's fmix32).
    h = Math.imul((id | 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.floor(id / 4294967296);
  } else {
    h = 0x811c9dc5;
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % every;
}

/**
 * The tick intervals of one session's agents on one host, by slot. `wait[slot]`: session ticks to skip before the
 * agent's next tick; `last[slot]`: tree time of its last tick (NaN: none yet), so that its `dt` is the time since
 * its own last tick.
 */
export class LodTable {
  every = new Int32Array(0);
  wait = new Int32Array(0);
  last = new Float64Array(0);

  /** Room for `slot`; new slots tick every session tick. */
  private ensure(slot: number): void {
    if (slot < this.every.length) return;
    let n = Math.max(64, this.every.length * 2);
    while (n <= slot) n *= 2;
    const every = new Int32Array(n).fill(1);
    every.set(this.every);
    const wait = new Int32Array(n);
    wait.set(this.wait);
    const last = new Float64Array(n).fill(Number.NaN);
    last.set(this.last);
    this.every = every;
    this.wait = wait;
    this.last = last;
  }

  /**
   * An agent that was there before the table (it ticked every tick so far): interval 1, and `last`, the tree
   * time of its last tick (NaN: none yet).
   */
  adopt(slot: number, last: number): void {
    this.ensure(slot);
    this.every[slot] = 1;
    this.wait[slot] = 0;
    this.last[slot] = last;
  }

  /** An agent moved here with its state (a session restored elsewhere: durable sessions). */
  moved(slot: number, every: number, wait: number, last: number): void {
    this.ensure(slot);
    this.every[slot] = every;
    this.wait[slot] = wait;
    this.last[slot] = last;
  }

  /** The state of the agent in `slot`: [every, wait, last] (1, 0, NaN when never set). */
  stateOf(slot: number): [number, number, number] {
    return slot < this.every.length ? [this.every[slot]!, this.wait[slot]!, this.last[slot]!] : [1, 0, Number.NaN];
  }

  /** A new agent in `slot` (spawn): its interval and phase; it has not ticked yet. */
  spawned(slot: number, id: AgentId, every: number): void {
    this.ensure(slot);
    this.every[slot] = every;
    this.wait[slot] = lodPhase(id, every);
    this.last[slot] = Number.NaN;
  }

  /** A new interval for the agent in `slot`, from the next tick on: it waits its phase under the new interval. */
  change(slot: number, id: AgentId, every: number): void {
    this.ensure(slot);
    this.every[slot] = every;
    this.wait[slot] = lodPhase(id, every);
  }

  /** The slot was freed (despawn): a later agent there starts afresh. */
  freed(slot: number): void {
    if (slot >= this.every.length) return;
    this.every[slot] = 1;
    this.wait[slot] = 0;
    this.last[slot] = Number.NaN;
  }

  /** The interval of the agent in `slot` (1 when never set). */
  intervalOf(slot: number): number {
    return slot < this.every.length ? this.every[slot]! : 1;
  }

  /** Checkpoint form: the three values of each listed slot, in that order. */
  pack(slots: readonly number[]): PackedLod {
    const every = new Int32Array(slots.length);
    const wait = new Int32Array(slots.length);
    const last = new Float64Array(slots.length);
    for (let k = 0; k < slots.length; k++) {
      const slot = slots[k]!;
      const inside = slot < this.every.length;
      every[k] = inside ? this.every[slot]! : 1;
      wait[k] = inside ? this.wait[slot]! : 0;
      last[k] = inside ? this.last[slot]! : Number.NaN;
    }
    return { every, wait, last };
  }

  /** Rebuilds a table from `pack` for the same slots. */
  static unpack(p: PackedLod, slots: ArrayLike<number>): LodTable {
    const t = new LodTable();
    for (let k = 0; k < slots.length; k++) {
      const slot = slots[k]!;
      t.ensure(slot);
      t.every[slot] = p.every[k]!;
      t.wait[slot] = p.wait[k]!;
      t.last[slot] = p.last[k]!;
    }
    return t;
  }
}

/** A LodTable in a checkpoint (checkpoint.ts), per packed agent. */
export interface PackedLod {
  every: Int32Array;
  wait: Int32Array;
  last: Float64Array;
}
