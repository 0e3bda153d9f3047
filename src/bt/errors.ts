// The engine's validation error codes (tree files), each with its meaning and message templates.
// docs/trees.md documents every code listed here; a test keeps the two in step. A retired code is never reused.

import type { ExprError } from './expr/index.js';

/**
 * Every code a tree validation error can carry. Codes are stable: tools and the HTTP
 * `POST /v1/trees/validate` answer expose them, so a code keeps its meaning forever.
 */
export const TreeErrorCode = {
  E_TREE_PARSE: 'E_TREE_PARSE',
  E_TREE_SHAPE: 'E_TREE_SHAPE',
  E_TREE_DUPLICATE: 'E_TREE_DUPLICATE',
  E_NODE_NOT_OBJECT: 'E_NODE_NOT_OBJECT',
  E_NODE_UNKNOWN_TYPE: 'E_NODE_UNKNOWN_TYPE',
  E_NODE_UNKNOWN_FIELD: 'E_NODE_UNKNOWN_FIELD',
  E_PARAM_MISSING: 'E_PARAM_MISSING',
  E_PARAM_TYPE: 'E_PARAM_TYPE',
  E_PARAM_RANGE: 'E_PARAM_RANGE',
  E_PARAM_INVALID: 'E_PARAM_INVALID',
  E_CHILDREN: 'E_CHILDREN',
  E_ABORT_PLACEMENT: 'E_ABORT_PLACEMENT',
  E_BLACKBOARD_UNDECLARED: 'E_BLACKBOARD_UNDECLARED',
  E_NAME_FORBIDDEN: 'E_NAME_FORBIDDEN',
  E_SUBTREE_UNKNOWN: 'E_SUBTREE_UNKNOWN',
  E_SUBTREE_CYCLE: 'E_SUBTREE_CYCLE',
  E_SERVICE: 'E_SERVICE',
  E_EXPR_SYNTAX: 'E_EXPR_SYNTAX',
  E_EXPR_UNKNOWN_FUNCTION: 'E_EXPR_UNKNOWN_FUNCTION',
  E_EXPR_ARITY: 'E_EXPR_ARITY',
  E_EXPR_UNKNOWN_ROOT: 'E_EXPR_UNKNOWN_ROOT',
  E_EXPR_FORBIDDEN_NAME: 'E_EXPR_FORBIDDEN_NAME',
  E_EXPR_UNDECLARED_KEY: 'E_EXPR_UNDECLARED_KEY',
  E_EXPR_TOO_COMPLEX: 'E_EXPR_TOO_COMPLEX',
} as const;

/** A tree validation error code. */
export type TreeErrorCode = (typeof TreeErrorCode)[keyof typeof TreeErrorCode];

/** The catalog: every validation code with one sentence on when it is raised (shown in docs/trees.md). */
export const TREE_ERRORS = {
  E_TREE_PARSE: { description: 'The file is not valid JSON or YAML (or repeats a key); the error carries the line and column the parser stopped at.' },
  E_TREE_SHAPE: {
    description:
      "The file's top level is wrong: not an object, no `root`, `blackboard` not an object, a blackboard initial value that is not a JSON value, an unknown top-level field, or nodes nested too deeply.",
  },
  E_TREE_DUPLICATE: { description: 'Two files in the trees folder give the same tree name (`guard.json` and `guard.yaml`).' },
  E_NODE_NOT_OBJECT: { description: 'Where a node is expected (`root`, an entry of `children`, `child`) there is something other than an object.' },
  E_NODE_UNKNOWN_TYPE: { description: "A node has no `type`, or names a type that is neither built in nor registered by a plugin; the message suggests the closest known type." },
  E_NODE_UNKNOWN_FIELD: { description: "A node carries a field its type does not declare (a typo such as `chidren` is caught at load time); the message suggests the closest field." },
  E_PARAM_MISSING: { description: 'A required parameter of the node type (or of a named service) is absent.' },
  E_PARAM_TYPE: { description: 'A parameter or common field has the wrong type; the message says what was expected and what was found.' },
  E_PARAM_RANGE: { description: 'A parameter has the right type but a value outside what it accepts: below its minimum, not one of its allowed values, an empty name, a bad `[min, max]`.' },
  E_PARAM_INVALID: {
    description:
      "A parameter breaks a rule of its node type beyond type and range, checked by the type's own `validate` hook: `weights` not one per child, a `parallel` threshold above its child count, `until` on an instant action. Plugin hooks report with this code too.",
  },
  E_CHILDREN: { description: 'A composite needs a `children` list with at least one node; a decorator exactly one `child` node; a leaf has neither.' },
  E_ABORT_PLACEMENT: { description: '`abort` is set without an `if` guard to re-check, or `abort: "lower"`/`"both"` is on a node that is not a child of a `selector`.' },
  E_BLACKBOARD_UNDECLARED: {
    description:
      "A write names a blackboard key the tree does not declare: a `set` value, a service's `values`, or a subtree's `args` (which must be declared in the subtree's own blackboard).",
  },
  E_NAME_FORBIDDEN: { description: '`constructor`, `__proto__` or `prototype` is used as a blackboard key, an args or values key, a key inside a literal, or a field name.' },
  E_SUBTREE_UNKNOWN: { description: 'A `subtree` node names a tree that is not loaded.' },
  E_SUBTREE_CYCLE: { description: 'Subtrees include each other in a cycle (`a → b → a`); reported once per cycle, at the subtree node where it starts.' },
  E_SERVICE: {
    description:
      'A `services` entry is wrong: not a list of objects, `every` missing or not a number > 0, not exactly one of `values` and `service`, an unknown service name, or an unknown field.',
  },
  E_EXPR_SYNTAX: { description: 'An expression does not parse; `column` points into the expression text.' },
  E_EXPR_UNKNOWN_FUNCTION: { description: 'An expression calls a function that is not in the fixed library.' },
  E_EXPR_ARITY: { description: 'An expression calls a library function with the wrong number of arguments.' },
  E_EXPR_UNKNOWN_ROOT: { description: 'An expression starts from a name that is not a root (`self`, `bb`, `world`, `agent`, `time`, `dt`).' },
  E_EXPR_FORBIDDEN_NAME: { description: 'An expression uses `constructor`, `__proto__` or `prototype`.' },
  E_EXPR_UNDECLARED_KEY: { description: "An expression reads a blackboard key (`bb.x`) that the tree does not declare." },
  E_EXPR_TOO_COMPLEX: { description: 'An expression is too long, too large or nests too deeply.' },
} as const satisfies { readonly [C in TreeErrorCode]: { readonly description: string } };

// Every code the expression compiler can return must be a validation code too.
type ExprCodesCovered = ExprError['code'] extends TreeErrorCode ? true : never;
const exprCodesCovered: ExprCodesCovered = true;
void exprCodesCovered;

/**
 * One problem in one tree file. `path` is the JSON path of the node (`root.children[2].child`),
 * `blackboard` for a blackboard key, or '' for the file as a whole. A problem in a parameter names
 * it in `field` (`if`, `values.target`, `services[0].every`); for an expression `column` is the
 * 1-based column inside the expression text. When the tree's text is known (a file, a posted text)
 * every error also carries `line` and `column` in that text: the node, the field's key, or for an
 * expression the character the problem starts at (then `column` is the file's, not the expression's).
 */
export interface ValidationError {
  readonly code: TreeErrorCode;
  readonly file: string;
  readonly path: string;
  readonly message: string;
  readonly field?: string;
  readonly line?: number;
  readonly column?: number;
}

/**
 * Every code a tree validation warning can carry. A warning does not stop the tree from loading: it
 * points at something that works but does not do what its author probably meant. Never reused.
 */
export const TreeWarningCode = {
  W_ABORT_REACTIVE: 'W_ABORT_REACTIVE',
} as const;

/** A tree validation warning code. */
export type TreeWarningCode = (typeof TreeWarningCode)[keyof typeof TreeWarningCode];

/** The warnings' catalog, shown in docs/trees.md beside the errors. */
export const TREE_WARNINGS = {
  W_ABORT_REACTIVE: {
    description:
      '`abort: "lower"` (or the lower half of `"both"`) on a child of a `reactive: true` selector: the selector re-checks its earlier children every tick anyway, so it adds nothing.',
  },
} as const satisfies { readonly [C in TreeWarningCode]: { readonly description: string } };

/**
 * Something a tree does that works but is probably not what its author meant; the tree still loads.
 * Same fields as {@link ValidationError}.
 */
export interface ValidationWarning {
  readonly code: TreeWarningCode;
  readonly file: string;
  readonly path: string;
  readonly message: string;
  readonly field?: string;
  readonly line?: number;
  readonly column?: number;
}

/** Longest piece of tree text quoted back in a message. */
const QUOTE_MAX = 40;

/** A designer-facing description of a value that was found where something else was expected. */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > QUOTE_MAX ? `${v.slice(0, QUOTE_MAX)}…` : v)}`;
  if (typeof v === 'number') return Number.isFinite(v) ? `the number ${v}` : String(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/** `'a', 'b' or 'c'`. */
export function listNames(names: readonly string[]): string {
  const quoted = names.map((n) => `'${n}'`);
  if (quoted.length <= 1) return quoted.join('');
  return `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

function hint(suggestion: string | null): string {
  return suggestion === null ? '' : ` (did you mean '${suggestion}'?)`;
}

/**
 * Message templates, one per situation: every validation message comes from here, so tests can
 * assert exact text and docs/trees.md can show it. Messages are sentences for game designers.
 */
export const TreeMsg = {
  // E_TREE_PARSE
  notJson: (why: string): string => `the file is not valid JSON: ${why}`,
  notYaml: (why: string): string => `the file is not valid YAML: ${why}`,
  // E_TREE_SHAPE
  notAnObject: (found: unknown): string => `a tree file must hold one object with a 'root' node, found ${describeValue(found)}`,
  missingRoot: (): string => "the tree has no 'root' node",
  blackboardNotObject: (found: unknown): string => `'blackboard' must be an object of key → initial value, found ${describeValue(found)}`,
  blackboardValue: (key: string, why: string): string => `the initial value of blackboard key '${key}' must be a JSON value, found ${why}`,
  topField: (field: string, suggestion: string | null): string =>
    `unknown top-level field '${field}'${hint(suggestion)}; a tree file has only '$schema', 'description', 'blackboard' and 'root'`,
  topFieldType: (field: string, found: unknown): string => `'${field}' must be a string, found ${describeValue(found)}`,
  tooDeep: (max: number): string => `nodes nest deeper than ${max} levels; split the tree into subtrees`,
  // E_TREE_DUPLICATE
  duplicateTree: (tree: string, files: readonly string[]): string => `tree '${tree}' is defined by more than one file (${files.join(', ')}); keep one`,
  // E_NODE_NOT_OBJECT
  nodeNotObject: (found: unknown): string => `expected a node (an object with a 'type'), found ${describeValue(found)}`,
  // E_NODE_UNKNOWN_TYPE
  noType: (): string => `the node has no 'type'; every node names its type, e.g. "type": "sequence"`,
  typeNotString: (found: unknown): string => `'type' must be a string naming the node type, found ${describeValue(found)}`,
  unknownType: (type: string, suggestion: string | null): string => `unknown node type '${type}'${hint(suggestion)}`,
  // E_NODE_UNKNOWN_FIELD
  unknownField: (field: string, type: string, suggestion: string | null): string => `unknown field '${field}' on this ${type} node${hint(suggestion)}`,
  // E_PARAM_MISSING
  paramMissing: (owner: string, param: string, expected: string): string => `${owner} needs '${param}' (${expected})`,
  // E_PARAM_TYPE
  paramType: (field: string, expected: string, found: unknown): string => `'${field}' must be ${expected}, found ${describeValue(found)}`,
  literalNotExpression: (field: string, found: unknown): string =>
    `'${field}' must be an expression (a string), found ${describeValue(found)}` +
    (found === null || typeof found === 'number' || typeof found === 'boolean' ? `; write it as the expression ${JSON.stringify(JSON.stringify(found))}` : ''),
  notJsonValue: (field: string, why: string): string => `'${field}' must be a JSON value, found ${why}`,
  // E_PARAM_RANGE
  atLeast: (field: string, min: number, found: number): string => `'${field}' must be at least ${min}, found ${found}`,
  atMost: (field: string, max: number, found: number): string => `'${field}' must be at most ${max}, found ${found}`,
  atLeastOrForever: (field: string, min: number, found: number): string => `'${field}' must be at least ${min}, or -1 for forever; found ${found}`,
  notOneOf: (field: string, values: readonly string[], found: string, suggestion: string | null): string =>
    `'${field}' must be ${listNames(values)}; found '${found}'${hint(suggestion)}`,
  emptyName: (field: string): string => `'${field}' must not be empty`,
  badInterval: (field: string, min: number, max: number): string => `'${field}' is [${min}, ${max}]: the minimum must not exceed the maximum`,
  // E_PARAM_INVALID
  kindCheckThrew: (type: string, why: string): string => `the check of node type '${type}' failed: ${why}`,
  // E_CHILDREN
  needsChildren: (type: string): string => `this ${type} node needs a 'children' list with at least one node`,
  emptyChildren: (type: string): string => `this ${type} node needs at least one child; 'children' is empty`,
  childrenNotList: (found: unknown): string => `'children' must be a list of nodes, found ${describeValue(found)}`,
  childNotChildren: (type: string): string => `this ${type} node takes a 'children' list, not 'child'`,
  needsChild: (type: string): string => `this ${type} node needs exactly one 'child' node`,
  childrenNotChild: (type: string): string => `this ${type} node takes exactly one 'child', not a 'children' list`,
  childIsList: (): string => "'child' must be one node, not a list; wrap several nodes in a sequence or selector",
  leafHasChildren: (type: string, field: 'children' | 'child'): string => `this ${type} node is a leaf and takes no '${field}'`,
  // E_ABORT_PLACEMENT
  abortWithoutGuard: (mode: string): string => `abort '${mode}' has no effect without an 'if' guard to re-check; add one or remove 'abort'`,
  abortNotUnderSelector: (mode: string, parent: string | null): string =>
    `abort '${mode}' only works on a child of a selector (it re-checks this guard while a later sibling runs); ${parent === null ? 'this node is the root' : `this node's parent is a ${parent}`}`,
  // E_BLACKBOARD_UNDECLARED
  undeclaredKey: (key: string, suggestion: string | null): string => `blackboard key '${key}' is not declared in this tree's blackboard${hint(suggestion)}`,
  undeclaredSubtreeKey: (key: string, tree: string, suggestion: string | null): string =>
    `blackboard key '${key}' is not declared in the blackboard of tree '${tree}'${hint(suggestion)}`,
  // E_NAME_FORBIDDEN
  forbiddenName: (name: string, as: string): string => `'${name}' cannot be used as ${as}: it would reach JavaScript internals`,
  // E_SUBTREE_UNKNOWN
  unknownTree: (tree: string, suggestion: string | null): string => `unknown tree '${tree}'${hint(suggestion)}`,
  // E_SUBTREE_CYCLE
  subtreeCycle: (cycle: readonly string[]): string => `subtrees form a cycle: ${cycle.join(' → ')}`,
  // E_SERVICE
  servicesNotList: (found: unknown): string => `'services' must be a list of service entries, found ${describeValue(found)}`,
  serviceNotObject: (found: unknown): string => `a service entry must be an object with 'every' and 'values' or 'service', found ${describeValue(found)}`,
  serviceNoEvery: (): string => "this service needs 'every': seconds of tree time between runs (a number > 0)",
  serviceBadEvery: (found: unknown): string => `'every' must be a number of seconds greater than 0, found ${describeValue(found)}`,
  serviceBoth: (): string => "a service has either 'values' or 'service', not both",
  serviceNeither: (): string => "a service needs 'values' (blackboard key → expression) or 'service' (the name of a registered service)",
  serviceValues: (found: unknown): string => `'values' must be an object of blackboard key → expression, found ${describeValue(found)}`,
  serviceName: (found: unknown): string => `'service' must be the name of a registered service, found ${describeValue(found)}`,
  unknownService: (name: string, suggestion: string | null, anyRegistered: boolean): string =>
    `unknown service '${name}'${hint(suggestion)}${anyRegistered ? '' : '; no named services are registered (plugins register them)'}`,
  serviceField: (field: string, suggestion: string | null): string => `unknown field '${field}' in this service entry${hint(suggestion)}`,
  // W_ABORT_REACTIVE (a warning)
  abortUnderReactive: (mode: 'lower' | 'both'): string =>
    mode === 'lower'
      ? "abort 'lower' adds nothing under a reactive selector: it re-checks its earlier children every tick anyway; remove 'abort' or make the selector non-reactive"
      : "the 'lower' half of abort 'both' adds nothing under a reactive selector: it re-checks its earlier children every tick anyway; use abort 'self'",
} as const;

/**
 * The closest of `candidates` to `name` (a case-insensitive match first, then edit distance with
 * transpositions), or null when nothing is close enough to be a plausible typo.
 */
export function didYouMean(name: string, candidates: Iterable<string>): string | null {
  const lower = name.toLowerCase();
  let best: string | null = null;
  let bestDistance = Math.max(1, Math.floor(name.length / 3)) + 1;
  for (const c of candidates) {
    if (c === name) continue;
    if (c.toLowerCase() === lower) return c;
    // A cut-short or extended word ('warning' for 'warn').
    if (Math.min(c.length, name.length) >= 3 && (lower.startsWith(c.toLowerCase()) || c.toLowerCase().startsWith(lower)) && best === null) {
      best = c;
      continue;
    }
    const d = editDistance(lower, c.toLowerCase(), bestDistance);
    // Replacing a whole short word is not a typo ('x' is not a misspelt 'y').
    if (d < bestDistance && d < Math.min(name.length, c.length)) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance (a swap of two neighbours counts one); gives up at `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const above = rows[i - 1]!;
      let d = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/** One problem as a compiler-style line: `trees/guard.json:12:5: root.children[2].child: unknown node type 'sequnce' … [E_NODE_UNKNOWN_TYPE]`. */
export function formatError(e: ValidationError | ValidationWarning): string {
  const at = e.field === undefined ? e.path : e.path === '' ? e.field : `${e.path}.${e.field}`;
  const severity = e.code.startsWith('W_') ? 'warning: ' : '';
  if (e.line !== undefined) return `${e.file}:${e.line}:${e.column ?? 1}: ${at === '' ? '' : `${at}: `}${severity}${e.message} [${e.code}]`;
  const column = e.column === undefined ? '' : ` (column ${e.column})`;
  return `${e.file}: ${at === '' ? '' : `${at}${column}: `}${severity}${e.message} [${e.code}]`;
}

/** Every problem on its own line (see formatError), for logs and the command line. */
export function formatErrors(errors: ReadonlyArray<ValidationError | ValidationWarning>): string {
  return errors.map(formatError).join('\n');
}

/** compileTree was given a definition that validation rejects; `errors` says why, `message` lists them. */
export class InvalidTreeError extends Error {
  override readonly name = 'InvalidTreeError';
  readonly errors: readonly ValidationError[];
  constructor(tree: string, errors: readonly ValidationError[]) {
    super(`tree '${tree}' is invalid and cannot be compiled (validate trees first, e.g. with TreeLibrary):\n${formatErrors(errors)}`);
    this.errors = errors;
  }
}
