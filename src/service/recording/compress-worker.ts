// The recordings' compression thread (compressor.ts starts it): compresses each block the writers hand it — from
// shared memory, no copy — checksums it and appends it to its part file. Blocks are handled one at a time, in the
// order they arrive, so each file gets its blocks in order.

import { writeSync, writevSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { compressBlockSync } from '../../record/codec.js';
import { blockHeader } from '../../record/format.js';
import type { BlockReply, BlockRequest } from './compressor.js';

/** Writes every byte of `parts` at the file's current end (a short write continues where it stopped). */
function writeAll(fd: number, parts: readonly Buffer[]): number {
  const total = parts.reduce((n, p) => n + p.length, 0);
  let done = writevSync(fd, parts as Buffer[]);
  while (done < total) {
    let skip = done;
    for (const part of parts) {
      if (skip >= part.length) {
        skip -= part.length;
        continue;
      }
      done += writeSync(fd, part, skip);
      break;
    }
  }
  return total;
}

const port = parentPort!;
port.on('message', (job: BlockRequest) => {
  let reply: BlockReply;
  try {
    const raw = new Uint8Array(job.buffer, 0, job.length);
    const body = compressBlockSync(job.codec, raw, job.zstdLevel);
    const head = blockHeader(body, job.length, job.firstTick, job.lastTick, job.codec);
    reply = { id: job.id, written: writeAll(job.fd, [head, body]) };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    reply = { id: job.id, error: { message: e instanceof Error ? e.message : String(err), ...(typeof e.code === 'string' ? { code: e.code } : {}) } };
  }
  port.postMessage(reply, []);
});
