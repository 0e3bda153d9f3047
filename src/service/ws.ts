// The WebSocket endpoint (GET /v1/ws): one connection carries one session. Frames are validated by
// the protocol module, handled in arrival order, and answered on the same socket.

import { timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import {
  ErrorCode,
  LIMITS,
  Msg,
  encodeDecisions,
  encodeDespawned,
  encodeEntryError,
  encodeError,
  encodeGoodbye,
  encodePong,
  encodeSpawned,
  encodeWelcome,
  encode,
  decodeSpawnPart,
  parseClientFrame,
  parseClientMessage,
  parseSnapshotHead,
  splitFrameList,
  type DecisionsFields,
  type AgentId,
  type EntryError,
  type HelloMessage,
  type ParseOptions,
  type ParseResult,
  type SnapshotMessage,
  type StagedRows,
  type UnreadRows,
} from '../protocol/index.js';
import type { LiveConnection, ServiceContext } from './context.js';
import { fieldWarnings } from './sessions/fieldWarnings.js';
import { HttpErrorCode } from './http/http.js';
import { Outbox, OutboxBudget } from './sessions/outbox.js';
import { TokenBucket } from './http/rate.js';
import { SnapshotRefused, rotateToken, type Session, type SessionOutput, type TreesNotice } from './sessions/session.js';
import type { Durability } from './durable/durability.js';
import type { Tally } from './metrics.js';
import { WARMUP_REASON } from './sessions/registry.js';
import { framePool } from './pool/frames.js';
import { receiveFramesOn, receiveIntoFrames } from './receive.js';

/** Frames waiting behind a lockstep tick before the socket stops being read. */
const MAX_QUEUED_FRAMES = 64;
/** Spawn and despawn entries handled per turn of the event loop (about 1–1.5 ms of main-thread time warm). */
const AGENTS_PER_TURN = 1000;
/** Spawn frames from this size on (about 1,000 agents) are decoded in parts (Connection.spawnFrameInParts). */
const SLICED_SPAWN_BYTES = 32 * 1024;
/** After a goodbye, how long the socket may make no progress (nothing drained) before it is destroyed. */
export const CLOSE_TIMEOUT_MS = 2000;
/** After a goodbye, the longest a socket that keeps draining slowly is given to read it. */
const CLOSE_MAX_MS = 60_000;

/** WebSocket close codes the service uses. */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  policy: 1008,
} as const;

/** `goodbye.reason` values. */
export const GoodbyeReason = {
  shutdown: 'shutdown',
  slowConsumer: 'slow consumer',
  abuse: 'too many invalid messages',
  replaced: 'session resumed by another connection',
  helloTimeout: 'no hello in time',
  moving: 'the session is moving between instances; resume again',
} as const;

/** The route; the upgrade itself is guarded by the hooks of the enclosing scope (API keys, draining). */
export const wsRoutes: FastifyPluginAsync<{ ctx: ServiceContext }> = async (app, { ctx }) => {
  const live = new Set<Connection>();
  // Unsent and held bytes of every socket together, against CANOPY_MAX_OUTBOX_BYTES.
  const budget = new OutboxBudget(ctx.config.maxOutboxBytes);
  // One timer for every socket: each tick pings, and drops the sockets that missed the last ping.
  const pinger = setInterval(() => {
    for (const c of live) c.heartbeat();
  }, ctx.tuning.pingIntervalMs);
  pinger.unref();
  app.addHook('onClose', async () => clearInterval(pinger));
  // Large snapshots arrive straight in the workers' shared frame memory (receive.ts).
  if (!receiveIntoFrames(framePool)) app.log.warn('ws: large messages are received and then copied for the workers (receive.ts could not hook this ws version)');
  // New sessions are refused while the service starts or drains: 503 at the upgrade, no socket.
  app.addHook('onRequest', async (request, reply) => {
    if (ctx.phase !== 'ready' && !(ctx.phase === 'starting' && isWarmup(ctx, request.headers[WARMUP_HEADER]))) {
      await reply.code(503).header('retry-after', Math.ceil(ctx.tuning.retryAfterMs / 1000)).send({ code: HttpErrorCode.E_UNAVAILABLE, message: 'the service is not accepting new sessions' });
      return;
    }
    // CANOPY_MAX_CONNECTIONS: refused at the upgrade, so the process keeps file descriptors for
    // /healthz, /readyz and HTTP sessions.
    if (live.size >= ctx.config.maxConnections) {
      ctx.metrics.errors.inc({ code: ErrorCode.E_LIMIT });
      await reply
        .code(503)
        .header('retry-after', Math.ceil(ctx.tuning.retryAfterMs / 1000))
        .send({ code: ErrorCode.E_LIMIT, message: Msg.limit('open WebSocket connections (CANOPY_MAX_CONNECTIONS)', ctx.config.maxConnections) });
    }
  });

  app.get('/v1/ws', { websocket: true }, (socket, request) => {
    const connection = new Connection(socket, ctx, request.log, budget, ctx.phase === 'starting' && isWarmup(ctx, request.headers[WARMUP_HEADER]));
    live.add(connection);
    ctx.connections.add(connection);
    void connection.closed.then(() => {
      live.delete(connection);
      ctx.connections.delete(connection);
    });
  });
};

/** The header of the start-up warm-up's own connection (warmup.ts), with ServiceContext.warmupKey. */
export const WARMUP_HEADER = 'x-canopy-warmup';

/** Whether `given` is the secret of the warm-up under way (compared in constant time). */
function isWarmup(ctx: ServiceContext, given: string | string[] | undefined): boolean {
  const key = ctx.warmupKey;
  if (key === null || typeof given !== 'string' || given.length !== key.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(key));
}

/** One WebSocket connection: the hello handshake, then the session's messages. */
class Connection implements LiveConnection, SessionOutput {
  readonly closed: Promise<void>;
  private readonly socket: WebSocket;
  private readonly ctx: ServiceContext;
  private readonly log: FastifyBaseLogger;
  private readonly outbox: Outbox;
  private session: Session | undefined;
  /** Frames that arrived while a lockstep tick ran, handled in order once it finishes. */
  private readonly queue: Buffer[] = [];
  private queueHead = 0;
  private busy = false;
  /** The frame being handled (see settled()). */
  private handling: Promise<void> = Promise.resolve();
  private readonly pausedBy = new Set<PauseReason>();
  /** CANOPY_MAX_MESSAGE_RATE: a frame without a token waits in the queue, reading paused. */
  private readonly rate: TokenBucket;
  /** canopy_bytes_received_total{transport="ws"}, counted on every frame. */
  private readonly bytesIn: Tally;
  /** canopy_decisions_frames_total of the session's mode, bound at the first `decisions` sent (after hello). */
  private decisionsFrames: Tally | null = null;
  private throttleTimer: NodeJS.Timeout | undefined;
  private lastThrottleError = -Infinity;
  /** Set once the connection is going away (bye, goodbye, fatal error): later frames are ignored. */
  private ending = false;
  private alive = true;
  private invalidCount = 0;
  private invalidWindowStart = 0;
  /** CANOPY_HELLO_TIMEOUT_MS: a socket that never says hello is told goodbye. */
  private helloTimer: NodeJS.Timeout | undefined;
  private closeReason = 'socket closed';

  /** The start-up warm-up's own connection: let in before the service is ready, its session neither recorded nor durable. */
  private readonly warmup: boolean;

  constructor(socket: WebSocket, ctx: ServiceContext, log: FastifyBaseLogger, budget: OutboxBudget, warmup = false) {
    this.socket = socket;
    this.warmup = warmup;
    this.ctx = ctx;
    this.log = log;
    const metrics = ctx.metrics;
    const bytesOut = metrics.bytesOut.tally('ws');
    this.bytesIn = metrics.bytesIn.tally('ws');
    this.rate = new TokenBucket(ctx.config.maxMessageRate, performance.now());
    this.outbox = new Outbox(socket, {
      softBytes: ctx.tuning.softBufferBytes,
      hardBytes: ctx.tuning.hardBufferBytes,
      budget,
      onSent: (bytes, kind) => {
        bytesOut.inc(bytes);
        if (kind === 'decisions') (this.decisionsFrames ??= metrics.decisionsFrames.tally(this.session?.mode ?? 'fixed')).inc();
      },
      onMerged: () => metrics.heldDecisions.inc(),
      onOverflow: () => this.goodbye(GoodbyeReason.slowConsumer),
      onDrained: () => this.setPaused('congestion', false),
    });
    this.closed = new Promise((resolve) => socket.once('close', () => {
      this.onClose();
      resolve();
    }));
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('pong', () => {
      this.alive = true;
    });
    if (ctx.config.helloTimeoutMs > 0) {
      this.helloTimer = setTimeout(() => {
        this.helloTimer = undefined;
        if (this.session === undefined) this.goodbye(GoodbyeReason.helloTimeout);
      }, ctx.config.helloTimeoutMs);
      this.helloTimer.unref();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Socket events

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.ending) return;
    const bytes = toBuffer(data);
    this.bytesIn.inc(bytes.length);
    if (!isBinary) {
      this.refuse(ErrorCode.E_PROTOCOL, 'text frames are not part of the protocol; send each message as one binary MessagePack frame');
      if (this.session === undefined) this.close(CloseCode.protocolError);
      return;
    }
    if (this.busy || this.throttleTimer !== undefined || !this.rate.take(performance.now())) {
      this.queue.push(bytes);
      if (this.queue.length - this.queueHead >= MAX_QUEUED_FRAMES) this.setPaused('queue', true);
      if (!this.busy) this.throttle();
      return;
    }
    this.process(bytes);
  }

  /**
   * Over the message rate: stop reading until the next token is due, then go on with the queue.
   * Nothing is dropped; the client hears `E_LIMIT` at most once a second while this lasts.
   */
  private throttle(): void {
    if (this.throttleTimer !== undefined || this.ending) return;
    const now = performance.now();
    if (now - this.lastThrottleError >= 1000) {
      this.lastThrottleError = now;
      this.refuse(ErrorCode.E_LIMIT, Msg.rateLimited(this.ctx.config.maxMessageRate));
    }
    this.setPaused('rate', true);
    this.throttleTimer = setTimeout(() => {
      this.throttleTimer = undefined;
      this.setPaused('rate', false);
      this.drain();
    }, Math.max(1, this.rate.msUntilToken(now)));
  }

  /**
   * Handles one frame; while a lockstep tick runs, later frames wait in the queue. A frame received into the workers'
   * frame memory (a lockstep session's: receive.ts) is let go of once handled; its buffer is reused once the workers
   * and the recovery log let go too.
   */
  private process(bytes: Buffer): void {
    let pending: Promise<void> | undefined;
    try {
      pending = this.handle(bytes);
    } catch (err) {
      this.internalError(err);
    }
    if (pending === undefined) {
      framePool.release(bytes);
      return;
    }
    this.busy = true;
    this.handling = pending.then(() => {
      framePool.release(bytes);
      this.busy = false;
      this.drain();
    });
  }

  /**
   * Shutdown: resolves once the frame being handled is done — a lockstep tick, or a snapshot whose rows the
   * workers are still checking (its tick is not in the session's queue yet, so quiesce() alone would miss it).
   */
  settled(): Promise<void> {
    return this.handling;
  }

  private drain(): void {
    while (!this.busy && !this.ending && this.queueHead < this.queue.length) {
      if (this.throttleTimer !== undefined) return;
      if (!this.rate.take(performance.now())) {
        this.throttle();
        return;
      }
      const next = this.queue[this.queueHead]!;
      this.queue[this.queueHead++] = EMPTY;
      this.process(next);
    }
    if (this.queueHead === this.queue.length) {
      this.queue.length = 0;
      this.queueHead = 0;
      this.setPaused('queue', false);
    }
  }

  private onClose(): void {
    this.ending = true;
    clearTimeout(this.throttleTimer);
    clearTimeout(this.helloTimer);
    this.outbox.release();
    const session = this.session;
    if (session === undefined || session.ended || !session.isAttachedTo(this)) return;
    this.log.info(
      { session: session.id, mode: session.mode, transport: 'ws', agents: this.ctx.pool.agentCount(session.id), reason: this.closeReason },
      'session connection closed',
    );
    void session.detach(this);
    // At shutdown every session is freed anyway; otherwise keep it for a resume.
    if (this.ctx.phase === 'ready') this.ctx.sessions.keepFor(session);
  }

  /** Shutdown: frames arriving from now on are ignored; a lockstep tick in flight still answers. */
  stopReading(): void {
    this.ending = true;
  }

  /** Called by the server's ping timer. */
  heartbeat(): void {
    if (this.pausedBy.size > 0) {
      // We stopped reading this socket ourselves, so its pong may be waiting unread.
      this.alive = true;
      return;
    }
    if (!this.alive) {
      this.log.debug({ session: this.session?.id }, 'dropping a socket that did not answer ping');
      this.socket.terminate();
      return;
    }
    this.alive = false;
    try {
      this.socket.ping();
    } catch {
      // The socket is closing; its close event does the rest.
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Messages

  private handle(bytes: Buffer): Promise<void> | undefined {
    const session = this.session;
    if (session === undefined) return this.beforeHello(parseClientFrame(bytes, this.ctx.config.maxFrameBytes));
    if (bytes.length >= SLICED_SPAWN_BYTES && bytes.length <= this.ctx.config.maxFrameBytes && startsAsSpawn(bytes)) return this.spawnFrameInParts(bytes, session);
    const options = this.parseOptions(session);
    // A snapshot's rows the main thread does not read: the workers check them and find their agents' rows.
    const unread = session.mode === 'lockstep' || this.ctx.pool.workerCount > 0 ? parseSnapshotHead(bytes, this.ctx.config.maxFrameBytes, options) : undefined;
    // Lockstep: applied and ticked in one message to the worker holding the session's agents where it can be, else
    // staged on the workers (unreadRows); the inline pool reads the rows itself. Fixed mode: read by the worker
    // holding the session's agents as the frame arrives (not staged: the stage's round trip waits behind the workers'
    // ticks, and rows that then miss the clock's tick reach the next one; docs/capacity.md: staleness p50 20–40 →
    // 46–58 ms at 50,000 agents), else read here.
    if (unread !== undefined) {
      if (session.mode === 'fixed') return this.fixedFrame(session, unread, bytes);
      if (this.ctx.pool.workerCount > 0) return this.lockstep(session, unread.parsed.msg, unread.parsed.errors, unread.parsed.omittedErrors, bytes, unread);
      return this.unreadRows(session, unread, bytes);
    }
    const own = session.mode === 'fixed' ? ownFrame(bytes) : bytes;
    return this.handleParsed(session, parseClientFrame(own, this.ctx.config.maxFrameBytes, options), own);
  }

  /**
   * Fixed mode, a snapshot with unread rows: read by the worker holding the session's agents as it arrives
   * (Session.applyFrame), or here the ordinary way where that does not apply or the rows fail the worker's check (so
   * the client hears exactly what it always heard). Later frames of the connection wait meanwhile.
   */
  private fixedFrame(session: Session, unread: UnreadRows, bytes: Buffer): Promise<void> | undefined {
    const ordinary = (): void => {
      const own = ownFrame(bytes);
      void this.handleParsed(session, parseClientFrame(own, this.ctx.config.maxFrameBytes, this.parseOptions(session)), own);
    };
    const { parsed } = unread;
    const rows = { start: unread.start, count: unread.count, width: session.fields?.length ?? 0 };
    const applying = session.applyFrame(parsed.msg, rows, bytes, ordinary);
    if (applying === null) {
      ordinary();
      return undefined;
    }
    return applying.then(
      (errors) => {
        if (errors !== null) this.entryErrors([...parsed.errors, ...errors], parsed.omittedErrors, parsed.msg.id);
      },
      (err: unknown) => this.internalError(err, parsed.msg.id),
    );
  }

  /** A snapshot with unread rows that the pool could not apply and tick in one go: staged on the workers, or read here. */
  private unreadRows(session: Session, unread: UnreadRows, bytes: Buffer): Promise<void> | undefined {
    const width = session.fields?.length ?? 0;
    const staging = this.ctx.pool.stageRows(session.id, bytes, unread.start, unread.count, width);
    if (staging !== null) return this.staged(session, unread, staging, bytes);
    return this.handleParsed(session, parseClientFrame(bytes, this.ctx.config.maxFrameBytes, this.parseOptions(session)), bytes);
  }

  /**
   * A snapshot whose rows went to the workers unread (docs/capacity.md): once they answered, handled as if parsed
   * here; rows that failed their check, or that a worker could not answer for, are parsed here the ordinary way, so
   * the client hears exactly what it always heard. Later frames of the connection wait meanwhile, as behind a tick.
   */
  private async staged(session: Session, unread: UnreadRows, staging: Promise<StagedRows | null>, bytes: Buffer): Promise<void> {
    try {
      const rows = await staging;
      // Freed meanwhile: nothing to apply. Taken over by a resume meanwhile: handled all the same, as a frame read
      // just before the take-over is (lockstep() sends nothing to a connection the session left).
      if (session.ended) return;
      const parsed: ParseResult =
        rows === null ? parseClientFrame(bytes, this.ctx.config.maxFrameBytes, this.parseOptions(session)) : { ...unread.parsed, msg: { ...unread.parsed.msg, agents: rows } };
      await this.handleParsed(session, parsed, bytes);
    } catch (err) {
      this.internalError(err);
    }
  }

  private parseOptions(session: Session): ParseOptions {
    const knownIds = this.ctx.pool.knownIds(session.id);
    return knownIds === null ? { fieldCount: session.fields?.length ?? 0, mode: session.mode, packRows: true } : { fieldCount: session.fields?.length ?? 0, mode: session.mode, packRows: true, knownIds };
  }

  /**
   * A large spawn frame, its agents decoded AGENTS_PER_TURN at a time, a turn of the event loop each: decoding
   * 10,000 entries at once held the main thread 4–9 ms, every other session's frames and ticks waiting. Nothing
   * is applied before all of it is decoded and validated, so what the game server hears is what one decode
   * gives (a frame that does not decode in parts is decoded whole, and refused as ever).
   */
  private async spawnFrameInParts(bytes: Buffer, session: Session): Promise<void> {
    const whole = (): Promise<void> | undefined => this.handleParsed(session, parseClientFrame(bytes, this.ctx.config.maxFrameBytes, this.parseOptions(session)), bytes);
    const split = splitFrameList(bytes, 'agents', AGENTS_PER_TURN);
    if (split === undefined || split.fields['t'] !== 'spawn') return whole();
    const agents: unknown[] = [];
    for (let i = 0; i < split.parts.length; i++) {
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      // Freed meanwhile: nothing to apply. Taken over by a resume meanwhile: handled all the same, as a frame read
      // just before the take-over is (lockstep() sends nothing to a connection the session left).
      if (session.ended) return;
      const part = split.parts[i]!;
      const items = decodeSpawnPart(part.bytes, part.count);
      if (items === undefined) return whole();
      for (const item of items) agents.push(item);
    }
    split.fields['agents'] = agents;
    return this.handleParsed(session, parseClientMessage(split.fields, this.parseOptions(session)), bytes);
  }

  private handleParsed(session: Session, parsed: ParseResult, bytes: Buffer): Promise<void> | undefined {
    if (!parsed.ok) {
      this.invalid(parsed.code, parsed.message, parsed.re);
      return undefined;
    }
    const msg = parsed.msg;
    switch (msg.t) {
      case 'hello':
        this.invalid(ErrorCode.E_PROTOCOL, `hello was already answered; this connection carries session ${session.id}`, msg.id);
        return undefined;
      case 'spawn': {
        if (msg.agents.length > AGENTS_PER_TURN) return this.inParts(msg.agents, parsed.errors, (part, refused, more) => session.spawn(part, refused, more), (ids, errors) => {
          this.outbox.send(encodeSpawned(ids, errors, msg.id, fieldWarnings(session, msg.agents, ids, this.ctx.treeReads)));
        }, session);
        const out = session.spawn(msg.agents, parsed.errors);
        this.countEntryErrors(out.errors);
        this.outbox.send(encodeSpawned(out.ids, out.errors, msg.id, fieldWarnings(session, msg.agents, out.ids, this.ctx.treeReads)));
        return undefined;
      }
      case 'despawn': {
        if (msg.ids.length > AGENTS_PER_TURN) return this.inParts(msg.ids, parsed.errors, (part, refused) => session.despawn(part, refused), (ids, errors) => {
          this.outbox.send(encodeDespawned(ids, errors, msg.id));
        }, session);
        const out = session.despawn(msg.ids, parsed.errors);
        this.countEntryErrors(out.errors);
        this.outbox.send(encodeDespawned(out.ids, out.errors, msg.id));
        return undefined;
      }
      case 'bb':
        this.entryErrors([...parsed.errors, ...session.setBlackboard(msg.set)], parsed.omittedErrors, msg.id);
        return undefined;
      case 'result':
        this.entryErrors([...parsed.errors, ...session.results(msg.results)], parsed.omittedErrors, msg.id);
        return undefined;
      case 'lod':
        this.entryErrors([...parsed.errors, ...session.setLod(msg.agents)], parsed.omittedErrors, msg.id);
        return undefined;
      case 'snapshot':
        if (session.mode === 'lockstep') return this.lockstep(session, msg, parsed.errors, parsed.omittedErrors, bytes);
        this.entryErrors([...parsed.errors, ...session.applySnapshot(msg, bytes)], parsed.omittedErrors, msg.id);
        return undefined;
      case 'ping':
        this.outbox.send(encodePong(msg.n, msg.id));
        return undefined;
      case 'bye':
        this.bye(session);
        return undefined;
    }
  }

  private beforeHello(parsed: ParseResult): Promise<void> | undefined {
    if (!parsed.ok) {
      if (parsed.code === ErrorCode.E_VERSION) {
        this.refuse(parsed.code, parsed.message, parsed.re);
        this.close(CloseCode.protocolError);
      } else if (parsed.field?.startsWith('hello.') === true) {
        // A hello with a bad field: say which, and wait for a better hello.
        this.invalid(parsed.code, parsed.message, parsed.re);
      } else {
        const message = parsed.code === ErrorCode.E_PROTOCOL ? parsed.message : `the first message must be hello (${parsed.message})`;
        this.refuse(ErrorCode.E_PROTOCOL, message, parsed.re);
        this.close(CloseCode.protocolError);
      }
      return;
    }
    const msg = parsed.msg;
    if (msg.t !== 'hello') {
      this.refuse(ErrorCode.E_PROTOCOL, Msg.helloFirst(msg.t), msg.id);
      this.close(CloseCode.protocolError);
      return;
    }
    return this.hello(msg);
  }

  private hello(msg: HelloMessage): Promise<void> | undefined {
    const ctx = this.ctx;
    if (this.warmup) {
      if (ctx.phase !== 'starting' || msg.resume !== undefined || msg.record === true) {
        this.goodbye(GoodbyeReason.shutdown, ctx.tuning.retryAfterMs);
        return;
      }
      this.welcome(msg, undefined);
      return;
    }
    if (ctx.phase !== 'ready') {
      this.goodbye(GoodbyeReason.shutdown, ctx.tuning.retryAfterMs);
      return;
    }
    const session = msg.resume !== undefined ? ctx.sessions.takeOver(msg.resume) : undefined;
    if (session !== undefined) ctx.durability?.tokenRotated(session, msg.resume!);
    else if (msg.resume !== undefined && ctx.durability !== null) return this.adopt(msg, msg.resume, ctx.durability);
    this.welcome(msg, session);
    return undefined;
  }

  /** A resume token this instance does not know: the session may live in Redis (another instance's, or a dead one's). */
  private async adopt(msg: HelloMessage, token: string, durability: Durability): Promise<void> {
    clearTimeout(this.helloTimer);
    this.helloTimer = undefined;
    const out = await durability.adopt(token, () => this.ending);
    if ('session' in out) {
      if (this.ending || this.ctx.phase !== 'ready') {
        // The client left meanwhile: kept for its grace period, as any dropped session, under the token the client
        // holds (it resumes with that one, here or anywhere: the store still leads it here).
        out.session.resumeToken = token;
        this.ctx.sessions.keepFor(out.session);
        return;
      }
      rotateToken(out.session);
      durability.tokenRotated(out.session, token);
      this.welcome(msg, out.session);
      return;
    }
    if (this.ending) return;
    if ('retry' in out) {
      this.log.warn({ why: out.retry }, 'a resumed session could not be restored now; the client is told to retry');
      this.goodbye(GoodbyeReason.moving, this.ctx.tuning.retryAfterMs);
      return;
    }
    this.welcome(msg, undefined);
  }

  /** Answers hello with `welcome`: the session resumed (`resumedSession`), or a new one. */
  private welcome(msg: HelloMessage, resumedSession: Session | undefined): void {
    const ctx = this.ctx;
    const resumed = resumedSession !== undefined;
    const session = resumedSession ?? ctx.sessions.create({
      mode: msg.mode ?? 'fixed',
      hz: msg.hz ?? ctx.config.hz,
      fields: msg.fields ?? null,
      transport: 'ws',
    });
    this.session = session;
    clearTimeout(this.helloTimer);
    this.helloTimer = undefined;
    const recording = ctx.recordings.forHello(session, msg.record === true);
    this.outbox.send(
      encodeWelcome(
        {
          session: session.id,
          resume: session.resumeToken,
          mode: session.mode,
          hz: session.hz,
          trees: ctx.treeNames(),
          reads: Object.fromEntries(ctx.treeNames().map((t) => [t, ctx.treeReads(t)!])),
          limits: {
            maxAgents: ctx.config.maxAgents,
            maxFrameBytes: ctx.config.maxFrameBytes,
            maxListLength: LIMITS.maxListLength,
            maxFields: LIMITS.maxFields,
            maxHz: LIMITS.maxHz,
            resumeGraceMs: ctx.config.resumeGraceMs,
            maxMessageRate: ctx.config.maxMessageRate,
          },
          recording,
          ...(resumed && session.lastTick !== undefined ? { tick: session.lastTick } : {}),
        },
        msg.id,
      ),
    );
    if (resumed) session.resumed();
    // Each message is done with once handled (process()), so large ones can arrive in frame memory: a lockstep
    // session's, and a fixed session's where workers read its rows (those read here are copied out first: ownFrame).
    if (session.mode === 'lockstep' || this.ctx.pool.workerCount > 0) receiveFramesOn(this.socket);
    session.attach(this);
    if (this.warmup) this.log.debug({ session: session.id }, 'start-up warm-up session opened');
    else this.log.info({ session: session.id, mode: session.mode, transport: 'ws', resumed }, resumed ? 'session resumed' : 'session opened');
  }

  /** `unread`: the snapshot's rows are unread, there in `raw` (`msg` has none): tried in one go first (Session.lockstepFrame). */
  private async lockstep(session: Session, msg: SnapshotMessage, refused: readonly EntryError[], omitted: number, raw: Buffer, unread?: UnreadRows): Promise<void> {
    let decisions: DecisionsFields;
    let encoded: Buffer | undefined;
    try {
      const out = unread === undefined ? await session.lockstep(msg, raw) : await session.lockstepFrame(msg, { start: unread.start, count: unread.count, width: session.fields?.length ?? 0 }, raw);
      // Not in one go: staged or read as ever. Freed meanwhile: nothing to apply.
      if (out === null) {
        if (unread !== undefined && !session.ended) await this.unreadRows(session, unread, raw);
        return;
      }
      this.entryErrors([...refused, ...out.errors], omitted, msg.id);
      decisions = out.decisions;
      encoded = out.encoded; // the recorder's bytes of this frame, when the session is recorded
    } catch (err) {
      if (err instanceof SnapshotRefused) {
        this.entryErrors(refused, omitted, msg.id);
        this.invalid(err.code, err.message, msg.id);
        return;
      }
      // The tick failed (a worker crashed): still answer this tick, so the game's loop goes on.
      this.internalError(err, msg.id);
      decisions = { tick: msg.tick, basedOn: session.basedOn };
    }
    if (!session.isAttachedTo(this)) return;
    this.outbox.send(encoded ?? encodeDecisions(decisions), 'decisions');
    // Lockstep backpressure: stop reading snapshots until the client has read its decisions.
    if (this.outbox.congested) this.setPaused('congestion', true);
  }

  private bye(session: Session): void {
    this.ending = true;
    this.closeReason = 'bye';
    void this.ctx.sessions.free(session, this.warmup ? WARMUP_REASON : 'bye');
    this.close(CloseCode.normal);
  }

  // ---------------------------------------------------------------------------------------------
  // SessionOutput

  decisions(d: DecisionsFields): void {
    this.outbox.decisions(d);
  }

  replaced(): void {
    this.goodbye(GoodbyeReason.replaced);
  }

  notice(code: ErrorCode, message: string): void {
    this.refuse(code, message);
  }

  trees(msg: TreesNotice): void {
    this.outbox.send(encode({ t: 'trees', ...msg }));
  }

  // ---------------------------------------------------------------------------------------------
  // Replies

  /** Sends `error`. */
  private refuse(code: ErrorCode, message: string, re?: number): void {
    this.ctx.metrics.errors.inc({ code });
    this.outbox.send(encodeError(code, message, re));
  }

  /** Sends `error` for a refused message, and says goodbye to a client that keeps sending them. */
  private invalid(code: ErrorCode, message: string, re?: number): void {
    this.refuse(code, message, re);
    const now = performance.now();
    if (now - this.invalidWindowStart > this.ctx.tuning.abuseWindowMs) {
      this.invalidWindowStart = now;
      this.invalidCount = 0;
    }
    if (++this.invalidCount > this.ctx.tuning.abuseLimit) this.goodbye(GoodbyeReason.abuse);
  }

  /** One `error` per refused entry (bb, result, snapshot), then a count of those left out. */
  private entryErrors(errors: readonly EntryError[], omitted: number, re: number | undefined): void {
    // Marked `entry: true` (with `agent` when readable): the rest of the message was applied (protocol.md).
    for (const e of errors) {
      this.ctx.metrics.errors.inc({ code: e.code });
      this.outbox.send(encodeEntryError(e, re));
    }
    if (omitted > 0) {
      this.ctx.metrics.errors.inc({ code: ErrorCode.E_BAD_FIELD });
      this.outbox.send(encodeEntryError({ code: ErrorCode.E_BAD_FIELD, message: `${omitted} more entries were refused` }, re));
    }
  }

  /**
   * A large spawn or despawn, AGENTS_PER_TURN entries per turn of the event loop: other sessions' frames and
   * ticks go on between the parts instead of waiting for all of it (10,000 agents take the main thread some
   * 15 ms warm, several times that cold). This connection's later frames wait (it is busy), so a snapshot right
   * behind a spawn still finds every agent. In fixed mode the service's clock may tick between two parts, as if
   * the game had sent two messages; a recording records each part, so a replay sees the same.
   */
  private async inParts<T>(
    entries: readonly T[],
    refused: readonly EntryError[],
    apply: (part: readonly T[], refused: readonly EntryError[], more: number) => { ids: AgentId[]; errors: EntryError[] },
    reply: (ids: AgentId[], errors: EntryError[]) => void,
    session: Session,
  ): Promise<void> {
    const ids: AgentId[] = [];
    const errors: EntryError[] = [];
    try {
      for (let from = 0; from < entries.length; from += AGENTS_PER_TURN) {
        if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        // Freed meanwhile: nothing to apply. Taken over by a resume meanwhile: handled all the same, as a frame read
        // just before the take-over is (lockstep() sends nothing to a connection the session left).
        if (session.ended) return;
        const part = entries.slice(from, from + AGENTS_PER_TURN);
        const out = apply(part, from === 0 ? refused : [], entries.length - from - part.length);
        for (const id of out.ids) ids.push(id);
        for (const e of out.errors) errors.push(e);
      }
      this.countEntryErrors(errors);
      reply(ids, errors);
    } catch (err) {
      this.internalError(err);
    }
  }

  private countEntryErrors(errors: readonly EntryError[]): void {
    for (const e of errors) this.ctx.metrics.errors.inc({ code: e.code });
  }

  private internalError(err: unknown, re?: number): void {
    this.log.error({ err, session: this.session?.id }, 'internal error while handling a message');
    this.refuse(ErrorCode.E_INTERNAL, Msg.internal(), re);
  }

  /** Tells the client why, then closes. The session stays resumable unless the service is shutting down. */
  goodbye(reason: string, retryAfterMs?: number): void {
    if (this.socket.readyState !== this.socket.OPEN) {
      // Already closing (the client began it, or an earlier goodbye): bounded like any close, so a drain that waits
      // for this socket is not left to ws's own 30 s close timer.
      if (this.socket.readyState === this.socket.CLOSING && !this.ending) this.close(CloseCode.goingAway);
      return;
    }
    this.closeReason = `goodbye: ${reason}`;
    this.ctx.metrics.goodbyes.inc({ reason });
    this.outbox.last(encodeGoodbye(reason, retryAfterMs));
    this.close(reason === GoodbyeReason.shutdown ? CloseCode.goingAway : CloseCode.policy);
  }

  /**
   * Starts the close handshake. A socket that stops draining for CLOSE_TIMEOUT_MS is destroyed; one
   * still draining (a slow reader working through what was sent before its goodbye) is given up to
   * CLOSE_MAX_MS, so the goodbye and the close code reach it.
   */
  private close(code: number): void {
    this.ending = true;
    if (this.socket.readyState === this.socket.OPEN) this.socket.close(code);
    // Read again (frames are ignored now) so the client's close reply is seen and nothing unread
    // turns the final close into a reset.
    this.pausedBy.clear();
    if (this.socket.isPaused) this.socket.resume();
    const started = performance.now();
    let last = this.socket.bufferedAmount;
    const check = (): void => {
      const now = this.socket.bufferedAmount;
      if (now < last && performance.now() - started < CLOSE_MAX_MS) {
        last = now;
        timer = setTimeout(check, this.ctx.tuning.closeTimeoutMs ?? CLOSE_TIMEOUT_MS);
        timer.unref();
        return;
      }
      this.socket.terminate();
    };
    let timer = setTimeout(check, this.ctx.tuning.closeTimeoutMs ?? CLOSE_TIMEOUT_MS);
    timer.unref();
    void this.closed.then(() => clearTimeout(timer));
  }

  private setPaused(reason: PauseReason, paused: boolean): void {
    if (paused) this.pausedBy.add(reason);
    else this.pausedBy.delete(reason);
    if (this.pausedBy.size > 0) {
      if (!this.socket.isPaused) this.socket.pause();
    } else if (this.socket.isPaused) {
      this.socket.resume();
    }
  }
}

/** Why the socket is not being read: a lockstep backlog, a client not reading, the message rate. */
type PauseReason = 'queue' | 'congestion' | 'rate';

const EMPTY = Buffer.alloc(0);

/**
 * A fixed session's frame read on the main thread, out of frame memory when it was received there: its rows wait in
 * it for the session's next tick (so does a durable session's record of it), after process() let go of it.
 */
function ownFrame(bytes: Buffer): Buffer {
  return framePool.pooled(bytes) ? Buffer.from(bytes) : bytes;
}

/** `t: 'spawn'` as the first field of a map (fixmap or map16): how game servers write a spawn. */
const SPAWN_HEAD = [0xa1, 0x74, 0xa5, 0x73, 0x70, 0x61, 0x77, 0x6e];

function startsAsSpawn(bytes: Buffer): boolean {
  const at = bytes[0]! >= 0x80 && bytes[0]! <= 0x8f ? 1 : bytes[0] === 0xde ? 3 : -1;
  if (at < 0 || bytes.length < at + SPAWN_HEAD.length) return false;
  for (let i = 0; i < SPAWN_HEAD.length; i++) if (bytes[at + i] !== SPAWN_HEAD[i]) return false;
  return true;
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
