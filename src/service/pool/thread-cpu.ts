// CPU time and page faults of the service's threads by role (the main thread, each worker, the rest), read from
// Linux's /proc when asked (a scrape): what says whether the main thread, one thread for the whole process, is what
// limits the service, and how far more cores would take it (docs/capacity.md, "Cores").

import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture Node runs on. */
export const USER_HZ = 100;

/** One thread's counters since it started. */
export interface ThreadStat {
  readonly tid: number;
  /** Its name (`comm`): `WorkerThread` for worker threads since Node 22, `node` for every thread before. */
  readonly name: string;
  /** User + system CPU seconds. */
  readonly cpuSeconds: number;
  /** Minor page faults: memory mapped on first touch, or again after it was given back. */
  readonly minorFaults: number;
}

/** Each thread of process `pid` (Linux), or undefined where /proc cannot say (another OS, no /proc). */
export function readThreadStats(pid: number | 'self'): ThreadStat[] | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const out: ThreadStat[] = [];
  for (const tid of tids) {
    let name: string;
    let stat: string;
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // Fields after "tid (comm)" (comm may hold spaces and parentheses): minflt is field 10, utime 14, stime 15 (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.push({ tid: Number(tid), name, cpuSeconds: (Number(fields[11]) + Number(fields[12])) / USER_HZ, minorFaults: Number(fields[7]) });
  }
  return out;
}

/** The calling thread's id in the OS (Linux, from /proc/thread-self); undefined elsewhere. */
export function ownThreadId(): number | undefined {
  try {
    const link = readlinkSync('/proc/thread-self'); // "<pid>/task/<tid>"
    const tid = Number(link.slice(link.lastIndexOf('/') + 1));
    return Number.isInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}

/** Counters of one role: `main`, `worker-<i>` or `other`. */
export interface RoleCounters {
  readonly thread: string;
  readonly cpuSeconds: number;
  readonly minorFaults: number;
}

/** `main` first, then the workers by index, then `other`. */
function roleOrder(role: string): number {
  return role === 'main' ? -1 : role === 'other' ? Number.MAX_SAFE_INTEGER : Number(role.slice(7));
}

interface Seen {
  role: string;
  cpuSeconds: number;
  minorFaults: number;
}

/**
 * The process's threads summed by role, as counters that never go down: a thread that ended (a worker that
 * crashed and was replaced, a helper that exited) keeps counting in its role with what it had used when last read,
 * and a thread whose role became known later (a worker before its `ready`) keeps what it used before in the role it
 * had then. What an ended thread used after the last read is not counted.
 */
export class ThreadCpu {
  private readonly seen = new Map<number, Seen>();
  /** Per role: counters of threads no longer there, and of threads before they changed role. */
  private readonly carried = new Map<string, { cpuSeconds: number; minorFaults: number }>();

  /**
   * The counters now, by role (`main` first, then workers in order, then `other`), from `stats` (readThreadStats of
   * this process); undefined without them (off Linux). `workers[i]` is worker i's OS thread id, undefined while unknown.
   */
  read(workers: ReadonlyArray<number | undefined>, stats: ThreadStat[] | undefined): RoleCounters[] | undefined {
    if (stats === undefined) return undefined;
    const roleOf = new Map<number, string>([[process.pid, 'main']]);
    workers.forEach((tid, i) => {
      if (tid !== undefined) roleOf.set(tid, `worker-${i}`);
    });
    const now = new Map<string, { cpuSeconds: number; minorFaults: number }>();
    const add = (role: string, cpuSeconds: number, minorFaults: number): void => {
      const c = now.get(role);
      if (c === undefined) now.set(role, { cpuSeconds, minorFaults });
      else {
        c.cpuSeconds += cpuSeconds;
        c.minorFaults += minorFaults;
      }
    };
    const present = new Set<number>();
    for (const t of stats) {
      present.add(t.tid);
      const role = roleOf.get(t.tid) ?? 'other';
      const before = this.seen.get(t.tid);
      if (before !== undefined) {
        // A thread id reused by the OS shows counters below what its previous thread had: a new thread.
        const fresh = t.cpuSeconds < before.cpuSeconds || t.minorFaults < before.minorFaults;
        if (fresh || before.role !== role) this.carry(before.role, before.cpuSeconds, before.minorFaults);
        // A thread that changed role starts in its new one from what it had when it changed.
        if (!fresh && before.role !== role) this.carry(role, -before.cpuSeconds, -before.minorFaults);
      }
      this.seen.set(t.tid, { role, cpuSeconds: t.cpuSeconds, minorFaults: t.minorFaults });
      add(role, t.cpuSeconds, t.minorFaults);
    }
    for (const [tid, s] of this.seen) {
      if (present.has(tid)) continue;
      this.carry(s.role, s.cpuSeconds, s.minorFaults);
      this.seen.delete(tid);
    }
    for (const [role, c] of this.carried) add(role, c.cpuSeconds, c.minorFaults);
    // Sums of hundredths as doubles: rounded back to the hundredths /proc counts in.
    return [...now]
      .toSorted((a, b) => roleOrder(a[0]) - roleOrder(b[0]))
      .map(([thread, c]) => ({ thread, cpuSeconds: Math.max(0, Math.round(c.cpuSeconds * USER_HZ) / USER_HZ), minorFaults: Math.max(0, c.minorFaults) }));
  }

  private carry(role: string, cpuSeconds: number, minorFaults: number): void {
    const c = this.carried.get(role);
    if (c === undefined) this.carried.set(role, { cpuSeconds, minorFaults });
    else {
      c.cpuSeconds += cpuSeconds;
      c.minorFaults += minorFaults;
    }
  }
}
