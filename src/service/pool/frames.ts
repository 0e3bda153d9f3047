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
//
// A large message can also be received straight into one of these buffers (receive(), used by the WebSocket
// receiver: ../receive.ts), and is then handed to the workers as it is, without a copy. The receiver is one more
// holder, released by whoever knows the message is done with (ws.ts, once a lockstep session's message is handled).

import { copyBytes } from './copy-bytes.js';
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
  /** Buffers handed out by copy() and receive() and not yet back (weakly: a buffer dropped unreleased takes its entry). */
  private readonly out = new WeakMap<ArrayBufferLike, Entry>();
  /** Buffers reused and allocated so far (figures and tests). */
  reused = 0;
  allocated = 0;

  constructor(maxFreeBytes = MAX_FREE_BYTES) {
    this.free = new FreeBuffers(maxFreeBytes);
  }

  /**
   * `bytes` in shared memory: `bytes` itself when it is already in a buffer of this pool (received()), else a copy,
   * a view of exactly its length on a free buffer when one fits.
   */
  copy(bytes: Uint8Array): Uint8Array {
    if (this.out.has(bytes.buffer)) return bytes;
    const view = new Uint8Array(this.take(bytes.length, 0), 0, bytes.length);
    copyBytes(bytes, view, 0, 0, bytes.length);
    return view;
  }

  /**
   * A Buffer of `length` bytes for a message being received, on a free buffer when one fits, held once by the
   * receiver: it goes back to the free list only after release() for the receiver too. Unreleased, it is left to
   * the garbage collector.
   */
  receive(length: number): Buffer {
    return Buffer.from(this.take(length, 1), 0, length);
  }

  /** True when `bytes` lies in a buffer of this pool (copied or received here and not yet back). */
  pooled(bytes: Uint8Array): boolean {
    return this.out.has(bytes.buffer);
  }

  /** One more holder of `frame` (a worker it is posted to, a log keeping it). No-op for frames not in this pool. */
  hold(frame: Uint8Array): void {
    const e = this.out.get(frame.buffer);
    if (e !== undefined) e.holds++;
  }

  /** A holder let go of `frame`; the last one returns its buffer to the free list. */
  release(frame: Uint8Array): void {
    const buffer = frame.buffer;
    const e = this.out.get(buffer);
    if (e === undefined || e.holds <= 0) return;
    if (--e.holds > 0) return;
    this.out.delete(buffer);
    this.free.give(e.buffer);
  }

  /** A buffer for `length` bytes, counted out with `holds` holders. */
  private take(length: number, holds: number): SharedArrayBuffer {
    const size = Math.max(GRAIN, Math.ceil(length / GRAIN) * GRAIN);
    let buffer = this.free.take(size);
    if (buffer === undefined) {
      buffer = new SharedArrayBuffer(size);
      this.allocated++;
    } else {
      this.reused++;
    }
    this.out.set(buffer, { buffer, holds });
    return buffer;
  }
}

/** The process's frame buffers: the workers' copies (every WorkerPool's) and the messages received into them. */
export const framePool = new FramePool();

/** Holders of frames: what the recovery journal tells about the frames it keeps and drops. */
export interface FrameHolds {
  hold(frame: Uint8Array): void;
  release(frame: Uint8Array): void;
}
