// Decisions held for a slow reader, kept as encoded bytes: each tick's lists are encoded once when
// held and appended to growing byte lists, so what a held decision costs is known exactly.

import { encode } from './codec.js';
import { LIST_KEYS, arrayHeader, frameLists, joinMap, wireInt, wireTuples, type DecisionsFields } from './encode.js';

/** Fixed cost counted for a merger, and for each held chunk, besides their bytes (the objects themselves). */
const OVERHEAD_BYTES = 512;
const CHUNK_OVERHEAD_BYTES = 96;

/** One list's encoded elements (MessagePack array headers stripped), one exact-size chunk per tick. */
class ByteList {
  readonly chunks: Buffer[] = [];
  length = 0;
  count = 0;

  /** Appends the elements of one encoded MessagePack array (copied: `encoded` is a view of a shared buffer). */
  appendArray(encoded: Buffer): void {
    const b = encoded[0]!;
    let n: number;
    let header: number;
    if (b >= 0x90 && b <= 0x9f) {
      n = b & 0x0f;
      header = 1;
    } else if (b === 0xdc) {
      n = encoded.readUInt16BE(1);
      header = 3;
    } else {
      n = encoded.readUInt32BE(1);
      header = 5;
    }
    this.appendItems(n, encoded.subarray(header));
  }

  /** Appends `count` encoded elements (copied). */
  appendItems(count: number, bytes: Uint8Array): void {
    // Outside Node's shared pool, so the size is what is really held.
    const chunk = Buffer.allocUnsafeSlow(bytes.length);
    chunk.set(bytes);
    this.chunks.push(chunk);
    this.length += chunk.length;
    this.count += count;
  }
}

/**
 * Fixed-mode decisions merged while a reader lags: lists concatenated in order, the latest `tick`
 * and `basedOn` kept. {@link bytes} is the memory held; {@link frame} builds the one `decisions`
 * frame that replaces them, byte for byte what `encodeDecisions` would write for the merged lists.
 */
export class HeldDecisions {
  private tick = 0;
  private basedOn: number | undefined;
  private readonly lists = [new ByteList(), new ByteList(), new ByteList(), new ByteList()] as const;

  /** Memory held, in bytes: the encoded entries plus a fixed overhead per chunk. */
  bytes = OVERHEAD_BYTES;

  /**
   * Encodes one tick's lists and appends them (the caller may reuse its lists afterwards), unless
   * they would take more than `room` bytes: then nothing is appended and false is returned.
   */
  add(d: DecisionsFields, room: number = Infinity): boolean {
    const lists = frameLists(d);
    // Lists given as values are encoded here (a view of the codec's output that later encodes leave alone;
    // appendArray copies it); lists already encoded are not read as values.
    const encoded = lists.map((l) => (l.encoded === undefined && l.values !== undefined && l.values.length > 0 ? encode(wireTuples(l.values, l.withSeq)) : undefined));
    let size = 0;
    lists.forEach((l, i) => {
      // An encoded list is counted as its values would be, header included, so that either form holds the same budget.
      if (l.encoded !== undefined && l.encoded.count > 0) size += arrayHeader(l.encoded.count).length + l.encoded.bytes.length + CHUNK_OVERHEAD_BYTES;
      const bytes = encoded[i];
      if (bytes !== undefined) size += bytes.length + CHUNK_OVERHEAD_BYTES;
    });
    if (size > room) return false;
    this.tick = d.tick;
    if (d.basedOn !== undefined) this.basedOn = d.basedOn;
    for (let i = 0; i < 4; i++) {
      const pre = lists[i]!.encoded;
      const bytes = encoded[i];
      if (pre !== undefined && pre.count > 0) this.lists[i]!.appendItems(pre.count, pre.bytes);
      else if (bytes !== undefined) this.lists[i]!.appendArray(bytes);
    }
    this.bytes += size;
    return true;
  }

  /** The merged `decisions` frame. */
  frame(): Buffer {
    const head: Record<string, unknown> = { t: 'decisions', tick: wireInt(this.tick) };
    if (this.basedOn !== undefined) head.basedOn = wireInt(this.basedOn);
    let lists = 0;
    const pieces: Uint8Array[] = [];
    for (let i = 0; i < 4; i++) {
      const l = this.lists[i]!;
      if (l.count === 0) continue;
      lists++;
      pieces.push(LIST_KEYS[i]!, arrayHeader(l.count), ...l.chunks);
    }
    return joinMap(head, lists, pieces);
  }
}
