// The service's CPU by thread role (canopy_thread_cpu_seconds_total): read from Linux's /proc, summed into counters
// that never go down while workers crash and are replaced, threads end and thread ids come back.

import { Worker } from 'node:worker_threads';
import { describe, expect, test } from 'vitest';
import { ThreadCpu, ownThreadId, readThreadStats, type ThreadStat } from '../../src/service/pool/thread-cpu.js';

const linux = process.platform === 'linux';
const pid = process.pid;
const stat = (tid: number, cpuSeconds: number, minorFaults = 0, name = 'node'): ThreadStat => ({ tid, name, cpuSeconds, minorFaults });
const byRole = (rows: ReturnType<ThreadCpu['read']>): Record<string, number> => Object.fromEntries((rows ?? []).map((r) => [r.thread, r.cpuSeconds]));

describe('ThreadCpu', () => {
  test('sums threads by role: main (the process id), each worker by its thread id, the rest as other', () => {
    const meter = new ThreadCpu();
    const rows = meter.read([pid + 1, pid + 2], [stat(pid, 3, 40), stat(pid + 1, 5, 7), stat(pid + 2, 4, 9), stat(pid + 3, 0.5), stat(pid + 4, 0.25)]);
    expect(rows).toEqual([
      { thread: 'main', cpuSeconds: 3, minorFaults: 40 },
      { thread: 'worker-0', cpuSeconds: 5, minorFaults: 7 },
      { thread: 'worker-1', cpuSeconds: 4, minorFaults: 9 },
      { thread: 'other', cpuSeconds: 0.75, minorFaults: 0 },
    ]);
  });

  test('a worker that crashed keeps its seconds; its replacement counts on, first as other until its tid is known', () => {
    const meter = new ThreadCpu();
    meter.read([pid + 1], [stat(pid, 1), stat(pid + 1, 5), stat(pid + 9, 1)]);
    // The worker died; its replacement (pid + 2) runs but has not said ready yet.
    const between = byRole(meter.read([undefined], [stat(pid, 1.5), stat(pid + 2, 0.5), stat(pid + 9, 1)]));
    expect(between).toEqual({ main: 1.5, 'worker-0': 5, other: 1.5 });
    // It said ready: what it used before stays in other, what it uses after counts for worker 0.
    const after = byRole(meter.read([pid + 2], [stat(pid, 2), stat(pid + 2, 2.5), stat(pid + 9, 1)]));
    expect(after).toEqual({ main: 2, 'worker-0': 7, other: 1.5 });
  });

  test('an ended helper thread keeps counting; a thread id the OS gave again to a new thread starts from that thread', () => {
    const meter = new ThreadCpu();
    meter.read([], [stat(pid, 1), stat(pid + 5, 2, 10)]);
    expect(meter.read([], [stat(pid, 1)])).toEqual([
      { thread: 'main', cpuSeconds: 1, minorFaults: 0 },
      { thread: 'other', cpuSeconds: 2, minorFaults: 10 },
    ]);
    meter.read([], [stat(pid, 1), stat(pid + 6, 3, 20)]);
    // pid + 6 ended and its id came back to a thread that has used less so far.
    expect(byRole(meter.read([], [stat(pid, 1), stat(pid + 6, 0.5, 1)]))).toEqual({ main: 1, other: 5.5 });
  });

  test('every counter never goes down over a run of crashes, role changes and ended threads', () => {
    const meter = new ThreadCpu();
    const steps: Array<[Array<number | undefined>, ThreadStat[]]> = [
      [[undefined, undefined], [stat(pid, 0.1), stat(pid + 1, 0.2), stat(pid + 2, 0.2), stat(pid + 3, 0.1)]],
      [[pid + 1, pid + 2], [stat(pid, 0.3), stat(pid + 1, 0.9), stat(pid + 2, 0.7), stat(pid + 3, 0.1)]],
      [[undefined, pid + 2], [stat(pid, 0.4), stat(pid + 2, 1.2), stat(pid + 3, 0.2), stat(pid + 4, 0.05)]],
      [[pid + 4, pid + 2], [stat(pid, 0.6), stat(pid + 2, 1.6), stat(pid + 4, 0.4)]],
      [[pid + 4, undefined], [stat(pid, 0.7), stat(pid + 4, 0.9), stat(pid + 2, 1.7)]],
    ];
    let last: Record<string, number> = {};
    for (const [workers, stats] of steps) {
      const now = byRole(meter.read(workers, stats));
      expect(Object.entries(last).filter(([role, seconds]) => !(now[role]! >= seconds - 1e-9))).toEqual([]);
      last = now;
    }
    expect(Object.keys(last).toSorted()).toEqual(['main', 'other', 'worker-0', 'worker-1']);
  });

  test('off Linux (no /proc) there is nothing to report', () => {
    expect(new ThreadCpu().read([], undefined)).toBeUndefined();
  });
});

describe.skipIf(!linux)('/proc on Linux', () => {
  test("the main thread's id is the process id; a worker thread's is its own, listed among the process's threads", async () => {
    expect(ownThreadId()).toBe(pid);
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const { readlinkSync } = require('node:fs');
       const link = readlinkSync('/proc/thread-self');
       parentPort.postMessage(Number(link.slice(link.lastIndexOf('/') + 1)));
       parentPort.once('message', () => process.exit(0));`,
      { eval: true },
    );
    const tid = await new Promise<number>((resolve) => worker.once('message', resolve));
    expect(tid).not.toBe(pid);
    const stats = readThreadStats('self')!;
    expect(stats.map((s) => s.tid)).toContain(tid);
    expect(stats.find((s) => s.tid === pid)!.cpuSeconds).toBeGreaterThan(0);
    worker.postMessage('done'); // oxlint-disable-line unicorn/require-post-message-target-origin -- a Worker's, not a window's
    await new Promise((resolve) => worker.once('exit', resolve));
  });
});
