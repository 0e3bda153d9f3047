// V8's helper threads yield to the ticks for a while after a large spawn.
//
// The helper threads (Node 24 and later name them `node-V8Worker`; four by default) compile optimized code and run
// the collectors' concurrent and parallel parts, beside the main thread and the workers and at their priority. Right
// after game servers spawn thousands of agents the compilers get busy (new agents, the games' own objects, code paths
// the warm-up could not reach): in a cold start of 8 × 2,500 agents on two cores they took 160 ms of CPU in the first
// 225 ms, while each game server's first ticks waited for the cores (docs/capacity.md, *Round nineteen*). So after a
// spawn of SPAWN_AGENTS or more they run at a higher nice value for `holdMs`, then go back to the priority they had;
// without spawns they are never touched. Linux only, where those threads can be found by name and a thread's
// priority set on its own; and only where the process may give the priority back (CAP_SYS_NICE or RLIMIT_NICE):
// otherwise the threads are left as they are. The threads are the process's: two services in one process (tests)
// share them, and one's restore ends the other's hold early.

import { readFileSync, readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

/** Spawns of fewer agents than this leave the helper threads alone. */
export const SPAWN_AGENTS = 1000;

/** A helper thread and the nice value it had. */
interface Helper {
  readonly tid: number;
  readonly nice: number;
}

export class SpawnPriority {
  private readonly helpers: readonly Helper[];
  private timer: NodeJS.Timeout | undefined;
  private lowered = false;

  /**
   * @param nice added to each helper thread's own nice value during a spawn's hold (0: off)
   * @param holdMs how long after the last large spawn they keep it
   */
  constructor(
    private readonly nice: number,
    private readonly holdMs: number,
  ) {
    this.helpers = nice > 0 ? restorableHelpers() : [];
  }

  /** Helper threads it acts on (0: none found, or their priority could not be given back). */
  get threads(): number {
    return this.helpers.length;
  }

  /** Whether the helpers are lowered now. */
  get active(): boolean {
    return this.lowered;
  }

  /** `agents` are about to be spawned. */
  spawning(agents: number): void {
    if (agents < SPAWN_AGENTS || this.helpers.length === 0) return;
    if (!this.lowered) {
      this.lowered = true;
      for (const h of this.helpers) renice(h.tid, Math.min(19, h.nice + this.nice));
    }
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.restore(), this.holdMs);
      this.timer.unref();
    } else this.timer.refresh();
  }

  /** Gives the helpers their priority back now. */
  restore(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.lowered) return;
    this.lowered = false;
    for (const h of this.helpers) renice(h.tid, h.nice);
  }
}

function renice(tid: number, nice: number): void {
  try {
    setPriority(tid, nice);
  } catch {
    // the thread ended, or not permitted
  }
}

/** A thread's nice value (`/proc/self/task/TID/stat`, field 19), or undefined. */
export function threadNice(tid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    return Number.isInteger(nice) ? nice : undefined;
  } catch {
    return undefined;
  }
}

/** This process's V8 helper threads, by id (none off Linux or before Node 24, whose threads are not named). */
export function helperThreads(): number[] {
  const tids: number[] = [];
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === 'node-V8Worker') tids.push(Number(tid));
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return tids;
}

/** The helper threads whose priority this process may lower and give back: none if it may not. */
function restorableHelpers(): Helper[] {
  const helpers: Helper[] = [];
  for (const tid of helperThreads()) {
    const nice = threadNice(tid);
    if (nice !== undefined) helpers.push({ tid, nice });
  }
  if (helpers.length === 0) return [];
  const floor = Math.min(...helpers.map((h) => h.nice));
  return mayRaise(floor) ? helpers : [];
}

/** Whether this process may set a thread's nice value back down to `nice` (CAP_SYS_NICE, or RLIMIT_NICE allows it). */
function mayRaise(nice: number): boolean {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const cap = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
    if (cap !== null && (BigInt(`0x${cap[1]!}`) & (1n << 23n)) !== 0n) return true;
    const limits = readFileSync('/proc/self/limits', 'utf8');
    const rlimit = /^Max nice priority\s+(\S+)/m.exec(limits);
    if (rlimit === null) return false;
    const soft = rlimit[1] === 'unlimited' ? Infinity : Number(rlimit[1]);
    return 20 - soft <= nice;
  } catch {
    return false;
  }
}
