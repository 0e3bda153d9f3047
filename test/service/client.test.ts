// The TypeScript SDK against the real service: lockstep with rows, fixed-rate decisions events,
// server errors as CanopyError codes, API keys, and reconnect-with-resume after a dropped socket.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CanopyClient, CanopyError } from '../../src/client/index.js';
import { start, writeFixture, TREES, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture(TREES);
  running = await start({ trees: fixture.trees, hz: 50, apiKeys: ['sdk-key'] });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

const connect = (options: Parameters<typeof CanopyClient.connect>[1] = {}) =>
  CanopyClient.connect(running.wsUrl, { apiKey: 'sdk-key', reconnect: false, ...options });

describe('CanopyClient against the service', () => {
  test('lockstep with positional rows, tick by tick', async () => {
    const client = await connect({ mode: 'lockstep', fields: ['x'] });
    expect(client.welcome).toMatchObject({ mode: 'lockstep', hz: 0, trees: ['alarm', 'idle', 'talker', 'walker'] });
    expect(await client.spawn([{ id: 1, tree: 'talker' }, { id: 2, tree: 'walker' }])).toEqual({ ids: [1, 2], errors: [] });
    const rows = client.rows();
    const X = rows.column('x');
    for (let tick = 1; tick <= 3; tick++) {
      rows.begin();
      rows.row(1)[X] = tick * 10;
      rows.row(2)[X] = 0;
      const d = await client.lockstep({ tick, time: tick, agents: rows });
      expect(d.tick).toBe(tick);
      expect(d.basedOn).toBe(tick);
      expect(d.actions[0]).toEqual([1, tick, 'say', { word: 'hi', x: tick * 10 }]);
    }
    await client.bye();
  });

  test('lockstep with a RowEncoder: 3,000 agents in a frame of more than 32 KB, every value as sent', async () => {
    const client = await connect({ mode: 'lockstep', fields: ['x', 'hp'] });
    const n = 3000;
    const ids = Array.from({ length: n }, (_, i) => (i % 4 === 0 ? `npc-${i}` : i * 1_000_003));
    const spawned = await client.spawn(ids.map((id) => ({ id, tree: 'talker' })));
    expect(spawned.errors).toEqual([]);
    const rows = client.rowEncoder();
    // A number, a float, a point and a string in turn: the fast forms and one the service reads the ordinary way.
    const x = (i: number, tick: number): unknown => [i + tick, i + 0.5 + tick, [i + 0.25, -tick - 0.5], `at-${i}-${tick}`][i % 4];
    for (let tick = 1; tick <= 3; tick++) {
      rows.begin();
      for (let i = 0; i < n; i++) {
        rows.row(ids[i]!);
        const v = x(i, tick);
        if (typeof v === 'number') rows.number(v);
        else if (Array.isArray(v)) rows.point(v[0] as number, v[1] as number);
        else rows.value(v);
        rows.number(100 - (i % 7));
      }
      expect(rows.bytes().length).toBeGreaterThan(32 * 1024);
      const d = await client.lockstep({ tick, time: tick / 20, agents: rows });
      expect(d.tick).toBe(tick);
      expect(d.errors).toEqual([]);
      const said = new Map(d.actions.map(([id, , action, args]) => [id, { action, args }]));
      expect(said.size).toBe(n);
      for (let i = 0; i < n; i += 97) expect(said.get(ids[i]!)).toEqual({ action: 'say', args: { word: 'hi', x: x(i, tick) } });
    }
    // A row short of a value: the call is refused before anything is sent, and the session goes on as before.
    rows.begin();
    rows.row(ids[0]!).number(1);
    await expect(client.lockstep({ tick: 4, time: 0.2, agents: rows })).rejects.toThrow(/the row of agent "npc-0" has 1 values; the fields are 2/);
    rows.begin();
    rows.row(ids[0]!).number(7).number(100);
    const d = await client.lockstep({ tick: 4, time: 0.2, agents: rows });
    expect(d.tick).toBe(4);
    expect(d.actions.find(([id]) => id === ids[0])?.[3]).toEqual({ word: 'hi', x: 7 });
    await client.bye();
  });

  test('server errors reject with their code: E_UNKNOWN_TREE in spawn errors, E_BAD_FIELD for a lockstep snapshot', async () => {
    const client = await connect({ mode: 'lockstep' });
    const spawned = await client.spawn([{ id: 1, tree: 'nope' }]);
    expect(spawned.errors).toMatchObject([{ id: 1, code: 'E_UNKNOWN_TREE' }]);
    const err = await client.lockstep({ tick: 1, time: Number.NaN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CanopyError);
    expect((err as CanopyError).code).toBe('E_BAD_FIELD');
    await client.bye();
  });

  test('fixed mode: decisions arrive as events', async () => {
    const client = await connect();
    await client.spawn([{ id: 'a', tree: 'talker' }]);
    const d = await new Promise<{ actions: readonly unknown[] }>((resolve) => {
      client.on('decisions', (x) => {
        if (x.actions.length > 0) resolve(x);
      });
    });
    expect(d.actions[0]).toMatchObject(['a', expect.any(Number), 'say', { word: 'hi', x: null }]);
    await client.bye();
  });

  test('a wrong API key is E_UNAUTHORIZED', async () => {
    await expect(CanopyClient.connect(running.wsUrl, { apiKey: 'wrong', reconnect: false })).rejects.toMatchObject({ code: 'E_UNAUTHORIZED' });
  });

  test('a dropped socket is resumed by the client with the running action intact', async () => {
    const client = await CanopyClient.connect(running.wsUrl, { apiKey: 'sdk-key', mode: 'lockstep', reconnect: { minDelayMs: 10, maxDelayMs: 50 } });
    await client.spawn([{ id: 'w', tree: 'walker' }]);
    expect((await client.lockstep({ tick: 1, time: 0 })).actions).toEqual([['w', 1, 'walk', { speed: 1 }]]);
    const session = client.session;
    const reconnected = new Promise<{ resumed: boolean; session: string }>((resolve) => client.on('reconnect', resolve));
    // Drop the server's side of the socket.
    for (const c of running.server.app.websocketServer.clients) c.terminate();
    expect(await reconnected).toMatchObject({ resumed: true, session });
    const d = await client.lockstep({ tick: 2, time: 0.1, results: [['w', 1, 'success']] });
    expect(d.done).toEqual([['w', 'success']]);
    await client.bye();
  });
});
