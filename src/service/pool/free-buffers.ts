// Buffers given back for reuse, kept by size up to a budget (the shared frame copies of frames.ts, the recovery log's
// copies of recovery.ts, a worker's local checkpoints in checkpoint.ts): a reused buffer is neither new memory for the
// kernel to fault in nor a new ArrayBuffer for the collector to account for.

/** Free buffers by byte length; at most `maxBytes` of them are kept, the rest left to the garbage collector. */
export class FreeBuffers<B extends ArrayBufferLike> {
  private readonly bySize = new Map<number, B[]>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * A free buffer of `size` bytes, or else the smallest kept one of at most 1.5 × `size` (callers view exactly the
   * bytes they need); undefined when none is kept. Frames of a session straddle a size class (320 and 384 KB at
   * 12,500 rows): taken by exact size only, the free list filled with one class while the other was allocated anew,
   * about one frame in twenty (docs/capacity.md, "Round twenty-five").
   */
  take(size: number): B | undefined {
    let list = this.bySize.get(size);
    if (list === undefined || list.length === 0) {
      let best = Infinity;
      for (const [kept, buffers] of this.bySize) {
        if (kept > size && kept < best && buffers.length > 0 && kept <= size * 1.5) best = kept;
      }
      list = best === Infinity ? undefined : this.bySize.get(best);
    }
    const b = list?.pop();
    if (b !== undefined) this.bytes -= b.byteLength;
    return b;
  }

  /** Keeps `buffer` for a later take(), unless the budget is spent. */
  give(buffer: B): void {
    const size = buffer.byteLength;
    if (this.bytes + size > this.maxBytes) return;
    let list = this.bySize.get(size);
    if (list === undefined) this.bySize.set(size, (list = []));
    list.push(buffer);
    this.bytes += size;
  }
}
