// Line and column of every validation problem in the tree's text (JSON and YAML files), warnings
// beside errors, and the compiler-style lines a command line prints.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatError, TreeLibrary } from '../../src/bt/library.js';
import { NodeCatalog } from '../../src/bt/catalog.js';
import { locateProblems } from '../../src/bt/locate.js';
import { parseTreeSource } from '../../src/bt/library.js';
import { checkTree } from '../../src/bt/validate.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'canopy-locate-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const GUARD_JSON = `{
  "blackboard": { "target": null },
  "root": {
    "type": "selector",
    "children": [
      { "type": "condition", "expr": "bb.taget != null" },
      { "type": "wait", "seconds": -1 },
      { "type": "sequnce", "children": [{ "type": "succeed" }] },
      { "type": "set", "values": { "targte": "nearst(world.enemies)" } }
    ]
  }
}
`;

describe('errors of a tree file carry its line and column', () => {
  it('JSON: the node, the field, the character inside an expression', async () => {
    await writeFile(join(dir, 'guard.json'), GUARD_JSON);
    const result = await TreeLibrary.loadFolder(dir);
    expect(result.ok).toBe(false);
    const file = join(dir, 'guard.json');
    expect(result.ok ? [] : result.errors.map(formatError)).toEqual([
      `${file}:6:42: root.children[0].expr: blackboard key 'taget' is not declared in this tree's blackboard (did you mean 'target'?) [E_EXPR_UNDECLARED_KEY]`,
      `${file}:7:25: root.children[1].seconds: 'seconds' must be at least 0, found -1 [E_PARAM_RANGE]`,
      `${file}:8:7: root.children[2]: unknown node type 'sequnce' (did you mean 'sequence'?) [E_NODE_UNKNOWN_TYPE]`,
      `${file}:9:36: root.children[3].values.targte: blackboard key 'targte' is not declared in this tree's blackboard (did you mean 'target'?) [E_BLACKBOARD_UNDECLARED]`,
      `${file}:9:47: root.children[3].values.targte: unknown function 'nearst' (did you mean 'nearest'?) [E_EXPR_UNKNOWN_FUNCTION]`,
    ]);
  });

  it('YAML: plain and quoted expressions, a missing parameter at its node', async () => {
    await writeFile(join(dir, 'flee.yaml'), "blackboard: { hp: 1 }\nroot:\n  type: sequence\n  children:\n    - type: condition\n      expr: self.hp > slf.max\n    - type: log\n      message: \"'hi ' + bb.hq\"\n    - type: cooldown\n      child: { type: succeed }\n");
    const result = await TreeLibrary.loadFolder(dir);
    const file = join(dir, 'flee.yaml');
    expect(result.ok ? [] : result.errors.map(formatError)).toEqual([
      `${file}:6:23: root.children[0].expr: unknown name 'slf' (did you mean 'self'?) [E_EXPR_UNKNOWN_ROOT]`,
      `${file}:8:28: root.children[1].message: blackboard key 'hq' is not declared in this tree's blackboard (did you mean 'hp'?) [E_EXPR_UNDECLARED_KEY]`,
      `${file}:9:7: root.children[2].seconds: this cooldown node needs 'seconds' (a number) [E_PARAM_MISSING]`,
    ]);
  });

  it('keys holding dots and escapes inside JSON strings still point at the right character', () => {
    const text = '{"blackboard":{"a.b":0},"root":{"type":"set","values":{"a.b":"\\"\\u00e9\\" + bb.c"}}}';
    const parsed = parseTreeSource(text, 'json');
    if (!parsed.ok) throw new Error(parsed.message);
    const found = checkTree('t', parsed.value, { catalog: new NodeCatalog() });
    const located = locateProblems(found.errors, parsed.positions);
    expect(located.map((e) => [e.code, e.line, e.column, text.slice((e.column ?? 0) - 4, e.column)])).toEqual([['E_EXPR_UNDECLARED_KEY', 1, 79, 'bb.c']]);
  });
});

describe('warnings', () => {
  it("abort 'lower' under a reactive selector loads, with a warning at the abort", async () => {
    await writeFile(
      join(dir, 'alert.yaml'),
      'blackboard: { alarm: false }\nroot:\n  type: selector\n  reactive: true\n  children:\n    - type: succeed\n      if: bb.alarm\n      abort: lower\n    - type: running\n',
    );
    const result = await TreeLibrary.loadFolder(dir);
    expect(result.ok).toBe(true);
    expect(result.warnings.map(formatError)).toEqual([
      `${join(dir, 'alert.yaml')}:8:7: root.children[0].abort: warning: abort 'lower' adds nothing under a reactive selector: it re-checks its earlier children every tick anyway; remove 'abort' or make the selector non-reactive [W_ABORT_REACTIVE]`,
    ]);
  });

  it("abort 'both' under a reactive selector: its lower half is named; a plain selector gives no warning", () => {
    const catalog = new NodeCatalog();
    const child = { type: 'succeed', if: 'true', abort: 'both' };
    const reactive = checkTree('t', { root: { type: 'selector', reactive: true, children: [child, { type: 'running' }] } }, { catalog });
    expect(reactive).toEqual({
      errors: [],
      warnings: [
        {
          code: 'W_ABORT_REACTIVE',
          file: 't',
          path: 'root.children[0]',
          field: 'abort',
          message: "the 'lower' half of abort 'both' adds nothing under a reactive selector: it re-checks its earlier children every tick anyway; use abort 'self'",
        },
      ],
    });
    expect(checkTree('t', { root: { type: 'selector', children: [child, { type: 'running' }] } }, { catalog })).toEqual({ errors: [], warnings: [] });
    // A reactive sequence cannot hold 'lower' at all: that stays an error.
    expect(checkTree('t', { root: { type: 'sequence', reactive: true, children: [child] } }, { catalog }).errors.map((e) => e.code)).toEqual(['E_ABORT_PLACEMENT']);
  });
});
