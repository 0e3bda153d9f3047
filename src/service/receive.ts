// Large binary WebSocket messages received straight into the workers' shared frame memory (pool/frames.ts).
//
// ws joins a message that spans several socket reads into a new Buffer (its Receiver's `consume`), and the pool
// then copied that Buffer into shared memory for the workers: two copies of every large snapshot on the main
// thread, the first into a fresh block that glibc maps, and the kernel faults in, each time (blocks over
// MALLOC_MMAP_THRESHOLD_, 128 KiB as the service starts). For lockstep connections that join writes into a pooled
// shared buffer instead, which the pool then hands to the workers as it is (FramePool.copy), and which the
// connection releases once it handled the message (ws.ts). docs/capacity.md, *Round twenty-two*.
//
// This replaces a method ws does not document, so it is checked before it is used: receiveIntoFrames() installs it
// only if a Receiver with it in place parses a test message right, and reports whether it did. Without it, ws
// joins as ever and the pool copies as ever.

/* oxlint-disable no-underscore-dangle -- ws's Receiver state (its underscored fields), used as its own consume() uses it */

import * as ws from 'ws';
import { copyBytes } from './pool/copy-bytes.js';
import type { FramePool } from './pool/frames.js';

/** Messages from this size on are received into frame memory (smaller ones rarely span two socket reads). */
export const MIN_RECEIVED_BYTES = 32 * 1024;

/** The Receiver state this relies on (ws 8's lib/receiver.js). */
interface ReceiverState {
  _buffers: Buffer[];
  _bufferedBytes: number;
  _binaryType: string;
  _compressed: boolean;
  _fin: boolean;
  _opcode: number;
  consume(n: number): Buffer;
}

interface ReceiverClass {
  new (options: { isServer: boolean; binaryType: string; allowSynchronousEvents: boolean }): ReceiverState & NodeJS.WritableStream;
  prototype: ReceiverState;
}

/** ws exports its Receiver class; its types do not declare it. */
const Receiver = (ws as unknown as { Receiver: ReceiverClass }).Receiver;

let installed: FramePool | null = null;

/**
 * The receivers whose messages go into frame memory: those of connections that release each message once it is
 * handled (ws.ts: lockstep sessions, whose every message is done with when its handling resolves). Any other
 * receiver's messages stay ws's own Buffers, which nothing recycles.
 */
const takers = new WeakSet<object>();

/** Messages on `socket` (a ws WebSocket) are received into frame memory from now on; false when the hook is not in place. */
export function receiveFramesOn(socket: object): boolean {
  const receiver = (socket as { _receiver?: unknown })._receiver;
  if (installed === null || typeof receiver !== 'object' || receiver === null) return false;
  takers.add(receiver);
  return true;
}

/**
 * Makes the ws Receivers of the process that receiveFramesOn() named receive single-frame binary messages of
 * MIN_RECEIVED_BYTES or more that span socket reads into `frames`: the message is a Buffer on a pooled shared buffer,
 * held once for its receiver (FramePool.receive), which the connection releases. Returns false, and changes nothing,
 * when this ws's Receiver does not work as this expects. Idempotent for the same pool.
 */
export function receiveIntoFrames(frames: FramePool): boolean {
  if (installed !== null) return installed === frames;
  const proto = Receiver.prototype;
  const consume = proto.consume;
  if (typeof consume !== 'function') return false;
  proto.consume = function (this: ReceiverState, n: number): Buffer {
    const buffers = this._buffers;
    const first = buffers[0];
    if (n < MIN_RECEIVED_BYTES || first === undefined || n <= first.length || this._opcode !== 2 || !this._fin || this._compressed || this._binaryType !== 'nodebuffer' || !takers.has(this)) {
      return consume.call(this, n);
    }
    const message = frames.receive(n);
    this._bufferedBytes -= n;
    let at = 0;
    while (at < n) {
      const part = buffers[0]!;
      const length = Math.min(part.length, n - at);
      copyBytes(part, message, at, 0, length);
      if (length === part.length) buffers.shift();
      else buffers[0] = part.subarray(length);
      at += length;
    }
    return message;
  };
  if (!selfTest(frames)) {
    proto.consume = consume;
    return false;
  }
  installed = frames;
  return true;
}

/** A masked binary message of 80 KiB in three reads, then a ping in the last read's tail: parsed right, into `frames`? */
function selfTest(frames: FramePool): boolean {
  const payload = Buffer.alloc(80 * 1024);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 31) & 0xff;
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const head = Buffer.alloc(14);
  head[0] = 0x82; // FIN, binary
  head[1] = 0x80 | 127;
  head.writeBigUInt64BE(BigInt(payload.length), 2);
  mask.copy(head, 10);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= mask[i & 3]!;
  const ping = Buffer.from([0x89, 0x80, 0, 0, 0, 0]);
  const wire = Buffer.concat([head, masked, ping]);
  const receiver = new Receiver({ isServer: true, binaryType: 'nodebuffer', allowSynchronousEvents: true });
  takers.add(receiver);
  let message: Buffer | null = null;
  let pinged = false;
  receiver.on('message', (data: unknown) => {
    message = data as Buffer;
  });
  receiver.on('ping', () => {
    pinged = true;
  });
  try {
    for (const [from, to] of [[0, 30_000], [30_000, 70_000], [70_000, wire.length]] as const) receiver.write(wire.subarray(from, to));
  } catch {
    return false;
  }
  const got = message as Buffer | null;
  const ok = pinged && got !== null && got.buffer instanceof SharedArrayBuffer && got.equals(payload);
  if (got !== null) frames.release(got);
  return ok;
}
