// Crash recovery's checkpoint cadence (docs/durability.md, "Cadence"): due by session time, then after at least
// `minTicks` logged ticks unless the input logged since is as large as the last checkpoint.

import { describe, expect, it } from 'vitest';
import { RecoveryJournal } from '../../src/service/pool/recovery.js';
import { packSpawnOrders } from '../../src/service/pool/spawns.js';
import type { ResultBatch, TickOrder } from '../../src/service/pool/wire.js';

function tick(n: number, dt: number, results: ResultBatch | null = null): TickOrder {
  return {
    t: 'tick', req: n, session: 's', time: n * dt, dt, clear: false, bb: null, objects: null, rows: null, frameRows: null, results,
    world: null, columns: -1, tick: n,
  };
}

/** Runs `ticks` tick orders through a journal, checkpointing (with `bytes` bytes) whenever one is due; returns the due ticks. */
function dueTicks(journal: RecoveryJournal, ticks: number, dt: number, bytes: number, input: (n: number) => ResultBatch | null = () => null): number[] {
  journal.record(0, { t: 'spawn', session: 's', fields: null, agents: packSpawnOrders([]) });
  const due: number[] = [];
  for (let n = 1; n <= ticks; n++) {
    const order = tick(n, dt, input(n));
    if (!journal.record(0, order)) continue;
    due.push(n);
    journal.requested(0, 's', 1000 + n, order.time);
    journal.checkpointed(0, 's', { t: 'checkpointed', req: 1000 + n, agents: 1, bytes: new Uint8Array(bytes), ms: 0, longestMs: 0 });
  }
  return due;
}

describe('checkpoint cadence', () => {
  it('at 16 Hz: every 2 s of session time (32 ticks), the first 2 s after the first tick', () => {
    // 1/16 s: exact in binary, so the session times add up exactly.
    expect(dueTicks(new RecoveryJournal(1, 2000, 20), 100, 0.0625, 1000)).toEqual([33, 65, 97]);
  });

  it('at 1 Hz: every 20 ticks, not every other tick', () => {
    expect(dueTicks(new RecoveryJournal(1, 2000, 20), 50, 1, 1000)).toEqual([3, 23, 43]);
    expect(dueTicks(new RecoveryJournal(1, 2000, 1), 7, 1, 1000)).toEqual([3, 5, 7]);
  });

  it('at 1 Hz with input as large as the checkpoint: as soon as the 2 s have passed', () => {
    // 120 bytes of results a tick against a 200-byte checkpoint: the log outgrows it after 2 ticks.
    const results = (): ResultBatch => ({ count: 10, data: new Float64Array(30).subarray(0, 15) });
    expect(dueTicks(new RecoveryJournal(1, 2000, 20), 9, 1, 200, results)).toEqual([3, 5, 7, 9]);
  });

  it('a new session: not on its first tick (a burst of spawns packs nothing at once), whatever time it starts at', () => {
    // A game whose session time starts far from 0: the first checkpoint is still 2 s after its first tick.
    const journal = new RecoveryJournal(1, 2000, 20);
    journal.record(0, { t: 'spawn', session: 's', fields: null, agents: packSpawnOrders([]) });
    const at = (n: number): TickOrder => ({ ...tick(n, 0.05), time: 1000 + n * 0.05 });
    const due = [];
    for (let n = 1; n <= 60; n++) if (journal.record(0, at(n))) due.push(n);
    expect(due[0]).toBe(41);
    // A lockstep game that keeps time still: at the latest after MAX_LOGGED_TICKS ticks.
    const still = new RecoveryJournal(1, 2000, 20);
    still.record(0, { t: 'spawn', session: 's', fields: null, agents: packSpawnOrders([]) });
    let first = 0;
    for (let n = 1; n <= 300 && first === 0; n++) if (still.record(0, { ...tick(n, 0), time: 5 })) first = n;
    expect(first).toBe(200);
    // checkpointMs 0: every tick, the first included.
    expect(dueTicks(new RecoveryJournal(1, 0, 1), 3, 1, 1000)).toEqual([1, 2, 3]);
  });

  it('sessions that start together checkpoint on different ticks of the worker', () => {
    // Four sessions spawned on one worker and ticked together at 20 Hz: the first checkpoints 2 s after its first
    // tick, the others earlier by a phase within the first second; from then on each keeps its phase.
    const journal = new RecoveryJournal(1, 2000, 20);
    const names = ['a', 'b', 'c', 'd'];
    for (const session of names) journal.record(0, { t: 'spawn', session, fields: null, agents: packSpawnOrders([]) });
    const due = new Map<string, number[]>(names.map((n) => [n, []]));
    for (let n = 1; n <= 130; n++) {
      for (const session of names) {
        const order = { ...tick(n, 0.05), session };
        if (!journal.record(0, order)) continue;
        due.get(session)!.push(n);
        journal.requested(0, session, 1000 * n + names.indexOf(session), order.time);
        journal.checkpointed(0, session, { t: 'checkpointed', req: 1000 * n + names.indexOf(session), agents: 1, bytes: new Uint8Array(1000), ms: 0, longestMs: 0 });
      }
    }
    const firsts = names.map((n) => due.get(n)![0]!);
    expect(firsts[0]).toBe(41);
    expect(new Set(firsts).size).toBe(4);
    for (const f of firsts) expect(f).toBeGreaterThan(20);
    for (const n of names) {
      const ticks = due.get(n)!;
      expect(ticks.length).toBeGreaterThanOrEqual(3);
      // 2 s at 20 Hz; 0.05 is not exact in binary, so the session time may reach 2 s one tick later.
      for (let i = 1; i < ticks.length; i++) expect([40, 41]).toContain(ticks[i]! - ticks[i - 1]!);
    }
  });

  it('after a reload, the next tick takes one', () => {
    const journal = new RecoveryJournal(1, 2000, 20);
    expect(dueTicks(journal, 5, 1, 1000)).toEqual([3]);
    journal.treesChanged();
    expect(journal.record(0, tick(6, 1))).toBe(true);
  });
});
