// A token bucket: `rate` messages per second, bursts up to one second's worth. The WebSocket
// endpoint holds one per connection (CANOPY_MAX_MESSAGE_RATE); a frame without a token waits.

export class TokenBucket {
  private readonly rate: number;
  private tokens: number;
  private last: number;

  /** `rate` per second; 0 means unlimited. `now` is in milliseconds (performance.now()). */
  constructor(rate: number, now: number) {
    this.rate = rate;
    this.tokens = rate;
    this.last = now;
  }

  get unlimited(): boolean {
    return this.rate === 0;
  }

  /** Takes one token if there is one. */
  take(now: number): boolean {
    if (this.rate === 0) return true;
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until the next token, 0 if one is there. */
  msUntilToken(now: number): number {
    if (this.rate === 0) return 0;
    this.refill(now);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 1000) / this.rate);
  }

  private refill(now: number): void {
    const elapsed = now - this.last;
    if (elapsed <= 0) return;
    this.last = now;
    this.tokens = Math.min(this.rate, this.tokens + (elapsed * this.rate) / 1000);
  }
}
