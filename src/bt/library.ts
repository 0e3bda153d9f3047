// The tree library: every tree of a folder (or given definitions) parsed, validated and compiled once.
// A library is immutable; reloading trees builds a new one, so agents keep the CompiledTree they started on.

import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { NodeCatalog } from './catalog.js';
import type { TreeDefinition } from './definition.js';
import { TreeMsg, type ValidationError, type ValidationWarning } from './errors.js';
import { locateProblems, SourcePositions } from './locate.js';

export { formatError, formatErrors } from './errors.js';
import { compileValidatedTree, type CompiledTree } from './program.js';
import { checkTree } from './validate.js';

/**
 * A library, or every error that kept it from loading (all files, not only the first bad one); with
 * the warnings of every tree either way. Problems of files carry `line` and `column`: print them
 * with formatError (`trees/guard.json:12:5: root.children[2]: … [CODE]`).
 */
export type LibraryResult =
  | { readonly ok: true; readonly library: TreeLibrary; readonly warnings: ValidationWarning[] }
  | { readonly ok: false; readonly errors: ValidationError[]; readonly warnings: ValidationWarning[] };

/** Extensions read by `loadFolder`; the file name without extension is the tree name. */
export const TREE_FILE_EXTENSIONS: readonly string[] = ['.json', '.yaml', '.yml'];
/** Files of a trees folder that are not trees (the editors' JSON Schema lives beside the trees). */
const NOT_TREES: ReadonlySet<string> = new Set(['schema.json']);

interface Entry {
  readonly definition: TreeDefinition;
  readonly compiled: CompiledTree;
  readonly file: string;
}

/**
 * Validated, compiled trees by name. Every tree was validated with its subtrees and compiled once;
 * `get` hands out the same immutable CompiledTree to every agent.
 */
export class TreeLibrary {
  /** The node kinds and services the trees were validated and compiled with. */
  readonly catalog: NodeCatalog;
  private readonly entries: ReadonlyMap<string, Entry>;

  private constructor(catalog: NodeCatalog, entries: ReadonlyMap<string, Entry>) {
    this.catalog = catalog;
    this.entries = entries;
  }

  /**
   * Validates every definition (each one's subtrees resolved among `defs`), then compiles each tree.
   * Returns all validation errors if any tree is invalid; no tree is compiled then.
   * `files` names the file of each tree in error messages (default: the tree name).
   */
  static fromDefinitions(defs: Readonly<Record<string, unknown>>, opts: { catalog?: NodeCatalog; files?: Readonly<Record<string, string>> } = {}): LibraryResult {
    const map = new Map<string, unknown>(Object.entries(defs));
    const files = new Map<string, string>(Object.entries(opts.files ?? {}));
    return TreeLibrary.build(map, files, opts.catalog ?? new NodeCatalog(), new Set(), [], new Map());
  }

  /**
   * Loads every `*.json`, `*.yaml` and `*.yml` file of `dir` (not its subfolders; `schema.json` and
   * dot-files are skipped). The file name without extension is the tree name. Parse errors carry
   * line and column; error `file`s are `dir` joined with the file name. Rejects only when the
   * folder or a file cannot be read at all.
   */
  static async loadFolder(dir: string, opts: { catalog?: NodeCatalog } = {}): Promise<LibraryResult> {
    const entries = await readdir(dir, { withFileTypes: true });
    const byName = new Map<string, string[]>();
    for (const entry of entries.toSorted((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const ext = extname(entry.name);
      if (!TREE_FILE_EXTENSIONS.includes(ext) || NOT_TREES.has(entry.name) || entry.name.startsWith('.')) continue;
      if (!(entry.isFile() || (entry.isSymbolicLink() && (await stat(join(dir, entry.name))).isFile()))) continue;
      const name = entry.name.slice(0, -ext.length);
      byName.set(name, [...(byName.get(name) ?? []), entry.name]);
    }
    const defs = new Map<string, unknown>();
    const files = new Map<string, string>();
    const broken = new Set<string>();
    const errors: ValidationError[] = [];
    const positions = new Map<string, SourcePositions>();
    for (const [name, fileNames] of [...byName].toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const file = join(dir, fileNames[0]!);
      files.set(name, file);
      if (fileNames.length > 1) {
        errors.push({ code: 'E_TREE_DUPLICATE', file, path: '', message: TreeMsg.duplicateTree(name, fileNames) });
        broken.add(name);
        continue;
      }
      const parsed = parseTreeSource(await readFile(file, 'utf8'), extname(file) === '.json' ? 'json' : 'yaml');
      if (!parsed.ok) {
        errors.push({ code: 'E_TREE_PARSE', file, path: '', message: parsed.message, line: parsed.line, column: parsed.column });
        broken.add(name);
        continue;
      }
      defs.set(name, parsed.value);
      positions.set(name, parsed.positions);
    }
    return TreeLibrary.build(defs, files, opts.catalog ?? new NodeCatalog(), broken, errors, positions);
  }

  /**
   * Validates every tree of `defs` (`broken` names exist but could not be read: subtrees may name
   * them without an "unknown tree" error), then compiles them all if nothing is wrong. Problems of
   * trees read from text get their line and column from `positions`.
   */
  private static build(
    defs: Map<string, unknown>,
    files: Map<string, string>,
    catalog: NodeCatalog,
    broken: ReadonlySet<string>,
    errors: ValidationError[],
    positions: ReadonlyMap<string, SourcePositions>,
  ): LibraryResult {
    const names = [...defs.keys()].toSorted();
    const treeNames = [...new Set([...names, ...broken])].toSorted();
    const lookup = (t: string): unknown => (defs.has(t) ? defs.get(t) : broken.has(t) ? null : undefined);
    const warnings: ValidationWarning[] = [];
    for (const name of names) {
      const found = checkTree(name, defs.get(name), { catalog, file: files.get(name) ?? name, trees: lookup, treeNames, cyclesOncePerLibrary: true });
      const at = positions.get(name);
      errors.push(...(at === undefined ? found.errors : locateProblems(found.errors, at)));
      warnings.push(...(at === undefined ? found.warnings : locateProblems(found.warnings, at)));
    }
    if (errors.length > 0) return { ok: false, errors, warnings };
    // Valid definitions hold JSON values only, so they clone; frozen, they can be handed out safely.
    const frozen = new Map<string, TreeDefinition>(names.map((n) => [n, deepFreeze(structuredClone(defs.get(n)) as TreeDefinition)]));
    const entries = new Map<string, Entry>();
    for (const name of names) {
      entries.set(name, { definition: frozen.get(name)!, compiled: compileValidatedTree(name, (t) => frozen.get(t), catalog), file: files.get(name) ?? name });
    }
    return { ok: true, library: new TreeLibrary(catalog, entries), warnings };
  }

  /** Tree names, sorted. */
  names(): string[] {
    return [...this.entries.keys()];
  }

  /** The compiled tree (shared by every agent on it), or undefined for an unknown name. */
  get(name: string): CompiledTree | undefined {
    return this.entries.get(name)?.compiled;
  }

  /** The validated definition (deeply frozen), e.g. for `GET /v1/trees/:name`. */
  definition(name: string): TreeDefinition | undefined {
    return this.entries.get(name)?.definition;
  }

  /** The file the tree came from (for `fromDefinitions`: the given file name, or the tree name). */
  file(name: string): string | undefined {
    return this.entries.get(name)?.file;
  }
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object') {
    for (const inner of Object.values(v)) deepFreeze(inner);
    Object.freeze(v);
  }
  return v;
}

/** A parsed tree file, or where and why parsing stopped (1-based line and column). */
export type ParsedTreeText = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string; readonly line: number; readonly column: number };

/**
 * Parses a tree file's text as JSON or YAML. JSON is checked strictly (no comments, no trailing
 * commas, no repeated keys) so that every mistake gets a line, a column and a plain message.
 */
export function parseTreeText(text: string, format: 'json' | 'yaml'): ParsedTreeText {
  const parsed = parseTreeSource(text, format);
  return parsed.ok ? { ok: true, value: parsed.value } : parsed;
}

/** A parsed tree text with the positions of its parts (for errors' line and column), or why it does not parse. */
export type ParsedTreeSource =
  | { readonly ok: true; readonly value: unknown; readonly positions: SourcePositions }
  | { readonly ok: false; readonly message: string; readonly line: number; readonly column: number };

/** Like {@link parseTreeText}, keeping the positions of the parsed text (JSON's are found only if asked for). */
export function parseTreeSource(text: string, format: 'json' | 'yaml'): ParsedTreeSource {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  if (format === 'json') {
    const problem = jsonSyntaxProblem(source);
    if (problem !== null) return { ok: false, message: TreeMsg.notJson(problem.message), ...lineColumn(source, problem.offset) };
    return { ok: true, value: JSON.parse(source) as unknown, positions: SourcePositions.of(source) };
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const first = doc.errors[0];
  if (first !== undefined) {
    const at = lineCounter.linePos(first.pos[0]);
    const why = first.code === 'MULTIPLE_DOCS' ? "a tree file holds one YAML document; remove the second '---'" : first.message;
    return { ok: false, message: TreeMsg.notYaml(why), line: at.line, column: at.col };
  }
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: 100 }) as unknown, positions: SourcePositions.of(source, { doc, lines: lineCounter }) };
  } catch (err) {
    return { ok: false, message: TreeMsg.notYaml(err instanceof Error ? err.message : String(err)), line: 1, column: 1 };
  }
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/** Deepest nesting of JSON arrays and objects accepted in a tree file. */
const MAX_JSON_NESTING = 1000;

class JsonSyntaxError extends Error {
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(message);
    this.offset = offset;
  }
}

/** The first syntax problem of a JSON text (or a repeated key), or null if JSON.parse will accept it. */
function jsonSyntaxProblem(s: string): { message: string; offset: number } | null {
  let i = 0;
  const fail = (message: string, at = i): never => {
    throw new JsonSyntaxError(message, at);
  };
  const space = (): void => {
    for (; i < s.length; i++) {
      const c = s[i];
      if (c === '/' && (s[i + 1] === '/' || s[i + 1] === '*')) fail('comments are not allowed in JSON');
      if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r') return;
    }
  };
  const string = (): string => {
    const start = i++;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 34) {
        i++;
        return JSON.parse(s.slice(start, i)) as string;
      }
      if (c === 92) {
        const e = s[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(s.slice(i + 2, i + 6))) fail('\\u must be followed by four hex digits');
          i += 5;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else fail(`invalid escape '\\${e ?? ''}' in a string`);
      } else if (c === 10 || c === 13) fail('unterminated string: a string must end on the line it starts');
      else if (c < 0x20) fail('control character in a string; escape it');
    }
    return fail('unterminated string', start);
  };
  const value = (depth: number): void => {
    space();
    const c = s[i];
    if (c === undefined) fail('unexpected end of file; expected a value');
    else if (c === '{' || c === '[') {
      if (depth >= MAX_JSON_NESTING) fail(`values nest deeper than ${MAX_JSON_NESTING} levels`);
      if (c === '{') object(depth + 1);
      else array(depth + 1);
    } else if (c === '"') string();
    else if (c === "'") fail('strings must use double quotes');
    else if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
      m.lastIndex = i;
      const found = m.exec(s);
      if (found === null || /[0-9.eE+-]/.test(s[m.lastIndex] ?? '')) fail('invalid number');
      i = m.lastIndex;
    } else {
      const word = ['true', 'false', 'null'].find((w) => s.startsWith(w, i));
      if (word === undefined) fail(`unexpected '${c}'; expected a value`);
      else i += word.length;
    }
  };
  const object = (depth: number): void => {
    i++;
    space();
    if (s[i] === '}') {
      i++;
      return;
    }
    const keys = new Set<string>();
    for (;;) {
      space();
      if (s[i] !== '"') {
        if (s[i] === '}') fail("trailing comma: remove the ',' before '}'");
        fail(i >= s.length ? 'unexpected end of file; expected a property name' : 'expected a property name in double quotes');
      }
      const keyStart = i;
      const key = string();
      if (keys.has(key)) fail(`duplicate key ${JSON.stringify(key)}`, keyStart);
      keys.add(key);
      space();
      if (s[i] !== ':') fail(`expected ':' after the property name ${JSON.stringify(key)}`);
      i++;
      value(depth);
      space();
      if (s[i] === ',') i++;
      else if (s[i] === '}') {
        i++;
        return;
      } else fail(i >= s.length ? "unexpected end of file; expected ',' or '}'" : "expected ',' or '}' after a property value");
    }
  };
  const array = (depth: number): void => {
    i++;
    space();
    if (s[i] === ']') {
      i++;
      return;
    }
    for (;;) {
      space();
      if (s[i] === ']') fail("trailing comma: remove the ',' before ']'");
      value(depth);
      space();
      if (s[i] === ',') i++;
      else if (s[i] === ']') {
        i++;
        return;
      } else fail(i >= s.length ? "unexpected end of file; expected ',' or ']'" : "expected ',' or ']' after a list item");
    }
  };
  try {
    value(0);
    space();
    if (i < s.length) fail('unexpected text after the end of the JSON value');
    return null;
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { message: err.message, offset: err.offset };
    throw err;
  }
}
