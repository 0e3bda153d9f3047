// The shared frame copies (pool/frames.ts): a buffer goes back to the free list only when every holder let go,
// and a copy nobody released is never handed out again while it is still out.

import { describe, expect, it } from 'vitest';
import { FramePool } from '../../src/service/pool/frames.js';

const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

describe('FramePool', () => {
  it('copies the bytes into shared memory, a view of exactly their length', () => {
    const pool = new FramePool();
    const f = pool.copy(bytes(1000, 7));
    expect(f.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(f.length).toBe(1000);
    expect(f.every((b) => b === 7)).toBe(true);
  });

  it('reuses a buffer only after its last holder released it', () => {
    const pool = new FramePool();
    const a = pool.copy(bytes(300_000, 1));
    pool.hold(a); // worker 1
    pool.hold(a); // worker 2
    pool.hold(a); // the recovery log
    pool.release(a);
    pool.release(a);
    const b = pool.copy(bytes(300_000, 2));
    expect(b.buffer).not.toBe(a.buffer); // the log still holds a
    expect(a[0]).toBe(1);
    pool.release(a);
    const c = pool.copy(bytes(299_000, 3)); // another frame of the same session, a little smaller
    expect(c.buffer).toBe(a.buffer);
    expect(c.length).toBe(299_000);
    expect(pool.reused).toBe(1);
  });

  it('never frees a frame nobody held, nor one released more often than held', () => {
    const pool = new FramePool();
    const a = pool.copy(bytes(100, 1));
    pool.release(a); // not held: ignored (a discarded batch is never posted)
    expect(pool.copy(bytes(100, 2)).buffer).not.toBe(a.buffer);
    pool.hold(a);
    pool.release(a);
    pool.release(a);
    const c = pool.copy(bytes(100, 3));
    expect(c.buffer).toBe(a.buffer);
    expect(pool.copy(bytes(100, 4)).buffer).not.toBe(a.buffer); // handed out once, not twice
  });

  it("a frame takes a free buffer of the next size classes when its own has none (a session's frames straddle a class), never one over half again its size", () => {
    const pool = new FramePool();
    const big = pool.copy(bytes(330_000, 1)); // 384 KB
    const huge = pool.copy(bytes(600_000, 1)); // 640 KB
    for (const f of [big, huge]) {
      pool.hold(f);
      pool.release(f);
    }
    const small = pool.copy(bytes(320_000, 2)); // its class is 320 KB: none free
    expect(small.buffer).toBe(big.buffer);
    expect(small.length).toBe(320_000);
    expect(small.every((b) => b === 2)).toBe(true);
    expect(pool.copy(bytes(300_000, 3)).buffer).not.toBe(huge.buffer); // 640 KB is more than 1.5 × 320 KB
    expect(pool.copy(bytes(500_000, 4)).buffer).toBe(huge.buffer); // 512 KB: 640 KB is within 1.5 ×
    expect(pool.reused).toBe(2);
  });

  it('keeps at most its cap of free buffers; frames of another size class get their own', () => {
    const pool = new FramePool(64 * 1024);
    const a = pool.copy(bytes(10, 1));
    const b = pool.copy(bytes(10, 1));
    for (const f of [a, b]) {
      pool.hold(f);
      pool.release(f);
    }
    expect(pool.copy(bytes(10, 2)).buffer).toBe(a.buffer);
    expect(pool.copy(bytes(10, 2)).buffer).not.toBe(b.buffer); // b was over the cap: left to the GC
    expect(pool.copy(bytes(200_000, 2)).buffer.byteLength).toBe(256 * 1024);
  });

  it('makes room for the sizes in use: frames that grew past the free buffers evict them instead of being dropped', () => {
    // Room for four 256 KB buffers, or two 448 KB ones.
    const pool = new FramePool(4 * 256 * 1024);
    const early = [pool.copy(bytes(200_000, 1)), pool.copy(bytes(200_000, 1)), pool.copy(bytes(200_000, 1))];
    for (const f of early) {
      pool.hold(f);
      pool.release(f);
    }
    // The game went on and its frames grew to the 448 KB class: none of the free buffers fits them.
    const grown = [pool.copy(bytes(420_000, 2)), pool.copy(bytes(420_000, 2))];
    expect(pool.allocated).toBe(5);
    for (const f of grown) {
      pool.hold(f);
      pool.release(f);
    }
    // Both were kept (the 256 KB buffers made room), so the next frames of that size reuse them.
    const next = [pool.copy(bytes(421_000, 3)), pool.copy(bytes(419_000, 3))];
    expect(next.map((f) => f.buffer)).toEqual(expect.arrayContaining(grown.map((f) => f.buffer)));
    expect(pool.allocated).toBe(5);
    expect(next.every((f) => f.every((b) => b === 3))).toBe(true);
    // An early-sized frame finds no 256 KB buffer any more: they were the least recently used, and went.
    expect(early.map((f) => f.buffer)).not.toContain(pool.copy(bytes(200_000, 4)).buffer);
  });
});
