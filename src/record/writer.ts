// Writes one recording: records are copied into the block being filled (a memcpy on the session's path; the
// frames themselves are not kept alive), and whole blocks are handed by reference to a BlockSink (blocks.ts; in
// the service, its recording thread), which compresses them and appends them to the file, in order. Nothing
// here is ever awaited by a tick; a failing disk stops the recording, never the session.

import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { encode } from '../protocol/index.js';
import { DEFAULT_ZSTD_LEVEL, resolveCodec, type Codec, type CodecChoice } from './codec.js';
import { poolSink, type BlockSink } from './blocks.js';
import { FORMAT_VERSION, Kind, MAGIC, partFileName, type RecordingHeader, type TreeTable } from './format.js';

/** What a writer needs to know; the header fields that do not change between parts. */
export interface WriterOptions {
  readonly dir: string;
  /** Recording id (a safe file-name stem). */
  readonly recording: string;
  readonly header: Omit<RecordingHeader, 'format' | 'part' | 'startedAt' | 'recording'>;
  /** A part that reaches this many bytes on disk is closed and the next part begins (0: never). */
  readonly maxBytes: number;
  /**
   * Raw bytes gathered before a block is compressed and written. Default 1 MiB: a block then spans several
   * ticks of a large session, so the compressor finds the rows that did not change since the last tick
   * (a fifth fewer bytes than 256 KiB blocks on the load generator's snapshots, at the same CPU).
   */
  readonly blockBytes?: number;
  /** A block is written at the latest this long after its first record. Default 1000 ms. */
  readonly flushMs?: number;
  /** Bytes waiting for compression or the disk above which the recording stops (it fell behind). Default 256 MiB. */
  readonly maxPendingBytes?: number;
  /**
   * Block codec: `auto` (default) is zstd where this Node has it (≥ 22.15), Brotli quality 1 otherwise; on
   * snapshot frames zstd −6 takes less than half of Brotli's CPU for about an eighth more bytes. `zstd` on an
   * older Node throws.
   */
  readonly codec?: CodecChoice;
  /** zstd level (negative: faster, larger). Default {@link DEFAULT_ZSTD_LEVEL}; benchmarks compare others. */
  readonly zstdLevel?: number;
  /**
   * Compresses and appends full blocks. The service gives its compression thread (src/service/recording/compressor.ts);
   * default: libuv's thread pool ({@link poolSink}).
   */
  readonly sink?: BlockSink;
  /** Compressed bytes reached the file `path`. */
  readonly onWritten?: (bytes: number, path: string) => void;
  /** A part file is begun (called before anything is written to it). */
  readonly onPartStarted?: (path: string) => void;
  /** A part was finished (rotation or the end). */
  readonly onPartClosed?: (path: string) => void;
  /** The recording stopped on an error (once). The session goes on. */
  readonly onError: (err: Error) => void;
}

/** One recording being written, part after part. */
export class RecordingWriter {
  private readonly opts: WriterOptions;
  private readonly blockBytes: number;
  private readonly flushMs: number;
  private readonly maxPending: number;
  /** The codec of every block this writer writes. */
  readonly codec: Codec;
  private readonly sink: BlockSink;
  private trees: TreeTable;
  private part = 0;
  private path = '';
  private handle: Promise<FileHandle> | null = null;
  private partBytes = 0;
  /** The block being filled (records copied in), and how many of its bytes are used. */
  private block: Buffer | null = null;
  private used = 0;
  /** Block buffers back from the compressor, reused (a block is allocated once, not per flush). */
  private readonly spare: Buffer[] = [];
  private firstTick = Number.NaN;
  private lastTick = Number.NaN;
  private pending = 0;
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private failed: Error | null = null;
  private closed = false;

  constructor(opts: WriterOptions) {
    this.opts = opts;
    this.blockBytes = opts.blockBytes ?? 1024 * 1024;
    this.flushMs = opts.flushMs ?? 1000;
    this.maxPending = opts.maxPendingBytes ?? 256 * 1024 * 1024;
    this.codec = resolveCodec(opts.codec ?? 'auto');
    this.sink = opts.sink ?? poolSink;
    this.trees = { trees: opts.header.trees, definitions: opts.header.definitions };
    this.startPart();
  }

  /** The file being written now. */
  get file(): string {
    return this.path;
  }

  /** True while records are still taken (not closed, not failed). */
  get active(): boolean {
    return !this.closed && this.failed === null;
  }

  /** The error that stopped the recording, if any. */
  get error(): Error | null {
    return this.failed;
  }

  /** Appends a record with a MessagePack payload. */
  value(kind: Kind, payload: unknown): void {
    if (!this.active) return;
    this.bytes(kind, encode(payload));
  }

  /** Appends a record whose payload is already bytes (a frame as the wire carried it), copied into the block. */
  bytes(kind: Kind, payload: Uint8Array): void {
    if (!this.active) return;
    const need = 5 + payload.length;
    if (this.block !== null && this.used + need > this.block.length) this.flush();
    if (this.block === null) this.block = this.newBlock(need);
    const block = this.block;
    block[this.used] = kind;
    block.writeUInt32LE(payload.length, this.used + 1);
    block.set(payload, this.used + 5);
    this.used += need;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, this.flushMs).unref();
  }

  /** Appends a tick marker (kept in the block header as the index). */
  tick(tick: number, time: number, dt: number, basedOn: number | null): void {
    if (!this.active) return;
    // Appended first: a full block is written before it, and the marker opens the next block's index range.
    this.value(Kind.TICK, [tick, time, dt, basedOn]);
    if (Number.isNaN(this.firstTick)) this.firstTick = tick;
    this.lastTick = tick;
  }

  /** A tick ended: the block is written if it is big enough, and a part over its size rotates. */
  tickEnded(): void {
    if (!this.active) return;
    if (this.used >= this.blockBytes) this.flush();
    if (this.opts.maxBytes > 0 && this.partBytes + this.pending >= this.opts.maxBytes) this.rotate();
  }

  /** The library changed: records what later spawns use (and repeats it in later parts' headers). */
  setTrees(trees: TreeTable): void {
    this.trees = trees;
    this.value(Kind.TREES, trees);
  }

  /** Writes what is buffered, an END record, and closes the file. Resolves when it is on disk (never rejects). */
  async close(reason: string): Promise<void> {
    if (this.active) {
      this.value(Kind.END, { reason });
      this.flush();
      this.closed = true;
      this.closePart();
    }
    this.closed = true;
    clearTimeout(this.timer);
    await this.chain;
  }

  /** Compresses the buffered records into one block and queues it for the file. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.block === null || this.used === 0 || this.failed !== null) return;
    const whole = this.block;
    const raw = whole.subarray(0, this.used);
    const first = this.firstTick;
    const last = this.lastTick;
    this.block = null;
    this.used = 0;
    this.firstTick = Number.NaN;
    this.lastTick = Number.NaN;
    this.pending += raw.length;
    if (this.pending > this.maxPending) {
      this.fail(new Error(`the recording fell behind the session (${this.pending} bytes waiting for the disk)`));
      return;
    }
    const codec = this.codec;
    const zstdLevel = this.opts.zstdLevel ?? DEFAULT_ZSTD_LEVEL;
    const handle = this.handle!;
    const path = this.path;
    const sink = this.sink;
    this.enqueue(async () => {
      // The block goes to the sink by reference (to the service's compression thread: shared memory); the buffer is
      // reused once the sink is done with it.
      const fd = (await handle).fd;
      const written = await sink.write({ buffer: whole.buffer, length: raw.length, codec, zstdLevel, fd, firstTick: first, lastTick: last });
      if (whole.length === this.blockCapacity() && this.spare.length < 2 && this.failed === null) this.spare.push(whole);
      this.pending -= raw.length;
      this.partBytes += written;
      this.opts.onWritten?.(written, path);
    });
  }

  /** Size of a block buffer: a block is written once it holds `blockBytes`, and a tick may add a frame or two past that. */
  private blockCapacity(): number {
    return 2 * this.blockBytes;
  }

  /**
   * A buffer for the next block, big enough for a first record of `need` bytes; shared memory when the sink is a
   * thread, which then reads it where it is.
   */
  private newBlock(need: number): Buffer {
    const size = Math.max(need, this.blockCapacity());
    if (need <= this.blockCapacity() && this.spare.length > 0) return this.spare.pop()!;
    return this.sink.shared ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.allocUnsafeSlow(size);
  }

  private startPart(): void {
    this.part++;
    this.path = join(this.opts.dir, partFileName(this.opts.recording, this.part));
    this.partBytes = 0;
    const path = this.path;
    this.opts.onPartStarted?.(path);
    const handle = mkdir(this.opts.dir, { recursive: true }).then(() => open(path, 'wx'));
    // Handled in the chain; this only keeps an early failure from being reported as unhandled.
    handle.catch(() => undefined);
    this.handle = handle;
    this.enqueue(async () => {
      await (await handle).write(MAGIC);
      this.partBytes += MAGIC.length;
      this.opts.onWritten?.(MAGIC.length, path);
    });
    const header: RecordingHeader = {
      ...this.opts.header,
      ...this.trees,
      format: FORMAT_VERSION,
      recording: this.opts.recording,
      part: this.part,
      startedAt: new Date().toISOString(),
    };
    this.value(Kind.HEADER, header);
  }

  private rotate(): void {
    const next = partFileName(this.opts.recording, this.part + 1);
    this.value(Kind.END, { reason: 'rotated', next });
    this.flush();
    this.closePart();
    if (this.failed === null) this.startPart();
  }

  private closePart(): void {
    const handle = this.handle;
    const path = this.path;
    if (handle === null) return;
    this.handle = null;
    this.enqueue(async () => {
      await (await handle).close();
      this.opts.onPartClosed?.(path);
    });
  }

  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.failed !== null) return;
      try {
        await step();
      } catch (err) {
        this.fail(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  private fail(err: Error): void {
    if (this.failed !== null) return;
    this.failed = err;
    this.block = null;
    this.used = 0;
    this.spare.length = 0;
    clearTimeout(this.timer);
    const handle = this.handle;
    this.handle = null;
    // Whatever reached the disk stays a readable prefix; the handle is released quietly.
    void handle?.then((h) => h.close()).catch(() => undefined);
    this.opts.onError(err);
  }
}
