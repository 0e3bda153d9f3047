// Hostile strings in every place a tree author (or a game server) controls — node, action, tree and subtree
// names, args keys and values, blackboard keys, log messages, agent labels, observation field names — run
// nothing and come back unchanged, with and without whole-tree compilation and string code generation.

import { afterEach, describe, expect, it } from 'vitest';
import { Agent, DecisionBuffer, NodeCatalog, validateTree, type TreeDefinition } from '../../src/bt/index.js';
import { compileTree } from '../../src/bt/program.js';
import { Tag } from '../../src/protocol/rows.js';
import { rowWriter } from '../../src/service/pool/host.js';

/** Each would run `globalThis.pwned = …` if it were pasted into generated code unquoted. */
const HOSTILE = [
  '"; globalThis.pwned = 1; "',
  "'); globalThis.pwned = 2; ('",
  '`; globalThis.pwned = 3; `',
  '${globalThis.pwned = 4}',
  '*/ globalThis.pwned = 5; /*',
  '\u2028globalThis.pwned = 6;\u2029',
  'lone \uD800 and \uDFFF surrogates',
  '</script><script>globalThis.pwned = 7</script>',
  '\\"); globalThis.pwned = 8; //',
  'x\n}; globalThis.pwned = 9; {',
  'nul \0 and bell \u0007',
] as const;

const pwned = (): unknown => (globalThis as { pwned?: unknown }).pwned;

afterEach(() => {
  delete (globalThis as { pwned?: unknown }).pwned;
});

/** `s` as a string literal of the expression language (escapes: \\ \' \" \n \t). */
function quote(s: string): string {
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n').replaceAll('\t', '\\t')}'`;
}

/** A main tree and a subtree where every author-controlled string is `h`. */
function trees(h: string): Record<string, TreeDefinition> {
  const key = `${h} key`;
  return {
    [`${h} main`]: {
      blackboard: { [key]: '', count: 0 },
      root: {
        type: 'sequence',
        name: `${h} root`,
        services: [{ every: 1, values: { count: 'bb.count + 1' } }],
        children: [
          { type: 'condition', name: h, expr: `agent.label == ${quote(h)}`, if: `bb[${quote(key)}] == ''`, abort: 'self' },
          { type: 'set', name: `${h} set`, values: { [key]: quote(h) } },
          { type: 'log', name: `${h} log`, message: `bb[${quote(key)}]`, level: 'warn' },
          {
            type: 'action',
            name: `${h} action`,
            action: h,
            instant: true,
            args: { [h]: quote(h), [`${h} literal`]: { [h]: [h, 1] }, read: `bb[${quote(key)}]` },
          },
          { type: 'subtree', name: `${h} subtree`, tree: `${h} sub`, args: { [key]: quote(h) } },
        ],
      },
    },
    [`${h} sub`]: {
      blackboard: { [key]: '' },
      root: { type: 'action', name: `${h} inner`, action: `${h} inner`, instant: true, args: { [key]: `bb[${quote(key)}]` } },
    },
  };
}

describe('hostile strings in trees', () => {
  for (const inline of [true, false]) {
    it(`run nothing and round-trip (inline: ${inline})`, () => {
      for (const h of HOSTILE) {
        const defs = trees(h);
        const lookup = (name: string): TreeDefinition | undefined => defs[name];
        // These are valid trees: no string is refused for what it contains.
        for (const [name, def] of Object.entries(defs)) expect(validateTree(name, def, { catalog: new NodeCatalog(), trees: lookup })).toEqual([]);
        const t = compileTree(`${h} main`, lookup, new NodeCatalog(), { inline });
        expect(t.name).toBe(`${h} main`);
        expect(t.nodes.map((n) => n.name)).toEqual([`${h} root`, h, `${h} set`, `${h} log`, `${h} action`, `${h} subtree`, `${h} inner`]);
        expect(t.nodes[6]!.file).toBe(`${h} sub`);

        const agent = new Agent(t, 1, { label: h, seed: 1 });
        const out = new DecisionBuffer(true);
        agent.tick(0, 0.1, out);
        expect(pwned()).toBeUndefined();
        expect(out.errors).toEqual([]);
        expect(out.logs).toEqual([[1, 'warn', h]]);
        expect(out.actions).toEqual([
          [1, 1, h, { [h]: h, [`${h} literal`]: { [h]: [h, 1] }, read: h }],
          [1, 2, `${h} inner`, { [`${h} key`]: h }],
        ]);
        expect(out.done).toEqual([[1, 'success']]);
        expect(agent.bb).toEqual({ [`${h} key`]: h, count: 1 });
      }
    });
  }
});

describe('hostile observation field names', () => {
  it('a session row writer stores each field under its exact name and runs nothing', () => {
    const fields = [...HOSTILE, '__x', 'hp'];
    const write = rowWriter(fields);
    const n = fields.length;
    const values = Float64Array.from({ length: n }, (_, k) => k);
    const tags = Uint8Array.from({ length: n }, (_, k) => (k === 0 ? Tag.OTHER : Tag.NUMBER));
    const obs: Record<string, unknown> = {};
    write(obs, values, tags, ['text'], new Float64Array(0), 0);
    expect(pwned()).toBeUndefined();
    expect(Object.keys(obs)).toEqual(fields);
    expect(fields.map((f) => obs[f])).toEqual(['text', ...fields.slice(1).map((_, k) => k + 1)]);
  });
});
