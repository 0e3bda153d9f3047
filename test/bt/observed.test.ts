// The observation fields a compiled tree reads: every self.X and world.X named in its expressions
// (guards, params, action args, services, subtrees, plugin expression params), and which roots it
// also reads dynamically.

import { describe, expect, it } from 'vitest';
import { ObservedCollector, compileTree, definePlugin, NodeCatalog, registerPlugin, type TreeDefinition } from '../../src/bt/index.js';

function catalog(): NodeCatalog {
  const c = new NodeCatalog();
  registerPlugin(
    c,
    definePlugin({
      name: 'game',
      conditions: {
        lowAmmo: { params: { ammo: { type: 'expression', description: 'ammo now' } }, test: (_ctx, p) => (p['ammo'] as number) < 3 },
      },
    }),
  );
  return c;
}

describe('observed fields', () => {
  it('lists self and world fields from guards, params, args, services, subtrees and plugin params', () => {
    const trees: Record<string, TreeDefinition> = {
      guard: {
        blackboard: { waypoint: 'a', target: null },
        root: {
          type: 'sequence',
          services: [{ every: 0.5, values: { target: 'nearest(world.enemies, self.pos)' } }],
          children: [
            { type: 'condition', expr: 'self.hp > 10 && world["raining"] != true' },
            { type: 'lowAmmo', ammo: 'self.ammo' },
            { type: 'action', action: 'goto', args: { waypoint: 'bb.waypoint', speed: 'self.stats.speed' } },
            { type: 'subtree', tree: 'cover' },
          ],
        },
      },
      cover: { root: { type: 'action', action: 'hide', args: { where: 'self.cover ?? world.map.center' } } },
    };
    const tree = compileTree('guard', (n) => trees[n], catalog());
    expect(tree.observed).toEqual({ self: ['ammo', 'cover', 'hp', 'pos', 'stats'], world: ['enemies', 'map', 'raining'], dynamic: [] });
    expect(compileTree('cover', (n) => trees[n], catalog()).observed).toEqual({ self: ['cover'], world: ['map'], dynamic: [] });
  });

  it('says when a root is read dynamically (the list may be incomplete)', () => {
    const c = new ObservedCollector();
    c.add("self['pos'][0] + self[bb.key]");
    c.add('len(world)');
    c.add('agent.id');
    expect(c.result()).toEqual({ self: ['pos'], world: [], dynamic: ['self', 'world'] });
  });

  it('a tree that reads no observation lists nothing', () => {
    const tree = compileTree('t', () => ({ root: { type: 'wait', seconds: 1 } }), catalog());
    expect(tree.observed).toEqual({ self: [], world: [], dynamic: [] });
  });
});
