// SubTree, custom actions and conditions from the TreeNodesModel, plugin node kinds, and the Canopy* nodes and
// wrappers (CanopyGuard, CanopyService) that Canopy's own export writes.

import { BUILTIN_NODES, type NodeCatalog, type ParamSpec } from '../bt/index.js';
import { ACTION_OPTIONS, CANOPY_PREFIX, children, fail, named, onlyPorts, type ConvertContext, type Node, type NodeModel } from './import-context.js';
import { InteropErrorCode } from './errors.js';
import { readParam, readPort } from './ports.js';
import type { XmlElement } from './xml.js';

/** `<SubTree ID>`: a Canopy `subtree`, its ports as `args` (checked against one blackboard per agent in subtrees.ts). */
export function subtree(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  const id = el.attrs['ID'];
  if (id === undefined || id === '') return fail(ctx, el, InteropErrorCode.XML_NODE, "needs 'ID' (the BehaviorTree it runs)");
  children(el, ctx, 0, 0);
  if (!ctx.treeIds.has(id)) return fail(ctx, el, InteropErrorCode.XML_NODE, `no <BehaviorTree ID="${id}"> in this file or its includes`);
  const args: Record<string, unknown> = {};
  const used = ctx.subtreePorts.get(id) ?? new Set<string>();
  ctx.subtreePorts.set(id, used);
  const remaps = new Map<string, string | undefined>();
  for (const [port, text] of ports) {
    if (text === '') continue; // not set (Groot2 writes every declared port)
    const v = readPort(text);
    if (v.key !== undefined) ctx.keys.add(v.key);
    args[port] = v.value;
    used.add(port);
    remaps.set(port, v.key);
  }
  const autoremap = (el.attrs['_autoremap'] ?? 'false').trim().toLowerCase() === 'true';
  ctx.subtreeCalls.push({ caller: ctx.tree, tree: id, el, file: ctx.file, ports: remaps, autoremap, canopy: ctx.canopy });
  const node: Node = { type: 'subtree', tree: id };
  if (Object.keys(args).length > 0) node['args'] = args;
  return named(el, node);
}

/** Canopy-specific kinds (`CanopyRandom`, …), plugin kinds, and custom actions/conditions from the TreeNodesModel. */
export function custom(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  if (el.tag === `${CANOPY_PREFIX}Guard` || el.tag === `${CANOPY_PREFIX}Service`) return canopyWrapper(el, ctx, ports);
  const builtin = el.tag.startsWith(CANOPY_PREFIX) ? canopyKind(ctx.catalog, el.tag.slice(CANOPY_PREFIX.length)) : undefined;
  const plugin = ctx.catalog.get(el.tag);
  // A plugin kind by its exact name; built-in kinds only by their Canopy* name (a custom action called 'log' stays an action).
  const kind = builtin ?? (plugin !== undefined && plugin.type === el.tag && !BUILTIN_NODES.includes(plugin) ? plugin : undefined);
  if (kind !== undefined) {
    const node: Node = { type: kind.type };
    for (const [k, text] of ports) {
      // Groot2 writes every declared port; an empty one is "not set" (a required one is then reported by validation).
      if (text === '' && kind.params[k] !== undefined) continue;
      const spec: ParamSpec | undefined = kind.params[k];
      if (spec === undefined) {
        fail(ctx, el, InteropErrorCode.XML_NODE, `unknown port '${k}' of ${kind.type}`);
        continue;
      }
      // A BehaviorTree.CPP `{key}` reference given to an expression parameter reads that blackboard key.
      const ref = spec.type === 'expression' ? /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(text) : null;
      if (ref) {
        ctx.keys.add(ref[1]!);
        node[k] = `bb.${ref[1]!}`;
        continue;
      }
      const v = readParam(spec, text);
      if (!v.ok) fail(ctx, el, InteropErrorCode.XML_NODE, `${k}: ${v.message}`);
      else node[k] = v.value;
    }
    if (kind.category === 'composite') node['children'] = children(el, ctx, 1) ?? [];
    else if (kind.category === 'decorator') node['child'] = children(el, ctx, 1, 1)?.[0] ?? { type: 'succeed' };
    else children(el, ctx, 0, 0);
    return named(el, node);
  }
  const model = ctx.models.get(el.tag);
  if (model === undefined) {
    return fail(ctx, el, InteropErrorCode.XML_NODE, `unknown node '${el.tag}': declare it in <TreeNodesModel> as an <Action> (it becomes a Canopy action sent to the game) or register a plugin node of that name`);
  }
  if (model.category !== 'Action') {
    const what = model.category === 'Condition' ? 'a condition' : `a custom ${model.category}`;
    return fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, `'${el.tag}' is ${what}: Canopy has no remote ${model.category.toLowerCase()}s; register a plugin ${model.category === 'Condition' ? 'condition' : 'node'} named '${el.tag}', or write the test as a ScriptCondition over values the game sends`);
  }
  children(el, ctx, 0, 0);
  return action(el, ctx, ports, model);
}

function action(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, model: NodeModel): Node {
  const node: Node = { type: 'action', action: el.tag };
  const args: Record<string, unknown> = {};
  for (const [port, def] of model.ports) if (!ports.has(port) && def !== undefined && def !== '') ports.set(port, def);
  for (const [port, text] of ports) {
    if (port === ACTION_OPTIONS.timeout || port === ACTION_OPTIONS.instant) {
      if (text === '') continue;
      const v = readParam({ type: port === ACTION_OPTIONS.timeout ? 'number' : 'boolean', description: '' }, text);
      if (!v.ok) fail(ctx, el, InteropErrorCode.XML_NODE, `${port}: ${v.message}`);
      else node[port === ACTION_OPTIONS.timeout ? 'timeout' : 'instant'] = v.value;
      continue;
    }
    if (port === ACTION_OPTIONS.until) {
      if (text !== '') node['until'] = text;
      continue;
    }
    if (!model.ports.has(port)) {
      fail(ctx, el, InteropErrorCode.XML_NODE, `port '${port}' is not declared for ${el.tag} in <TreeNodesModel>; add <input_port name="${port}"/> there`);
      continue;
    }
    // An empty port is "not set" in BehaviorTree.CPP (Groot2 writes every declared port).
    if (text === '') continue;
    const v = readPort(text);
    if (v.key !== undefined) ctx.keys.add(v.key);
    args[port] = v.value;
  }
  if (Object.keys(args).length > 0) node['args'] = args;
  return named(el, node);
}

/** `CanopyGuard` (if, abort) and `CanopyService` (one service entry) fold into their child's fields. */
function canopyWrapper(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  const kids = children(el, ctx, 1, 1);
  if (kids === null) return { type: 'succeed' };
  const child = kids[0]!;
  if (el.tag === `${CANOPY_PREFIX}Guard`) {
    onlyPorts(el, ctx, ports, ['if', 'abort']);
    if (child['if'] !== undefined) return fail(ctx, el, InteropErrorCode.XML_NODE, 'its child already has a guard; keep one CanopyGuard');
    child['if'] = ports.get('if') ?? '';
    const abort = ports.get('abort');
    if (abort !== undefined && abort !== '' && abort !== 'none') child['abort'] = abort;
    return child;
  }
  onlyPorts(el, ctx, ports, ['every', 'values', 'service', 'params']);
  const entry: Record<string, unknown> = {};
  for (const k of ['every', 'values', 'params'] as const) {
    const text = ports.get(k);
    if (text === undefined || text === '') continue;
    const v = readParam({ type: k === 'every' ? 'number' : 'args', description: '' }, text);
    if (!v.ok) return fail(ctx, el, InteropErrorCode.XML_NODE, `${k}: ${v.message}`);
    if (k === 'params') Object.assign(entry, v.value);
    else entry[k] = v.value;
  }
  const service = ports.get('service');
  if (service !== undefined && service !== '') entry['service'] = service;
  // Wrappers are written outermost-last, so the innermost CanopyService is the first entry.
  child['services'] = [...((child['services'] as unknown[] | undefined) ?? []), entry];
  return child;
}

function canopyKind(catalog: NodeCatalog, suffix: string): ReturnType<NodeCatalog['get']> {
  const type = suffix.charAt(0).toLowerCase() + suffix.slice(1);
  const kind = catalog.get(type);
  return kind?.type === type ? kind : undefined;
}

