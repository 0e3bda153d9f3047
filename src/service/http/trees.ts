// The loaded trees as the service shows them (GET /v1/trees, GET /v1/trees/:name), validation of a
// tree before it is deployed (POST /v1/trees/validate), and loading the tree folder at start-up.

import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import { formatError, type TreeLibrary } from '../../bt/library.js';
import { ErrorCode, Msg } from '../../protocol/index.js';
import { HttpError, respond, sendError } from './http.js';
import { loadTrees } from '../pool/load.js';
import type { ValidationWorker } from '../validation/runner.js';
import type { LiveTrees } from '../reload/live.js';
import { problemView } from '../reload/routes.js';

/** Start-up cannot go on: the message lists every problem, one per line. Exit code 1. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/**
 * Registers the plugins of `plugins` (if any) in a fresh catalog and loads the tree folder with it:
 * the library the HTTP routes show and validate against, and the agent pool's main thread uses.
 * @throws {StartupError} listing every invalid tree (formatErrors), or why a plugin or the folder failed.
 */
export async function loadLibrary(trees: string, plugins: string | null, logger?: Logger): Promise<TreeLibrary> {
  const loaded = await loadTrees(trees, plugins ?? undefined);
  if (!loaded.ok) throw new StartupError(loaded.error);
  // Warnings do not stop start-up: each is logged once, compiler-style, with its file, line and column.
  for (const w of loaded.warnings) logger?.warn({ code: w.code, file: w.file, path: w.path, line: w.line, column: w.column }, formatError(w));
  return loaded.library;
}

/** GET /v1/trees, GET /v1/trees/:name, POST /v1/trees/validate. `live`: the trees in use now (they change on reloads). */
export const treeRoutes: FastifyPluginAsync<{ live: LiveTrees; watch: boolean; validation: ValidationWorker; maxValidateBytes: number }> = async (
  app,
  { live, watch, validation, maxValidateBytes },
) => {
  app.get('/v1/trees', async (request, reply) => {
    const library = live.library;
    const trees = library.names().map((name) => {
      const v = live.version(name);
      const def = library.definition(name);
      return {
        name,
        description: def?.description ?? null,
        blackboard: Object.keys(def?.blackboard ?? {}),
        nodes: library.get(name)?.nodeCount ?? 0,
        // The observation fields the tree's expressions read, subtrees included.
        reads: library.get(name)?.observed ?? { self: [], world: [], dynamic: [] },
        // Hot reload (docs/reload.md): the installed version, and the errors of the last refused change about it.
        version: v?.version ?? 1,
        hash: v?.hash ?? library.get(name)?.hash ?? null,
        errors: live.errorsOf(name).map(problemView),
      };
    });
    const reload = { watch, policy: live.policy, last: live.lastChange, errors: live.lastErrors.map(problemView) };
    return respond(request, reply, { trees, reload });
  });

  app.get<{ Params: { name: string } }>('/v1/trees/:name', async (request, reply) => {
    const def = live.library.definition(request.params.name);
    if (def === undefined) throw new HttpError(404, ErrorCode.E_UNKNOWN_TREE, Msg.unknownTree(request.params.name));
    return respond(request, reply, def);
  });

  // Its own scope: the raw body, whatever its type, goes to the validation thread as bytes (parsing
  // happens there too), under a limit of its own.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxValidateBytes }, (_request, body, done) => done(null, body));
    scope.setErrorHandler((error: FastifyError | HttpError, request, reply) => {
      if (!(error instanceof HttpError) && error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        const message = `the body is larger than the ${maxValidateBytes} bytes a tree may have here (CANOPY_MAX_VALIDATE_BYTES); split it into subtrees`;
        return sendError(new HttpError(413, ErrorCode.E_LIMIT, message), request, reply);
      }
      return sendError(error, request, reply);
    });
    scope.post<{ Querystring: { name?: string } }>('/v1/trees/validate', async (request, reply) => {
      const body = request.body;
      const bytes = body instanceof Uint8Array ? body : new Uint8Array(0);
      const contentType = request.headers['content-type'] ?? 'text/plain';
      const name = typeof request.query.name === 'string' ? request.query.name : null;
      const answer = await validation.validate({ bytes, contentType, name });
      if (!answer.ok) throw new HttpError(answer.status, answer.code as ErrorCode, answer.message);
      return respond(request, reply, answer.body);
    });
  });
};
