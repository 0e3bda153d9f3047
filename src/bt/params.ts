// One entry per parameter type (node.ts's ParamType): how validation checks a value, how a message names
// what is expected, and its JSON Schema. A new type is one entry here; the compiler makes the table complete.

import { didYouMean, listNames, TreeMsg, type TreeErrorCode } from './errors.js';
import type { ParamSpec, ParamType } from './node.js';

/** A JSON Schema fragment. */
export type Schema = Record<string, unknown>;

/**
 * One parameter value being checked: where it is (for errors) and the checks that need the
 * validator's state (expressions, declared blackboard keys, subtree args).
 */
export interface ParamCheck {
  /** How the message names the parameter (`duration`, `values.hp`). */
  readonly label: string;
  /** Reports `message` at this value's node and field; returns false so checks read `ok || c.fail(...)`. */
  fail(code: TreeErrorCode, message: string): false;
  /** Checks and compiles an expression. */
  expression(source: string): boolean;
  /** A map of blackboard key → expression (or literal, with `literals`), keys checked against the scope in force. */
  writes(map: Record<string, unknown>, literals: boolean): boolean;
  /** A map of name → value where a string is an expression and anything else a literal. */
  args(map: Record<string, unknown>): boolean;
}

/** What the engine knows about one parameter type. */
export interface ParamTypeRules {
  /** Checks `v`; false when something was reported. */
  readonly check: (c: ParamCheck, spec: ParamSpec, v: unknown) => boolean;
  /** How the expected value reads in a message ("a whole number"). */
  readonly expected: (spec: ParamSpec) => string;
  /** The JSON Schema of a value; `annotations` (description, default) are merged in. */
  readonly schema: (spec: ParamSpec, annotations: Schema) => Schema;
}

/** The JSON Schema of a map of blackboard key → expression. */
export function writesSchema(description: string): Schema {
  return { type: 'object', description, propertyNames: { $ref: '#/$defs/key' }, additionalProperties: { $ref: '#/$defs/expression' } };
}

/** A plain JSON object (what JSON.parse and YAML produce for maps), not an array, Map or class instance. */
export function isObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Every parameter type's rules. */
export const PARAM_TYPES: { readonly [T in ParamType]: ParamTypeRules } = {
  number: {
    check: checkNumber,
    expected: (spec) => (spec.integer === true ? 'a whole number' : 'a number'),
    schema: (spec, annotations) => {
      const base: Schema = { type: spec.integer === true ? 'integer' : 'number' };
      if (spec.min !== undefined) base['minimum'] = spec.min;
      if (spec.max !== undefined) base['maximum'] = spec.max;
      return spec.forever === true ? { ...annotations, anyOf: [{ const: -1 }, base] } : { ...base, ...annotations };
    },
  },
  boolean: {
    check: (c, _spec, v) => typeof v === 'boolean' || c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, 'true or false', v)),
    expected: () => 'true or false',
    schema: (_spec, annotations) => ({ type: 'boolean', ...annotations }),
  },
  string: {
    check: (c, spec, v) => {
      if (typeof v !== 'string') return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, 'a string', v));
      return v !== '' || spec.required !== true || c.fail('E_PARAM_RANGE', TreeMsg.emptyName(c.label));
    },
    expected: () => 'a string',
    schema: (spec, annotations) => (spec.required === true ? { type: 'string', minLength: 1, ...annotations } : { type: 'string', ...annotations }),
  },
  enum: {
    check: (c, spec, v) => {
      const values = spec.values ?? [];
      if (typeof v !== 'string') return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, listNames(values), v));
      return values.includes(v) || c.fail('E_PARAM_RANGE', TreeMsg.notOneOf(c.label, values, v, didYouMean(v, values)));
    },
    expected: (spec) => listNames(spec.values ?? []),
    schema: (spec, annotations) => ({ enum: [...(spec.values ?? [])], ...annotations }),
  },
  expression: {
    check: (c, _spec, v) => {
      if (typeof v !== 'string') return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, 'an expression (a string)', v));
      return c.expression(v);
    },
    expected: () => 'an expression',
    schema: (_spec, annotations) => ({ $ref: '#/$defs/expression', ...annotations }),
  },
  writes: {
    check: (c, spec, v) => {
      if (!isObject(v)) return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, 'an object of blackboard key → expression', v));
      return c.writes(v, spec.literals === true);
    },
    expected: () => 'an object of blackboard key → expression',
    schema: (spec, annotations) =>
      spec.literals === true
        ? { type: 'object', propertyNames: { $ref: '#/$defs/key' }, ...annotations }
        : { ...writesSchema(spec.description), ...annotations },
  },
  args: {
    check: (c, _spec, v) => {
      if (!isObject(v)) return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, 'an object of name → value', v));
      return c.args(v);
    },
    expected: () => 'an object of name → value',
    schema: (_spec, annotations) => ({ type: 'object', propertyNames: { $ref: '#/$defs/key' }, ...annotations }),
  },
  duration: {
    check: checkDuration,
    expected: () => 'seconds, or [min, max]',
    schema: (spec, annotations) => {
      const seconds: Schema = { type: 'number', minimum: spec.min ?? 0 };
      if (spec.max !== undefined) seconds['maximum'] = spec.max;
      return { ...annotations, anyOf: [seconds, { type: 'array', prefixItems: [seconds, seconds], minItems: 2, maxItems: 2 }] };
    },
  },
  weights: {
    check: (c, _spec, v) => {
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, 'a list of numbers, one per child', v));
      }
      const negative = (v as number[]).find((x) => x < 0);
      return negative === undefined || c.fail('E_PARAM_RANGE', TreeMsg.atLeast(c.label, 0, negative));
    },
    expected: () => 'a list of numbers, one per child',
    schema: (_spec, annotations) => ({ type: 'array', items: { type: 'number', minimum: 0 }, ...annotations }),
  },
};

function checkNumber(c: ParamCheck, spec: ParamSpec, v: unknown): boolean {
  const whole = spec.integer === true;
  if (typeof v !== 'number' || !Number.isFinite(v) || (whole && !Number.isInteger(v))) {
    return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, whole ? 'a whole number' : 'a number', v));
  }
  if (spec.forever === true && v === -1) return true;
  if (spec.min !== undefined && v < spec.min) {
    return c.fail('E_PARAM_RANGE', spec.forever === true ? TreeMsg.atLeastOrForever(c.label, spec.min, v) : TreeMsg.atLeast(c.label, spec.min, v));
  }
  if (spec.max !== undefined && v > spec.max) return c.fail('E_PARAM_RANGE', TreeMsg.atMost(c.label, spec.max, v));
  return true;
}

function checkDuration(c: ParamCheck, spec: ParamSpec, v: unknown): boolean {
  const bounds: ParamSpec = { ...spec, type: 'number', integer: false, forever: false, min: spec.min ?? 0 };
  if (typeof v === 'number') return checkNumber(c, bounds, v);
  if (Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    const [lo, hi] = v as [number, number];
    if (!checkNumber(c, bounds, lo) || !checkNumber(c, bounds, hi)) return false;
    return lo <= hi || c.fail('E_PARAM_RANGE', TreeMsg.badInterval(c.label, lo, hi));
  }
  return c.fail('E_PARAM_TYPE', TreeMsg.paramType(c.label, 'seconds (a number) or [min, max]', v));
}
