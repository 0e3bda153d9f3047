// The recording file format (docs/recording.md): a magic line, then independently compressed (zstd or Brotli)
// blocks of length-delimited records. Shared by the writer (service), the reader, replay and the inspector.

import { crc32 } from 'node:zlib';
import { isPackedRows, resultTuples, unpackRows, type AgentId, type SnapshotMessage } from '../protocol/index.js';
import { Codec } from './codec.js';

/** First bytes of every recording file written now (8 bytes: name and file format version). */
export const MAGIC = Buffer.from('CANOPYR2', 'latin1');
/** First bytes of a format 1 file (28-byte block headers, every block Brotli): still read. */
export const MAGIC_V1 = Buffer.from('CANOPYR1', 'latin1');
/** Format version written in the header record; a reader refuses newer ones. */
export const FORMAT_VERSION = 2;
/** File name extension of a recording part. */
export const EXTENSION = '.canopyrec';

/**
 * Block header, little-endian: u32 compressed length, u32 raw length, u32 CRC-32 of the compressed bytes,
 * f64 first tick, f64 last tick (NaN when the block holds no tick), u8 codec ({@link Codec}), 3 bytes zero.
 * A reader hops from header to header to find a tick without inflating anything: that is the index.
 */
export const BLOCK_HEADER_BYTES = 32;
/** Format 1's block header: the same fields without the codec (always Brotli). */
export const BLOCK_HEADER_BYTES_V1 = 28;

/**
 * Record kinds (one byte before each record's u32 length). Payloads are MessagePack, except SNAPSHOT_FRAME
 * and DECISIONS, which are the protocol frames exactly as the wire carried them.
 */
export const Kind = {
  /** {@link RecordingHeader}: first record of every part. */
  HEADER: 1,
  /**
   * `{ trees, definitions, reload }` ({@link TreeTable}, {@link TreesReload}): the library changed (a reload);
   * later spawns use these, and agents on the `changed` trees restart or keep their version as in the service.
   */
  TREES: 2,
  /** The spawn entries the session handed to the pool: `[{ id, tree, label?, seed?, bb? }]`. */
  SPAWN: 3,
  /** Agent ids despawned: `[id, ...]`. */
  DESPAWN: 4,
  /** Blackboard writes: `[[id, { key: value }], ...]`. */
  BB: 5,
  /** Action results: `[[id, seq, status], ...]`. */
  RESULTS: 6,
  /** A `snapshot` frame as received on the WebSocket (raw bytes; replay reads it as the service did). */
  SNAPSHOT_FRAME: 7,
  /** A snapshot that came without wire bytes (HTTP): `{ tick, time?, world?, agents?, results?, full? }`. */
  SNAPSHOT: 8,
  /** A tick starts: `[tick, time, dt, basedOn | null]`. Inputs before it took effect in it. */
  TICK: 9,
  /** The `decisions` frame a tick produced, encoded as sent (fixed mode: only frames with content). */
  DECISIONS: 10,
  /** The recording ends: `{ reason, next? }` (`next`: the file name of the following part after rotation). */
  END: 11,
  /** Level of detail: new tick intervals `[[id, every], ...]` (a `lod` message), in force from the next tick. */
  LOD: 12,
} as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

/** Every tree a session may use, by content hash: name → hashes, and each definition once by its own hash. */
export interface TreeTable {
  /** Tree name → `{ hash: compiled hash (tree + subtrees), def: hash of this tree's own definition }`. */
  readonly trees: Readonly<Record<string, { readonly hash: string; readonly def: string }>>;
  /** Definition hash → the tree definition as loaded. */
  readonly definitions: Readonly<Record<string, unknown>>;
}

/** What a TREES record's reload did: replay applies the same reload at the same place between ticks. */
export interface TreesReload {
  /** Trees whose version changed (or that were removed). */
  readonly changed: readonly string[];
  /** The service's default policy then (a spawn's own `reload` field, recorded with it, wins). */
  readonly policy: 'restart' | 'keep';
  /** The last tick the session had started when the reload was installed (it applies before the next); null: none. */
  readonly after: number | null;
}

/** The first record of each part. Never holds API keys or resume tokens. */
export interface RecordingHeader extends TreeTable {
  readonly format: number;
  /** Canopy version that wrote it. */
  readonly canopy: string;
  /** Recording id: the file names of its parts start with it. */
  readonly recording: string;
  /** Part number, from 1; a size rotation starts the next part. */
  readonly part: number;
  readonly session: string;
  readonly mode: 'fixed' | 'lockstep';
  readonly hz: number;
  readonly fields: readonly string[] | null;
  /** Wall clock at the start of the part (informational). */
  readonly startedAt: string;
  /**
   * Agents the session already had when recording started (a recording started on a live session):
   * their spawns and earlier inputs are not in the recording, so their decisions cannot be replayed.
   */
  readonly agentsAtStart?: number;
  /** Plugins loaded when recording started (names; versions when the plugin declares one). */
  readonly plugins: ReadonlyArray<{ readonly name: string; readonly version?: string }>;
}

/** One spawn entry as recorded. */
export interface SpawnRecord {
  readonly id: AgentId;
  readonly tree: string;
  readonly label?: string;
  readonly seed?: number;
  readonly bb?: Record<string, unknown>;
  /** The spawn's own reload policy, if it named one. */
  readonly reload?: 'restart' | 'keep';
  /** Its tick interval (level of detail), when not 1. */
  readonly every?: number;
}

/** A tick marker. `basedOn` is null before the first snapshot. */
export interface TickRecord {
  readonly tick: number;
  readonly time: number;
  readonly dt: number;
  readonly basedOn: number | null;
}

/** Frames one record: kind byte, u32 payload length (the payload follows; not copied here). The durable sessions' input log frames its entries with it. */
export function recordHead(kind: Kind, length: number): Buffer {
  const head = Buffer.allocUnsafe(5);
  head[0] = kind;
  head.writeUInt32LE(length, 1);
  return head;
}

/** The block header for `codec`-compressed bytes `body` covering ticks `first`..`last` (NaN: none). */
export function blockHeader(body: Uint8Array, rawLength: number, first: number, last: number, codec: Codec): Buffer {
  const h = Buffer.alloc(BLOCK_HEADER_BYTES);
  h.writeUInt32LE(body.length, 0);
  h.writeUInt32LE(rawLength, 4);
  h.writeUInt32LE(crc32(body), 8);
  h.writeDoubleLE(first, 12);
  h.writeDoubleLE(last, 20);
  h[28] = codec;
  return h;
}

/** A block header read back. */
export interface BlockInfo {
  readonly compressed: number;
  readonly raw: number;
  readonly crc: number;
  readonly firstTick: number;
  readonly lastTick: number;
  /** How the block is compressed ({@link Codec}; format 1 blocks are Brotli). */
  readonly codec: number;
}

/** Reads a block header of `headerBytes` ({@link BLOCK_HEADER_BYTES}, or {@link BLOCK_HEADER_BYTES_V1} in a format 1 file). */
export function readBlockHeader(h: Uint8Array, headerBytes: number = BLOCK_HEADER_BYTES): BlockInfo {
  const b = Buffer.from(h.buffer, h.byteOffset, h.byteLength);
  const codec = headerBytes === BLOCK_HEADER_BYTES_V1 ? Codec.BROTLI : b[28]!;
  return { compressed: b.readUInt32LE(0), raw: b.readUInt32LE(4), crc: b.readUInt32LE(8), firstTick: b.readDoubleLE(12), lastTick: b.readDoubleLE(20), codec };
}

/** The block header size of a file that starts with `magic`, or null if it is not a recording. */
export function blockHeaderBytes(magic: Uint8Array): number | null {
  if (MAGIC.equals(magic)) return BLOCK_HEADER_BYTES;
  if (MAGIC_V1.equals(magic)) return BLOCK_HEADER_BYTES_V1;
  return null;
}

/** Recording ids and part file names: letters, digits, `-`, `_`, `.` only, never `..` (no path can be formed). */
export const SAFE_NAME = /^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** File name of part `part` of recording `recording`. */
export function partFileName(recording: string, part: number): string {
  return `${recording}.p${String(part).padStart(3, '0')}${EXTENSION}`;
}

/** The recording id and part number of a part file name, or null if it is not one. */
export function parsePartFileName(name: string): { recording: string; part: number } | null {
  const m = /^(.+)\.p(\d{3,})\.canopyrec$/.exec(name);
  if (m === null || !SAFE_NAME.test(name)) return null;
  return { recording: m[1]!, part: Number(m[2]) };
}

/**
 * A snapshot that arrived without its wire bytes (over HTTP, or built by a tool), as the fields a record of it
 * holds: packed rows back in their list form, absent fields left out.
 */
export function snapshotRecordFields(msg: SnapshotMessage): Record<string, unknown> {
  const agents = msg.agents !== undefined && isPackedRows(msg.agents) ? unpackRows(msg.agents) : msg.agents;
  return {
    tick: msg.tick,
    ...(msg.time !== undefined ? { time: msg.time } : {}),
    ...(msg.world !== undefined ? { world: msg.world } : {}),
    ...(agents !== undefined ? { agents } : {}),
    ...(msg.results !== undefined ? { results: resultTuples(msg.results) } : {}),
    ...(msg.full !== undefined ? { full: msg.full } : {}),
  };
}
