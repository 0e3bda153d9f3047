// The memory of large snapshot frames, used again once nothing holds a frame: a game server sends one of the same
// size tick after tick, and a new buffer of hundreds of KB each time is memory the kernel hands over page by page
// (a page fault each; ~11 µs on a VM we measured), about as much as encoding the rows costs (docs/capacity.md,
// "Round thirty").

import { carve } from '../protocol/index.js';

/** Frames from this size on are pooled (smaller ones share the codec's slab). */
export const MIN_POOLED_BYTES = 64 * 1024;

/** Free buffers kept at most. */
const MAX_FREE = 4;

/**
 * Buffers for frames, each handed out with its holders counted: a frame goes back to the free list when the last
 * holder lets go — ws once it has written the frame out (its send callback), and in lockstep the resend list once
 * the frame's tick is answered or the session is gone. A frame nobody lets go of (a callback that never comes) is
 * left to the collector, like any buffer.
 */
export class FrameBuffers {
  private readonly free: Buffer[] = [];
  private readonly holds = new WeakMap<Uint8Array, { whole: Buffer; count: number }>();

  /**
   * `size` bytes for a frame: from MIN_POOLED_BYTES on a view of a pooled buffer with no holder yet (see hold), below
   * that carved from the codec's shared slab (not pooled: hold and release leave it alone).
   */
  take = (size: number): Buffer => {
    if (size < MIN_POOLED_BYTES) return carve(size);
    let whole: Buffer | undefined;
    for (let i = this.free.length - 1; i >= 0; i--) {
      if (this.free[i]!.length >= size) {
        whole = this.free.splice(i, 1)[0]!;
        break;
      }
    }
    // A quarter more than asked, in 64 KB steps: the next frames are a little larger or smaller.
    whole ??= Buffer.allocUnsafeSlow(Math.ceil((size * 1.25) / MIN_POOLED_BYTES) * MIN_POOLED_BYTES);
    const frame = whole.subarray(0, size);
    this.holds.set(frame, { whole, count: 0 });
    return frame;
  };

  /** One more holder of `frame` (a no-op for a frame not from take). */
  hold(frame: Uint8Array): void {
    const h = this.holds.get(frame);
    if (h !== undefined) h.count++;
  }

  /** One holder of `frame` lets go; the last one's gives its buffer back. */
  release(frame: Uint8Array): void {
    const h = this.holds.get(frame);
    if (h === undefined || --h.count > 0) return;
    this.holds.delete(frame);
    if (this.free.length < MAX_FREE) this.free.push(h.whole);
  }

  /** Whether `frame` came from take and has not gone back to the free list (the client writes such a frame with a hold). */
  held(frame: Uint8Array): boolean {
    return this.holds.has(frame);
  }
}
