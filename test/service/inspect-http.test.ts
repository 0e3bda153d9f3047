// GET /v1/sessions/:id/agents/:agent (issue 13): the inspection shows the agent's observation (`self`), the
// session's `world`, and the action of unnamed action nodes instead of `"name": null`. Inline and on workers.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { http, start, writeFixture, TREES, type Running } from './harness.js';

const NAMED = {
  root: {
    type: 'sequence',
    children: [
      { type: 'action', action: 'look', instant: true },
      { type: 'action', name: 'go home', action: 'walk' },
    ],
  },
};

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture({ ...TREES, named: NAMED });
});
afterAll(async () => {
  await fixture.remove();
});

describe.each([
  ['inline', 0],
  ['two worker threads', 2],
])('agent inspection over HTTP (%s)', (_name, workers) => {
  let running: Running;
  beforeAll(async () => {
    running = await start({ trees: fixture.trees, workers });
  });
  afterAll(async () => {
    await running.close();
  });

  test('shows self, world and the action of unnamed action nodes', async () => {
    const created = await http(running.base, 'POST', '/v1/sessions', { fields: ['x', 'tag'] });
    const base = `/v1/sessions/${(created.body as { session: string }).session}`;
    await http(running.base, 'POST', `${base}/spawn`, { agents: [{ id: 7, tree: 'named' }, { id: 8, tree: 'named' }] });

    const before = await http(running.base, 'GET', `${base}/agents/7`);
    expect(before.body).toMatchObject({ id: 7, self: null, world: null });

    const world = { alarm: false, zone: { name: 'keep', doors: [1, 2] } };
    const ticked = await http(running.base, 'POST', `${base}/tick`, { tick: 1, time: 0, agents: [[7, 3.5, 'red']], world });
    expect(ticked.status).toBe(200);
    const one = await http(running.base, 'GET', `${base}/agents/7`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: 7, self: { x: 3.5, tag: 'red' }, world });
    const nodes = (one.body as { nodes: Array<Record<string, unknown>> }).nodes;
    expect(nodes[0]).toMatchObject({ type: 'sequence', name: null });
    expect(nodes[0]).not.toHaveProperty('action');
    expect(nodes[1]).toMatchObject({ type: 'action', name: 'look', action: 'look' });
    expect(nodes[2]).toMatchObject({ type: 'action', name: 'go home', action: 'walk', status: 'running' });
    // An agent without a row this tick has no observation; it sees the same world.
    expect((await http(running.base, 'GET', `${base}/agents/8`)).body).toMatchObject({ id: 8, self: null, world });
  });
});
