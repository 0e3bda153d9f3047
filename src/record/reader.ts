// Reads recordings: the parts of one recording in order, block by block, record by record. A file cut
// off by a crash (a short or corrupt last block) reads up to its last complete block and says so.

import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { decode } from '../protocol/index.js';
import { CodecError, decompressBlock, decompressBlockAsync } from './codec.js';
import {
  blockHeaderBytes,
  FORMAT_VERSION,
  Kind,
  MAGIC,
  parsePartFileName,
  partFileName,
  readBlockHeader,
  type BlockInfo,
  type RecordingHeader,
} from './format.js';

/** One record: its kind and payload (MessagePack, or a raw protocol frame). */
export interface RawRecord {
  readonly kind: Kind;
  readonly payload: Buffer;
}

/** A block of the index: where it starts and the ticks it marks. */
export interface IndexEntry extends BlockInfo {
  readonly part: string;
  readonly offset: number;
}

/** A recording could not be opened (not a recording, newer format, a missing first part). */
export class RecordingError extends Error {
  override readonly name = 'RecordingError';
}

/**
 * Every part file of the recording that `path` belongs to, first part first: a recording replays from its
 * start, so a later part pulls in the earlier ones (they must still exist).
 */
export function recordingParts(path: string): string[] {
  const parsed = parsePartFileName(basename(path));
  if (parsed === null) return [path];
  const dir = dirname(path);
  const parts: string[] = [];
  for (let part = 1; ; part++) {
    const file = join(dir, partFileName(parsed.recording, part));
    if (!existsSync(file)) {
      if (part <= parsed.part) {
        throw new RecordingError(`${basename(path)} is part ${parsed.part} of recording ${parsed.recording}, but part ${part} (${basename(file)}) is gone: a recording replays from its first part`);
      }
      return parts;
    }
    parts.push(file);
  }
}

/** Reads the records of a recording's parts in order. */
export class RecordingReader {
  readonly parts: readonly string[];
  /** The first part's header. */
  readonly header: RecordingHeader;
  /** Set once reading stopped early: which file and why (a crash cut it off, or it is damaged). */
  problem: string | null = null;

  private constructor(parts: readonly string[], header: RecordingHeader) {
    this.parts = parts;
    this.header = header;
  }

  /** Opens the recording `path` belongs to and reads its header. @throws {RecordingError} */
  static open(path: string): RecordingReader {
    const parts = recordingParts(path);
    let header: RecordingHeader | undefined;
    for (const r of readPart(parts[0]!, null)) {
      if (r.kind === Kind.HEADER) header = decode(r.payload) as RecordingHeader;
      break;
    }
    if (header === undefined) throw new RecordingError(`${parts[0]}: not a Canopy recording (no header)`);
    if (header.format > FORMAT_VERSION) throw new RecordingError(`${parts[0]}: recording format ${header.format} is newer than this Canopy reads (${FORMAT_VERSION})`);
    return new RecordingReader(parts, header);
  }

  /** Every record of every part, in order (each part begins with its HEADER). */
  *records(): Generator<RawRecord> {
    for (const part of this.parts) {
      const problems: string[] = [];
      yield* readPart(part, problems);
      if (problems.length > 0) {
        this.problem = problems[0]!;
        return;
      }
    }
  }

  /**
   * The same records as `records()`, each block decompressed on libuv's thread pool while the caller works
   * on the records of the block before (replay: decompression overlaps ticking).
   */
  async *recordsAhead(): AsyncGenerator<RawRecord> {
    for (const part of this.parts) {
      const problems: string[] = [];
      yield* readPartAhead(part, problems);
      if (problems.length > 0) {
        this.problem = problems[0]!;
        return;
      }
    }
  }

  /** The blocks of every part with their offsets and tick ranges, read from block headers only. */
  index(): IndexEntry[] {
    return this.parts.flatMap((part) => partIndex(part));
  }
}

/**
 * The blocks of one part file, from its block headers only (nothing is decompressed, so this works for any
 * codec on any Node): offsets, raw and compressed sizes, tick ranges. A cut-off last block is left out.
 * @throws {RecordingError} when the file is not a recording.
 */
export function partIndex(part: string): IndexEntry[] {
  const out: IndexEntry[] = [];
  const fd = openSync(part, 'r');
  try {
    const size = statSync(part).size;
    const headerBytes = readMagic(fd, part);
    let offset = MAGIC.length;
    const head = Buffer.alloc(headerBytes);
    while (offset + headerBytes <= size) {
      readSync(fd, head, 0, headerBytes, offset);
      const info = readBlockHeader(head, headerBytes);
      if (offset + headerBytes + info.compressed > size) break;
      out.push({ ...info, part, offset });
      offset += headerBytes + info.compressed;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

/** The records of one part file; a damaged or cut-off block ends it (reported in `problems` when given). */
function* readPart(path: string, problems: string[] | null): Generator<RawRecord> {
  for (const block of partBlocks(path, problems)) yield* blockRecords(decompress(block, path));
}

/**
 * The records of one part file like readPart, each block decompressed on libuv's thread pool while the
 * records of the block before it are handed out: the caller's work and the decompression overlap.
 */
async function* readPartAhead(path: string, problems: string[]): AsyncGenerator<RawRecord> {
  const blocks = partBlocks(path, problems);
  const start = (): Promise<Buffer> | null => {
    const r = blocks.next();
    if (r.done === true) return null;
    const block = r.value;
    const p = decompressBlockAsync(block.codec, block.body, block.raw).catch((err: unknown) => {
      throw err instanceof CodecError ? new RecordingError(`${basename(path)}: ${err.message}`) : err;
    });
    // Awaited below; until then a rejection must not count as unhandled (the reader may stop first).
    p.catch(() => undefined);
    return p;
  };
  try {
    let next = start();
    while (next !== null) {
      const raw = await next;
      next = start();
      yield* blockRecords(raw);
    }
  } finally {
    blocks.return(undefined);
  }
}

/** A block read from a part file: its header and compressed bytes (checksum verified). */
interface CompressedBlock extends BlockInfo {
  readonly body: Buffer;
}

/** The blocks of one part file, checked against their checksums; a damaged or cut-off block ends it. */
function* partBlocks(path: string, problems: string[] | null): Generator<CompressedBlock> {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new RecordingError(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    const size = statSync(path).size;
    const headerBytes = readMagic(fd, path);
    let offset = MAGIC.length;
    const head = Buffer.alloc(headerBytes);
    while (offset < size) {
      if (offset + headerBytes > size) {
        problems?.push(`${basename(path)}: cut off inside a block header at byte ${offset}`);
        return;
      }
      readSync(fd, head, 0, headerBytes, offset);
      const info = readBlockHeader(head, headerBytes);
      if (offset + headerBytes + info.compressed > size) {
        problems?.push(`${basename(path)}: cut off inside the block at byte ${offset}`);
        return;
      }
      const body = Buffer.allocUnsafe(info.compressed);
      readSync(fd, body, 0, info.compressed, offset + headerBytes);
      if (crc32(body) !== info.crc) {
        problems?.push(`${basename(path)}: the block at byte ${offset} is damaged (checksum)`);
        return;
      }
      yield { ...info, body };
      offset += headerBytes + info.compressed;
    }
  } finally {
    closeSync(fd);
  }
}

function decompress(block: CompressedBlock, path: string): Buffer {
  try {
    return decompressBlock(block.codec, block.body, block.raw);
  } catch (err) {
    if (err instanceof CodecError) throw new RecordingError(`${basename(path)}: ${err.message}`);
    throw err;
  }
}

/** The records of a decompressed block (a record cut off at its end is left out). */
function* blockRecords(raw: Buffer): Generator<RawRecord> {
  let at = 0;
  while (at + 5 <= raw.length) {
    const kind = raw[at] as Kind;
    const length = raw.readUInt32LE(at + 1);
    if (at + 5 + length > raw.length) break;
    yield { kind, payload: raw.subarray(at + 5, at + 5 + length) };
    at += 5 + length;
  }
}

/** Checks the file's first bytes and returns its block header size (format 1 and 2 files are read). @throws {RecordingError} */
function readMagic(fd: number, path: string): number {
  const magic = Buffer.alloc(MAGIC.length);
  const headerBytes = readSync(fd, magic, 0, MAGIC.length, 0) < MAGIC.length ? null : blockHeaderBytes(magic);
  if (headerBytes === null) throw new RecordingError(`${path}: not a Canopy recording`);
  return headerBytes;
}
