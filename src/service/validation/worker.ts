// The validation worker thread: parses and validates trees posted to /v1/trees/validate, so that no
// body, however large or broken, costs the main thread (and its sessions' ticks) anything.

import { parentPort, workerData } from 'node:worker_threads';
import { loadCatalog } from '../pool/load.js';
import { validatePostedTree } from './posted.js';
import type { ValidationHello, ValidationReply, ValidationRequest, ValidationWorkerData } from './wire.js';

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
