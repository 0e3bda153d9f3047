// SubTree ports against Canopy's one blackboard per agent: where BehaviorTree.CPP's separate subtree blackboards
// would behave differently from Canopy's shared keys and copy-on-entry `args`, the import refuses with advice.

import { walkDefinition, type TreeDefinition } from '../bt/index.js';
import { InteropErrorCode, type InteropError } from './errors.js';
import type { SubtreeCall } from './import-nodes.js';

/**
 * Refuses, per `<SubTree>`:
 * - a port remapped to a caller key of another name that the subtree writes (BehaviorTree.CPP passes the write back
 *   through the port; Canopy copies ports in only);
 * - a port that is not `{same-name}` while the caller uses a key of that name (Canopy's copy would overwrite it);
 * - without `_autoremap="true"`, a key both trees use that no port links (BehaviorTree.CPP keeps them apart).
 * Trees written by Canopy's export already mean Canopy's semantics and are not checked.
 */
export function checkSubtreeCalls(
  calls: readonly SubtreeCall[],
  keysByTree: ReadonlyMap<string, ReadonlySet<string>>,
  portsByTree: ReadonlyMap<string, ReadonlySet<string>>,
  defs: Readonly<Record<string, TreeDefinition>>,
): InteropError[] {
  const errors: InteropError[] = [];
  const writes = new Map<string, Set<string>>();
  const written = (tree: string): Set<string> => {
    let w = writes.get(tree);
    if (w === undefined) {
      w = new Set();
      walkDefinition(defs[tree]?.root, (n) => {
        if (n.type === 'set') for (const k of Object.keys((n['values'] as Record<string, unknown> | undefined) ?? {})) w!.add(k);
        for (const s of (n['services'] as { values?: Record<string, unknown> }[] | undefined) ?? []) for (const k of Object.keys(s.values ?? {})) w!.add(k);
      });
      writes.set(tree, w);
    }
    return w;
  };
  for (const call of calls) {
    if (call.canopy) continue;
    const report = (message: string): void => {
      errors.push({ code: InteropErrorCode.XML_UNSUPPORTED, file: call.file, line: call.el.line, column: call.el.column, tree: call.caller, message: `<SubTree ID="${call.tree}">: ${message}` });
    };
    const callerKeys = keysByTree.get(call.caller) ?? new Set<string>();
    const subKeys = new Set([...(keysByTree.get(call.tree) ?? []), ...(portsByTree.get(call.tree) ?? [])]);
    for (const [port, key] of call.ports) {
      if (key === port) continue;
      if (key !== undefined && written(call.tree).has(port)) {
        report(`'${call.tree}' writes '${port}', which BehaviorTree.CPP passes back to '${key}'; Canopy copies ports into the subtree only. Give the key the same name in both trees (${port}="{${port}}")`);
      } else if (callerKeys.has(port)) {
        report(`the port '${port}' would overwrite the caller's own key '${port}' (Canopy has one blackboard per agent); rename the key in one of the trees`);
      }
    }
    if (call.autoremap) continue;
    for (const key of subKeys) {
      if (call.ports.has(key) || !callerKeys.has(key) || key.startsWith('_')) continue;
      report(`'${call.caller}' and '${call.tree}' both use the key '${key}': BehaviorTree.CPP keeps a subtree's keys apart unless _autoremap="true", Canopy shares them (one blackboard per agent). Rename it in one tree, pass it explicitly (${key}="{${key}}"), or add _autoremap="true" if sharing is what you mean`);
    }
  }
  return errors;
}
