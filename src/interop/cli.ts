// `canopy convert`: BehaviorTree.CPP / Groot2 XML ⇄ Canopy tree files. The command line (commander) lives in
// src/cli; this is the testable function behind it: file I/O, messages, exit codes.

import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { stringify } from 'yaml';
import { NodeCatalog, TreeLibrary, formatErrors, parseTreeText, walkDefinition, type TreeDefinition, type ValidationError } from '../bt/index.js';
import { formatInteropError } from './errors.js';
import { exportXml } from './export.js';
import { importXml } from './import.js';

/** Arguments of `canopy convert`. */
export interface ConvertArgs {
  /** `--to canopy`: an XML file. `--to xml`: a tree file (`.json`, `.yaml`, `.yml`; its subtrees are read from the same folder) or a trees folder. */
  readonly input: string;
  /**
   * `--to canopy`: a folder (one file per tree, created if missing), or a `.json`/`.yaml` file when the XML holds one tree;
   * default: print the one tree to stdout. `--to xml`: the XML file; default: stdout.
   */
  readonly output?: string;
  readonly to: 'canopy' | 'xml';
  /** Tree file format for `--to canopy` (default json, or the output file's extension). */
  readonly format?: 'json' | 'yaml';
  /** Node kinds with plugins loaded (default: built-in kinds). */
  readonly catalog?: NodeCatalog;
  /** Where results and errors go (default: process.stdout / process.stderr). */
  readonly stdout?: (text: string) => void;
  readonly stderr?: (text: string) => void;
}

/** Exit codes: 0 converted, 1 the input has errors (printed, one per line, file:line:column), 2 usage or I/O problem. */
export async function runConvert(args: ConvertArgs): Promise<number> {
  const out = args.stdout ?? ((t: string) => void process.stdout.write(t));
  const err = args.stderr ?? ((t: string) => void process.stderr.write(t));
  try {
    return args.to === 'canopy' ? await toCanopy(args, out, err) : await toXml(args, out, err);
  } catch (e) {
    err(`canopy convert: ${(e as Error).message}\n`);
    return 2;
  }
}

async function toCanopy(args: ConvertArgs, out: (t: string) => void, err: (t: string) => void): Promise<number> {
  const text = await readFile(args.input, 'utf8');
  const result = importXml(text, {
    file: args.input,
    ...(args.catalog ? { catalog: args.catalog } : {}),
    readFile: (path) => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return undefined;
      }
    },
  });
  if (!result.ok) {
    err(`${result.errors.map(formatInteropError).join('\n')}\n`);
    return 1;
  }
  const names = Object.keys(result.trees);
  const outExt = args.output === undefined ? '' : extname(args.output);
  const fileTarget = ['.json', '.yaml', '.yml'].includes(outExt);
  const format = args.format ?? (outExt === '.yaml' || outExt === '.yml' ? 'yaml' : 'json');
  const render = (def: TreeDefinition): string => (format === 'yaml' ? stringify(def, { lineWidth: 0 }) : `${JSON.stringify(def, null, 2)}\n`);
  if (args.output === undefined || fileTarget) {
    if (names.length !== 1) {
      err(`canopy convert: ${args.input} holds ${names.length} trees (${names.join(', ')}); give --output <folder> to write one file per tree\n`);
      return 2;
    }
    if (args.output === undefined) out(render(result.trees[names[0]!]!));
    else await writeFile(args.output, render(result.trees[names[0]!]!));
    return 0;
  }
  await mkdir(args.output, { recursive: true });
  for (const name of names) await writeFile(join(args.output, `${name}.${format}`), render(result.trees[name]!));
  out(`wrote ${names.length} tree${names.length === 1 ? '' : 's'} to ${args.output}: ${names.join(', ')}\n`);
  return 0;
}

async function toXml(args: ConvertArgs, out: (t: string) => void, err: (t: string) => void): Promise<number> {
  const catalog = args.catalog ?? new NodeCatalog();
  let defs: Record<string, TreeDefinition>;
  let main: string | undefined;
  if ((await stat(args.input)).isDirectory()) {
    const loaded = await TreeLibrary.loadFolder(args.input, { catalog });
    if (!loaded.ok) return failed(loaded.errors, err);
    defs = Object.fromEntries(loaded.library.names().map((n) => [n, loaded.library.definition(n)!]));
  } else {
    const loaded = await loadWithSubtrees(args.input, catalog);
    if (!loaded.ok) return failed(loaded.errors, err);
    defs = loaded.defs;
    main = loaded.main;
  }
  const xml = exportXml(defs, { catalog, ...(main ? { main } : {}) });
  if (args.output === undefined) out(xml);
  else await writeFile(args.output, xml);
  return 0;
}

function failed(errors: readonly ValidationError[], err: (t: string) => void): number {
  err(`${formatErrors(errors)}\n`);
  return 1;
}

/** Reads one tree file and, transitively, the files of the subtrees it names (same folder), then validates them together. */
async function loadWithSubtrees(file: string, catalog: NodeCatalog): Promise<{ ok: true; defs: Record<string, TreeDefinition>; main: string } | { ok: false; errors: ValidationError[] }> {
  const dir = dirname(file);
  const main = basename(file, extname(file));
  const raw: Record<string, unknown> = {};
  const files: Record<string, string> = {};
  const errors: ValidationError[] = [];
  const pending: [string, string][] = [[main, file]];
  while (pending.length > 0) {
    const [name, path] = pending.pop()!;
    if (name in raw) continue;
    const parsed = parseTreeText(await readFile(path, 'utf8'), extname(path) === '.json' ? 'json' : 'yaml');
    files[name] = path;
    if (!parsed.ok) {
      errors.push({ code: 'E_TREE_PARSE', file: path, path: '', message: parsed.message, line: parsed.line, column: parsed.column });
      raw[name] = null;
      continue;
    }
    raw[name] = parsed.value;
    const root = (parsed.value as { root?: unknown } | null)?.root;
    walkDefinition(root, (n) => {
      const tree = n['tree'];
      if (n.type === 'subtree' && typeof tree === 'string' && !(tree in raw)) {
        const found = findTreeFile(dir, tree);
        if (found !== undefined) pending.push([tree, found]);
      }
    });
  }
  if (errors.length > 0) return { ok: false, errors };
  const lib = TreeLibrary.fromDefinitions(raw, { catalog, files });
  if (!lib.ok) return { ok: false, errors: lib.errors };
  return { ok: true, defs: Object.fromEntries(lib.library.names().map((n) => [n, lib.library.definition(n)!])), main };
}

function findTreeFile(dir: string, name: string): string | undefined {
  for (const ext of ['.json', '.yaml', '.yml']) {
    const path = join(dir, `${name}${ext}`);
    try {
      readFileSync(path);
      return path;
    } catch {
      // try the next extension
    }
  }
  return undefined;
}
