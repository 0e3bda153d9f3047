// The compiler: turns validated tree definitions into one immutable CompiledTree shared by every agent.
// Each node becomes a closure over its node number; agents hold only the flat state those closures index.

import { createHash } from 'node:crypto';
import { CODE_GENERATION, generate, ident, joinCode, js, literal as quote } from './codegen.js';
import type { Agent } from './agent.js';
import type { NodeCatalog, ServiceBuilder } from './catalog.js';
import { COMMON_FIELDS, type AbortMode, type ServiceDefinition, type TreeDefinition } from './definition.js';
import { InvalidTreeError, TreeMsg, type ValidationError } from './errors.js';
import { compileExpression, type CompiledExpr } from './expr/index.js';
import { ObservedCollector, type ObservedFields } from './expr/reads.js';
import type { NodeBehavior, NodeBuilder, NodeDefinition } from './node.js';
import { inlineRoot, markConstantArgs, runServices, wrapNode, type CompiledService, type NodeWrapping } from './program-inline.js';
import { Status, type TickStatus } from './status.js';
import { TRACE_HOOKS, type CheckKind, type TraceHooks } from './trace-program.js';
import { validateTree } from './validate.js';

export type { CompiledService } from './program-inline.js';

/** Static facts about one node, for introspection and error messages. */
export interface NodeInfo {
  readonly type: string;
  readonly name: string | null;
  /** JSON path inside its tree file, e.g. `root.children[2].child`. */
  readonly path: string;
  /** The tree file the node comes from (differs from the compiled tree's name inside subtrees). */
  readonly file: string;
  readonly parent: number;
  readonly children: readonly number[];
  /** For action leaves: the action name. */
  readonly action?: string;
  /** The node's guard (`if`) and abort mode, when it has one. */
  readonly guard?: { readonly if: string; readonly abort: AbortMode };
  /** The node's own parameters as written (e.g. `{ times: 3 }`, `{ expr: "self.hp < 30" }`); absent when none. */
  readonly params?: Readonly<Record<string, unknown>>;
  /** The node's services as written (`every`, `values` or `service` and its parameters). */
  readonly services?: readonly ServiceDefinition[];
}

/** An immutable compiled tree: shared by every agent on it, never mutated after compileTree returns. */
export interface CompiledTree {
  readonly name: string;
  /** Fingerprint of the definitions compiled (this tree and its subtrees). */
  readonly hash: string;
  readonly nodeCount: number;
  readonly slotCount: number;
  readonly nodes: readonly NodeInfo[];
  /** Declared blackboard keys, subtrees' included. */
  readonly blackboardKeys: ReadonlySet<string>;
  /** The `self.X` / `world.X` fields its expressions read (guards, params, args, services, subtrees). */
  readonly observed: ObservedFields;
  /** Node numbers of action leaves, with the slots holding each one's seq and pending result. */
  readonly actionNodes: Int32Array;
  readonly actionSeqSlots: Int32Array;
  readonly actionResultSlots: Int32Array;
  /** Ticks the root node (index 0). */
  readonly root: (agent: Agent) => TickStatus;
  /**
   * True when `root` is the whole tree compiled into one function (the default); false when it calls
   * one function per node (`inline: false`, a traced program, a tree too large, or a process started
   * with `--disallow-code-generation-from-strings`).
   */
  readonly inlined: boolean;
  /** Halts node `node` of `agent` and its running descendants, deepest first. */
  halt(agent: Agent, node: number): void;
  /** A fresh blackboard with the declared initial values. */
  newBlackboard(): Record<string, unknown>;
  /**
   * The traced variant of this tree for watched agents (trace.ts): one call per node with recording
   * hooks, same slot layout, same decisions. Compiled on the first call, then cached.
   */
  traced(): TracedProgram;
}

/** The call-per-node program a watched agent ticks through, and what the recorder reads after a tick. */
export interface TracedProgram {
  readonly root: (agent: Agent) => TickStatus;
  readonly halt: (agent: Agent, node: number) => void;
  /** Per node: its kind's state reader (NodeBehavior.state), or null. */
  readonly states: ReadonlyArray<((agent: Agent) => Record<string, number> | null) | null>;
  /** Per node: the slots holding each service's next due time, or null. */
  readonly serviceSlots: ReadonlyArray<readonly number[] | null>;
}

/** Looks up tree definitions by name (for subtrees). */
export type TreeSource = (name: string) => TreeDefinition | undefined;

interface PendingNode {
  readonly def: NodeDefinition;
  readonly info: NodeInfo & { children: number[] };
  readonly file: string;
}

type TickFn = (agent: Agent) => TickStatus;

/** Options of {@link compileTree}. */
export interface CompileOptions {
  /**
   * Compile the tree from the root down into one function where node kinds allow it (`emit`), instead of
   * one call per node. Default true; false keeps a call per node (the reference the tests compare with).
   */
  readonly inline?: boolean;
  /** Build the traced variant (CompiledTree.traced): call per node, with the recording hooks of `hooks`. */
  readonly trace?: TraceHooks;
  /**
   * With `inline`: a node whose generated code is longer than this many characters becomes a function
   * of its own (default 6 KiB). Tests set 0 to split every node.
   */
  readonly splitSource?: number;
}

/**
 * Validates tree `name` and every subtree it reaches (against `catalog`), then compiles it.
 * @throws {InvalidTreeError} listing every problem, when validation rejects any of those trees (or
 *   `name` is unknown): nothing of an invalid definition ever reaches generated code.
 */
export function compileTree(name: string, source: TreeSource, catalog: NodeCatalog, options: CompileOptions = {}): CompiledTree {
  const errors: ValidationError[] = [];
  const seen = new Set<string>();
  const pending = [name];
  const lookup = (t: string): unknown => source(t);
  while (pending.length > 0) {
    const tree = pending.pop()!;
    if (seen.has(tree)) continue;
    seen.add(tree);
    const def = source(tree);
    if (def === undefined) {
      errors.push({ code: 'E_SUBTREE_UNKNOWN', file: tree, path: '', message: TreeMsg.unknownTree(tree, null) });
      continue;
    }
    const found = validateTree(tree, def, { catalog, trees: lookup });
    errors.push(...found);
    if (found.length === 0) walkDefinition(def.root, (n) => typeof n['tree'] === 'string' && n.type === 'subtree' && void pending.push(n['tree']));
  }
  if (errors.length > 0) throw new InvalidTreeError(name, errors);
  return compileValidatedTree(name, source, catalog, options);
}

/**
 * Compiles tree `name`, which must already have passed validation with its subtrees (TreeLibrary
 * validates a whole folder first). Not part of the engine's public API: use compileTree.
 */
export function compileValidatedTree(name: string, source: TreeSource, catalog: NodeCatalog, options: CompileOptions = {}): CompiledTree {
  const hooks = options.trace ?? null;
  const main = source(name);
  if (main === undefined) throw new Error(`unknown tree '${name}'`);

  // Blackboard: this tree's keys first, then each subtree's keys not yet declared (first declaration wins).
  const initial: Record<string, unknown> = {};
  const seenTrees: string[] = [];
  const collect = (treeName: string): void => {
    if (seenTrees.includes(treeName)) return;
    seenTrees.push(treeName);
    const def = source(treeName);
    if (def === undefined) throw new Error(`unknown tree '${treeName}'`);
    for (const [key, value] of Object.entries(def.blackboard ?? {})) if (!(key in initial)) initial[key] = value;
    walkDefinition(def.root, (n) => {
      if (n.type === 'subtree' && typeof n['tree'] === 'string') collect(n['tree']);
    });
  };
  collect(name);
  const blackboardKeys = new Set(Object.keys(initial));
  const scope = { blackboardKeys };

  // Pass 1: number the nodes in pre-order (parents before children), inlining subtrees.
  const pending: PendingNode[] = [];
  const inlining: string[] = [name];
  const assign = (def: NodeDefinition, path: string, file: string, parent: number): number => {
    const index = pending.length;
    const info = {
      type: def.type,
      name: typeof def['name'] === 'string' ? def['name'] : null,
      path,
      file,
      parent,
      children: [] as number[],
      ...(def.type === 'action' && typeof def['action'] === 'string' ? { action: def['action'] } : {}),
      ...describeNode(def),
    };
    pending.push({ def, info, file });
    const kind = catalog.get(def.type);
    if (kind === undefined) throw new Error(`unknown node type '${def.type}' at ${file}:${path}`);
    if (def.type === 'subtree') {
      const subName = def['tree'] as string;
      const sub = source(subName);
      if (sub === undefined) throw new Error(`unknown tree '${String(subName)}'`);
      if (inlining.includes(subName)) throw new Error(`subtree cycle: ${[...inlining, subName].join(' → ')}`);
      inlining.push(subName);
      info.children.push(assign(sub.root, 'root', subName, index));
      inlining.pop();
    } else if (kind.category === 'composite') {
      (def['children'] as NodeDefinition[]).forEach((c, k) => info.children.push(assign(c, `${path}.children[${k}]`, file, index)));
    } else if (kind.category === 'decorator') {
      info.children.push(assign(def['child'] as NodeDefinition, `${path}.child`, file, index));
    }
    return index;
  };
  assign(main.root, 'root', name, -1);

  const nodeCount = pending.length;
  let traced: TracedProgram | null = null;
  let slotCount = 0;
  const ticks: TickFn[] = [];
  const behaviors: NodeBehavior[] = [];
  const wrapping: NodeWrapping[] = [];
  const onHalt: Array<((a: Agent) => void) | undefined> = Array.from({ length: nodeCount }, () => undefined);
  const guards: Array<{ guard: CompiledExpr; slot: number; abort: AbortMode } | null> = Array.from({ length: nodeCount }, () => null);
  const actionNodes: number[] = [];
  const actionSeqSlots: number[] = [];
  const actionResultSlots: number[] = [];
  const childLists = pending.map((p) => p.info.children);

  // Every expression the tree compiles passes here, so the observation fields it reads are all seen.
  const observed = new ObservedCollector();
  /** Compiles an expression; in the traced build, `check` makes its evaluations part of the why. */
  const expr = (text: string, where: string, check?: { node: number; kind: CheckKind }): CompiledExpr => {
    observed.add(text);
    const r = compileExpression(text, scope);
    if (!r.ok) throw new Error(`${where}: ${r.errors.map((e) => e.message).join('; ')}`);
    return hooks !== null && check !== undefined ? hooks.expression(r.fn, check.node, check.kind, text) : r.fn;
  };

  function plainHalt(agent: Agent, node: number): void {
    const st = agent.status;
    if (st[node] !== Status.RUNNING) return;
    const children = childLists[node]!;
    for (let k = 0; k < children.length; k++) plainHalt(agent, children[k]!);
    const h = onHalt[node];
    if (h !== undefined) h(agent);
    st[node] = Status.HALTED;
  }
  const halt = hooks === null ? plainHalt : hooks.halt(childLists, onHalt);

  const tree: CompiledTree = {
    name,
    hash: '',
    nodeCount,
    slotCount: 0,
    nodes: pending.map((p) => p.info),
    blackboardKeys,
    observed: { self: [], world: [], dynamic: [] },
    actionNodes: new Int32Array(0),
    actionSeqSlots: new Int32Array(0),
    actionResultSlots: new Int32Array(0),
    root: () => Status.FAILURE,
    inlined: false,
    halt,
    newBlackboard: makeBlackboardFactory(initial),
    traced: () => {
      // Built on the first watch of an agent on this tree: unwatched trees never pay for it.
      if (traced === null) {
        if (hooks !== null) throw new Error('internal: traced program requested before it was built');
        traced = compileTree(name, source, catalog, { trace: TRACE_HOOKS }).traced();
      }
      return traced;
    },
  };

  // Guards first: a parent's lowerAbort() reads its children's guards.
  for (let i = 0; i < nodeCount; i++) {
    const { def, info, file } = pending[i]!;
    if (typeof def['if'] === 'string') {
      guards[i] = {
        guard: expr(def['if'], `${file}:${info.path}.if`, { node: i, kind: 'guard' }),
        slot: slotCount++,
        abort: (def['abort'] as AbortMode | undefined) ?? 'none',
      };
    }
  }

  // Pass 2: build in reverse pre-order, so every child's tick function exists before its parent's.
  for (let i = nodeCount - 1; i >= 0; i--) {
    const { def, info, file } = pending[i]!;
    const kind = catalog.get(def.type)!;
    const where = `${file}:${info.path}`;
    const param = <T>(n: string): T => (def[n] !== undefined ? def[n] : kind.params[n]?.default) as T;
    const builder: NodeBuilder = {
      index: i,
      definition: def,
      path: where,
      childCount: info.children.length,
      children: info.children,
      child: (k) => ticks[info.children[k]!]!,
      slots(count) {
        const first = slotCount;
        slotCount += count;
        return first;
      },
      param,
      expression: (n) => (typeof def[n] === 'string' ? expr(def[n], `${where}.${n}`, def.type === 'log' ? undefined : { node: i, kind: 'condition' }) : null),
      writes: (n) =>
        Object.entries((def[n] as Record<string, unknown> | undefined) ?? {}).map(
          ([k, src]) => [k, typeof src === 'string' ? expr(src, `${where}.${n}.${k}`) : literalValue(src)] as const,
        ),
      args: (n) => compileArgs((def[n] as Record<string, unknown> | undefined) ?? {}, (src, k) => expr(src, `${where}.${n}.${k}`)),
      halt,
      registerAction(seqSlot, resultSlot) {
        actionNodes.push(i);
        actionSeqSlots.push(seqSlot);
        actionResultSlots.push(resultSlot);
      },
      lowerAbort(k) {
        const child = info.children[k]!;
        const g = guards[child];
        if (g === null || g === undefined || !(g.abort === 'lower' || g.abort === 'both')) return null;
        return { guard: hooks === null ? g.guard : hooks.lowerGuard(g.guard, child, g.slot, g.abort), slot: g.slot };
      },
    };
    const behavior: NodeBehavior = kind.build(builder);
    if (behavior.onHalt !== undefined) onHalt[i] = behavior.onHalt;
    const services = compileServices(def, where, catalog, (src, at) => expr(src, at, { node: i, kind: 'service' }), builder);
    ticks[i] =
      hooks === null
        ? wrapNode(i, behavior.tick, guards[i] ?? null, services, halt)
        : hooks.wrap(i, behavior.tick, guards[i] ?? null, services, halt, runServices);
    behaviors[i] = behavior;
    wrapping[i] = { guard: guards[i] ?? null, services };
  }
  const whole = (options.inline ?? true) && hooks === null ? inlineRoot(behaviors, wrapping, childLists, halt, options.splitSource) : null;
  const root = whole ?? ticks[0]!;
  if (hooks !== null) {
    traced = {
      root,
      halt,
      states: behaviors.map((b) => b.state ?? null),
      serviceSlots: wrapping.map((w) => (w.services === null ? null : w.services.map((sv) => sv.slot))),
    };
  }

  const hash = createHash('sha256');
  for (const t of seenTrees) hash.update(`${t}\n${JSON.stringify(source(t))}\n`);
  return Object.freeze({
    ...tree,
    hash: hash.digest('hex').slice(0, 16),
    observed: observed.result(),
    slotCount,
    root,
    inlined: whole !== null,
    actionNodes: Int32Array.from(actionNodes),
    actionSeqSlots: Int32Array.from(actionSeqSlots),
    actionResultSlots: Int32Array.from(actionResultSlots),
  });
}

function compileServices(
  def: NodeDefinition,
  where: string,
  catalog: NodeCatalog,
  expr: (source: string, where: string) => CompiledExpr,
  builder: NodeBuilder,
): CompiledService[] | null {
  const list = def['services'] as ServiceDefinition[] | undefined;
  if (list === undefined || list.length === 0) return null;
  return list.map((s, k) => {
    const at = `${where}.services[${k}]`;
    let run: (agent: Agent) => void;
    let writes: ReadonlyArray<readonly [string, CompiledExpr]> | undefined;
    if (typeof s.service === 'string') {
      const kind = catalog.service(s.service);
      if (kind === undefined) throw new Error(`${at}: unknown service '${s.service}'`);
      const sb: ServiceBuilder = {
        path: at,
        param: <T>(n: string) => (s[n] !== undefined ? s[n] : kind.params[n]?.default) as T,
        expression: (n) => (typeof s[n] === 'string' ? expr(s[n], `${at}.${n}`) : null),
      };
      run = kind.build(sb);
    } else {
      const values = Object.entries(s.values ?? {}).map(([key, src]) => [key, expr(src, `${at}.values.${key}`)] as const);
      writes = values;
      run = (agent) => {
        for (let w = 0; w < values.length; w++) agent.bb[values[w]![0]] = values[w]![1](agent);
      };
    }
    return { every: s.every, slot: builder.slots(1), run, ...(writes !== undefined ? { writes } : {}) };
  });
}

function compileArgs(
  args: Readonly<Record<string, unknown>>,
  expr: (source: string, key: string) => CompiledExpr,
): (agent: Agent) => Readonly<Record<string, unknown>> {
  const keys = Object.keys(args);
  const literal: Record<string, unknown> = {};
  const dynamic: Array<readonly [string, CompiledExpr]> = [];
  for (const k of keys) {
    const v = args[k];
    if (typeof v === 'string') dynamic.push([k, expr(v, k)]);
    else literal[k] = deepFreeze(structuredClone(v));
  }
  if (dynamic.length === 0) {
    const shared = Object.freeze(literal);
    return markConstantArgs(() => shared, shared);
  }
  if (CODE_GENERATION && !keys.includes('__proto__')) {
    // One object literal with the keys in the same order (quoted by `quote`): V8 allocates it from a boilerplate
    // with its final shape, instead of growing an empty object key by key. `__proto__` would set the prototype
    // in a literal as in an assignment, but stays on the loop below so that it is never written into code.
    const values = keys.map((k) => (typeof args[k] === 'string' ? dynamic.find(([d]) => d === k)![1] : literal[k]));
    const props = keys.map((k, i) => (typeof args[k] === 'string' ? js`${quote(k)}: ${ident(`v${i}`)}(a)` : js`${quote(k)}: ${ident(`v${i}`)}`));
    const prelude = joinCode(keys.map((_, i) => js`const ${ident(`v${i}`)} = v[${i}];\n`));
    return generate([ident('v')], js`${prelude}return function args(a) { return { ${joinCode(props, ', ')} }; };`, [values]) as (agent: Agent) => Record<string, unknown>;
  }
  return (agent) => {
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = literal[k];
    for (let d = 0; d < dynamic.length; d++) out[dynamic[d]![0]] = dynamic[d]![1](agent);
    return out;
  };
}

/** A literal written to the blackboard: primitives shared, objects cloned per write (plugins may mutate them). */
function literalValue(v: unknown): CompiledExpr {
  if (v === null || typeof v !== 'object') return () => v;
  return () => structuredClone(v);
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object') {
    for (const inner of Object.values(v)) deepFreeze(inner);
    Object.freeze(v);
  }
  return v;
}

function makeBlackboardFactory(initial: Record<string, unknown>): () => Record<string, unknown> {
  const keys = Object.keys(initial);
  const objectKeys = keys.filter((k) => initial[k] !== null && typeof initial[k] === 'object');
  return () => {
    const bb: Record<string, unknown> = { ...initial };
    for (const k of objectKeys) bb[k] = structuredClone(initial[k]);
    return bb;
  };
}

/** The inspector's view of a node definition: guard, own parameters, services (frozen copies). */
function describeNode(def: NodeDefinition): Pick<NodeInfo, 'guard' | 'params' | 'services'> {
  const out: { guard?: NodeInfo['guard']; params?: NodeInfo['params']; services?: NodeInfo['services'] } = {};
  if (typeof def['if'] === 'string') out.guard = Object.freeze({ if: def['if'], abort: (def['abort'] as AbortMode | undefined) ?? 'none' });
  const params: Record<string, unknown> = {};
  let any = false;
  for (const key of Object.keys(def)) {
    if ((COMMON_FIELDS as readonly string[]).includes(key)) continue;
    params[key] = def[key];
    any = true;
  }
  if (any) out.params = deepFreeze(structuredClone(params));
  const services = def['services'];
  if (Array.isArray(services) && services.length > 0) out.services = deepFreeze(structuredClone(services as ServiceDefinition[]));
  return out;
}

/** Visits every node of a definition (children, child), not following subtrees. */
export function walkDefinition(node: unknown, visit: (n: NodeDefinition) => void): void {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  const n = node as NodeDefinition;
  if (typeof n.type === 'string') visit(n);
  const children = n['children'];
  if (Array.isArray(children)) for (const c of children) walkDefinition(c, visit);
  if (n['child'] !== undefined) walkDefinition(n['child'], visit);
}
