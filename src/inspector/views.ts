// Trees as the inspector draws them: each loaded tree's nodes (type, name, guard, parameters,
// services, children), its version (the compiled definitions' fingerprint) and validation errors.

import type { CompiledTree } from '../bt/index.js';
import type { TreeLibrary } from '../bt/library.js';

/** One tree for the page. */
export interface TreeView {
  name: string;
  /** The fingerprint of the definitions compiled (this tree and its subtrees). */
  version: string;
  description: string | null;
  nodes: Array<{
    type: string;
    name: string | null;
    path: string;
    file: string;
    children: readonly number[];
    action?: string;
    guard?: { if: string; abort: string };
    params?: Readonly<Record<string, unknown>>;
    services?: readonly unknown[];
  }>;
  /** Validation errors of the last load (none: a tree that fails validation is never loaded). */
  errors: Array<{ code: string; path: string; message: string }>;
}

/** A tree's installed version and the errors of the last refused change to it (hot reload, docs/reload.md). */
export type TreeStatus = (name: string) => { version: string; errors: TreeView['errors'] } | undefined;

/** One tree, or null when no such tree is loaded; `status` adds its reload version and last errors. */
export function treeView(library: TreeLibrary, name: string, status?: TreeStatus): TreeView | null {
  const tree = library.get(name);
  if (tree === undefined) return null;
  const view = compiledView(tree, library.definition(name)?.description ?? null);
  const s = status?.(name);
  return s === undefined ? view : { ...view, version: s.version, errors: s.errors };
}

/** A compiled tree (loaded, or a recording's own). */
export function compiledView(tree: CompiledTree, description: string | null): TreeView {
  return {
    name: tree.name,
    version: tree.hash,
    description,
    nodes: tree.nodes.map((n) => ({
      type: n.type,
      name: n.name,
      path: n.path,
      file: n.file,
      children: n.children,
      ...(n.action !== undefined ? { action: n.action } : {}),
      ...(n.guard !== undefined ? { guard: n.guard } : {}),
      ...(n.params !== undefined ? { params: n.params } : {}),
      ...(n.services !== undefined ? { services: n.services } : {}),
    })),
    errors: [],
  };
}

/** Every loaded tree, by name. */
export function treesView(library: TreeLibrary, status?: TreeStatus): TreeView[] {
  return library.names().flatMap((name) => treeView(library, name, status) ?? []);
}
