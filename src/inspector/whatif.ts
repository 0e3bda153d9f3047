// Starts a what-if in a worker thread of its own (whatif-worker.ts) and resolves with its report: the
// service's main thread only copies the tree definitions in and the report out.

import { Worker } from 'node:worker_threads';
import type { TreeLibrary } from '../bt/library.js';
import type { WhatIfReport } from '../record/index.js';

/** What the worker needs: the recording, the current trees' definitions and the plugin folder. */
export interface WhatIfJob {
  path: string;
  definitions: Record<string, unknown>;
  plugins: string | null;
}

function startWorker(job: WhatIfJob): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./whatif-worker.js', import.meta.url), { workerData: job });
  // Running from TypeScript sources (tests): boot through tsx, as the agent pool's workers do.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./whatif-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData: job });
}

/** Runs the recording at `path` against `library` (the service's current trees) in a worker thread. */
export function whatIfInWorker(path: string, library: TreeLibrary, plugins: string | null): Promise<WhatIfReport> {
  const definitions: Record<string, unknown> = {};
  for (const name of library.names()) definitions[name] = library.definition(name);
  return new Promise((resolve, reject) => {
    const worker = startWorker({ path, definitions, plugins });
    let settled = false;
    worker.once('message', (m: { ok: true; report: WhatIfReport } | { ok: false; error: string }) => {
      settled = true;
      if (m.ok) resolve(m.report);
      else reject(new Error(m.error));
      void worker.terminate();
    });
    worker.once('error', (err) => {
      settled = true;
      reject(err);
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the what-if worker stopped (exit code ${code})`));
    });
  });
}
