// The fixed-rate clock of one session: tick n is due at origin + n/hz and runs at tree time n/hz,
// computed from n each time so no float error accumulates; late ticks are skipped, never stacked.

import { performance } from 'node:perf_hooks';

/** One tick the clock asks to run. */
export interface ClockTick {
  /** Service tick number, from 1. */
  readonly n: number;
  /** Tree time, seconds: exactly n / hz. */
  readonly time: number;
  /** Seconds since the previous tick that ran (more than one period after skipped ticks). */
  readonly dt: number;
  /** How late the tick starts against its due time, milliseconds. */
  readonly lateMs: number;
  /** Ticks skipped just before this one (late by more than a period, or the previous tick still running). */
  readonly missed: number;
}

export interface ClockHandlers {
  /** Runs one tick. The clock never starts the next tick before this settles; it must not reject. */
  tick(tick: ClockTick): Promise<void>;
  /** Called when the clock wakes without a tick to run: heartbeats. */
  idle(): void;
  /** When `idle` next wants to run (a `now()` timestamp); the clock sleeps at most `maxSleepMs` anyway. */
  idleAt?(): number;
}

/** The golden ratio's fraction: phases k·φ mod 1 put each new clock in the largest gap the others left. */
const GOLDEN = (Math.sqrt(5) - 1) / 2;
/** Phases spread over at most this much (ms): a slow clock's first tick waits no longer for it. */
const MAX_PHASE_MS = 50;
/** Fixed clocks given a phase so far (this process). */
let phased = 0;

/**
 * The phase of the next fixed clock, ms: 0 for the first, then k·φ mod 1 of a period (at most MAX_PHASE_MS), so
 * sessions that start together tick at different moments instead of all at once, where the ones sharing a worker
 * waited behind each other's ticks every period (docs/capacity.md, *Round thirty-one*).
 */
export function nextPhaseMs(hz: number): number {
  return ((phased++ * GOLDEN) % 1) * Math.min(1000 / hz, MAX_PHASE_MS);
}

/**
 * A drift-free schedule. Ticks never overlap: a tick that is due while the previous one still runs
 * is skipped and counted in the next tick's `missed`. Stopping and starting again (a session whose
 * socket dropped) continues the numbering and tree time where they were: paused time does not count.
 */
export class FixedClock {
  readonly hz: number;
  private readonly periodMs: number;
  private readonly maxSleepMs: number;
  private readonly handlers: ClockHandlers;
  private readonly now: () => number;
  /** How much later than one period after start() each tick is due (ms). */
  private readonly phaseMs: number;
  private origin = 0;
  /** Last tick run (0 before the first). */
  private last = 0;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;

  /** @param options.phaseMs how much later than a period after start() the first tick is due, and every tick after it (ms) */
  constructor(hz: number, handlers: ClockHandlers, options: { maxSleepMs?: number; now?: () => number; phaseMs?: number } = {}) {
    this.hz = hz;
    this.periodMs = 1000 / hz;
    this.handlers = handlers;
    this.maxSleepMs = options.maxSleepMs ?? 1000;
    this.now = options.now ?? (() => performance.now());
    this.phaseMs = options.phaseMs ?? 0;
  }

  /** The last tick number run (0 before the first). */
  get tick(): number {
    return this.last;
  }

  /** True while started. */
  get started(): boolean {
    return this.running;
  }

  /** A session restored elsewhere (durable sessions): numbering and tree time continue after tick `n`. Before start(). */
  continueFrom(n: number): void {
    if (!this.running) this.last = n;
  }

  /** Starts (or restarts) ticking: the next tick is due one period and the clock's phase from now. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.origin = this.now() - this.last * this.periodMs + this.phaseMs;
    if (this.inFlight === undefined) this.schedule();
  }

  /** Stops scheduling ticks; resolves once the tick in flight (if any) has finished. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    await this.inFlight;
  }

  private due(n: number): number {
    // Multiply from n every time rather than adding periods: no accumulated rounding.
    return this.origin + (n * 1000) / this.hz;
  }

  private schedule(): void {
    if (!this.running || this.timer !== undefined) return;
    const now = this.now();
    const idleAt = this.handlers.idleAt?.() ?? Infinity;
    const wait = Math.min(this.due(this.last + 1), idleAt, now + this.maxSleepMs) - now;
    this.timer = setTimeout(this.wake, Math.max(0, wait));
  }

  private readonly wake = (): void => {
    this.timer = undefined;
    if (!this.running) return;
    const now = this.now();
    let n = this.last + 1;
    if (now < this.due(n)) {
      // Nothing due yet: a heartbeat wake-up (or setTimeout firing a fraction of a millisecond early).
      this.handlers.idle();
      this.schedule();
      return;
    }
    // The latest tick already due; everything between the last tick run and it is skipped.
    let latest = n + Math.max(0, Math.floor((now - this.due(n)) / this.periodMs));
    while (this.due(latest + 1) <= now) latest++;
    while (latest > n && this.due(latest) > now) latest--;
    const missed = latest - n;
    n = latest;
    const tick: ClockTick = { n, time: n / this.hz, dt: (n - this.last) / this.hz, lateMs: now - this.due(n), missed };
    this.last = n;
    this.inFlight = this.handlers.tick(tick).finally(() => {
      this.inFlight = undefined;
      this.schedule();
    });
  };
}
