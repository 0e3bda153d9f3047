// Crash recovery's log keeps its own copies of every tick order's input, in buffers it reuses once a checkpoint
// covers their order or their session ends (recovery.ts, CopyBuffers): a replay must still hand the replacement exactly
// what was sent.

import { describe, expect, it } from 'vitest';
import { FramePool } from '../../src/service/pool/frames.js';
import { RecoveryJournal } from '../../src/service/pool/recovery.js';
import { packSpawnOrders } from '../../src/service/pool/spawns.js';
import type { FrameBatch, ResultBatch, RowBatch, TickOrder } from '../../src/service/pool/wire.js';

const WIDTH = 3;

/** The input of tick `n`: `rows` rows of each kind, every number derived from n, in buffers with room to spare. */
function tick(n: number, rows: number): TickOrder {
  const frameRows: FrameBatch = { count: rows, slots: new Int32Array(rows + 7), offsets: new Int32Array(rows + 7), frames: [new Uint8Array(4)], ends: [rows] };
  const rowBatch: RowBatch = {
    count: rows, width: WIDTH, slots: new Int32Array(rows + 5), values: new Float64Array((rows + 5) * WIDTH), tags: new Uint8Array((rows + 5) * WIDTH),
    vectors: new Float64Array(16), vectorsLength: 2, other: [],
  };
  const results: ResultBatch = { count: rows, data: new Float64Array((rows + 3) * 3) };
  for (let i = 0; i < rows; i++) {
    frameRows.slots[i] = n * 1000 + i;
    frameRows.offsets[i] = n * 7 + i;
    rowBatch.slots[i] = n * 1000 + i;
    for (let k = 0; k < WIDTH; k++) {
      rowBatch.values[i * WIDTH + k] = n + i / 1000 + k / 10;
      rowBatch.tags[i * WIDTH + k] = (n + i + k) & 0xff;
    }
    results.data.set([n * 1000 + i, n, i & 1], i * 3);
  }
  rowBatch.vectors.set([n, -n]);
  return { t: 'tick', req: n, session: 's', time: n / 20, dt: 0.05, clear: false, bb: null, objects: null, rows: rowBatch, frameRows, results, world: null, columns: -1, tick: n };
}

/** What a replay must give back of tick `n`: the used part of each buffer. */
function expected(n: number, rows: number): unknown {
  const t = tick(n, rows);
  return logged(t);
}

function logged(o: TickOrder): unknown {
  const r = o.rows!;
  const f = o.frameRows!;
  return {
    req: o.req,
    frame: [f.count, [...f.slots.subarray(0, f.count)], [...f.offsets.subarray(0, f.count)]],
    rows: [r.count, [...r.slots.subarray(0, r.count)], [...r.values.subarray(0, r.count * WIDTH)], [...r.tags.subarray(0, r.count * WIDTH)], [...r.vectors.subarray(0, r.vectorsLength)]],
    results: [o.results!.count, [...o.results!.data.subarray(0, o.results!.count * 3)]],
  };
}

function replayedTicks(journal: RecoveryJournal): TickOrder[] {
  return journal.replay(0).orders.filter((o): o is TickOrder => o.t === 'tick');
}

describe('the recovery log reuses its copies', () => {
  it('a replay gives back every order since the checkpoint as sent, while covered copies are handed out again', () => {
    const journal = new RecoveryJournal(1, 2000, 20);
    journal.record(0, { t: 'spawn', session: 's', fields: null, agents: packSpawnOrders([]) });
    const rowsOf = (n: number): number => 40 + (n % 3) * 17; // sizes vary, so buffers of several sizes circulate
    const buffers = new Set<ArrayBufferLike>();
    let covered = 0;
    for (let n = 1; n <= 200; n++) {
      journal.record(0, tick(n, rowsOf(n)));
      for (const o of replayedTicks(journal)) {
        buffers.add(o.frameRows!.slots.buffer);
        buffers.add(o.rows!.values.buffer);
      }
      if (n % 10 === 5) {
        // A checkpoint asked for now covers what is logged so far; two more ticks go out before its reply.
        journal.requested(0, 's', 10_000 + n, n / 20);
        journal.record(0, tick(++n, rowsOf(n)));
        journal.record(0, tick(++n, rowsOf(n)));
        journal.checkpointed(0, 's', { t: 'checkpointed', req: 10_000 + n - 2, agents: 0, bytes: new Uint8Array(8), ms: 0, longestMs: 0 });
        covered = n - 2;
      }
      const replayed = replayedTicks(journal);
      expect(replayed.map(logged)).toEqual(Array.from({ length: n - covered }, (_, i) => expected(covered + 1 + i, rowsOf(covered + 1 + i))));
    }
    // Without reuse, each of the 200 orders would have taken two of its own (400); with it, no more than the log
    // holds at once (13 orders of 7 buffers each, sizes shared) serve.
    expect(buffers.size).toBeLessThanOrEqual(13 * 7);
  });
});

describe('a session that ends gives its logged buffers back', () => {
  it('its frames go back to the frame pool and its copies are handed out again, not left to the collector', () => {
    const frames = new FramePool();
    const journal = new RecoveryJournal(1, 2000, 20, frames);
    const play = (session: string, from: number): { frames: Set<ArrayBufferLike>; copies: Set<ArrayBufferLike> } => {
      journal.record(0, { t: 'spawn', session, fields: null, agents: packSpawnOrders([]) });
      for (let n = from; n < from + 10; n++) {
        const order = { ...tick(n, 50), session };
        const frame = frames.copy(new Uint8Array(1000).fill(n));
        order.frameRows = { ...order.frameRows!, frames: [frame] };
        journal.record(0, order);
      }
      const kept = journal.replay(0).orders.filter((o): o is TickOrder => o.t === 'tick' && o.session === session);
      expect(kept).toHaveLength(10); // no checkpoint yet: every order is kept for a replay
      return { frames: new Set(kept.map((o) => o.frameRows!.frames[0]!.buffer)), copies: new Set(kept.map((o) => o.rows!.values.buffer)) };
    };
    const first = play('a', 1);
    expect(frames.reused).toBe(0);
    journal.record(0, { t: 'drop', session: 'a' });
    const second = play('b', 100);
    // The second session's ten frames and row copies are the first's buffers, reused.
    expect(frames.reused).toBe(10);
    expect(second.frames).toEqual(first.frames);
    expect(second.copies).toEqual(first.copies);
  });
});
