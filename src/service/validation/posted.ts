// What POST /v1/trees/validate does with its body: bytes in (JSON, YAML or MessagePack), parsed and
// validated, an answer out. Runs inside the validation worker (worker.ts), never on the main thread.

import type { NodeCatalog } from '../../bt/catalog.js';
import { parseTreeSource } from '../../bt/library.js';
import { locateProblems, type SourcePositions } from '../../bt/locate.js';
import { checkTree, type ValidationError, type ValidationWarning } from '../../bt/validate.js';
import { DecodeError, decode, ErrorCode, Msg } from '../../protocol/index.js';

/** Most errors (and, separately, warnings) one answer lists; `omittedErrors` counts the rest. */
export const MAX_REPORTED_PROBLEMS = 100;

/** Media types the route reads as text; JSON is told from YAML by the type, or for text/plain by a leading `{`. */
export const TEXT_TYPES = ['application/json', 'text/yaml', 'application/yaml', 'application/x-yaml', 'text/plain'] as const;
const MSGPACK = ['application/msgpack', 'application/x-msgpack'];

/** Default name of a tree validated without one. */
const UNNAMED = 'tree';

/** One validation problem as the HTTP API shows it. */
export interface ProblemView {
  readonly code: string;
  readonly tree: string;
  readonly path: string;
  readonly field: string | null;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

/** The answer: 200 with the problems, or a refusal of the request itself (status, code, message). */
export type ValidateAnswer =
  | {
      readonly ok: true;
      readonly body: { valid: boolean; errors: ProblemView[]; warnings: ProblemView[]; omittedErrors: number; omittedWarnings: number };
    }
  | { readonly ok: false; readonly status: number; readonly code: string; readonly message: string };

/** What validation resolves against: the catalog (plugins included) and the loaded trees' definitions. */
export interface ValidateEnv {
  readonly catalog: NodeCatalog;
  readonly trees: Readonly<Record<string, unknown>>;
}

/** A request about a posted tree: its bytes, its media type, and `?name=` (null when absent). */
export interface PostedTree {
  readonly bytes: Uint8Array;
  readonly contentType: string;
  readonly name: string | null;
}

class Refusal extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * Validates a posted tree. The body is a tree definition itself (`{ root, blackboard? }`), or
 * `{ name?, definition, trees? }` where `trees` maps names to subtrees not loaded yet (they win over
 * loaded trees of the same name) and `definition` may be JSON or YAML text. The tree's name is the
 * wrapper's `name`, else `?name=`, else "tree". Problems carry line and column in the posted text
 * whenever there is one. Never throws.
 */
export function validatePostedTree(env: ValidateEnv, posted: PostedTree): ValidateAnswer {
  try {
    return answer(env, posted);
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, status: err.status, code: err.code, message: err.message };
    throw err;
  }
}

function answer(env: ValidateEnv, posted: PostedTree): ValidateAnswer {
  const type = posted.contentType.split(';')[0]!.trim().toLowerCase();
  const queryName = posted.name;
  if (queryName !== null && queryName.length === 0) throw new Refusal(400, ErrorCode.E_BAD_FIELD, Msg.badField('name', 'expected a non-empty string'));
  let body: unknown;
  let positions: SourcePositions | null = null;
  if (MSGPACK.includes(type)) {
    try {
      body = decode(posted.bytes);
    } catch (err) {
      throw new Refusal(400, ErrorCode.E_PROTOCOL, err instanceof DecodeError ? err.message : 'the body is not valid MessagePack');
    }
  } else if ((TEXT_TYPES as readonly string[]).includes(type)) {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(posted.bytes);
    } catch {
      return parseFailure(queryName ?? UNNAMED, 'the body is not valid UTF-8 text', 1, 1);
    }
    const parsed = parseTreeSource(text, formatOf(type, text));
    if (!parsed.ok) return parseFailure(queryName ?? UNNAMED, parsed.message, parsed.line, parsed.column);
    body = parsed.value;
    positions = parsed.positions;
  } else {
    throw new Refusal(415, ErrorCode.E_PROTOCOL, `content type ${JSON.stringify(type)} is not accepted here; send JSON, YAML (text/yaml) or MessagePack`);
  }

  if (body === null || typeof body !== 'object' || Array.isArray(body) || body instanceof Uint8Array) {
    // Not a map: validation says why, at the file's top level.
    return report(env, queryName ?? UNNAMED, body, {}, positions);
  }
  const map = body as Record<string, unknown>;
  const wrapped = Object.hasOwn(map, 'definition') && !Object.hasOwn(map, 'root');
  if (!wrapped) return report(env, queryName ?? UNNAMED, map, {}, positions);

  const name = map.name !== undefined ? map.name : (queryName ?? UNNAMED);
  if (typeof name !== 'string' || name.length === 0) throw new Refusal(400, ErrorCode.E_BAD_FIELD, Msg.badField('name', 'expected a non-empty string'));
  const extra = map.trees ?? {};
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra)) {
    throw new Refusal(400, ErrorCode.E_BAD_FIELD, Msg.badField('trees', 'expected a map of tree name → definition'));
  }
  let definition = map.definition;
  let inner = positions?.within('definition') ?? null;
  if (typeof definition === 'string') {
    // Text inside the body: its own lines and columns.
    const parsed = parseTreeSource(definition, definition.trimStart().startsWith('{') ? 'json' : 'yaml');
    if (!parsed.ok) return parseFailure(name, parsed.message, parsed.line, parsed.column);
    definition = parsed.value;
    inner = parsed.positions;
  }
  return report(env, name, definition, extra as Record<string, unknown>, inner);
}

function formatOf(type: string, text: string): 'json' | 'yaml' {
  if (type === 'application/json') return 'json';
  if (type === 'text/plain') return text.trimStart().startsWith('{') ? 'json' : 'yaml';
  return 'yaml';
}

function report(env: ValidateEnv, name: string, definition: unknown, others: Record<string, unknown>, positions: SourcePositions | null): ValidateAnswer {
  const lookup = (tree: string): unknown => {
    if (tree === name) return definition;
    if (Object.hasOwn(others, tree)) return others[tree];
    return Object.hasOwn(env.trees, tree) ? env.trees[tree] : undefined;
  };
  const treeNames = [...new Set([name, ...Object.keys(others), ...Object.keys(env.trees)])].toSorted();
  const found = checkTree(name, definition, { catalog: env.catalog, file: name, trees: lookup, treeNames });
  // Positions only for the problems shown: an error-heavy body costs no more than a short one.
  const errors = found.errors.slice(0, MAX_REPORTED_PROBLEMS);
  const warnings = found.warnings.slice(0, MAX_REPORTED_PROBLEMS);
  return {
    ok: true,
    body: {
      valid: found.errors.length === 0,
      errors: (positions === null ? errors : locateProblems(errors, positions)).map(view),
      warnings: (positions === null ? warnings : locateProblems(warnings, positions)).map(view),
      omittedErrors: found.errors.length - errors.length,
      omittedWarnings: found.warnings.length - warnings.length,
    },
  };
}

function parseFailure(name: string, message: string, line: number, column: number): ValidateAnswer {
  const error: ValidationError = { code: 'E_TREE_PARSE', file: name, path: '', message, line, column };
  return { ok: true, body: { valid: false, errors: [view(error)], warnings: [], omittedErrors: 0, omittedWarnings: 0 } };
}

function view(e: ValidationError | ValidationWarning): ProblemView {
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
