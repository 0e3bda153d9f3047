// TreeLibrary: loading a folder (JSON, YAML), validating everything, compiling once; parse errors with
// line and column; compiler-style formatting of errors.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from '../../src/bt/agent.js';
import { NodeCatalog } from '../../src/bt/catalog.js';
import { DecisionBuffer } from '../../src/bt/decisions.js';
import { TreeLibrary, formatError, formatErrors, parseTreeText } from '../../src/bt/library.js';
import { registerPlugin } from '../../src/bt/plugins.js';

const patrol = { blackboard: { waypoint: 0 }, root: { type: 'action', action: 'moveTo', args: { waypoint: 'bb.waypoint' } } };
const guard = {
  blackboard: { hp: 100 },
  root: { type: 'selector', children: [{ type: 'action', action: 'flee', if: 'self.hp < 30', abort: 'lower' }, { type: 'subtree', tree: 'patrol', args: { waypoint: '2' } }] },
};

describe('TreeLibrary.fromDefinitions', () => {
  it('validates and compiles every tree once', () => {
    const result = TreeLibrary.fromDefinitions({ patrol, guard }, { files: { guard: 'trees/guard.json' } });
    if (!result.ok) throw new Error(formatErrors(result.errors));
    const lib = result.library;
    expect(lib.names()).toEqual(['guard', 'patrol']);
    expect(lib.get('guard')?.name).toBe('guard');
    expect(lib.get('guard')).toBe(lib.get('guard'));
    expect(lib.get('nope')).toBeUndefined();
    expect(lib.file('guard')).toBe('trees/guard.json');
    expect(lib.file('patrol')).toBe('patrol');
    expect(lib.definition('guard')).toEqual(guard);
    expect(lib.catalog).toBeInstanceOf(NodeCatalog);
    // The subtree's keys join the agent's blackboard.
    expect([...lib.get('guard')!.blackboardKeys].toSorted()).toEqual(['hp', 'waypoint']);
  });

  it('hands out frozen copies of the definitions: changing the input later changes nothing', () => {
    const input = structuredClone(patrol);
    const result = TreeLibrary.fromDefinitions({ patrol: input });
    if (!result.ok) throw new Error(formatErrors(result.errors));
    input.root.action = 'teleport';
    const def = result.library.definition('patrol')!;
    expect(def.root['action']).toBe('moveTo');
    expect(Object.isFrozen(def)).toBe(true);
    expect(Object.isFrozen(def.root['args'])).toBe(true);
  });

  it('returns the errors of every tree, with their files, and compiles nothing', () => {
    const result = TreeLibrary.fromDefinitions(
      { guard: { root: { type: 'subtree', tree: 'patorl' } }, patrol: { root: { type: 'wiat', seconds: 1 } } },
      { files: { guard: 'trees/guard.json', patrol: 'trees/patrol.yaml' } },
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(formatErrors(result.errors)).toBe(
      [
        "trees/guard.json: root.tree: unknown tree 'patorl' (did you mean 'patrol'?) [E_SUBTREE_UNKNOWN]",
        "trees/patrol.yaml: root: unknown node type 'wiat' (did you mean 'wait'?) [E_NODE_UNKNOWN_TYPE]",
      ].join('\n'),
    );
  });

  it('validates against the catalog it is given (plugins)', () => {
    const catalog = new NodeCatalog();
    registerPlugin(catalog, { name: 'p', conditions: { isDay: { test: () => true } } });
    const def = { root: { type: 'isDay' } };
    expect(TreeLibrary.fromDefinitions({ t: def }).ok).toBe(false);
    const result = TreeLibrary.fromDefinitions({ t: def }, { catalog });
    expect(result.ok && result.library.catalog).toBe(catalog);
  });

  it('produces trees agents run', () => {
    const result = TreeLibrary.fromDefinitions({ patrol, guard });
    if (!result.ok) throw new Error(formatErrors(result.errors));
    const agent = new Agent(result.library.get('guard')!, 'g1');
    agent.self = { hp: 100 };
    const out = new DecisionBuffer();
    agent.tick(0, 0.1, out);
    expect(out.actions).toEqual([['g1', 1, 'moveTo', { waypoint: 2 }]]);
    out.clear();
    agent.self = { hp: 10 };
    agent.tick(0.1, 0.1, out);
    expect(out.cancels).toEqual([['g1', 1]]);
    expect(out.actions).toEqual([['g1', 2, 'flee', {}]]);
  });
});

describe('TreeLibrary.loadFolder', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'canopy-library-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads .json, .yaml and .yml files and nothing else', async () => {
    await writeFile(join(dir, 'patrol.json'), JSON.stringify(patrol));
    await writeFile(join(dir, 'guard.yaml'), 'blackboard: { hp: 100 }\nroot:\n  type: subtree\n  tree: patrol\n');
    await writeFile(join(dir, 'idle.yml'), 'root: { type: wait, seconds: [1, 2] }\n');
    await writeFile(join(dir, 'schema.json'), '{ "this": "is not a tree" }');
    await writeFile(join(dir, '.draft.json'), '{ not even json');
    await writeFile(join(dir, 'notes.txt'), 'hello');
    await mkdir(join(dir, 'old.json'));
    await mkdir(join(dir, 'archive'));
    await writeFile(join(dir, 'archive', 'broken.json'), '{');
    const result = await TreeLibrary.loadFolder(dir);
    if (!result.ok) throw new Error(formatErrors(result.errors));
    expect(result.library.names()).toEqual(['guard', 'idle', 'patrol']);
    expect(result.library.file('guard')).toBe(join(dir, 'guard.yaml'));
    expect(result.library.definition('idle')).toEqual({ root: { type: 'wait', seconds: [1, 2] } });
  });

  it('reports every bad file, and does not call a tree that fails to parse unknown', async () => {
    await writeFile(join(dir, 'patrol.json'), '{ "root": { "type": "action", "action": "moveTo" } // the route\n}');
    await writeFile(join(dir, 'guard.json'), JSON.stringify({ root: { type: 'subtree', tree: 'patrol' } }));
    await writeFile(join(dir, 'flee.yaml'), 'root:\n  type: action\n  action: flee\n  timout: 3\n');
    const result = await TreeLibrary.loadFolder(dir);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map(formatError)).toEqual([
      `${join(dir, 'patrol.json')}:1:52: the file is not valid JSON: comments are not allowed in JSON [E_TREE_PARSE]`,
      // The error carries the line and column of the field in the file (4:3 is `timout`).
      `${join(dir, 'flee.yaml')}:4:3: root.timout: unknown field 'timout' on this action node (did you mean 'timeout'?) [E_NODE_UNKNOWN_FIELD]`,
    ]);
  });
});

describe('parseTreeText', () => {
  const jsonCases: Array<[string, string, number, number]> = [
    ['', 'unexpected end of file; expected a value', 1, 1],
    ['{\n  "root": {\n    "type": "succeed"\n  }\n', "unexpected end of file; expected ',' or '}'", 5, 1],
    ['{\n  "root": { "type": "succeed" }\n  "blackboard": {}\n}', "expected ',' or '}' after a property value", 3, 3],
    ["{ 'root': 1 }", 'expected a property name in double quotes', 1, 3],
    ['{ root: 1 }', 'expected a property name in double quotes', 1, 3],
    ['{ "root": \'x\' }', 'strings must use double quotes', 1, 11],
    ['{ "a": [1, 2,] }', "trailing comma: remove the ',' before ']'", 1, 14],
    ['{ "a": 01 }', 'invalid number', 1, 8],
    ['{ "a": tru }', "unexpected 't'; expected a value", 1, 8],
    ['{ "a": "x\n" }', 'unterminated string: a string must end on the line it starts', 1, 10],
    ['{ "a": "\\x" }', "invalid escape '\\x' in a string", 1, 9],
    ['{ "a" 1 }', 'expected \':\' after the property name "a"', 1, 7],
    ['{ "root": 1,\n  "root": 2 }', 'duplicate key "root"', 2, 3],
    ['{ "a": 1 } {', 'unexpected text after the end of the JSON value', 1, 12],
    ['/* tree */ {}', 'comments are not allowed in JSON', 1, 1],
  ];
  for (const [text, message, line, column] of jsonCases) {
    it(`JSON: ${message} (${JSON.stringify(text).slice(0, 30)})`, () => {
      expect(parseTreeText(text, 'json')).toStrictEqual({ ok: false, message: `the file is not valid JSON: ${message}`, line, column });
    });
  }

  it('JSON: accepts what JSON.parse accepts, and a byte-order mark', () => {
    const text = '\uFEFF{ "a": [1, -2.5e3, true, false, null, "\\u00e9\\n"], "b": {} }';
    expect(parseTreeText(text, 'json')).toStrictEqual({ ok: true, value: { a: [1, -2500, true, false, null, 'é\n'], b: {} } });
  });

  it('YAML: values, and one document per file', () => {
    expect(parseTreeText('root: { type: succeed }\n', 'yaml')).toStrictEqual({ ok: true, value: { root: { type: 'succeed' } } });
    expect(parseTreeText('root: 1\n---\nroot: 2\n', 'yaml')).toStrictEqual({
      ok: false,
      message: "the file is not valid YAML: a tree file holds one YAML document; remove the second '---'",
      line: 2,
      column: 1,
    });
  });
});

describe('formatError', () => {
  it('prints compiler-style lines', () => {
    expect(formatError({ code: 'E_NODE_UNKNOWN_TYPE', file: 'trees/guard.json', path: 'root.children[2].child', message: "unknown node type 'sequnce' (did you mean 'sequence'?)" })).toBe(
      "trees/guard.json: root.children[2].child: unknown node type 'sequnce' (did you mean 'sequence'?) [E_NODE_UNKNOWN_TYPE]",
    );
    expect(formatError({ code: 'E_EXPR_SYNTAX', file: 'trees/guard.json', path: 'root.children[0]', field: 'if', column: 11, message: 'the expression ends too early: a value is missing' })).toBe(
      'trees/guard.json: root.children[0].if (column 11): the expression ends too early: a value is missing [E_EXPR_SYNTAX]',
    );
    expect(formatError({ code: 'E_TREE_PARSE', file: 'trees/squad.yaml', path: '', line: 3, column: 5, message: 'the file is not valid YAML: Map keys must be unique' })).toBe(
      'trees/squad.yaml:3:5: the file is not valid YAML: Map keys must be unique [E_TREE_PARSE]',
    );
    expect(formatError({ code: 'E_TREE_SHAPE', file: 'trees/x.json', path: '', message: "the tree has no 'root' node" })).toBe("trees/x.json: the tree has no 'root' node [E_TREE_SHAPE]");
    expect(formatError({ code: 'E_TREE_SHAPE', file: 'trees/x.json', path: '', field: 'blackboard', message: 'm' })).toBe('trees/x.json: blackboard: m [E_TREE_SHAPE]');
  });
});
