// Puts an imported node's fields in the order designers read them in tree files: type, name, guard, parameters, children.

import type { NodeDefinition } from '../bt/index.js';

const FIRST = ['type', 'name', 'if', 'abort', 'services'];
const LAST = ['children', 'child'];

/** A copy of `node` (and its descendants) with fields in reading order. */
export function tidyNode(node: NodeDefinition): NodeDefinition {
  const out: Record<string, unknown> = {};
  for (const k of FIRST) if (node[k] !== undefined) out[k] = node[k];
  for (const [k, v] of Object.entries(node)) if (!FIRST.includes(k) && !LAST.includes(k) && v !== undefined) out[k] = v;
  if (Array.isArray(node['children'])) out['children'] = (node['children'] as NodeDefinition[]).map(tidyNode);
  if (node['child'] !== undefined) out['child'] = tidyNode(node['child'] as NodeDefinition);
  return out as NodeDefinition;
}
