// V8 settings of the service's process, set before it allocates anything much.
//
// ArrayBuffers that cross between threads every tick (rows, decision columns) are new external memory on the thread
// that receives them. V8 keeps its own limit for external memory beside the heap's, and a main thread that otherwise
// allocates little kept reaching it: incremental marking started every 150–200 ms at 50,000 agents, three times as
// many major collections as before, +15–20 % of the service's CPU (docs/capacity.md, "Round eight"). Counted within
// the heap's global limit instead (`--external-memory-accounted-in-global-limit`), it behaves as before. Set on V8 14
// (Node 26, where it was measured); older V8s, which may not know the flag (Node 20's prints "unrecognized flag"),
// are left as they are.
//
// The start commands (`npm start`, the Docker image) also give the main thread a floor under its heap limit,
// `node --initial-old-space-size=128` (docs/capacity.md, "Round twelve"): the socket buffers it reads and the
// buffers the workers hand back are tens of MB a second of external memory, and with V8's limits a few MB above
// what is live, a major collection followed about every second, its marking on the helper threads ~10 % of the
// service's CPU. V8 reads that flag once per isolate, when the isolate is created, so it is cleared here, before
// any worker starts: the workers' heaps (most of the memory of a million agents) keep V8's own limits.
//
// Allocation-site pretenuring is off (`--no-allocation-site-pretenuring`). V8 watches each array and object literal
// of optimized code; when most of one site's objects outlive a scavenge, it allocates that site's objects in the old
// generation from then on. In fixed mode a snapshot's rows are read into spare observations about half a period
// before the tick swaps them in, and are then the observations for a period: the `[x, y]` pairs a worker reads
// (host.ts, checkedRowWriter) mostly survive a scavenge, their site was pretenured, and every pair was then allocated
// in the old generation to die there a period or two later: the read of a row with a pair cost ~4× as much, and
// the old generation filled with dead pairs, marked by the helper threads. Off, the workers used ~15 % less CPU at
// 100,000 agents in fixed mode, lockstep and a game's first spawns as before (docs/capacity.md, "Round thirty").
//
// The start command also faults in part of the main thread's native heap at start-up (reserveNativeHeap). Every
// socket read takes a new 64 KiB block from glibc's heap, freed only when a young-generation collection finds its
// Buffer dead, so under load the heap grows to tens of MB more than at rest (96 MB at lockstep 50,000) — page by
// page, each new page a fault, about 10 µs on a VM. A service that has just started paid them in its first seconds
// under load, the main thread 12,000 faults in a cold start's first 5 s (docs/capacity.md, "Round thirty-four").

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const V8_MAJOR = Number(process.versions.v8.split('.')[0]);

/** Applies the service's V8 flags (process-wide: worker threads started later get them too). */
export function tuneHeap(): void {
  if (V8_MAJOR >= 14) setFlagsFromString('--external-memory-accounted-in-global-limit');
  setFlagsFromString('--initial-old-space-size=0');
  setFlagsFromString('--no-allocation-site-pretenuring');
}

/** Blocks of the reserve: the 64 KiB a socket read takes, under glibc's mmap threshold, so they come from the heap. */
const RESERVE_BLOCK = 64 * 1024;
/** Allocated after the reserve and kept: glibc gives back only the top of its heap, and the reserve lies below this. */
let reservePin: Buffer | null = null;

/**
 * Grows the main thread's native heap by `mb` MiB and writes every page of it, then frees it with a full collection: the
 * freed blocks stay mapped under a small block kept for good, and the socket reads' blocks are then taken from them
 * without a page fault. Costs `mb` of RSS from the start instead of within the first minute under load. Once per
 * process; 0 does nothing.
 */
export function reserveNativeHeap(mb: number): void {
  if (mb <= 0 || reservePin !== null) return;
  const blocks: Buffer[] = [];
  for (let n = Math.ceil((mb * 1024 * 1024) / RESERVE_BLOCK); n > 0; n--) blocks.push(Buffer.allocUnsafeSlow(RESERVE_BLOCK).fill(0));
  reservePin = Buffer.allocUnsafeSlow(RESERVE_BLOCK);
  blocks.length = 0;
  // Freed now rather than by some later collection: 96 MB of new external memory makes V8 collect while the blocks are
  // still held, which moves them to the old generation, and the main thread's old generation is collected rarely
  // (measured: a reserve left to the collectors saved a cold start a quarter of its faults, not all). A full
  // collection of a heap this small, once, takes milliseconds.
  fullCollection();
}

/** One full garbage collection, without `--expose-gc` on the command line. */
function fullCollection(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc'); // contexts made later (the workers') get no `gc`, as before
  gc();
}
