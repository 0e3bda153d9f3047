// BehaviorTree.CPP v4 nodes → Canopy nodes. Every mapping is exact or an error naming what to do instead;
// docs/interop.md has the table and the documented differences (Repeat/Retry and Parallel timing, SubTree ports).

import { BUILTIN_NODES, type NodeCatalog, type NodeDefinition, type ParamSpec } from '../bt/index.js';
import { InteropErrorCode, type InteropError } from './errors.js';
import { readParam, readPort } from './ports.js';
import { translateScript, type Statement } from './script.js';
import type { XmlElement } from './xml.js';

/** Node = a mutable NodeDefinition while it is built. */
type Node = Record<string, unknown> & { type: string };

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
  /** Every SubTree element, checked once all trees are read (see subtrees.ts). */
  readonly subtreeCalls: SubtreeCall[];
  /** The tree was written by Canopy's export (it carries `canopy_blackboard`): its subtrees keep Canopy's semantics. */
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
const EDITOR_ATTRS = new Set(['_uid', '_fullpath', '_description', '_collapsed', '_id']);
const PRE = ['_failureIf', '_successIf', '_skipIf', '_while'] as const;
const POST = ['_onSuccess', '_onFailure', '_post', '_onHalted'] as const;
/** Attributes Canopy writes on exported actions (not args). */
export const ACTION_OPTIONS = { timeout: 'canopy_timeout', until: 'canopy_until', instant: 'canopy_instant' } as const;
/** Prefix of Canopy-specific node kinds in exported XML (`CanopyRandom`, `CanopyGuard`, …). */
export const CANOPY_PREFIX = 'Canopy';

const UNSUPPORTED: Readonly<Record<string, string>> = {
  SequenceWithMemory:
    'SequenceWithMemory resumes at the failed child on the next tick; Canopy has no such sequence. Use Sequence (restarts from the first child after a failure), or keep progress in the blackboard and guard the finished steps',
  AsyncSequence: 'AsyncSequence yields after each child; use Sequence (Canopy never blocks a tick)',
  AsyncFallback: 'AsyncFallback yields after each child; use Fallback (Canopy never blocks a tick)',
  Switch2: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch3: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch4: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch5: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch6: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  TryCatch: 'TryCatch has no Canopy node; use a Fallback whose last child does the cleanup and then fails (AlwaysFailure)',
  ManualSelector: 'ManualSelector needs a person at a terminal; it has no place in a game server',
  LoopInt: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  LoopDouble: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  LoopString: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  LoopBool: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  ConsumeQueue: 'ConsumeQueue has no Canopy equivalent; pass one item at a time from the game',
  Precondition: "the Precondition decorator returns its 'else' status while the condition is false; use the _failureIf attribute (or a ScriptCondition in a Sequence) instead",
  SkipUnlessUpdated: 'SkipUnlessUpdated returns SKIPPED, a status Canopy does not have',
  WaitValueUpdate: 'WaitValueUpdate has no Canopy equivalent; wait on the value with a condition in a RetryUntilSuccessful, or let the game send a snapshot',
  EntryUpdated: 'EntryUpdated has no Canopy equivalent',
  UnsetBlackboard: 'UnsetBlackboard has no Canopy equivalent: Canopy keys always exist; use Script to write null',
};

/** Converts one XML node element (with pre/post-condition attributes) into a Canopy node. */
export function convertNode(el: XmlElement, ctx: ConvertContext): Node {
  const node = applyConditions(el, convertBase(el, ctx), ctx);
  if (!ctx.origin.has(node)) ctx.origin.set(node, el);
  return node;
}

function fail(ctx: ConvertContext, el: XmlElement, code: string, message: string): Node {
  ctx.errors.push({ code, file: ctx.file, line: el.line, column: el.column, tree: ctx.tree, message: `<${el.tag}>: ${message}` });
  return { type: 'succeed' };
}

/** Ports of a node: attributes other than name, editor attributes and pre/post-conditions. */
function portsOf(el: XmlElement, ctx: ConvertContext): Map<string, string> {
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
function onlyPorts(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, allowed: readonly string[]): boolean {
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

function named(el: XmlElement, node: Node): Node {
  const name = el.attrs['name'];
  if (name !== undefined && name !== '' && node['name'] === undefined) node['name'] = name;
  return node;
}

function children(el: XmlElement, ctx: ConvertContext, min: number, max = Infinity): Node[] | null {
  if (el.children.length < min || el.children.length > max) {
    const want = max === min ? `exactly ${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
    fail(ctx, el, InteropErrorCode.XML_NODE, `needs ${want} child node${max === 1 && min === 1 ? '' : 's'}, found ${el.children.length}`);
    return null;
  }
  return el.children.map((c) => convertNode(c, ctx));
}

/** Reads an integer port (BehaviorTree.CPP reads numbers from text; `{key}` references cannot become Canopy constants). */
function intPort(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, port: string, fallback: number | undefined): number | null {
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

function convertBase(el: XmlElement, ctx: ConvertContext): Node {
  // `<Action ID="moveTo"/>` is the explicit form of `<moveTo/>`.
  if (['Action', 'Condition', 'Control', 'Decorator', 'SubTree'].includes(el.tag) && el.tag !== 'SubTree' && el.attrs['ID'] !== undefined) {
    return convertBase({ ...el, tag: el.attrs['ID'] }, ctx);
  }
  const unsupported = UNSUPPORTED[el.tag];
  if (unsupported !== undefined) {
    fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, unsupported);
    // The children are still read, so that every problem of the file is reported at once.
    for (const c of el.children) convertNode(c, ctx);
    return { type: 'succeed' };
  }
  const ports = portsOf(el, ctx);
  const composite = (type: string, extra: Record<string, unknown> = {}, allowed: readonly string[] = []): Node => {
    onlyPorts(el, ctx, ports, allowed);
    const kids = children(el, ctx, 1);
    return named(el, { type, ...extra, children: kids ?? [] });
  };
  const decorator = (type: string, extra: Record<string, unknown> = {}): Node => {
    const kids = children(el, ctx, 1, 1);
    return named(el, { type, ...extra, child: kids?.[0] ?? { type: 'succeed' } });
  };
  switch (el.tag) {
    case 'Sequence':
      return composite('sequence');
    case 'ReactiveSequence':
      return composite('sequence', { reactive: true });
    case 'Fallback':
      return composite('selector');
    case 'ReactiveFallback':
      return composite('selector', { reactive: true });
    case 'Parallel':
      return parallel(el, ctx, ports);
    case 'ParallelAll': {
      const max = intPort(el, ctx, ports, 'max_failures', 1);
      if (max !== null && max !== 1) {
        return fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, `max_failures="${max}": Canopy's 'all' fails when any child failed (max_failures="1"); count failures in the blackboard with _onFailure scripts if you need more`);
      }
      return composite('all', {}, ['max_failures']);
    }
    case 'IfThenElse':
      return ifThenElse(el, ctx, ports);
    case 'WhileDoElse':
      return whileDoElse(el, ctx, ports);
    case 'Inverter':
      onlyPorts(el, ctx, ports, []);
      return decorator('inverter');
    case 'ForceSuccess':
      onlyPorts(el, ctx, ports, []);
      return decorator('succeeder');
    case 'ForceFailure':
      onlyPorts(el, ctx, ports, []);
      return decorator('failer');
    case 'KeepRunningUntilFailure':
      onlyPorts(el, ctx, ports, []);
      return decorator('keepRunningUntilFailure');
    case 'Repeat':
      return counted(el, ctx, ports, 'num_cycles', 'repeat', 'times');
    case 'RetryUntilSuccessful':
      return counted(el, ctx, ports, 'num_attempts', 'retry', 'attempts');
    case 'Timeout':
      return millis(el, ctx, ports, 'msec', (seconds) => decorator('timeLimit', { seconds }));
    case 'Delay':
      return millis(el, ctx, ports, 'delay_msec', (seconds) => decorator('delay', { seconds }));
    case 'RunOnce': {
      onlyPorts(el, ctx, ports, ['then_skip']);
      const skip = (ports.get('then_skip') ?? 'true').trim().toLowerCase();
      if (skip !== 'false') {
        for (const c of el.children) convertNode(c, ctx);
        return fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, 'RunOnce with then_skip="true" (the default) returns SKIPPED after the first run, a status Canopy does not have; write then_skip="false" to repeat the first result (Canopy\'s once)');
      }
      return decorator('once');
    }
    case 'Sleep':
      return millis(el, ctx, ports, 'msec', (seconds) => (children(el, ctx, 0, 0), named(el, { type: 'wait', seconds })));
    case 'AlwaysSuccess':
      onlyPorts(el, ctx, ports, []);
      children(el, ctx, 0, 0);
      return named(el, { type: 'succeed' });
    case 'AlwaysFailure':
      onlyPorts(el, ctx, ports, []);
      children(el, ctx, 0, 0);
      return named(el, { type: 'fail' });
    case 'Script':
      return script(el, ctx, ports);
    case 'ScriptCondition':
      return scriptCondition(el, ctx, ports);
    case 'SetBlackboard':
      return setBlackboard(el, ctx, ports);
    case 'SubTree':
      return subtree(el, ctx, ports);
    default:
      return custom(el, ctx, ports);
  }
}

function parallel(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, ['success_count', 'failure_count']);
  const n = el.children.length;
  const succ = intPort(el, ctx, ports, 'success_count', -1);
  const failN = intPort(el, ctx, ports, 'failure_count', 1);
  const kids = children(el, ctx, 1);
  if (succ === null || failN === null || kids === null) return { type: 'succeed' };
  // BehaviorTree.CPP: a negative count means "all but |count|-1" (n + count + 1).
  const success = succ < 0 ? n + succ + 1 : succ;
  const failure = failN < 0 ? n + failN + 1 : failN;
  if (success < 1 || success > n) return fail(ctx, el, InteropErrorCode.XML_NODE, `success_count="${succ}" needs between 1 and ${n} successes of ${n} children`);
  if (failure < 1 || failure > n) return fail(ctx, el, InteropErrorCode.XML_NODE, `failure_count="${failN}" needs between 1 and ${n} failures of ${n} children`);
  const node: Node = { type: 'parallel' };
  if (success !== n) node['success'] = success;
  if (failure !== 1) node['failure'] = failure;
  node['children'] = kids;
  return named(el, node);
}

function counted(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, port: string, type: string, param: string): Node {
  onlyPorts(el, ctx, ports, [port]);
  const count = intPort(el, ctx, ports, port, undefined);
  const kids = children(el, ctx, 1, 1);
  if (count === null || kids === null) return { type: 'succeed' };
  if (count === 0 || count < -1) return fail(ctx, el, InteropErrorCode.XML_NODE, `${port}="${count}": use a number ≥ 1, or -1 for forever`);
  return named(el, { type, [param]: count, child: kids[0]! });
}

function millis(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, port: string, make: (seconds: number) => Node): Node {
  onlyPorts(el, ctx, ports, [port]);
  const ms = intPort(el, ctx, ports, port, undefined);
  if (ms === null) return { type: 'succeed' };
  if (ms < 0) return fail(ctx, el, InteropErrorCode.XML_NODE, `${port}="${ms}" must not be negative`);
  return make(ms / 1000);
}

/** Canopy text of a script, or null after reporting why it has no translation. */
function translate(el: XmlElement, ctx: ConvertContext, attr: string, code: string | undefined): readonly Statement[] | null {
  if (code === undefined || code.trim() === '') {
    fail(ctx, el, InteropErrorCode.XML_NODE, `needs '${attr}' (a script)`);
    return null;
  }
  const r = translateScript(code);
  if (!r.ok) {
    fail(ctx, el, InteropErrorCode.XML_SCRIPT, `${attr}="${code}": ${r.message}`);
    return null;
  }
  for (const k of r.keys) ctx.keys.add(k);
  return r.statements;
}

function condition(el: XmlElement, ctx: ConvertContext, attr: string, code: string | undefined): string | null {
  const st = translate(el, ctx, attr, code);
  if (st === null) return null;
  if (st.length !== 1 || st[0]!.kind !== 'expr') {
    fail(ctx, el, InteropErrorCode.XML_SCRIPT, `${attr}="${code}" must be one expression (no assignments): Canopy conditions never write`);
    return null;
  }
  return st[0]!.expr;
}

/** Assignments as Canopy `set` nodes: one per statement, so each sees the previous one's write (as in BehaviorTree.CPP). */
function assignments(el: XmlElement, ctx: ConvertContext, attr: string, code: string | undefined): Node[] | null {
  const st = translate(el, ctx, attr, code);
  if (st === null) return null;
  const sets: Node[] = [];
  for (const s of st) {
    if (s.kind !== 'assign') {
      fail(ctx, el, InteropErrorCode.XML_SCRIPT, `${attr}="${code}": the statement '${s.expr}' computes a value nobody uses; a Script only assigns ('key := value')`);
      return null;
    }
    sets.push({ type: 'set', values: { [s.key]: s.expr } });
  }
  return sets;
}

function script(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, ['code']);
  const sets = assignments(el, ctx, 'code', ports.get('code'));
  if (sets === null) return { type: 'succeed' };
  return named(el, sets.length === 1 ? sets[0]! : { type: 'sequence', children: sets });
}

function scriptCondition(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, ['code']);
  const expr = condition(el, ctx, 'code', ports.get('code'));
  return expr === null ? { type: 'succeed' } : named(el, { type: 'condition', expr });
}

function setBlackboard(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, ['value', 'output_key']);
  const key = (ports.get('output_key') ?? '').replace(/^\{(.*)\}$/, '$1');
  const value = ports.get('value');
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || value === undefined) return fail(ctx, el, InteropErrorCode.XML_NODE, "needs 'output_key' (a blackboard key) and 'value'");
  ctx.keys.add(key);
  const v = readPort(value);
  if (v.key !== undefined) ctx.keys.add(v.key);
  return named(el, { type: 'set', values: { [key]: typeof v.value === 'string' ? v.value : JSON.stringify(v.value) } });
}

/** A fresh blackboard key for a translation that needs to remember a branch (IfThenElse, WhileDoElse). */
function hiddenKey(ctx: ConvertContext, what: string): string {
  const key = `_${what}${++ctx.hidden.count}`;
  ctx.keys.add(key);
  return key;
}

/**
 * IfThenElse(C, T, E): C decides once on entry; the chosen branch's result is the node's result (T failing does not run E).
 * → sequence[ set k=0, selector[ sequence[C, set k=1], set k=2 ], selector[ T if k==1, E if k==2 ] ].
 */
function ifThenElse(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, []);
  const kids = children(el, ctx, 2, 3);
  if (kids === null) return { type: 'succeed' };
  const k = hiddenKey(ctx, 'ifThenElse');
  const [c, t, e] = kids as [Node, Node, Node | undefined];
  const branches: Node[] = [guarded(t, `bb.${k} == 1`)];
  if (e !== undefined) branches.push(guarded(e, `bb.${k} == 2`));
  return named(el, {
    type: 'sequence',
    children: [
      { type: 'set', values: { [k]: '0' } },
      { type: 'selector', children: [{ type: 'sequence', children: [c, { type: 'set', values: { [k]: '1' } }] }, { type: 'set', values: { [k]: '2' } }] },
      { type: 'selector', children: branches },
    ],
  });
}

/**
 * WhileDoElse(C, D, E): every tick C decides; D runs while it holds, E (or failure) otherwise, the other branch halted.
 * C must be a condition (never running) so that it can be re-evaluated as an expression:
 * → reactive sequence[ set k=C, reactive selector[ D if k, E if !k ] ].
 */
function whileDoElse(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, []);
  const kids = children(el, ctx, 2, 3);
  if (kids === null) return { type: 'succeed' };
  const [c, d, e] = kids as [Node, Node, Node | undefined];
  if (c.type !== 'condition' || Object.keys(c).some((f) => !['type', 'expr', 'name'].includes(f))) {
    return fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, 'the first child of WhileDoElse must be a ScriptCondition: Canopy re-checks it every tick as an expression (a custom condition or a running node cannot be re-checked without halting the branch)');
  }
  const k = hiddenKey(ctx, 'whileDoElse');
  // abort 'self': a running branch whose guard turned false is halted (BehaviorTree.CPP halts it too).
  const branches: Node[] = [guarded(d, `bb.${k}`, 'self')];
  if (e !== undefined) branches.push(guarded(e, `!bb.${k}`, 'self'));
  return named(el, {
    type: 'sequence',
    reactive: true,
    children: [{ type: 'set', values: { [k]: `(${c['expr'] as string}) ? true : false` } }, { type: 'selector', reactive: true, children: branches }],
  });
}

/** `node` with guard `expr` added (on a wrapping sequence when the node already has a guard of its own). */
function guarded(node: Node, expr: string, abort?: 'self'): Node {
  const guard = abort === undefined ? { if: expr } : { if: expr, abort };
  if (node['if'] === undefined) return { ...node, ...guard };
  return { type: 'sequence', ...guard, children: [node] };
}

function subtree(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  const id = el.attrs['ID'];
  if (id === undefined || id === '') return fail(ctx, el, InteropErrorCode.XML_NODE, "needs 'ID' (the BehaviorTree it runs)");
  children(el, ctx, 0, 0);
  if (!ctx.treeIds.has(id)) return fail(ctx, el, InteropErrorCode.XML_NODE, `no <BehaviorTree ID="${id}"> in this file or its includes`);
  const args: Record<string, unknown> = {};
  const used = ctx.subtreePorts.get(id) ?? new Set<string>();
  ctx.subtreePorts.set(id, used);
  const remaps = new Map<string, string | undefined>();
  for (const [port, text] of ports) {
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
function custom(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  if (el.tag === `${CANOPY_PREFIX}Guard` || el.tag === `${CANOPY_PREFIX}Service`) return canopyWrapper(el, ctx, ports);
  const builtin = el.tag.startsWith(CANOPY_PREFIX) ? canopyKind(ctx.catalog, el.tag.slice(CANOPY_PREFIX.length)) : undefined;
  const plugin = ctx.catalog.get(el.tag);
  // A plugin kind by its exact name; built-in kinds only by their Canopy* name (a custom action called 'log' stays an action).
  const kind = builtin ?? (plugin !== undefined && plugin.type === el.tag && !BUILTIN_NODES.includes(plugin) ? plugin : undefined);
  if (kind !== undefined) {
    const node: Node = { type: kind.type };
    for (const [k, text] of ports) {
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

/**
 * Pre- and post-conditions, in BehaviorTree.CPP's order: `_failureIf` then `_successIf` decide before the node
 * ticks; `_onSuccess` / `_onFailure` then `_post` run after it finishes, also when a pre-condition decided.
 */
function applyConditions(el: XmlElement, base: Node, ctx: ConvertContext): Node {
  let node = base;
  for (const attr of ['_skipIf', '_while'] as const) {
    if (el.attrs[attr] !== undefined) {
      fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, `${attr} makes the node return SKIPPED, a status Canopy does not have; use _failureIf="!(…)" (the node fails instead of being skipped), or wrap it in a Fallback with AlwaysSuccess`);
    }
  }
  if (el.attrs['_onHalted'] !== undefined) {
    fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, '_onHalted has no Canopy equivalent (halting runs no tree logic); let the game react to the cancel it receives');
  }
  const successIf = el.attrs['_successIf'];
  if (successIf !== undefined) {
    const expr = condition(el, ctx, '_successIf', successIf);
    if (expr !== null) node = { type: 'selector', children: [{ type: 'condition', expr }, node] };
  }
  const failureIf = el.attrs['_failureIf'];
  if (failureIf !== undefined) {
    const expr = condition(el, ctx, '_failureIf', failureIf);
    if (expr !== null) node = node['if'] === undefined ? { ...node, if: `!(${expr})` } : { type: 'sequence', if: `!(${expr})`, children: [node] };
  }
  const onSuccess = el.attrs['_onSuccess'] === undefined ? [] : assignments(el, ctx, '_onSuccess', el.attrs['_onSuccess']);
  const onFailure = el.attrs['_onFailure'] === undefined ? [] : assignments(el, ctx, '_onFailure', el.attrs['_onFailure']);
  const post = el.attrs['_post'] === undefined ? [] : assignments(el, ctx, '_post', el.attrs['_post']);
  if (onSuccess === null || onFailure === null || post === null) return node;
  const afterSuccess = [...onSuccess, ...post];
  const afterFailure = [...onFailure, ...post];
  if (afterSuccess.length === 0 && afterFailure.length === 0) return node;
  ctx.origin.set(node, el);
  const succeeded: Node = afterSuccess.length === 0 ? node : { type: 'sequence', children: [node, ...afterSuccess] };
  if (afterFailure.length === 0) return succeeded;
  return { type: 'selector', children: [succeeded, { type: 'sequence', children: [...afterFailure, { type: 'fail' }] }] };
}

export type { NodeDefinition };
