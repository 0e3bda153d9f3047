// Assembles the service: trees and plugins loaded and checked, the agent pool, and fastify with one
// plugin per concern (WebSocket, trees, sessions, health, metrics). main.ts runs it; tests embed it.

import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import websocket from '@fastify/websocket';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type Logger } from 'pino';
import type { TreeLibrary } from '../bt/library.js';
import { apiKeyHook } from './http/auth.js';
import { DEFAULT_TUNING, type LiveConnection, type ServerConfig, type ServiceContext } from './context.js';
import { healthRoutes } from './http/health.js';
import { ErrorCode } from '../protocol/index.js';
import { HttpErrorCode, respond, setUpBodies } from './http/http.js';
import { Metrics, metricsRoutes } from './metrics.js';
import { WorkerPool, createAgentPool, type AgentPool } from './pool/index.js';
import { framePool } from './pool/frames.js';
import { ThreadCpu, readThreadStats } from './pool/thread-cpu.js';
import { warmUp, warmUpSession, warmupFields, LATER_TICKS, TAIL_AGENTS, TAIL_TICKS, WARMUP_TICKS, type WarmupResult } from './warmup.js';
import { Recordings, recordingRoutes } from './recording/recordings.js';
import { SessionRegistry, WARMUP_REASON } from './sessions/registry.js';
import { sessionRoutes } from './http/sessions.js';
import { SpawnPriority } from './spawn-priority.js';
import { StartupError, loadLibrary, treeRoutes } from './http/trees.js';
import { ValidationWorker } from './validation/runner.js';
import { CLOSE_TIMEOUT_MS, GoodbyeReason, WARMUP_HEADER, wsRoutes } from './ws.js';
import { inspectorAssets, inspectorPage } from '../inspector/static.js';
import { inspectorStream } from '../inspector/stream.js';
import { LiveTrees } from './reload/live.js';
import { reloadListener } from './reload/notify.js';
import { reloadRoutes } from './reload/routes.js';
import { watchFolder } from './reload/watch.js';
import { Durability } from './durable/durability.js';

/** A running (or ready to run) service. */
export interface CanopyServer {
  readonly app: FastifyInstance;
  readonly pool: AgentPool;
  /** The trees in use now (replaced by each reload). */
  readonly library: TreeLibrary;
  /** The live trees: versions, reloads (docs/reload.md). */
  readonly trees: LiveTrees;
  readonly metrics: Metrics;
  /** Starts listening (config host and port; port 0 picks one), then waits for the workers: /readyz turns 200. */
  listen(): Promise<{ port: number; host: string }>;
  /** What the start-up warm-up did (warmup.ts), once listen() resolved: the pool's part, then the session layer's. */
  readonly warmup: { pool: WarmupResult | null; session: WarmupResult | null };
  /**
   * Drains and stops: /readyz 503 and new sessions refused; ticks in flight finish and their
   * decisions go out; every client gets `goodbye` {reason: 'shutdown', retryAfterMs}; sockets,
   * sessions, HTTP and workers close. Idempotent.
   */
  close(): Promise<void>;
}

/** Per-request log lines at debug level: an HTTP lockstep game ticks through requests. */
class QuietRequests extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: request.url.split('?')[0] }, 'incoming request');
  }
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) request.log.warn({ err: error, statusCode: reply.statusCode }, 'request failed');
    else request.log.debug({ statusCode: reply.statusCode, ms: reply.elapsedTime }, 'request completed');
  }
}

/**
 * Loads the trees and plugins (an invalid tree throws {@link StartupError} listing every problem),
 * starts the pool and builds the fastify app. Nothing listens until `listen()`.
 */
export async function createServer(config: ServerConfig, options: { logger?: Logger } = {}): Promise<CanopyServer> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const tuning = { ...DEFAULT_TUNING, ...config.tuning };
  const library = await loadLibrary(config.trees, config.plugins, logger);
  let pool: AgentPool;
  let metricsRef: Metrics | undefined;
  try {
    pool = await createAgentPool({
      trees: config.trees,
      workers: config.workers,
      logger,
      library,
      stallMs: tuning.workerStallMs,
      checkpointMs: tuning.workerCheckpointMs,
      sessionAffinity: tuning.sessionAffinity,
      minStagedRows: tuning.minStagedRows,
      onRecovery: () => metricsRef?.workerRecoveries.inc(),
      ...(config.plugins !== null ? { plugins: config.plugins } : {}),
    });
  } catch (err) {
    throw new StartupError(err instanceof Error ? err.message : String(err));
  }
  const treeNames = library.names();
  // POST /v1/trees/validate parses and validates on a thread of its own, against the loaded trees.
  const validation = new ValidationWorker(
    { plugins: config.plugins, trees: Object.fromEntries(treeNames.map((n) => [n, library.definition(n)])) },
    { timeLimitMs: tuning.validateTimeLimitMs, queueLimit: tuning.validateQueue },
    logger,
  );
  const connections = new Set<LiveConnection>();
  // The gauges read sessions lazily, at scrape time.
  let sessions: SessionRegistry | undefined;
  const threadCpu = new ThreadCpu();
  const metrics = new Metrics({
    sessions: () => sessions?.list() ?? [],
    agents: () => pool.agentCount(),
    workers: () => pool.workerStats(),
    recovery: () => (pool instanceof WorkerPool ? pool.recoveryStats() : null),
    frameBuffers: () => framePool,
    threads: () => threadCpu.read(pool.workerStats().map((w) => w.threadId), readThreadStats('self')),
  });
  metricsRef = metrics;
  if (pool instanceof WorkerPool) pool.tickParts = metrics.workerTickParts;
  const durability =
    config.redisUrl === null
      ? null
      : new Durability({
          url: config.redisUrl,
          pool,
          metrics,
          logger,
          leaseMs: config.redisLeaseMs,
          checkpointMs: config.redisCheckpointMs,
          waitMs: config.redisWaitMs,
          ttlMs: config.resumeGraceMs + 2 * config.redisLeaseMs,
        });
  const recordings = new Recordings({ config, library, metrics, logger, blockBytes: tuning.recordBlockBytes });
  const spawnPriority = new SpawnPriority(tuning.spawnHelperNice, tuning.spawnHelperHoldMs);
  sessions = new SessionRegistry(
    {
      pool,
      metrics,
      logger,
      maxAgents: config.maxAgents,
      sessionCreated: (s) => {
        // The start-up warm-up's own session (the only one the service lets in before it is ready) is neither.
        if (ctx.warmupKey !== null) return;
        recordings.sessionCreated(s);
        durability?.attach(s);
      },
      // Not the start-up warm-up's: its compilations are what it is for.
      spawning: (agents) => {
        if (ctx.warmupKey === null) spawnPriority.spawning(agents);
      },
    },
    config.resumeGraceMs,
  );
  durability?.bind(sessions);
  const live = new LiveTrees(library, { dir: config.trees, policy: config.reload, pool, logger, metrics, listener: reloadListener(sessions, recordings, validation) });
  const watcher = config.watch ? watchFolder(config.trees, () => live.reloadFolder(), logger) : null;
  const ctx: ServiceContext = {
    config,
    tuning,
    pool,
    metrics,
    logger,
    sessions,
    connections,
    recordings,
    durability,
    treeNames: () => live.library.names(),
    treeReads: (name) => live.library.get(name)?.observed,
    phase: 'starting',
    warmupKey: null,
  };

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new QuietRequests(),
    bodyLimit: config.maxFrameBytes,
    return503OnClosing: true,
    // A request must arrive whole, and an idle connection goes, within CANOPY_REQUEST_TIMEOUT_MS
    // (a lying Content-Length would otherwise hold a socket for good). WebSocket sockets are exempt:
    // ws clears the idle timeout at the upgrade.
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.requestTimeoutMs,
    // A URL fastify cannot even route (bad percent-encoding) answers in the protocol's terms too.
    frameworkErrors: (error, request, reply) =>
      respond(request, reply, { code: ErrorCode.E_BAD_FIELD, message: `url: ${error.message}` }, error.statusCode ?? 400),
  });
  app.server.headersTimeout = Math.min(config.requestTimeoutMs, 10_000);
  await app.register(websocket, {
    options: { maxPayload: config.maxFrameBytes },
    // A client vanishing mid-frame is routine: log it quietly and drop the socket.
    // A frame over the size limit is a protocol error ws answers with close 1009 itself: let that
    // close frame go out (behind whatever is still unsent) rather than reset the socket under it;
    // ws destroys a socket whose close handshake does not finish within 30 s.
    errorHandler: (error, socket, request) => {
      request.log.debug({ err: error }, 'websocket error');
      if (socket.readyState !== socket.CLOSING) socket.terminate();
    },
  });
  setUpBodies(app, config.maxFrameBytes);
  await app.register(healthRoutes, { ctx });
  await app.register(metricsRoutes, { metrics });
  await app.register(inspectorAssets);
  // The API: API keys (when configured) are checked before any route runs, WebSocket upgrades included.
  await app.register(async (api) => {
    if (config.apiKeys.length > 0) api.addHook('onRequest', apiKeyHook(config.apiKeys));
    await api.register(wsRoutes, { ctx });
    await api.register(treeRoutes, { live, watch: config.watch, validation, maxValidateBytes: config.maxValidateBytes });
    await api.register(reloadRoutes, { live, maxBytes: config.maxValidateBytes });
    await api.register(sessionRoutes, { ctx });
    await api.register(inspectorPage);
    await api.register(inspectorStream, {
      ctx,
      library: () => live.library,
      // The trees view shows each tree's reload version (counter · content hash) and the last refused change's errors.
      status: (name) => {
        const v = live.version(name);
        if (v === undefined) return undefined;
        return { version: `v${v.version} · ${v.hash}`, errors: live.errorsOf(name).map((e) => ({ code: e.code, path: e.path, message: e.message })) };
      },
    });
    await api.register(recordingRoutes, { ctx });
  });
  app.setNotFoundHandler((request, reply) =>
    respond(request, reply, { code: HttpErrorCode.E_NOT_FOUND, message: `no route ${request.method} ${request.url.split('?')[0]}` }, 404),
  );

  let closing: Promise<void> | undefined;
  const warmup: CanopyServer['warmup'] = { pool: null, session: null };
  const close = async (): Promise<void> => {
    ctx.phase = 'draining';
    watcher?.close();
    const open = [...connections];
    const drained = ctx.sessions.size;
    for (const c of open) c.stopReading();
    // A frame read before that is handled to its end, as if read a moment earlier: a lockstep snapshot whose rows
    // the workers are still checking has not reached its session's queue yet (durable sessions log it there).
    await Promise.all(open.map((c) => c.settled()));
    // Finish the ticks in flight; fixed-mode decisions they make still go out.
    await Promise.all(ctx.sessions.list().map((s) => s.quiesce()));
    // Durable sessions: their last inputs stored and their leases released before the clients hear goodbye, so
    // whichever instance they reconnect to adopts them at once.
    await durability?.releaseAll();
    for (const c of open) c.goodbye(GoodbyeReason.shutdown, tuning.retryAfterMs);
    await Promise.all(open.map((c) => c.closed));
    await ctx.sessions.freeAll();
    await recordings.closeAll();
    // Every session is drained by now: an HTTP client still holding a connection (a response it does not read, a
    // keep-alive socket that turned idle after fastify closed the idle ones) gets the close timeout, then is cut.
    const cut = setTimeout(() => app.server.closeAllConnections(), tuning.closeTimeoutMs ?? CLOSE_TIMEOUT_MS);
    await app.close();
    clearTimeout(cut);
    await validation.close();
    await pool.close();
    await durability?.close();
    spawnPriority.restore();
    ctx.phase = 'closed';
    logger.info({ sessionsDrained: drained, connections: open.length }, 'canopy stopped');
  };

  return {
    app,
    pool,
    get library() {
      return live.library;
    },
    trees: live,
    metrics,
    warmup,
    async listen() {
      await app.listen({ host: config.host, port: config.port });
      const address = app.server.address();
      const port = typeof address === 'object' && address !== null ? address.port : config.port;
      await pool.ready();
      // The first game servers should not run the service's cold code (warmup.ts); plugin code is never ticked here.
      const ticks = config.plugins === null ? WARMUP_TICKS : 0;
      // Observations with the fields the trees read, so that their branches run (and are compiled) here: warmup.ts, WarmGame.
      const fields = warmupFields(live.library.names().map((t) => live.library.get(t)?.observed ?? { self: [], world: [] }));
      const warm = (warmup.pool = await warmUp(pool, live.library.names(), { agents: tuning.warmupAgents, rounds: 3, ticks, maxFrameBytes: config.maxFrameBytes, fields }));
      if (warm.error !== undefined) logger.warn({ err: warm.error }, 'start-up warm-up stopped early');
      else if (warm.agents > 0) logger.debug({ ms: Math.round(warm.ms), agents: warm.agents, ticks: warm.ticks, actions: warm.actions, results: warm.results, stopped: warm.stopped }, 'start-up warm-up done');
      // Then the connection and session layer, through a real loopback WebSocket (ws.ts, sessions, replies).
      if (tuning.warmupAgents > 0 && tuning.warmupSession && ctx.phase === 'starting') {
        ctx.warmupKey = randomUUID();
        const session = (warmup.session = await warmUpSession({
          url: `ws://${loopback(app.server.address(), config.host)}/v1/ws`,
          headers: { [WARMUP_HEADER]: ctx.warmupKey, ...(config.apiKeys.length > 0 ? { authorization: `Bearer ${config.apiKeys[0]!}` } : {}) },
          trees: live.library.names(),
          agents: Math.min(tuning.warmupAgents + tuning.warmupAgents / 4, config.maxAgents),
          rounds: 2,
          ticks: Math.min(ticks, LATER_TICKS),
          tailAgents: Math.min(Math.max(TAIL_AGENTS, tuning.minStagedRows), config.maxAgents),
          tailTicks: TAIL_TICKS,
          tailSessions: pool.workerCount,
          maxFrameBytes: config.maxFrameBytes,
          fields,
        }));
        // Whatever it left (a socket dropped early keeps no session for a resume before the service is ready).
        await Promise.all(ctx.sessions.list().map((s) => ctx.sessions.free(s, WARMUP_REASON)));
        ctx.warmupKey = null;
        metrics.resetTraffic();
        if (session.error !== undefined) logger.warn({ err: session.error }, 'start-up warm-up of the session layer stopped early');
        else logger.debug({ ms: Math.round(session.ms), agents: session.agents, ticks: session.ticks, actions: session.actions, results: session.results, stopped: session.stopped }, 'start-up warm-up of the session layer done');
      }
      if (ctx.phase === 'starting') ctx.phase = 'ready';
      logger.info({ host: config.host, port, trees: treeNames.length, workers: pool.workerCount, helperThreads: spawnPriority.threads }, 'canopy listening');
      return { port, host: config.host };
    },
    close() {
      closing ??= close();
      return closing;
    },
  };
}

export { StartupError };

/** host:port of the listening socket as this process reaches it: a wildcard address (all interfaces) via loopback. */
function loopback(address: AddressInfo | string | null, host: string): string {
  if (address === null || typeof address === 'string') return host;
  const ip = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  return `${address.family === 'IPv6' || ip.includes(':') ? `[${ip}]` : ip}:${address.port}`;
}
