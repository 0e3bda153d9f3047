// The process's recording compression thread, main side: writers hand it whole blocks by reference (shared
// memory: no copy, and no buffer the main thread's garbage collector has to account for) with the file to append
// them to; it compresses, checksums and writes them there, and answers with the bytes written. The main thread
// only copies records into blocks: everything a recorded byte costs besides that copy happens on this thread.
//
// Why a thread of its own rather than libuv's pool: compressed blocks made on the main thread are new buffers
// the main isolate's garbage collector is told about, and at tens of MB/s that "external memory pressure" started
// major collections of the whole heap — measured (bench/record-cost.ts), they cost as much as compressing.

import { Worker } from 'node:worker_threads';
import type { BlockJob, BlockSink } from '../../record/blocks.js';

/** A block to compress and append, as posted to the thread (`buffer`: a SharedArrayBuffer, shared, not copied). */
export interface BlockRequest extends BlockJob {
  readonly id: number;
}

/** The compression thread's answer: bytes appended (block header and body), or why not. */
export type BlockReply = { readonly id: number; readonly written: number } | { readonly id: number; readonly error: { readonly message: string; readonly code?: string } };

/**
 * The thread's name: on Node 24 and later it is the OS thread's name too (`/proc/PID/task/TID/comm`), so CPU
 * figures can tell it from the agent pool's workers (`WorkerThread`).
 */
export const THREAD_NAME = 'canopy-record';

/** Starts compress-worker.ts (compiled: .js); under vitest through tsx, the way the agent pool starts its workers. */
function startThread(): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./compress-worker.js', import.meta.url), { name: THREAD_NAME });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./compress-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, name: THREAD_NAME });
}

interface Waiting {
  resolve(written: number): void;
  reject(err: Error): void;
}

/**
 * One compression thread for every recording of the process, started on the first block. It keeps the process
 * alive only while blocks are in flight. If it dies, the blocks in flight fail (their recordings stop, the
 * sessions go on) and the next block starts a new thread.
 */
class CompressionThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  /** Compresses and appends one block; resolves with the bytes written to the file. */
  run(job: BlockJob): Promise<number> {
    const worker = (this.worker ??= this.start());
    const id = this.nextId++;
    if (this.waiting.size === 0) worker.ref();
    return new Promise<number>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ ...job, id } satisfies BlockRequest, []);
    });
  }

  private start(): Worker {
    const worker = startThread();
    worker.unref();
    worker.on('message', (reply: BlockReply) => {
      const w = this.waiting.get(reply.id);
      if (w === undefined) return;
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      if ('error' in reply) w.reject(Object.assign(new Error(reply.error.message), reply.error.code !== undefined ? { code: reply.error.code } : {}));
      else w.resolve(reply.written);
    });
    worker.on('error', (err) => this.lost(worker, err));
    worker.on('exit', (code) => this.lost(worker, new Error(`the recording's compression thread stopped (exit code ${code})`)));
    return worker;
  }

  private lost(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = null;
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.reject(err);
  }
}

let thread: CompressionThread | undefined;

/** The service's block sink: blocks (in shared memory) are compressed and appended on the compression thread. */
export const threadSink: BlockSink = {
  shared: true,
  write(job) {
    if (!(job.buffer instanceof SharedArrayBuffer)) return Promise.reject(new Error('the compression thread reads blocks from shared memory'));
    return (thread ??= new CompressionThread()).run(job);
  },
};
