// ValidationWorker: the main thread's side of the validation thread. One tree at a time, a short queue
// (full → 429), and a time limit after which the thread is terminated and replaced (→ 422).

import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/index.js';
import type { PostedTree, ValidateAnswer } from './posted.js';
import type { ValidationHello, ValidationReply, ValidationRequest, ValidationWorkerData } from './wire.js';

/** How the validation thread is bounded. */
export interface ValidationLimits {
  /** Longest validation of one tree; then the thread is replaced and the request answered 422. */
  readonly timeLimitMs: number;
  /** Requests waiting behind the one being validated; beyond it requests are answered 429. */
  readonly queueLimit: number;
}

interface Job {
  readonly request: PostedTree;
  resolve(answer: ValidateAnswer): void;
}

/** Heap of the validation thread: a hostile body ends its own validation (422), not the process (1 MiB of YAML needs ~150 MB). */
const HEAP_LIMIT_MB = 512;

/** Starts worker.ts (compiled: worker.js); under vitest through tsx, the way the agent pool starts its workers. */
function startThread(data: ValidationWorkerData): Worker {
  const resourceLimits = { maxOldGenerationSizeMb: HEAP_LIMIT_MB };
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./worker.js', import.meta.url), { workerData: data, resourceLimits });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData: data, resourceLimits });
}

/**
 * Validates posted trees on a dedicated thread (started on the first request, replaced after a time
 * limit or a crash): parsing and validation never run on the main thread. Requests are answered in
 * order, one at a time. `validate` never rejects: a full queue, a time limit
 * or a dead thread become answers with a code.
 */
export class ValidationWorker {
  private readonly data: ValidationWorkerData;
  private readonly limits: ValidationLimits;
  private readonly logger: Logger;
  private worker: Worker | null = null;
  private ready = false;
  private readonly queue: Job[] = [];
  private current: { job: Job; id: number; timer: NodeJS.Timeout } | null = null;
  private nextId = 1;
  private closed = false;
  /** Threads replaced after a time limit or a crash (for tests and logs). */
  replacements = 0;

  constructor(data: ValidationWorkerData, limits: ValidationLimits, logger: Logger) {
    this.data = data;
    this.limits = limits;
    this.logger = logger;
    // The thread starts with the first request: most services never validate, and start-up stays lean.
  }

  /** Validates one posted tree (see validatePostedTree); the answer is in the request's terms. */
  validate(request: PostedTree): Promise<ValidateAnswer> {
    if (this.closed) return Promise.resolve(refusal(503, 'E_UNAVAILABLE', 'the service is shutting down'));
    const waiting = this.queue.length + (this.current === null ? 0 : 1);
    if (waiting > this.limits.queueLimit) {
      return Promise.resolve(
        refusal(429, ErrorCode.E_LIMIT, `${waiting} trees are being validated or waiting already (the limit is ${this.limits.queueLimit + 1}); retry shortly`),
      );
    }
    return new Promise((resolve) => {
      this.queue.push({ request, resolve });
      if (this.worker === null) this.start();
      else this.pump();
    });
  }

  /** Stops the thread; waiting requests are answered 503. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.resolve(refusal(503, 'E_UNAVAILABLE', 'the service is shutting down'));
    if (this.current !== null) {
      clearTimeout(this.current.timer);
      this.current.job.resolve(refusal(503, 'E_UNAVAILABLE', 'the service is shutting down'));
      this.current = null;
    }
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) await worker.terminate();
  }

  private start(): void {
    const worker = startThread(this.data);
    this.worker = worker;
    this.ready = false;
    worker.on('message', (msg: ValidationHello | ValidationReply) => {
      if (worker !== this.worker) return;
      if ('t' in msg) {
        if (!msg.ok) {
          // The plugins loaded on the main thread; failing here means the folder changed since.
          this.logger.error({ error: msg.error }, 'validation worker could not load the plugins');
          return;
        }
        this.ready = true;
        this.pump();
        return;
      }
      this.finish(msg);
    });
    worker.on('error', (err: Error & { code?: string }) => {
      if (worker !== this.worker) return;
      if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        this.logger.warn('tree validation ran out of memory; validation worker replaced');
        this.replace(refusal(422, ErrorCode.E_LIMIT, `validating this tree needed more than ${HEAP_LIMIT_MB} MB and was stopped; split it into subtrees`));
        return;
      }
      this.logger.error({ err }, 'validation worker failed; replacing it');
      this.replace(refusal(500, ErrorCode.E_INTERNAL, 'internal error; the service logged the details'));
    });
    worker.on('exit', () => {
      if (worker !== this.worker || this.closed) return;
      this.replace(refusal(500, ErrorCode.E_INTERNAL, 'internal error; the service logged the details'));
    });
  }

  /** Terminates the thread (the current request gets `answer`), starts a fresh one, and goes on with the queue. */
  private replace(answer: ValidateAnswer): void {
    const old = this.worker;
    this.worker = null;
    if (this.current !== null) {
      clearTimeout(this.current.timer);
      this.current.job.resolve(answer);
      this.current = null;
    }
    if (old !== null) void old.terminate();
    if (this.closed) return;
    this.replacements++;
    if (this.queue.length > 0) this.start();
  }

  private pump(): void {
    if (!this.ready || this.current !== null || this.worker === null) return;
    const job = this.queue.shift();
    if (job === undefined) return;
    const id = this.nextId++;
    // A copy with a buffer of its own, handed over without a second copy (fastify's Buffer may share a pool).
    const bytes = new Uint8Array(job.request.bytes);
    const message: ValidationRequest = { id, bytes, contentType: job.request.contentType, name: job.request.name };
    const timer = setTimeout(() => {
      this.logger.warn({ ms: this.limits.timeLimitMs }, 'tree validation hit its time limit; validation worker replaced');
      this.replace(
        refusal(
          422,
          ErrorCode.E_LIMIT,
          `validating this tree took longer than ${this.limits.timeLimitMs} ms and was stopped; split it into subtrees and validate them one by one`,
        ),
      );
    }, this.limits.timeLimitMs);
    this.current = { job, id, timer };
    this.worker.postMessage(message, [bytes.buffer]);
  }

  private finish(reply: ValidationReply): void {
    if (this.current === null || reply.id !== this.current.id) return;
    clearTimeout(this.current.timer);
    if (reply.error !== undefined) this.logger.error({ error: reply.error }, 'tree validation failed');
    this.current.job.resolve(reply.answer);
    this.current = null;
    this.pump();
  }
}

function refusal(status: number, code: string, message: string): ValidateAnswer {
  return { ok: false, status, code, message };
}
