// validateTree: one test per error code with the exact error, plus collection of many errors,
// subtree cycles, forbidden names everywhere, plugin parameters, and parse errors with line numbers.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeCatalog } from '../../src/bt/catalog.js';
import { TreeLibrary, parseTreeText } from '../../src/bt/library.js';
import { defineNode } from '../../src/bt/node.js';
import { registerPlugin } from '../../src/bt/plugins.js';
import { Status } from '../../src/bt/status.js';
import { MAX_NODE_DEPTH, validateTree, type ValidateContext } from '../../src/bt/validate.js';

const catalog = new NodeCatalog();
const FILE = 'trees/t.json';

function validate(def: unknown, ctx: Partial<ValidateContext> = {}): ReturnType<typeof validateTree> {
  return validateTree('t', def, { catalog, file: FILE, ...ctx });
}

/** A tree with `root` and the given blackboard. */
function tree(root: unknown, blackboard: Record<string, unknown> = {}): unknown {
  return { blackboard, root };
}

/** The tree's errors, each without its `file` (always FILE here). */
function errorsOf(def: unknown, ctx: Partial<ValidateContext> = {}): Array<Record<string, unknown>> {
  return validate(def, ctx).map((e) => {
    expect(e.file).toBe(FILE);
    const { file: _file, ...rest } = e;
    return rest;
  });
}

const ok = { type: 'succeed' };

describe('a valid tree', () => {
  it('has no errors, whatever node types, guards, aborts and services it uses', () => {
    const def = {
      $schema: './schema.json',
      description: 'everything at once',
      blackboard: { target: null, n: 0, route: [{ x: 1, y: 2 }] },
      root: {
        type: 'fallback',
        name: 'root',
        services: [{ every: 0.5, values: { target: 'nearest(world.enemies, self)' } }],
        children: [
          { type: 'condition', expr: 'bb.target != null', if: 'self.hp > 0', abort: 'both' },
          { type: 'parallel', success: 1, failure: 2, children: [ok, { type: 'running' }] },
          { type: 'all', children: [ok] },
          { type: 'random', weights: [1, 0, 2], children: [ok, ok, { type: 'fail' }] },
          { type: 'rotator', resetOnAbort: true, children: [ok] },
          { type: 'sequence', reactive: true, children: [{ type: 'inverter', child: { type: 'failer', child: ok } }] },
          { type: 'repeat', times: -1, child: { type: 'retry', attempts: 3, child: { type: 'succeeder', child: ok } } },
          { type: 'keepRunningUntilFailure', child: { type: 'once', child: ok } },
          { type: 'cooldown', seconds: 2, child: { type: 'timeLimit', seconds: 1, child: { type: 'delay', seconds: 0, child: ok } } },
          { type: 'action', action: 'shoot', args: { at: 'bb.target', burst: 3, mode: null, path: [1, 2], opts: { a: true } }, until: 'bb.n > 2', timeout: 4 },
          { type: 'action', action: 'shout', instant: true },
          { type: 'wait', seconds: [0.5, 1] },
          { type: 'set', values: { n: 'bb.n + 1', target: 'null' } },
          { type: 'log', message: "'hello ' + agent.label", level: 'info' },
        ],
      },
    };
    expect(validate(def)).toEqual([]);
  });

  it('accepts a subtree whose args are declared in the subtree blackboard', () => {
    const sub = { blackboard: { threat: null }, root: { type: 'condition', expr: 'bb.threat != null' } };
    const def = tree({ type: 'subtree', tree: 'cover', args: { threat: 'bb.target' } }, { target: null });
    expect(validate(def, { trees: (n) => (n === 'cover' ? sub : undefined) })).toEqual([]);
  });
});

describe('E_TREE_SHAPE', () => {
  it('rejects a top level that is not an object', () => {
    expect(errorsOf([1, 2])).toStrictEqual([{ code: 'E_TREE_SHAPE', path: '', message: "a tree file must hold one object with a 'root' node, found a list" }]);
    expect(errorsOf(null)).toStrictEqual([{ code: 'E_TREE_SHAPE', path: '', message: "a tree file must hold one object with a 'root' node, found null" }]);
  });

  it('rejects a tree without root', () => {
    expect(errorsOf({ blackboard: {} })).toStrictEqual([{ code: 'E_TREE_SHAPE', path: '', message: "the tree has no 'root' node" }]);
  });

  it('rejects a blackboard that is not an object', () => {
    expect(errorsOf({ blackboard: ['hp'], root: ok })).toStrictEqual([
      { code: 'E_TREE_SHAPE', path: '', field: 'blackboard', message: "'blackboard' must be an object of key → initial value, found a list" },
    ]);
  });

  it('rejects blackboard initial values that are not JSON values', () => {
    expect(errorsOf(tree(ok, { speed: Number.NaN, when: new Date(0), f: () => 1 }))).toStrictEqual([
      { code: 'E_TREE_SHAPE', path: 'blackboard', field: 'speed', message: "the initial value of blackboard key 'speed' must be a JSON value, found NaN" },
      { code: 'E_TREE_SHAPE', path: 'blackboard', field: 'when', message: "the initial value of blackboard key 'when' must be a JSON value, found a Date object" },
      { code: 'E_TREE_SHAPE', path: 'blackboard', field: 'f', message: "the initial value of blackboard key 'f' must be a JSON value, found a function" },
    ]);
  });

  it('rejects unknown top-level fields with a suggestion, and a description that is not text', () => {
    expect(errorsOf({ blackbaord: {}, description: 3, root: ok })).toStrictEqual([
      {
        code: 'E_TREE_SHAPE',
        path: '',
        field: 'blackbaord',
        message: "unknown top-level field 'blackbaord' (did you mean 'blackboard'?); a tree file has only '$schema', 'description', 'blackboard' and 'root'",
      },
      { code: 'E_TREE_SHAPE', path: '', field: 'description', message: "'description' must be a string, found the number 3" },
    ]);
  });

  it('rejects nodes nested deeper than the limit', () => {
    let root: unknown = ok;
    for (let i = 0; i < MAX_NODE_DEPTH; i++) root = { type: 'inverter', child: root };
    const errors = validate(tree(root));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'E_TREE_SHAPE', message: 'nodes nest deeper than 200 levels; split the tree into subtrees' });
    expect(errors[0]!.path).toBe(`root${'.child'.repeat(MAX_NODE_DEPTH)}`);
  });
});

describe('E_NODE_NOT_OBJECT', () => {
  it('rejects a child that is not a node', () => {
    expect(errorsOf(tree({ type: 'sequence', children: [ok, 'attack', null] }))).toStrictEqual([
      { code: 'E_NODE_NOT_OBJECT', path: 'root.children[1]', message: "expected a node (an object with a 'type'), found the string \"attack\"" },
      { code: 'E_NODE_NOT_OBJECT', path: 'root.children[2]', message: "expected a node (an object with a 'type'), found null" },
    ]);
    expect(errorsOf(tree(['sequence']))).toStrictEqual([{ code: 'E_NODE_NOT_OBJECT', path: 'root', message: "expected a node (an object with a 'type'), found a list" }]);
  });
});

describe('E_NODE_UNKNOWN_TYPE', () => {
  it('suggests the closest type', () => {
    const def = tree({ type: 'selector', children: [ok, ok, { type: 'inverter', child: { type: 'sequnce', children: [ok] } }] });
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_NODE_UNKNOWN_TYPE', path: 'root.children[2].child', message: "unknown node type 'sequnce' (did you mean 'sequence'?)" },
    ]);
  });

  it('matches case-insensitively, and gives no suggestion when nothing is close', () => {
    expect(errorsOf(tree({ type: 'TimeLimit', seconds: 1, child: ok }))).toStrictEqual([
      { code: 'E_NODE_UNKNOWN_TYPE', path: 'root', message: "unknown node type 'TimeLimit' (did you mean 'timeLimit'?)" },
    ]);
    expect(errorsOf(tree({ type: 'teleport' }))).toStrictEqual([{ code: 'E_NODE_UNKNOWN_TYPE', path: 'root', message: "unknown node type 'teleport'" }]);
  });

  it('reports a missing or non-string type, and still checks the children below', () => {
    expect(errorsOf(tree({ name: 'x', children: [{ type: 'wiat', seconds: 1 }] }))).toStrictEqual([
      { code: 'E_NODE_UNKNOWN_TYPE', path: 'root', message: 'the node has no \'type\'; every node names its type, e.g. "type": "sequence"' },
      { code: 'E_NODE_UNKNOWN_TYPE', path: 'root.children[0]', message: "unknown node type 'wiat' (did you mean 'wait'?)" },
    ]);
    expect(errorsOf(tree({ type: 3 }))).toStrictEqual([
      { code: 'E_NODE_UNKNOWN_TYPE', path: 'root', message: "'type' must be a string naming the node type, found the number 3" },
    ]);
  });
});

describe('E_NODE_UNKNOWN_FIELD', () => {
  it('catches a typo in a field name at load time', () => {
    expect(errorsOf(tree({ type: 'sequence', chidren: [ok], children: [ok] }))).toStrictEqual([
      { code: 'E_NODE_UNKNOWN_FIELD', path: 'root', field: 'chidren', message: "unknown field 'chidren' on this sequence node (did you mean 'children'?)" },
    ]);
    expect(errorsOf(tree({ type: 'action', action: 'go', timout: 3 }))).toStrictEqual([
      { code: 'E_NODE_UNKNOWN_FIELD', path: 'root', field: 'timout', message: "unknown field 'timout' on this action node (did you mean 'timeout'?)" },
    ]);
    expect(errorsOf(tree({ type: 'succeed', comment: 'stub' }))).toStrictEqual([
      { code: 'E_NODE_UNKNOWN_FIELD', path: 'root', field: 'comment', message: "unknown field 'comment' on this succeed node" },
    ]);
  });
});

describe('E_PARAM_MISSING', () => {
  it('names the missing parameter and what it takes', () => {
    expect(errorsOf(tree({ type: 'sequence', children: [{ type: 'cooldown', child: ok }, { type: 'action' }] }))).toStrictEqual([
      { code: 'E_PARAM_MISSING', path: 'root.children[0]', field: 'seconds', message: "this cooldown node needs 'seconds' (a number)" },
      { code: 'E_PARAM_MISSING', path: 'root.children[1]', field: 'action', message: "this action node needs 'action' (a string)" },
    ]);
  });
});

describe('E_PARAM_TYPE', () => {
  it('says what was expected and what was found', () => {
    const def = tree({
      type: 'sequence',
      name: 7,
      children: [
        { type: 'cooldown', seconds: '2', child: ok },
        { type: 'repeat', times: 2.5, child: ok },
        { type: 'condition', expr: true, if: 1 },
        { type: 'rotator', resetOnAbort: 'yes', children: [ok] },
        { type: 'wait', seconds: { min: 1 } },
        { type: 'random', weights: [1, 'x'], children: [ok, ok] },
        { type: 'set', values: ['n'] },
        { type: 'action', action: 'go', args: 'bb.n' },
        { type: 'log', message: "'x'", level: 2 },
      ],
    });
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_PARAM_TYPE', path: 'root', field: 'name', message: "'name' must be a string, found the number 7" },
      { code: 'E_PARAM_TYPE', path: 'root.children[0]', field: 'seconds', message: "'seconds' must be a number, found the string \"2\"" },
      { code: 'E_PARAM_TYPE', path: 'root.children[1]', field: 'times', message: "'times' must be a whole number, found the number 2.5" },
      { code: 'E_PARAM_TYPE', path: 'root.children[2]', field: 'expr', message: "'expr' must be an expression (a string), found true" },
      { code: 'E_PARAM_TYPE', path: 'root.children[2]', field: 'if', message: "'if' must be an expression (a string), found the number 1" },
      { code: 'E_PARAM_TYPE', path: 'root.children[3]', field: 'resetOnAbort', message: "'resetOnAbort' must be true or false, found the string \"yes\"" },
      { code: 'E_PARAM_TYPE', path: 'root.children[4]', field: 'seconds', message: "'seconds' must be seconds (a number) or [min, max], found an object" },
      { code: 'E_PARAM_TYPE', path: 'root.children[5]', field: 'weights', message: "'weights' must be a list of numbers, one per child, found a list" },
      { code: 'E_PARAM_TYPE', path: 'root.children[6]', field: 'values', message: "'values' must be an object of blackboard key → expression, found a list" },
      { code: 'E_PARAM_TYPE', path: 'root.children[7]', field: 'args', message: "'args' must be an object of name → value, found the string \"bb.n\"" },
      { code: 'E_PARAM_TYPE', path: 'root.children[8]', field: 'level', message: "'level' must be 'debug', 'info', 'warn' or 'error', found the number 2" },
    ]);
  });

  it('asks for an expression where a literal was written in a write, and a JSON value in args', () => {
    const def = tree({ type: 'sequence', children: [{ type: 'set', values: { n: 3, on: true } }, { type: 'action', action: 'go', args: { speed: Number.POSITIVE_INFINITY } }] }, { n: 0, on: false });
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_PARAM_TYPE', path: 'root.children[0]', field: 'values.n', message: "'values.n' must be an expression (a string), found the number 3; write it as the expression \"3\"" },
      { code: 'E_PARAM_TYPE', path: 'root.children[0]', field: 'values.on', message: "'values.on' must be an expression (a string), found true; write it as the expression \"true\"" },
      { code: 'E_PARAM_TYPE', path: 'root.children[1]', field: 'args.speed', message: "'args.speed' must be a JSON value, found Infinity" },
    ]);
  });
});

describe('E_PARAM_RANGE', () => {
  it('reports values outside what a parameter accepts', () => {
    const def = tree({
      type: 'sequence',
      children: [
        { type: 'cooldown', seconds: -1, child: ok },
        { type: 'repeat', times: 0, child: ok },
        { type: 'log', message: "'x'", level: 'warning' },
        { type: 'wait', seconds: [3, 1] },
        { type: 'wait', seconds: [-1, 1] },
        { type: 'action', action: '' },
        { type: 'random', weights: [1, -2], children: [ok, ok] },
        { type: 'parallel', success: 0, children: [ok] },
        { type: 'succeed', abort: 'lowr' },
      ],
    });
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_PARAM_RANGE', path: 'root.children[0]', field: 'seconds', message: "'seconds' must be at least 0, found -1" },
      { code: 'E_PARAM_RANGE', path: 'root.children[1]', field: 'times', message: "'times' must be at least 1, or -1 for forever; found 0" },
      { code: 'E_PARAM_RANGE', path: 'root.children[2]', field: 'level', message: "'level' must be 'debug', 'info', 'warn' or 'error'; found 'warning' (did you mean 'warn'?)" },
      { code: 'E_PARAM_RANGE', path: 'root.children[3]', field: 'seconds', message: "'seconds' is [3, 1]: the minimum must not exceed the maximum" },
      { code: 'E_PARAM_RANGE', path: 'root.children[4]', field: 'seconds', message: "'seconds' must be at least 0, found -1" },
      { code: 'E_PARAM_RANGE', path: 'root.children[5]', field: 'action', message: "'action' must not be empty" },
      { code: 'E_PARAM_RANGE', path: 'root.children[6]', field: 'weights', message: "'weights' must be at least 0, found -2" },
      { code: 'E_PARAM_RANGE', path: 'root.children[7]', field: 'success', message: "'success' must be at least 1, found 0" },
      { code: 'E_PARAM_RANGE', path: 'root.children[8]', field: 'abort', message: "'abort' must be 'none', 'self', 'lower' or 'both'; found 'lowr' (did you mean 'lower'?)" },
    ]);
  });
});

describe('E_PARAM_INVALID', () => {
  it("reports the node kinds' own rules", () => {
    const def = tree({
      type: 'sequence',
      children: [
        { type: 'random', weights: [1, 2, 3], children: [ok, ok] },
        { type: 'random', weights: [0, 0], children: [ok, ok] },
        { type: 'parallel', success: 3, children: [ok, ok] },
        { type: 'action', action: 'jump', instant: true, until: 'time > 3' },
      ],
    });
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_PARAM_INVALID', path: 'root.children[0]', field: 'weights', message: "'weights' has 3 entries but the node has 2 children" },
      { code: 'E_PARAM_INVALID', path: 'root.children[1]', field: 'weights', message: "'weights' must have at least one positive weight" },
      { code: 'E_PARAM_INVALID', path: 'root.children[2]', field: 'success', message: "'success' is 3 but the parallel has only 2 children" },
      { code: 'E_PARAM_INVALID', path: 'root.children[3]', field: 'until', message: "an instant action cannot have 'until' or 'timeout'" },
    ]);
  });

  it('skips a kind rule while the declared parameters or children are wrong (no cascades)', () => {
    expect(errorsOf(tree({ type: 'random', weights: [1, 2, 'x'], children: [ok] })).map((e) => e['code'])).toEqual(['E_PARAM_TYPE']);
    expect(errorsOf(tree({ type: 'parallel', success: 2, children: [] })).map((e) => e['code'])).toEqual(['E_CHILDREN']);
  });

  it('reports a plugin rule that throws instead of throwing', () => {
    const plugins = new NodeCatalog();
    plugins.register(
      defineNode({
        type: 'fragile',
        category: 'leaf',
        description: 'Its check throws.',
        params: {},
        validate() {
          throw new Error('boom');
        },
        build: () => ({ tick: () => Status.SUCCESS }),
      }),
    );
    expect(errorsOf(tree({ type: 'fragile' }), { catalog: plugins })).toStrictEqual([
      { code: 'E_PARAM_INVALID', path: 'root', message: "the check of node type 'fragile' failed: boom" },
    ]);
  });
});

describe('E_CHILDREN', () => {
  it('requires one or more children on a composite', () => {
    const def = tree({
      type: 'parallel',
      children: [{ type: 'sequence' }, { type: 'selector', children: [] }, { type: 'all', children: ok }, { type: 'sequence', child: ok }, { type: 'rotator', children: [ok], child: ok }],
    });
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_CHILDREN', path: 'root.children[0]', field: 'children', message: "this sequence node needs a 'children' list with at least one node" },
      { code: 'E_CHILDREN', path: 'root.children[1]', field: 'children', message: "this selector node needs at least one child; 'children' is empty" },
      { code: 'E_CHILDREN', path: 'root.children[2]', field: 'children', message: "'children' must be a list of nodes, found an object" },
      { code: 'E_CHILDREN', path: 'root.children[3]', field: 'children', message: "this sequence node takes a 'children' list, not 'child'" },
      { code: 'E_CHILDREN', path: 'root.children[4]', field: 'child', message: "this rotator node takes a 'children' list, not 'child'" },
    ]);
  });

  it('requires exactly one child on a decorator', () => {
    const def = tree({
      type: 'sequence',
      children: [{ type: 'inverter' }, { type: 'inverter', children: [ok, ok] }, { type: 'succeeder', child: [ok, ok] }],
    });
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_CHILDREN', path: 'root.children[0]', field: 'child', message: "this inverter node needs exactly one 'child' node" },
      { code: 'E_CHILDREN', path: 'root.children[1]', field: 'children', message: "this inverter node takes exactly one 'child', not a 'children' list" },
      { code: 'E_CHILDREN', path: 'root.children[2]', field: 'child', message: "'child' must be one node, not a list; wrap several nodes in a sequence or selector" },
    ]);
  });

  it('allows no children on a leaf', () => {
    expect(errorsOf(tree({ type: 'sequence', children: [{ type: 'wait', seconds: 1, children: [ok] }, { type: 'subtree', tree: 't', child: ok }] }))).toStrictEqual([
      { code: 'E_CHILDREN', path: 'root.children[0]', field: 'children', message: "this wait node is a leaf and takes no 'children'" },
      { code: 'E_CHILDREN', path: 'root.children[1]', field: 'child', message: "this subtree node is a leaf and takes no 'child'" },
      { code: 'E_SUBTREE_CYCLE', path: 'root.children[1]', field: 'tree', message: 'subtrees form a cycle: t → t' },
    ]);
  });
});

describe('E_ABORT_PLACEMENT', () => {
  it('allows lower and both only on a child of a selector', () => {
    const def = tree({
      type: 'sequence',
      children: [
        { type: 'condition', expr: 'true', if: 'self.hp > 1', abort: 'lower' },
        { type: 'fallback', children: [{ type: 'succeed', if: 'self.hp > 1', abort: 'both' }] },
        { type: 'parallel', children: [{ type: 'succeed', if: 'self.hp > 1', abort: 'both' }] },
      ],
    });
    expect(errorsOf(def)).toStrictEqual([
      {
        code: 'E_ABORT_PLACEMENT',
        path: 'root.children[0]',
        field: 'abort',
        message: "abort 'lower' only works on a child of a selector (it re-checks this guard while a later sibling runs); this node's parent is a sequence",
      },
      {
        code: 'E_ABORT_PLACEMENT',
        path: 'root.children[2].children[0]',
        field: 'abort',
        message: "abort 'both' only works on a child of a selector (it re-checks this guard while a later sibling runs); this node's parent is a parallel",
      },
    ]);
  });

  it('rejects lower on the root, and any abort without a guard', () => {
    expect(errorsOf(tree({ type: 'succeed', if: 'true', abort: 'lower' }))).toStrictEqual([
      {
        code: 'E_ABORT_PLACEMENT',
        path: 'root',
        field: 'abort',
        message: "abort 'lower' only works on a child of a selector (it re-checks this guard while a later sibling runs); this node is the root",
      },
    ]);
    expect(errorsOf(tree({ type: 'selector', children: [{ type: 'succeed', abort: 'self' }, { type: 'fail', abort: 'none' }] }))).toStrictEqual([
      { code: 'E_ABORT_PLACEMENT', path: 'root.children[0]', field: 'abort', message: "abort 'self' has no effect without an 'if' guard to re-check; add one or remove 'abort'" },
    ]);
  });
});

describe('E_BLACKBOARD_UNDECLARED', () => {
  it('rejects set values and service values writing undeclared keys', () => {
    const def = tree(
      { type: 'set', values: { taget: 'self.enemy' }, services: [{ every: 1, values: { hp2: 'self.hp' } }] },
      { target: null, hp: 0 },
    );
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_BLACKBOARD_UNDECLARED', path: 'root', field: 'values.taget', message: "blackboard key 'taget' is not declared in this tree's blackboard (did you mean 'target'?)" },
      { code: 'E_BLACKBOARD_UNDECLARED', path: 'root', field: 'services[0].values.hp2', message: "blackboard key 'hp2' is not declared in this tree's blackboard (did you mean 'hp'?)" },
    ]);
  });

  it("checks subtree args against the subtree's blackboard, and their expressions against the caller's", () => {
    const sub = { blackboard: { threat: null }, root: ok };
    const def = tree({ type: 'subtree', tree: 'cover', args: { target: 'bb.target', threat: 'bb.thread' } }, { target: null });
    expect(errorsOf(def, { trees: (n) => (n === 'cover' ? sub : undefined) })).toStrictEqual([
      { code: 'E_BLACKBOARD_UNDECLARED', path: 'root', field: 'args.target', message: "blackboard key 'target' is not declared in the blackboard of tree 'cover'" },
      {
        code: 'E_EXPR_UNDECLARED_KEY',
        path: 'root',
        field: 'args.threat',
        column: 4,
        message: "blackboard key 'thread' is not declared in this tree's blackboard",
      },
    ]);
  });
});

describe('E_NAME_FORBIDDEN', () => {
  it('rejects constructor, __proto__ and prototype everywhere a name is written', () => {
    // JSON.parse makes "__proto__" an own key, as a tree file would.
    const def: unknown = JSON.parse(`{
      "__proto__": 1,
      "blackboard": { "constructor": 0, "pos": { "prototype": 1 }, "n": 0 },
      "root": { "type": "sequence", "__proto__": {}, "children": [
        { "type": "set", "values": { "prototype": "1" } },
        { "type": "action", "action": "go", "args": { "constructor": 1, "to": { "__proto__": 2 } } },
        { "type": "succeed", "services": [ { "every": 1, "values": { "__proto__": "2" }, "prototype": 3 } ] },
        { "type": "subtree", "tree": "t", "args": { "constructor": "1" } },
        { "type": "condition", "expr": "self.prototype" }
      ] }
    }`);
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_NAME_FORBIDDEN', path: '', field: '__proto__', message: "'__proto__' cannot be used as a field name: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'blackboard', field: 'constructor', message: "'constructor' cannot be used as a blackboard key: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'blackboard', field: 'pos', message: "'prototype' cannot be used as a key: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'root', field: '__proto__', message: "'__proto__' cannot be used as a field name: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'root.children[0]', field: 'values.prototype', message: "'prototype' cannot be used as a blackboard key: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'root.children[1]', field: 'args.constructor', message: "'constructor' cannot be used as a key of 'args': it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'root.children[1]', field: 'args.to', message: "'__proto__' cannot be used as a key: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'root.children[2]', field: 'services[0].prototype', message: "'prototype' cannot be used as a field name: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'root.children[2]', field: 'services[0].values.__proto__', message: "'__proto__' cannot be used as a blackboard key: it would reach JavaScript internals" },
      { code: 'E_NAME_FORBIDDEN', path: 'root.children[3]', field: 'args.constructor', message: "'constructor' cannot be used as a blackboard key: it would reach JavaScript internals" },
      { code: 'E_EXPR_FORBIDDEN_NAME', path: 'root.children[4]', field: 'expr', column: 6, message: "the name 'prototype' is not allowed in expressions" },
      { code: 'E_SUBTREE_CYCLE', path: 'root.children[3]', field: 'tree', message: 'subtrees form a cycle: t → t' },
    ]);
  });

  it('rejects them from YAML files too', () => {
    const parsed = parseTreeText('root:\n  type: succeed\nblackboard:\n  __proto__: 1\n', 'yaml');
    const value = parsed.ok ? parsed.value : parsed.message;
    expect(errorsOf(value).map((e) => [e['code'], e['field']])).toEqual([['E_NAME_FORBIDDEN', '__proto__']]);
  });
});

describe('E_SUBTREE_UNKNOWN', () => {
  it('names the unknown tree and suggests a loaded one', () => {
    const def = tree({ type: 'sequence', children: [{ type: 'subtree', tree: 'patorl' }, { type: 'subtree', tree: 'zzz' }] });
    expect(errorsOf(def, { trees: () => undefined, treeNames: ['guard', 'patrol'] })).toStrictEqual([
      { code: 'E_SUBTREE_UNKNOWN', path: 'root.children[0]', field: 'tree', message: "unknown tree 'patorl' (did you mean 'patrol'?)" },
      { code: 'E_SUBTREE_UNKNOWN', path: 'root.children[1]', field: 'tree', message: "unknown tree 'zzz'" },
    ]);
  });
});

describe('E_SUBTREE_CYCLE', () => {
  const defs: Record<string, unknown> = {
    a: tree({ type: 'sequence', children: [ok, { type: 'subtree', tree: 'b' }] }),
    b: tree({ type: 'selector', children: [{ type: 'subtree', tree: 'c' }, { type: 'subtree', tree: 'a' }] }),
    c: tree({ type: 'succeed' }),
  };
  const trees = (n: string): unknown => defs[n];

  it('lists the cycle, at the subtree node where it starts', () => {
    expect(validateTree('a', defs['a'], { catalog, trees })).toStrictEqual([
      { code: 'E_SUBTREE_CYCLE', file: 'a', path: 'root.children[1]', field: 'tree', message: 'subtrees form a cycle: a → b → a' },
    ]);
    expect(validateTree('b', defs['b'], { catalog, trees })).toStrictEqual([
      { code: 'E_SUBTREE_CYCLE', file: 'b', path: 'root.children[1]', field: 'tree', message: 'subtrees form a cycle: b → a → b' },
    ]);
    expect(validateTree('c', defs['c'], { catalog, trees })).toEqual([]);
  });

  it('reports each cycle once across a library', () => {
    const three = {
      x: tree({ type: 'subtree', tree: 'y' }),
      y: tree({ type: 'subtree', tree: 'z' }),
      z: tree({ type: 'sequence', children: [{ type: 'subtree', tree: 'x' }, { type: 'subtree', tree: 'z' }] }),
      w: tree({ type: 'subtree', tree: 'y' }),
    };
    const result = TreeLibrary.fromDefinitions({ ...defs, ...three });
    expect(result.ok ? [] : result.errors).toStrictEqual([
      { code: 'E_SUBTREE_CYCLE', file: 'a', path: 'root.children[1]', field: 'tree', message: 'subtrees form a cycle: a → b → a' },
      { code: 'E_SUBTREE_CYCLE', file: 'x', path: 'root', field: 'tree', message: 'subtrees form a cycle: x → y → z → x' },
      { code: 'E_SUBTREE_CYCLE', file: 'z', path: 'root.children[1]', field: 'tree', message: 'subtrees form a cycle: z → z' },
    ]);
  });
});

describe('E_SERVICE', () => {
  it('checks every service entry', () => {
    const def = tree(
      {
        type: 'sequence',
        services: [
          { every: 0, values: { n: 'bb.n + 1' } },
          { values: { n: '1' } },
          { every: 1 },
          { every: 1, values: { n: '1' }, service: 'scan' },
          { every: 1, service: 'scanCovr' },
          { every: 1, values: 'bb.n', evry: 2 },
          'scan',
        ],
        children: [{ type: 'succeed', services: { every: 1 } }],
      },
      { n: 0 },
    );
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_SERVICE', path: 'root', field: 'services[0].every', message: "'every' must be a number of seconds greater than 0, found the number 0" },
      { code: 'E_SERVICE', path: 'root', field: 'services[1].every', message: "this service needs 'every': seconds of tree time between runs (a number > 0)" },
      { code: 'E_SERVICE', path: 'root', field: 'services[2]', message: "a service needs 'values' (blackboard key → expression) or 'service' (the name of a registered service)" },
      { code: 'E_SERVICE', path: 'root', field: 'services[3]', message: "a service has either 'values' or 'service', not both" },
      { code: 'E_SERVICE', path: 'root', field: 'services[3].service', message: "unknown service 'scan'; no named services are registered (plugins register them)" },
      { code: 'E_SERVICE', path: 'root', field: 'services[4].service', message: "unknown service 'scanCovr'; no named services are registered (plugins register them)" },
      { code: 'E_SERVICE', path: 'root', field: 'services[5].evry', message: "unknown field 'evry' in this service entry (did you mean 'every'?)" },
      { code: 'E_SERVICE', path: 'root', field: 'services[5].values', message: "'values' must be an object of blackboard key → expression, found the string \"bb.n\"" },
      { code: 'E_SERVICE', path: 'root', field: 'services[6]', message: "a service entry must be an object with 'every' and 'values' or 'service', found the string \"scan\"" },
      { code: 'E_SERVICE', path: 'root.children[0]', field: 'services', message: "'services' must be a list of service entries, found an object" },
    ]);
  });

  it("checks a plugin service's name and parameters", () => {
    const plugins = new NodeCatalog();
    registerPlugin(plugins, {
      name: 'cover',
      services: {
        scanCover: {
          params: { radius: { type: 'number', min: 0, required: true, description: 'Search radius.' }, near: { type: 'expression', description: 'Around what.' } },
          run() {},
        },
      },
    });
    const def = tree({
      type: 'succeed',
      services: [
        { every: 1, service: 'scanCovr' },
        { every: 1, service: 'scanCover' },
        { every: 1, service: 'scanCover', radius: -1, near: 'slf.pos', radus: 2 },
      ],
    });
    expect(errorsOf(def, { catalog: plugins })).toStrictEqual([
      { code: 'E_SERVICE', path: 'root', field: 'services[0].service', message: "unknown service 'scanCovr' (did you mean 'scanCover'?)" },
      { code: 'E_PARAM_MISSING', path: 'root', field: 'services[1].radius', message: "service 'scanCover' needs 'radius' (a number)" },
      { code: 'E_SERVICE', path: 'root', field: 'services[2].radus', message: "unknown field 'radus' in this service entry (did you mean 'radius'?)" },
      { code: 'E_PARAM_RANGE', path: 'root', field: 'services[2].radius', message: "'radius' must be at least 0, found -1" },
      {
        code: 'E_EXPR_UNKNOWN_ROOT',
        path: 'root',
        field: 'services[2].near',
        column: 1,
        message: "unknown name 'slf' (did you mean 'self'?)",
      },
    ]);
  });
});

describe('expression errors (E_EXPR_*)', () => {
  const cases: Array<[string, string, number, string]> = [
    ['E_EXPR_SYNTAX', 'self.hp < 3 &&', 15, 'the expression ends too early: a value is missing'],
    ['E_EXPR_UNKNOWN_FUNCTION', 'nearst(world.enemies, self)', 1, "unknown function 'nearst' (did you mean 'nearest'?)"],
    ['E_EXPR_ARITY', 'clamp(self.hp, 0)', 1, "'clamp' takes 3 arguments (x, lo, hi) but was given 2"],
    ['E_EXPR_UNKNOWN_ROOT', 'me.hp > 3', 1, "unknown name 'me': expressions can only read self, bb, world, agent, time and dt"],
    ['E_EXPR_FORBIDDEN_NAME', 'self.constructor', 6, "the name 'constructor' is not allowed in expressions"],
    ['E_EXPR_UNDECLARED_KEY', 'bb.taget != null', 4, "blackboard key 'taget' is not declared in this tree's blackboard (did you mean 'target'?)"],
    ['E_EXPR_TOO_COMPLEX', `${'('.repeat(70)}1${')'.repeat(70)}`, 65, 'the expression nests too deeply (more than 64 levels)'],
  ];
  for (const [code, source, column, message] of cases) {
    it(`${code}: reports the field and the column inside the expression`, () => {
      expect(errorsOf(tree({ type: 'condition', expr: 'true', if: source }, { target: null }))).toStrictEqual([{ code, path: 'root', field: 'if', column, message }]);
    });
  }

  it('checks expressions everywhere: params, writes, args, services', () => {
    const def = tree(
      {
        type: 'selector',
        services: [{ every: 1, values: { n: 'bb.m' } }],
        children: [
          { type: 'action', action: 'go', args: { to: 'bb.dest', speed: 3 }, until: 'dist(self)' },
          { type: 'set', values: { n: 'bb.n +' } },
          { type: 'log', message: 'hello world' },
        ],
      },
      { n: 0 },
    );
    expect(errorsOf(def)).toStrictEqual([
      { code: 'E_EXPR_UNDECLARED_KEY', path: 'root', field: 'services[0].values.n', column: 4, message: "blackboard key 'm' is not declared in this tree's blackboard (did you mean 'n'?)" },
      { code: 'E_EXPR_UNDECLARED_KEY', path: 'root.children[0]', field: 'args.to', column: 4, message: "blackboard key 'dest' is not declared in this tree's blackboard" },
      { code: 'E_EXPR_ARITY', path: 'root.children[0]', field: 'until', column: 1, message: "'dist' takes 2 arguments (a, b) but was given 1" },
      { code: 'E_EXPR_SYNTAX', path: 'root.children[1]', field: 'values.n', column: 7, message: 'the expression ends too early: a value is missing' },
      expect.objectContaining({ code: 'E_EXPR_SYNTAX', path: 'root.children[2]', field: 'message' }),
    ]);
  });

  it("compiles a subtree file's expressions against its own blackboard only", () => {
    const sub = tree({ type: 'condition', expr: 'bb.target != null' }, { threat: null });
    expect(validateTree('cover', sub, { catalog }).map((e) => e.code)).toEqual(['E_EXPR_UNDECLARED_KEY']);
  });
});

describe('plugins', () => {
  it('checks plugin node parameters like built-in ones', () => {
    const plugins = new NodeCatalog();
    registerPlugin(plugins, {
      name: 'combat',
      conditions: {
        canSee: {
          params: { target: { type: 'expression', required: true, description: 'What.' }, range: { type: 'number', min: 0, max: 100, description: 'How far.' } },
          test: () => true,
        },
      },
    });
    expect(errorsOf(tree({ type: 'sequence', children: [{ type: 'canSee' }, { type: 'canSee', target: 'self.enemy', range: 500, rnage: 1 }] }), { catalog: plugins })).toStrictEqual([
      { code: 'E_PARAM_MISSING', path: 'root.children[0]', field: 'target', message: "this canSee node needs 'target' (an expression)" },
      { code: 'E_NODE_UNKNOWN_FIELD', path: 'root.children[1]', field: 'rnage', message: "unknown field 'rnage' on this canSee node (did you mean 'range'?)" },
      { code: 'E_PARAM_RANGE', path: 'root.children[1]', field: 'range', message: "'range' must be at most 100, found 500" },
    ]);
  });
});

describe('a tree with many errors', () => {
  it('returns all of them, in file order', () => {
    const def = {
      blackboard: { target: null },
      root: {
        type: 'selector',
        chidren: [],
        children: [
          { type: 'sequnce', children: [{ type: 'wait' }] },
          { type: 'action', action: 'shoot', args: { at: 'bb.taget' }, if: 'self.hp > ', abort: 'lower' },
          { type: 'cooldown', seconds: '2', children: [ok] },
          { type: 'set', values: { taget: 'self.enemy' }, abort: 'both' },
          { type: 'repeat', times: 0, child: 'attack' },
        ],
      },
    };
    expect(errorsOf(def).map((e) => [e['code'], e['path'], e['field']])).toEqual([
      ['E_NODE_UNKNOWN_FIELD', 'root', 'chidren'],
      ['E_NODE_UNKNOWN_TYPE', 'root.children[0]', undefined],
      ['E_PARAM_MISSING', 'root.children[0].children[0]', 'seconds'],
      ['E_EXPR_UNDECLARED_KEY', 'root.children[1]', 'args.at'],
      ['E_EXPR_SYNTAX', 'root.children[1]', 'if'],
      ['E_PARAM_TYPE', 'root.children[2]', 'seconds'],
      ['E_CHILDREN', 'root.children[2]', 'children'],
      ['E_BLACKBOARD_UNDECLARED', 'root.children[3]', 'values.taget'],
      ['E_ABORT_PLACEMENT', 'root.children[3]', 'abort'],
      ['E_PARAM_RANGE', 'root.children[4]', 'times'],
      ['E_NODE_NOT_OBJECT', 'root.children[4].child', undefined],
    ]);
  });
});

describe('E_TREE_PARSE and E_TREE_DUPLICATE', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'canopy-validate-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives the line and column of a YAML error', async () => {
    await writeFile(join(dir, 'bad.yaml'), 'root:\n  type: sequence\n  children:\n    - type: succeed\n   - type: fail\n');
    await writeFile(join(dir, 'dup.yaml'), 'root:\n  type: succeed\nroot:\n  type: fail\n');
    const result = await TreeLibrary.loadFolder(dir);
    expect(result.ok ? [] : result.errors).toStrictEqual([
      { code: 'E_TREE_PARSE', file: join(dir, 'bad.yaml'), path: '', line: 5, column: 1, message: 'the file is not valid YAML: A block sequence may not be used as an implicit map key' },
      { code: 'E_TREE_PARSE', file: join(dir, 'dup.yaml'), path: '', line: 3, column: 1, message: 'the file is not valid YAML: Map keys must be unique' },
    ]);
  });

  it('gives the line and column of a JSON error', async () => {
    await writeFile(join(dir, 'bad.json'), '{\n  "root": {\n    "type": "succeed",\n  }\n}\n');
    const result = await TreeLibrary.loadFolder(dir);
    expect(result.ok ? [] : result.errors).toStrictEqual([
      { code: 'E_TREE_PARSE', file: join(dir, 'bad.json'), path: '', line: 4, column: 3, message: "the file is not valid JSON: trailing comma: remove the ',' before '}'" },
    ]);
  });

  it('rejects two files with the same tree name', async () => {
    await writeFile(join(dir, 'guard.json'), '{ "root": { "type": "succeed" } }');
    await writeFile(join(dir, 'guard.yaml'), 'root: { type: fail }\n');
    const result = await TreeLibrary.loadFolder(dir);
    expect(result.ok ? [] : result.errors).toStrictEqual([
      { code: 'E_TREE_DUPLICATE', file: join(dir, 'guard.json'), path: '', message: "tree 'guard' is defined by more than one file (guard.json, guard.yaml); keep one" },
    ]);
  });
});
