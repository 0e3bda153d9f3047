// Loads what a pool runs: plugin modules registered into a node catalog, then the tree folder compiled
// against it. The main thread (to check spawns) and every worker (to run agents) call the same function.

import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { NodeCatalog, registerPlugin, type CanopyPlugin } from '../../bt/index.js';
import { formatErrors, TreeLibrary } from '../../bt/library.js';
import type { ValidationWarning } from '../../bt/validate.js';

/** A loaded tree folder (with its trees' warnings), or the loader's error text (one problem per line). */
export type Loaded = { ok: true; library: TreeLibrary; warnings: ValidationWarning[] } | { ok: false; error: string };

/** Plugin modules are plain JavaScript: a folder may hold the `.ts` sources beside the build. */
const PLUGIN_FILE = /\.(?:js|mjs|cjs)$/;

/** Registers every plugin of `plugins` (if given), then loads and compiles the trees of `trees`. Never throws. */
export async function loadTrees(trees: string, plugins: string | undefined): Promise<Loaded> {
  const loaded = await loadCatalog(plugins);
  if (!loaded.ok) return loaded;
  const catalog = loaded.catalog;
  try {
    const r = await TreeLibrary.loadFolder(trees, { catalog });
    if (r.ok) return { ok: true, library: r.library, warnings: r.warnings };
    return { ok: false, error: formatErrors(r.errors) };
  } catch (err) {
    return { ok: false, error: `trees: cannot read folder ${trees}: ${describe(err)}` };
  }
}

/** A node catalog with every plugin of `plugins` (if given) registered, or why a plugin failed. Never throws. */
export async function loadCatalog(plugins: string | undefined): Promise<{ ok: true; catalog: NodeCatalog } | { ok: false; error: string }> {
  const catalog = new NodeCatalog();
  if (plugins !== undefined) {
    const problem = await loadPlugins(plugins, catalog);
    if (problem !== null) return { ok: false, error: problem };
  }
  return { ok: true, catalog };
}

/** Imports each module of the folder (sorted by name, so clashes report the same way everywhere). */
async function loadPlugins(dir: string, catalog: NodeCatalog): Promise<string | null> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => PLUGIN_FILE.test(f)).toSorted();
  } catch (err) {
    return `plugins: cannot read folder ${dir}: ${describe(err)}`;
  }
  for (const file of files) {
    const path = join(resolve(dir), file);
    try {
      const mod = (await import(pathToFileURL(path).href)) as { default?: CanopyPlugin };
      const plugin = mod.default;
      if (plugin === undefined || plugin === null || typeof plugin !== 'object' || typeof plugin.name !== 'string') {
        return `plugins: ${file} must default-export a plugin (an object with a 'name'; see definePlugin)`;
      }
      registerPlugin(catalog, plugin);
    } catch (err) {
      return `plugins: ${file}: ${describe(err)}`;
    }
  }
  return null;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
