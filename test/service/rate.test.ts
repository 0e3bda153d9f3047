// The per-connection message rate (CANOPY_MAX_MESSAGE_RATE) over a real socket: messages beyond
// the rate are delayed, never dropped, and the client hears E_LIMIT; a socket the service stopped
// reading is not mistaken for a dead one by the heartbeat.

import { afterAll, beforeAll, expect, test } from 'vitest';
import { RawClient, start, writeFixture, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture();
  // A ping every 250 ms: a throttled socket is unread for about four ping periods (80 pings at 40/s).
  // Shorter periods made a loaded machine's own late pongs look like dead sockets (flaky under load).
  running = await start({ trees: fixture.trees, maxMessageRate: 40, tuning: { pingIntervalMs: 250 } });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

test('beyond the rate, messages wait (E_LIMIT tells the client) and every one is answered in order', async () => {
  const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
  expect(welcome.limits).toMatchObject({ maxMessageRate: 40 });
  // hello took one token: 39 pass at once, the other 41 come at 40/s.
  const count = 80;
  for (let n = 0; n < count; n++) client.send({ t: 'ping', n });
  const pongs: number[] = [];
  for (let n = 0; n < count; n++) pongs.push((await client.next('pong', () => true, 10_000)).n as number);
  expect(pongs).toEqual(Array.from({ length: count }, (_, n) => n));
  const limits = client.frames.filter((f) => f.t === 'error');
  expect(limits.length).toBeGreaterThanOrEqual(1);
  expect(limits[0]).toEqual({ t: 'error', code: 'E_LIMIT', message: expect.stringMatching(/^more than 40 messages per second on this connection/) });
  // The socket was never dropped by the heartbeat while unread, and the session works on.
  expect(client.socket.readyState).toBe(client.socket.OPEN);
  expect(await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned')).toMatchObject({ ids: [1] });
  expect(await client.step({ tick: 1, time: 0 })).toMatchObject({ actions: [[1, 1, 'say', { word: 'hi', x: null }]] });
  await client.close();
});

test('one client over the rate does not slow another', async () => {
  const flooder = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
  const other = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
  for (let n = 0; n < 200; n++) flooder.client.send({ t: 'ping', n });
  await flooder.client.next('error', (f) => f.code === 'E_LIMIT');
  // 200 pings at 40/s take seconds for the flooder; the other answers at once.
  expect(await other.client.request({ t: 'ping', n: 7 }, 'pong')).toMatchObject({ n: 7 });
  expect(flooder.client.frames.filter((f) => f.t === 'pong').length).toBeLessThan(200);
  // The flooder's close frame would wait behind its throttled pings: cut it off instead.
  flooder.client.terminate();
  await Promise.all([flooder.client.closed, other.client.close()]);
});
