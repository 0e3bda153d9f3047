// The inspector's engine part: node facts for drawing the graph, watched agents' frames, the why.

import { describe, expect, it } from 'vitest';
import { compileTree, NodeCatalog, type TreeDefinition } from '../../src/bt/index.js';

const guarded: TreeDefinition = {
  blackboard: { target: null },
  root: {
    type: 'selector',
    children: [
      { type: 'sequence', name: 'flee', if: 'self.hp < 30', abort: 'both', services: [{ every: 0.5, values: { target: 'self.enemy' } }], children: [{ type: 'action', action: 'flee', args: { speed: 2 } }] },
      { type: 'repeat', times: 3, child: { type: 'condition', expr: 'self.hp >= 30' } },
    ],
  },
};

describe('NodeInfo for the inspector', () => {
  it('carries each node’s guard, own parameters and services as written', () => {
    const tree = compileTree('t', (n) => (n === 't' ? guarded : undefined), new NodeCatalog());
    const [root, flee, act, rep, cond] = tree.nodes;
    expect(root!.guard).toBeUndefined();
    expect(root!.params).toBeUndefined();
    expect(flee!.guard).toEqual({ if: 'self.hp < 30', abort: 'both' });
    expect(flee!.services).toEqual([{ every: 0.5, values: { target: 'self.enemy' } }]);
    expect(flee!.params).toBeUndefined();
    expect(act!.params).toEqual({ action: 'flee', args: { speed: 2 } });
    expect(rep!.params).toEqual({ times: 3 });
    expect(cond!.params).toEqual({ expr: 'self.hp >= 30' });
    expect(Object.isFrozen(act!.params)).toBe(true);
  });
});
