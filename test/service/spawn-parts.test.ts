// A spawn or despawn of more than 1,000 agents is handled in parts over several turns of the main thread's event
// loop (ws.ts), so other sessions are not held up by it. Seen from the game server nothing changes: one reply with
// every id and every error in order, and a snapshot sent right behind the spawn ticks every agent.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LIMITS } from '../../src/protocol/index.js';
import { RawClient, start, writeFixture, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture();
  running = await start({ trees: fixture.trees, workers: 2 });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

describe('large spawns and despawns over the WebSocket', () => {
  test('2,500 agents in one spawn: one reply in order, errors in order, and the snapshot right behind it ticks them all', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x'] });
    const ids = Array.from({ length: 2500 }, (_, i) => (i % 2 === 0 ? `npc-${i}` : 7_000_000 + i));
    const agents: Array<Record<string, unknown>> = ids.map((id) => ({ id, tree: 'talker' }));
    agents[10] = { tree: 'talker' }; // refused by validation (no id)
    agents[1500] = { id: ids[3], tree: 'talker' }; // a duplicate, in the second part
    agents[2200] = { id: ids[2200], tree: 'nope' }; // an unknown tree, in the third part
    client.send({ t: 'spawn', id: 1, agents });
    // Not waiting for `spawned`: the snapshot queues behind the spawn.
    client.send({ t: 'snapshot', tick: 1, time: 0, agents: ids.map((id, i) => [id, i]) });
    const spawned = await client.next('spawned', (f) => f.re === 1, 20_000);
    const created = ids.filter((_, i) => i !== 10 && i !== 1500 && i !== 2200);
    expect(spawned.ids).toEqual(created);
    expect((spawned.errors as Array<{ id?: unknown; code: string }>).map((e) => [e.id ?? null, e.code])).toEqual([
      [null, 'E_BAD_FIELD'],
      [ids[3], 'E_DUPLICATE_AGENT'],
      [ids[2200], 'E_UNKNOWN_TREE'],
    ]);
    const d = await client.next('decisions', (f) => f.tick === 1, 20_000);
    const actions = d.actions as Array<[unknown, number, string, { x: number }]>;
    expect(actions.map((a) => a[0])).toEqual(created);
    expect(actions.every((a) => a[3].x === ids.indexOf(a[0] as never))).toBe(true);

    // One despawn of every agent (and one unknown id): one reply; the next tick has nobody left to tick.
    const despawned = await client.request({ t: 'despawn', ids: [...created, 'ghost'] }, 'despawned');
    expect(despawned.ids).toEqual(created);
    expect((despawned.errors as Array<{ id: unknown; code: string }>).map((e) => [e.id, e.code])).toEqual([['ghost', 'E_UNKNOWN_AGENT']]);
    const after = await client.step({ tick: 2, time: 0.05 });
    expect(after.actions ?? []).toEqual([]);
    await client.close();
  });

  test('a large spawn frame decoded in parts (t first) answers exactly as one decoded whole (t last)', async () => {
    // Two sessions, the same agents: `t` first (how encoders write it: decoded 1,000 entries a turn) and last (decoded whole).
    const agents: Array<Record<string, unknown>> = Array.from({ length: 3000 }, (_, i) => ({ id: i % 3 === 0 ? `a-${i}` : i, tree: 'talker', seed: i }));
    agents[5] = { id: 5, tree: 'talker', bb: { nope: 1 } }; // an undeclared key
    agents[1200] = { id: 'a-3', tree: 'talker' }; // a duplicate, in the second part
    agents[2100] = { id: 2100, tree: 'talker', seed: 'x' }; // a bad field
    agents[2999] = { id: 2999 }; // no tree
    const replies = [];
    for (const frame of [{ t: 'spawn', id: 4, agents }, { agents, id: 4, t: 'spawn' }]) {
      const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x'] });
      client.send(frame);
      client.send({ t: 'snapshot', tick: 1, time: 0, agents: agents.map((a, i) => [a.id ?? -1, i]) });
      const spawned = await client.next('spawned', (f) => f.re === 4, 20_000);
      const d = await client.next('decisions', (f) => f.tick === 1, 20_000);
      replies.push({ ids: spawned.ids, errors: spawned.errors, warnings: spawned.warnings, acting: (d.actions as unknown[][]).map((a) => a[0]), errorFrames: client.frames.filter((f) => f.t === 'error') });
      await client.close();
    }
    expect((replies[0]!.ids as unknown[]).length).toBe(2996);
    expect((replies[0]!.errors as unknown[]).length).toBe(4);
    expect(replies[0]).toEqual(replies[1]);
  });

  test('a large spawn frame that is refused part way (a __proto__ key, nesting too deep) is refused whole, as before: nothing spawned', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < LIMITS.maxDepth; i++) deep = [deep];
    for (const bad of [JSON.parse('{"__proto__": 1}') as Record<string, unknown>, { deep }]) {
      const answers = [];
      for (const order of ['first', 'last']) {
        const agents: Array<Record<string, unknown>> = Array.from({ length: 2500 }, (_, i) => ({ id: i, tree: 'talker' }));
        agents[1700] = { id: 1700, tree: 'talker', bb: bad };
        const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x'] });
        client.send(order === 'first' ? { t: 'spawn', id: 9, agents } : { agents, id: 9, t: 'spawn' });
        const error = await client.next('error', () => true, 20_000);
        const d = await client.step({ tick: 1, time: 0 });
        answers.push({ code: error.code, message: error.message, re: error.re, acting: d.actions ?? [] });
        await client.close();
      }
      expect(answers[0]!.code).toBe('E_PROTOCOL');
      expect(answers[0]!.acting).toEqual([]);
      expect(answers[0]).toEqual(answers[1]);
    }
  });
});

