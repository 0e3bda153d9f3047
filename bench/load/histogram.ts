// Latency bookkeeping of the load generator: HDR histograms (hdr-histogram-js) recording microseconds,
// read back in milliseconds. One per measured quantity; merged across game servers for the report.

import * as hdr from 'hdr-histogram-js';

/** Percentiles of one histogram, in milliseconds. `count` is the number of values recorded. */
export interface LatencySummary {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** Longest value kept exactly: one hour. Longer values are clamped (and counted in `clamped`). */
const HIGHEST_US = 3_600_000_000;

/**
 * A latency histogram with 3 significant digits from 1 µs to one hour. Recording allocates nothing.
 * Negative values (a clock read just before its schedule) record as 0.
 */
export class LatencyHistogram {
  private readonly h: hdr.Histogram;
  /** Values above one hour, recorded as one hour. */
  clamped = 0;

  constructor() {
    this.h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_US, numberOfSignificantValueDigits: 3, autoResize: false });
  }

  /** Records one value in milliseconds (kept to the microsecond). */
  record(ms: number): void {
    let us = Math.round(ms * 1000);
    if (us < 0 || us !== us) us = 0;
    if (us > HIGHEST_US) {
      us = HIGHEST_US;
      this.clamped++;
    }
    this.h.recordValue(us);
  }

  /** Number of values recorded. */
  get count(): number {
    return this.h.totalCount;
  }

  /** The value at `percentile` (0–100), milliseconds; 0 when empty. */
  percentile(percentile: number): number {
    return this.h.totalCount === 0 ? 0 : this.h.getValueAtPercentile(percentile) / 1000;
  }

  /** Adds every value of `other` to this one. */
  add(other: LatencyHistogram): void {
    this.h.add(other.h);
    this.clamped += other.clamped;
  }

  /** Forgets every value (the end of the warm-up). */
  reset(): void {
    this.h.reset();
    this.clamped = 0;
  }

  summary(): LatencySummary {
    const h = this.h;
    if (h.totalCount === 0) return { count: 0, mean: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0 };
    return {
      count: h.totalCount,
      mean: h.mean / 1000,
      p50: h.getValueAtPercentile(50) / 1000,
      p90: h.getValueAtPercentile(90) / 1000,
      p99: h.getValueAtPercentile(99) / 1000,
      p999: h.getValueAtPercentile(99.9) / 1000,
      max: h.maxValue / 1000,
    };
  }

  /** Frees the histogram's memory (hdr-histogram-js keeps WebAssembly ones outside the heap; a no-op for JS ones). */
  destroy(): void {
    this.h.destroy();
  }
}

/** A histogram holding every value of `parts`. */
export function mergeHistograms(parts: readonly LatencyHistogram[]): LatencyHistogram {
  const all = new LatencyHistogram();
  for (const p of parts) all.add(p);
  return all;
}
