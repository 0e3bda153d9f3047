// Buffers given back for reuse, kept by size up to a budget (the shared frame copies of frames.ts, the recovery log's
// copies of recovery.ts): a reused buffer is neither new memory for the kernel to fault in nor a new ArrayBuffer for
// the collector to account for.

/** Free buffers by byte length; at most `maxBytes` of them are kept, the rest left to the garbage collector. */
export class FreeBuffers<B extends ArrayBufferLike> {
  private readonly bySize = new Map<number, B[]>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** A free buffer of exactly `size` bytes, or undefined when none is kept. */
  take(size: number): B | undefined {
    const b = this.bySize.get(size)?.pop();
    if (b !== undefined) this.bytes -= size;
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
