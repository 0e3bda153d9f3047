// Block codecs of the recording format (docs/recording.md, "The file"): zstd where this Node ships it
// (node:zlib has it from Node 22.15 and 23.8 on), Brotli on every Node. Each block names its codec, so a
// reader handles files written either way; a Node without zstd says so instead of misreading.

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
  readonly zstdCompress?: (buf: Uint8Array, options: { params: Record<number, number>; chunkSize: number }, cb: Callback) => void;
  readonly zstdDecompressSync?: (buf: Uint8Array, options: { chunkSize: number }) => Buffer;
}
const zstd = zlib as unknown as ZstdFunctions;
const constants = zlib.constants as unknown as Readonly<Record<string, number | undefined>>;

/** True when this Node's zlib has zstd (Node ≥ 22.15 / ≥ 23.8). */
export const zstdAvailable: boolean =
  typeof zstd.zstdCompress === 'function' && typeof zstd.zstdDecompressSync === 'function' && constants.ZSTD_c_compressionLevel !== undefined;

/**
 * zstd parameters: level −2 with a 32 Ki-entry hash table and 6-byte minimum matches. On the load
 * generator's recordings this compresses to Brotli-1's size (≈ 0.49 of the raw bytes) at about twice its
 * speed, and decompresses three to four times faster (bench/record-cost.ts compares the codecs).
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
 * Compresses one block on libuv's thread pool. The output buffer is sized for the whole block (the
 * default 16 KiB chunks cost a pool round trip and a copy each).
 */
export function compressBlock(codec: Codec, raw: Buffer, cb: Callback): void {
  const chunkSize = Math.max(64 * 1024, raw.length + 1024);
  if (codec === Codec.ZSTD) {
    zstd.zstdCompress!(raw, { params: zstdParams(), chunkSize }, cb);
    return;
  }
  const params = { [zlib.constants.BROTLI_PARAM_QUALITY]: 1, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length };
  zlib.brotliCompress(raw, { params, chunkSize }, cb);
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
