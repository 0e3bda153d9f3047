// The start command's native heap reserve (src/service/heap.ts, CANOPY_NATIVE_HEAP_RESERVE_MB): grown, written and
// freed at start-up, it stays mapped, and the socket-read-sized blocks allocated afterwards take no page faults.
// Each case runs in a fresh process (the reserve is once per process), from dist/ (npm test builds first).

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { repoRoot } from '../../bench/load/service.js';

const run = promisify(execFile);
const heapJs = join(repoRoot(), 'dist', 'src', 'service', 'heap.js');

/** In a fresh process: reserve `mb`, then allocate 32 MiB of 64 KiB blocks and write them; their page faults. */
async function faultsAfterReserve(mb: number): Promise<{ faults: number; heapRssMb: number }> {
  const script = `
    import { readFileSync } from 'node:fs';
    import { reserveNativeHeap } from ${JSON.stringify(heapJs)};
    const minflt = () => Number(readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ')[7]);
    reserveNativeHeap(${mb});
    const smaps = readFileSync('/proc/self/smaps', 'utf8');
    const heap = smaps.slice(smaps.indexOf('[heap]'));
    const heapRssMb = Number(/Rss:\\s+(\\d+) kB/.exec(heap)[1]) / 1024;
    const before = minflt();
    const keep = [];
    for (let i = 0; i < 512; i++) keep.push(Buffer.allocUnsafeSlow(65536).fill(1));
    process.stdout.write(JSON.stringify({ faults: minflt() - before, heapRssMb }));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, MALLOC_MMAP_THRESHOLD_: '131072' } });
  return JSON.parse(stdout) as { faults: number; heapRssMb: number };
}

describe.skipIf(process.platform !== 'linux' || !existsSync(heapJs))('native heap reserve (Linux, glibc)', () => {
  test('64 MiB reserved: resident in the heap after being freed, and 32 MiB of blocks allocated afterwards fault almost nothing', async () => {
    const [without, withReserve] = [await faultsAfterReserve(0), await faultsAfterReserve(64)];
    expect(withReserve.heapRssMb).toBeGreaterThanOrEqual(64);
    // Without the reserve each of the 8,192 new pages is a fault; with it, the blocks come from pages already there.
    expect(without.faults).toBeGreaterThan(4000);
    expect(withReserve.faults).toBeLessThan(without.faults / 10);
  });
});
