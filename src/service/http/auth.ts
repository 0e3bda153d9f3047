// API keys: checked on every request of the API scope, WebSocket upgrades included, so a client
// without a key gets HTTP 401 and never a socket.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';

/** The key a request carries: `Authorization: Bearer <key>`, else `?key=` (browsers cannot set headers on a WebSocket). */
export function requestKey(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match !== null) return match[1];
  }
  const query = request.query as Record<string, unknown> | undefined;
  const key = query?.key;
  return typeof key === 'string' && key.length > 0 ? key : undefined;
}

/**
 * An onRequest hook refusing requests without one of `keys` (401, `E_UNAUTHORIZED`). Keys are
 * compared as SHA-256 digests in constant time, so neither a key's length nor its prefix leaks.
 */
export function apiKeyHook(keys: readonly string[]): onRequestAsyncHookHandler {
  const digests = keys.map(digest);
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const key = requestKey(request);
    if (key !== undefined) {
      const given = digest(key);
      let ok = false;
      for (const d of digests) ok = timingSafeEqual(d, given) || ok;
      if (ok) return;
    }
    await reply
      .code(401)
      .header('www-authenticate', 'Bearer')
      .send({ code: 'E_UNAUTHORIZED', message: key === undefined ? 'an API key is required: send Authorization: Bearer <key>' : 'the API key is not valid' });
  };
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
