// A pool worker thread: loads plugins and trees, then hosts agents for the main thread's router (AgentHost).
// workerData: { trees, plugins }. Says `ready` once; afterwards answers tick and inspect requests.

import { parentPort, workerData } from 'node:worker_threads';
import { AgentHost } from './host.js';
import { loadTrees } from './load.js';
import { libraryFromDefinitions, loadDefinitions } from './reload.js';
import { ProgressBoard } from './progress.js';
import { transferList, type CheckpointReply, type FromHost, type SparesOrder, type ToHost, type TreesOrder, type WorkerHello } from './wire.js';
import { giveCheckpointMemory } from './checkpoint.js';
import { SLICE_MS, Slicer, type Parts } from './slicer.js';
import { ownThreadId } from './thread-cpu.js';

/** The test hook's message (crashWorkerForTests): the worker dies the way a bug would kill it. */
interface CrashOrder {
  t: 'crash';
}

// Workers run at the main thread's priority. They ran at nice 10 until round ten (docs/capacity.md): that helped when
// the main thread did most of a tick's work, but now each tick also needs the workers' staging and encoding, and a
// nice-10 worker gets about a tenth of a core that a busy nice-0 thread (the main thread, a co-located game server,
// V8's helper threads) also wants. In a spawn burst its 4 ms tick took 30-50 ms of wall time: measured, the others'
// p99 rose +13 and +31 ms during a 10,000-agent spawn at nice 10, +3 and +7.5 ms at nice 0; fixed mode at 100,000
// agents missed 50-65 ticks of 1,600 at nice 10, 4 at nice 0.

const port = parentPort;
if (port === null) throw new Error('pool worker: must run as a worker thread');
const { trees, plugins, progress, definitions } = workerData as {
  trees: string;
  plugins: string | undefined;
  progress: SharedArrayBuffer;
  /** Set when the pool reloaded its trees before starting this worker: they replace the folder. */
  definitions?: Record<string, unknown>;
};
/** The stall watchdog reads this worker's own progress here (progress.ts), not the main thread's clock. */
const board = new ProgressBoard(progress);

const loaded = definitions === undefined ? await loadTrees(trees, plugins) : await loadDefinitions(definitions, plugins);
if (!loaded.ok) {
  port.postMessage({ t: 'ready', ok: false, error: loaded.error } satisfies WorkerHello);
  // Nothing listens: the worker exits once the message is out.
} else {
  let library = loaded.library;
  const host = new AgentHost(library, board);
  const run = (msg: ToHost): void => {
    let reply: FromHost | null;
    try {
      reply = host.handle(msg);
    } catch (err) {
      // A bug in the host: fail this request, keep the agents (a crash would lose every one of them).
      if (!('req' in msg)) throw err;
      reply = { t: 'failed', req: msg.req, message: err instanceof Error ? err.message : String(err) };
    }
    post(reply);
  };
  // A large session's checkpoint is packed in parts between the worker's other messages (slicer.ts).
  const parts = (msg: ToHost): Parts | null => {
    if (msg.t !== 'checkpoint') return null;
    const pack = host.checkpointInParts(msg);
    if (pack === null) return null;
    return (until) => {
      board.step(); // the watchdog sees the worker move between parts
      let reply: FromHost | null;
      try {
        reply = pack(until);
      } catch (err) {
        reply = { t: 'failed', req: msg.req, message: err instanceof Error ? err.message : String(err) };
      }
      if (reply === null) return false;
      post(reply);
      return true;
    };
  };
  const post = (reply: FromHost | null): void => {
    if (reply !== null && reply.t === 'checkpointed') {
      port.postMessage(reply, ownBuffer(reply));
      return;
    }
    if (reply === null) return;
    if (reply.t === 'staged') {
      const transfer: ArrayBuffer[] = [];
      for (const part of reply.parts) transfer.push(part.slots.buffer as ArrayBuffer, part.offsets.buffer as ArrayBuffer);
      port.postMessage(reply, transfer);
      return;
    }
    port.postMessage(reply, reply.t === 'ticked' ? transferList(reply.rows, reply.results, reply.frameRows) : []);
  };
  const slices = new Slicer(run, () => board.end(), SLICE_MS, undefined, parts);
  const handle = (msg: ToHost | CrashOrder | TreesOrder | SparesOrder): void => {
    if (msg.t === 'crash') throw new Error('pool worker: crash requested (test hook)');
    if (msg.t === 'spares') {
      // Not a session's message: it does not wait behind a sliced pack, nor make one finish.
      giveCheckpointMemory(msg.buffers);
      board.end();
      return;
    }
    if (msg.t === 'trees') {
      // Spawns queued before the reload use the trees they were checked against.
      slices.finishAll();
      // Validated on the main thread with the same plugins: a failure here is a deployment bug (loud: the worker is replaced).
      library = libraryFromDefinitions(msg.defs, library);
      host.reload(library, msg.restart);
      board.end();
      return;
    }
    // A large spawn or checkpoint, and whatever its session sends after it, waits in the slicer; other sessions go first.
    if (slices.take(msg)) return;
    try {
      run(msg);
    } finally {
      board.end(); // the reply is posted: this worker owes nothing, however late the main thread reads it
    }
  };
  // Messages sent before this listener exists wait in the port, in order.
  port.on('message', (msg: ToHost | CrashOrder | TreesOrder | SparesOrder) => {
    board.start();
    handle(msg);
  });
  const hashes: Record<string, string> = {};
  for (const name of library.names()) hashes[name] = library.get(name)!.hash;
  const tid = ownThreadId();
  port.postMessage({ t: 'ready', ok: true, trees: hashes, ...(tid !== undefined ? { tid } : {}) } satisfies WorkerHello);
}

/**
 * A checkpoint's bytes moved to the main thread rather than copied (hundreds of bytes per agent: at a million
 * agents, a copy is hundreds of MB the worker holds until its next GC). Local bytes (`reused` set) always start a
 * buffer of their own, which may be longer than they are (rounded up, or given back larger). Portable ones only when
 * they fill their buffer alone: a small serialization may sit in Node's shared Buffer pool, which must not be detached.
 */
function ownBuffer(reply: CheckpointReply): ArrayBuffer[] {
  const bytes = reply.bytes;
  const buffer = bytes.buffer;
  if (!(buffer instanceof ArrayBuffer) || bytes.byteOffset !== 0) return [];
  return reply.reused !== undefined || bytes.byteLength === buffer.byteLength ? [buffer] : [];
}
