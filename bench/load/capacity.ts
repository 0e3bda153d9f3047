// `--find-capacity`: the largest agent count that holds the budget, found by probing — doubling (or
// halving) from a first guess until the verdict flips, then bisecting between the last pass and the
// first failure. The probe is a full load run; this module only decides which counts to try.

export interface CapacityOptions {
  /** First count to try. */
  readonly start: number;
  /** Smallest count worth trying; if it fails, the capacity is 0. */
  readonly min: number;
  /** Largest count to try; if it passes, the capacity is reported as at least this. */
  readonly max: number;
  /** Counts are multiples of this (e.g. sessions × 100, so every game server gets the same share). */
  readonly step: number;
  /** Stop bisecting when the gap between pass and failure is at most this fraction of the pass. */
  readonly resolution: number;
  /** Most probes in all. */
  readonly maxProbes: number;
}

export interface CapacityProbe<T> {
  readonly agents: number;
  readonly ok: boolean;
  readonly detail: T;
}

export interface CapacityResult<T> {
  /** The largest count that passed (0 if none did). */
  readonly capacity: number;
  /** True when `max` itself passed: the real capacity may be higher. */
  readonly atLeast: boolean;
  /** The smallest count that failed, if any. */
  readonly failedAt: number | undefined;
  readonly probes: ReadonlyArray<CapacityProbe<T>>;
}

/** Rounds to a multiple of `step`, at least one step. */
export function roundTo(n: number, step: number): number {
  return Math.max(step, Math.round(n / step) * step);
}

/**
 * Finds the capacity. `probe(agents)` runs one load test and says whether it held the budget;
 * `detail` is kept with each probe for the report. Probes run one at a time.
 */
export async function findCapacity<T>(
  options: CapacityOptions,
  probe: (agents: number) => Promise<{ ok: boolean; detail: T }>,
): Promise<CapacityResult<T>> {
  const { step } = options;
  const min = roundTo(options.min, step);
  const max = Math.max(min, Math.floor(options.max / step) * step);
  const probes: Array<CapacityProbe<T>> = [];
  const clamp = (n: number): number => Math.min(max, Math.max(min, roundTo(n, step)));
  const run = async (agents: number): Promise<boolean> => {
    const { ok, detail } = await probe(agents);
    probes.push({ agents, ok, detail });
    return ok;
  };

  let pass = 0; // largest count known to pass
  let fail = Infinity; // smallest count known to fail
  let n = clamp(options.start);
  // Bracket: double while passing, halve while failing.
  while (probes.length < options.maxProbes) {
    if (await run(n)) {
      pass = n;
      if (n >= max) break;
      n = clamp(n * 2);
    } else {
      fail = n;
      if (n <= min) break;
      n = clamp(n / 2);
    }
    if (pass > 0 && fail < Infinity) break;
  }
  // Bisect.
  while (probes.length < options.maxProbes && fail < Infinity && pass > 0) {
    if (fail - pass <= Math.max(step, pass * options.resolution)) break;
    const mid = roundTo((pass + fail) / 2, step);
    if (mid <= pass || mid >= fail) break;
    if (await run(mid)) pass = mid;
    else fail = mid;
  }
  return { capacity: pass, atLeast: pass >= max, failedAt: fail === Infinity ? undefined : fail, probes };
}
