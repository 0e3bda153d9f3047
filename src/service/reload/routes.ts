// PUT /v1/trees/:name and DELETE /v1/trees/:name: a tree changed over HTTP (API key required when keys are
// configured: these routes live in the API scope). The change is validated with every loaded tree and
// installed in memory only; the trees folder is never written.

import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { parseTreeSource } from '../../bt/library.js';
import type { ValidationError } from '../../bt/errors.js';
import { ErrorCode, LIMITS } from '../../protocol/index.js';
import { HttpError, respond, sendError } from '../http/http.js';
import type { ChangeResult, LiveTrees } from './live.js';

/** Tree names a PUT may create: they become file-like names everywhere (recordings, logs, the inspector). */
const TREE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

const TEXT_TYPES = ['application/json', 'text/yaml', 'application/yaml', 'application/x-yaml', 'text/plain'];

/** The routes; `maxBytes` limits a body (CANOPY_MAX_VALIDATE_BYTES, like POST /v1/trees/validate). */
export const reloadRoutes: FastifyPluginAsync<{ live: LiveTrees; maxBytes: number }> = async (app, { live, maxBytes }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxBytes }, (_request, body, done) => done(null, body));
  app.setErrorHandler((error: FastifyError | HttpError, request, reply) => {
    if (!(error instanceof HttpError) && error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return sendError(new HttpError(413, ErrorCode.E_LIMIT, `the body is larger than the ${maxBytes} bytes a tree may have here (CANOPY_MAX_VALIDATE_BYTES)`), request, reply);
    }
    return sendError(error, request, reply);
  });

  app.put<{ Params: { name: string } }>('/v1/trees/:name', async (request, reply) => {
    const name = checkName(request.params.name);
    const type = (request.headers['content-type'] ?? 'application/json').split(';')[0]!.trim().toLowerCase();
    if (!TEXT_TYPES.includes(type)) throw new HttpError(415, ErrorCode.E_PROTOCOL, `content type ${JSON.stringify(type)} is not accepted here; send JSON or YAML (text/yaml)`);
    const body = request.body instanceof Uint8Array ? request.body : new Uint8Array(0);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body);
    } catch {
      throw new HttpError(400, ErrorCode.E_BAD_FIELD, 'the body is not valid UTF-8 text');
    }
    const format = type === 'application/json' || (type === 'text/plain' && text.trimStart().startsWith('{')) ? 'json' : 'yaml';
    const parsed = parseTreeSource(text, format);
    if (!parsed.ok) {
      return respond(request, reply, refusal([{ code: 'E_TREE_PARSE', file: name, path: '', message: parsed.message, line: parsed.line, column: parsed.column }]), 422);
    }
    return answer(await live.put(name, parsed.value), request, reply, name);
  });

  app.delete<{ Params: { name: string } }>('/v1/trees/:name', async (request, reply) => {
    const name = checkName(request.params.name);
    if (live.version(name) === undefined) throw new HttpError(404, ErrorCode.E_UNKNOWN_TREE, `no tree '${name}' is loaded`);
    return answer(await live.remove(name), request, reply, name);
  });

  function answer(result: ChangeResult, request: Parameters<typeof respond>[0], reply: Parameters<typeof respond>[1], name: string) {
    if (!result.ok) return respond(request, reply, refusal(result.errors), 422);
    const v = live.version(name);
    return respond(request, reply, {
      tree: name,
      version: v?.version ?? null,
      hash: v?.hash ?? null,
      removed: v === undefined,
      // In memory only: the file in the trees folder (if any) is not written, and a restart loads the folder.
      persisted: false,
      changed: result.changed,
      policy: live.policy,
    });
  }
};

function checkName(name: string): string {
  if (!TREE_NAME.test(name) || name.length > LIMITS.maxTreeNameLength) {
    throw new HttpError(400, ErrorCode.E_BAD_FIELD, `name: expected letters, digits, '_', '-' or '.' (starting with a letter or digit), at most ${LIMITS.maxTreeNameLength} characters`);
  }
  return name;
}

/** The 422 body of a refused change: nothing was installed. */
function refusal(errors: readonly ValidationError[]) {
  return {
    code: ErrorCode.E_RELOAD,
    message: `the change is invalid and was not installed (${errors.length} error${errors.length === 1 ? '' : 's'}); the trees in use are unchanged`,
    errors: errors.map(problemView),
  };
}

/** One problem as /v1/trees and the routes show it. */
export function problemView(e: ValidationError): Record<string, unknown> {
  return {
    code: e.code,
    file: e.file ?? null,
    path: e.path,
    message: e.message,
    ...(e.line !== undefined ? { line: e.line } : {}),
    ...(e.column !== undefined ? { column: e.column } : {}),
  };
}
