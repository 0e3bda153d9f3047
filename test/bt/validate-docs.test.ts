// docs/trees.md documents every validation error code, node type (aliases included), parameter and
// expression function the engine knows, so the designers' reference cannot drift from the code.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NodeCatalog } from '../../src/bt/catalog.js';
import { ABORT_MODES } from '../../src/bt/definition.js';
import { TREE_ERRORS, TREE_WARNINGS, TreeErrorCode, TreeWarningCode } from '../../src/bt/errors.js';
import { EXPRESSION_FUNCTIONS } from '../../src/bt/expr/index.js';

const doc = readFileSync(new URL('../../docs/trees.md', import.meta.url), 'utf8');
const rows = doc.split('\n').filter((line) => line.startsWith('| `'));

/** The table row whose first cell starts with `name` ('' when there is none). */
function rowOf(name: string): string {
  return rows.find((line) => line.startsWith(`| \`${name}\``)) ?? '';
}

describe('docs/trees.md', () => {
  it('documents every validation error code in the codes table', () => {
    expect(Object.keys(TREE_ERRORS).toSorted()).toEqual(Object.values(TreeErrorCode).toSorted());
    expect(Object.keys(TREE_ERRORS).filter((code) => rowOf(code) === '')).toEqual([]);
  });

  it('documents every validation warning code in the warnings table', () => {
    expect(Object.keys(TREE_WARNINGS).toSorted()).toEqual(Object.values(TreeWarningCode).toSorted());
    expect(Object.keys(TREE_WARNINGS).filter((code) => rowOf(code) === '')).toEqual([]);
  });

  it('documents every node type and alias, with every parameter in its row', () => {
    const missing: string[] = [];
    for (const kind of new NodeCatalog().allKinds()) {
      const row = rowOf(kind.type);
      if (row === '') missing.push(kind.type);
      for (const name of [...(kind.aliases ?? []), ...Object.keys(kind.params)]) if (!row.includes(`\`${name}\``)) missing.push(`${kind.type}: ${name}`);
    }
    expect(missing).toEqual([]);
  });

  it('documents every expression function and abort mode', () => {
    expect(EXPRESSION_FUNCTIONS.filter((fn) => !new RegExp(`\`${fn}[(\`]`).test(doc))).toEqual([]);
    expect(ABORT_MODES.filter((mode) => !doc.includes(`\`${mode}\``))).toEqual([]);
  });
});
