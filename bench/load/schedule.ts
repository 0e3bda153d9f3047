// The open-loop schedule of one simulated game server: snapshot n is due at origin + offset + n/hz,
// whatever the service does. Due times are computed from n each time (no drift), and a generator
// that falls far behind skips ticks and counts them rather than queueing work without bound.

/** When each tick of one game server is due, and which ticks are due now. */
export class Schedule {
  readonly hz: number;
  readonly periodMs: number;
  /** `performance.now()` of tick 0 (plus `offsetMs`). */
  readonly origin: number;
  /** Phase of this game server within the period, so game servers do not all send at once. */
  readonly offsetMs: number;
  /** Ticks later than this are skipped (counted in `skipped`), never sent in a burst. */
  readonly maxBehindMs: number;
  /** Next tick to send. */
  next: number;
  /** Ticks never sent because the generator was more than `maxBehindMs` behind. */
  skipped = 0;
  /** First tick not to send (the end of the run); Infinity for no end. */
  end = Infinity;

  constructor(options: { hz: number; origin: number; offsetMs?: number; maxBehindMs?: number; first?: number }) {
    if (!(options.hz > 0)) throw new RangeError(`hz must be above 0, got ${options.hz}`);
    this.hz = options.hz;
    this.periodMs = 1000 / options.hz;
    this.origin = options.origin;
    this.offsetMs = options.offsetMs ?? 0;
    this.maxBehindMs = options.maxBehindMs ?? 1000;
    this.next = options.first ?? 1;
  }

  /** When tick `n` is due (`performance.now()` time). */
  due(n: number): number {
    // From n each time rather than by adding periods: no accumulated rounding.
    return this.origin + this.offsetMs + (n * 1000) / this.hz;
  }

  /** Game time of tick `n`, seconds: exactly n / hz. */
  time(n: number): number {
    return n / this.hz;
  }

  /** When the next tick is due; Infinity once the schedule has ended. */
  nextDue(): number {
    return this.next >= this.end ? Infinity : this.due(this.next);
  }

  /** The first tick due at or after `at` (to place the end of a run or of its warm-up). */
  tickAt(at: number): number {
    return Math.max(0, Math.ceil(((at - this.origin - this.offsetMs) * this.hz) / 1000 - 1e-9));
  }

  /**
   * Calls `send(n, dueAt)` for every tick due at `now`, oldest first, and returns how many were sent.
   * Ticks more than `maxBehindMs` late are skipped first.
   */
  take(now: number, send: (n: number, dueAt: number) => void): number {
    while (this.next < this.end && this.due(this.next) < now - this.maxBehindMs) {
      this.next++;
      this.skipped++;
    }
    let sent = 0;
    while (this.next < this.end && this.due(this.next) <= now) {
      const n = this.next++;
      send(n, this.due(n));
      sent++;
    }
    return sent;
  }
}

/**
 * Phase offsets spreading `count` game servers evenly over one period (`stagger`), or all at 0: real
 * game servers are not synchronised, and bunching every snapshot at the same instant is a different test.
 */
export function phaseOffsets(count: number, periodMs: number, stagger: boolean): number[] {
  return Array.from({ length: count }, (_, k) => (stagger ? (k * periodMs) / count : 0));
}
