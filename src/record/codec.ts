// Block codecs of the recording format (docs/recording.md, "The file"): zstd where this Node ships it
// (node:zlib has it from Node 22.15 and 23.8 on), Brotli on every Node. Each block names its codec, so a
// reader handles files written either way; a Node without zstd says so instead of misreading.

import * as zlib from 'node:zlib';

/** The codec byte of a block header. */
export const Codec = {
  /** Brotli quality 1 (the only codec of format 1 files). */
  BROTLI: 1,
  /** Zstandard at a fast negative level: on snapshot frames over twice Brotli-1's speed (level −6: an eighth larger). */
  ZSTD: 2,
} as const;
export type Codec = (typeof Codec)[keyof typeof Codec];

/** What `CANOPY_RECORD_CODEC` may say: `auto` is zstd when this Node has it, Brotli otherwise. */
export type CodecChoice = 'auto' | 'zstd' | 'brotli';

type Callback = (err: Error | null, out: Buffer) => void;
/** node:zlib's zstd functions, typed here: the project's Node 20 type definitions do not declare them. */
interface ZstdFunctions {
  readonly zstdCompressSync?: (buf: Uint8Array, options: { params: Record<number, number>; chunkSize: number }) => Buffer;
  readonly zstdDecompressSync?: (buf: Uint8Array, options: { chunkSize: number }) => Buffer;
  readonly zstdDecompress?: (buf: Uint8Array, options: { chunkSize: number }, cb: Callback) => void;
}
const zstd = zlib as unknown as ZstdFunctions;
const constants = zlib.constants as unknown as Readonly<Record<string, number | undefined>>;

/** True when this Node's zlib has zstd (Node ≥ 22.15 / ≥ 23.8). */
export const zstdAvailable: boolean =
  typeof zstd.zstdCompressSync === 'function' && typeof zstd.zstdDecompressSync === 'function' && constants.ZSTD_c_compressionLevel !== undefined;

/**
 * The zstd level blocks are written at. −6 with a 32 Ki-entry hash table and 6-byte minimum matches: on the load
 * generator's recordings (1 MiB blocks of snapshot and decisions frames) it compresses to 0.45 of the raw bytes
 * at ≈ 1.3× the speed of the level −2 Canopy used before (0.40 of the raw bytes) — a tenth more on disk for a
 * quarter less compression CPU, which is most of what recording costs (docs/recording.md, "Costs").
 */
export const DEFAULT_ZSTD_LEVEL = -6;

/** zstd parameters for `level` (a negative level: zstd's fast strategy, skipping ahead faster the lower it is). */
function zstdParams(level: number): Record<number, number> {
  return { [constants.ZSTD_c_compressionLevel!]: level, [constants.ZSTD_c_hashLog!]: 15, [constants.ZSTD_c_minMatch!]: 6 };
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

const zstdCompressSync = zstd.zstdCompressSync;

/**
 * Compresses one block, synchronously: called on the service's recording compression thread
 * (src/service/recording/compress-worker.ts), never on its main thread. zstd: the output buffer is at least the block's compress bound, so zstd
 * compresses straight into it (no copy of the input into a window, no "external dictionary" match finder:
 * ≈ 1.15× faster than a streamed block). Brotli: an output buffer sized for the usual result, a bit over half
 * the block.
 */
export function compressBlockSync(codec: Codec, raw: Uint8Array, zstdLevel: number = DEFAULT_ZSTD_LEVEL): Buffer {
  if (codec === Codec.ZSTD) {
    if (zstdCompressSync === undefined) throw new CodecError(`zstd recordings need Node 22.15 or later (this is Node ${process.versions.node})`);
    return zstdCompressSync(raw, compressOptions(codec, raw.length, zstdLevel) as { params: Record<number, number>; chunkSize: number });
  }
  return zlib.brotliCompressSync(raw, compressOptions(codec, raw.length, zstdLevel));
}

/** node:zlib options for compressing a block of `length` bytes with `codec`. */
export function compressOptions(codec: Codec, length: number, zstdLevel: number): { params: Record<number, number>; chunkSize: number } {
  if (codec === Codec.ZSTD) return { params: zstdParams(zstdLevel), chunkSize: Math.max(64 * 1024, length + (length >> 7) + 1024) };
  const params = { [zlib.constants.BROTLI_PARAM_QUALITY]: 1, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: length };
  return { params, chunkSize: Math.max(64 * 1024, Math.ceil(length * 0.6)) };
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
