// Slow and misbehaving readers over real sockets: the goodbye and its close code reach a client
// that lags, and a frame over the size limit closes 1009 even while decisions are queued.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { WebSocket } from 'ws';
import { RawClient, http, start, writeFixture } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;

beforeAll(async () => {
  fixture = await writeFixture();
});

afterAll(async () => {
  await fixture.remove();
});

const word = 'w'.repeat(2000);
const agents = Array.from({ length: 100 }, (_, i) => ({ id: i, tree: 'talker', bb: { word } }));

describe('slow readers', () => {
  test('a reader that stops for a while after its goodbye still receives goodbye and close 1008 (it was reset 2 s later: 1006)', async () => {
    const s = await start({ trees: fixture.trees, tuning: { softBufferBytes: 64 * 1024, hardBufferBytes: 1024 * 1024, closeTimeoutMs: 6000 } });
    try {
      const { client } = await RawClient.hello(s.wsUrl, { hz: 100 });
      await client.request({ t: 'spawn', agents }, 'spawned');
      client.socket.pause();
      const metrics = async (): Promise<string> => (await http(s.base, 'GET', '/metrics')).body as string;
      await expect.poll(async () => /canopy_goodbyes_total\{reason="slow consumer"\} 1/.test(await metrics()), { timeout: 20_000, interval: 100 }).toBe(true);
      // The game server is busy for 2.5 s, then reads again: shorter than the close timeout, during
      // which the service must not reset the socket under its unread goodbye.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      client.socket.resume();
      expect(await client.next('goodbye', undefined, 20_000)).toEqual({ t: 'goodbye', reason: 'slow consumer' });
      expect((await client.closed).code).toBe(1008);
    } finally {
      await s.close();
    }
  });

  test('CANOPY_MAX_OUTBOX_BYTES drops the slow reader once all sockets together pass it; a reader that keeps up goes on', async () => {
    // Per socket the cap is far away (64 MiB): only the service-wide one can act.
    const s = await start({ trees: fixture.trees, maxOutboxBytes: 512 * 1024, tuning: { softBufferBytes: 64 * 1024, hardBufferBytes: 64 * 1024 * 1024 } });
    try {
      const fast = await RawClient.hello(s.wsUrl, { hz: 20 });
      await fast.client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
      const { client } = await RawClient.hello(s.wsUrl, { hz: 100 });
      await client.request({ t: 'spawn', agents }, 'spawned');
      client.socket.pause();
      const metrics = async (): Promise<string> => (await http(s.base, 'GET', '/metrics')).body as string;
      await expect.poll(async () => /canopy_goodbyes_total\{reason="slow consumer"\} 1/.test(await metrics()), { timeout: 20_000, interval: 100 }).toBe(true);
      client.socket.resume();
      expect(await client.next('goodbye', undefined, 20_000)).toEqual({ t: 'goodbye', reason: 'slow consumer' });
      // The other session never noticed: its decisions still come.
      const seen = fast.client.frames.length;
      await fast.client.next('decisions', () => fast.client.frames.length > seen);
      expect(fast.client.frames.some((f) => f.t === 'goodbye')).toBe(false);
      await fast.client.close();
    } finally {
      await s.close();
    }
  });

  test('a frame far over the size limit closes 1009 even behind unsent decisions (was reset: 1006)', async () => {
    const s = await start({ trees: fixture.trees, maxFrameBytes: 512 * 1024, tuning: { softBufferBytes: 256 * 1024, hardBufferBytes: 64 * 1024 * 1024 } });
    try {
      const { client } = await RawClient.hello(s.wsUrl, { hz: 100 });
      await client.request({ t: 'spawn', agents }, 'spawned');
      // Decisions pile up unsent while the client does not read.
      client.socket.pause();
      const server = s.server.app as unknown as { websocketServer: { clients: Set<WebSocket> } };
      const [peer] = [...server.websocketServer.clients];
      await expect.poll(() => peer!.bufferedAmount > 0, { timeout: 20_000, interval: 50 }).toBe(true);
      client.sendRaw(Buffer.alloc(16 * 1024 * 1024));
      // ws refuses the frame at its header and starts the close handshake with 1009.
      await expect.poll(() => peer!.readyState, { timeout: 10_000, interval: 20 }).toBe(peer!.CLOSING);
      await new Promise((resolve) => setImmediate(resolve));
      client.socket.resume();
      expect((await client.closed).code).toBe(1009);
    } finally {
      await s.close();
    }
  });
});
