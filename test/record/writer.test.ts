// The writer's blocks: records are copied into reused block buffers; a record that does not fit closes the
// block first, and one bigger than a block gets a block of its own. Both block sinks (libuv's pool, the service's
// compression thread reading blocks from shared memory) write the same records. Read back, everything is there in order
// and the index (block headers) names the ticks each block marks.

import { existsSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { decode } from '../../src/protocol/index.js';
import { Kind, RecordingReader, RecordingWriter } from '../../src/record/index.js';
import { Codec, zstdAvailable } from '../../src/record/codec.js';
import { poolSink, type BlockSink } from '../../src/record/blocks.js';
import { threadSink } from '../../src/service/recording/compressor.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'canopy-writer-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Deterministic bytes of length `n` (seeded by `seed`). */
function payload(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  return b;
}

/** The codecs this Node writes (zstd needs Node 22.15 or later). */
const codecs: Array<'brotli' | 'zstd'> = zstdAvailable ? ['brotli', 'zstd'] : ['brotli'];

test.each(codecs)('%s: small blocks, records larger than a block, reused buffers: all read back in order', async (codec) => {
  const writer = new RecordingWriter({
    dir,
    recording: `w-${codec}`,
    maxBytes: 0,
    blockBytes: 256,
    codec,
    header: { canopy: 'test', session: 's', mode: 'lockstep', hz: 0, fields: null, plugins: [], trees: {}, definitions: {} },
    onError: (err) => {
      throw err;
    },
  });
  expect(writer.codec).toBe(codec === 'zstd' ? Codec.ZSTD : Codec.BROTLI);
  const written: Array<[number, string]> = [];
  const sizes = [10, 200, 300, 1000, 5, 600, 0, 40];
  for (let t = 1; t <= 40; t++) {
    writer.tick(t, t / 20, 0.05, t);
    const frame = payload(sizes[t % sizes.length]!, t);
    writer.bytes(Kind.SNAPSHOT_FRAME, frame);
    // The caller may reuse its buffer at once: the writer copied the bytes.
    frame.fill(0);
    written.push([Kind.SNAPSHOT_FRAME, payload(sizes[t % sizes.length]!, t).toString('hex')]);
    writer.bytes(Kind.DECISIONS, payload(20, -t));
    written.push([Kind.DECISIONS, payload(20, -t).toString('hex')]);
    writer.tickEnded();
  }
  await writer.close('done');
  expect(writer.error).toBeNull();

  const reader = RecordingReader.open(writer.file);
  const records = [...reader.records()];
  expect(reader.problem).toBeNull();
  expect(records[0]!.kind).toBe(Kind.HEADER);
  expect(records.at(-1)!.kind).toBe(Kind.END);
  const ticks = records.filter((r) => r.kind === Kind.TICK).map((r) => (decode(r.payload) as number[])[0]);
  expect(ticks).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  expect(records.filter((r) => r.kind === Kind.SNAPSHOT_FRAME || r.kind === Kind.DECISIONS).map((r) => [r.kind, r.payload.toString('hex')])).toEqual(written);
  // Many blocks; each names the first and last tick whose marker it holds, in order, none twice.
  const index = reader.index().filter((b) => !Number.isNaN(b.firstTick));
  expect(index.length).toBeGreaterThan(10);
  const covered = index.flatMap((b) => Array.from({ length: b.lastTick - b.firstTick + 1 }, (_, i) => b.firstTick + i));
  expect(covered).toEqual(ticks);
});

/** `n` bytes that do not compress (xorshift32 from `seed`). */
function noise(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = seed | 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

/** Both block sinks: libuv's pool (tools) and the service's compression thread (blocks in shared memory). */
const sinks: Array<[string, 'brotli' | 'zstd', BlockSink]> = codecs.flatMap((codec) => [
  ['pool', codec, poolSink] as [string, 'brotli' | 'zstd', BlockSink],
  ['thread', codec, threadSink] as [string, 'brotli' | 'zstd', BlockSink],
]);

test.each(sinks)('%s sink, %s: two recordings at once, incompressible megabyte blocks: all read back in order', async (name, codec, sink) => {
  // Blocks that compress to more than their raw size, a record bigger than a block, two writers interleaving
  // their blocks on one sink.
  const writers = ['a', 'b'].map(
    (w) =>
      new RecordingWriter({
        dir,
        recording: `big-${name}-${codec}-${w}`,
        maxBytes: 0,
        codec,
        sink,
        header: { canopy: 'test', session: w, mode: 'lockstep', hz: 0, fields: null, plugins: [], trees: {}, definitions: {} },
        onError: (err) => {
          throw err;
        },
      }),
  );
  const written: string[][] = [[], []];
  for (let t = 1; t <= 12; t++) {
    for (const [w, writer] of writers.entries()) {
      writer.tick(t, t / 20, 0.05, t);
      const frame = noise(t === 5 ? 2_500_000 : t % 3 === 0 ? 1_100_000 : 700_000, t * 2 + w);
      writer.bytes(Kind.SNAPSHOT_FRAME, frame);
      written[w]!.push(frame.toString('base64'));
      writer.tickEnded();
    }
  }
  await Promise.all(writers.map((w) => w.close('done')));
  for (const [w, writer] of writers.entries()) {
    expect(writer.error).toBeNull();
    const reader = RecordingReader.open(writer.file);
    const frames = [...reader.records()].filter((r) => r.kind === Kind.SNAPSHOT_FRAME).map((r) => r.payload.toString('base64'));
    expect(reader.problem).toBeNull();
    expect(frames).toEqual(written[w]);
    expect(reader.index().every((b) => b.codec === (codec === 'zstd' ? Codec.ZSTD : Codec.BROTLI))).toBe(true);
  }
});

test.skipIf(!existsSync('/dev/full')).each(['pool', 'thread'] as const)('%s sink: a full disk comes back as the error with its code (ENOSPC)', async (name) => {
  const sink = name === 'pool' ? poolSink : threadSink;
  const buffer = sink.shared ? new SharedArrayBuffer(4096) : new ArrayBuffer(4096);
  const handle = await open('/dev/full', 'w');
  try {
    const job = { buffer, length: 4096, codec: Codec.BROTLI, zstdLevel: -6, fd: handle.fd, firstTick: 1, lastTick: 1 };
    await expect(sink.write(job)).rejects.toMatchObject({ code: 'ENOSPC' });
  } finally {
    await handle.close();
  }
});
