// What a session sends down its socket, with slow-reader handling: past a soft cap of unsent bytes
// fixed-mode decisions are merged and held until the socket drains; past a hard cap the reader is
// told goodbye and dropped, so one slow game server never grows the service's memory without bound.

import { encodeDecisions, type DecisionsFields } from '../protocol/index.js';

/** The part of a `ws` WebSocket the outbox uses. */
export interface OutboundSocket {
  readonly bufferedAmount: number;
  readonly readyState: number;
  send(data: Buffer, cb?: (err?: Error) => void): void;
}

export interface OutboxOptions {
  /** Above this many unsent bytes, decisions are merged and held. */
  readonly softBytes: number;
  /** Above this many unsent (or held) bytes, the reader is dropped. */
  readonly hardBytes: number;
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
/** Rough size of one held decision tuple, for the hard cap on held decisions. */
const HELD_ENTRY_BYTES = 32;

type Tuple = readonly unknown[];

interface Held {
  tick: number;
  basedOn: number | undefined;
  actions: Tuple[];
  cancels: Tuple[];
  done: Tuple[];
  errors: Tuple[];
}

/** One socket's outbound side. */
export class Outbox {
  private readonly socket: OutboundSocket;
  private readonly options: OutboxOptions;
  private held: Held | undefined;
  private heldEntries = 0;
  private overflowed = false;
  private wasCongested = false;

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
    const held = (this.held ??= { tick: d.tick, basedOn: d.basedOn, actions: [], cancels: [], done: [], errors: [] });
    held.tick = d.tick;
    if (d.basedOn !== undefined) held.basedOn = d.basedOn;
    // Copy the tuples: the caller may reuse its lists after this returns.
    this.heldEntries += append(held.actions, d.actions) + append(held.cancels, d.cancels) + append(held.done, d.done) + append(held.errors, d.errors);
    this.options.onMerged();
    if (!this.congested) this.flush();
    else this.checkHard();
  }

  /** Sends the held decisions, if any, when the socket has room. */
  flush(): void {
    const held = this.held;
    if (held === undefined || this.congested || this.overflowed) return;
    this.held = undefined;
    this.heldEntries = 0;
    this.send(
      encodeDecisions({
        tick: held.tick,
        basedOn: held.basedOn,
        actions: held.actions as unknown as DecisionsFields['actions'],
        cancels: held.cancels as unknown as DecisionsFields['cancels'],
        done: held.done as unknown as DecisionsFields['done'],
        errors: held.errors as unknown as DecisionsFields['errors'],
      }),
      'decisions',
    );
  }

  private checkHard(): void {
    if (this.overflowed) return;
    const bytes = this.socket.bufferedAmount + this.heldEntries * HELD_ENTRY_BYTES;
    if (bytes > this.options.softBytes) this.wasCongested = true;
    if (bytes > this.options.hardBytes) {
      this.overflowed = true;
      this.held = undefined;
      this.heldEntries = 0;
      this.options.onOverflow();
    }
  }

  /** After each write reaches the kernel: the moment to send held decisions or resume reading. */
  private readonly afterWrite = (): void => {
    if (this.overflowed || this.congested) return;
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

function append(into: Tuple[], from: readonly Tuple[] | undefined): number {
  if (from === undefined) return 0;
  for (let i = 0; i < from.length; i++) into.push(from[i]!.slice());
  return from.length;
}
