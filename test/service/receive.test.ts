// Large WebSocket messages received straight into the workers' shared frame memory (src/service/receive.ts). The
// hook replaces ws's join of a message that spans socket reads, so it must parse every stream of frames exactly as
// ws does: any mix of sizes, text and binary, fragments, control frames and masks, cut into reads anywhere. End to
// end, a lockstep frame's buffer is reused for later frames once its tick is done: every tick must still see its
// own rows, and the recording must hold every frame byte for byte.

import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ws from 'ws';
import { encode } from '../../src/protocol/index.js';
import { Kind, RecordingReader } from '../../src/record/index.js';
import { framePool } from '../../src/service/pool/frames.js';
import { MIN_RECEIVED_BYTES, receiveFramesOn, receiveIntoFrames } from '../../src/service/receive.js';
import { http, RawClient, start, writeFixture, type Frame, type Running } from './harness.js';

type Received = { data: Buffer; binary: boolean };

interface Receiver {
  on(event: 'message', listener: (data: Buffer | Buffer[], binary: boolean) => void): void;
  on(event: 'ping', listener: (data: Buffer) => void): void;
  on(event: 'error', listener: (err: Error) => void): void;
  write(chunk: Buffer): boolean;
}
const Receiver = (ws as unknown as { Receiver: new (options: Record<string, unknown>) => Receiver }).Receiver;

beforeAll(() => void receiveIntoFrames(framePool));

it('hooks the ws Receiver of this ws version', () => {
  expect(receiveIntoFrames(framePool)).toBe(true);
});

/** `receiver`, its messages received into frame memory (as a lockstep connection's: receiveFramesOn). */
function taking(receiver: Receiver): Receiver {
  expect(receiveFramesOn({ _receiver: receiver })).toBe(true);
  return receiver;
}

/** One WebSocket frame as a client sends it (masked). */
function wireFrame(opcode: number, fin: boolean, payload: Buffer, mask: Buffer): Buffer {
  const n = payload.length;
  const head = Buffer.alloc(n < 126 ? 2 : n < 0x10000 ? 4 : 10);
  head[0] = (fin ? 0x80 : 0) | opcode;
  if (n < 126) head[1] = 0x80 | n;
  else if (n < 0x10000) {
    head[1] = 0x80 | 126;
    head.writeUInt16BE(n, 2);
  } else {
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  const masked = Buffer.from(payload);
  for (let i = 0; i < n; i++) masked[i]! ^= mask[i & 3]!;
  return Buffer.concat([head, mask, masked]);
}

describe('the ws Receiver with the hook', () => {
  const MAX_SIZE = 150_000;
  const BYTES = Buffer.from(Array.from({ length: MAX_SIZE + 256 }, (_, i) => (i * 7) & 0xff));
  const LETTERS = Buffer.from(Array.from({ length: MAX_SIZE + 256 }, (_, i) => 0x61 + (i % 26)));
  const message = fc.record({
    size: fc.oneof(fc.nat({ max: 200 }), fc.integer({ min: MIN_RECEIVED_BYTES - 10, max: MAX_SIZE })),
    binary: fc.boolean(),
    // Two frames or more: a fragmented message (ws joins the fragments itself).
    fragments: fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 3 })),
    zeroMask: fc.boolean(),
    pingAfter: fc.boolean(),
    seed: fc.nat({ max: 255 }),
  });

  it('parses any stream of messages cut into reads anywhere as ws does, and a large one-frame binary message that spans reads lands in frame memory', () => {
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 5 }), fc.array(fc.nat(), { maxLength: 12 }), (messages, cuts) => {
        const parts: Buffer[] = [];
        const sent: Received[] = [];
        /** Where each one-frame message's payload lies in the stream (for those the hook takes). */
        const spans: Array<{ index: number; from: number; to: number }> = [];
        let at = 0;
        for (const [index, m] of messages.entries()) {
          // Text must be UTF-8: ASCII letters.
          const data = Buffer.from((m.binary ? BYTES : LETTERS).subarray(m.seed, m.seed + m.size));
          sent.push({ data, binary: m.binary });
          const mask = m.zeroMask ? Buffer.alloc(4) : Buffer.from([m.seed, 0x5a, 0xa5, m.seed ^ 0xff]);
          const step = Math.ceil(m.size / m.fragments) || 1;
          for (let f = 0, from = 0; f < m.fragments; f++, from += step) {
            const piece = data.subarray(from, Math.min(m.size, from + step));
            const frame = wireFrame(f === 0 ? (m.binary ? 2 : 1) : 0, f === m.fragments - 1, piece, mask);
            if (m.fragments === 1) spans.push({ index, from: at + frame.length - piece.length, to: at + frame.length });
            parts.push(frame);
            at += frame.length;
          }
          if (m.pingAfter) {
            const ping = wireFrame(9, true, Buffer.from('hi'), mask);
            parts.push(ping);
            at += ping.length;
          }
        }
        const wire = Buffer.concat(parts);
        const points = [...new Set(cuts.map((c) => c % (wire.length + 1)))].toSorted((a, b) => a - b);
        const got: Received[] = [];
        let pings = 0;
        const receiver = taking(new Receiver({ isServer: true, binaryType: 'nodebuffer', allowSynchronousEvents: true }));
        receiver.on('message', (data, binary) => got.push({ data: data as Buffer, binary }));
        receiver.on('ping', () => pings++);
        receiver.on('error', (err) => {
          throw err;
        });
        let from = 0;
        for (const to of [...points, wire.length]) {
          if (to > from) receiver.write(wire.subarray(from, to));
          from = Math.max(from, to);
        }
        expect(got.length).toBe(sent.length);
        expect(got.map((r) => r.binary)).toEqual(sent.map((m) => m.binary));
        expect(got.map((r, i) => r.data.equals(sent[i]!.data))).toEqual(sent.map(() => true));
        expect(pings).toBe(messages.filter((m) => m.pingAfter).length);
        for (const { index, from: first, to: end } of spans) {
          const m = messages[index]!;
          const spansReads = points.some((p) => p > first && p < end);
          const taken = m.binary && m.size >= MIN_RECEIVED_BYTES && spansReads;
          expect(got[index]!.data.buffer instanceof SharedArrayBuffer, `message ${index}: ${m.size} bytes, binary ${m.binary}, spans reads ${spansReads}`).toBe(taken);
        }
        for (const r of got) framePool.release(r.data);
      }),
      { numRuns: 100 },
    );
  });

  it('a received buffer is reused only after the receiver let go, and a copy of it is no copy', () => {
    const receiveOne = (fill: number): Buffer => {
      const receiver = taking(new Receiver({ isServer: true, binaryType: 'nodebuffer', allowSynchronousEvents: true }));
      let data: Buffer | null = null;
      receiver.on('message', (d) => (data = d as Buffer));
      const wire = wireFrame(2, true, Buffer.alloc(100_000, fill), Buffer.from([1, 2, 3, 4]));
      receiver.write(wire.subarray(0, 50_000));
      receiver.write(wire.subarray(50_000));
      expect(data).not.toBeNull();
      return data!;
    };
    const a = receiveOne(1);
    expect(a.buffer).toBeInstanceOf(SharedArrayBuffer);
    // What the workers are handed: the received bytes themselves.
    expect(framePool.copy(a)).toBe(a);
    framePool.hold(a); // a worker
    framePool.release(a); // the receiver
    const b = receiveOne(2);
    expect(b.buffer).not.toBe(a.buffer); // the worker still reads a
    expect(a.every((x) => x === 1)).toBe(true);
    framePool.release(a); // the worker answered
    const c = receiveOne(3);
    expect(c.buffer).toBe(a.buffer);
    expect(c.every((x) => x === 3)).toBe(true);
    framePool.release(b);
    framePool.release(c);
  });
});

describe('end to end', () => {
  const FIELDS = ['x'];
  /** Every tick, each agent reports the row it sees. */
  const SEE = { root: { type: 'action', action: 'see', args: { x: 'self.x' }, instant: true } };
  const AGENTS = 6000;
  const ids = Array.from({ length: AGENTS }, (_, i) => i);
  /** Tick `t`'s snapshot: a float per row (9 bytes), some 77 KB, more than one socket read. */
  const snapshot = (t: number): Buffer => encode({ t: 'snapshot', tick: t, time: t * 0.05, agents: ids.map((id) => [id, t * 10_000 + id + 0.5]) });
  /** The agents whose action in decisions `d` did not report tick `t`'s row. */
  const wrong = (d: Frame, t: number): string[] => {
    const seen = new Map((d.actions as Array<[number, number, string, { x: number }]>).map(([id, , , args]) => [id, args.x]));
    return ids.filter((id) => seen.get(id) !== t * 10_000 + id + 0.5).map((id) => `tick ${t}: agent ${id} saw ${seen.get(id)}`);
  };
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let dir: string;
  let oneWorker: Running;
  let spread: Running;

  beforeAll(async () => {
    fixture = await writeFixture({ see: SEE });
    dir = await mkdtemp(join(tmpdir(), 'canopy-receive-'));
    // Checkpoints every few ticks: the recovery journal lets go of a frame once one covers its tick.
    const options = { trees: fixture.trees, maxAgents: AGENTS, recordDir: join(dir, 'recordings') };
    [oneWorker, spread] = await Promise.all([
      start({ ...options, workers: 1, tuning: { workerCheckpointMs: 200 } }),
      // The session's agents over both workers: its frames are staged (stageRows), then ticked.
      start({ ...options, workers: 2, tuning: { workerCheckpointMs: 200, sessionAffinity: 0 } }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([oneWorker?.close(), spread?.close()]);
    await fixture?.remove();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['one worker (a frame and its tick in one message)', () => oneWorker],
    ['two workers (the frame staged, then ticked)', () => spread],
  ])('%s: lockstep frames received into frame memory and reused; each tick sees its own rows, and the recording holds every frame as sent', async (_name, which) => {
    const running = which();
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: FIELDS, record: true });
    await client.request({ t: 'spawn', agents: ids.map((id) => ({ id, tree: 'see' })) }, 'spawned');
    const reusedBefore = framePool.reused;
    const received = countReceived();
    const sent: Buffer[] = [];
    const TICKS = 30;
    const send = (t: number): void => {
      const frame = snapshot(t);
      expect(frame.length).toBeGreaterThan(64 * 1024);
      sent.push(frame);
      client.sendRaw(frame);
    };
    // Four frames in flight: the later ones wait in their own buffers while the first is ticked.
    const AHEAD = 4;
    try {
      for (let t = 1; t <= AHEAD; t++) send(t);
      for (let t = 1; t <= TICKS; t++) {
        const d: Frame = await client.next('decisions', (f) => f.tick === t);
        if (t + AHEAD <= TICKS) send(t + AHEAD);
        expect(wrong(d, t)).toEqual([]);
      }
    } finally {
      received.stop();
    }
    expect(received.count).toBe(TICKS);
    // Their buffers came back to the pool and were received into again.
    expect(framePool.reused - reusedBefore).toBeGreaterThanOrEqual(TICKS / 2);
    const res = await http(running.base, 'DELETE', `/v1/sessions/${welcome.session as string}/recording`);
    expect(res.status).toBe(200);
    await client.close();
    const file = join(dir, 'recordings', `${(res.body as { recording: string }).recording}.p001.canopyrec`);
    const recorded = [...RecordingReader.open(file).records()].filter((r) => r.kind === Kind.SNAPSHOT_FRAME).map((r) => r.payload);
    expect(recorded.length).toBe(TICKS);
    expect(recorded.map((r, t) => r.equals(sent[t]!))).toEqual(sent.map(() => true));
  }, 60_000);

  it('fixed mode: frames received into frame memory too (the worker reads their rows as they come), and the agents see them', async () => {
    const { client } = await RawClient.hello(oneWorker.wsUrl, { mode: 'fixed', hz: 20, fields: FIELDS });
    await client.request({ t: 'spawn', agents: ids.map((id) => ({ id, tree: 'see' })) }, 'spawned');
    const received = countReceived();
    try {
      for (let t = 1; t <= 5; t++) client.sendRaw(snapshot(t));
      await client.next('decisions', (d) => wrong(d, 5).length === 0, 10_000);
    } finally {
      received.stop();
    }
    // Frames whose rows the main thread reads are copied out of it first (read-frame-ws.test.ts checks those).
    expect(received.count).toBe(5);
    await client.close();
  }, 30_000);
});

/** Counts the messages received into frame memory until stop(). */
function countReceived(): { count: number; stop(): void } {
  const original = framePool.receive;
  const counter = {
    count: 0,
    stop: () => {
      framePool.receive = original;
    },
  };
  framePool.receive = (length: number) => {
    counter.count++;
    return original.call(framePool, length);
  };
  return counter;
}
