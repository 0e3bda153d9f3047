// The loaded trees as the service shows them (GET /v1/trees, GET /v1/trees/:name), validation of a
// tree before it is deployed (POST /v1/trees/validate), and loading the tree folder at start-up.

import type { FastifyPluginAsync } from 'fastify';
import { type TreeLibrary, parseTreeText } from '../bt/library.js';
import { validateTree, type ValidationError } from '../bt/validate.js';
import { ErrorCode, Msg } from '../protocol/index.js';
import { bodyMap, HttpError, respond } from './http.js';
import { loadTrees } from './pool/load.js';

/** Start-up cannot go on: the message lists every problem, one per line. Exit code 1. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/**
 * Registers the plugins of `plugins` (if any) in a fresh catalog and loads the tree folder with it:
 * the library the HTTP routes show and validate against, and the agent pool's main thread uses.
 * @throws {StartupError} listing every invalid tree (formatErrors), or why a plugin or the folder failed.
 */
export async function loadLibrary(trees: string, plugins: string | null): Promise<TreeLibrary> {
  const loaded = await loadTrees(trees, plugins ?? undefined);
  if (!loaded.ok) throw new StartupError(loaded.error);
  return loaded.library;
}

/** One validation error as the HTTP API shows it. */
export interface ValidationErrorView {
  readonly code: string;
  readonly tree: string;
  readonly path: string;
  readonly field: string | null;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

function view(e: ValidationError): ValidationErrorView {
  return {
    code: e.code,
    tree: e.file,
    path: e.path,
    field: e.field ?? null,
    message: e.message,
    ...(e.line !== undefined ? { line: e.line } : {}),
    ...(e.column !== undefined ? { column: e.column } : {}),
  };
}

/** Default name of a tree validated without one. */
const UNNAMED = 'tree';

/**
 * Validates a tree posted to /v1/trees/validate. The body is either a tree definition itself
 * (`{ root, blackboard? }`), or `{ name?, definition, trees? }` where `trees` maps names to
 * definitions of subtrees not loaded yet (they win over loaded trees of the same name); `definition`
 * may be YAML or JSON text. Subtrees are otherwise resolved among the loaded trees.
 */
export function validatePosted(library: TreeLibrary, body: Record<string, unknown>): { valid: boolean; errors: ValidationErrorView[] } {
  const wrapped = 'definition' in body && !('root' in body);
  const name = wrapped && body.name !== undefined ? body.name : UNNAMED;
  if (typeof name !== 'string' || name.length === 0) throw new HttpError(400, ErrorCode.E_BAD_FIELD, Msg.badField('name', 'expected a non-empty string'));
  let definition: unknown = wrapped ? body.definition : body;
  if (typeof definition === 'string') {
    const parsed = parseTreeText(definition, definition.trimStart().startsWith('{') ? 'json' : 'yaml');
    if (!parsed.ok) {
      return { valid: false, errors: [view({ code: 'E_TREE_PARSE', file: name, path: '', message: parsed.message, line: parsed.line, column: parsed.column })] };
    }
    definition = parsed.value;
  }
  const extra = wrapped ? (body.trees ?? {}) : {};
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra)) {
    throw new HttpError(400, ErrorCode.E_BAD_FIELD, Msg.badField('trees', 'expected a map of tree name → definition'));
  }
  const others = extra as Record<string, unknown>;
  const lookup = (tree: string): unknown => {
    if (tree === name) return definition;
    if (Object.hasOwn(others, tree)) return others[tree];
    return library.definition(tree);
  };
  const treeNames = [...new Set([name, ...Object.keys(others), ...library.names()])].toSorted();
  const errors = validateTree(name, definition, { catalog: library.catalog, file: name, trees: lookup, treeNames });
  return { valid: errors.length === 0, errors: errors.map(view) };
}

/** GET /v1/trees, GET /v1/trees/:name, POST /v1/trees/validate. */
export const treeRoutes: FastifyPluginAsync<{ library: TreeLibrary }> = async (app, { library }) => {
  app.get('/v1/trees', async (request, reply) => {
    const trees = library.names().map((name) => {
      const def = library.definition(name);
      return {
        name,
        description: def?.description ?? null,
        blackboard: Object.keys(def?.blackboard ?? {}),
        nodes: library.get(name)?.nodeCount ?? 0,
        // The observation fields the tree's expressions read, subtrees included.
        reads: library.get(name)?.observed ?? { self: [], world: [], dynamic: [] },
      };
    });
    return respond(request, reply, { trees });
  });

  app.get<{ Params: { name: string } }>('/v1/trees/:name', async (request, reply) => {
    const def = library.definition(request.params.name);
    if (def === undefined) throw new HttpError(404, ErrorCode.E_UNKNOWN_TREE, Msg.unknownTree(request.params.name));
    return respond(request, reply, def);
  });

  app.post('/v1/trees/validate', async (request, reply) => {
    return respond(request, reply, validatePosted(library, bodyMap(request)));
  });
};
