// Running totals of one session's ticks (ticks, decisions, lateness, missed ticks) that a tool samples
// to show rates; counting costs a few additions per tick, nothing per agent.

/** Totals since the session opened; readers compute rates from two samples. */
export class TickStats {
  ticks = 0;
  actions = 0;
  cancels = 0;
  done = 0;
  errors = 0;
  missed = 0;
  /** How late the last fixed-rate tick started, ms (0 in lockstep). */
  lastLateMs = 0;
  /** Duration of the last tick, ms. */
  lastTickMs = 0;

  /** One tick ran: what it decided and how long it took. */
  ticked(d: { actions: unknown[]; cancels: unknown[]; done: unknown[]; errors: unknown[] }, ms: number): void {
    this.ticks++;
    this.actions += d.actions.length;
    this.cancels += d.cancels.length;
    this.done += d.done.length;
    this.errors += d.errors.length;
    this.lastTickMs = ms;
  }

  /** A fixed-rate tick started `lateMs` late after skipping `missed` ticks. */
  scheduled(lateMs: number, missed: number): void {
    this.lastLateMs = lateMs;
    this.missed += missed;
  }
}
