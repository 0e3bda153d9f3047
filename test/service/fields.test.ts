// What a tree reads, told to the game server: `welcome.reads` and `/v1/trees` list each tree's
// observation fields, and `spawned.warnings` says when `hello.fields` lacks one (once per tree per
// session). Also: sessions opening and closing are logged at info.

import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defaultConfig } from '../../src/service/config.js';
import { createServer } from '../../src/service/server.js';
import { RawClient, http, start, writeFixture, type Running } from './harness.js';

const TREES = {
  // Reads self.pos and self.hp, and world.alarm.
  guard: {
    blackboard: { waypoint: 'gate' },
    root: {
      type: 'sequence',
      children: [
        { type: 'condition', expr: 'self.hp > 0 && world.alarm != true' },
        { type: 'action', action: 'goto', args: { waypoint: 'bb.waypoint', from: 'self.pos' }, instant: true },
      ],
    },
  },
  idle: { root: { type: 'running' } },
};

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture(TREES);
  running = await start({ trees: fixture.trees });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

const guardReads = { self: ['hp', 'pos'], world: ['alarm'], dynamic: [] };

describe('observation fields a tree reads', () => {
  test('welcome and GET /v1/trees list them per tree', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, {});
    expect(welcome.reads).toEqual({ guard: guardReads, idle: { self: [], world: [], dynamic: [] } });
    await client.close();
    const trees = (await http(running.base, 'GET', '/v1/trees')).body as { trees: Array<{ name: string; reads: unknown }> };
    expect(trees.trees.find((t) => t.name === 'guard')!.reads).toEqual(guardReads);
  });

  test('spawned warns once per tree when hello.fields lacks a field the tree reads (a misspelt "position")', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['position', 'hp'] });
    const first = await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }, { id: 2, tree: 'guard' }, { id: 3, tree: 'idle' }] }, 'spawned');
    expect(first.ids).toEqual([1, 2, 3]);
    expect(first.warnings).toEqual([
      { code: 'W_FIELD_NOT_DECLARED', tree: 'guard', fields: ['pos'], message: 'tree "guard" reads self.pos, not among hello.fields; it reads null' },
    ]);
    const again = await client.request({ t: 'spawn', agents: [{ id: 4, tree: 'guard' }] }, 'spawned');
    expect(again).not.toHaveProperty('warnings');
    await client.close();
  });

  test('no warning when the fields are all declared, or when the session declared none', async () => {
    const declared = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['pos', 'hp', 'extra'] });
    expect(await declared.client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned')).not.toHaveProperty('warnings');
    await declared.client.close();
    const maps = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    expect(await maps.client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned')).not.toHaveProperty('warnings');
    await maps.client.close();
  });

  test('HTTP sessions: the session reply lists the reads, spawn carries the warnings', async () => {
    const created = await http(running.base, 'POST', '/v1/sessions', { fields: ['hp'] });
    expect(created.status).toBe(201);
    const body = created.body as { session: string; reads: Record<string, unknown> };
    expect(body.reads['guard']).toEqual(guardReads);
    const spawned = await http(running.base, 'POST', `/v1/sessions/${body.session}/spawn`, { agents: [{ id: 'a', tree: 'guard' }] });
    expect(spawned.body).toEqual({
      ids: ['a'],
      warnings: [{ code: 'W_FIELD_NOT_DECLARED', tree: 'guard', fields: ['pos'], message: 'tree "guard" reads self.pos, not among hello.fields; it reads null' }],
    });
    await http(running.base, 'DELETE', `/v1/sessions/${body.session}`);
  });
});

describe('session logs', () => {
  test('opening and closing a session is logged at info; shutdown says how many sessions it drained', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const server = await createServer({ ...defaultConfig(), host: '127.0.0.1', port: 0, workers: 0, trees: fixture.trees }, { logger });
    const { port } = await server.listen();
    const { client, welcome } = await RawClient.hello(`ws://127.0.0.1:${port}/v1/ws`, { mode: 'lockstep' });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'idle' }, { id: 2, tree: 'idle' }] }, 'spawned');
    client.send({ t: 'bye' });
    await client.closed;
    const kept = await RawClient.hello(`ws://127.0.0.1:${port}/v1/ws`, {});
    await server.close();
    await kept.client.closed;
    const opened = lines.find((l) => l.msg === 'session opened' && l.session === welcome.session);
    expect(opened).toMatchObject({ level: 30, mode: 'lockstep', transport: 'ws' });
    await expect.poll(() => lines.find((l) => l.msg === 'session closed' && l.session === welcome.session)).toMatchObject({
      level: 30,
      mode: 'lockstep',
      transport: 'ws',
      agents: 2,
      reason: 'bye',
    });
    expect(lines.find((l) => l.msg === 'session closed' && l.session === kept.welcome.session)).toMatchObject({ reason: 'shutdown' });
    expect(lines.find((l) => l.msg === 'canopy stopped')).toMatchObject({ sessionsDrained: 1 });
  });
});
