// The TypeScript client of the Canopy protocol: one WebSocket, one session, requests correlated
// by id, lockstep ticks as promises, and reconnect-with-resume when the connection drops.

import { WebSocket, type RawData } from 'ws';
import {
  ClientErrorCode,
  ErrorCode,
  PROTOCOL_VERSION,
  decode,
  encode,
  encodeRows,
  joinMap,
  parseServerMessage,
  type ActionDecision,
  type ActionResult,
  type AgentError,
  type AgentId,
  type BlackboardEntry,
  type CancelDecision,
  type DecisionsMessage,
  type TreesMessage,
  type DoneDecision,
  type EntryError,
  type Mode,
  type SnapshotMessage,
  type SpawnAgent,
  type LodEntry,
  type WelcomeMessage,
} from '../protocol/index.js';
import { DEFAULT_RECONNECT, backoffDelay, type ReconnectOptions } from './backoff.js';
import { Emitter } from './emitter.js';
import { FrameBuffers } from './frame-buffers.js';
import { CanopyError } from './errors.js';
import { RowEncoder } from './row-encoder.js';
import { RowWriter } from './rows.js';

/** Options of {@link CanopyClient.connect}. */
export interface ConnectOptions {
  /** Sent as `Authorization: Bearer <apiKey>` on the WebSocket upgrade. */
  readonly apiKey?: string;
  /** Clock mode of the session (default `fixed`). */
  readonly mode?: Mode;
  /** Ticks per second in fixed mode (default: the service's). */
  readonly hz?: number;
  /** Observation field names, for positional rows (see {@link CanopyClient.rows}). */
  readonly fields?: readonly string[];
  /** Take over a dropped session: a `resumeToken` from an earlier client. */
  readonly resume?: string;
  /** Reconnect after an unexpected close (default: enabled, 250 ms → 5 s). `false` disables. */
  readonly reconnect?: Partial<ReconnectOptions> | boolean;
  /** How long a request (spawn, despawn, ping, lockstep) may wait for its answer (default 10 s). */
  readonly requestTimeoutMs?: number;
  /** How long opening the socket and the hello/welcome handshake may take (default 10 s). */
  readonly connectTimeoutMs?: number;
}

/** What `spawn` answers: the ids created and an error for each agent that was not. */
export interface SpawnResult {
  readonly ids: readonly AgentId[];
  readonly errors: readonly EntryError[];
}

/** What `despawn` answers: the ids removed and an error for each id that was not. */
export interface DespawnResult {
  readonly ids: readonly AgentId[];
  readonly errors: readonly EntryError[];
}

/** A `decisions` message with every list present (empty lists are shared, frozen arrays). */
export interface Decisions {
  /** Service tick (fixed mode) or the snapshot's tick (lockstep mode). */
  readonly tick: number;
  /** The latest snapshot tick the service had applied; undefined before the first snapshot. */
  readonly basedOn: number | undefined;
  /** New actions to start: `[id, seq, action, args]`. */
  readonly actions: readonly ActionDecision[];
  /** Running actions to stop: `[id, seq]`. */
  readonly cancels: readonly CancelDecision[];
  /** Agents whose root finished: `[id, status]`. */
  readonly done: readonly DoneDecision[];
  /** Agents stopped by an error: `[id, code, message]`. */
  readonly errors: readonly AgentError[];
}

/** A snapshot to send; `agents` may be a {@link RowWriter} or a {@link RowEncoder}. */
export interface SnapshotInput {
  readonly tick: number;
  readonly time?: number;
  readonly world?: SnapshotMessage['world'];
  readonly agents?: SnapshotMessage['agents'] | RowWriter | RowEncoder;
  readonly results?: readonly ActionResult[];
  readonly full?: boolean;
}

/** The events of a {@link CanopyClient} and their payloads. */
export interface ClientEvents {
  /** Every `decisions` message, including those that also resolve a {@link CanopyClient.lockstep}. */
  decisions: Decisions;
  /**
   * A server `error` that settles no pending request (including every refused entry of a `bb`,
   * `result` or `snapshot`: `error.entry` is true), or a malformed server frame.
   */
  error: CanopyError;
  /**
   * The server announced it is closing the socket. With `retryAfterMs` the client reconnects no
   * sooner than that; without it the server does not want the connection back, and the client
   * closes for good.
   */
  goodbye: { readonly reason: string; readonly retryAfterMs: number | undefined };
  /** The socket dropped; a reconnect attempt follows in `retryInMs`. */
  disconnect: { readonly code: number; readonly reason: string; readonly attempt: number; readonly retryInMs: number };
  /** A new connection is up. `resumed` is false when the server started a new session instead. */
  reconnect: { readonly session: string; readonly resumed: boolean; readonly attempts: number };
  /** The client is closed for good: `bye()`, `close()`, a fatal error, or reconnecting gave up. */
  close: { readonly code: number; readonly reason: string; readonly error: CanopyError | undefined };
  /** A tree was reloaded on the service (docs/reload.md): its new version and what that did to this session's agents. */
  trees: Omit<TreesMessage, 't'>;
}

type ReplyKind = 'spawned' | 'despawned' | 'pong' | 'decisions';

interface Pending {
  readonly id: number;
  readonly kind: ReplyKind;
  readonly resolve: (value: never) => void;
  readonly reject: (error: CanopyError) => void;
  readonly timer: ReturnType<typeof setTimeout>;
  /** The snapshot tick a lockstep request waits for. */
  readonly tick: number;
  readonly sentAt: number;
}

const EMPTY: readonly never[] = Object.freeze([]);
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_REQUEST_ID = 0x7fffffff;

/**
 * A connection to a Canopy service: one session, its agents and its clock.
 *
 * Guarantees:
 * - A request (`spawn`, `despawn`, `ping`, `lockstep`) settles exactly once: with its reply, with
 *   the server's `error` for it (a {@link CanopyError} with the server's code), with `E_TIMEOUT`,
 *   or with `E_CLOSED` if the socket closes first (replies are never replayed after a reconnect).
 * - Fire-and-forget sends (`setBlackboard`, `snapshot`, `results`) return false and send nothing
 *   while disconnected; nothing is queued, since stale state is worse than none.
 * - After an unexpected close the client reconnects with backoff and resumes the session
 *   (`hello.resume`); it emits `disconnect`, then `reconnect` or, giving up, `close`. After a
 *   `goodbye` it waits at least `retryAfterMs`, and does not reconnect when that is absent.
 * - Frames from the server are decoded with the protocol codec; unknown message types and
 *   fields are ignored, so newer servers stay compatible.
 */
export class CanopyClient extends Emitter<ClientEvents> {
  private socket: WebSocket | undefined;
  private current!: WelcomeMessage;
  private readonly pending = new Map<number, Pending>();
  private readonly lockstepQueue: Pending[] = [];
  private nextId = 1;
  private closedForGood = false;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  /** The `goodbye` of the current connection, if the server sent one. */
  private farewell: { readonly reason: string; readonly retryAfterMs: number | undefined } | undefined;
  private readonly reconnectOptions: ReconnectOptions;
  private readonly requestTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  /** The service's WebSocket URLs: any instance of one deployment (or one load-balanced URL). */
  private readonly urls: readonly string[];
  private urlIndex = 0;
  /**
   * Lockstep: the frames (bb, result, snapshot) sent since the last decisions received. After a resume they are
   * sent again as far as the session has not applied them (welcome.tick), so that a session restored on another
   * instance, or handed over, sees every input exactly once.
   */
  private unacked: Array<{ readonly bytes: Uint8Array; readonly tick: number | undefined }> = [];
  /** The memory of large snapshot frames, used again once written out and (lockstep) answered. */
  private readonly frames = new FrameBuffers();
  /** Between an unexpected close and the next welcome (or giving up). */
  private reconnecting = false;

  private constructor(urls: readonly string[], private readonly options: ConnectOptions) {
    super();
    if (urls.length === 0) throw new RangeError('connect: expected at least one URL');
    this.urls = urls;
    const reconnect = options.reconnect;
    this.reconnectOptions =
      reconnect === false
        ? { ...DEFAULT_RECONNECT, enabled: false }
        : reconnect === true || reconnect === undefined
          ? DEFAULT_RECONNECT
          : { ...DEFAULT_RECONNECT, ...reconnect };
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Opens a session: connects, sends `hello` and resolves once `welcome` arrives. Rejects with a
   * {@link CanopyError}: the server's code (`E_VERSION`, `E_BAD_FIELD`, ...) if it refused the
   * hello, `E_UNAUTHORIZED` on a 401, `E_CONNECT` if the socket could not open, `E_TIMEOUT`.
   * The first connection is not retried; reconnecting applies once a session is open.
   */
  static async connect(url: string | readonly string[], options: ConnectOptions = {}): Promise<CanopyClient> {
    const client = new CanopyClient(typeof url === 'string' ? [url] : url, options);
    await handshake(client.url, options, options.resume, client.connectTimeoutMs, (socket, welcome) => {
      client.current = welcome;
      client.attach(socket);
    });
    return client;
  }

  /** The URL of the current (or next) connection; with several URLs, each reconnect attempt tries the next one. */
  get url(): string {
    return this.urls[this.urlIndex]!;
  }

  /** The latest `welcome` (replaced on each reconnect). */
  get welcome(): WelcomeMessage {
    return this.current;
  }

  /** The session id. */
  get session(): string {
    return this.current.session;
  }

  /** The token that resumes this session after a dropped connection (`ConnectOptions.resume`). */
  get resumeToken(): string {
    return this.current.resume;
  }

  /** The session's clock mode. */
  get mode(): Mode {
    return this.current.mode;
  }

  /** True while a session socket is open (false while reconnecting and after close). */
  get connected(): boolean {
    return this.socket !== undefined && this.socket.readyState === WebSocket.OPEN;
  }

  /** Bytes queued on the socket but not yet sent: a sign that the link is slower than the game. */
  get bufferedAmount(): number {
    return this.socket?.bufferedAmount ?? 0;
  }

  /**
   * A {@link RowWriter} for the fields declared in `hello`. Throws if no fields were declared.
   */
  rows(): RowWriter {
    const fields = this.options.fields;
    if (fields === undefined || fields.length === 0) {
      throw new RangeError('rows() needs `fields` in the connect options');
    }
    return new RowWriter(fields);
  }

  /**
   * A {@link RowEncoder} for the fields declared in `hello`: rows written straight into bytes, for large snapshots.
   * Throws if no fields were declared.
   */
  rowEncoder(): RowEncoder {
    const fields = this.options.fields;
    if (fields === undefined || fields.length === 0) {
      throw new RangeError('rowEncoder() needs `fields` in the connect options');
    }
    return new RowEncoder(fields);
  }

  /**
   * Creates agents. Resolves with the ids created and an error for each agent that was not
   * (unknown tree, duplicate id, bad field...): each agent succeeds or fails alone.
   */
  spawn(agents: readonly SpawnAgent[]): Promise<SpawnResult> {
    return this.request<SpawnResult>('spawned', (id) => ({ t: 'spawn', id, agents }));
  }

  /** Removes agents; resolves with the ids removed and an error for each id that was not. */
  despawn(ids: readonly AgentId[]): Promise<DespawnResult> {
    return this.request<DespawnResult>('despawned', (id) => ({ t: 'despawn', id, ids }));
  }

  /** Measures the round trip: resolves with the milliseconds between `ping` and `pong`. */
  ping(): Promise<number> {
    return this.request<number>('pong', (id) => ({ t: 'ping', id, n: id }));
  }

  /**
   * Writes blackboard values: `[id, { key: value }]` entries. No reply; problems arrive as
   * `error` events. Returns false (and sends nothing) while disconnected.
   */
  setBlackboard(entries: readonly BlackboardEntry[]): boolean {
    return this.send({ t: 'bb', set: entries });
  }

  /**
   * Sends the game's state at one of its ticks. In fixed mode the service applies it before its
   * next tick. Returns false (and sends nothing) while disconnected. Encodes synchronously: the
   * caller may reuse every array it passed (e.g. a {@link RowWriter}) once this returns.
   */
  snapshot(snapshot: SnapshotInput): boolean {
    return this.send(snapshotMessage(snapshot, undefined));
  }

  /**
   * Level of detail (a Canopy addition): new tick intervals `[id, every]` — the agent is ticked every
   * `every` session ticks from the next tick on (1: every tick). No reply; problems arrive as `error`
   * events. Returns false (and sends nothing) while disconnected.
   */
  lod(entries: readonly LodEntry[]): boolean {
    return this.send({ t: 'lod', agents: entries });
  }

  /** Reports action outcomes: `[id, seq, status]`. Returns false while disconnected. */
  results(list: readonly ActionResult[]): boolean {
    return this.send({ t: 'result', results: list });
  }

  /**
   * Lockstep mode: sends a snapshot and resolves with the `decisions` of that tick (the one
   * whose `tick` equals `snapshot.tick`). Rejects with the server's error if the snapshot is
   * refused as a whole, and with `E_CLOSED`/`E_TIMEOUT` as any request. Refused rows or results
   * do not reject it: they arrive as `error` events (`entry: true`). The decisions are also
   * emitted as a `decisions` event.
   */
  lockstep(snapshot: SnapshotInput): Promise<Decisions> {
    if (this.current.mode !== 'lockstep') {
      return Promise.reject(new RangeError('lockstep() needs a session opened with mode "lockstep"'));
    }
    return this.request<Decisions>('decisions', (id) => snapshotMessage(snapshot, id), snapshot.tick);
  }

  /**
   * Ends the session: sends `bye` (the server frees the agents), closes the socket and resolves
   * once it is closed. No reconnect follows. Safe to call more than once.
   */
  async bye(): Promise<void> {
    if (this.connected) this.send({ t: 'bye' });
    await this.shutdown(1000, 'bye');
  }

  /**
   * Closes the socket without `bye`: the server keeps the session for its grace period, so a
   * new client can take it over with {@link resumeToken}. No reconnect follows.
   */
  async close(): Promise<void> {
    await this.shutdown(1000, 'client closed');
  }

  // -------------------------------------------------------------------------------------------

  private request<T>(kind: ReplyKind, build: (id: number) => object, tick = 0): Promise<T> {
    // A lockstep tick asked for while the client reconnects waits for the resume (the game sees a delay). So does
    // one asked for while the socket is closing (the peer's end or close frame arrived, 'close' has not yet): the
    // close that follows decides — it keeps the tick for the resume, or fails it if no reconnect follows.
    const closing = this.socket !== undefined && this.socket.readyState === WebSocket.CLOSING && this.reconnectOptions.enabled && !this.closedForGood;
    const waitForResume = !this.connected && (this.reconnecting || closing) && kind === 'decisions';
    if (!this.connected && !waitForResume) {
      return Promise.reject(new CanopyError(ClientErrorCode.E_CLOSED, 'not connected'));
    }
    const id = this.nextId;
    this.nextId = id >= MAX_REQUEST_ID ? 1 : id + 1;
    // Built before anything is registered: a message that cannot be built (a RowEncoder's misfit row) rejects the
    // call and leaves no request waiting for a reply that will never come.
    let msg: object;
    try {
      msg = build(id);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.settle(id)?.reject(new CanopyError(ClientErrorCode.E_TIMEOUT, `no ${kind} within ${this.requestTimeoutMs} ms`, { re: id }));
      }, this.requestTimeoutMs);
      const entry: Pending = { id, kind, resolve: resolve as (value: never) => void, reject, timer, tick, sentAt: performance.now() };
      this.pending.set(id, entry);
      if (kind === 'decisions') this.lockstepQueue.push(entry);
      if (waitForResume) this.keep(this.encodeMessage(msg), tick);
      else this.send(msg);
    });
  }

  /** Removes request `id` from the books and returns it (undefined if it is no longer pending). */
  private settle(id: number): Pending | undefined {
    const entry = this.pending.get(id);
    if (entry === undefined) return undefined;
    this.pending.delete(id);
    clearTimeout(entry.timer);
    if (entry.kind === 'decisions') {
      const i = this.lockstepQueue.indexOf(entry);
      if (i >= 0) this.lockstepQueue.splice(i, 1);
    }
    return entry;
  }

  private send(msg: object): boolean {
    const socket = this.socket;
    if (socket === undefined || socket.readyState !== WebSocket.OPEN) return false;
    const bytes = this.encodeMessage(msg);
    const t = (msg as { t?: string }).t;
    // Kept before it is written: a pooled frame is never without a holder until the resend list lets it go.
    if (this.current.mode === 'lockstep' && (t === 'snapshot' || t === 'bb' || t === 'result')) {
      this.keep(bytes, t === 'snapshot' ? (msg as { tick: number }).tick : undefined);
    }
    this.write(socket, bytes);
    return true;
  }

  /** A message's bytes: a snapshot's as SnapshotFrame writes them (a large one in pooled memory), any other's by the codec. */
  private encodeMessage(msg: object): Buffer {
    return msg instanceof SnapshotFrame ? msg.encode(this.frames.take) : encode(msg);
  }

  /** Sends a frame; a pooled one is held until ws has written it out. */
  private write(socket: WebSocket, bytes: Uint8Array): void {
    if (!this.frames.held(bytes)) {
      socket.send(bytes);
      return;
    }
    this.frames.hold(bytes);
    socket.send(bytes, () => this.frames.release(bytes));
  }

  /** Lockstep: keeps a frame sent (or to send) for a resume, until its tick is answered (letGo). */
  private keep(bytes: Uint8Array, tick: number | undefined): void {
    this.frames.hold(bytes);
    this.unacked.push({ bytes, tick });
  }

  /** Frames no longer kept for a resume. */
  private letGo(frames: ReadonlyArray<{ readonly bytes: Uint8Array }>): void {
    for (const f of frames) this.frames.release(f.bytes);
  }

  /**
   * A lockstep session resumed: sends again what it has not applied. Snapshots up to `welcome.tick` (and what
   * came before them) were applied; of those, only the snapshots still awaiting decisions go again (the service
   * answers them with the decisions it already made). Everything after them goes again as it was.
   */
  private resendAfterResume(socket: WebSocket, ranUpTo: number | undefined): void {
    const frames = this.unacked;
    let applied = -1;
    if (ranUpTo !== undefined) for (let i = 0; i < frames.length; i++) if (frames[i]!.tick !== undefined && frames[i]!.tick! <= ranUpTo) applied = i;
    const awaited = new Set(this.lockstepQueue.map((p) => p.tick));
    const again: typeof frames = [];
    frames.forEach((f, i) => {
      if (i > applied || (f.tick !== undefined && awaited.has(f.tick))) again.push(f);
      else this.frames.release(f.bytes);
    });
    this.unacked = again;
    for (const f of again) this.write(socket, f.bytes);
  }

  private attach(socket: WebSocket): void {
    this.socket = socket;
    socket.on('message', (data, isBinary) => {
      if (this.socket === socket) this.onFrame(data, isBinary);
    });
    socket.on('close', (code, reason) => {
      if (this.socket === socket) this.onClose(code, reason.toString());
    });
    // The handshake's 'error' listener stays attached, so a socket error is never thrown;
    // 'close' always follows it in ws.
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    let msg: unknown;
    try {
      if (!isBinary) throw new Error('text frame');
      msg = decode(toBytes(data));
    } catch (error) {
      this.emit('error', new CanopyError(ErrorCode.E_PROTOCOL, `unreadable frame from the server: ${(error as Error).message}`));
      return;
    }
    const m = parseServerMessage(msg);
    if (m === null) return; // not a map, or a message type from a newer server
    const re = 're' in m ? m.re : undefined;
    switch (m.t) {
      case 'decisions':
        this.onDecisions(decisionsOf(m));
        return;
      case 'spawned':
      case 'despawned': {
        const entry = re === undefined ? undefined : this.pending.get(re);
        if (entry === undefined || entry.kind !== m.t) return;
        this.settle(re!);
        const result: SpawnResult = { ids: m.ids, errors: m.errors ?? EMPTY };
        (entry.resolve as (value: SpawnResult) => void)(result);
        return;
      }
      case 'pong': {
        const key = re ?? m.n;
        const entry = key === undefined ? undefined : this.pending.get(key);
        if (entry?.kind !== 'pong') return;
        this.settle(key!);
        (entry.resolve as (value: number) => void)(performance.now() - entry.sentAt);
        return;
      }
      case 'error': {
        const entry = m.entry === true;
        const error = new CanopyError(m.code, m.message, { re, entry, agent: m.agent });
        // One refused entry does not fail the request: the rest was applied (a lockstep
        // snapshot's decisions still come). Only an error about the whole message settles it.
        const pending = re === undefined || entry ? undefined : this.settle(re);
        if (pending !== undefined) pending.reject(error);
        else this.emit('error', error);
        return;
      }
      case 'goodbye': {
        this.farewell = { reason: m.reason, retryAfterMs: m.retryAfterMs };
        this.emit('goodbye', this.farewell);
        return;
      }
      case 'trees': {
        const { t: _t, ...fields } = m;
        this.emit('trees', fields);
        return;
      }
      default:
        return; // welcome outside a handshake, or a message type from a newer server
    }
  }

  private onDecisions(decisions: Decisions): void {
    if (this.unacked.length > 0) {
      let last = -1;
      for (let i = 0; i < this.unacked.length; i++) if (this.unacked[i]!.tick === decisions.tick) last = i;
      if (last >= 0) this.letGo(this.unacked.splice(0, last + 1));
    }
    // Lockstep replies come in snapshot order, so the match is almost always the first entry.
    for (const entry of this.lockstepQueue) {
      if (entry.tick === decisions.tick) {
        this.settle(entry.id);
        (entry.resolve as (value: Decisions) => void)(decisions);
        break;
      }
    }
    this.emit('decisions', decisions);
  }

  private onClose(code: number, reason: string): void {
    this.socket = undefined;
    const farewell = this.farewell;
    this.farewell = undefined;
    const message = `connection closed (${code}${reason === '' ? '' : ` ${reason}`})`;
    const willReconnect = !this.closedForGood && this.reconnectOptions.enabled && (farewell === undefined || farewell.retryAfterMs !== undefined);
    // Lockstep ticks in flight wait for the resume: their snapshots go again and their decisions come from there.
    this.reconnecting = willReconnect;
    this.failPending(message, willReconnect && this.current.mode === 'lockstep');
    if (this.closedForGood) return;
    if (!this.reconnectOptions.enabled) {
      this.finish(code, reason, undefined);
      return;
    }
    if (farewell !== undefined && farewell.retryAfterMs === undefined) {
      // A goodbye without retryAfterMs means "do not come back" (session taken over by another
      // connection, abuse): reconnecting would only fight the server.
      this.finish(code, farewell.reason, new CanopyError(ClientErrorCode.E_CLOSED, `the service said goodbye: ${farewell.reason}`));
      return;
    }
    this.scheduleReconnect(1, code, reason, this.current.resume, farewell?.retryAfterMs ?? 0);
  }

  private failPending(message: string, keepLockstep = false): void {
    // Deleting the entry being visited is safe while iterating a Map.
    for (const [id, entry] of this.pending) {
      if (keepLockstep && entry.kind === 'decisions') continue;
      this.settle(id)?.reject(new CanopyError(ClientErrorCode.E_CLOSED, message, { re: id }));
    }
    if (!keepLockstep) {
      this.letGo(this.unacked);
      this.unacked = [];
    }
  }

  private scheduleReconnect(attempt: number, code: number, reason: string, resume: string | undefined, floorMs = 0): void {
    if (attempt > this.reconnectOptions.maxAttempts) {
      this.finish(code, reason, new CanopyError(ClientErrorCode.E_CLOSED, `gave up reconnecting after ${attempt - 1} attempts`));
      return;
    }
    const delay = backoffDelay(attempt, this.reconnectOptions, floorMs);
    // Several URLs: each attempt tries the next instance (the one that dropped us may be gone or draining).
    if (this.urls.length > 1) this.urlIndex = (this.urlIndex + 1) % this.urls.length;
    this.emit('disconnect', { code, reason, attempt, retryInMs: delay });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.reconnect(attempt, resume);
    }, delay);
  }

  private async reconnect(attempt: number, resume: string | undefined): Promise<void> {
    const previous = this.current.session;
    try {
      await handshake(this.url, this.options, resume, this.connectTimeoutMs, (socket, welcome) => {
        // Runs synchronously on the welcome frame, so no frame that follows it can be missed.
        if (this.closedForGood) {
          socket.terminate();
          return;
        }
        this.current = welcome;
        this.reconnecting = false;
        this.attach(socket);
        const resumed = welcome.session === previous;
        if (resumed && welcome.mode === 'lockstep') this.resendAfterResume(socket, welcome.tick);
        else if (!resumed) this.failPending('the session could not be resumed: a new one began');
        this.emit('reconnect', { session: welcome.session, resumed, attempts: attempt });
      });
    } catch (error) {
      if (this.closedForGood) return;
      const err = error instanceof CanopyError ? error : new CanopyError(ClientErrorCode.E_CONNECT, String(error), { cause: error });
      if (err.code === ErrorCode.E_VERSION || err.code === ClientErrorCode.E_UNAUTHORIZED) {
        this.finish(1008, err.message, err);
        return;
      }
      // The server refused the hello itself (an expired resume token...): start a fresh session next.
      const refused = Object.hasOwn(ErrorCode, err.code);
      this.scheduleReconnect(attempt + 1, 1006, err.message, refused ? undefined : resume);
    }
  }

  private finish(code: number, reason: string, error: CanopyError | undefined): void {
    if (this.closedForGood) return;
    this.closedForGood = true;
    this.reconnecting = false;
    this.failPending(`the client closed (${reason})`);
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.emit('close', { code, reason, error });
  }

  private async shutdown(code: number, reason: string): Promise<void> {
    const socket = this.socket;
    this.finish(code, reason, undefined);
    if (socket === undefined || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.close(code, reason);
    await closed;
  }
}

/**
 * Opens a socket, sends hello and waits for welcome, then calls `onWelcome` synchronously from
 * the welcome frame's handler (frames right behind it in the same TCP read are emitted at once,
 * so the session's listeners must be in place before this handler returns). The socket is
 * terminated on any failure.
 */
function handshake(
  url: string,
  options: ConnectOptions,
  resume: string | undefined,
  timeoutMs: number,
  onWelcome: (socket: WebSocket, welcome: WelcomeMessage) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
    const socket = new WebSocket(url, { headers, perMessageDeflate: false });
    let settled = false;
    let refusal: CanopyError | undefined;

    const stopListening = (): void => {
      clearTimeout(timer);
      socket.removeListener('unexpected-response', onUnexpectedResponse);
      socket.removeListener('close', onClose);
      socket.removeListener('open', onOpen);
      socket.removeListener('message', onMessage);
      // The 'error' listener stays: an 'error' without listener would be thrown.
    };
    const fail = (error: CanopyError): void => {
      if (settled) return;
      settled = true;
      stopListening();
      reject(error);
      if (socket.readyState !== WebSocket.CLOSED) socket.terminate();
    };
    const timer = setTimeout(() => fail(new CanopyError(ClientErrorCode.E_TIMEOUT, `no welcome within ${timeoutMs} ms`)), timeoutMs);

    const onUnexpectedResponse = (_request: unknown, response: { statusCode?: number; resume(): void }): void => {
      const status = response.statusCode ?? 0;
      response.resume();
      refusal =
        status === 401
          ? new CanopyError(ClientErrorCode.E_UNAUTHORIZED, 'the service refused the API key (401)', { status })
          : new CanopyError(ClientErrorCode.E_CONNECT, `the service answered the upgrade with ${status}`, { status });
      fail(refusal);
    };
    const onClose = (code: number, reason: Buffer): void => {
      fail(new CanopyError(ClientErrorCode.E_CLOSED, `closed during the handshake (${code}${reason.length > 0 ? ` ${reason.toString()}` : ''})`));
    };
    const onOpen = (): void => {
      const hello: Record<string, unknown> = { t: 'hello', v: PROTOCOL_VERSION };
      if (options.mode !== undefined) hello.mode = options.mode;
      if (options.hz !== undefined) hello.hz = options.hz;
      if (options.fields !== undefined) hello.fields = options.fields;
      if (resume !== undefined) hello.resume = resume;
      socket.send(encode(hello));
    };
    const onMessage = (data: RawData, isBinary: boolean): void => {
      let msg: unknown;
      try {
        if (!isBinary) throw new Error('text frame');
        msg = decode(toBytes(data));
      } catch (error) {
        fail(new CanopyError(ErrorCode.E_PROTOCOL, `unreadable frame from the server: ${(error as Error).message}`));
        return;
      }
      const m = parseServerMessage(msg);
      if (m === null) return;
      if (m.t === 'error') {
        fail(new CanopyError(m.code, m.message));
        return;
      }
      if (m.t !== 'welcome' || settled) return;
      settled = true;
      stopListening();
      onWelcome(socket, m);
      resolve();
    };

    socket.on('unexpected-response', onUnexpectedResponse);
    socket.on('error', (error) => {
      fail(refusal ?? new CanopyError(ClientErrorCode.E_CONNECT, `cannot connect to ${url}: ${error.message}`, { cause: error }));
    });
    socket.on('close', onClose);
    socket.on('open', onOpen);
    socket.on('message', onMessage);
  });
}

function toBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}

function decisionsOf(m: DecisionsMessage): Decisions {
  return {
    tick: m.tick,
    basedOn: m.basedOn ?? undefined,
    actions: m.actions ?? EMPTY,
    cancels: m.cancels ?? EMPTY,
    done: m.done ?? EMPTY,
    errors: m.errors ?? EMPTY,
  };
}

/**
 * A snapshot message: its fields, and its rows kept apart until it is encoded (encode), where they are written by the
 * protocol's row encoder (encodeRows) after the rest, as the last entry of the map: the same bytes as the codec
 * writes for the whole message, at a fraction of the codec's cost per row.
 */
class SnapshotFrame {
  readonly t = 'snapshot';
  readonly head: Record<string, unknown>;
  /** `snapshot.agents` as given (a RowWriter's rows): rows, their map form, or packed rows; or a RowEncoder's bytes. */
  readonly agents: unknown;

  constructor(head: Record<string, unknown>, agents: unknown) {
    this.head = head;
    this.agents = agents;
  }

  get tick(): number {
    return this.head.tick as number;
  }

  /** The frame, its rows spliced into `size` bytes from `take` (FrameBuffers.take: large frames in pooled memory). */
  encode(take: (size: number) => Buffer): Buffer {
    // The rows last: the service's workers then read them where they are, without the main thread reading each row
    // (docs/capacity.md, "rows the main thread never reads"); any order is valid on the wire.
    if (this.agents === undefined) return encode(this.head);
    if (this.agents instanceof Uint8Array) return joinMap(this.head, 1, [AGENTS_KEY, this.agents], take);
    if (!Array.isArray(this.agents)) return encode({ ...this.head, agents: this.agents });
    return joinMap(this.head, 1, [AGENTS_KEY, encodeRows(this.agents)], take);
  }
}

/** The key `agents`, encoded. */
const AGENTS_KEY = Buffer.from(encode('agents'));

/** The wire form of a snapshot: only the fields that are set. */
function snapshotMessage(s: SnapshotInput, id: number | undefined): SnapshotFrame {
  const msg: Record<string, unknown> = { t: 'snapshot', tick: s.tick };
  if (id !== undefined) msg.id = id;
  if (s.time !== undefined) msg.time = s.time;
  if (s.world !== undefined) msg.world = s.world;
  if (s.results !== undefined && s.results.length > 0) msg.results = s.results;
  if (s.full !== undefined) msg.full = s.full;
  return new SnapshotFrame(msg, s.agents === undefined ? undefined : s.agents instanceof RowWriter ? s.agents.rows() : s.agents instanceof RowEncoder ? s.agents.bytes() : s.agents);
}
