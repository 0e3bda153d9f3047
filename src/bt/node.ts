// The contract between the engine and a node kind: its manifest (parameters, children) and its behavior.
// Each file in nodes/ exports one NodeKind made with defineNode; catalog.ts registers them all.

import type { Code } from './codegen.js';
import type { CompiledExpr } from './expr/index.js';
import type { Agent } from './agent.js';
import type { TickStatus } from './status.js';

/** The type of a declared parameter; params.ts holds each type's check, message wording and JSON Schema. */
export type ParamType =
  /** A JSON number; `min`/`max` bound it; `integer` requires a whole number; `forever` also allows -1. */
  | 'number'
  /** true / false. */
  | 'boolean'
  /** A plain string (a name, not an expression). */
  | 'string'
  /** One of `values`. */
  | 'enum'
  /** A string holding an expression, checked and compiled at load time. */
  | 'expression'
  /** A map of blackboard key → expression (`set.values`, services' `values`): keys must be declared. */
  | 'writes'
  /** A map of name → value where a string is an expression and anything else a literal (`action.args`). */
  | 'args'
  /** seconds (number ≥ 0) or [min, max] seconds (`wait`). */
  | 'duration'
  /** A list of non-negative numbers, one per child (`random.weights`). */
  | 'weights';

/** A declared parameter of a node kind (BehaviorTree.CPP's providedPorts). */
export interface ParamSpec {
  readonly type: ParamType;
  readonly description: string;
  readonly required?: boolean;
  readonly default?: unknown;
  readonly min?: number;
  readonly max?: number;
  readonly integer?: boolean;
  /** For 'number': -1 is also accepted and means "forever". */
  readonly forever?: boolean;
  /** For 'writes': non-string values are JSON literals written as they are (subtree `args`). */
  readonly literals?: boolean;
  /** For 'enum'. */
  readonly values?: readonly string[];
}

export type NodeCategory = 'composite' | 'decorator' | 'leaf';

/** The JSON of one node, as written in a tree file. */
export type NodeDefinition = Readonly<Record<string, unknown>> & { readonly type: string };

/** A node's tick: `fresh` is true when the node starts (it was not running before this tick). */
export type TickFn = (agent: Agent, fresh: boolean) => TickStatus;

/** What a node kind hands back to the engine once built for one node of one tree. */
export interface NodeBehavior {
  /** Called by the engine after the node's guard passed; returns the node's status for this tick. */
  readonly tick: TickFn;
  /**
   * Called when the node is halted while running, after its running children were halted (deepest
   * first). Leaves that hold outside work (actions) cancel it here. Composites need no onHalt for
   * their children: the engine halts them.
   */
  readonly onHalt?: (agent: Agent) => void;
  /**
   * Optional: the same behaviour as JavaScript source, so the engine can compile a whole subtree into
   * one function (no call per node). Must do exactly what `tick` does; see {@link NodeEmitter}.
   */
  readonly emit?: EmitFn;
  /**
   * Optional, for the inspector: what the node's slots hold where it explains behaviour, e.g. repeat's
   * `{ count, limit }` or cooldown's `{ left }` (seconds). Called after a watched agent's tick only.
   */
  readonly state?: (agent: Agent) => Record<string, number> | null;
}

/**
 * Writes statements that compute the node's status into the variable `target`. `fresh` names a
 * boolean variable (the node starts this tick); `a` is the agent, `sl` its slots (`a.slots`, loaded once per
 * generated function: V8 need not load the field again after every call). The statements run inside a block
 * labelled `emitter.label`: `break <label>` ends the node early (after setting `target`).
 * Written with the `js` tagged template of codegen.ts, which takes only numbers, Code and identifiers:
 * every value from the tree file (names, strings, parameters) reaches the code through `bind`.
 */
export type EmitFn = (emitter: NodeEmitter, fresh: Code, target: Code) => Code;

/** What the engine offers an EmitFn. Generated code sees runtime values only through `bind`. */
export interface NodeEmitter {
  /** The label of the block the node's statements run in. */
  readonly label: Code;
  /** An identifier holding `value` at run time (functions, arrays, numbers, strings, compiled expressions). */
  bind(value: unknown): Code;
  /** A fresh local variable (declared by the engine). */
  temp(): Code;
  /** Statements ticking child k (inline when it can be, else a call) that leave its status in `target`. */
  child(k: number, target: Code): Code;
  /**
   * Statements writing blackboard keys (NodeBuilder.writes), every value evaluated before any is
   * written, with the keys as constants in the code: what blackboardWriter does, without its calls.
   */
  writes(writes: ReadonlyArray<readonly [string, CompiledExpr]>): Code;
}

/** The engine's services to a node kind while it builds one node: slots, children, compiled parameters. */
export interface NodeBuilder {
  /** This node's number in the compiled tree. */
  readonly index: number;
  /** The node's JSON (validated). */
  readonly definition: NodeDefinition;
  /** The JSON path of the node, for runtime error messages. */
  readonly path: string;
  /** Number of children (0 for leaves, 1 for decorators). */
  readonly childCount: number;
  /** The node numbers of the children, in order. */
  readonly children: readonly number[];
  /** The compiled tick function of child k: the engine's wrapper (guard, services, status bookkeeping). */
  child(k: number): (agent: Agent) => TickStatus;
  /** Reserves `count` numeric state slots in every agent (Float64, initialised to 0); returns the first slot's index. */
  slots(count: number): number;
  /** A parameter's value, or its declared default. */
  param<T>(name: string): T;
  /** A compiled expression parameter (type 'expression'); null when the parameter is absent. */
  expression(name: string): CompiledExpr | null;
  /** A compiled 'writes' parameter: [key, expression] pairs. */
  writes(name: string): ReadonlyArray<readonly [string, CompiledExpr]>;
  /** A compiled 'args' parameter: a function building the args object (shared frozen object when all literal). */
  args(name: string): (agent: Agent) => Readonly<Record<string, unknown>>;
  /** Halts node number `node` (and its running descendants, deepest first); no-op if it is not running. */
  halt(agent: Agent, node: number): void;
  /** Registers this node as an action leaf so results can find it: slots holding its seq and pending result. */
  registerAction(seqSlot: number, resultSlot: number): void;
  /** For abort "lower": child k's guard and the slot remembering its last value, or null if it has no lower abort. */
  lowerAbort(k: number): { readonly guard: CompiledExpr; readonly slot: number } | null;
}

/** Extra validation beyond declared parameters; call `report(message, field?)` for each problem. */
export type ValidateFn = (
  node: NodeDefinition,
  report: (message: string, field?: string) => void,
  info: { readonly childCount: number },
) => void;

/** A node kind: manifest beside behavior (one per file in nodes/). */
export interface NodeKind {
  readonly type: string;
  readonly aliases?: readonly string[];
  readonly category: NodeCategory;
  /** One sentence for designers (shown in the JSON Schema and docs). */
  readonly description: string;
  readonly params: Readonly<Record<string, ParamSpec>>;
  readonly validate?: ValidateFn;
  readonly build: (b: NodeBuilder) => NodeBehavior;
}

/** Identity helper that keeps literal types and documents intent in node files. */
export function defineNode(kind: NodeKind): NodeKind {
  return kind;
}
