// Tree validation: checks one tree definition against the node catalog and the trees.md contract.
// It collects every problem (never only the first) and never throws; the compiler runs only on trees that pass.

import type { NodeCatalog } from './catalog.js';
import { ABORT_MODES, COMMON_FIELDS, FORBIDDEN_NAMES } from './definition.js';
import { describeValue, didYouMean, listNames, TreeMsg, type TreeErrorCode, type ValidationError, type ValidationWarning } from './errors.js';
import { checkExpression } from './expr/index.js';
import type { NodeDefinition, NodeKind, ParamSpec } from './node.js';
import { isObject, PARAM_TYPES, type ParamCheck } from './params.js';

export type { ValidationError, ValidationWarning } from './errors.js';

/** What validation needs besides the definition itself. */
export interface ValidateContext {
  /** The node kinds and named services trees may use. */
  readonly catalog: NodeCatalog;
  /** The file name put in every error (default: the tree name). */
  readonly file?: string;
  /**
   * Other trees' definitions, for subtrees: `undefined` means "no such tree". Any other value means
   * the tree exists; when it is not a well-formed definition its own validation reports why, and
   * checks that depend on it (args keys) are skipped here.
   */
  readonly trees?: (name: string) => unknown;
  /** Every tree name, for "did you mean" on an unknown subtree. */
  readonly treeNames?: readonly string[];
  /**
   * Set when every tree of a library is validated: a subtree cycle is then reported only by the
   * tree whose name sorts first in the cycle, so each cycle appears once. Otherwise every cycle
   * through this tree is reported.
   */
  readonly cyclesOncePerLibrary?: boolean;
}

/** Deepest nesting of nodes accepted in one file (deeper trees are split into subtrees). */
export const MAX_NODE_DEPTH = 200;
/** Deepest nesting accepted inside a literal value (blackboard initial values, action args). */
const MAX_VALUE_DEPTH = 64;
/** Bound on the subtree-graph search, so a hostile library cannot make validation slow. */
const CYCLE_SEARCH_BUDGET = 10_000;

const TOP_FIELDS = ['$schema', 'description', 'blackboard', 'root'] as const;
const SERVICE_FIELDS = ['every', 'values', 'service'] as const;

type JsonObject = Record<string, unknown>;

/** The keys a write may name, and whose blackboard declares them (null: this tree's). */
interface KeyScope {
  readonly keys: ReadonlySet<string>;
  readonly tree: string | null;
}

/** The parent of a node, for abort placement; `kind` is undefined when the parent's type is unknown. */
interface ParentInfo {
  readonly kind: NodeKind | undefined;
  readonly type: string;
  /** `reactive: true` on the parent (a reactive sequence or selector). */
  readonly reactive: boolean;
}

/** Everything validation found in one tree: errors (the tree cannot load) and warnings (it can). */
export interface TreeCheck {
  readonly errors: ValidationError[];
  readonly warnings: ValidationWarning[];
}

/**
 * Validates tree `name`. Returns every problem found, in file order (a node's own problems before
 * its children's); an empty list means `compileTree` will accept the tree.
 *
 * Expressions are checked against this tree's own declared blackboard keys; a subtree's `args`
 * keys must be declared in the subtree's blackboard. Subtree cycles through this tree are
 * reported at the subtree node where they start.
 */
export function validateTree(name: string, definition: unknown, ctx: ValidateContext): ValidationError[] {
  return checkTree(name, definition, ctx).errors;
}

/**
 * Like {@link validateTree}, with the warnings too: things that load and run but probably do not do
 * what the designer meant (`abort: "lower"` under a reactive selector). Warnings come in file order.
 */
export function checkTree(name: string, definition: unknown, ctx: ValidateContext): TreeCheck {
  const v = new TreeValidator(name, definition, ctx);
  v.run();
  return { errors: v.errors, warnings: v.warnings };
}

class TreeValidator {
  readonly errors: ValidationError[] = [];
  readonly warnings: ValidationWarning[] = [];
  private readonly name: string;
  private readonly definition: unknown;
  private readonly ctx: ValidateContext;
  private readonly file: string;
  private readonly selector: NodeKind | undefined;
  private treeScope: KeyScope = { keys: new Set(), tree: null };

  constructor(name: string, definition: unknown, ctx: ValidateContext) {
    this.name = name;
    this.definition = definition;
    this.ctx = ctx;
    this.file = ctx.file ?? name;
    this.selector = ctx.catalog.get('selector');
  }

  run(): void {
    const def = this.definition;
    if (!isObject(def)) {
      this.report('E_TREE_SHAPE', '', TreeMsg.notAnObject(def));
      return;
    }
    for (const key of Object.keys(def)) {
      if ((TOP_FIELDS as readonly string[]).includes(key)) continue;
      if (FORBIDDEN_NAMES.has(key)) this.report('E_NAME_FORBIDDEN', '', TreeMsg.forbiddenName(key, 'a field name'), key);
      else this.report('E_TREE_SHAPE', '', TreeMsg.topField(key, didYouMean(key, TOP_FIELDS)), key);
    }
    for (const field of ['$schema', 'description'] as const) {
      const v = own(def, field);
      if (v !== undefined && typeof v !== 'string') this.report('E_TREE_SHAPE', '', TreeMsg.topFieldType(field, v), field);
    }
    this.treeScope = { keys: this.blackboard(own(def, 'blackboard')), tree: null };
    const root = own(def, 'root');
    if (root === undefined) this.report('E_TREE_SHAPE', '', TreeMsg.missingRoot());
    else this.node(root, 'root', null, 1);
    this.cycles(root);
  }

  /** Checks the blackboard and returns its declared keys (forbidden names left out). */
  private blackboard(bb: unknown): ReadonlySet<string> {
    const keys = new Set<string>();
    if (bb === undefined) return keys;
    if (!isObject(bb)) {
      this.report('E_TREE_SHAPE', '', TreeMsg.blackboardNotObject(bb), 'blackboard');
      return keys;
    }
    for (const key of Object.keys(bb)) {
      if (FORBIDDEN_NAMES.has(key)) {
        this.report('E_NAME_FORBIDDEN', 'blackboard', TreeMsg.forbiddenName(key, 'a blackboard key'), key);
        continue;
      }
      keys.add(key);
      const problem = jsonProblem(bb[key], 0);
      if (problem === null) continue;
      if ('forbidden' in problem) this.report('E_NAME_FORBIDDEN', 'blackboard', TreeMsg.forbiddenName(problem.forbidden, 'a key'), key);
      else this.report('E_TREE_SHAPE', 'blackboard', TreeMsg.blackboardValue(key, problem.why), key);
    }
    return keys;
  }

  private node(n: unknown, path: string, parent: ParentInfo | null, depth: number): void {
    if (!isObject(n)) {
      this.report('E_NODE_NOT_OBJECT', path, TreeMsg.nodeNotObject(n));
      return;
    }
    if (depth > MAX_NODE_DEPTH) {
      this.report('E_TREE_SHAPE', path, TreeMsg.tooDeep(MAX_NODE_DEPTH));
      return;
    }
    const catalog = this.ctx.catalog;
    const type = own(n, 'type');
    let kind: NodeKind | undefined;
    if (type === undefined) this.report('E_NODE_UNKNOWN_TYPE', path, TreeMsg.noType());
    else if (typeof type !== 'string') this.report('E_NODE_UNKNOWN_TYPE', path, TreeMsg.typeNotString(type));
    else {
      kind = catalog.get(type);
      if (kind === undefined) this.report('E_NODE_UNKNOWN_TYPE', path, TreeMsg.unknownType(type, didYouMean(type, catalog.typeNames())));
    }
    const typeName = typeof type === 'string' ? type : 'node';

    for (const key of Object.keys(n)) {
      if (FORBIDDEN_NAMES.has(key)) {
        this.report('E_NAME_FORBIDDEN', path, TreeMsg.forbiddenName(key, 'a field name'), key);
        continue;
      }
      if (kind === undefined || (COMMON_FIELDS as readonly string[]).includes(key) || Object.hasOwn(kind.params, key)) continue;
      this.report('E_NODE_UNKNOWN_FIELD', path, TreeMsg.unknownField(key, typeName, didYouMean(key, fieldsOf(kind))), key);
    }

    let paramProblems = 0;
    if (kind !== undefined) {
      const subtreeScope = kind.type === 'subtree' ? this.subtreeScope(n, path) : null;
      if (subtreeScope === undefined) paramProblems++;
      for (const [param, spec] of Object.entries(kind.params)) {
        const value = own(n, param);
        if (value === undefined) {
          if (spec.required === true) {
            this.report('E_PARAM_MISSING', path, TreeMsg.paramMissing(`this ${typeName} node`, param, PARAM_TYPES[spec.type].expected(spec)), param);
            paramProblems++;
          }
          continue;
        }
        const scope = kind.type === 'subtree' && param === 'args' ? (subtreeScope ?? null) : this.treeScope;
        if (!this.value(spec, value, path, param, param, scope)) paramProblems++;
      }
    }

    this.commonFields(n, path, parent);

    // Children, by category; only well-placed children are validated further.
    const children = own(n, 'children');
    const child = own(n, 'child');
    const visit: Array<[unknown, string]> = [];
    let childCount = 0;
    let structureOk = true;
    switch (kind?.category) {
      case 'composite':
        if (children === undefined) {
          this.report('E_CHILDREN', path, child !== undefined ? TreeMsg.childNotChildren(typeName) : TreeMsg.needsChildren(typeName), 'children');
          structureOk = false;
        } else if (!Array.isArray(children)) {
          this.report('E_CHILDREN', path, TreeMsg.childrenNotList(children), 'children');
          structureOk = false;
        } else if (children.length === 0) {
          this.report('E_CHILDREN', path, TreeMsg.emptyChildren(typeName), 'children');
          structureOk = false;
        } else {
          if (child !== undefined) this.report('E_CHILDREN', path, TreeMsg.childNotChildren(typeName), 'child');
          childCount = children.length;
          children.forEach((c, k) => visit.push([c, `${path}.children[${k}]`]));
        }
        break;
      case 'decorator':
        if (children !== undefined) {
          this.report('E_CHILDREN', path, TreeMsg.childrenNotChild(typeName), 'children');
          structureOk = false;
        }
        if (child === undefined) {
          if (children === undefined) this.report('E_CHILDREN', path, TreeMsg.needsChild(typeName), 'child');
          structureOk = false;
        } else if (Array.isArray(child)) {
          this.report('E_CHILDREN', path, TreeMsg.childIsList(), 'child');
          structureOk = false;
        } else {
          childCount = 1;
          visit.push([child, `${path}.child`]);
        }
        break;
      case 'leaf':
        if (children !== undefined) this.report('E_CHILDREN', path, TreeMsg.leafHasChildren(typeName, 'children'), 'children');
        if (child !== undefined) this.report('E_CHILDREN', path, TreeMsg.leafHasChildren(typeName, 'child'), 'child');
        break;
      case undefined:
        // Unknown type: still look inside, so one typo does not hide the problems below it.
        if (Array.isArray(children)) children.forEach((c, k) => visit.push([c, `${path}.children[${k}]`]));
        if (child !== undefined && !Array.isArray(child)) visit.push([child, `${path}.child`]);
        break;
    }

    // The kind's own rules run on nodes whose declared parameters and children are sound.
    if (kind?.validate !== undefined && paramProblems === 0 && structureOk) {
      try {
        kind.validate(n as NodeDefinition, (message, field) => this.report('E_PARAM_INVALID', path, message, field), { childCount });
      } catch (err) {
        this.report('E_PARAM_INVALID', path, TreeMsg.kindCheckThrew(kind.type, err instanceof Error ? err.message : String(err)));
      }
    }

    const me: ParentInfo = { kind, type: typeName, reactive: own(n, 'reactive') === true };
    for (const [c, at] of visit) this.node(c, at, me, depth + 1);
  }

  /** `name`, `if`, `abort` (values and placement) and `services`. */
  private commonFields(n: JsonObject, path: string, parent: ParentInfo | null): void {
    const name = own(n, 'name');
    if (name !== undefined && typeof name !== 'string') this.report('E_PARAM_TYPE', path, TreeMsg.paramType('name', 'a string', name), 'name');
    const guard = own(n, 'if');
    if (guard !== undefined) {
      if (typeof guard !== 'string') this.report('E_PARAM_TYPE', path, TreeMsg.paramType('if', 'an expression (a string)', guard), 'if');
      else this.expression(guard, path, 'if');
    }
    const abort = own(n, 'abort');
    if (abort !== undefined) {
      if (typeof abort !== 'string') {
        this.report('E_PARAM_TYPE', path, TreeMsg.paramType('abort', listNames(ABORT_MODES), abort), 'abort');
      } else if (!(ABORT_MODES as readonly string[]).includes(abort)) {
        this.report('E_PARAM_RANGE', path, TreeMsg.notOneOf('abort', ABORT_MODES, abort, didYouMean(abort, ABORT_MODES)), 'abort');
      } else if (abort !== 'none') {
        if (guard === undefined) this.report('E_ABORT_PLACEMENT', path, TreeMsg.abortWithoutGuard(abort), 'abort');
        // Under a parent of unknown type the placement cannot be judged; that type is reported already.
        const underSelector = parent !== null && (parent.kind === undefined || parent.kind === this.selector);
        if ((abort === 'lower' || abort === 'both') && !underSelector) {
          this.report('E_ABORT_PLACEMENT', path, TreeMsg.abortNotUnderSelector(abort, parent?.type ?? null), 'abort');
        } else if ((abort === 'lower' || abort === 'both') && parent?.kind === this.selector && parent?.reactive === true) {
          // trees.md, "Cases pinned after review": legal, but the reactive selector already re-checks.
          this.warnings.push({ code: 'W_ABORT_REACTIVE', file: this.file, path, message: TreeMsg.abortUnderReactive(abort), field: 'abort' });
        }
      }
    }
    const services = own(n, 'services');
    if (services !== undefined) this.services(services, path);
  }

  private services(list: unknown, path: string): void {
    if (!Array.isArray(list)) {
      this.report('E_SERVICE', path, TreeMsg.servicesNotList(list), 'services');
      return;
    }
    const catalog = this.ctx.catalog;
    list.forEach((s: unknown, k) => {
      const at = `services[${k}]`;
      if (!isObject(s)) {
        this.report('E_SERVICE', path, TreeMsg.serviceNotObject(s), at);
        return;
      }
      const serviceName = own(s, 'service');
      const values = own(s, 'values');
      const named = typeof serviceName === 'string' ? catalog.service(serviceName) : undefined;
      const unknownNamed = typeof serviceName === 'string' && named === undefined;
      for (const key of Object.keys(s)) {
        if (FORBIDDEN_NAMES.has(key)) {
          this.report('E_NAME_FORBIDDEN', path, TreeMsg.forbiddenName(key, 'a field name'), `${at}.${key}`);
          continue;
        }
        // An unknown service's parameters are unknown too: its name is the one error to report.
        if ((SERVICE_FIELDS as readonly string[]).includes(key) || unknownNamed || (named !== undefined && Object.hasOwn(named.params, key))) continue;
        const candidates = [...SERVICE_FIELDS, ...Object.keys(named?.params ?? {})];
        this.report('E_SERVICE', path, TreeMsg.serviceField(key, didYouMean(key, candidates)), `${at}.${key}`);
      }
      const every = own(s, 'every');
      if (every === undefined) this.report('E_SERVICE', path, TreeMsg.serviceNoEvery(), `${at}.every`);
      else if (typeof every !== 'number' || !Number.isFinite(every) || every <= 0) this.report('E_SERVICE', path, TreeMsg.serviceBadEvery(every), `${at}.every`);
      if (values !== undefined && serviceName !== undefined) this.report('E_SERVICE', path, TreeMsg.serviceBoth(), at);
      else if (values === undefined && serviceName === undefined) this.report('E_SERVICE', path, TreeMsg.serviceNeither(), at);
      if (values !== undefined) {
        if (!isObject(values)) this.report('E_SERVICE', path, TreeMsg.serviceValues(values), `${at}.values`);
        else this.writes(values, path, `${at}.values`, 'values', this.treeScope);
      }
      if (serviceName === undefined) return;
      if (typeof serviceName !== 'string') {
        this.report('E_SERVICE', path, TreeMsg.serviceName(serviceName), `${at}.service`);
      } else if (named === undefined) {
        const names = catalog.serviceNames();
        this.report('E_SERVICE', path, TreeMsg.unknownService(serviceName, didYouMean(serviceName, names), names.length > 0), `${at}.service`);
      } else {
        for (const [param, spec] of Object.entries(named.params)) {
          const value = own(s, param);
          if (value === undefined) {
            if (spec.required === true) this.report('E_PARAM_MISSING', path, TreeMsg.paramMissing(`service '${serviceName}'`, param, PARAM_TYPES[spec.type].expected(spec)), `${at}.${param}`);
          } else {
            this.value(spec, value, path, `${at}.${param}`, param, this.treeScope);
          }
        }
      }
    });
  }

  /**
   * Checks one parameter value against its spec (PARAM_TYPES holds each type's rules); returns false
   * if anything was reported. `field` goes in the error; `label` is how the message names it.
   */
  private value(spec: ParamSpec, v: unknown, path: string, field: string, label: string, scope: KeyScope | null): boolean {
    const check: ParamCheck = {
      label,
      fail: (code, message) => this.fail(code, path, message, field),
      expression: (source) => this.expression(source, path, field),
      writes: (map, literals) => this.writes(map, path, field, label, scope, literals),
      args: (map) => this.args(map, path, field, label),
    };
    return PARAM_TYPES[spec.type].check(check, spec, v);
  }

  /** A map of blackboard key → expression: keys declared in `scope` (null: not checkable), values compiled. */
  private writes(map: JsonObject, path: string, field: string, label: string, scope: KeyScope | null, literals = false): boolean {
    let ok = true;
    for (const key of Object.keys(map)) {
      const f = `${field}.${key}`;
      const l = `${label}.${key}`;
      if (FORBIDDEN_NAMES.has(key)) {
        ok = this.fail('E_NAME_FORBIDDEN', path, TreeMsg.forbiddenName(key, 'a blackboard key'), f);
        continue;
      }
      if (scope !== null && !scope.keys.has(key)) {
        const suggestion = didYouMean(key, scope.keys);
        const message = scope.tree === null ? TreeMsg.undeclaredKey(key, suggestion) : TreeMsg.undeclaredSubtreeKey(key, scope.tree, suggestion);
        ok = this.fail('E_BLACKBOARD_UNDECLARED', path, message, f);
      }
      const source = map[key];
      if (typeof source === 'string') {
        if (!this.expression(source, path, f)) ok = false;
      } else if (!literals) ok = this.fail('E_PARAM_TYPE', path, TreeMsg.literalNotExpression(l, source), f);
      else {
        const problem = jsonProblem(source, 0);
        if (problem === null) continue;
        if ('forbidden' in problem) ok = this.fail('E_NAME_FORBIDDEN', path, TreeMsg.forbiddenName(problem.forbidden, 'a key'), f);
        else ok = this.fail('E_PARAM_TYPE', path, TreeMsg.notJsonValue(l, problem.why), f);
      }
    }
    return ok;
  }

  /** A map of name → value: strings are expressions, anything else must be a JSON literal. */
  private args(map: JsonObject, path: string, field: string, label: string): boolean {
    let ok = true;
    for (const key of Object.keys(map)) {
      const f = `${field}.${key}`;
      if (FORBIDDEN_NAMES.has(key)) {
        ok = this.fail('E_NAME_FORBIDDEN', path, TreeMsg.forbiddenName(key, `a key of '${label}'`), f);
        continue;
      }
      const value = map[key];
      if (typeof value === 'string') {
        if (!this.expression(value, path, f)) ok = false;
        continue;
      }
      const problem = jsonProblem(value, 0);
      if (problem === null) continue;
      if ('forbidden' in problem) ok = this.fail('E_NAME_FORBIDDEN', path, TreeMsg.forbiddenName(problem.forbidden, 'a key'), f);
      else ok = this.fail('E_PARAM_TYPE', path, TreeMsg.notJsonValue(`${label}.${key}`, problem.why), f);
    }
    return ok;
  }

  /** Checks an expression against this tree's declared keys (no code is generated); reports its errors with their columns. */
  private expression(source: string, path: string, field: string): boolean {
    const result = checkExpression(source, { blackboardKeys: this.treeScope.keys });
    if (result.ok) return true;
    for (const e of result.errors) this.errors.push({ code: e.code, file: this.file, path, message: e.message, field, column: e.column });
    return false;
  }

  /**
   * Resolves a subtree node's tree: reports an unknown name (returns undefined), returns the keys
   * its args may write, or null when they cannot be checked (no name yet, malformed subtree).
   */
  private subtreeScope(n: JsonObject, path: string): KeyScope | null | undefined {
    const tree = own(n, 'tree');
    if (typeof tree !== 'string' || tree === '') return null;
    const sub = this.lookup(tree);
    if (sub === undefined) {
      this.report('E_SUBTREE_UNKNOWN', path, TreeMsg.unknownTree(tree, didYouMean(tree, this.ctx.treeNames ?? [])), 'tree');
      return undefined;
    }
    if (!isObject(sub)) return null;
    const bb = own(sub, 'blackboard');
    if (bb === undefined) return { keys: new Set(), tree };
    if (!isObject(bb)) return null;
    return { keys: new Set(Object.keys(bb).filter((k) => !FORBIDDEN_NAMES.has(k))), tree };
  }

  private lookup(tree: string): unknown {
    return tree === this.name ? this.definition : this.ctx.trees?.(tree);
  }

  /** Reports every subtree cycle through this tree (a → b → a), once, at the subtree node that starts it. */
  private cycles(root: unknown): void {
    const refs = subtreeRefs(root);
    if (refs.length === 0) return;
    const targets = new Map<string, string[]>();
    const targetsOf = (tree: string): string[] => {
      let list = targets.get(tree);
      if (list === undefined) {
        const def = this.lookup(tree);
        list = isObject(def) ? [...new Set(subtreeRefs(own(def, 'root')).map((r) => r.tree))] : [];
        targets.set(tree, list);
      }
      return list;
    };
    let budget = CYCLE_SEARCH_BUDGET;
    const reported = new Set<string>();
    for (const ref of refs) {
      const found: string[][] = [];
      const search = (tree: string, trail: string[]): void => {
        if (--budget < 0) return;
        if (tree === this.name) {
          found.push([...trail, tree]);
          return;
        }
        // A cycle that does not come back here is reported by the trees on it.
        if (trail.includes(tree)) return;
        for (const next of targetsOf(tree)) search(next, [...trail, tree]);
      };
      search(ref.tree, [this.name]);
      for (const cycle of found) {
        const key = cycle.join('\n');
        if (reported.has(key)) continue;
        reported.add(key);
        if (this.ctx.cyclesOncePerLibrary === true && cycle.some((t) => t < this.name)) continue;
        this.report('E_SUBTREE_CYCLE', ref.path, TreeMsg.subtreeCycle(cycle), 'tree');
      }
    }
  }

  private report(code: TreeErrorCode, path: string, message: string, field?: string): void {
    this.errors.push(field === undefined ? { code, file: this.file, path, message } : { code, file: this.file, path, message, field });
  }

  /** Reports and returns false, so checks read `return ok || this.fail(...)`. */
  private fail(code: TreeErrorCode, path: string, message: string, field?: string): false {
    this.report(code, path, message, field);
    return false;
  }
}

/** An own property: `node.constructor` must not find Object's. */
function own(o: JsonObject, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

/** The fields a node of `kind` may carry, for "did you mean". */
function fieldsOf(kind: NodeKind): string[] {
  const fields = [...Object.keys(kind.params), 'name', 'if', 'abort', 'services'];
  if (kind.category === 'composite') fields.push('children');
  if (kind.category === 'decorator') fields.push('child');
  return fields;
}

/** Why `v` is not a JSON value (or holds a forbidden key), or null when it is one. */
function jsonProblem(v: unknown, depth: number): { readonly why: string } | { readonly forbidden: string } | null {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return null;
  if (typeof v === 'number') return Number.isFinite(v) ? null : { why: String(v) };
  if (depth >= MAX_VALUE_DEPTH) return { why: `a value nested deeper than ${MAX_VALUE_DEPTH} levels` };
  if (Array.isArray(v)) {
    for (let k = 0; k < v.length; k++) {
      const p = jsonProblem(v[k], depth + 1);
      if (p !== null) return p;
    }
    return null;
  }
  if (isObject(v)) {
    for (const key of Object.keys(v)) {
      if (FORBIDDEN_NAMES.has(key)) return { forbidden: key };
      const p = jsonProblem(v[key], depth + 1);
      if (p !== null) return p;
    }
    return null;
  }
  if (typeof v === 'object') return { why: `a ${Object.prototype.toString.call(v).slice(8, -1)} object` };
  return { why: describeValue(v) };
}

/** The subtree nodes of a definition in file order, with their paths (depth-bounded like validation). */
function subtreeRefs(root: unknown): Array<{ readonly tree: string; readonly path: string }> {
  const refs: Array<{ tree: string; path: string }> = [];
  const walk = (n: unknown, path: string, depth: number): void => {
    if (!isObject(n) || depth > MAX_NODE_DEPTH) return;
    const tree = own(n, 'tree');
    if (own(n, 'type') === 'subtree' && typeof tree === 'string') refs.push({ tree, path });
    const children = own(n, 'children');
    if (Array.isArray(children)) children.forEach((c, k) => walk(c, `${path}.children[${k}]`, depth + 1));
    walk(own(n, 'child'), `${path}.child`, depth + 1);
  };
  walk(root, 'root', 1);
  return refs;
}
