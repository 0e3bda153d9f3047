// Where a writer's full blocks go: a BlockSink compresses one, checksums it and appends it to its part file.
// The service hands its writers a sink on a thread of its own (src/service/recording/compressor.ts); tools and
// tests that write recordings without the service use this module's, on libuv's thread pool.

import { writev } from 'node:fs';
import * as zlib from 'node:zlib';
import { Codec, compressOptions } from './codec.js';
import { blockHeader } from './format.js';

/** One full block: `length` bytes at the start of `buffer`, to compress with `codec` and append to `fd`. */
export interface BlockJob {
  readonly buffer: ArrayBufferLike;
  readonly length: number;
  readonly codec: Codec;
  readonly zstdLevel: number;
  /** The part file's descriptor (the writer keeps it open until its blocks are written). */
  readonly fd: number;
  readonly firstTick: number;
  readonly lastTick: number;
}

/** Compresses and appends blocks. Blocks of one file are given one at a time, in order. */
export interface BlockSink {
  /** Resolves with the bytes appended (block header and body); rejects on a codec or disk error. */
  write(job: BlockJob): Promise<number>;
  /**
   * True when the sink reads blocks in place from shared memory (a thread): the writer's block buffers are then
   * SharedArrayBuffers. Otherwise plain buffers.
   */
  readonly shared: boolean;
}

type Compress = (buf: Uint8Array, options: object, cb: (err: Error | null, out: Buffer) => void) => void;
const zstdCompress = (zlib as unknown as { zstdCompress?: Compress }).zstdCompress;

/** Compresses on libuv's thread pool (a compressor per block) and appends with fs.writev. */
export const poolSink: BlockSink = {
  shared: false,
  async write(job) {
    const raw = new Uint8Array(job.buffer, 0, job.length);
    const body = await new Promise<Buffer>((resolve, reject) => {
      const compress: Compress | undefined = job.codec === Codec.ZSTD ? zstdCompress : (zlib.brotliCompress as Compress);
      if (compress === undefined) {
        reject(new Error(`zstd recordings need Node 22.15 or later (this is Node ${process.versions.node})`));
        return;
      }
      compress(raw, compressOptions(job.codec, job.length, job.zstdLevel), (err, out) => (err === null ? resolve(out) : reject(err)));
    });
    const head = blockHeader(body, job.length, job.firstTick, job.lastTick, job.codec);
    const total = head.length + body.length;
    let parts = [head, body];
    let left = total;
    for (;;) {
      const n = await new Promise<number>((resolve, reject) => writev(job.fd, parts, (err, written) => (err === null ? resolve(written) : reject(err))));
      if (n >= left) return total;
      // A short write: the rest from where it stopped.
      parts = [Buffer.concat(parts).subarray(n)];
      left -= n;
    }
  },
};
