// Plugins: conditions, actions and services from TypeScript; a plugin that throws stops only its agent.

import { describe, expect, it } from 'vitest';
import { Agent, compileTree, DecisionBuffer, definePlugin, NodeCatalog, registerPlugin, STATUS_NAMES } from '../../src/bt/index.js';

function catalogWith(): NodeCatalog {
  const catalog = new NodeCatalog();
  registerPlugin(
    catalog,
    definePlugin({
      name: 'game',
      conditions: {
        lowAmmo: {
          params: { below: { type: 'number', description: 'threshold' }, ammo: { type: 'expression', description: 'ammo now' } },
          test: (_ctx, p) => (p['ammo'] as number) < (p['below'] as number),
        },
        explodes: { test: () => { throw new Error('kaboom'); } },
      },
      actions: {
        countdown: {
          tick(ctx, _p, fresh) {
            if (fresh) ctx.bb['n'] = 2;
            ctx.bb['n'] = (ctx.bb['n'] as number) - 1;
            return (ctx.bb['n'] as number) <= 0 ? 'success' : 'running';
          },
        },
      },
    }),
  );
  return catalog;
}

describe('plugins', () => {
  it('plugin conditions get literal and expression parameters', () => {
    const t = compileTree('t', () => ({ root: { type: 'lowAmmo', name: 'c', below: 5, ammo: 'self.ammo' } }), catalogWith());
    const a = new Agent(t, 'a1');
    const out = new DecisionBuffer();
    a.self = { ammo: 3 };
    a.tick(0, 0.1, out);
    expect(out.done).toEqual([['a1', 'success']]);
    out.clear();
    a.self = { ammo: 9 };
    a.tick(0.1, 0.1, out);
    expect(out.done).toEqual([['a1', 'failure']]);
  });

  it('plugin actions run over several ticks', () => {
    const t = compileTree('t', () => ({ blackboard: { n: 0 }, root: { type: 'countdown', name: 'c' } }), catalogWith());
    const a = new Agent(t, 1);
    const out = new DecisionBuffer();
    a.tick(0, 0.1, out);
    expect(STATUS_NAMES[a.status[0]!]).toBe('running');
    a.tick(0.1, 0.1, out);
    expect(out.done).toEqual([[1, 'success']]);
  });

  it('a plugin that throws stops that agent with E_PLUGIN, cancels its running actions, and never the others', () => {
    const t = compileTree(
      't',
      () => ({
        root: {
          type: 'parallel',
          children: [
            { type: 'action', action: 'walk' },
            { type: 'selector', reactive: true, children: [{ type: 'sequence', children: [{ type: 'condition', expr: 'self.boom' }, { type: 'explodes' }] }, { type: 'running' }] },
          ],
        },
      }),
      catalogWith(),
    );
    const good = new Agent(t, 'good');
    const bad = new Agent(t, 'bad');
    const out = new DecisionBuffer();
    good.self = { boom: false };
    bad.self = { boom: false };
    good.tick(0, 0.1, out);
    bad.tick(0, 0.1, out);
    bad.self = { boom: true };
    out.clear();
    bad.tick(0.1, 0.1, out);
    good.tick(0.1, 0.1, out);
    expect(out.errors).toEqual([['bad', 'E_PLUGIN', 'plugin code at t:root.children[1].children[0].children[1] threw: kaboom']]);
    expect(out.cancels).toEqual([['bad', 1]]);
    expect(bad.stopped).toBe(true);
    out.clear();
    bad.tick(0.2, 0.1, out);
    good.tick(0.2, 0.1, out);
    expect(out.errors).toEqual([]);
    expect(good.stopped).toBe(false);
  });

  it('a plugin cannot shadow a built-in node type', () => {
    expect(() => registerPlugin(new NodeCatalog(), definePlugin({ name: 'x', conditions: { sequence: { test: () => true } } }))).toThrow(
      "node type 'sequence' is already registered",
    );
  });
});
