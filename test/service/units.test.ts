// Unit tests of the service's building blocks that need no server: the fixed-rate clock (drift-free,
// skips late ticks, never overlaps), the outbox (slow readers: merge, then goodbye) and the
// message-rate bucket.

import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { decode, type ActionDecision } from '../../src/protocol/index.js';
import { FixedClock, nextPhaseMs, type ClockTick } from '../../src/service/sessions/clock.js';
import { Outbox, OutboxBudget, type OutboundSocket } from '../../src/service/sessions/outbox.js';
import { TokenBucket } from '../../src/service/http/rate.js';

describe('FixedClock', () => {
  let now = 0;
  beforeEach(() => {
    vi.useFakeTimers();
    now = 0;
  });
  afterEach(() => vi.useRealTimers());

  /** Advances fake time in 1 ms steps (timers fire as the real loop would). */
  async function advance(ms: number): Promise<void> {
    for (let i = 0; i < ms; i++) {
      now += 1;
      await vi.advanceTimersByTimeAsync(1);
    }
  }

  test('tick n runs at tree time n/hz exactly, with no accumulated drift', async () => {
    const ticks: ClockTick[] = [];
    const clock = new FixedClock(30, { tick: async (t) => void ticks.push(t), idle: () => {} }, { now: () => now });
    clock.start();
    await advance(10_000);
    await clock.stop();
    expect(ticks.length).toBeGreaterThanOrEqual(299);
    expect(ticks.length).toBeLessThanOrEqual(300);
    ticks.forEach((t, i) => {
      expect(t.n).toBe(i + 1);
      expect(t.time).toBe((i + 1) / 30);
      expect(t.missed).toBe(0);
      expect(t.lateMs).toBeLessThan(1.01);
    });
  });

  test('a tick due while the previous one still runs is skipped and counted', async () => {
    const ticks: ClockTick[] = [];
    let release: (() => void) | undefined;
    const clock = new FixedClock(100, {
      tick: (t) => {
        ticks.push(t);
        // The second tick takes 35 ms: ticks 3, 4 and 5 come due meanwhile.
        if (t.n === 2) return new Promise<void>((resolve) => (release = resolve));
        return Promise.resolve();
      },
      idle: () => {},
    }, { now: () => now });
    clock.start();
    await advance(20);
    expect(ticks.map((t) => t.n)).toEqual([1, 2]);
    await advance(35);
    expect(ticks.map((t) => t.n)).toEqual([1, 2]); // never two ticks at once
    release!();
    await advance(1);
    const next = ticks[2]!;
    expect(next.n).toBe(5);
    expect(next.missed).toBe(2);
    expect(next.dt).toBeCloseTo(0.03);
    expect(next.time).toBe(5 / 100);
    await clock.stop();
  });

  test('stop pauses tree time; start continues the numbering', async () => {
    const ticks: ClockTick[] = [];
    const clock = new FixedClock(10, { tick: async (t) => void ticks.push(t), idle: () => {} }, { now: () => now });
    clock.start();
    await advance(350);
    await clock.stop();
    expect(ticks.map((t) => t.n)).toEqual([1, 2, 3]);
    await advance(5000); // paused: nothing runs, nothing is missed
    clock.start();
    await advance(100);
    expect(ticks.map((t) => t.n)).toEqual([1, 2, 3, 4]);
    expect(ticks[3]).toMatchObject({ time: 0.4, missed: 0 });
    await clock.stop();
  });

  test('a phase moves every tick by the same amount, tree time and numbering unchanged; restarts keep it', async () => {
    const ticks: Array<{ n: number; at: number; time: number }> = [];
    const clock = new FixedClock(20, { tick: async (t) => void ticks.push({ n: t.n, at: now, time: t.time }), idle: () => {} }, { now: () => now, phaseMs: 30 });
    clock.start();
    await advance(79);
    expect(ticks).toEqual([]); // one period and the phase: 80 ms
    await advance(101);
    expect(ticks).toEqual([
      { n: 1, at: 80, time: 0.05 },
      { n: 2, at: 130, time: 0.1 },
      { n: 3, at: 180, time: 0.15 },
    ]);
    await clock.stop();
    await advance(1000);
    clock.start(); // at 1180: the next tick one period and the phase later
    await advance(80);
    expect(ticks.at(-1)).toEqual({ n: 4, at: 1260, time: 0.2 });
    await clock.stop();
  });

  test('clocks started one after another get phases spread over the period (at most 50 ms)', () => {
    const at20 = Array.from({ length: 8 }, () => nextPhaseMs(20));
    for (const p of at20) expect(p >= 0 && p < 50).toBe(true);
    // Any two of eight consecutive phases at least 3 ms apart (golden-ratio steps: no two land together).
    const sorted = at20.toSorted((x, y) => x - y);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThan(3);
    // A slow clock's phase is capped: its first tick waits no more than 50 ms for it; a fast one's fits its period.
    for (let i = 0; i < 8; i++) expect(nextPhaseMs(1)).toBeLessThan(50);
    for (let i = 0; i < 8; i++) expect(nextPhaseMs(60)).toBeLessThan(1000 / 60);
  });

  test('slow rates wake at least once a second for heartbeats', async () => {
    let idle = 0;
    const ticks: number[] = [];
    const clock = new FixedClock(0.25, { tick: async (t) => void ticks.push(t.n), idle: () => void idle++ }, { now: () => now });
    clock.start();
    await advance(4100);
    await clock.stop();
    expect(ticks).toEqual([1]);
    expect(idle).toBeGreaterThanOrEqual(3);
  });
});

describe('Outbox', () => {
  class FakeSocket implements OutboundSocket {
    bufferedAmount = 0;
    readyState = 1;
    sent: Buffer[] = [];
    callbacks: Array<() => void> = [];
    send(data: Buffer, cb?: () => void): void {
      this.sent.push(data);
      if (cb !== undefined) this.callbacks.push(cb);
    }
    /** The kernel took everything: bufferedAmount drops, write callbacks run. */
    drain(): void {
      this.bufferedAmount = 0;
      const cbs = this.callbacks;
      this.callbacks = [];
      for (const cb of cbs) cb();
    }
  }

  function setUp(budget?: OutboxBudget) {
    const socket = new FakeSocket();
    const events = { merged: 0, overflow: 0, drained: 0, sent: 0 };
    const outbox = new Outbox(socket, {
      softBytes: 1000,
      hardBytes: 10_000,
      budget,
      onSent: () => void events.sent++,
      onMerged: () => void events.merged++,
      onOverflow: () => void events.overflow++,
      onDrained: () => void events.drained++,
    });
    return { socket, events, outbox };
  }

  test('sends decisions at once while the socket keeps up', () => {
    const { socket, outbox } = setUp();
    outbox.decisions({ tick: 1, basedOn: 7, actions: [[1, 1, 'go', {}]] });
    expect(socket.sent.map((b) => decode(b))).toEqual([{ t: 'decisions', tick: 1, basedOn: 7, actions: [[1, 1, 'go', {}]] }]);
  });

  test('above the soft cap, decisions are merged (lists concatenated, latest tick and basedOn) and sent once drained', () => {
    const { socket, events, outbox } = setUp();
    outbox.send(Buffer.alloc(10)); // something in flight with a write callback
    socket.bufferedAmount = 5000;
    outbox.decisions({ tick: 1, basedOn: 7, actions: [[1, 1, 'go', {}]], done: [[2, 'success']] });
    const reused: Array<[number, number]> = [[1, 1]];
    outbox.decisions({ tick: 2, basedOn: 8, cancels: reused, errors: [[3, 'E_PLUGIN', 'x']] });
    reused.length = 0; // the caller may reuse its lists
    outbox.decisions({ tick: 3, actions: [[1, 2, 'stop', {}]] });
    expect(socket.sent.length).toBe(1);
    expect(events.merged).toBe(3);
    expect(outbox.holding).toBe(true);
    socket.drain();
    expect(outbox.holding).toBe(false);
    expect(decode(socket.sent[1]!)).toEqual({
      t: 'decisions',
      tick: 3,
      basedOn: 8,
      actions: [
        [1, 1, 'go', {}],
        [1, 2, 'stop', {}],
      ],
      cancels: [[1, 1]],
      done: [[2, 'success']],
      errors: [[3, 'E_PLUGIN', 'x']],
    });
    expect(events.drained).toBe(1);
  });

  test('past the hard cap the reader is dropped once, and nothing more is sent', () => {
    const { socket, events, outbox } = setUp();
    socket.bufferedAmount = 20_000;
    outbox.send(Buffer.alloc(10));
    expect(events.overflow).toBe(1);
    outbox.decisions({ tick: 1, actions: [[1, 1, 'go', {}]] });
    outbox.send(Buffer.alloc(10));
    expect(events.overflow).toBe(1);
    expect(socket.sent.length).toBe(1);
    outbox.last(Buffer.from('bye'));
    expect(socket.sent.length).toBe(2);
  });

  test('held decisions count toward the hard cap', () => {
    const { socket, events, outbox } = setUp();
    socket.bufferedAmount = 2000;
    const actions = Array.from({ length: 1000 }, (_, i): ActionDecision => [i, 1, 'go', {}]);
    outbox.decisions({ tick: 1, actions });
    expect(events.overflow).toBe(1);
  });

  test('held decisions with long client strings count their real size: the hard cap holds (slow reader memory)', () => {
    const { socket, events, outbox } = setUp();
    socket.bufferedAmount = 2000;
    const waypoint = 'w'.repeat(1000);
    let accepted = 0;
    while (events.overflow === 0 && accepted < 10_000) {
      outbox.decisions({ tick: accepted, actions: [[accepted, 1, 'goto', { waypoint }]] });
      accepted++;
    }
    // Each held decision is over 1000 bytes encoded: at most ~8 fit under the 10,000-byte cap
    // beside the 2000 unsent (counted at 32 bytes each, 250 were held).
    expect(events.overflow).toBe(1);
    expect(accepted * 1000).toBeLessThanOrEqual(10_000);
    expect(outbox.bytes).toBeLessThanOrEqual(10_000);
  });

  test('the service-wide budget drops a lagging socket once all of them together pass it', () => {
    const budget = new OutboxBudget(12_000);
    const a = setUp(budget);
    const b = setUp(budget);
    a.socket.bufferedAmount = 2000;
    b.socket.bufferedAmount = 2000;
    const waypoint = 'w'.repeat(1000);
    for (let i = 0; i < 4; i++) {
      a.outbox.decisions({ tick: i, actions: [[i, 1, 'goto', { waypoint }]] });
      b.outbox.decisions({ tick: i, actions: [[i, 1, 'goto', { waypoint }]] });
    }
    // Each is under its own 10,000-byte cap, together they pass 12,000: one of them goes.
    expect(a.events.overflow + b.events.overflow).toBe(1);
    expect(budget.used).toBeLessThanOrEqual(12_000);
    a.outbox.release();
    b.outbox.release();
    expect(budget.used).toBe(0);
  });

  test('a closed socket gets nothing', () => {
    const { socket, outbox } = setUp();
    socket.readyState = 3;
    expect(outbox.send(Buffer.alloc(1))).toBe(false);
    outbox.decisions({ tick: 1 });
    expect(socket.sent).toEqual([]);
  });
});

describe('TokenBucket (CANOPY_MAX_MESSAGE_RATE)', () => {
  test('a burst of one second passes, then one token per 1/rate s', () => {
    const bucket = new TokenBucket(10, 0);
    for (let i = 0; i < 10; i++) expect(bucket.take(0)).toBe(true);
    expect(bucket.take(0)).toBe(false);
    expect(bucket.msUntilToken(0)).toBe(100);
    expect(bucket.take(50)).toBe(false);
    expect(bucket.msUntilToken(50)).toBe(50);
    expect(bucket.take(100)).toBe(true);
    expect(bucket.take(100)).toBe(false);
    // Idle time refills up to one second's worth, never more.
    let passed = 0;
    while (bucket.take(60_000)) passed++;
    expect(passed).toBe(10);
  });

  test('0 is unlimited', () => {
    const bucket = new TokenBucket(0, 0);
    for (let i = 0; i < 100_000; i++) expect(bucket.take(0)).toBe(true);
    expect(bucket.msUntilToken(0)).toBe(0);
  });
});
