// Exporting Canopy trees as Groot2-compatible BehaviorTree.CPP v4 XML: native nodes where the meaning is the same,
// `Canopy*` nodes (declared in the TreeNodesModel) for the rest, so that export → Groot2 → import is lossless.

import { BUILTIN_NODES, NodeCatalog, type NodeDefinition, type NodeKind, type ServiceDefinition, type TreeDefinition } from '../bt/index.js';
import { ACTION_OPTIONS, CANOPY_PREFIX, CANOPY_TREE } from './import-nodes.js';
import { writeParam, writePort } from './ports.js';

export interface ExportOptions {
  /** Node kinds the trees use (plugins); default: the built-in catalog. */
  readonly catalog?: NodeCatalog;
  /** The tree written as `main_tree_to_execute` (default: the first). */
  readonly main?: string;
}

interface ModelEntry {
  readonly category: 'Action' | 'Condition' | 'Control' | 'Decorator' | 'SubTree';
  readonly ports: Map<string, string>;
}

/** BehaviorTree.CPP's own node names: an action with one of these names is written as CanopyAction. */
const NATIVE = new Set([
  'Sequence', 'ReactiveSequence', 'SequenceWithMemory', 'Fallback', 'ReactiveFallback', 'Parallel', 'ParallelAll', 'IfThenElse', 'WhileDoElse',
  'Inverter', 'ForceSuccess', 'ForceFailure', 'Repeat', 'RetryUntilSuccessful', 'KeepRunningUntilFailure', 'Timeout', 'Delay', 'RunOnce',
  'Sleep', 'AlwaysSuccess', 'AlwaysFailure', 'Script', 'ScriptCondition', 'SetBlackboard', 'SubTree', 'Action', 'Condition', 'Control',
  'Decorator', 'BehaviorTree', 'TreeNodesModel', 'root', 'include', 'Switch2', 'Switch3', 'Switch4', 'Switch5', 'Switch6', 'Precondition',
]);

/** Writes `trees` (every subtree they use must be among them) as one XML document. */
export function exportXml(trees: Readonly<Record<string, TreeDefinition>>, opts: ExportOptions = {}): string {
  const catalog = opts.catalog ?? new NodeCatalog();
  const models = new Map<string, ModelEntry>();
  // Every Canopy-specific kind is declared, used or not, so a designer can drag it in from Groot2's palette.
  for (const kind of BUILTIN_NODES) {
    if (nativeKinds.has(kind.type) || kind.type === 'action') continue;
    models.set(canopyTag(kind.type), { category: category(kind), ports: paramPorts(kind) });
  }
  models.set(CANOPY_TREE, {
    category: 'Decorator',
    ports: new Map([['blackboard', "Canopy: the tree's blackboard keys and initial values (JSON); not a node at run time"], ['description', 'Canopy: what the tree does']]),
  });
  models.set(`${CANOPY_PREFIX}Guard`, { category: 'Decorator', ports: new Map([['if', 'Guard expression: the child fails without being ticked when it is false'], ['abort', 'none, self, lower or both']]) });
  models.set(`${CANOPY_PREFIX}Service`, {
    category: 'Decorator',
    ports: new Map([['every', 'Seconds between runs'], ['values', 'JSON: blackboard key → expression'], ['service', 'A plugin service name'], ['params', 'JSON: the plugin service parameters']]),
  });
  const names = Object.keys(trees);
  const main = opts.main ?? names[0];
  const body: string[] = [];
  for (const name of names) {
    const def = trees[name]!;
    const header: [string, string][] = [['blackboard', JSON.stringify(def.blackboard ?? {})]];
    if (def.description !== undefined) header.push(['description', def.description]);
    body.push(`  <BehaviorTree ID="${esc(name)}">`, `    <${CANOPY_TREE}${attrText(header)}>`);
    writeNode(def.root, 3, body, catalog, models);
    body.push(`    </${CANOPY_TREE}>`, '  </BehaviorTree>');
  }
  const out = ['<?xml version="1.0" encoding="UTF-8"?>', `<root BTCPP_format="4"${main === undefined ? '' : ` main_tree_to_execute="${esc(main)}"`}>`, ...body];
  out.push('  <TreeNodesModel>');
  for (const [id, m] of [...models].toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (m.ports.size === 0) {
      out.push(`    <${m.category} ID="${esc(id)}"/>`);
      continue;
    }
    out.push(`    <${m.category} ID="${esc(id)}">`);
    for (const [port, doc] of m.ports) out.push(`      <input_port name="${esc(port)}"${doc === '' ? '/>' : `>${esc(doc)}</input_port>`}`);
    out.push(`    </${m.category}>`);
  }
  out.push('  </TreeNodesModel>', '</root>', '');
  return out.join('\n');
}

const nativeKinds = new Set(['sequence', 'selector', 'parallel', 'all', 'inverter', 'succeeder', 'failer', 'keepRunningUntilFailure', 'repeat', 'retry', 'once', 'succeed', 'fail', 'subtree']);

function canopyTag(type: string): string {
  return `${CANOPY_PREFIX}${type.charAt(0).toUpperCase()}${type.slice(1)}`;
}

function category(kind: NodeKind): ModelEntry['category'] {
  if (kind.type === 'condition') return 'Condition';
  return kind.category === 'composite' ? 'Control' : kind.category === 'decorator' ? 'Decorator' : 'Action';
}

function paramPorts(kind: NodeKind): Map<string, string> {
  return new Map(Object.entries(kind.params).map(([k, spec]) => [k, spec.description]));
}

/** Whole milliseconds that read back as exactly `seconds` (else the Canopy* node keeps the exact number). */
function exactMillis(seconds: unknown): number | undefined {
  if (typeof seconds !== 'number') return undefined;
  const ms = Math.round(seconds * 1000);
  return ms / 1000 === seconds && ms >= 0 ? ms : undefined;
}

function writeNode(node: NodeDefinition, depth: number, out: string[], catalog: NodeCatalog, models: Map<string, ModelEntry>): void {
  const kind = catalog.get(node.type);
  const type = kind?.type ?? node.type;
  // Guard and services are wrappers around the node (outermost: the guard, then the last service).
  const wrappers: [string, [string, string][]][] = [];
  if (node['if'] !== undefined) {
    const g: [string, string][] = [['if', String(node['if'])]];
    if (node['abort'] !== undefined && node['abort'] !== 'none') g.push(['abort', String(node['abort'])]);
    wrappers.push([`${CANOPY_PREFIX}Guard`, g]);
  }
  for (const s of ((node['services'] as ServiceDefinition[] | undefined) ?? []).toReversed()) {
    const { every, values, service, ...params } = s;
    const a: [string, string][] = [['every', JSON.stringify(every)]];
    if (values !== undefined) a.push(['values', JSON.stringify(values)]);
    if (service !== undefined) a.push(['service', service]);
    if (Object.keys(params).length > 0) a.push(['params', JSON.stringify(params)]);
    wrappers.push([`${CANOPY_PREFIX}Service`, a]);
  }
  wrappers.forEach(([tag, attrs], k) => out.push(`${pad(depth + k)}<${tag}${attrText(attrs)}>`));
  const d = depth + wrappers.length;
  const [tag, attrs] = element(node, type, kind, catalog, models);
  if (node['name'] !== undefined) attrs.unshift(['name', String(node['name'])]);
  const kids: NodeDefinition[] = Array.isArray(node['children']) ? (node['children'] as NodeDefinition[]) : node['child'] !== undefined ? [node['child'] as NodeDefinition] : [];
  if (kids.length === 0) out.push(`${pad(d)}<${tag}${attrText(attrs)}/>`);
  else {
    out.push(`${pad(d)}<${tag}${attrText(attrs)}>`);
    for (const c of kids) writeNode(c, d + 1, out, catalog, models);
    out.push(`${pad(d)}</${tag}>`);
  }
  wrappers.toReversed().forEach(([t], k) => out.push(`${pad(depth + wrappers.length - 1 - k)}</${t}>`));
}

/** The XML tag and attributes (besides name) of one node, recording TreeNodesModel entries it needs. */
function element(node: NodeDefinition, type: string, kind: NodeKind | undefined, catalog: NodeCatalog, models: Map<string, ModelEntry>): [string, [string, string][]] {
  const p = (k: string): unknown => node[k];
  switch (type) {
    case 'sequence':
      return [p('reactive') === true ? 'ReactiveSequence' : 'Sequence', []];
    case 'selector':
      return [p('reactive') === true ? 'ReactiveFallback' : 'Fallback', []];
    case 'parallel': {
      const a: [string, string][] = [];
      if (p('success') !== undefined) a.push(['success_count', String(p('success'))]);
      if (p('failure') !== undefined) a.push(['failure_count', String(p('failure'))]);
      return ['Parallel', a];
    }
    case 'all':
      return ['ParallelAll', [['max_failures', '1']]];
    case 'inverter':
      return ['Inverter', []];
    case 'succeeder':
      return ['ForceSuccess', []];
    case 'failer':
      return ['ForceFailure', []];
    case 'keepRunningUntilFailure':
      return ['KeepRunningUntilFailure', []];
    case 'repeat':
      return ['Repeat', [['num_cycles', String(p('times'))]]];
    case 'retry':
      return ['RetryUntilSuccessful', [['num_attempts', String(p('attempts'))]]];
    case 'once':
      return ['RunOnce', [['then_skip', 'false']]];
    case 'succeed':
      return ['AlwaysSuccess', []];
    case 'fail':
      return ['AlwaysFailure', []];
    case 'timeLimit':
    case 'delay':
    case 'wait': {
      const ms = exactMillis(p('seconds'));
      if (ms !== undefined) return [type === 'timeLimit' ? 'Timeout' : type === 'delay' ? 'Delay' : 'Sleep', [[type === 'delay' ? 'delay_msec' : 'msec', String(ms)]]];
      break;
    }
    case 'subtree': {
      const tree = String(p('tree'));
      const args = (p('args') as Record<string, unknown> | undefined) ?? {};
      const model = models.get(tree) ?? { category: 'SubTree' as const, ports: new Map<string, string>() };
      for (const k of Object.keys(args)) model.ports.set(k, '');
      models.set(tree, model);
      return ['SubTree', [['ID', tree], ...Object.entries(args).map(([k, v]): [string, string] => [k, writePort(v)]), ['_autoremap', 'true']]];
    }
    case 'action':
      return actionElement(node, catalog, models);
  }
  // Canopy-specific built-in kinds as Canopy<Type>; plugin kinds under their own name.
  const builtin = kind !== undefined && BUILTIN_NODES.includes(kind);
  const tag = builtin || kind === undefined ? canopyTag(type) : type;
  if (!builtin && kind !== undefined && !models.has(tag)) models.set(tag, { category: category(kind), ports: paramPorts(kind) });
  const attrs: [string, string][] = [];
  for (const [k, v] of Object.entries(node)) {
    if (['type', 'name', 'if', 'abort', 'services', 'children', 'child'].includes(k) || v === undefined) continue;
    attrs.push([k, writeParam(kind?.params[k], v)]);
  }
  return [tag, attrs];
}

function actionElement(node: NodeDefinition, catalog: NodeCatalog, models: Map<string, ModelEntry>): [string, [string, string][]] {
  const name = String(node['action']);
  const args = (node['args'] as Record<string, unknown> | undefined) ?? {};
  const options: [string, string][] = [];
  if (node['timeout'] !== undefined) options.push([ACTION_OPTIONS.timeout, JSON.stringify(node['timeout'])]);
  if (node['until'] !== undefined) options.push([ACTION_OPTIONS.until, String(node['until'])]);
  if (node['instant'] !== undefined) options.push([ACTION_OPTIONS.instant, JSON.stringify(node['instant'])]);
  const clash = Object.keys(args).some((k) => (Object.values(ACTION_OPTIONS) as string[]).includes(k) || k === 'name' || k === 'ID' || k.startsWith('_'));
  // An action whose name would be read as something else keeps the generic form.
  if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name) || NATIVE.has(name) || name.startsWith(CANOPY_PREFIX) || catalog.get(name) !== undefined || clash) {
    return [canopyTag('action'), [['action', name], ['args', JSON.stringify(args)], ...options.map(([k, v]): [string, string] => [k.replace('canopy_', ''), v])]];
  }
  const model = models.get(name) ?? { category: 'Action' as const, ports: new Map<string, string>() };
  models.set(name, model);
  for (const k of Object.keys(args)) model.ports.set(k, model.ports.get(k) ?? '');
  for (const [k] of options) model.ports.set(k, k === ACTION_OPTIONS.timeout ? 'Canopy: seconds before the action fails' : k === ACTION_OPTIONS.until ? 'Canopy: expression that ends the action with success' : 'Canopy: succeed at once after issuing');
  return [name, [...Object.entries(args).map(([k, v]): [string, string] => [k, writePort(v)]), ...options]];
}

function pad(depth: number): string {
  return '  '.repeat(depth);
}

function attrText(attrs: readonly (readonly [string, string])[]): string {
  return attrs.map(([k, v]) => ` ${k}="${esc(v)}"`).join('');
}

/** Escapes an attribute or text value (newlines and tabs too, so attribute values survive normalisation). */
function esc(v: string): string {
  return v.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll('\n', '&#10;').replaceAll('\r', '&#13;').replaceAll('\t', '&#9;');
}
