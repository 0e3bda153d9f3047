// Reconnect timing: exponential backoff with jitter, kept pure so it can be tested exactly.

/** How the client reconnects after an unexpected close. */
export interface ReconnectOptions {
  /** Reconnect at all (default true). */
  readonly enabled: boolean;
  /** Base delay of the first attempt, in ms (default 250). */
  readonly minDelayMs: number;
  /** Ceiling of the delay, in ms (default 5000; keep it well under the server's grace period). */
  readonly maxDelayMs: number;
  /** Attempts before giving up and emitting `close` (default Infinity). */
  readonly maxAttempts: number;
}

/** The defaults of {@link ReconnectOptions}. */
export const DEFAULT_RECONNECT: ReconnectOptions = Object.freeze({
  enabled: true,
  minDelayMs: 250,
  maxDelayMs: 5000,
  maxAttempts: Infinity,
});

/**
 * Delay before reconnect attempt `attempt` (1-based): the exponential step
 * `min(maxDelayMs, minDelayMs * 2^(attempt-1))`, jittered into its upper half ("equal jitter")
 * so that clients dropped together do not come back together, yet never sooner than half a step.
 * At least `floorMs` (a `goodbye.retryAfterMs`), whatever the jitter.
 */
export function backoffDelay(
  attempt: number,
  options: Pick<ReconnectOptions, 'minDelayMs' | 'maxDelayMs'>,
  floorMs = 0,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const step = Math.min(options.maxDelayMs, options.minDelayMs * 2 ** exponent);
  const delay = step / 2 + random() * (step / 2);
  return Math.max(Math.round(delay), floorMs);
}
