// The expression language: every literal, operator and function (null cases included), precedence,
// load-time errors with their exact messages and columns, and hostile input.

import { describe, expect, it } from 'vitest';
import { CODE_GENERATION } from '../../src/bt/codegen.js';
import { compileExpression, EXPRESSION_FUNCTIONS, truthy, type ExprContext, type ExprError, type ExprResult } from '../../src/bt/expr/index.js';
import { Agent } from '../../src/bt/index.js';
import { Harness, tree } from './helpers.js';

const KEYS = ['target', 'waypoint', 'alert', 'slot', 'list'];
const SCOPE = { blackboardKeys: new Set(KEYS) };

interface TestContext extends ExprContext {
  self: unknown;
  world: unknown;
  bb: Record<string, unknown>;
  draws: number;
}

/** A small world: an orc at (3, 4) with three enemies around. `random()` cycles 0.25, 0.5, 0.75. */
function context(overrides: Partial<Pick<TestContext, 'self' | 'world' | 'bb'>> = {}): TestContext {
  return {
    self: {
      hp: 20,
      name: 'orc',
      pos: { x: 3, y: 4 },
      pos3: { x: 1, y: 2, z: 2 },
      tags: ['a', 'b'],
      empty: [],
      nothing: null,
      zero: 0,
      flag: true,
      key: 'hp',
      evil: '__proto__',
      nested: { a: { b: { c: 5 } } },
      名前: 'ゴブリン',
    },
    world: { enemies: [{ id: 1, x: 10, y: 0 }, { id: 2, x: 0, y: 5 }, { id: 3, x: 0, y: -5 }], count: 3 },
    bb: { target: { x: 3, y: 0 }, waypoint: 2, alert: false, slot: 'waypoint', list: [5, 6, 7] },
    agent: { id: 7, label: 'orc-7' },
    time: 1.5,
    dt: 0.1,
    draws: 0,
    random() {
      return [0.25, 0.5, 0.75][this.draws++ % 3]!;
    },
    ...overrides,
  };
}

function compiled(source: string): Extract<ExprResult, { ok: true }> {
  const r = compileExpression(source, SCOPE);
  if (!r.ok) throw new Error(`${source}: ${JSON.stringify(r.errors)}`);
  return r;
}

function run(source: string, c: ExprContext = context()): unknown {
  return compiled(source).fn(c);
}

function errors(source: string): readonly ExprError[] {
  const r = compileExpression(source, SCOPE);
  if (r.ok) throw new Error(`${source}: expected errors`);
  return r.errors;
}

/** The only error of `source`. */
function error(source: string): ExprError {
  const e = errors(source);
  expect(e).toHaveLength(1);
  return e[0]!;
}

describe('literals', () => {
  it.each<[string, unknown]>([
    ['42', 42],
    ['3.5', 3.5],
    ['1e3', 1000],
    ['2.5E-1', 0.25],
    ['1e+2', 100],
    ['007', 7],
    ['1e-400', 0],
    ["'single'", 'single'],
    ['"double"', 'double'],
    ["'it\\'s'", "it's"],
    ['"say \\"hi\\""', 'say "hi"'],
    ["'back\\\\slash'", 'back\\slash'],
    ["'a\\nb\\tc'", 'a\nb\tc'],
    ['"it\'s"', "it's"],
    ["''", ''],
    ["'héllo 🌲 ゴブリン'", 'héllo 🌲 ゴブリン'],
    ['true', true],
    ['false', false],
    ['null', null],
    ['[]', []],
    ['[1, 2, 3]', [1, 2, 3]],
    ["[[1], ['a', null], []]", [[1], ['a', null], []]],
    ['[self.hp, time]', [20, 1.5]],
    ['  42  ', 42],
    ['\n\t42\r\n', 42],
  ])('%s', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });

  it('keeps the largest finite numbers and rejects literals that are not finite', () => {
    expect(run('9'.repeat(308))).toBe(Number('9'.repeat(308)));
    expect(error('9'.repeat(309))).toEqual({ code: 'E_EXPR_SYNTAX', message: 'number literal out of range', column: 1 });
    expect(error('1 + 1e999')).toEqual({ code: 'E_EXPR_SYNTAX', message: 'number literal out of range', column: 5 });
    expect(error('1.5e400')).toEqual({ code: 'E_EXPR_SYNTAX', message: 'number literal out of range', column: 1 });
  });

  it('rejects malformed numbers and strings', () => {
    expect(error('12abc')).toEqual({ code: 'E_EXPR_SYNTAX', message: "'12abc' is not a valid number", column: 1 });
    expect(error('1e')).toEqual({ code: 'E_EXPR_SYNTAX', message: "'1e' is not a valid number", column: 1 });
    expect(error("'abc")).toEqual({ code: 'E_EXPR_SYNTAX', message: "this string is not closed: add a closing '", column: 1 });
    expect(error('1 + "abc\\')).toEqual({ code: 'E_EXPR_SYNTAX', message: 'this string is not closed: add a closing "', column: 5 });
    expect(error("'a\\u0041'")).toEqual({
      code: 'E_EXPR_SYNTAX',
      message: "unknown escape '\\u' in a string (use \\\\, \\', \\\", \\n or \\t)",
      column: 3,
    });
  });

  it('freezes constant arrays, which every agent shares', () => {
    const r = compiled('[1, [2, 3]]');
    expect(r.constant).toBe(true);
    expect(r.value).toEqual([1, [2, 3]]);
    expect(Object.isFrozen(r.value)).toBe(true);
    expect(Object.isFrozen((r.value as unknown[])[1])).toBe(true);
    expect(r.fn(context())).toBe(r.value);
  });

  it('builds a new array each time when an array literal reads a root', () => {
    const r = compiled('[self.hp]');
    const c = context();
    expect(r.fn(c)).not.toBe(r.fn(c));
    expect(Object.isFrozen(r.fn(c))).toBe(false);
  });
});

describe('roots', () => {
  it.each<[string, unknown]>([
    ['time', 1.5],
    ['dt', 0.1],
    ['agent.id', 7],
    ['agent.label', 'orc-7'],
    ["agent['label']", 'orc-7'],
    ['world.count', 3],
    ['bb.waypoint', 2],
    ["bb['waypoint']", 2],
    ['bb.alert', false],
    ['self.hp', 20],
  ])('%s', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });

  it('returns the observation itself for a bare root', () => {
    const c = context();
    expect(run('self', c)).toBe(c.self);
    expect(run('world', c)).toBe(c.world);
  });

  it('reads null (never undefined) when there is no observation or world', () => {
    for (const missing of [null, undefined]) {
      const c = context({ self: missing, world: missing });
      expect(run('self', c)).toBeNull();
      expect(run('self.hp', c)).toBeNull();
      expect(run('world.enemies[0].x', c)).toBeNull();
      expect(run('self ?? 1', c)).toBe(1);
    }
  });

  it('reads null for a declared key missing from the blackboard object', () => {
    expect(run('bb.target', context({ bb: {} }))).toBeNull();
  });

  it('rejects unknown names, with a suggestion when one is close', () => {
    expect(error('slef.hp')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'slef' (did you mean 'self'?)", column: 1 });
    expect(error('1 + Self.hp')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'Self' (did you mean 'self'?)", column: 5 });
    expect(error('wrld')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'wrld' (did you mean 'world'?)", column: 1 });
    expect(error('hp < 3')).toEqual({
      code: 'E_EXPR_UNKNOWN_ROOT',
      message: "unknown name 'hp': expressions can only read self, bb, world, agent, time and dt",
      column: 1,
    });
    expect(error('undefined')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'undefined' (write null instead)", column: 1 });
    expect(error('len + 1')).toEqual({
      code: 'E_EXPR_UNKNOWN_ROOT',
      message: "'len' is a function: call it with parentheses, like len(...)",
      column: 1,
    });
  });

  it('allows bb and agent only before a key', () => {
    expect(error('len(bb)')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: "'bb' must be followed by a blackboard key, like bb.target", column: 5 });
    expect(error('agent')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: "'agent' must be followed by a field: agent.id or agent.label", column: 1 });
    expect(error('agent.name')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: "agent has no field 'name' (use agent.id or agent.label)", column: 7 });
    expect(error('agent[self.key]')).toEqual({ code: 'E_EXPR_UNKNOWN_ROOT', message: 'agent can only be read as agent.id or agent.label', column: 6 });
  });
});

describe('blackboard keys', () => {
  it('rejects undeclared keys, with a suggestion when one is close', () => {
    expect(error('bb.tagret')).toEqual({
      code: 'E_EXPR_UNDECLARED_KEY',
      message: "blackboard key 'tagret' is not declared in this tree's blackboard (did you mean 'target'?)",
      column: 4,
    });
    expect(error("bb['tagret'] ?? 1")).toEqual({
      code: 'E_EXPR_UNDECLARED_KEY',
      message: "blackboard key 'tagret' is not declared in this tree's blackboard (did you mean 'target'?)",
      column: 4,
    });
    expect(error('bb.speed')).toEqual({
      code: 'E_EXPR_UNDECLARED_KEY',
      message: "blackboard key 'speed' is not declared in this tree's blackboard",
      column: 4,
    });
    expect(error('bb[0]')).toEqual({
      code: 'E_EXPR_UNDECLARED_KEY',
      message: "blackboard key '0' is not declared in this tree's blackboard",
      column: 4,
    });
  });

  it('lists the keys read, in order of first appearance', () => {
    const r = compiled('bb.waypoint + bb.list[0] > 0 ? bb.target : bb.waypoint');
    expect(r.reads).toEqual(['waypoint', 'list', 'target']);
    expect(r.roots).toEqual(['bb']);
    expect(compiled('self.hp < time').reads).toEqual([]);
  });

  it('reads a key computed at run time (own properties only), and then may read every key', () => {
    const r = compiled('bb[bb.slot]');
    expect(r.reads).toEqual(['slot', 'target', 'waypoint', 'alert', 'list']);
    expect(r.fn(context())).toBe(2);
    expect(run('bb[self.evil]')).toBeNull();
    expect(run("bb['tar' + 'get'].x")).toBe(3);
    expect(run("bb['to' + 'String']")).toBeNull();
    expect(run('bb[self.zero]')).toBeNull();
    expect(run('bb[self.pos]')).toBeNull();
  });
});

describe('property access', () => {
  it.each<[string, unknown]>([
    ['self.pos.x', 3],
    ["self['pos']['y']", 4],
    ['self.nested.a.b.c', 5],
    ['self.missing', null],
    ['self.missing.deeper.still', null],
    ['self.nothing.x', null],
    ['self.hp.x', null],
    ['self.name.length', null],
    ['self.tags.length', 2],
    ['self.tags[0]', 'a'],
    ['self.tags[1]', 'b'],
    ['self.tags[2]', null],
    ['self.tags[-1]', null],
    ['self.tags[0.5]', null],
    ["self.tags['0']", 'a'],
    ['self.tags[true]', null],
    ['self.tags[null]', null],
    ['self.tags[self.tags]', null],
    ['self.tags.push', null],
    ['self[self.key]', 20],
    ['self[self.nothing]', null],
    ['world.enemies[1].id', 2],
    ['world.enemies[len(world.enemies) - 1].id', 3],
    ['self.名前', 'ゴブリン'],
    ['self.toString', null],
    ['self.hasOwnProperty', null],
    ["self['valueOf']", null],
    ['self.tags.map', null],
    ['[1, 2][1]', 2],
    ["[1, 2]['length']", 2],
    ["'abc'[0]", null],
    ['time.x', null],
    ['(1 + 2).x', null],
  ])('%s', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });

  it('reads numeric keys of objects by their string form', () => {
    expect(run('self[1]', context({ self: { 1: 'one' } }))).toBe('one');
  });

  it('reads only arrays and plain objects', () => {
    class Orc {
      hp = 5;
    }
    const bare: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    bare['hp'] = 6;
    expect(run('self.hp', context({ self: new Orc() }))).toBeNull();
    expect(run('self.size', context({ self: new Map([['size', 1]]) }))).toBeNull();
    expect(run('self[0]', context({ self: new Uint8Array([1]) }))).toBeNull();
    expect(run('self.hp', context({ self: bare }))).toBe(6);
  });

  it('never returns functions', () => {
    expect(run('self.f', context({ self: { f: () => 1 } }))).toBeNull();
    expect(run('self[0]', context({ self: [() => 1] }))).toBeNull();
  });

  it('never reads inherited properties, even from a polluted prototype', () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto['polluted'] = 'yes';
    try {
      expect(run('self.polluted')).toBeNull();
      expect(run("self['pol' + 'luted']")).toBeNull();
      expect(run("has(self, 'polluted')")).toBe(false);
    } finally {
      delete proto['polluted'];
    }
  });
});

describe('arithmetic', () => {
  it.each<[string, unknown]>([
    ['7 + 3', 10],
    ['7 - 10', -3],
    ['6 * 7', 42],
    ['7 / 2', 3.5],
    ['7 % 3', 1],
    ['-7 % 3', -1],
    ['7.5 % 2', 1.5],
    ['7 / 0', null],
    ['0 / 0', null],
    ['-7 / 0', null],
    ['7 % 0', null],
    ['1e308 * 10', null],
    ['1e308 + 1e308', null],
    ['-1e308 - 1e308', null],
    ["'a' + 'b'", 'ab'],
    ["'' + ''", ''],
    ["'hp: ' + self.hp", null],
    ["'a' + 1", null],
    ["1 + 'a'", null],
    ["'2' * 3", null],
    ['null + 1', null],
    ['1 + null', null],
    ['self.missing + 1', null],
    ['self.missing * 2', null],
    ['true + 1', null],
    ['[1] + [2]', null],
    ['self.pos - 1', null],
    ['-self.hp', -20],
    ['--5', 5],
    ['2 - -3', 5],
    ["-'a'", null],
    ['-null', null],
    ['-true', null],
    ['self.hp / bb.waypoint', 10],
    ['self.hp % self.zero', null],
  ])('%s', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });
});

describe('comparison and equality', () => {
  it.each<[string, unknown]>([
    ['1 < 2', true],
    ['2 < 1', false],
    ['2 <= 2', true],
    ['3 > 2', true],
    ['2 >= 3', false],
    ["'a' < 'b'", true],
    ["'b' >= 'a'", true],
    ["'B' < 'a'", true],
    ["1 < 'a'", false],
    ["'1' < 2", false],
    ["'1' >= 1", false],
    ['null < 1', false],
    ['null <= 0', false],
    ['null >= null', false],
    ['1 > null', false],
    ['self.missing < 5', false],
    ['self.missing >= 5', false],
    ['true > false', false],
    ['[2] > [1]', false],
    ['1 == 1', true],
    ["1 == '1'", false],
    ["'a' == 'a'", true],
    ["'a' != 'b'", true],
    ['null == null', true],
    ['self.missing == null', true],
    ['null == self.missing', true],
    ['self.nothing == self.missing', true],
    ['null != self.missing', false],
    ['self.hp != null', true],
    ['0 == false', false],
    ["'' == false", false],
    ['0 == null', false],
    ['0 == -0', true],
    ['[1] == [1]', false],
    ['self.tags == self.tags', true],
    ['self.pos != self.pos', false],
    ['self.hp == bb.waypoint * 10', true],
    ['self.hp == 20', true],
    ["'orc' == self.name", true],
    ['self.flag == true', true],
  ])('%s', (source, expected) => {
    expect(run(source)).toBe(expected);
  });
});

describe('logic and conditionals', () => {
  it.each<[string, unknown]>([
    ['0 || 5', 5],
    ["'' || 'x'", 'x'],
    ['self.tags || 1', ['a', 'b']],
    ['3 && 4', 4],
    ['0 && 4', 0],
    ['null && 1', null],
    ['self.missing && 1', null],
    ['null ?? 3', 3],
    ['self.missing ?? 3', 3],
    ['0 ?? 3', 0],
    ['false ?? 3', false],
    ["'' ?? 3", ''],
    ['!null', true],
    ['!self.missing', true],
    ['!self.tags', false],
    ['!self.empty', false],
    ['!0', true],
    ['!!0', false],
    ["!''", true],
    ["!'0'", false],
    ["self.hp < 30 ? 'flee' : 'fight'", 'flee'],
    ['0 ? 1 : 2', 2],
    ['[] ? 1 : 2', 1],
    ["'' ? 1 : 2", 2],
    ['self.missing ? 1 : 2', 2],
    ['self.hp > 10 && self.hp < 30', true],
  ])('%s', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });

  it('short-circuits: the skipped side is not evaluated', () => {
    const c = context();
    expect(run('true || rand() < 1', c)).toBe(true);
    expect(run('false && rand() < 1', c)).toBe(false);
    expect(run('1 ?? rand()', c)).toBe(1);
    expect(run('true ? 1 : rand()', c)).toBe(1);
    expect(c.draws).toBe(0);
  });
});

describe('precedence', () => {
  it.each<[string, unknown]>([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3],
    ['64 / 4 / 2', 8],
    ['2 * 3 % 4', 2],
    ['-2 * 3', -6],
    ['-(2 * 3)', -6],
    ['1 + 2 < 4', true],
    ['1 < 2 == true', true],
    ['2 > 1 == 1 > 2', false],
    ['true || false && false', true],
    ['(true || false) && false', false],
    ['null ?? false || true', true],
    ['1 == 1 && 2 == 2', true],
    ['null ?? 1 ? 2 : 3', 2],
    ['false ? 1 : true ? 2 : 3', 2],
    ['true ? false ? 1 : 2 : 3', 2],
    ['!true == false', true],
    ['!(1 == 2)', true],
    ['self.tags[0] + self.tags[1]', 'ab'],
    ['-self.pos.x', -3],
    ['!self.flag', false],
    ['len(self.tags) * 2 + 1', 5],
    ['1 < 2 ? 3 + 4 : 5', 7],
  ])('%s', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });
});

describe('functions', () => {
  it.each<[string, unknown]>([
    ['abs(-3)', 3],
    ['abs(2.5)', 2.5],
    ["abs('x')", null],
    ['abs(null)', null],
    ['floor(2.7)', 2],
    ['floor(-2.5)', -3],
    ['ceil(2.1)', 3],
    ['ceil(-2.1)', -2],
    ['round(2.5)', 3],
    ['round(-2.5)', -2],
    ['round(2.4)', 2],
    ['round(self.missing)', null],
    ['sqrt(16)', 4],
    ['sqrt(0)', 0],
    ['sqrt(-1)', null],
    ['sqrt(null)', null],
    ['min(3)', 3],
    ["min('a')", null],
    ['min(3, 1, 2)', 1],
    ['max(3, 1, 2)', 3],
    ['max(self.hp, 50)', 50],
    ['min(self.hp, 50, bb.waypoint)', 2],
    ['min(1, null)', null],
    ['max(1, 2, self.missing)', null],
    ["max(1, 'a')", null],
    ['clamp(5, 0, 10)', 5],
    ['clamp(-1, 0, 10)', 0],
    ['clamp(11, 0, 10)', 10],
    ['clamp(5, 5, 5)', 5],
    ['clamp(5, 10, 0)', null],
    ['clamp(null, 0, 1)', null],
    ["clamp(1, 0, '2')", null],
    ["len('héllo')", 5],
    ["len('🌲')", 2],
    ["len('')", 0],
    ['len([1, 2, 3])', 3],
    ['len(self.empty)', 0],
    ['len(self.pos)', 2],
    ['len(world)', 2],
    ['len(null)', null],
    ['len(5)', null],
    ['len(true)', null],
    ['count(self.tags)', 2],
    ['count(world.enemies)', 3],
    ["count('abc')", null],
    ['count(null)', null],
    ['count(self.pos)', null],
    ["has(self, 'hp')", true],
    ["has(self, 'nothing')", true],
    ["has(self, 'missing')", false],
    ["has(self, 'toString')", false],
    ["has(null, 'x')", false],
    ["has('abc', 'length')", false],
    ['has(self.tags, 0)', true],
    ['has(self.tags, 5)', false],
    ["has(self.tags, 'length')", true],
    ['has(self, 1)', false],
    ['has(self.pos, null)', false],
    ['has(self, self.key)', true],
    ['has(self, self.evil)', false],
    ['dist(self.pos, [0, 0])', 5],
    ['dist2(self.pos, [0, 0])', 25],
    ['dist([0, 0], self.pos)', 5],
    ['dist(self.pos, self.pos)', 0],
    ['dist([0, 0, 0], [1, 2, 2])', 3],
    ['dist(self.pos3, [0, 0, 0])', 3],
    ['dist2(self.pos3, [0, 0])', 5],
    ['dist2(self.pos3, self.pos)', 8],
    ['dist(bb.target, self.pos)', 4],
    ["dist(self.pos, 'a')", null],
    ['dist(null, self.pos)', null],
    ['dist(self.pos, self.missing)', null],
    ['dist([1], [0, 0])', null],
    ['dist([1, 2, 3, 4], [0, 0])', null],
    ["dist(['a', 1], [0, 0])", null],
    ['dist(self.tags, [0, 0])', null],
    ['dist(self.nested, [0, 0])', null],
    ['dist2([1e200, 0], [-1e200, 0])', null],
    ['nearest(world.enemies, self.pos).id', 2],
    ['nearest(world.enemies, [0, 0]).id', 2],
    ['nearest(world.enemies, [0, -1]).id', 3],
    ['nearest(world.enemies, [0, 0], 5).id', 2],
    ['nearest(world.enemies, [0, 0], 4.9)', null],
    ['nearest(world.enemies, [20, 0], 10).id', 1],
    ['nearest([], self.pos)', null],
    ['nearest(null, self.pos)', null],
    ['nearest(self.pos, self.pos)', null],
    ['nearest(world.enemies, null)', null],
    ["nearest(world.enemies, 'here')", null],
    ['nearest(world.enemies, self.pos, null)', null],
    ['nearest(world.enemies, self.pos, -1)', null],
    ["nearest([1, 'a', null, [3, 4], self.pos], [0, 0])", [3, 4]],
    ['nearest([self.pos3, [9, 9]], [1, 2, 5])', { x: 1, y: 2, z: 2 }],
  ])('%s', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });

  it('returns the element itself from nearest', () => {
    const c = context();
    expect(run('nearest(world.enemies, self.pos)', c)).toBe((c.world as { enemies: unknown[] }).enemies[1]);
  });

  it("draws from the agent's generator with rand(), once per call", () => {
    const c = context();
    const r = compiled('rand()');
    expect(r.usesRandom).toBe(true);
    expect(r.constant).toBe(false);
    expect(r.fn(c)).toBe(0.25);
    expect(r.fn(c)).toBe(0.5);
    expect(run('rand() + rand()', c)).toBe(0.75 + 0.25);
    expect(c.draws).toBe(4);
    expect(compiled('self.hp').usesRandom).toBe(false);
  });

  it('lists the library', () => {
    expect(EXPRESSION_FUNCTIONS).toEqual(['abs', 'min', 'max', 'floor', 'ceil', 'round', 'sqrt', 'clamp', 'len', 'dist', 'dist2', 'nearest', 'count', 'has', 'rand']);
    expect(Object.isFrozen(EXPRESSION_FUNCTIONS)).toBe(true);
  });

  it('rejects wrong argument counts', () => {
    expect(error('abs()')).toEqual({ code: 'E_EXPR_ARITY', message: "'abs' takes 1 argument (x) but was given 0", column: 1 });
    expect(error('1 + abs(1, 2)')).toEqual({ code: 'E_EXPR_ARITY', message: "'abs' takes 1 argument (x) but was given 2", column: 5 });
    expect(error('clamp(1, 2)')).toEqual({ code: 'E_EXPR_ARITY', message: "'clamp' takes 3 arguments (x, lo, hi) but was given 2", column: 1 });
    expect(error('min()')).toEqual({ code: 'E_EXPR_ARITY', message: "'min' takes at least 1 argument but was given 0", column: 1 });
    expect(error('nearest(world.enemies)')).toEqual({
      code: 'E_EXPR_ARITY',
      message: "'nearest' takes 2 or 3 arguments (list, from, maxDist?) but was given 1",
      column: 1,
    });
    expect(error('nearest(world.enemies, self, 1, 2)')).toEqual({
      code: 'E_EXPR_ARITY',
      message: "'nearest' takes 2 or 3 arguments (list, from, maxDist?) but was given 4",
      column: 1,
    });
    expect(error('rand(1)')).toEqual({ code: 'E_EXPR_ARITY', message: "'rand' takes no arguments but was given 1", column: 1 });
    expect(error('dist(self)')).toEqual({ code: 'E_EXPR_ARITY', message: "'dist' takes 2 arguments (a, b) but was given 1", column: 1 });
  });

  it('rejects unknown functions, with a suggestion when one is close', () => {
    expect(error('nearst(world.enemies, self)')).toEqual({
      code: 'E_EXPR_UNKNOWN_FUNCTION',
      message: "unknown function 'nearst' (did you mean 'nearest'?)",
      column: 1,
    });
    expect(error('Max(1, 2)')).toEqual({ code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'Max' (did you mean 'max'?)", column: 1 });
    expect(error('distance(self, bb.target)')).toEqual({ code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'distance'", column: 1 });
    expect(error('self(1)')).toEqual({ code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'self'", column: 1 });
  });
});

describe('several errors at once', () => {
  it('reports every checking error with its column, in source order', () => {
    expect(errors('abss(1) + lenn(self.tags)')).toEqual([
      { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'abss' (did you mean 'abs'?)", column: 1 },
      { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'lenn' (did you mean 'len'?)", column: 11 },
    ]);
    expect(errors('foo(slef, bb.tagret, self.constructor) + clamp(1)')).toEqual([
      { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'foo'", column: 1 },
      { code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'slef' (did you mean 'self'?)", column: 5 },
      {
        code: 'E_EXPR_UNDECLARED_KEY',
        message: "blackboard key 'tagret' is not declared in this tree's blackboard (did you mean 'target'?)",
        column: 14,
      },
      { code: 'E_EXPR_FORBIDDEN_NAME', message: "the name 'constructor' is not allowed in expressions", column: 27 },
      { code: 'E_EXPR_ARITY', message: "'clamp' takes 3 arguments (x, lo, hi) but was given 1", column: 42 },
    ]);
  });

  it('checks the object of a forbidden property too', () => {
    expect(errors('slef.constructor')).toEqual([
      { code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'slef' (did you mean 'self'?)", column: 1 },
      forbidden('constructor', 6),
    ]);
  });

  it('stops at the first syntax error', () => {
    expect(errors('foo( + nope')).toEqual([{ code: 'E_EXPR_SYNTAX', message: "expected a value but found '+'", column: 6 }]);
  });
});

describe('syntax errors', () => {
  it.each<[string, string, number]>([
    ['', 'the expression is empty', 1],
    ['   ', 'the expression is empty', 1],
    ['1 +', 'the expression ends too early: a value is missing', 4],
    ['(1', "expected ')' to close the '(' at column 1, but found the end of the expression", 3],
    ['len(1 2)', "expected ')' to close the '(' at column 4, but found '2'", 7],
    ['[1, 2', "expected ']' to close the '[' at column 1, but found the end of the expression", 6],
    ['self.tags[0', "expected ']' to close the '[' at column 10, but found the end of the expression", 12],
    ['[1,]', "expected a value but found ']'", 4],
    ['self.', "expected a field name after '.', but found the end of the expression", 6],
    ['self.1', "expected a field name after '.', but found '1'", 6],
    ["self.'hp'", "expected a field name after '.', but found a string", 6],
    ['true ? 1', "expected ':' to go with the '?' at column 6, but found the end of the expression", 9],
    ['self hp', "unexpected 'hp' after a complete expression (is an operator missing?)", 6],
    ['1 2', "unexpected '2' after a complete expression (is an operator missing?)", 3],
    ['(1))', "unexpected ')' after a complete expression (is an operator missing?)", 4],
    [')', "expected a value but found ')'", 1],
    ['.5 + 1', 'a number must start with a digit: write 0.5, not .5', 1],
    ['1 + .5', 'a number must start with a digit: write 0.5, not .5', 5],
    ['* 2', "expected a value but found '*'", 1],
    ['a=1', "'=' cannot be used here: expressions only read values (to compare, use '==')", 2],
    ['self.hp = 1', "'=' cannot be used here: expressions only read values (to compare, use '==')", 9],
    ['x => 1', "'=' cannot be used here: expressions only read values (to compare, use '==')", 3],
    ['self.hp === 1', "use '==' instead of '===' (it already compares strictly)", 9],
    ['self.hp !== 1', "use '!=' instead of '!==' (it already compares strictly)", 9],
    ['true & false', "unexpected character '&' (did you mean '&&'?)", 6],
    ['true | false', "unexpected character '|' (did you mean '||'?)", 6],
    ['#tag', "unexpected character '#'", 1],
    ['self.hp @ 2', "unexpected character '@'", 9],
    ['`x`', "unexpected character '`'", 1],
    ['1;2', "unexpected character ';'", 2],
    ['{a: 1}', "unexpected character '{'", 1],
    ['\u0000', 'unexpected character U+0000', 1],
    ['1 +\u200B2', 'unexpected character U+200B', 4],
    ['f()()', 'only library functions can be called, like len(x); this is not a function name', 4],
    ['self.hp()', 'only library functions can be called, like len(x); this is not a function name', 8],
    ['(len)(1)', 'only library functions can be called, like len(x); this is not a function name', 6],
    ['true()', 'only library functions can be called, like len(x); this is not a function name', 5],
    ["'🌲🌲' + + 1", "expected a value but found '+'", 8],
  ])('%j', (source, message, column) => {
    expect(error(source)).toEqual({ code: 'E_EXPR_SYNTAX', message, column });
  });

  it('rejects what is not a string', () => {
    expect(error(42 as unknown as string)).toEqual({ code: 'E_EXPR_SYNTAX', message: 'an expression must be a string', column: 1 });
  });

  it('counts columns in code points', () => {
    expect(error("'🌲🌲' + nope")).toEqual({
      code: 'E_EXPR_UNKNOWN_ROOT',
      message: "unknown name 'nope': expressions can only read self, bb, world, agent, time and dt",
      column: 8,
    });
  });
});

function forbidden(name: string, column: number): ExprError {
  return { code: 'E_EXPR_FORBIDDEN_NAME', message: `the name '${name}' is not allowed in expressions`, column };
}

describe('hostile input', () => {
  it.each<[string, string, number]>([
    ['constructor', 'constructor', 1],
    ['__proto__', '__proto__', 1],
    ['prototype', 'prototype', 1],
    ['self.constructor', 'constructor', 6],
    ['self.__proto__', '__proto__', 6],
    ['self.tags.prototype', 'prototype', 11],
    ['world.enemies[0].constructor.name', 'constructor', 18],
    ["self['constructor']", 'constructor', 6],
    ['self["__proto__"]', '__proto__', 6],
    ["bb['__proto__']", '__proto__', 4],
    ['bb.constructor', 'constructor', 4],
    ["has(self, 'prototype')", 'prototype', 11],
    ['constructor(1)', 'constructor', 1],
  ])('%s', (source, name, column) => {
    expect(error(source)).toEqual(forbidden(name, column));
  });

  it('yields null for forbidden names computed at run time', () => {
    expect(run("self['constr' + 'uctor']")).toBeNull();
    expect(run("self['__pro' + 'to__']")).toBeNull();
    expect(run("self.tags['constr' + 'uctor']")).toBeNull();
    expect(run('self[self.evil]')).toBeNull();
    expect(run("has(self, 'constr' + 'uctor')")).toBe(false);
    expect(run("self['constr' + 'uctor']['constr' + 'uctor']")).toBeNull();
  });

  it('reads a key named __proto__ only as the data it is', () => {
    const self: unknown = JSON.parse('{"__proto__": {"x": 1}, "k": "__proto__"}');
    expect(run('self[self.k]', context({ self }))).toEqual({ x: 1 });
    expect(run('self[self.k].x', context({ self }))).toBe(1);
  });

  it.each<[string, ExprError]>([
    ['this', { code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'this': expressions can only read self, bb, world, agent, time and dt", column: 1 }],
    ['this.self', { code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'this': expressions can only read self, bb, world, agent, time and dt", column: 1 }],
    ['process.exit', { code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'process': expressions can only read self, bb, world, agent, time and dt", column: 1 }],
    ['globalThis', { code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'globalThis': expressions can only read self, bb, world, agent, time and dt", column: 1 }],
    ['c.bb', { code: 'E_EXPR_UNKNOWN_ROOT', message: "unknown name 'c': expressions can only read self, bb, world, agent, time and dt", column: 1 }],
    ['nn(self)', { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'nn'", column: 1 }],
    ["require('x')", { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'require'", column: 1 }],
    ["eval('1')", { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'eval'", column: 1 }],
    ["Function('return 1')", { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'Function'", column: 1 }],
    ["import('x')", { code: 'E_EXPR_UNKNOWN_FUNCTION', message: "unknown function 'import'", column: 1 }],
    ['new Map', { code: 'E_EXPR_SYNTAX', message: "unexpected 'Map' after a complete expression (is an operator missing?)", column: 5 }],
    ['self.hp = 0', { code: 'E_EXPR_SYNTAX', message: "'=' cannot be used here: expressions only read values (to compare, use '==')", column: 9 }],
  ])('%s', (source, expected) => {
    expect(error(source)).toEqual(expected);
  });

  it('emits string literals as data, never as code', () => {
    expect(run("self['\"]); throw 1; (\"']")).toBeNull();
    expect(run("'*/ throw 1; /*'")).toBe('*/ throw 1; /*');
    expect(run("'\u2028\u2029' + '`${1}`'")).toBe('\u2028\u2029`${1}`');
    expect(run("self['\\n']", context({ self: { '\n': 'newline' } }))).toBe('newline');
    expect(run("'\\\\'")).toBe('\\');
    expect(run("'\uD800'")).toBe('\uD800');
  });

  it('accepts 64 levels of nesting and rejects 65', () => {
    expect(run(`${'('.repeat(64)}1${')'.repeat(64)}`)).toBe(1);
    expect(error(`${'('.repeat(65)}1${')'.repeat(65)}`)).toEqual({
      code: 'E_EXPR_TOO_COMPLEX',
      message: 'the expression nests too deeply (more than 64 levels)',
      column: 65,
    });
    expect(error(`${'['.repeat(2000)}`)).toEqual({
      code: 'E_EXPR_TOO_COMPLEX',
      message: 'the expression nests too deeply (more than 64 levels)',
      column: 65,
    });
    expect(error(`${'!'.repeat(100)}true`).code).toBe('E_EXPR_TOO_COMPLEX');
    expect(error(`${'-'.repeat(100)}1`).code).toBe('E_EXPR_TOO_COMPLEX');
    expect(error(`${'len('.repeat(100)}1${')'.repeat(100)}`).code).toBe('E_EXPR_TOO_COMPLEX');
    expect(error(`${'true ? 1 : '.repeat(100)}1`).code).toBe('E_EXPR_TOO_COMPLEX');
    expect(error(`self${'[0]'.repeat(20)}${'[self'.repeat(70)}`).code).toBe('E_EXPR_TOO_COMPLEX');
  });

  it('rejects 10k and 100k nested parentheses without overflowing the stack', () => {
    expect(error(`${'('.repeat(10_000)}1${')'.repeat(10_000)}`)).toEqual({
      code: 'E_EXPR_TOO_COMPLEX',
      message: 'the expression is too long (20001 characters; the limit is 4096)',
      column: 1,
    });
    expect(error('('.repeat(100_000)).code).toBe('E_EXPR_TOO_COMPLEX');
    expect(error(`${'('.repeat(2000)}1${')'.repeat(2000)}`)).toEqual({
      code: 'E_EXPR_TOO_COMPLEX',
      message: 'the expression nests too deeply (more than 64 levels)',
      column: 65,
    });
  });

  it('limits the length and the number of parts', () => {
    const longString = `'${'a'.repeat(4094)}'`;
    expect(run(longString)).toBe('a'.repeat(4094));
    expect(error(`'${'a'.repeat(4095)}'`)).toEqual({
      code: 'E_EXPR_TOO_COMPLEX',
      message: 'the expression is too long (4097 characters; the limit is 4096)',
      column: 1,
    });
    expect(run(`1${'+1'.repeat(499)}`)).toBe(500);
    expect(error(`1${'+1'.repeat(500)}`)).toEqual({
      code: 'E_EXPR_TOO_COMPLEX',
      message: 'the expression is too large (more than 1000 parts); split it or move the logic into a plugin',
      column: 1000,
    });
    // A long flat chain is not "nesting": it compiles and runs (the limit is the number of parts).
    expect(run(`self.hp${' + self.hp'.repeat(300)}`)).toBe(20 * 301);
  });
});

describe('compiled code', () => {
  // Generated code only exists where strings may become code; elsewhere the closures of interpret.ts run.
  it.skipIf(!CODE_GENERATION)('inlines reads and comparisons into one small function', () => {
    // Named reads are inlined (one monomorphic load per expression), still own-property and plain-object only;
    // on a context that checked self when it was set (c.plainSelf, the Agent), only the own-property test remains,
    // and only while a prototype such an object inherits from has the key (the optimiser folds that test away).
    const full = (k: string) => `((t0 = c.self) !== null && typeof t0 === 'object' && hasOwn(t0, "${k}") && isPlain(t0) ? val(t0["${k}"]) : null)`;
    const own = (k: string) => `("${k}" in objectProto || "${k}" in arrayProto ? (hasOwn(t0, "${k}") ? val(t0["${k}"]) : null) : val(t0["${k}"]))`;
    const read = (k: string) => `((t0 = c.plainSelf) !== undefined ? ${own(k)} : ${full(k)})`;
    expect(compiled('self.hp < 30').fn.toString()).toBe(`function canopyExpression(c) { let t0; return lt(${read('hp')}, 30); }`);
    expect(compiled('self.hp < 10 * 3').fn.toString()).toBe(`function canopyExpression(c) { let t0; return lt(${read('hp')}, 30); }`);
    expect(compiled("self.name == 'orc'").fn.toString()).toBe(`function canopyExpression(c) { let t0; return (${read('name')} === "orc"); }`);
    // A declared blackboard key is a plain load too (own property of an object whose prototype is Object.prototype).
    expect(compiled('bb.target != null').fn.toString()).toBe(
      `function canopyExpression(c) { let t0; return (((t0 = c.bb["target"]) === undefined || typeof t0 === 'function' ? null : t0) != null); }`,
    );
    expect(compiled('agent.id').fn.toString()).toBe('function canopyExpression(c) { return c.agent.id; }');
  });

  it('a blackboard read never returns undefined or a function', () => {
    const c = context();
    (c.bb as Record<string, unknown>)['target'] = undefined;
    expect(compiled('bb.target').fn(c)).toBeNull();
    (c.bb as Record<string, unknown>)['target'] = () => 1;
    expect(compiled('bb.target').fn(c)).toBeNull();
    (c.bb as Record<string, unknown>)['target'] = 0;
    expect(compiled('bb.target').fn(c)).toBe(0);
  });

  it('folds what reads no root', () => {
    const r = compiled('1 + 2 * 3');
    expect(r).toMatchObject({ constant: true, value: 7, reads: [], roots: [], usesRandom: false });
    expect(r.fn(context())).toBe(7);
    expect(compiled("'a' + 'b'").value).toBe('ab');
    expect(compiled('min(1, 2) == 1').value).toBe(true);
    expect(compiled('7 / 0').value).toBeNull();
    expect(compiled('len([1, 2]) > 1 ? [1] : [2]').value).toEqual([1]);
  });

  it('has no value when the expression is not constant', () => {
    const r = compiled('self.hp');
    expect(r.constant).toBe(false);
    expect('value' in r).toBe(false);
    expect(compiled('dt').roots).toEqual(['dt']);
    expect(compiled('world.count + self.hp + time + agent.id + bb.waypoint').roots).toEqual(['self', 'bb', 'world', 'agent', 'time']);
  });

  it('shares folded arrays between evaluations instead of allocating', () => {
    const r = compiled('nearest([[0, 0], [5, 5]], self.pos)');
    const c = context();
    expect(r.fn(c)).toEqual([5, 5]);
    expect(r.fn(c)).toBe(r.fn(c));
  });
});

describe('truthy', () => {
  it.each<[unknown, boolean]>([
    [null, false],
    [undefined, false],
    [false, false],
    [0, false],
    [-0, false],
    [NaN, false],
    ['', false],
    [true, true],
    [1, true],
    [-1, true],
    ['0', true],
    ['false', true],
    [[], true],
    [{}, true],
  ])('%j → %j', (v, expected) => {
    expect(truthy(v)).toBe(expected);
  });
});

describe('first-level reads on an agent (self and world checked once, when set)', () => {
  const t = tree({ type: 'action', name: 'act', action: 'look', instant: true, args: { s: 'self.hp', w: 'world.hp', n: 'self.pos.x', k: "self['hp']", h: "has(self, 'hp')" } });
  const argsOf = (self: unknown, world: unknown = self): unknown => {
    const h = new Harness(t);
    h.agent.self = self;
    h.agent.world = world;
    return h.step().actions[0]![3];
  };

  it('read own keys only, also when a prototype gains the key after the tree was compiled', () => {
    // The fast read trusts a load while neither Object.prototype nor Array.prototype has the key; once one has
    // it, inherited values must still read null, through compiled code that already ran (and was optimised).
    const reads = { hp: 5, pos: { x: 1 } };
    for (let k = 0; k < 200; k++) expect(argsOf(reads)).toEqual({ s: 5, w: 5, n: 1, k: 5, h: true });
    const protos = [Object.prototype, Array.prototype] as unknown as Array<Record<string, unknown>>;
    for (const proto of protos) {
      proto['hp'] = 99;
      try {
        expect(argsOf({ pos: { x: 1 } })).toEqual({ s: null, w: null, n: 1, k: null, h: false });
        expect(argsOf([1])).toEqual({ s: null, w: null, n: null, k: null, h: false });
        expect(argsOf({ hp: 5, pos: { x: 1 } })).toEqual({ s: 5, w: 5, n: 1, k: 5, h: true });
      } finally {
        delete proto['hp'];
      }
    }
    expect(argsOf({ pos: { x: 1 } })).toEqual({ s: null, w: null, n: 1, k: null, h: false });
  });

  it('check every world handed over, though agents after the first get the check made for the first', () => {
    // The world setter remembers its last check (a session hands one world to each of its agents in turn).
    const liar = new Proxy({} as Record<string, unknown>, { get: (target, key) => (key === 'hp' ? 7 : target[key as string]) });
    const plain = { hp: 4 };
    expect(argsOf({ hp: 5 }, plain)).toMatchObject({ s: 5, w: 4 });
    expect(argsOf({ hp: 5 }, liar)).toMatchObject({ s: 5, w: null });
    expect(argsOf({ hp: 5 }, liar)).toMatchObject({ s: 5, w: null });
    expect(argsOf({ hp: 5 }, plain)).toMatchObject({ s: 5, w: 4 });
    expect(argsOf({ hp: 5 }, [4])).toMatchObject({ s: 5, w: null });
    expect(argsOf({ hp: 5 }, plain)).toMatchObject({ s: 5, w: 4 });
  });

  it('read a Proxy by its own-property answers, as any context without plainSelf does', () => {
    // A Proxy over a plain object passes the prototype check but may answer reads of keys it says it lacks.
    const liar = new Proxy({ pos: { x: 1 } } as Record<string, unknown>, { get: (target, key) => (key === 'hp' ? 7 : target[key as string]) });
    const h = new Harness(t);
    h.agent.self = liar;
    expect(h.agent.plainSelf).toBeUndefined();
    expect(argsOf(liar)).toEqual({ s: null, w: null, n: 1, k: null, h: false });
    const honest = new Proxy({ hp: 3 }, {});
    expect(argsOf(honest)).toEqual({ s: 3, w: 3, n: null, k: 3, h: true });
  });

  it('read plain objects and objects without a prototype', () => {
    const bare = Object.create(null) as Record<string, unknown>;
    bare['hp'] = 6;
    expect(argsOf({ hp: 5, pos: { x: 1 } })).toEqual({ s: 5, w: 5, n: 1, k: 5, h: true });
    expect(argsOf(bare)).toEqual({ s: 6, w: 6, n: null, k: 6, h: true });
    expect(argsOf(null)).toEqual({ s: null, w: null, n: null, k: null, h: false });
  });

  it('read null from class instances, Object.create(proto), maps, typed arrays, primitives and functions, and never call a getter', () => {
    let called = 0;
    class Orc {
      hp = 5;
      pos = { x: 1 };
      get armour(): number {
        return ++called;
      }
    }
    const fromProto = Object.create({ hp: 5 }) as Record<string, unknown>;
    const withOwnHp = Object.create({ evil: true }) as Record<string, unknown>;
    withOwnHp['hp'] = 5;
    const fn = Object.assign(() => 1, { hp: 5 });
    for (const v of [new Orc(), fromProto, withOwnHp, new Map([['hp', 5]]), new Uint8Array([5]), 5, 'hp', fn]) {
      expect(argsOf(v)).toEqual({ s: null, w: null, n: null, k: null, h: false });
    }
    expect(called).toBe(0);
  });

  it('read the same through a whole tree (conditions, guards and blackboard writes)', () => {
    // Every read is null for a hostile self/world: the guard passes, the condition succeeds, `set` writes nulls.
    const reads = "self.hp == null && world.hp == null && self['hp'] == null && !has(self, 'hp') && !has(world, 'hp')";
    const whole = tree(
      { type: 'sequence', name: 'root', if: reads, abort: 'self', children: [{ type: 'condition', name: 'c', expr: reads }, { type: 'set', values: { s: 'self.hp', w: 'world.hp' } }] },
      { s: 0, w: 0 },
    );
    expect(whole.inlined).toBe(CODE_GENERATION);
    class Orc {
      hp = 5;
    }
    for (const v of [new Orc(), Object.create({ hp: 5 }), new Map([['hp', 5]]), 5, null]) {
      const h = new Harness(whole);
      h.agent.self = v;
      h.agent.world = v;
      h.step();
      expect(h.status('root')).toBe('success');
      expect(h.agent.bb).toEqual({ s: null, w: null });
    }
    const h = new Harness(whole);
    h.agent.self = { hp: 5 };
    h.agent.world = { hp: 6 };
    h.step();
    expect(h.status('root')).toBe('failure');
    h.agent.self = Object.assign(Object.create(null) as object, { x: 1 });
    h.agent.world = [1];
    h.step();
    expect(h.status('root')).toBe('success');
  });

  it('follow the root when it changes, through restart and restore too', () => {
    const h = new Harness(t);
    h.agent.self = new Map([['hp', 1]]);
    h.agent.world = { hp: 2 };
    expect(h.step().actions[0]![3]).toMatchObject({ s: null, w: 2 });
    h.agent.self = { hp: 3 };
    h.agent.world = Object.create({ hp: 4 });
    expect(h.step().actions[0]![3]).toMatchObject({ s: 3, w: null });
    const restored = Agent.restore(t, h.agent.exportState());
    expect(restored.plainSelf).toBe(restored.self);
    expect(h.agent.restartOn(t).plainSelf).toBe(h.agent.self);
  });
});
