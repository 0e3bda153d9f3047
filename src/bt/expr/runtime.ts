// Helpers called by compiled expressions: null-safe reads, operators and the function library.
// Hot path: small monomorphic functions V8 inlines; no allocation, no exceptions, never undefined.

import { types } from 'node:util';
import type { BinaryOp } from './parser.js';

const isProxy = types.isProxy;
const hasOwn = Object.hasOwn;
const getPrototypeOf = Object.getPrototypeOf;
const isArray = Array.isArray;
const OBJECT_PROTOTYPE: object = Object.prototype;
const ARRAY_PROTOTYPE: object = Array.prototype;

/**
 * True for the objects expressions may look into: arrays and plain objects (prototype
 * `Object.prototype` or null), i.e. what JSON and MessagePack decoding produce.
 */
export function isPlain(o: object): boolean {
  const p: unknown = getPrototypeOf(o);
  return p === OBJECT_PROTOTYPE || p === ARRAY_PROTOTYPE || p === null;
}

/** A number, or null when it is not finite (`r - r` is 0 only for finite numbers; cheaper than Number.isFinite). */
function finite(r: number): number | null {
  return r - r === 0 ? r : null;
}

/** `v`, with undefined and functions turned into null: what a root or a read may return. */
export function nn(v: unknown): unknown {
  return v === undefined || typeof v === 'function' ? null : v;
}

/**
 * `o.k`: an own property of an array or plain object, else null. Never reaches a prototype, never
 * returns a function or undefined. `k` is a checked name or a run-time key (numbers index arrays).
 */
export function get(o: unknown, k: string | number): unknown {
  if (typeof o !== 'object' || o === null || !hasOwn(o, k) || !isPlain(o)) return null;
  const v = (o as Record<string | number, unknown>)[k];
  return v === undefined || typeof v === 'function' ? null : v;
}

/** `o[k]` with a key computed at run time: only strings and numbers name properties. */
export function at(o: unknown, k: unknown): unknown {
  return typeof k === 'string' || typeof k === 'number' ? get(o, k) : null;
}

/** `bb.k`: the blackboard belongs to the engine, so only the own-property guard is needed. */
export function bbGet(bb: Record<string, unknown>, k: string): unknown {
  if (!hasOwn(bb, k)) return null;
  const v = bb[k];
  return v === undefined || typeof v === 'function' ? null : v;
}

/** `bb[k]` with a key computed at run time. */
export function bbAt(bb: Record<string, unknown>, k: unknown): unknown {
  if (typeof k === 'number') k = String(k);
  return typeof k === 'string' ? bbGet(bb, k) : null;
}

/** `a == b`: strict equality, except that null and undefined are equal. */
export function eq(a: unknown, b: unknown): boolean {
  return a === b || (a == null && b == null);
}

/** `a < b` on two numbers or two strings; anything else (null included) is false. */
export function lt(a: unknown, b: unknown): boolean {
  if (typeof a === 'number') return typeof b === 'number' && a < b;
  return typeof a === 'string' && typeof b === 'string' && a < b;
}

/** `a <= b` on two numbers or two strings; anything else is false. */
export function le(a: unknown, b: unknown): boolean {
  if (typeof a === 'number') return typeof b === 'number' && a <= b;
  return typeof a === 'string' && typeof b === 'string' && a <= b;
}

/** `a > b` on two numbers or two strings; anything else is false. */
export function gt(a: unknown, b: unknown): boolean {
  if (typeof a === 'number') return typeof b === 'number' && a > b;
  return typeof a === 'string' && typeof b === 'string' && a > b;
}

/** `a >= b` on two numbers or two strings; anything else is false. */
export function ge(a: unknown, b: unknown): boolean {
  if (typeof a === 'number') return typeof b === 'number' && a >= b;
  return typeof a === 'string' && typeof b === 'string' && a >= b;
}

/** `a + b`: the sum of two numbers, or two strings joined; no implicit conversion (`'a' + 1` is null). */
export function add(a: unknown, b: unknown): unknown {
  if (typeof a === 'number') return typeof b === 'number' ? finite(a + b) : null;
  return typeof a === 'string' && typeof b === 'string' ? a + b : null;
}

/** `a - b` on two numbers, else null. */
export function sub(a: unknown, b: unknown): number | null {
  return typeof a === 'number' && typeof b === 'number' ? finite(a - b) : null;
}

/** `a * b` on two numbers, else null. */
export function mul(a: unknown, b: unknown): number | null {
  return typeof a === 'number' && typeof b === 'number' ? finite(a * b) : null;
}

/** `a / b` on two numbers; division by zero is null (a non-finite result is null). */
export function div(a: unknown, b: unknown): number | null {
  return typeof a === 'number' && typeof b === 'number' ? finite(a / b) : null;
}

/** `a % b` on two numbers (the sign of `a`, as in JavaScript); `% 0` is null. */
export function mod(a: unknown, b: unknown): number | null {
  return typeof a === 'number' && typeof b === 'number' ? finite(a % b) : null;
}

/** Unary `-a` on a number, else null. */
export function neg(a: unknown): number | null {
  return typeof a === 'number' ? finite(-a) : null;
}

/** `a` when it is a finite number, else null (`min(x)` and `max(x)`). */
export function num(a: unknown): number | null {
  return typeof a === 'number' ? finite(a) : null;
}

/** `abs(x)`. */
export function abs(x: unknown): number | null {
  return typeof x === 'number' ? finite(Math.abs(x)) : null;
}

/** `floor(x)`. */
export function floor(x: unknown): number | null {
  return typeof x === 'number' ? finite(Math.floor(x)) : null;
}

/** `ceil(x)`. */
export function ceil(x: unknown): number | null {
  return typeof x === 'number' ? finite(Math.ceil(x)) : null;
}

/** `round(x)`: halves round up (toward +∞), as Math.round: round(-2.5) is -2. */
export function round(x: unknown): number | null {
  return typeof x === 'number' ? finite(Math.round(x)) : null;
}

/** `sqrt(x)`; null for a negative x. */
export function sqrt(x: unknown): number | null {
  return typeof x === 'number' ? finite(Math.sqrt(x)) : null;
}

/** `min(a, b)`; longer calls are compiled to nested calls, which keep null-propagation. */
export function min2(a: unknown, b: unknown): number | null {
  return typeof a === 'number' && typeof b === 'number' ? finite(Math.min(a, b)) : null;
}

/** `max(a, b)`; see min2. */
export function max2(a: unknown, b: unknown): number | null {
  return typeof a === 'number' && typeof b === 'number' ? finite(Math.max(a, b)) : null;
}

/** `clamp(x, lo, hi)`; null when an argument is not a number or lo > hi. */
export function clamp(x: unknown, lo: unknown, hi: unknown): number | null {
  if (typeof x !== 'number' || typeof lo !== 'number' || typeof hi !== 'number' || !(lo <= hi)) return null;
  return finite(x < lo ? lo : x > hi ? hi : x);
}

/** `len(x)`: length of a string (UTF-16 units) or array, number of own keys of a plain object, else null. */
export function len(x: unknown): number | null {
  if (typeof x === 'string') return x.length;
  if (typeof x !== 'object' || x === null) return null;
  if (isArray(x)) return x.length;
  if (!isPlain(x)) return null;
  let n = 0;
  for (const k in x) if (hasOwn(x, k)) n++;
  return n;
}

/** `count(list)`: the length of an array, else null. */
export function count(list: unknown): number | null {
  return isArray(list) ? list.length : null;
}

/** `has(obj, key)`: whether a plain object or array has its own property `key`. Always a boolean. */
export function has(o: unknown, k: unknown): boolean {
  return (
    typeof o === 'object' && o !== null && (typeof k === 'string' || typeof k === 'number') && hasOwn(o, k) && isPlain(o)
  );
}

/** `v` if it is a number, else NaN (a coordinate that is missing or not a number). */
function numberOrNaN(v: unknown): number {
  return typeof v === 'number' ? v : NaN;
}

/** Coordinate `i` (x, y, z) of a point known to be an array or plain object, read as an own property; NaN when missing. */
function coord(p: object, i: 0 | 1 | 2, key: 'x' | 'y' | 'z'): number {
  if (isArray(p)) return numberOrNaN((p.length === 2 || p.length === 3) && hasOwn(p, i) ? p[i] : undefined);
  return numberOrNaN(hasOwn(p, key) ? (p as Record<string, unknown>)[key] : undefined);
}

/**
 * True while no prototype a point read directly by readPoint can inherit from holds a key its coordinates are read from: 0, 1,
 * 2 for an array of Array.prototype (`in` walks Array.prototype's own chain, Object.prototype included) and x, y, z for
 * an object of Object.prototype. Such a point then reads a coordinate it lacks (a hole, the `z` of a pair) as
 * undefined, so its coordinates need not be tested one by one as own properties (Object.hasOwn, a builtin call each:
 * three per point, most of the time `nearest` took). Evaluated per call: a key added to a prototype later is seen at once.
 */
function coordinatesUninherited(): boolean {
  return !(
    0 in ARRAY_PROTOTYPE ||
    1 in ARRAY_PROTOTYPE ||
    2 in ARRAY_PROTOTYPE ||
    'x' in OBJECT_PROTOTYPE ||
    'y' in OBJECT_PROTOTYPE ||
    'z' in OBJECT_PROTOTYPE
  );
}

/** The coordinates readPoint read: x, y, z (NaN when missing or not a number). */
const point = new Float64Array(3);

/**
 * Reads point `p` into `point`; false when it is not a point (not an array or plain object). An array of
 * Array.prototype or an object of Object.prototype, not a Proxy, is read directly when `direct`
 * (coordinatesUninherited()); anything else (a Proxy is read by its own-property answers, as everywhere in
 * expressions) is read a coordinate at a time as an own property (`coord`).
 */
function readPoint(p: unknown, direct: boolean): boolean {
  if (typeof p !== 'object' || p === null) return false;
  if (direct && !isProxy(p)) {
    const proto: unknown = getPrototypeOf(p);
    const array = isArray(p);
    if (proto === ARRAY_PROTOTYPE && array) {
      const a = p as unknown[];
      const n = a.length;
      const pair = n === 2 || n === 3;
      point[0] = pair ? numberOrNaN(a[0]) : NaN;
      point[1] = pair ? numberOrNaN(a[1]) : NaN;
      point[2] = n === 3 ? numberOrNaN(a[2]) : NaN;
      return true;
    }
    if (proto === OBJECT_PROTOTYPE && !array) {
      const o = p as { x?: unknown; y?: unknown; z?: unknown };
      point[0] = numberOrNaN(o.x);
      point[1] = numberOrNaN(o.y);
      point[2] = numberOrNaN(o.z);
      return true;
    }
  }
  if (!isPlain(p)) return false;
  point[0] = coord(p, 0, 'x');
  point[1] = coord(p, 1, 'y');
  point[2] = coord(p, 2, 'z');
  return true;
}

/** Squared distance from the deltas, with z only when both points have one (NaN !== NaN: a missing z means 2D). */
function squared(dx: number, dy: number, az: number, bz: number): number {
  return az === az && bz === bz ? dx * dx + dy * dy + (az - bz) * (az - bz) : dx * dx + dy * dy;
}

/**
 * Squared distance between two points, NaN when either is not a point. A point is an array
 * [x, y] or [x, y, z], or a plain object with numeric x and y and optional z; z counts only when
 * both points have a numeric z.
 */
function squaredDistance(a: unknown, b: unknown): number {
  const direct = coordinatesUninherited();
  if (!readPoint(b, direct)) return NaN;
  const bx = point[0]!;
  const by = point[1]!;
  const bz = point[2]!;
  return readPoint(a, direct) ? squared(point[0]! - bx, point[1]! - by, point[2]!, bz) : NaN;
}

/** `dist2(a, b)`: squared distance, or null when either is not a point. */
export function dist2(a: unknown, b: unknown): number | null {
  return finite(squaredDistance(a, b));
}

/** `dist(a, b)`: distance, or null when either is not a point. */
export function dist(a: unknown, b: unknown): number | null {
  return finite(Math.sqrt(squaredDistance(a, b)));
}

/**
 * `nearest(list, from, maxDist)`: the element of `list` closest to `from` (ties: the first), skipping
 * elements that are not points; null when `list` is not an array, `from` is not a point, `maxDist`
 * is not a non-negative number, or no point is within `maxDist` (inclusive). Without maxDist the
 * compiler passes Infinity.
 *
 * The distances are squaredDistance's, computed faster: `from` is read once, not once per element, and an element
 * that is an array or a plain object is read without the own-property tests (readPoint): 3–4× faster over 64
 * pairs (a squad's nearest enemy was half of its workers' time).
 */
export function nearest(list: unknown, from: unknown, maxDist: unknown): unknown {
  if (!isArray(list) || typeof maxDist !== 'number' || !(maxDist >= 0)) return null;
  const direct = coordinatesUninherited();
  // Not a point: every distance would be NaN, so nothing is within maxDist.
  if (!readPoint(from, direct)) return null;
  const fx = point[0]!;
  const fy = point[1]!;
  const fz = point[2]!;
  let best: unknown = null;
  let bestD = maxDist * maxDist;
  let found = false;
  for (let i = 0; i < list.length; i++) {
    const el: unknown = list[i];
    const d = readPoint(el, direct) ? squared(point[0]! - fx, point[1]! - fy, point[2]!, fz) : NaN;
    if (d < bestD || (!found && d <= bestD)) {
      best = el;
      bestD = d;
      found = true;
    }
  }
  return best;
}

/** A value read from an own property of a plain object or array, with undefined and functions made null. */
export function val(v: unknown): unknown {
  return v === undefined || typeof v === 'function' ? null : v;
}

/** The helpers by the name compiled code calls them; the compiler passes them into the generated function. */
export const HELPERS = {
  hasOwn,
  val,
  isPlain,
  nn,
  get,
  at,
  bbGet,
  bbAt,
  eq,
  lt,
  le,
  gt,
  ge,
  add,
  sub,
  mul,
  div,
  mod,
  neg,
  num,
  abs,
  floor,
  ceil,
  round,
  sqrt,
  min2,
  max2,
  clamp,
  len,
  count,
  has,
  dist2,
  dist,
  nearest,
} as const;

/** Name of a runtime helper. */
export type HelperName = keyof typeof HELPERS;

/**
 * Each binary operator as a function of its two values: the closure interpreter (interpret.ts) and the why
 * (explain.ts) share it, so they apply exactly the rules the generated code calls in HELPERS.
 */
export const BINARY: Readonly<Record<BinaryOp, (a: unknown, b: unknown) => unknown>> = {
  '==': eq,
  '!=': (a, b) => !eq(a, b),
  '<': lt,
  '<=': le,
  '>': gt,
  '>=': ge,
  '+': add,
  '-': sub,
  '*': mul,
  '/': div,
  '%': mod,
};
