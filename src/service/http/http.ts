// What every HTTP route of the API shares: MessagePack bodies beside JSON (the reply uses the
// request's format), errors as `{ code, message }` with the protocol's codes, and HTTP-only codes.

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DecodeError, ErrorCode, HttpErrorCode, decode, encode, wireDeep } from '../../protocol/index.js';

/** MessagePack media types accepted and produced. */
export const MSGPACK_TYPES = ['application/msgpack', 'application/x-msgpack'] as const;

// The HTTP-only codes live in the protocol's one error catalog.
export { HttpErrorCode } from '../../protocol/index.js';

/** An error a route answers with `status` and `{ code, message }`. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: ErrorCode | HttpErrorCode;
  constructor(status: number, code: ErrorCode | HttpErrorCode, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** True when the reply should be MessagePack: a MessagePack body, or an Accept asking for it. */
export function wantsMsgpack(request: FastifyRequest): boolean {
  const type = request.headers['content-type'];
  if (typeof type === 'string' && MSGPACK_TYPES.some((t) => type.startsWith(t))) return true;
  const accept = request.headers.accept;
  return typeof accept === 'string' && MSGPACK_TYPES.some((t) => accept.includes(t));
}

/** Sends `body` as JSON or MessagePack (integers wider than 32 bits as int64), as the request asked. */
export function respond(request: FastifyRequest, reply: FastifyReply, body: unknown, status = 200): FastifyReply {
  reply.code(status);
  if (wantsMsgpack(request)) return reply.type(MSGPACK_TYPES[0]).send(encode(wireDeep(body)));
  return reply.send(body);
}

/**
 * Sets up a scope: the MessagePack body parser (decoded by the protocol module, the one place bytes
 * become values) and an error handler answering `{ code, message }` in the request's format.
 */
export function setUpBodies(app: FastifyInstance, bodyLimit: number): void {
  app.addContentTypeParser(MSGPACK_TYPES as unknown as string[], { parseAs: 'buffer', bodyLimit }, (_request, body, done) => {
    try {
      done(null, decode(body as Buffer));
    } catch (err) {
      const message = err instanceof DecodeError ? err.message : 'the body is not valid MessagePack';
      done(new HttpError(400, ErrorCode.E_PROTOCOL, message), undefined);
    }
  });
  app.setErrorHandler(sendError);
}

/** The error handler of every scope: `{ code, message }` in the request's format; a 5xx is logged, its details kept. */
export function sendError(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof HttpError) return respond(request, reply, { code: error.code, message: error.message }, error.status);
  const status = error.statusCode ?? 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'request failed');
    return respond(request, reply, { code: ErrorCode.E_INTERNAL, message: 'internal error; the service logged the details' }, 500);
  }
  return respond(request, reply, { code: codeFor(error), message: error.message }, status);
}

/** fastify's own 4xx errors in the protocol's terms. */
function codeFor(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return ErrorCode.E_LIMIT;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ErrorCode.E_PROTOCOL;
    default:
      return error.statusCode === 401 ? HttpErrorCode.E_UNAUTHORIZED : ErrorCode.E_BAD_FIELD;
  }
}

/** A request body as a map (an absent body is an empty map); anything else is E_PROTOCOL. */
export function bodyMap(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body) || body instanceof Uint8Array) {
    throw new HttpError(400, ErrorCode.E_PROTOCOL, 'the body must be a map (a JSON object or a MessagePack map)');
  }
  return body as Record<string, unknown>;
}
