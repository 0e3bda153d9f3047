// Event-loop utilization per host over fixed windows measured inside the pool: a scrape reads the last completed
// window, so any number of scrapers read the same value instead of each resetting the others' baseline.

import type { EventLoopUtilization } from 'node:perf_hooks';

/** Default window of EluWindows, ms. */
export const DEFAULT_ELU_WINDOW_MS = 5000;

/**
 * Samples each host's ELU every `windowMs` and keeps the last completed window's utilization, clamped to 0–1.
 * `read(host)` gives the host's cumulative ELU, or null while it is down (a replacement starts a new baseline).
 * Before a host's first window completes its value is 0.
 */
export class EluWindows {
  private readonly read: (host: number) => EventLoopUtilization | null;
  private readonly prev: Array<EventLoopUtilization | null>;
  private readonly value: number[];
  private readonly timer: NodeJS.Timeout;

  constructor(hosts: number, windowMs: number, read: (host: number) => EventLoopUtilization | null) {
    this.read = read;
    this.prev = Array.from({ length: hosts }, () => null);
    this.value = Array.from({ length: hosts }, () => 0);
    this.timer = setInterval(() => this.sample(), windowMs);
    this.timer.unref();
  }

  /** The host's utilization over the last completed window, 0–1. */
  utilization(host: number): number {
    return this.value[host] ?? 0;
  }

  /** The host was replaced: its next window starts from the new thread's counters, its value is 0 until then. */
  reset(host: number): void {
    this.prev[host] = null;
    this.value[host] = 0;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): void {
    for (let h = 0; h < this.prev.length; h++) {
      const now = this.read(h);
      if (now === null) {
        this.reset(h);
        continue;
      }
      const prev = this.prev[h];
      this.prev[h] = now;
      if (prev === null || prev === undefined) continue;
      // Differences of the cumulative counters, not eventLoopUtilization(now, prev): a host replaced between
      // two samples would give a negative window; a window without time gives 0.
      const idle = now.idle - prev.idle;
      const active = now.active - prev.active;
      const u = idle + active > 0 ? active / (idle + active) : 0;
      this.value[h] = Number.isFinite(u) ? Math.min(1, Math.max(0, u)) : 0;
    }
  }
}
