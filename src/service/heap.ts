// V8 settings of the service's process, set before it allocates anything much.
//
// ArrayBuffers that cross between threads every tick (rows, decision columns) are new external memory on the thread
// that receives them. V8 keeps its own limit for external memory beside the heap's, and a main thread that otherwise
// allocates little kept reaching it: incremental marking started every 150–200 ms at 50,000 agents, three times as
// many major collections as before, +15–20 % of the service's CPU (docs/capacity.md, "Round eight"). Counted within
// the heap's global limit instead (`--external-memory-accounted-in-global-limit`), it behaves as before. Set on V8 14
// (Node 26, where it was measured); older V8s, which may not know the flag (Node 20's prints "unrecognized flag"),
// are left as they are.

import { setFlagsFromString } from 'node:v8';

const V8_MAJOR = Number(process.versions.v8.split('.')[0]);

/** Applies the service's V8 flags (process-wide: worker threads started later get them too). */
export function tuneHeap(): void {
  if (V8_MAJOR >= 14) setFlagsFromString('--external-memory-accounted-in-global-limit');
}
