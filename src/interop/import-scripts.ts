// BehaviorTree.CPP scripts in a tree: Script, ScriptCondition, SetBlackboard, the pre/post-condition attributes,
// and IfThenElse / WhileDoElse, which need a hidden blackboard key to remember the chosen branch.

import { children, fail, named, onlyPorts, type ConvertContext, type Node } from './import-context.js';
import { InteropErrorCode } from './errors.js';
import { readPort } from './ports.js';
import { translateScript, type Statement } from './script.js';
import type { XmlElement } from './xml.js';

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

/** `<Script code>`: one `set` per statement. */
export function script(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, ['code']);
  const sets = assignments(el, ctx, 'code', ports.get('code'));
  if (sets === null) return { type: 'succeed' };
  return named(el, sets.length === 1 ? sets[0]! : { type: 'sequence', children: sets });
}

/** `<ScriptCondition code>`: a `condition`. */
export function scriptCondition(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, ['code']);
  const expr = condition(el, ctx, 'code', ports.get('code'));
  return expr === null ? { type: 'succeed' } : named(el, { type: 'condition', expr });
}

/** `<SetBlackboard output_key value>`: a `set`. */
export function setBlackboard(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
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
export function ifThenElse(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
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
export function whileDoElse(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
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

/**
 * Pre- and post-conditions, in BehaviorTree.CPP's order: `_failureIf` then `_successIf` decide before the node
 * ticks; `_onSuccess` / `_onFailure` then `_post` run after it finishes, also when a pre-condition decided.
 */
export function applyConditions(el: XmlElement, base: Node, ctx: ConvertContext): Node {
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

