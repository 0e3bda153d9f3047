// Code generation safety (issue 14): no value of a tree file reaches generated code as source, and
// compileTree refuses what validation rejects. Validation itself never generates code.

import { afterEach, describe, expect, it } from 'vitest';
import { compileTree, InvalidTreeError, NodeCatalog, checkExpression, compileExpression, type TreeDefinition } from '../../src/bt/index.js';
import { compileValidatedTree } from '../../src/bt/program.js';
import { validateTree } from '../../src/bt/validate.js';
import { Harness } from './helpers.js';

const PWN = '0 || (globalThis.pwned = true, 2)';
const hostile = { root: { type: 'repeat', times: PWN, child: { type: 'succeed' } } } as unknown as TreeDefinition;

afterEach(() => {
  delete (globalThis as { pwned?: unknown }).pwned;
});

describe('repeat times', () => {
  it('a string times never runs as code, even when validation is bypassed (it was written raw into generated source)', () => {
    const t = compileValidatedTree('t', () => hostile, new NodeCatalog());
    const h = new Harness(t);
    for (let k = 0; k < 4; k++) h.step();
    expect((globalThis as { pwned?: unknown }).pwned).toBeUndefined();
  });

  it('a valid times still counts: repeat 3 succeeds on the third tick', () => {
    const t = compileTree('t', () => ({ root: { type: 'repeat', name: 'r', times: 3, child: { type: 'succeed' } } }), new NodeCatalog());
    const h = new Harness(t);
    const seen = [0, 1, 2].map(() => (h.step(), h.status('r')));
    expect(seen).toEqual(['running', 'running', 'success']);
  });
});

describe('compileTree on a definition validation rejects', () => {
  it('throws InvalidTreeError with every problem, and runs nothing', () => {
    let thrown: unknown;
    try {
      compileTree('t', () => hostile, new NodeCatalog());
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidTreeError);
    const err = thrown as InvalidTreeError;
    expect(err.errors).toEqual([
      { code: 'E_PARAM_TYPE', file: 't', path: 'root', field: 'times', message: `'times' must be a whole number, found the string "${PWN}"` },
    ]);
    expect(err.message).toBe(
      `tree 't' is invalid and cannot be compiled (validate trees first, e.g. with TreeLibrary):\nt: root.times: 'times' must be a whole number, found the string "${PWN}" [E_PARAM_TYPE]`,
    );
    expect((globalThis as { pwned?: unknown }).pwned).toBeUndefined();
  });

  it('checks the subtrees it reaches, and names an unknown tree', () => {
    const defs: Record<string, TreeDefinition> = {
      main: { root: { type: 'subtree', tree: 'sub' } },
      sub: { root: { type: 'wait' } },
    };
    expect(() => compileTree('main', (n) => defs[n], new NodeCatalog())).toThrow("sub: root.seconds: this wait node needs 'seconds' (seconds, or [min, max]) [E_PARAM_MISSING]");
    expect(() => compileTree('nope', (n) => defs[n], new NodeCatalog())).toThrow("nope: unknown tree 'nope' [E_SUBTREE_UNKNOWN]");
  });
});

describe('validation generates no code', () => {
  it('checkExpression reports what compileExpression reports', () => {
    const keys = { blackboardKeys: new Set(['target']) };
    for (const source of ['bb.taget > 1', 'nearst(self)', 'clamp(1, 2)', 'self.constructor', '(1 +', "'a' + 1", 'bb.target ?? 3']) {
      const checked = checkExpression(source, keys);
      const compiled = compileExpression(source, keys);
      expect(checked.ok ? [] : checked.errors).toEqual(compiled.ok ? [] : compiled.errors);
    }
  });

  it('validating a tree never calls new Function', () => {
    const original = globalThis.Function;
    let calls = 0;
    const spy = new Proxy(original, {
      construct(target, args) {
        calls++;
        return Reflect.construct(target, args) as object;
      },
    });
    globalThis.Function = spy;
    try {
      const errors = validateTree('t', { blackboard: { n: 0 }, root: { type: 'sequence', children: [{ type: 'condition', expr: '1 + 2 > bb.n' }, { type: 'set', values: { n: 'bb.n + 1' } }] } }, { catalog: new NodeCatalog() });
      expect(errors).toEqual([]);
    } finally {
      globalThis.Function = original;
    }
    expect(calls).toBe(0);
  });
});
