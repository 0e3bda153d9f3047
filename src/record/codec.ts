// Block codecs of the recording format (docs/recording.md, "The file"): zstd where this Node ships it
// (node:zlib has it from Node 22.15 and 23.8 on), Brotli on every Node. Each block names its codec, so a
// reader handles files written either way; a Node without zstd says so instead of misreading.

import type { Transform } from 'node:stream';
import * as zlib from 'node:zlib';

/** The codec byte of a block header. */
export const Codec = {
  /** Brotli quality 1 (the only codec of format 1 files). */
  BROTLI: 1,
  /** Zstandard at a fast negative level: about twice Brotli-1's speed for the same size on snapshot frames. */
  ZSTD: 2,
} as const;
export type Codec = (typeof Codec)[keyof typeof Codec];

/** What `CANOPY_RECORD_CODEC` may say: `auto` is zstd when this Node has it, Brotli otherwise. */
export type CodecChoice = 'auto' | 'zstd' | 'brotli';

type Callback = (err: Error | null, out: Buffer) => void;
/** node:zlib's zstd functions, typed here: the project's Node 20 type definitions do not declare them. */
interface ZstdFunctions {
  readonly createZstdCompress?: (options: { params: Record<number, number>; chunkSize: number }) => Transform;
  readonly zstdDecompressSync?: (buf: Uint8Array, options: { chunkSize: number }) => Buffer;
  readonly zstdDecompress?: (buf: Uint8Array, options: { chunkSize: number }, cb: Callback) => void;
}
const zstd = zlib as unknown as ZstdFunctions;
const constants = zlib.constants as unknown as Readonly<Record<string, number | undefined>>;

/** True when this Node's zlib has zstd (Node ≥ 22.15 / ≥ 23.8). */
export const zstdAvailable: boolean =
  typeof zstd.createZstdCompress === 'function' && typeof zstd.zstdDecompressSync === 'function' && constants.ZSTD_c_compressionLevel !== undefined;

/**
 * zstd parameters: level −2 with a 32 Ki-entry hash table and 6-byte minimum matches. On the load
 * generator's recordings this compresses to Brotli-1's size or smaller (0.41–0.56 of the raw bytes in 1 MiB
 * blocks) at about twice its speed, and decompresses three to four times faster (bench/record-cost.ts
 * compares the codecs in the session path).
 */
function zstdParams(): Record<number, number> {
  return { [constants.ZSTD_c_compressionLevel!]: -2, [constants.ZSTD_c_hashLog!]: 15, [constants.ZSTD_c_minMatch!]: 6 };
}

/** The codec a writer uses for `choice`. @throws {Error} when zstd is asked for and this Node lacks it. */
export function resolveCodec(choice: CodecChoice): Codec {
  if (choice === 'brotli') return Codec.BROTLI;
  if (zstdAvailable) return Codec.ZSTD;
  if (choice === 'zstd') throw new Error(`zstd recordings need Node 22.15 or later (this is Node ${process.versions.node}); use brotli or auto`);
  return Codec.BROTLI;
}

/** A codec's name, for messages and listings. */
export function codecName(codec: number): string {
  return codec === Codec.BROTLI ? 'brotli' : codec === Codec.ZSTD ? 'zstd' : `unknown codec ${codec}`;
}

/**
 * Compresses one block on libuv's thread pool. Brotli: one compressor per block, its output buffer sized for
 * the usual result, a bit over half the block (the default 16 KiB chunks cost a pool round trip and a copy
 * each). zstd: the process's one {@link SharedZstd} stream.
 */
export function compressBlock(codec: Codec, raw: Buffer, cb: Callback): void {
  if (codec === Codec.ZSTD) {
    (sharedZstd ??= new SharedZstd()).compress(raw, cb);
    return;
  }
  const chunkSize = Math.max(64 * 1024, Math.ceil(raw.length * 0.6));
  const params = { [zlib.constants.BROTLI_PARAM_QUALITY]: 1, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length };
  zlib.brotliCompress(raw, { params, chunkSize }, cb);
}

let sharedZstd: SharedZstd | undefined;

/**
 * One zstd stream for every recording of the process: each block is written and ended as a frame of its own
 * (ZSTD_e_end), so blocks stay independently readable, but the compression context and its tables are made
 * once instead of per block. A context per block is native memory V8 is told about, allocated and dropped a
 * few times a second per session: measured in the service's session path (bench/record-cost.ts), that churn
 * cost as much garbage-collection work as the compression itself. Blocks are compressed one at a time, in the
 * order given, on one pool thread at a time (≈ 300 MB/s, twenty times what 50,000 agents at 20 Hz record).
 */
class SharedZstd {
  private stream: Transform | null = null;
  private readonly queue: Array<{ readonly raw: Buffer; readonly cb: Callback }> = [];
  private current: { readonly raw: Buffer; readonly cb: Callback } | null = null;
  private out: Buffer[] = [];

  compress(raw: Buffer, cb: Callback): void {
    this.queue.push({ raw, cb });
    if (this.current === null) this.next();
  }

  private next(): void {
    const job = this.queue.shift();
    this.current = job ?? null;
    if (job === undefined) return;
    const stream = (this.stream ??= this.create());
    stream.write(job.raw);
    (stream as Transform & { flush(kind: number, cb: (err?: Error | null) => void): void }).flush(constants.ZSTD_e_end!, (err) => {
      if (this.stream !== stream || this.current !== job) return; // failed meanwhile: the job has its answer
      if (err) {
        this.fail(stream, err);
        return;
      }
      const out = this.out.length === 1 ? this.out[0]! : Buffer.concat(this.out);
      this.out = [];
      job.cb(null, out);
      this.next();
    });
  }

  private create(): Transform {
    const stream = zstd.createZstdCompress!({ params: zstdParams(), chunkSize: 256 * 1024 });
    stream.on('data', (chunk: Buffer) => this.out.push(chunk));
    stream.on('error', (err: Error) => this.fail(stream, err));
    return stream;
  }

  /** The stream failed: the block in flight and those waiting fail (their recordings stop); the next block gets a new stream. */
  private fail(stream: Transform, err: Error): void {
    if (this.stream !== stream) return;
    this.stream = null;
    this.out = [];
    const jobs = [...(this.current !== null ? [this.current] : []), ...this.queue.splice(0)];
    this.current = null;
    for (const job of jobs) job.cb(err, Buffer.alloc(0));
  }
}

/** A block's codec cannot be read here (unknown, or zstd on a Node without it). */
export class CodecError extends Error {
  override readonly name = 'CodecError';
}

/** Decompresses one block whose raw length the block header gave. @throws {CodecError} */
export function decompressBlock(codec: number, body: Uint8Array, rawLength: number): Buffer {
  const chunkSize = Math.max(64 * 1024, rawLength);
  if (codec === Codec.BROTLI) return zlib.brotliDecompressSync(body, { chunkSize });
  if (codec === Codec.ZSTD) {
    if (zstd.zstdDecompressSync === undefined) {
      throw new CodecError(`this recording is compressed with zstd, which Node ${process.versions.node} lacks: read it with Node 22.15 or later`);
    }
    return zstd.zstdDecompressSync(body, { chunkSize });
  }
  throw new CodecError(`a block uses ${codecName(codec)}, which this Canopy does not know (a newer Canopy wrote it)`);
}

/**
 * decompressBlock on libuv's thread pool: a reader decompresses the next block while the records of the
 * current one are applied (replay). Rejects with the same CodecError.
 */
export function decompressBlockAsync(codec: number, body: Uint8Array, rawLength: number): Promise<Buffer> {
  const chunkSize = Math.max(64 * 1024, rawLength);
  return new Promise((resolve, reject) => {
    const done: Callback = (err, out) => (err === null ? resolve(out) : reject(err));
    if (codec === Codec.BROTLI) zlib.brotliDecompress(body, { chunkSize }, done);
    else if (codec === Codec.ZSTD && zstd.zstdDecompress !== undefined) zstd.zstdDecompress(body, { chunkSize }, done);
    else {
      // The synchronous path words the error (zstd missing here, or a codec this Canopy does not know).
      try {
        resolve(decompressBlock(codec, body, rawLength));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
  });
}
