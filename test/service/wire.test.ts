// The WebSocket protocol pinned with raw MessagePack frames (the `ws` package, no SDK): handshake,
// every error code, lockstep tick by tick, agents, blackboard, results, ping, bye, abuse.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { pack } from 'msgpackr';
import { RawClient, start, writeFixture, BOOM_PLUGIN, PLUGGED_TREE, TREES, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture({ ...TREES, plugged: PLUGGED_TREE }, { 'boom.mjs': BOOM_PLUGIN });
  running = await start({
    trees: fixture.trees,
    plugins: fixture.plugins,
    maxAgents: 5,
    maxFrameBytes: 64 * 1024,
    tuning: { abuseLimit: 5, abuseWindowMs: 60_000 },
  });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

async function lockstep(hello: Record<string, unknown> = {}): Promise<RawClient> {
  const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', ...hello });
  return client;
}

describe('handshake', () => {
  test('welcome carries version, session, resume token, mode, hz, trees and limits; re echoes the id', async () => {
    const client = await RawClient.open(running.wsUrl);
    client.send({ t: 'hello', v: 1, id: 42 });
    const welcome = await client.next('welcome');
    expect(welcome).toMatchObject({
      t: 'welcome',
      v: 1,
      mode: 'fixed',
      hz: 20,
      trees: ['alarm', 'idle', 'plugged', 'talker', 'walker'],
      limits: { maxAgents: 5, maxFrameBytes: 64 * 1024 },
      re: 42,
    });
    expect(typeof welcome.session).toBe('string');
    expect(welcome.resume).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    await client.close();
  });

  test('lockstep mode has no clock (hz 0); resume tokens differ per session', async () => {
    const a = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    const b = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    expect(a.welcome).toMatchObject({ mode: 'lockstep', hz: 0 });
    expect(a.welcome.session).not.toBe(b.welcome.session);
    expect(a.welcome.resume).not.toBe(b.welcome.resume);
    await Promise.all([a.client.close(), b.client.close()]);
  });

  test('a first frame other than hello → E_PROTOCOL, then close', async () => {
    const client = await RawClient.open(running.wsUrl);
    client.send({ t: 'ping', n: 1, id: 3 });
    expect(await client.next('error')).toEqual({ t: 'error', code: 'E_PROTOCOL', message: 'the first message must be hello, got "ping"', re: 3 });
    expect((await client.closed).code).toBe(1002);
  });

  test('a first frame that is not MessagePack → E_PROTOCOL, then close', async () => {
    const client = await RawClient.open(running.wsUrl);
    client.sendRaw(Buffer.from([0xc1, 0x00]));
    expect(await client.next('error')).toMatchObject({ code: 'E_PROTOCOL' });
    await client.closed;
  });

  test('a text frame first → E_PROTOCOL, then close', async () => {
    const client = await RawClient.open(running.wsUrl);
    client.sendRaw('{"t":"hello","v":1}', false);
    expect(await client.next('error')).toMatchObject({ code: 'E_PROTOCOL' });
    await client.closed;
  });

  test('unsupported version → E_VERSION, then close', async () => {
    const client = await RawClient.open(running.wsUrl);
    client.send({ t: 'hello', v: 2, id: 1 });
    expect(await client.next('error')).toEqual({ t: 'error', code: 'E_VERSION', message: 'protocol version 2 is not supported; this server speaks 1', re: 1 });
    expect((await client.closed).code).toBe(1002);
  });

  test('a hello with a bad field gets E_BAD_FIELD and may be retried', async () => {
    const client = await RawClient.open(running.wsUrl);
    client.send({ t: 'hello', v: 1, mode: 'turbo', id: 1 });
    expect(await client.next('error')).toMatchObject({ code: 'E_BAD_FIELD', message: 'hello.mode: expected "fixed" or "lockstep"', re: 1 });
    client.send({ t: 'hello', v: 1, mode: 'lockstep', id: 2 });
    expect(await client.next('welcome')).toMatchObject({ mode: 'lockstep', re: 2 });
    await client.close();
  });

  test('hz and fields from hello', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { hz: 7.5, fields: ['x'] });
    expect(welcome).toMatchObject({ mode: 'fixed', hz: 7.5 });
    await client.close();
  });
});

describe('errors after hello leave the session open', () => {
  test('E_UNKNOWN_MESSAGE, E_PROTOCOL (garbage, text, second hello), E_BAD_FIELD — then the session still works', async () => {
    const client = await lockstep();
    client.send({ t: 'dance', id: 1 });
    expect(await client.next('error')).toEqual({ t: 'error', code: 'E_UNKNOWN_MESSAGE', message: 'unknown message type "dance"', re: 1 });
    client.sendRaw(Buffer.from([0x92, 0x01, 0x02])); // a list, not a map
    expect(await client.next('error')).toMatchObject({ code: 'E_PROTOCOL', message: 'frame must be a MessagePack map' });
    client.send({ t: 'spawn', agents: 'many', id: 2 });
    expect(await client.next('error')).toEqual({ t: 'error', code: 'E_BAD_FIELD', message: 'spawn.agents: expected a list', re: 2 });
    client.send({ t: 'hello', v: 1, id: 3 });
    expect(await client.next('error')).toMatchObject({ code: 'E_PROTOCOL', re: 3 });
    expect(await client.request({ t: 'ping', n: 9 }, 'pong')).toMatchObject({ t: 'pong', n: 9 });
    await client.close();
  });

  test('lockstep snapshot without time → E_BAD_FIELD, nothing ticked; time going backwards → E_BAD_FIELD', async () => {
    const client = await lockstep();
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    expect(await client.request({ t: 'snapshot', tick: 1 }, 'error')).toMatchObject({
      code: 'E_BAD_FIELD',
      message: 'snapshot.time: expected a number (required in lockstep mode)',
    });
    expect(await client.step({ tick: 2, time: 1 })).toMatchObject({ tick: 2, actions: [[1, 1, 'say', { word: 'hi', x: null }]] });
    expect(await client.request({ t: 'snapshot', tick: 3, time: 0.5 }, 'error')).toMatchObject({ code: 'E_BAD_FIELD' });
    expect(await client.step({ tick: 4, time: 1.5 })).toMatchObject({ tick: 4, actions: [[1, 2, 'say', { word: 'hi', x: null }]] });
    await client.close();
  });

  test('the abuse limit: too many invalid frames → goodbye, close', async () => {
    const client = await lockstep();
    for (let i = 0; i < 6; i++) client.send({ t: 'nonsense' });
    expect(await client.next('goodbye')).toEqual({ t: 'goodbye', reason: 'too many invalid messages' });
    expect((await client.closed).code).toBe(1008);
  });

  test('a frame above maxFrameBytes closes the socket (1009) and leaves other sessions alone', async () => {
    const other = await lockstep();
    const client = await lockstep();
    client.send({ t: 'ping', pad: 'x'.repeat(70 * 1024) });
    expect((await client.closed).code).toBe(1009);
    expect(await other.request({ t: 'ping', n: 1 }, 'pong')).toMatchObject({ n: 1 });
    await other.close();
  });
});

describe('agents', () => {
  test('spawn: each entry succeeds or fails alone (E_BAD_FIELD, E_UNKNOWN_TREE, E_DUPLICATE_AGENT, E_UNKNOWN_KEY, E_LIMIT)', async () => {
    const client = await lockstep();
    const spawned = await client.request(
      {
        t: 'spawn',
        agents: [
          { id: 1, tree: 'talker', label: 'Blue/Warriors/One' },
          { id: 'x', tree: 'nope' },
          { id: 1, tree: 'talker' },
          { id: 2, tree: 'talker', bb: { colour: 'red' } },
          { tree: 'talker' },
          { id: 3, tree: 'walker', bb: { speed: 2 } },
          { id: 4, tree: 'talker' },
          { id: 5, tree: 'talker' },
          { id: 6, tree: 'talker' },
          { id: 7, tree: 'talker' },
          { id: 8, tree: 'talker' },
        ],
      },
      'spawned',
    );
    expect(spawned.ids).toEqual([1, 3, 4, 5, 6]);
    const errors = spawned.errors as Array<{ id?: unknown; code: string; message: string }>;
    expect(errors.map((e) => [e.id, e.code])).toEqual([
      [undefined, 'E_BAD_FIELD'],
      ['x', 'E_UNKNOWN_TREE'],
      [1, 'E_DUPLICATE_AGENT'],
      [2, 'E_UNKNOWN_KEY'],
      [7, 'E_LIMIT'],
      [8, 'E_LIMIT'],
    ]);
    expect(errors[0]!.message).toBe('spawn.agents[4].id: expected an integer or a non-empty string of at most 128 characters');
    await client.close();
  });

  test('despawn: removed ids, E_UNKNOWN_AGENT for the rest; the agent stops deciding', async () => {
    const client = await lockstep();
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }, { id: 2, tree: 'talker' }] }, 'spawned');
    const despawned = await client.request({ t: 'despawn', ids: [2, 99] }, 'despawned');
    expect(despawned.ids).toEqual([2]);
    expect(despawned.errors).toEqual([{ id: 99, code: 'E_UNKNOWN_AGENT', message: expect.stringContaining('99') }]);
    const d = await client.step({ tick: 1, time: 0 });
    expect((d.actions as unknown[][]).map((a) => a[0])).toEqual([1]);
    await client.close();
  });

  test('bb: declared keys are written before the next tick; E_UNKNOWN_KEY and E_UNKNOWN_AGENT come as error with re', async () => {
    const client = await lockstep();
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    client.send({ t: 'bb', id: 5, set: [[1, { word: 'hello' }], [1, { nope: 1 }], [77, { word: 'x' }]] });
    const e1 = await client.next('error');
    const e2 = await client.next('error');
    expect([e1.code, e2.code].toSorted()).toEqual(['E_UNKNOWN_AGENT', 'E_UNKNOWN_KEY']);
    expect(e1.re).toBe(5);
    // The rest of the message was applied: each refusal is marked as one entry's, with its agent (protocol.md).
    const byCode = Object.fromEntries([e1, e2].map((e) => [e.code, e]));
    expect(byCode['E_UNKNOWN_KEY']).toMatchObject({ entry: true, agent: 1, re: 5 });
    expect(byCode['E_UNKNOWN_AGENT']).toMatchObject({ entry: true, agent: 77, re: 5 });
    expect(await client.step({ tick: 1, time: 0 })).toMatchObject({ actions: [[1, 1, 'say', { word: 'hello', x: null }]] });
    await client.close();
  });
});

describe('lockstep', () => {
  test('one decisions per snapshot, same tick, basedOn, tick by tick; map-form observations', async () => {
    const client = await lockstep();
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }, { id: 'orc', tree: 'alarm' }] }, 'spawned');
    expect(await client.step({ tick: 100, time: 10, agents: { '1': { x: 4 }, ghost: { x: 1 } } })).toEqual({
      t: 'decisions',
      tick: 100,
      basedOn: 100,
      actions: [[1, 1, 'say', { word: 'hi', x: 4 }]],
      done: [[1, 'success']],
    });
    // Without `full`, observations are kept.
    expect(await client.step({ tick: 101, time: 10.5 })).toMatchObject({ tick: 101, basedOn: 101, actions: [[1, 2, 'say', { word: 'hi', x: 4 }]] });
    // The alarm waits one second of game time since its first tick (t = 10).
    const d = await client.step({ tick: 102, time: 11, full: true });
    expect(d).toMatchObject({ tick: 102, basedOn: 102 });
    expect(d.actions).toEqual([
      [1, 3, 'say', { word: 'hi', x: null }],
      ['orc', 1, 'ring', {}],
    ]);
    expect(d.done).toEqual([
      [1, 'success'],
      ['orc', 'success'],
    ]);
    await client.close();
  });

  test('positional rows with fields; results ride in the snapshot; a result for a stale seq is ignored', async () => {
    const client = await lockstep({ fields: ['x', 'hp'] });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'walker' }] }, 'spawned');
    expect(await client.step({ tick: 1, time: 0, agents: [[1, 0, 100]] })).toEqual({ t: 'decisions', tick: 1, basedOn: 1, actions: [[1, 1, 'walk', { speed: 1 }]] });
    // Still walking: nothing to say, but lockstep always answers.
    expect(await client.step({ tick: 2, time: 0.1 })).toEqual({ t: 'decisions', tick: 2, basedOn: 2 });
    expect(await client.step({ tick: 3, time: 0.2, results: [[1, 9, 'success']] })).toEqual({ t: 'decisions', tick: 3, basedOn: 3 });
    // With rows beside them, the results are read straight from the frame (src/protocol/rows.ts readResults).
    expect(await client.step({ tick: 4, time: 0.3, agents: [[1, 0, 100]], results: [[1, 1, 'failure']] })).toEqual({
      t: 'decisions',
      tick: 4,
      basedOn: 4,
      done: [[1, 'failure']],
    });
    expect(await client.step({ tick: 5, time: 0.4, id: 7, agents: [[1, 0, 100]], results: [[42, 1, 'success']] })).toMatchObject({ actions: [[1, 2, 'walk', { speed: 1 }]] });
    // The snapshot's entry error comes before its decisions (step skipped it).
    expect(client.frames).toContainEqual(expect.objectContaining({ t: 'error', code: 'E_UNKNOWN_AGENT', re: 7, agent: 42, entry: true }));
    // `result` as its own message, unknown agents refused entry by entry.
    client.send({ t: 'result', id: 8, results: [[1, 2, 'success'], [42, 1, 'success']] });
    expect(await client.next('error')).toMatchObject({ code: 'E_UNKNOWN_AGENT', re: 8 });
    expect(await client.step({ tick: 6, time: 0.5 })).toMatchObject({ done: [[1, 'success']] });
    await client.close();
  });

  test('string ids: results beside rows find their agents by the bytes (the session keeps the ids); a despawned id is unknown', async () => {
    const client = await lockstep({ fields: ['x', 'hp'] });
    await client.request({ t: 'spawn', agents: [{ id: 'orc-1', tree: 'walker' }, { id: 'orc-2', tree: 'walker' }] }, 'spawned');
    const rows = [['orc-1', 0, 100], ['orc-2', 0, 100]];
    expect(await client.step({ tick: 1, time: 0, agents: rows })).toMatchObject({ actions: [['orc-1', 1, 'walk', { speed: 1 }], ['orc-2', 1, 'walk', { speed: 1 }]] });
    expect(await client.step({ tick: 2, time: 0.1, agents: rows, results: [['orc-2', 1, 'failure']] })).toEqual({ t: 'decisions', tick: 2, basedOn: 2, done: [['orc-2', 'failure']] });
    await client.request({ t: 'despawn', ids: ['orc-1'] }, 'despawned');
    expect(await client.step({ tick: 3, time: 0.2, id: 9, agents: [['orc-2', 0, 100]], results: [['orc-1', 1, 'success']] })).toMatchObject({ tick: 3 });
    expect(client.frames).toContainEqual(expect.objectContaining({ t: 'error', code: 'E_UNKNOWN_AGENT', re: 9, agent: 'orc-1' }));
    // Spawned again under the same id: known again.
    await client.request({ t: 'spawn', agents: [{ id: 'orc-1', tree: 'walker' }] }, 'spawned');
    expect(await client.step({ tick: 4, time: 0.3, agents: rows })).toMatchObject({ actions: [['orc-1', 1, 'walk', { speed: 1 }]] });
    expect(await client.step({ tick: 5, time: 0.4, agents: rows, results: [['orc-1', 1, 'success']] })).toMatchObject({ done: [['orc-1', 'success']] });
    await client.close();
  });

  test('rows without declared fields → E_BAD_FIELD; a bad row is refused alone', async () => {
    const plain = await lockstep();
    expect(await plain.request({ t: 'snapshot', tick: 1, time: 0, agents: [[1, 2]] }, 'error')).toMatchObject({ code: 'E_BAD_FIELD' });
    await plain.close();
    const rows = await lockstep({ fields: ['x'] });
    await rows.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    rows.send({ t: 'snapshot', tick: 1, time: 0, agents: [[1, 5], [1, 2, 3]], id: 4 });
    expect(await rows.next('error')).toMatchObject({ code: 'E_BAD_FIELD', re: 4 });
    expect(await rows.next('decisions')).toMatchObject({ tick: 1, actions: [[1, 1, 'say', { word: 'hi', x: 5 }]] });
    await rows.close();
  });

  test('snapshots sent back to back are ticked in order, one decisions each', async () => {
    const client = await lockstep();
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    for (let tick = 1; tick <= 50; tick++) client.send({ t: 'snapshot', tick, time: tick / 10, agents: { '1': { x: tick } } });
    const ticks: unknown[] = [];
    for (let tick = 1; tick <= 50; tick++) {
      const d = await client.next('decisions');
      ticks.push(d.tick);
      expect(d.actions).toEqual([[1, tick, 'say', { word: 'hi', x: tick }]]);
    }
    expect(ticks).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    await client.close();
  });

  test('E_PLUGIN: a plugin that throws stops its agent; the others go on', async () => {
    const client = await lockstep();
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'plugged' }, { id: 2, tree: 'plugged' }] }, 'spawned');
    const d = await client.step({ tick: 1, time: 0, agents: { '1': { boom: true } } });
    expect(d.errors).toEqual([[1, 'E_PLUGIN', expect.stringContaining('kaboom')]]);
    expect(d.actions).toEqual([[2, 1, 'ok', {}]]);
    const next = await client.step({ tick: 2, time: 0.1, agents: { '1': { boom: false } } });
    expect(next.actions).toEqual([[2, 2, 'ok', {}]]);
    expect(next.errors).toBeUndefined();
    await client.close();
  });

  test('wide integers travel as MessagePack integers', async () => {
    const client = await lockstep();
    const big = 2 ** 40 + 1;
    await client.request({ t: 'spawn', agents: [{ id: big, tree: 'talker' }] }, 'spawned');
    client.send({ t: 'snapshot', tick: big, time: 0 });
    const d = await client.next('decisions');
    expect(d).toMatchObject({ tick: big, actions: [[big, 1, 'say', { word: 'hi', x: null }]] });
    await client.close();
  });
});

describe('session lifecycle', () => {
  test('bye frees the session and its agents, and closes with 1000', async () => {
    const client = await lockstep();
    const before = running.server.pool.agentCount();
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    expect(running.server.pool.agentCount()).toBe(before + 1);
    client.send({ t: 'bye' });
    expect((await client.closed).code).toBe(1000);
    await expect.poll(() => running.server.pool.agentCount()).toBe(before);
  });

  test('sessions are independent: a malformed frame in one never reaches another', async () => {
    const clients = await Promise.all([lockstep(), lockstep(), lockstep()]);
    await Promise.all(clients.map((c, i) => c.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker', bb: { word: `w${i}` } }] }, 'spawned')));
    clients[0]!.sendRaw(Buffer.from([0xde, 0xff]));
    clients[0]!.sendRaw(pack({ t: 'snapshot', tick: 'soon' }));
    const results = await Promise.all(clients.map((c) => c.step({ tick: 1, time: 0 })));
    results.forEach((d, i) => expect(d.actions).toEqual([[1, 1, 'say', { word: `w${i}`, x: null }]]));
    const errors = clients[0]!.frames.filter((f) => f.t === 'error').map((f) => f.code);
    expect(errors).toEqual(['E_PROTOCOL', 'E_BAD_FIELD']);
    for (const c of clients.slice(1)) expect(c.frames.filter((f) => f.t === 'error')).toEqual([]);
    await Promise.all(clients.map((c) => c.close()));
  });
});
