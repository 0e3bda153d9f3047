// The SDK's small parts on their own: backoff timing, the typed emitter, the row writer.

import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_RECONNECT, Emitter, RowWriter, backoffDelay } from '../../src/client/index.js';
import { FrameBuffers } from '../../src/client/frame-buffers.js';

describe('backoffDelay', () => {
  const options = { minDelayMs: 100, maxDelayMs: 1000 };

  it('doubles from minDelayMs up to maxDelayMs, jittered into the upper half of each step', () => {
    const low = [1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, options, 0, () => 0));
    const high = [1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, options, 0, () => 0.999999));
    expect(low).toEqual([50, 100, 200, 400, 500, 500]);
    expect(high).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('never goes below a goodbye.retryAfterMs floor', () => {
    expect(backoffDelay(1, options, 5000, () => 0.5)).toBe(5000);
    expect(backoffDelay(4, options, 10, () => 0.5)).toBe(600);
  });

  it('stays finite for huge attempt numbers', () => {
    expect(backoffDelay(10_000, options, 0, () => 1)).toBe(1000);
  });

  it('defaults: enabled, 250 ms to 5 s, no attempt limit', () => {
    expect(DEFAULT_RECONNECT).toEqual({ enabled: true, minDelayMs: 250, maxDelayMs: 5000, maxAttempts: Infinity });
  });
});

describe('Emitter', () => {
  class Test extends Emitter<{ a: number; b: string }> {
    fire<K extends 'a' | 'b'>(event: K, payload: { a: number; b: string }[K]): void {
      this.emit(event, payload);
    }
  }

  it('calls listeners in order, once() once, and unsubscribes', () => {
    const t = new Test();
    const seen: string[] = [];
    const off = t.on('a', (n) => seen.push(`on ${n}`));
    t.once('a', (n) => seen.push(`once ${n}`));
    t.fire('a', 1);
    t.fire('a', 2);
    off();
    t.fire('a', 3);
    expect(seen).toEqual(['on 1', 'once 1', 'on 2']);
    expect(t.listenerCount('a')).toBe(0);
  });

  it('next() resolves on the first matching event and times out otherwise', async () => {
    const t = new Test();
    const next = t.next('a', (n) => n > 1);
    t.fire('a', 1);
    t.fire('a', 2);
    expect(await next).toBe(2);
    expect(t.listenerCount('a')).toBe(0);
    await expect(t.next('b', undefined, 5)).rejects.toThrow('no b event within 5 ms');
    expect(t.listenerCount('b')).toBe(0);
  });

  it('a throwing listener does not stop the others; its error is rethrown from a microtask', () => {
    const t = new Test();
    const seen: number[] = [];
    const deferred: Array<() => void> = [];
    vi.stubGlobal('queueMicrotask', (task: () => void) => deferred.push(task));
    try {
      t.on('a', () => {
        throw new Error('listener bug');
      });
      t.on('a', (n) => seen.push(n));
      t.fire('a', 1);
    } finally {
      vi.unstubAllGlobals();
    }
    expect(seen).toEqual([1]);
    expect(deferred).toHaveLength(1);
    expect(() => deferred[0]!()).toThrow('listener bug');
  });
});

describe('RowWriter', () => {
  it('reuses its row arrays batch after batch and returns the same list', () => {
    const rows = new RowWriter(['x', 'y']);
    rows.begin();
    const a = rows.row(1);
    const b = rows.row(2);
    a[1] = 5;
    const first = rows.rows();
    expect(first).toEqual([[1, 5, null], [2, null, null]]);

    rows.begin();
    expect(rows.row(3)).toBe(a);
    expect(rows.row(4)).toBe(b);
    expect(rows.rows()).toBe(first);
    expect(rows.rows()).toEqual([[3, 5, null], [4, null, null]]); // values stay until overwritten
    rows.clear();
    expect(rows.rows()).toEqual([[3, null, null], [4, null, null]]);
  });

  it('trims to the batch when it shrinks and grows when it grows', () => {
    const rows = new RowWriter(['hp']);
    rows.begin().row(1);
    rows.row(2);
    rows.row(3);
    expect(rows.rows()).toHaveLength(3);
    rows.begin().row(9);
    expect(rows.length).toBe(1);
    expect(rows.rows()).toEqual([[9, null]]);
    rows.begin().row(1);
    rows.row(2);
    expect(rows.rows()).toEqual([[1, null], [2, null]]);
  });

  it('columns: 1-based positions of the fields; unknown fields throw', () => {
    const rows = new RowWriter(['x', 'y', 'hp']);
    expect(['x', 'y', 'hp'].map((f) => rows.column(f))).toEqual([1, 2, 3]);
    expect(rows.width).toBe(4);
    expect(() => rows.column('mana')).toThrow('unknown observation field "mana"');
  });
});

describe('FrameBuffers', () => {
  it('gives a frame’s memory to a new frame only once every holder has let go', () => {
    const frames = new FrameBuffers();
    const first = frames.take(100_000);
    expect(first.length).toBe(100_000);
    frames.hold(first); // the socket
    frames.hold(first); // the resend list
    frames.release(first);
    const second = frames.take(90_000);
    expect(second.buffer).not.toBe(first.buffer); // still held
    frames.release(first);
    expect(frames.held(first)).toBe(false);
    const third = frames.take(120_000);
    expect(third.buffer).toBe(first.buffer); // 100,000 asked, 128 KB given: room for 120,000
    expect(third.length).toBe(120_000);
    frames.release(Buffer.alloc(8)); // not from take: nothing happens
  });
});
