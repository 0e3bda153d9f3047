// A ring of the latest measurements (tick times, lateness) and their percentiles, for the HUD and the figures.

/** Keeps the latest `capacity` samples. */
export class Samples {
  private readonly ring: Float64Array;
  private count = 0;

  constructor(capacity: number) {
    this.ring = new Float64Array(capacity);
  }

  record(value: number): void {
    this.ring[this.count % this.ring.length] = value;
    this.count++;
  }

  /** Forgets everything (the figures' measured window starts). */
  reset(): void {
    this.count = 0;
  }

  /** Samples recorded since the last reset (all of them, not only those kept). */
  get total(): number {
    return this.count;
  }

  /** p50, p99 and max of the kept samples, in the unit recorded; zeros when empty. */
  summary(): { n: number; p50: number; p99: number; max: number } {
    const n = Math.min(this.count, this.ring.length);
    if (n === 0) return { n: 0, p50: 0, p99: 0, max: 0 };
    const sorted = this.ring.slice(0, n).toSorted();
    const at = (q: number): number => sorted[Math.min(n - 1, Math.floor(q * n))]!;
    return { n: this.count, p50: at(0.5), p99: at(0.99), max: sorted[n - 1]! };
  }
}
