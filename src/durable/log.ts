// The entries of a durable session's input log: the flight recorder's records (src/record/format.ts: a kind byte,
// a u32 length, the payload), gathered per tick into one blob. Snapshot frames are kept as the wire carried them.

import { encode, decode } from '../protocol/index.js';
import { Kind, recordHead } from '../record/format.js';

/** One record read back from an entry. */
export interface LogRecord {
  readonly kind: Kind;
  /** The payload: raw frame bytes for SNAPSHOT_FRAME, else MessagePack. */
  readonly payload: Buffer;
}

/** Records gathered until the next entry is sealed. */
export class EntryBuilder {
  private parts: Uint8Array[] = [];
  private size = 0;

  get bytes(): number {
    return this.size;
  }

  get empty(): boolean {
    return this.parts.length === 0;
  }

  /** A MessagePack record. */
  value(kind: Kind, value: unknown): void {
    this.bytesRecord(kind, encode(value));
  }

  /** A record of raw bytes (kept by reference until sealed). */
  bytesRecord(kind: Kind, payload: Uint8Array): void {
    this.parts.push(recordHead(kind, payload.length), payload);
    this.size += 5 + payload.length;
  }

  /** The entry's blob; the builder starts empty again. */
  seal(): Buffer {
    const blob = Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    return blob;
  }

  clear(): void {
    this.parts = [];
    this.size = 0;
  }
}

/** The records of an entry, in order. */
export function readEntry(blob: Buffer): LogRecord[] {
  const out: LogRecord[] = [];
  let at = 0;
  while (at + 5 <= blob.length) {
    const kind = blob[at] as Kind;
    const length = blob.readUInt32LE(at + 1);
    at += 5;
    if (at + length > blob.length) throw new Error('durable log: a truncated record');
    out.push({ kind, payload: blob.subarray(at, at + length) });
    at += length;
  }
  return out;
}

/** True when the entry's last record is a tick marker (entries are sealed at each tick). */
export function endsWithTick(records: readonly LogRecord[]): boolean {
  return records.length > 0 && records[records.length - 1]!.kind === Kind.TICK;
}

/** A MessagePack payload. */
export function payloadValue<T>(record: LogRecord): T {
  return decode(record.payload) as T;
}

export { Kind };
