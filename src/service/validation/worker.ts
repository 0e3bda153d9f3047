// The validation worker thread: parses and validates trees posted to /v1/trees/validate, so that no
// body, however large or broken, costs the main thread (and its sessions' ticks) anything.

import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { loadCatalog } from '../pool/load.js';
import { validatePostedTree } from './posted.js';
import type { ValidationHello, ValidationReply, ValidationRequest, ValidationWorkerData } from './wire.js';

// Validation is background work: on a busy machine the main thread and the tick workers (nice 0) get
// the cores first, so a large posted tree delays its own answer rather than anyone's tick.
try {
  setPriority(0, 19);
} catch {
  // Not permitted (some containers): the default priority still keeps the work off the main thread.
}

const port = parentPort;
if (port === null) throw new Error('validation worker: must run as a worker thread');
const { plugins, trees } = workerData as ValidationWorkerData;

const loaded = await loadCatalog(plugins ?? undefined);
if (!loaded.ok) {
  port.postMessage({ t: 'ready', ok: false, error: loaded.error } satisfies ValidationHello);
} else {
  const env = { catalog: loaded.catalog, trees };
  port.on('message', (msg: ValidationRequest) => {
    let reply: ValidationReply;
    try {
      reply = { id: msg.id, answer: validatePostedTree(env, msg) };
    } catch (err) {
      // A bug, or a plugin's check that throws outside validation's own guard: answer, keep serving.
      reply = { id: msg.id, answer: { ok: false, status: 500, code: 'E_INTERNAL', message: 'internal error; the service logged the details' }, error: String(err) };
    }
    port.postMessage(reply);
  });
  port.postMessage({ t: 'ready', ok: true } satisfies ValidationHello);
}
