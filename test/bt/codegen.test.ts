// The engine's code generation (codegen.ts): the js template takes no strings, identifiers are checked,
// literals round-trip; a broken emit is an error, not a silent fallback; and the flag-free path is real.

import { describe, expect, it } from 'vitest';
import { Code, CODE_GENERATION, generate, ident, joinCode, js, literal } from '../../src/bt/codegen.js';
import { defineNode, NodeCatalog, Status, type CodePart } from '../../src/bt/index.js';
import { compileTree } from '../../src/bt/program.js';
import { Harness } from './helpers.js';

const HOSTILE = ['"', "'", '`', '${globalThis.pwned = 1}', '*/', '\u2028', '\u2029', '\uD800', '\uDFFF', '</script>', '\\', '\n', '\0'];

describe('js tagged template', () => {
  it('takes numbers, booleans and Code; refuses strings and everything else', () => {
    expect(String(js`a[${3}] = ${-2} + ${ident('x')} || ${true};`)).toBe('a[3] = (-2) + x || true;');
    expect(String(js`${-0}`)).toBe('(-0)');
    for (const bad of ['x', '1', '', null, undefined, {}, [], () => 1, Number.NaN, Infinity, 10n]) {
      expect(() => js`a = ${bad as CodePart};`).toThrow(TypeError);
    }
  });

  it('ident accepts identifiers only; Code cannot be made outside codegen.ts', () => {
    expect(String(ident('b_n12'))).toBe('b_n12');
    for (const bad of ['1a', 'a b', 'a;b', 'a.b', '', '${x}', 'a\u2028']) expect(() => ident(bad)).toThrow(TypeError);
    expect(() => new Code(Symbol('Code'), 'evil()')).toThrow(TypeError);
    expect(() => joinCode(['evil()' as unknown as Code])).toThrow(TypeError);
    expect(() => generate([ident('a')], 'return 1' as unknown as Code, [1])).toThrow(TypeError);
  });

  it.skipIf(!CODE_GENERATION)('literal quotes hostile strings so they come back unchanged and run nothing', () => {
    for (const s of HOSTILE) {
      const back = generate([], js`return ${literal(s)};`, []);
      expect(back).toBe(s);
    }
    expect((globalThis as { pwned?: unknown }).pwned).toBeUndefined();
    expect(() => literal({})).toThrow(TypeError);
  });
});

describe('the process flag', () => {
  it('CODE_GENERATION is false exactly when node runs with --disallow-code-generation-from-strings', () => {
    expect(CODE_GENERATION).toBe(!process.execArgv.includes('--disallow-code-generation-from-strings'));
  });

  it('trees are inlined exactly when code generation is allowed', () => {
    const t = compileTree('t', () => ({ root: { type: 'sequence', children: [{ type: 'succeed' }, { type: 'wait', seconds: 1 }] } }), new NodeCatalog());
    expect(t.inlined).toBe(CODE_GENERATION);
    expect(compileTree('t', () => ({ root: { type: 'succeed' } }), new NodeCatalog(), { inline: false }).inlined).toBe(false);
  });
});

describe('a broken emit', () => {
  const broken = defineNode({
    type: 'brokenEmit',
    category: 'leaf',
    description: 'Ticks fine, emits code that does not parse.',
    params: {},
    build: () => ({ tick: () => Status.SUCCESS, emit: (_e, _fresh, t) => js`${t} = ) ${Status.SUCCESS};\n` }),
  });
  const catalog = (): NodeCatalog => {
    const c = new NodeCatalog();
    c.register(broken);
    return c;
  };

  it.skipIf(!CODE_GENERATION)('makes compileTree throw the SyntaxError (it was hidden by a silent fallback to one call per node)', () => {
    expect(() => compileTree('t', () => ({ root: { type: 'brokenEmit' } }), catalog())).toThrow(SyntaxError);
  });

  it('leaves the call-per-node tree usable', () => {
    const t = compileTree('t', () => ({ root: { type: 'brokenEmit', name: 'b' } }), catalog(), { inline: false });
    const h = new Harness(t);
    h.step();
    expect(h.status('b')).toBe('success');
  });
});
