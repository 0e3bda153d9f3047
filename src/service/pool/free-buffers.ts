// Buffers given back for reuse, kept by size up to a budget (the shared frame copies of frames.ts, the recovery log's
// copies of recovery.ts, a worker's local checkpoints in checkpoint.ts): a reused buffer is neither new memory for the
// kernel to fault in nor a new ArrayBuffer for the collector to account for.

/**
 * Free buffers by byte length; at most `maxBytes` of them are kept. When a buffer given back does not fit the budget,
 * buffers of the size classes least recently taken or given are dropped to make room (left to the garbage
 * collector), so the budget follows the sizes in use: a session whose frames grew from 320 to 448 KB as its game
 * went on kept the budget full of 256 and 320 KB buffers no frame could use any more, and each new 448 KB frame was
 * fresh shared memory, released only by a mark-compact that hardly came — 4 MB of RSS a second at fixed-mode
 * 100,000 agents (docs/capacity.md, "Round thirty-three").
 */
export class FreeBuffers<B extends ArrayBufferLike> {
  /** Lists by size, least recently used class first (a class is moved to the end when taken from or given to). */
  private readonly bySize = new Map<number, B[]>();
  private bytes = 0;
  /** Buffers dropped to make room for a size in use (figures and tests). */
  evicted = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * A free buffer of `size` bytes, or else the smallest kept one of at most 1.5 × `size` (callers view exactly the
   * bytes they need); undefined when none is kept. Frames of a session straddle a size class (320 and 384 KB at
   * 12,500 rows): taken by exact size only, the free list filled with one class while the other was allocated anew,
   * about one frame in twenty (docs/capacity.md, "Round twenty-five").
   */
  take(size: number): B | undefined {
    let kept = size;
    let list = this.bySize.get(size);
    if (list === undefined || list.length === 0) {
      let best = Infinity;
      for (const [k, buffers] of this.bySize) {
        if (k > size && k < best && buffers.length > 0 && k <= size * 1.5) best = k;
      }
      kept = best;
      list = best === Infinity ? undefined : this.bySize.get(best);
    }
    const b = list?.pop();
    if (b === undefined) return undefined;
    this.bytes -= b.byteLength;
    this.touch(kept, list!);
    return b;
  }

  /** Keeps `buffer` for a later take(), dropping buffers of the least recently used other sizes if the budget needs it. */
  give(buffer: B): void {
    const size = buffer.byteLength;
    if (size > this.maxBytes) return;
    for (const [k, buffers] of this.bySize) {
      if (this.bytes + size <= this.maxBytes) break;
      if (k === size) continue;
      while (buffers.length > 0 && this.bytes + size > this.maxBytes) {
        buffers.pop();
        this.bytes -= k;
        this.evicted++;
      }
      if (buffers.length === 0) this.bySize.delete(k);
    }
    if (this.bytes + size > this.maxBytes) return;
    const list = this.bySize.get(size) ?? [];
    list.push(buffer);
    this.bytes += size;
    this.touch(size, list);
  }

  /** Size class `size` used now: last in the eviction order (empty classes are forgotten). */
  private touch(size: number, list: B[]): void {
    this.bySize.delete(size);
    if (list.length > 0) this.bySize.set(size, list);
  }
}
