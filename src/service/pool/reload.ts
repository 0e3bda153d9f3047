// Tree reloads inside the pool: a host's restart of one agent on its tree's new version, and a library built
// from definitions (a worker receiving a reload, or a replacement worker started after one).

import type { Agent, CompiledTree, DecisionSink } from '../../bt/index.js';
import { formatErrors, TreeLibrary } from '../../bt/library.js';
import { loadCatalog } from './load.js';

/**
 * Restarts `old` on `tree` (its new version): its running nodes are halted into `out` (cancels go to the
 * game like any halt), blackboard keys the new version still declares keep their values (new keys get their
 * initial values), and the new agent starts from the root. Its action seq, random generator, observation
 * and time go on, so a result for an old action can never be mistaken for a new one.
 */
export function restartAgent(old: Agent, tree: CompiledTree, out: DecisionSink): Agent {
  old.halt(out);
  const agent = old.restartOn(tree);
  if (old.trace !== null) {
    // The inspector keeps watching: a fresh ring buffer (the old frames describe the old nodes) of the same size.
    const capacity = Reflect.get(old.trace, 'capacity') as unknown;
    agent.watch(typeof capacity === 'number' && capacity > 0 ? capacity : 600);
  }
  return agent;
}

/** A library compiled from definitions with the plugins of `plugins` registered; the loader's error text if not. */
export async function loadDefinitions(
  defs: Record<string, unknown>,
  plugins: string | undefined,
): Promise<{ ok: true; library: TreeLibrary } | { ok: false; error: string }> {
  const loaded = await loadCatalog(plugins);
  if (!loaded.ok) return loaded;
  const r = TreeLibrary.fromDefinitions(defs, { catalog: loaded.catalog });
  return r.ok ? { ok: true, library: r.library } : { ok: false, error: formatErrors(r.errors) };
}

/** Compiles a reload's definitions with the catalog the host already has. @throws {Error} if they do not load */
export function libraryFromDefinitions(defs: Record<string, unknown>, current: TreeLibrary): TreeLibrary {
  const r = TreeLibrary.fromDefinitions(defs, { catalog: current.catalog });
  if (!r.ok) throw new Error(`reloaded trees do not load on this worker:\n${formatErrors(r.errors)}`);
  return r.library;
}
