// A clock every thread of the process reads alike, for times taken on one thread and compared on another (a tick
// order posted on the main thread, started on a worker). performance.now() counts from each thread's own start, and
// performance.timeOrigin is sampled once per thread against the wall clock, so two threads' readings can disagree by
// whatever the wall clock was adjusted by in between; process.hrtime reads CLOCK_MONOTONIC, one clock for all.

/** Milliseconds on the process-wide monotonic clock (CLOCK_MONOTONIC, from an arbitrary start). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
