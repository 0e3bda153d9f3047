// Sessions over HTTP: inspection of every session (GET), and the lockstep session model for
// turn-based games and scripts (POST /v1/sessions, spawn, tick, despawn, bb, DELETE). Bodies are
// validated by the protocol module exactly as the same messages on a WebSocket.

import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import {
  decisionActions,
  decisionCancels,
  decisionDone,
  ErrorCode,
  LIMITS,
  Msg,
  PROTOCOL_VERSION,
  agentIdFromKey,
  parseClientMessage,
  type ClientMessage,
  type DecisionsFields,
  type EntryError,
  type ParseOk,
} from '../../protocol/index.js';
import type { ServiceContext } from '../context.js';
import { fieldWarnings } from '../sessions/fieldWarnings.js';
import { HttpError, HttpErrorCode, bodyMap, respond } from './http.js';
import { TokenBucket } from './rate.js';
import { SnapshotRefused, type Session } from '../sessions/session.js';

type IdParams = { Params: { id: string } };

export const sessionRoutes: FastifyPluginAsync<{ ctx: ServiceContext }> = async (app, { ctx }) => {
  const { sessions, pool } = ctx;
  // CANOPY_HTTP_SESSION_RATE: session creation, service-wide (a script in a loop must not fill memory).
  const creations = new TokenBucket(ctx.config.httpSessionRate, performance.now());

  /** The session `:id`, any transport. Looking does not count as activity. */
  const find = (request: FastifyRequest<IdParams>): Session => {
    const session = sessions.get(request.params.id);
    if (session === undefined || session.ended) {
      throw new HttpError(404, HttpErrorCode.E_UNKNOWN_SESSION, `no session ${JSON.stringify(request.params.id)}`);
    }
    return session;
  };

  /**
   * An HTTP session `:id` driven by this request (WebSocket sessions are driven by their connection
   * only); its idle countdown starts again.
   */
  const findHttp = (request: FastifyRequest<IdParams>): Session => {
    const session = find(request);
    if (session.transport !== 'http') {
      throw new HttpError(409, HttpErrorCode.E_WRONG_SESSION, `session ${session.id} is driven by its WebSocket connection, not over HTTP`);
    }
    sessions.keepFor(session);
    return session;
  };

  /** Validates a body as the message `t` would be on a WebSocket. */
  const parse = <T extends ClientMessage['t']>(
    request: FastifyRequest,
    t: T,
    session?: Session,
    defaults: Record<string, unknown> = {},
  ): ParseOk<Extract<ClientMessage, { t: T }>> => {
    const body = bodyMap(request);
    const parsed = parseClientMessage(
      { ...defaults, ...body, t },
      session === undefined ? undefined : { fieldCount: session.fields?.length ?? 0, mode: session.mode },
    );
    if (!parsed.ok) {
      ctx.metrics.errors.inc({ code: parsed.code });
      throw new HttpError(400, parsed.code, parsed.message);
    }
    return parsed as ParseOk<Extract<ClientMessage, { t: T }>>;
  };

  // Protocol bytes over HTTP, as declared by Content-Length (bodies are read whole; no chunked replies).
  app.addHook('onResponse', async (request, reply) => {
    const inBytes = Number(request.headers['content-length'] ?? 0);
    const outBytes = Number(reply.getHeader('content-length') ?? 0);
    if (inBytes > 0) ctx.metrics.bytesIn.inc({ transport: 'http' }, inBytes);
    if (outBytes > 0) ctx.metrics.bytesOut.inc({ transport: 'http' }, outBytes);
  });

  const count = (errors: readonly EntryError[]): void => {
    for (const e of errors) ctx.metrics.errors.inc({ code: e.code });
  };

  app.get('/v1/sessions', async (request, reply) => {
    return respond(request, reply, { sessions: sessions.list().map((s) => s.describe()) });
  });

  app.post('/v1/sessions', async (request, reply) => {
    if (ctx.phase !== 'ready') throw new HttpError(503, HttpErrorCode.E_UNAVAILABLE, 'the service is not accepting new sessions');
    const body = bodyMap(request);
    if (body.mode !== undefined && body.mode !== null && body.mode !== 'lockstep') {
      throw new HttpError(400, ErrorCode.E_BAD_FIELD, Msg.badField('mode', 'HTTP sessions are lockstep; use the WebSocket for fixed-rate sessions'));
    }
    const hello = parse(request, 'hello', undefined, { v: PROTOCOL_VERSION });
    let open = 0;
    for (const s of sessions.list()) if (s.transport === 'http' && !s.ended) open++;
    if (open >= ctx.config.maxHttpSessions) {
      ctx.metrics.errors.inc({ code: ErrorCode.E_LIMIT });
      throw new HttpError(503, ErrorCode.E_LIMIT, Msg.limit('open HTTP sessions (CANOPY_MAX_HTTP_SESSIONS)', ctx.config.maxHttpSessions));
    }
    const now = performance.now();
    if (!creations.take(now)) {
      ctx.metrics.errors.inc({ code: ErrorCode.E_LIMIT });
      void reply.header('retry-after', Math.max(1, Math.ceil(creations.msUntilToken(now) / 1000)));
      throw new HttpError(429, ErrorCode.E_LIMIT, `more than ${ctx.config.httpSessionRate} HTTP sessions created per second; retry later`);
    }
    const session = sessions.create({ mode: 'lockstep', hz: 0, fields: hello.msg.fields ?? null, transport: 'http' });
    sessions.keepFor(session);
    request.log.info({ session: session.id, mode: session.mode, transport: 'http' }, 'session opened');
    return respond(
      request,
      reply,
      {
        session: session.id,
        mode: session.mode,
        hz: 0,
        fields: session.fields,
        trees: ctx.treeNames(),
        reads: Object.fromEntries(ctx.treeNames().map((t) => [t, ctx.treeReads(t)!])),
        limits: { maxAgents: ctx.config.maxAgents, maxFrameBytes: ctx.config.maxFrameBytes, maxListLength: LIMITS.maxListLength },
        idleTimeoutMs: ctx.config.resumeGraceMs,
      },
      201,
    );
  });

  app.delete<IdParams>('/v1/sessions/:id', async (request, reply) => {
    const session = findHttp(request);
    await sessions.free(session, 'deleted');
    return reply.code(204).send();
  });

  app.post<IdParams>('/v1/sessions/:id/spawn', async (request, reply) => {
    const session = findHttp(request);
    const { msg, errors } = parse(request, 'spawn', session);
    const out = session.spawn(msg.agents, errors);
    count(out.errors);
    const warnings = fieldWarnings(session, msg.agents, out.ids, ctx.treeReads);
    return respond(request, reply, { ids: out.ids, ...(out.errors.length > 0 ? { errors: out.errors } : {}), ...(warnings.length > 0 ? { warnings } : {}) });
  });

  app.post<IdParams>('/v1/sessions/:id/despawn', async (request, reply) => {
    const session = findHttp(request);
    const { msg, errors } = parse(request, 'despawn', session);
    const out = session.despawn(msg.ids, errors);
    count(out.errors);
    return respond(request, reply, out.errors.length > 0 ? out : { ids: out.ids });
  });

  app.post<IdParams>('/v1/sessions/:id/bb', async (request, reply) => {
    const session = findHttp(request);
    const { msg, errors, omittedErrors } = parse(request, 'bb', session);
    const all = [...errors, ...session.setBlackboard(msg.set)];
    count(all);
    return respond(request, reply, all.length > 0 || omittedErrors > 0 ? { errors: all, omittedErrors } : {});
  });

  app.post<IdParams>('/v1/sessions/:id/lod', async (request, reply) => {
    const session = findHttp(request);
    const { msg, errors, omittedErrors } = parse(request, 'lod', session);
    const all = [...errors, ...session.setLod(msg.agents)];
    count(all);
    return respond(request, reply, all.length > 0 || omittedErrors > 0 ? { errors: all, omittedErrors } : {});
  });

  app.post<IdParams>('/v1/sessions/:id/tick', async (request, reply) => {
    const session = findHttp(request);
    const { msg, errors, omittedErrors } = parse(request, 'snapshot', session);
    let out: { decisions: DecisionsFields; errors: EntryError[] };
    try {
      out = await session.lockstep(msg);
    } catch (err) {
      if (err instanceof SnapshotRefused) throw new HttpError(400, err.code, err.message);
      throw err;
    }
    const refused = [...errors, ...out.errors];
    count(refused);
    ctx.metrics.decisionsFrames.inc({ mode: 'lockstep' });
    return respond(request, reply, decisionsBody(out.decisions, refused, omittedErrors));
  });

  app.get<IdParams>('/v1/sessions/:id/agents', async (request, reply) => {
    const session = find(request);
    return respond(request, reply, { session: session.id, agents: pool.listAgents(session.id) });
  });

  app.get<{ Params: { id: string; agent: string } }>('/v1/sessions/:id/agents/:agent', async (request, reply) => {
    const session = find(request);
    const id = agentIdFromKey(request.params.agent);
    const agent = await pool.inspectAgent(session.id, id);
    if (agent === null) throw new HttpError(404, ErrorCode.E_UNKNOWN_AGENT, Msg.unknownAgent(id));
    return respond(request, reply, agent);
  });
};

/**
 * A tick's answer: the `decisions` message (empty lists left out) plus, when the snapshot had bad
 * entries, `refused` (the entries dropped, as `{ id?, code, message }`) and `omittedErrors`.
 */
function decisionsBody(d: DecisionsFields, refused: readonly EntryError[], omitted: number): Record<string, unknown> {
  const body: Record<string, unknown> = { t: 'decisions', tick: d.tick };
  if (d.basedOn !== undefined) body.basedOn = d.basedOn;
  const actions = decisionActions(d);
  if (actions.length > 0) body.actions = actions;
  const cancels = decisionCancels(d);
  if (cancels.length > 0) body.cancels = cancels;
  const done = decisionDone(d);
  if (done.length > 0) body.done = done;
  if (d.errors !== undefined && d.errors.length > 0) body.errors = d.errors;
  if (refused.length > 0) body.refused = refused;
  if (omitted > 0) body.omittedErrors = omitted;
  return body;
}
