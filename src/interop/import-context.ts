// What the XML import's node translators share: the conversion context, the types it builds, and the
// helpers that read ports and children and report errors with the element's line and column.

import type { NodeCatalog } from '../bt/index.js';
import { InteropErrorCode, type InteropError } from './errors.js';
import type { XmlElement } from './xml.js';

/** Node = a mutable NodeDefinition while it is built. */
export type Node = Record<string, unknown> & { type: string };

/** A `<TreeNodesModel>` entry: category and ports (with defaults). */
export interface NodeModel {
  readonly category: 'Action' | 'Condition' | 'Control' | 'Decorator' | 'SubTree';
  readonly ports: ReadonlyMap<string, string | undefined>;
}

/** Where and with what one tree is converted. */
export interface ConvertContext {
  readonly file: string;
  readonly tree: string;
  readonly catalog: NodeCatalog;
  readonly models: ReadonlyMap<string, NodeModel>;
  readonly treeIds: ReadonlySet<string>;
  /** Blackboard keys the tree reads or writes (declared with null unless the file gives a value). */
  readonly keys: Set<string>;
  /** Port names passed to each subtree (they must be declared in that subtree). */
  readonly subtreePorts: Map<string, Set<string>>;
  readonly errors: InteropError[];
  /** The XML element each produced node came from, to map engine validation errors back to lines. */
  readonly origin: WeakMap<object, XmlElement>;
  /** Converts a child element (convertNode), handed in so that translators need not import each other. */
  readonly convert: (el: XmlElement) => Node;
  /** Every SubTree element, checked once all trees are read (see subtrees.ts). */
  readonly subtreeCalls: SubtreeCall[];
  /** The tree was written by Canopy's export (its root is a `<CanopyTree>`): its subtrees keep Canopy's semantics. */
  readonly canopy: boolean;
  /** Counter for hidden keys, shared by all trees of a file: one agent's trees share one blackboard. */
  readonly hidden: { count: number };
}

/** One `<SubTree>` use: who calls which tree, with which ports (port → caller key when it is `{key}`). */
export interface SubtreeCall {
  readonly caller: string;
  readonly tree: string;
  readonly el: XmlElement;
  readonly file: string;
  readonly ports: ReadonlyMap<string, string | undefined>;
  readonly autoremap: boolean;
  /** Written by Canopy: one blackboard, args copied on entry, as the tree meant before export. */
  readonly canopy: boolean;
}

/** Attributes BehaviorTree.CPP and Groot2 use for editing and bookkeeping: ignored. */
export const EDITOR_ATTRS = new Set(['_uid', '_fullpath', '_description', '_collapsed', '_id']);
/** Pre-condition attributes (checked when a node starts). */
export const PRE = ['_failureIf', '_successIf', '_skipIf', '_while'] as const;
/** Post-condition attributes (scripts run after a node finished). */
export const POST = ['_onSuccess', '_onFailure', '_post', '_onHalted'] as const;
/** Attributes Canopy writes on exported actions (not args). */
export const ACTION_OPTIONS = { timeout: 'canopy_timeout', until: 'canopy_until', instant: 'canopy_instant' } as const;
/** Prefix of Canopy-specific node kinds in exported XML (`CanopyRandom`, `CanopyGuard`, …). */
export const CANOPY_PREFIX = 'Canopy';
/** The node around an exported tree's root that carries its blackboard and description. */
export const CANOPY_TREE = `${CANOPY_PREFIX}Tree`;

/** Records an error at the element (its line and column) and returns a placeholder node so conversion goes on. */
export function fail(ctx: ConvertContext, el: XmlElement, code: string, message: string): Node {
  ctx.errors.push({ code, file: ctx.file, line: el.line, column: el.column, tree: ctx.tree, message: `<${el.tag}>: ${message}` });
  return { type: 'succeed' };
}

/** Ports of a node: attributes other than name, editor attributes and pre/post-conditions. */
export function portsOf(el: XmlElement, ctx: ConvertContext): Map<string, string> {
  const ports = new Map<string, string>();
  for (const [k, v] of Object.entries(el.attrs)) {
    if (k === 'name' || k === 'ID' || EDITOR_ATTRS.has(k) || (PRE as readonly string[]).includes(k) || (POST as readonly string[]).includes(k)) continue;
    if (k === '_autoremap') continue;
    if (k.startsWith('_')) {
      fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, `unknown attribute '${k}' (BehaviorTree.CPP reserves names starting with '_'); remove it`);
      continue;
    }
    ports.set(k, v);
  }
  return ports;
}

/** Checks that a built-in node carries only the ports it declares. */
export function onlyPorts(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, allowed: readonly string[]): boolean {
  let ok = true;
  for (const k of ports.keys()) {
    if (!allowed.includes(k)) {
      const known = allowed.length === 0 ? 'it has no ports' : `its ports are ${allowed.map((p) => `'${p}'`).join(', ')}`;
      fail(ctx, el, InteropErrorCode.XML_NODE, `unknown port '${k}' (${known})`);
      ok = false;
    }
  }
  return ok;
}

/** Copies the element's `name` attribute onto the node. */
export function named(el: XmlElement, node: Node): Node {
  const name = el.attrs['name'];
  if (name !== undefined && name !== '' && node['name'] === undefined) node['name'] = name;
  return node;
}

/** Converts the element's children, or reports (and returns null) when their number is outside [min, max]. */
export function children(el: XmlElement, ctx: ConvertContext, min: number, max = Infinity): Node[] | null {
  if (el.children.length < min || el.children.length > max) {
    const want = max === min ? `exactly ${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
    fail(ctx, el, InteropErrorCode.XML_NODE, `needs ${want} child node${max === 1 && min === 1 ? '' : 's'}, found ${el.children.length}`);
    return null;
  }
  return el.children.map((c) => ctx.convert(c));
}

/** Reads an integer port (BehaviorTree.CPP reads numbers from text; `{key}` references cannot become Canopy constants). */
export function intPort(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, port: string, fallback: number | undefined): number | null {
  const text = ports.get(port);
  if (text === undefined) {
    if (fallback !== undefined) return fallback;
    fail(ctx, el, InteropErrorCode.XML_NODE, `needs the port '${port}' (a whole number)`);
    return null;
  }
  if (!/^-?\d+$/.test(text.trim())) {
    const hint = text.trim().startsWith('{') ? ': Canopy needs this number in the tree, not in the blackboard' : '';
    fail(ctx, el, InteropErrorCode.XML_NODE, `'${port}' must be a whole number, found '${text}'${hint}`);
    return null;
  }
  return Number(text);
}
