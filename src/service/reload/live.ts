// The service's live trees: the library every part reads now, each tree's version (content hash + counter)
// and last errors, and the one way to change them (a folder reload, PUT, DELETE): the whole set is
// validated first; only a valid change is installed, on the pool and everywhere else, at once.

import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { Counter } from 'prom-client';
import type { Logger } from 'pino';
import { formatError, parseTreeSource, TREE_FILE_EXTENSIONS, TreeLibrary } from '../../bt/library.js';
import type { ValidationError } from '../../bt/errors.js';
import { locateProblems, type SourcePositions } from '../../bt/locate.js';
import type { Metrics } from '../metrics.js';
import type { AgentPool, ReloadOutcome, ReloadPolicy } from '../pool/index.js';

/** One tree's installed version. `version` counts installs of a new hash since start-up (1 at start-up). */
export interface TreeVersion {
  readonly version: number;
  /** The compiled tree's fingerprint (the tree with its subtrees). */
  readonly hash: string;
  /** Where the installed definition came from. */
  readonly source: 'folder' | 'http';
  readonly updatedAt: string;
}

/** One tree of a change that was installed. `removed`: the tree is gone (DELETE, or its file was deleted). */
export interface TreeChange {
  readonly tree: string;
  readonly version: number;
  readonly hash: string | null;
  readonly removed: boolean;
}

/** What a change did: installed (the trees that changed; none if nothing did), or refused with every error. */
export type ChangeResult =
  | { readonly ok: true; readonly changed: readonly TreeChange[]; readonly outcome: ReloadOutcome }
  | { readonly ok: false; readonly errors: readonly ValidationError[] };

/** Told about every change, in the order they happen (server.ts wires sessions, recordings, the log). */
export interface ChangeListener {
  installed(library: TreeLibrary, changed: readonly TreeChange[], outcome: ReloadOutcome, policy: ReloadPolicy): void;
  refused(errors: readonly ValidationError[], source: 'folder' | 'http'): void;
}

interface LiveDef {
  readonly def: unknown;
  readonly file: string;
  readonly source: 'folder' | 'http';
}

/** Files of a trees folder that are not trees (as TreeLibrary.loadFolder skips them). */
const NOT_TREES: ReadonlySet<string> = new Set(['schema.json']);

/** The live trees of one service. */
export class LiveTrees {
  /** The library everything uses now. Replaced (never mutated) by each installed change. */
  library: TreeLibrary;
  /** The errors of the last refused change (empty once a change is installed). */
  lastErrors: readonly ValidationError[] = [];
  /** When the last change was tried, where it came from and whether it was installed. */
  lastChange: { readonly at: string; readonly source: 'folder' | 'http'; readonly ok: boolean } | null = null;
  private readonly versions = new Map<string, TreeVersion>();
  private defs = new Map<string, LiveDef>();
  /** Each tree file's content as last installed from the folder: a folder reload changes only what differs. */
  private folderSeen = new Map<string, string>();
  /** Changes run one after another (a folder reload reads files: a PUT must not slip in between). */
  private tail: Promise<unknown> = Promise.resolve();
  private readonly reloads: Counter<'result'>;

  constructor(
    library: TreeLibrary,
    private readonly o: { dir: string; policy: ReloadPolicy; pool: AgentPool; logger: Logger; metrics: Metrics; listener?: ChangeListener },
  ) {
    this.library = library;
    const now = new Date().toISOString();
    for (const name of library.names()) {
      const def = library.definition(name);
      this.defs.set(name, { def, file: library.file(name) ?? name, source: 'folder' });
      this.folderSeen.set(name, fingerprint(def));
      this.versions.set(name, { version: 1, hash: library.get(name)!.hash, source: 'folder', updatedAt: now });
    }
    this.reloads = new Counter({
      name: 'canopy_tree_reloads_total',
      help: 'Tree changes tried (folder edits, PUT, DELETE): installed (ok) or refused as invalid',
      labelNames: ['result'],
      registers: [o.metrics.registry],
    });
  }

  /** The default policy of agents already running on a changed tree (CANOPY_RELOAD). */
  get policy(): ReloadPolicy {
    return this.o.policy;
  }

  /** The installed version of `name`, or undefined. */
  version(name: string): TreeVersion | undefined {
    return this.versions.get(name);
  }

  /** The last refused change's errors about tree `name` (by its file, or its name for HTTP changes). */
  errorsOf(name: string): ValidationError[] {
    const file = this.defs.get(name)?.file;
    return this.lastErrors.filter((e) => e.file === name || (file !== undefined && e.file === file) || treeNameOf(e.file) === name);
  }

  /** Re-reads the folder; the files that changed since they were last installed are the change. */
  reloadFolder(): Promise<ChangeResult> {
    return this.serial(async () => {
      const read = await readFolder(this.o.dir);
      const next = new Map(this.defs);
      const errors = [...read.errors];
      for (const [name, entry] of read.trees) {
        const seen = this.folderSeen.get(name);
        if (entry.def === undefined) continue; // unreadable: its error is in `errors`
        if (seen !== fingerprint(entry.def)) next.set(name, { def: entry.def, file: entry.file, source: 'folder' });
      }
      for (const name of this.folderSeen.keys()) if (!read.trees.has(name)) next.delete(name);
      const result = this.apply(next, 'folder', errors, read.positions);
      if (result.ok) {
        this.folderSeen = new Map([...read.trees].flatMap(([name, e]) => (e.def === undefined ? [] : [[name, fingerprint(e.def)] as [string, string]])));
      }
      return result;
    });
  }

  /** Installs (or replaces) tree `name` from an HTTP body already parsed. In memory only: the folder is not written. */
  put(name: string, def: unknown): Promise<ChangeResult> {
    return this.serial(async () => {
      const next = new Map(this.defs);
      next.set(name, { def, file: name, source: 'http' });
      return this.apply(next, 'http', [], new Map());
    });
  }

  /** Removes tree `name` (in memory; its file, if any, stays). Trees that use it as a subtree make this invalid. */
  remove(name: string): Promise<ChangeResult> {
    return this.serial(async () => {
      const next = new Map(this.defs);
      next.delete(name);
      return this.apply(next, 'http', [], new Map());
    });
  }

  private serial<T>(job: () => Promise<T>): Promise<T> {
    const run = this.tail.then(job);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Validates the whole next set; installs it if valid, else changes nothing and reports why. */
  private apply(next: Map<string, LiveDef>, source: 'folder' | 'http', readErrors: ValidationError[], positions: ReadonlyMap<string, SourcePositions>): ChangeResult {
    const defs: Record<string, unknown> = {};
    const files: Record<string, string> = {};
    for (const [name, d] of next) {
      defs[name] = d.def;
      files[name] = d.file;
    }
    const built = TreeLibrary.fromDefinitions(defs, { catalog: this.library.catalog, files });
    const errors = [...readErrors, ...(built.ok ? [] : built.errors.map((e) => locate(e, positions)))];
    const at = new Date().toISOString();
    if (!built.ok || errors.length > 0) {
      this.lastErrors = errors;
      this.lastChange = { at, source, ok: false };
      this.reloads.inc({ result: 'invalid' });
      this.o.logger.warn({ source, errors: errors.length }, `tree change refused; the trees in use are unchanged:\n${errors.map(formatError).join('\n')}`);
      this.o.listener?.refused(errors, source);
      return { ok: false, errors };
    }
    const library = built.library;
    const changed: TreeChange[] = [];
    for (const name of library.names()) {
      const hash = library.get(name)!.hash;
      const before = this.versions.get(name);
      if (before?.hash === hash) continue;
      const version = (before?.version ?? 0) + 1;
      this.versions.set(name, { version, hash, source: next.get(name)!.source, updatedAt: at });
      changed.push({ tree: name, version, hash, removed: false });
    }
    for (const [name, v] of this.versions) {
      if (library.get(name) !== undefined) continue;
      this.versions.delete(name);
      changed.push({ tree: name, version: v.version, hash: null, removed: true });
    }
    this.defs = next;
    this.lastErrors = [];
    this.lastChange = { at, source, ok: true };
    this.reloads.inc({ result: 'ok' });
    if (changed.length === 0) return { ok: true, changed, outcome: new Map() };
    // Installed on every worker in one go; then everything else reads the new library (all before any tick runs).
    const outcome = this.o.pool.reload(library, new Set(changed.map((c) => c.tree)), this.o.policy);
    this.library = library;
    this.o.logger.info({ source, trees: changed.map((c) => ({ tree: c.tree, version: c.version, removed: c.removed })) }, 'trees reloaded');
    this.o.listener?.installed(library, changed, outcome, this.o.policy);
    return { ok: true, changed, outcome };
  }
}

/** A definition's content as text, to tell whether a file changed since it was installed. */
function fingerprint(def: unknown): string {
  return createHash('sha256').update(JSON.stringify(def)).digest('hex');
}

/** The tree name of an error's file (`trees/guard.json` → `guard`), or null. */
function treeNameOf(file: string | undefined): string | null {
  if (file === undefined) return null;
  const base = file.split(/[\\/]/).at(-1)!;
  const ext = extname(base);
  return TREE_FILE_EXTENSIONS.includes(ext) ? base.slice(0, -ext.length) : base;
}

function locate(e: ValidationError, positions: ReadonlyMap<string, SourcePositions>): ValidationError {
  const at = e.file === undefined ? undefined : positions.get(e.file);
  return at === undefined ? e : locateProblems([e], at)[0]!;
}

/** Every tree file of the folder parsed (a file that does not parse has no `def`, and an error). */
async function readFolder(dir: string): Promise<{
  trees: Map<string, { def: unknown; file: string }>;
  errors: ValidationError[];
  positions: Map<string, SourcePositions>;
}> {
  const trees = new Map<string, { def: unknown; file: string }>();
  const errors: ValidationError[] = [];
  const positions = new Map<string, SourcePositions>();
  let names: string[];
  try {
    names = (await readdir(dir)).toSorted();
  } catch (err) {
    errors.push({ code: 'E_TREE_PARSE', file: dir, path: '', message: `cannot read the trees folder: ${err instanceof Error ? err.message : String(err)}` });
    return { trees, errors, positions };
  }
  for (const entry of names) {
    const ext = extname(entry);
    if (!TREE_FILE_EXTENSIONS.includes(ext) || NOT_TREES.has(entry) || entry.startsWith('.')) continue;
    const name = entry.slice(0, -ext.length);
    const file = join(dir, entry);
    if (trees.has(name)) {
      errors.push({ code: 'E_TREE_DUPLICATE', file, path: '', message: `tree '${name}' is defined by more than one file (${trees.get(name)!.file}, ${file})` });
      continue;
    }
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue; // deleted (or replaced) while we read: the watcher reports the next event
    }
    const parsed = parseTreeSource(text, ext === '.json' ? 'json' : 'yaml');
    if (!parsed.ok) {
      errors.push({ code: 'E_TREE_PARSE', file, path: '', message: parsed.message, line: parsed.line, column: parsed.column });
      trees.set(name, { def: undefined, file });
      continue;
    }
    trees.set(name, { def: parsed.value, file });
    positions.set(file, parsed.positions);
  }
  return { trees, errors, positions };
}
