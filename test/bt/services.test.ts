// Services (trees.md "Services"): run on entry, then every `every` seconds of tree time while the node is active.

import { describe, expect, it } from 'vitest';
import { definePlugin, NodeCatalog, registerPlugin, compileTree } from '../../src/bt/index.js';
import { Harness, s, tree, scriptedKind } from './helpers.js';

describe('services', () => {
  it('run when the node is entered, then every `every` seconds while it stays active, before its tick', () => {
    const h = new Harness(
      tree(
        {
          type: 'sequence',
          name: 'seq',
          services: [{ every: 0.3, values: { runs: 'bb.runs + 1', at: 'time' } }],
          children: [{ type: 'condition', expr: 'bb.runs > 0' }, s('work', 'running', 'running', 'running', 'running', 'running', 'running', 'running', 'success')],
        },
        { runs: 0, at: null },
      ),
      { period: 0.1 },
    );
    const runs: unknown[] = [];
    for (let i = 0; i < 9; i++) {
      h.step();
      runs.push(h.agent.bb['runs']);
    }
    // t=0 entry (1), t=0.3 (2), t=0.6 (3); finished at t=0.7; t=0.8 fresh entry again (4).
    expect(runs).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 4]);
    expect(h.agent.bb['at']).toBeCloseTo(0.8);
  });

  it('do not run while the node is inactive (guard false)', () => {
    const h = new Harness(tree({ ...s('a', 'running'), if: 'bb.go', services: [{ every: 0.1, values: { runs: 'bb.runs + 1' } }] }, { go: false, runs: 0 }));
    for (let i = 0; i < 3; i++) h.step();
    expect(h.agent.bb['runs']).toBe(0);
  });

  it('named plugin services run with their parameters', () => {
    const catalog = new NodeCatalog();
    catalog.register(scriptedKind);
    registerPlugin(
      catalog,
      definePlugin({
        name: 'test',
        services: {
          scan: {
            params: { step: { type: 'number', description: 'added each run' } },
            run(ctx, params) {
              ctx.bb['seen'] = (ctx.bb['seen'] as number) + (params['step'] as number);
            },
          },
        },
      }),
    );
    const t = compileTree(
      'x',
      () => ({ blackboard: { seen: 0 }, root: { type: 'scripted', name: 'a', script: 'running', services: [{ every: 0.2, service: 'scan', step: 5 }] } }),
      catalog,
    );
    const h = new Harness(t, { period: 0.1 });
    for (let i = 0; i < 5; i++) h.step();
    // t=0, 0.2, 0.4
    expect(h.agent.bb['seen']).toBe(15);
  });
});
