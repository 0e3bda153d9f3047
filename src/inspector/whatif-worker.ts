// A what-if run off the main thread: the service's current tree definitions (and plugin folder) come in,
// the report of src/record/whatif.ts goes out. A long recording never stalls live sessions.

import { parentPort, workerData } from 'node:worker_threads';
import { TreeLibrary } from '../bt/library.js';
import { whatIf } from '../record/index.js';
import { loadCatalog } from '../service/pool/load.js';
import type { WhatIfJob } from './whatif.js';

async function run(job: WhatIfJob): Promise<unknown> {
  const loaded = await loadCatalog(job.plugins ?? undefined);
  if (!loaded.ok) throw new Error(loaded.error);
  const built = TreeLibrary.fromDefinitions(job.definitions, { catalog: loaded.catalog });
  if (!built.ok) throw new Error(`the current trees do not validate: ${built.errors.map((e) => e.message).join('; ')}`);
  return whatIf(job.path, built.library, job.plugins !== null ? { plugins: job.plugins } : {});
}

const port = parentPort!;
run(workerData as WhatIfJob).then(
  (report) => port.postMessage({ ok: true, report }, []),
  (err: unknown) => port.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) }, []),
);
