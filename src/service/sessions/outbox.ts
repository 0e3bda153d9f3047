// What a session sends down its socket, with slow-reader handling: past a soft cap of unsent bytes
// fixed-mode decisions are merged and held (as encoded bytes, so their cost is exact) until the
// socket drains; past a hard cap, per socket or service-wide, the reader is told goodbye and dropped,
// so one slow game server never grows the service's memory without bound.

import { HeldDecisions, encodeDecisions, type DecisionsFields } from '../../protocol/index.js';

/** The part of a `ws` WebSocket the outbox uses. */
export interface OutboundSocket {
  readonly bufferedAmount: number;
  readonly readyState: number;
  send(data: Buffer, cb?: (err?: Error) => void): void;
}

/**
 * Bytes unsent or held across every socket of the service, against one cap: a socket that pushes
 * the total over it while it is itself behind is dropped, so many slow readers together stay bounded.
 */
export class OutboxBudget {
  /** Service-wide cap in bytes (0: none). */
  readonly capBytes: number;
  /** Bytes unsent or held now, as last reported by each outbox. */
  used = 0;
  /** Highest `used` seen. */
  peak = 0;

  constructor(capBytes: number) {
    this.capBytes = capBytes;
  }

  /** Replaces one outbox's share `before` by `after`. */
  update(before: number, after: number): void {
    this.used += after - before;
    if (this.used > this.peak) this.peak = this.used;
  }

  get over(): boolean {
    return this.capBytes > 0 && this.used > this.capBytes;
  }
}

export interface OutboxOptions {
  /** Above this many unsent bytes, decisions are merged and held. */
  readonly softBytes: number;
  /** Above this many unsent plus held bytes, the reader is dropped. */
  readonly hardBytes: number;
  /** The service-wide budget this outbox counts against, if any. */
  readonly budget?: OutboxBudget | undefined;
  /** Every frame handed to the socket. */
  onSent(bytes: number, kind: 'decisions' | 'other'): void;
  /** Decisions were held back and merged (a slow reader). */
  onMerged(): void;
  /** The hard cap was passed: say goodbye and close. Called once. */
  onOverflow(): void;
  /** The socket drained below the soft cap (lockstep sessions resume reading). */
  onDrained(): void;
}

const OPEN = 1;

/** One socket's outbound side. */
export class Outbox {
  private readonly socket: OutboundSocket;
  private readonly options: OutboxOptions;
  private held: HeldDecisions | undefined;
  private overflowed = false;
  private wasCongested = false;
  /** This outbox's share of the service-wide budget, as last reported. */
  private reported = 0;

  constructor(socket: OutboundSocket, options: OutboxOptions) {
    this.socket = socket;
    this.options = options;
  }

  /** True while more than the soft cap of bytes waits to be sent. */
  get congested(): boolean {
    return this.socket.bufferedAmount > this.options.softBytes;
  }

  /** True while merged decisions wait for the socket to drain. */
  get holding(): boolean {
    return this.held !== undefined;
  }

  /** Bytes unsent on the socket plus bytes of held decisions. */
  get bytes(): number {
    return this.socket.bufferedAmount + (this.held?.bytes ?? 0);
  }

  /** Sends a reply or notice (welcome, spawned, error, pong, goodbye...) now, in order. */
  send(frame: Buffer, kind: 'decisions' | 'other' = 'other'): boolean {
    if (this.socket.readyState !== OPEN || this.overflowed) return false;
    this.socket.send(frame, this.afterWrite);
    this.options.onSent(frame.length, kind);
    this.checkHard();
    return true;
  }

  /**
   * Sends fixed-mode decisions, or, while the socket is congested, merges them into the held
   * decisions (lists concatenated in order, latest `tick` and `basedOn` kept) to send once it drains.
   */
  decisions(d: DecisionsFields): void {
    if (this.overflowed || this.socket.readyState !== OPEN) return;
    if (this.held === undefined && !this.congested) {
      this.send(encodeDecisions(d), 'decisions');
      return;
    }
    const held = (this.held ??= new HeldDecisions());
    if (!held.add(d, this.room())) {
      // Holding this tick would pass a cap: the reader is dropped before the memory is spent.
      this.overflow();
      return;
    }
    this.options.onMerged();
    if (!this.congested) this.flush();
    else this.checkHard();
  }

  /** Sends the held decisions, if any, when the socket has room. */
  flush(): void {
    const held = this.held;
    if (held === undefined || this.congested || this.overflowed) return;
    this.held = undefined;
    this.send(held.frame(), 'decisions');
  }

  /** The socket closed: its bytes no longer count against the service-wide budget. */
  release(): void {
    this.held = undefined;
    this.options.budget?.update(this.reported, 0);
    this.reported = 0;
  }

  private checkHard(): void {
    if (this.overflowed) return;
    const bytes = this.bytes;
    const budget = this.options.budget;
    if (budget !== undefined) {
      budget.update(this.reported, bytes);
      this.reported = bytes;
    }
    if (bytes > this.options.softBytes) this.wasCongested = true;
    // Over the service-wide cap, the sockets that are behind themselves are the ones dropped.
    if (bytes > this.options.hardBytes || (budget?.over === true && bytes > this.options.softBytes)) this.overflow();
  }

  /** Bytes this outbox may still hold before passing its own cap or the service-wide one. */
  private room(): number {
    const bytes = this.bytes;
    let room = this.options.hardBytes - bytes;
    const budget = this.options.budget;
    if (budget !== undefined && budget.capBytes > 0) room = Math.min(room, budget.capBytes - (budget.used - this.reported + bytes));
    return room;
  }

  private overflow(): void {
    this.overflowed = true;
    this.held = undefined;
    const budget = this.options.budget;
    budget?.update(this.reported, this.socket.bufferedAmount);
    this.reported = this.socket.bufferedAmount;
    this.options.onOverflow();
  }

  /** After each write reaches the kernel: the moment to send held decisions or resume reading. */
  private readonly afterWrite = (): void => {
    if (this.overflowed) return;
    const budget = this.options.budget;
    if (budget !== undefined) {
      const bytes = this.bytes;
      budget.update(this.reported, bytes);
      this.reported = bytes;
    }
    if (this.congested) return;
    if (this.held !== undefined) this.flush();
    if (this.wasCongested) {
      this.wasCongested = false;
      this.options.onDrained();
    }
  };

  /** Sends a last frame even past the hard cap (the goodbye), then nothing more goes out. */
  last(frame: Buffer): void {
    if (this.socket.readyState !== OPEN) return;
    this.overflowed = true;
    this.held = undefined;
    this.socket.send(frame);
    this.options.onSent(frame.length, 'other');
  }
}
