// Shared copies of snapshot frames for the workers (WorkerPool.shareFrame), reused once every holder let go.
//
// A frame's rows stay in its bytes until the workers read them (docs/capacity.md): the main thread copies each
// frame once into shared memory. A fresh SharedArrayBuffer per frame is zero-filled memory the kernel must fault
// in, then external memory for the garbage collector to account for; 80 frames a second at 50,000 agents. Here
// the buffers are counted out and back in: a copy is held once per worker it is posted to (until that worker
// answers the tick: it reads the rows before ticking) and once per recovery log that keeps it (until a
// checkpoint covers the tick). At zero holds it goes back to a free list. A copy some holder never gives back
// (a log forgotten with its worker, a session dropped) is simply left to the garbage collector: a missed
// release costs an allocation, never a frame overwritten while someone may still read it.

import { FreeBuffers } from './free-buffers.js';

/** Buffer sizes are rounded up to this, so that frames of a session, a few bytes apart, fit each other's buffers. */
const GRAIN = 64 * 1024;
/** Free buffers kept at most (bytes): enough for four sessions' 2 s of 12,500-row frames between checkpoints. */
export const MAX_FREE_BYTES = 64 * 1024 * 1024;

interface Entry {
  readonly buffer: SharedArrayBuffer;
  holds: number;
}

export class FramePool {
  private readonly free: FreeBuffers<SharedArrayBuffer>;
  /** Frames handed out by copy() and not yet back, by their view (weakly: a view dropped unreleased takes its entry). */
  private readonly out = new WeakMap<Uint8Array, Entry>();
  /** Buffers reused and allocated so far (figures and tests). */
  reused = 0;
  allocated = 0;

  constructor(maxFreeBytes = MAX_FREE_BYTES) {
    this.free = new FreeBuffers(maxFreeBytes);
  }

  /** `bytes` copied into shared memory: a view of exactly its length, on a free buffer when one fits. */
  copy(bytes: Uint8Array): Uint8Array {
    const size = Math.max(GRAIN, Math.ceil(bytes.length / GRAIN) * GRAIN);
    let buffer = this.free.take(size);
    if (buffer === undefined) {
      buffer = new SharedArrayBuffer(size);
      this.allocated++;
    } else {
      this.reused++;
    }
    const view = new Uint8Array(buffer, 0, bytes.length);
    view.set(bytes);
    this.out.set(view, { buffer, holds: 0 });
    return view;
  }

  /** One more holder of `frame` (a worker it is posted to, a log keeping it). No-op for frames not from copy(). */
  hold(frame: Uint8Array): void {
    const e = this.out.get(frame);
    if (e !== undefined) e.holds++;
  }

  /** A holder let go of `frame`; the last one returns its buffer to the free list. */
  release(frame: Uint8Array): void {
    const e = this.out.get(frame);
    if (e === undefined || e.holds <= 0) return;
    if (--e.holds > 0) return;
    this.out.delete(frame);
    this.free.give(e.buffer);
  }
}

/** Holders of frames: what the recovery journal tells about the frames it keeps and drops. */
export interface FrameHolds {
  hold(frame: Uint8Array): void;
  release(frame: Uint8Array): void;
}
