// Property tests of the expression language: random well-formed expressions over a small world never
// throw, never return undefined, are deterministic and fold to the same values; random garbage
// never makes loading throw; the closures used without code generation agree with the generated code.

import * as fc from 'fast-check';
import util from 'node:util';
import { describe, expect, it } from 'vitest';
import { compile } from '../../src/bt/expr/compiler.js';
import { compileExpression, type ExprContext, type ExprError } from '../../src/bt/expr/index.js';
import { interpret } from '../../src/bt/expr/interpret.js';
import { parse } from '../../src/bt/expr/parser.js';
import { explainExpression, print } from '../../src/bt/expr/explain.js';
import type { WhyTerm } from '../../src/bt/frames.js';

const SCOPE = { blackboardKeys: new Set(['target', 'waypoint', 'list', 'slot', 'nothing']) };

type World = Pick<ExprContext, 'self' | 'world' | 'bb'>;

const WORLDS: ReadonlyArray<() => World> = [
  () => ({
    self: { hp: 20, x: 3, y: 4, pos: { x: 3, y: 4 }, tags: ['a', 'b'], name: 'orc', evil: '__proto__', key: 'hp' },
    world: { enemies: [{ id: 1, x: 10, y: 0 }, { id: 2, x: 0, y: 5, z: 1 }, [1, 2], null, 'x'], count: 3 },
    bb: { target: { x: 3, y: 0 }, waypoint: 2, list: [5, 6, 7], slot: 'waypoint', nothing: null },
  }),
  () => ({ self: null, world: null, bb: {} }),
  () => ({
    self: [1, 'a', null, [2, 3], { x: NaN, y: Infinity }],
    world: { enemies: 'not a list', count: -0, big: 1e308, tiny: 5e-324, neg: -1e308 },
    bb: { target: [0, 0, 0], waypoint: 'two', list: [], slot: 'constructor', nothing: undefined },
  }),
];

/** A fresh context over world `w`: the same generator sequence every time, so results can be compared. */
function context(w: number): ExprContext {
  const world = WORLDS[w]!();
  let state = 42;
  return {
    ...world,
    agent: { id: 'orc-1', label: 'Orc' },
    time: 12.5,
    dt: 0.05,
    random() {
      state = (state * 48271) % 2147483647;
      return state / 2147483647;
    },
  };
}

function numberSource(d: number): string {
  const s = String(Math.abs(d));
  return d < 0 || Object.is(d, -0) ? `(-${s})` : s;
}

const leaf = fc.oneof(
  fc.integer({ min: -3, max: 100 }).map(numberSource),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(numberSource),
  fc.constantFrom(
    "'a'",
    "''",
    "'orc'",
    '"x"',
    "'hp'",
    "'constr' + 'uctor'",
    'true',
    'false',
    'null',
    'self',
    'world',
    'time',
    'dt',
    'agent.id',
    'agent.label',
    'self.hp',
    'self.pos',
    'self.tags',
    'self.missing',
    'self.evil',
    'world.enemies',
    'world.count',
    'bb.target',
    'bb.waypoint',
    'bb.list',
    'bb.slot',
    'bb.nothing',
    'rand()',
  ),
);

const BINARY = ['*', '/', '%', '+', '-', '<', '<=', '>', '>=', '==', '!=', '&&', '||', '??'] as const;

const { expr } = fc.letrec<{ expr: string; unary: string; binary: string; call: string; access: string; array: string; cond: string }>(
  (tie) => ({
    expr: fc.oneof({ depthSize: 'small', maxDepth: 5 }, leaf, tie('unary'), tie('binary'), tie('call'), tie('access'), tie('array'), tie('cond')),
    unary: fc.tuple(fc.constantFrom('!', '-'), tie('expr')).map(([op, a]) => `${op}(${a})`),
    binary: fc.tuple(tie('expr'), fc.constantFrom(...BINARY), tie('expr')).map(([a, op, b]) => `(${a} ${op} ${b})`),
    call: fc.oneof(
      fc.tuple(fc.constantFrom('abs', 'floor', 'ceil', 'round', 'sqrt', 'len', 'count', 'min', 'max'), tie('expr')).map(([f, a]) => `${f}(${a})`),
      fc.tuple(fc.constantFrom('min', 'max'), fc.array(tie('expr'), { minLength: 2, maxLength: 4 })).map(([f, a]) => `${f}(${a.join(', ')})`),
      fc.tuple(fc.constantFrom('dist', 'dist2', 'has', 'nearest'), tie('expr'), tie('expr')).map(([f, a, b]) => `${f}(${a}, ${b})`),
      fc.tuple(fc.constantFrom('clamp', 'nearest'), tie('expr'), tie('expr'), tie('expr')).map(([f, a, b, c]) => `${f}(${a}, ${b}, ${c})`),
    ),
    access: fc.oneof(
      fc.tuple(tie('expr'), fc.constantFrom('x', 'y', 'hp', 'length', 'id', 'enemies', 'toString')).map(([o, k]) => `(${o}).${k}`),
      fc.tuple(tie('expr'), tie('expr')).map(([o, k]) => `(${o})[${k}]`),
      // Wrapped so that a literal key (which must be declared) becomes a key computed at run time.
      tie('expr').map((k) => `bb[[${k}][0]]`),
    ),
    array: fc.array(tie('expr'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
    cond: fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([a, b, c]) => `(${a} ? ${b} : ${c})`),
  }),
);

/** What an expression may return: JSON-like values (numbers from data may be anything, e.g. NaN). */
function isAllowedValue(v: unknown): boolean {
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return true;
  if (Array.isArray(v)) return true;
  if (typeof v !== 'object') return false;
  const p: unknown = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

const CODES: ReadonlySet<ExprError['code']> = new Set([
  'E_EXPR_SYNTAX',
  'E_EXPR_UNKNOWN_FUNCTION',
  'E_EXPR_ARITY',
  'E_EXPR_UNKNOWN_ROOT',
  'E_EXPR_FORBIDDEN_NAME',
  'E_EXPR_UNDECLARED_KEY',
  'E_EXPR_TOO_COMPLEX',
]);

/** Fails the property with `what` unless `ok`. */
function ensure(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

/** Runs a property; the failure report (counterexample, seed) or null. */
function failureOf<T>(property: fc.IProperty<T>, numRuns: number): string | null {
  const details = fc.check(property, { numRuns });
  return details.failed ? fc.defaultReportMessage(details) ?? 'failed' : null;
}

/** Loads `source` and checks the result's shape; runs it on every world when it compiled. */
function loadAndRun(source: string): void {
  const r = compileExpression(source, SCOPE);
  if (!r.ok) {
    ensure(r.errors.length > 0, 'no errors');
    const width = [...source].length;
    for (const e of r.errors) {
      ensure(CODES.has(e.code), `unknown code ${e.code}`);
      ensure(e.message.length > 0, 'empty message');
      ensure(Number.isInteger(e.column) && e.column >= 1 && e.column <= width + 1, `column ${e.column} outside 1..${width + 1}`);
    }
    return;
  }
  for (let w = 0; w < WORLDS.length; w++) {
    const v = r.fn(context(w));
    ensure(v !== undefined && isAllowedValue(v), `world ${w}: returned ${String(v)}`);
  }
}

/** Deep equality as the tests mean it (NaN equals NaN; arrays and plain objects by content). */
function same(a: unknown, b: unknown): boolean {
  return util.isDeepStrictEqual(a, b);
}

describe('random well-formed expressions', () => {
  it('compile (or hit a size limit), never throw, never return undefined, and are deterministic', () => {
    const property = fc.property(expr, (source) => {
      const r = compileExpression(source, SCOPE);
      if (!r.ok) {
        ensure(r.errors.every((e) => e.code === 'E_EXPR_TOO_COMPLEX'), JSON.stringify(r.errors));
        return;
      }
      for (let w = 0; w < WORLDS.length; w++) {
        const first = r.fn(context(w));
        ensure(first !== undefined && isAllowedValue(first), `world ${w}: returned ${String(first)}`);
        ensure(same(r.fn(context(w)), first), `world ${w}: not deterministic`);
      }
      ensure(!r.constant || r.fn(context(0)) === r.value, 'a constant returns something else than its value');
    });
    expect(failureOf(property, 400)).toBeNull();
  });

  it('give the same results with and without constant folding', () => {
    const property = fc.property(expr, (source) => {
      const parsed = parse(source);
      const r = compileExpression(source, SCOPE);
      if (!parsed.ok || !r.ok) return;
      const plain = compile(parsed.ast, { fold: false });
      ensure(plain.constant === r.constant, 'constant flags differ');
      for (let w = 0; w < WORLDS.length; w++) {
        const a = plain.fn(context(w));
        const b = r.fn(context(w));
        ensure(same(a, b), `world ${w}: ${String(a)} without folding, ${String(b)} with`);
      }
    });
    expect(failureOf(property, 300)).toBeNull();
  });

  it('run as closures (no code generation) give the same results as the generated code', () => {
    const property = fc.property(expr, (source) => {
      const parsed = parse(source);
      const r = compileExpression(source, SCOPE);
      if (!parsed.ok || !r.ok) return;
      const closures = interpret(parsed.ast, new Map());
      for (let w = 0; w < WORLDS.length; w++) {
        const a = closures(context(w));
        const b = r.fn(context(w));
        ensure(same(a, b), `world ${w}: ${String(a)} as closures, ${String(b)} compiled`);
      }
    });
    expect(failureOf(property, 300)).toBeNull();
  });

  it('explained (the why) give the compiled value at every level, and their printed text means the same', () => {
    const property = fc.property(expr, (source) => {
      const parsed = parse(source);
      const r = compileExpression(source, SCOPE);
      if (!parsed.ok || !r.ok || r.usesRandom) return;
      const printed = print(parsed.ast);
      const again = compileExpression(printed, SCOPE);
      ensure(again.ok, `printed '${printed}' does not compile`);
      for (let w = 0; w < WORLDS.length; w++) {
        const term = explainExpression(source, context(w));
        ensure(term !== null, 'no term');
        ensure(same(term!.value, r.fn(context(w))), `world ${w}: explained ${String(term!.value)}, compiled ${String(r.fn(context(w)))}`);
        ensure(again.ok && same(again.fn(context(w)), r.fn(context(w))), `world ${w}: printed '${printed}' computes something else`);
        // Every sub-term is itself an expression whose compiled value is the one shown (unless skipped).
        const visit = (t: WhyTerm): void => {
          if (t.skipped !== true) {
            const sub = compileExpression(t.text, SCOPE);
            if (sub.ok) ensure(same(sub.fn(context(w)), t.value), `world ${w}: '${t.text}' shows ${String(t.value)}`);
          }
          t.children.forEach(visit);
        };
        visit(term!);
      }
    });
    expect(failureOf(property, 300)).toBeNull();
  });

  it('never throw when a character is deleted, inserted or replaced', () => {
    const edit = fc.tuple(expr, fc.nat(), fc.constantFrom('', '(', ')', '[', "'", '"', '\\', '.', '?', ':', ',', '=', '!', '-', 'x', '0', '🌲'));
    const property = fc.property(edit, ([source, at, ch]) => {
      const i = source.length === 0 ? 0 : at % source.length;
      loadAndRun(source.slice(0, i) + ch + source.slice(i + 1));
      loadAndRun(source.slice(0, i) + ch + source.slice(i));
    });
    expect(failureOf(property, 300)).toBeNull();
  });
});

describe('random garbage', () => {
  it('never makes compileExpression throw (any UTF-16 string)', () => {
    expect(failureOf(fc.property(fc.string({ unit: 'binary', maxLength: 300 }), loadAndRun), 500)).toBeNull();
  });

  it('never makes compileExpression throw (token soup)', () => {
    const token = fc.constantFrom(
      '(', ')', '[', ']', '.', ',', '?', ':', '!', '-', '+', '*', '/', '%', '<', '<=', '==', '!=', '&&', '||', '??', '=', '===',
      '1', '0', '1e999', '1.5', 'self', 'bb', 'world', 'agent', 'time', 'dt', 'x', 'target', 'len', 'min', 'nearest', 'rand',
      'constructor', '__proto__', 'prototype', 'this', 'process', "'", '"', "'a'", '\\', ' ', '🌲', '\u0000',
    );
    expect(failureOf(fc.property(fc.array(token, { maxLength: 60 }), (tokens) => loadAndRun(tokens.join(''))), 500)).toBeNull();
  });

  it('never throws on long hostile inputs', () => {
    const unit = fc.constantFrom('(', '[', '!', '-', 'len(', 'self.', "'", 'true ? 1 : ');
    const property = fc.property(unit, fc.integer({ min: 1, max: 3000 }), (u, n) => {
      loadAndRun(u.repeat(n));
      loadAndRun(`${u.repeat(n)}1`);
    });
    expect(failureOf(property, 100)).toBeNull();
  });
});
