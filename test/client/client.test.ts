// The SDK against a real loopback WebSocket server speaking the protocol: handshake, request
// correlation, lockstep, events, errors, reconnect with resume and backoff.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CanopyClient, CanopyError, type ConnectOptions } from '../../src/client/index.js';
import { encode, encodeDecisions, encodeError, encodeSpawned, encodeWelcome } from '../../src/protocol/index.js';
import { FakeServer, goodbye } from './fake-server.js';

let server: FakeServer;
const clients: CanopyClient[] = [];

beforeEach(async () => {
  server = await FakeServer.start();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await server.stop();
});

async function connect(options: ConnectOptions = {}): Promise<CanopyClient> {
  const client = await CanopyClient.connect(server.url, { reconnect: { minDelayMs: 10, maxDelayMs: 40 }, ...options });
  clients.push(client);
  return client;
}

/** The CanopyError `promise` rejects with (fails the test if it resolves or rejects otherwise). */
async function rejection(promise: Promise<unknown>): Promise<CanopyError> {
  const outcome = await promise.then(
    (value: unknown) => ({ resolved: value }),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(CanopyError);
  return outcome as CanopyError;
}

describe('handshake', () => {
  it('sends hello with the options and resolves on welcome', async () => {
    const client = await connect({ mode: 'lockstep', fields: ['x', 'y'], hz: 30 });
    expect(server.hellos).toEqual([
      { t: 'hello', id: undefined, v: 1, mode: 'lockstep', hz: 30, fields: ['x', 'y'], resume: undefined },
    ]);
    expect(client.session).toBe('s1');
    expect(client.resumeToken).toBe('s1-token-1');
    expect(client.mode).toBe('lockstep');
    expect(client.welcome).toMatchObject({ t: 'welcome', v: 1, trees: ['guard', 'orc'], limits: { maxAgents: 1000 } });
    expect(client.connected).toBe(true);
  });

  it('rejects with E_VERSION when the server refuses the hello', async () => {
    server.onHello = (_hello, socket) => {
      socket.send(encodeError('E_VERSION', 'protocol version 1 is not supported; this server speaks 2'));
      socket.close();
      return true;
    };
    const error = await rejection(CanopyClient.connect(server.url));
    expect(error.code).toBe('E_VERSION');
    expect(error.message).toBe('protocol version 1 is not supported; this server speaks 2');
  });

  it('rejects with E_UNAUTHORIZED on a 401, and connects with the right key', async () => {
    server.apiKey = 'sesame';
    const error = await rejection(CanopyClient.connect(server.url, { apiKey: 'wrong' }));
    expect(error.code).toBe('E_UNAUTHORIZED');
    expect(error.status).toBe(401);
    await rejection(CanopyClient.connect(server.url));
    const client = await connect({ apiKey: 'sesame' });
    expect(client.session).toBe('s1');
  });

  it('rejects with E_CONNECT when nothing listens, and E_TIMEOUT when no welcome comes', async () => {
    const url = server.url;
    await server.stop();
    expect((await rejection(CanopyClient.connect(url))).code).toBe('E_CONNECT');
    server = await FakeServer.start();
    server.onHello = () => true; // never answers
    const error = await rejection(CanopyClient.connect(server.url, { connectTimeoutMs: 50 }));
    expect(error.code).toBe('E_TIMEOUT');
  });
});

describe('requests', () => {
  it('spawn resolves with the ids created and the errors of the rest', async () => {
    const client = await connect();
    const result = await client.spawn([
      { id: 1, tree: 'guard' },
      { id: 'orc-2', tree: 'orc', label: 'Red/Orcs/Grunt', seed: 5 },
      { id: 3, tree: 'dragon' },
    ]);
    expect(result).toEqual({
      ids: [1, 'orc-2'],
      errors: [{ id: 3, code: 'E_UNKNOWN_TREE', message: 'unknown tree "dragon"' }],
    });
  });

  it('correlates replies by id, whatever their order', async () => {
    const held: Array<() => void> = [];
    server.onMessage = (msg, conn) => {
      if (msg.t !== 'spawn') return false;
      held.push(() => conn.send(encodeSpawned(msg.agents.map((a) => a.id), [], msg.id)));
      if (held.length === 3) for (const send of held.toReversed()) send();
      return true;
    };
    const client = await connect();
    const [a, b, c] = await Promise.all([
      client.spawn([{ id: 'a', tree: 'guard' }]),
      client.spawn([{ id: 'b', tree: 'guard' }]),
      client.spawn([{ id: 'c', tree: 'guard' }]),
    ]);
    expect([a.ids, b.ids, c.ids]).toEqual([['a'], ['b'], ['c']]);
    const ids = server.last.received.map((m) => m.id);
    expect(new Set(ids).size).toBe(3);
  });

  it('rejects a request with the server error that carries its id', async () => {
    server.onMessage = (msg, conn) => {
      if (msg.t === 'despawn') {
        conn.send(encodeError('E_LIMIT', 'too many requests', msg.id));
        return true;
      }
      return false;
    };
    const client = await connect();
    const error = await rejection(client.despawn([1]));
    expect(error).toMatchObject({ code: 'E_LIMIT', message: 'too many requests', re: server.last.received[0]!.id });
  });

  it('despawn and ping', async () => {
    const client = await connect();
    expect(await client.despawn([1, 'x'])).toEqual({ ids: [1, 'x'], errors: [] });
    const rtt = await client.ping();
    expect(rtt).toBeGreaterThanOrEqual(0);
    expect(rtt).toBeLessThan(5000);
  });

  it('times out with E_TIMEOUT when no answer comes', async () => {
    server.onMessage = () => true; // swallow everything
    const client = await connect({ requestTimeoutMs: 30 });
    const error = await rejection(client.ping());
    expect(error.code).toBe('E_TIMEOUT');
  });

  it('fire-and-forget messages arrive as sent', async () => {
    const client = await connect({ fields: ['x', 'hp'] });
    expect(client.setBlackboard([[1, { target: 'orc-2' }]])).toBe(true);
    expect(client.results([[1, 3, 'success']])).toBe(true);
    expect(client.snapshot({ tick: 4, time: 0.2, world: { night: true }, agents: [[1, 0.5, 10]], full: true })).toBe(true);
    await server.until(() => server.last.received.length === 3);
    expect(server.last.received).toEqual([
      { t: 'bb', id: undefined, set: [[1, { target: 'orc-2' }]] },
      { t: 'result', id: undefined, results: [[1, 3, 'success']] },
      { t: 'snapshot', id: undefined, tick: 4, time: 0.2, world: { night: true }, agents: [[1, 0.5, 10]], results: undefined, full: true },
    ]);
  });
});

describe('decisions and lockstep', () => {
  it('lockstep resolves with the decisions of the same tick, in flight or not', async () => {
    const client = await connect({ mode: 'lockstep' });
    const first = await client.lockstep({ tick: 1, time: 0.05 });
    expect(first).toEqual({
      tick: 1,
      basedOn: 1,
      actions: [[1, 1, 'step', { tick: 1 }]],
      cancels: [],
      done: [],
      errors: [],
    });
    const [a, b] = await Promise.all([client.lockstep({ tick: 2, time: 0.1 }), client.lockstep({ tick: 3, time: 0.15 })]);
    expect([a.tick, b.tick]).toEqual([2, 3]);
  });

  it('lockstep rejects when the server refuses the snapshot', async () => {
    const client = await connect({ mode: 'lockstep' });
    // time is required in lockstep: the fake server validates with the session's mode.
    const error = await rejection(client.lockstep({ tick: 1 }));
    expect(error).toMatchObject({ code: 'E_BAD_FIELD', message: 'snapshot.time: expected a number (required in lockstep mode)' });
  });

  it('a refused row is an error event, not a refused lockstep', async () => {
    const client = await connect({ mode: 'lockstep', fields: ['hp'] });
    const error = client.next('error');
    const decisions = await client.lockstep({ tick: 5, time: 0.25, agents: [[1, 10], [2, 10, 'extra']] });
    expect(decisions.tick).toBe(5);
    const refused = await error;
    expect(refused).toMatchObject({
      code: 'E_BAD_FIELD',
      message: 'snapshot.agents[1]: expected 2 values (the id and 1 field), got 3',
      entry: true,
      agent: 2,
    });
    expect(refused.re).toBe(server.last.received[0]!.id);
  });

  it('lockstep needs a lockstep session', async () => {
    const client = await connect();
    await expect(client.lockstep({ tick: 1, time: 0 })).rejects.toThrow(RangeError);
  });

  it('emits every decisions message with all lists present', async () => {
    const client = await connect();
    const next = client.next('decisions');
    server.last.send(encodeDecisions({ tick: 9, cancels: [[1, 2]] }));
    expect(await next).toEqual({ tick: 9, basedOn: undefined, actions: [], cancels: [[1, 2]], done: [], errors: [] });
  });

  it('emits server errors that answer no request', async () => {
    const client = await connect();
    const next = client.next('error');
    server.last.send(encodeError('E_UNKNOWN_AGENT', 'no agent 7 in this session'));
    const error = await next;
    expect(error).toBeInstanceOf(CanopyError);
    expect(error).toMatchObject({ code: 'E_UNKNOWN_AGENT', message: 'no agent 7 in this session', re: undefined });
  });

  it('ignores unknown message types and reports unreadable frames', async () => {
    const client = await connect();
    const error = client.next('error');
    server.last.send({ t: 'future-thing', x: 1 });
    server.last.send(Uint8Array.of(0xc1));
    expect((await error).code).toBe('E_PROTOCOL');
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
  });
});

describe('rows', () => {
  it('fills rows in place and sends them as snapshot.agents', async () => {
    const client = await connect({ fields: ['x', 'y', 'hp'] });
    const rows = client.rows();
    const X = rows.column('x');
    const HP = rows.column('hp');
    expect([X, HP, rows.width]).toEqual([1, 3, 4]);

    rows.begin();
    const r1 = rows.row(1);
    r1[X] = 0.5;
    r1[X + 1] = 2;
    r1[HP] = 10;
    rows.row('orc').fill(7, 1);
    client.snapshot({ tick: 1, agents: rows });

    rows.begin();
    const again = rows.row(1);
    expect(again).toBe(r1); // the same array, reused
    again[HP] = 9;
    client.snapshot({ tick: 2, agents: rows });

    await server.until(() => server.last.received.length === 2);
    expect(server.last.received.map((m) => (m.t === 'snapshot' ? m.agents : undefined))).toEqual([
      [[1, 0.5, 2, 10], ['orc', 7, 7, 7]],
      [[1, 0.5, 2, 9]],
    ]);
  });

  it('sends a snapshot frame byte for byte as the codec writes the message', async () => {
    const client = await connect({ fields: ['hp', 'pos', 'name'] });
    const raw: Buffer[] = [];
    server.last.socket.on('message', (data: Buffer) => raw.push(data));
    const rows = client.rows();
    rows.begin();
    for (let i = 0; i < 40; i++) {
      const r = rows.row(i % 2 === 0 ? i * 1_000_003 : `orc-${i}`);
      r[1] = i % 3 === 0 ? 150 : i + 0.5;
      r[2] = i % 4 === 0 ? null : [i * 1.5, -i];
      r[3] = i % 5 === 0 ? 'ü'.repeat(70) : { rank: i };
    }
    const message = { tick: 3, time: 0.15, world: { night: true }, results: [[1, 2, 'success'] as [number, number, 'success']] };
    client.snapshot({ ...message, agents: rows });
    await server.until(() => raw.length === 1);
    expect(raw[0]!.equals(encode({ t: 'snapshot', ...message, agents: rows.rows() }))).toBe(true);
  });

  it('sends large snapshots back to back intact, their memory used again (frames from 64 KB on)', async () => {
    const client = await connect({ fields: ['hp', 'pos'] });
    const rows = client.rows();
    const sent: unknown[][] = [];
    // Larger and smaller frames in turn: a frame written into memory a larger one had must end where it ends.
    for (const [tick, count] of [[1, 9000], [2, 6000], [3, 9500], [4, 5000], [5, 9000]] as const) {
      rows.begin();
      for (let i = 0; i < count; i++) {
        const r = rows.row(i);
        r[1] = tick * 1000 + (i % 100);
        r[2] = [i + tick / 10, -i - tick / 10];
      }
      sent.push(structuredClone(rows.rows()) as unknown[]);
      client.snapshot({ tick, agents: rows });
    }
    await server.until(() => server.last.received.length === 5);
    expect(server.last.received.map((m) => (m.t === 'snapshot' ? m.agents : undefined))).toEqual(sent);
  });

  it('needs declared fields', async () => {
    const client = await connect();
    expect(() => client.rows()).toThrow(RangeError);
  });
});

describe('closing', () => {
  it('bye sends bye, closes for good and does not reconnect', async () => {
    const client = await connect();
    const closed = client.next('close');
    await client.bye();
    expect(await closed).toMatchObject({ code: 1000, reason: 'bye' });
    expect(server.last.received.at(-1)).toEqual({ t: 'bye', id: undefined });
    expect(client.connected).toBe(false);
    expect(client.snapshot({ tick: 1 })).toBe(false);
    expect((await rejection(client.ping())).code).toBe('E_CLOSED');
    expect(server.hellos).toHaveLength(1);
  });

  it('without reconnect, an unexpected close ends the client and fails pending requests', async () => {
    server.onMessage = () => true;
    const client = await connect({ reconnect: false });
    const pending = client.ping();
    const closed = client.next('close');
    server.dropAll();
    expect((await rejection(pending)).code).toBe('E_CLOSED');
    expect((await closed).error).toBeUndefined();
  });
});

describe('reconnect', () => {
  // Durable sessions (docs/durability.md): a lockstep tick in flight survives a drop; after the resume the
  // client sends again exactly what the session had not applied, as welcome.tick says.
  for (const [ran, expected] of [
    [1, ['bb', 'snapshot', 'result']],
    [2, ['snapshot', 'result']],
  ] as const) {
    it(`lockstep: a tick in flight waits for the resume; welcome.tick ${ran}: sends again ${expected.join(', ')}`, async () => {
      const client = await connect({ mode: 'lockstep', fields: ['x'] });
      expect((await client.lockstep({ tick: 1, time: 0 })).tick).toBe(1);
      server.onMessage = (msg) => msg.t === 'snapshot'; // tick 2 goes unanswered
      client.setBlackboard([[1, { mood: 2 }]]);
      const tick2 = client.lockstep({ tick: 2, time: 0.1 });
      client.results([[1, 1, 'success']]);
      await server.until(() => server.last.received.length === 4); // snapshot 1, bb, snapshot 2, result
      server.resumeTick = ran;
      server.onMessage = undefined;
      const reconnect = client.next('reconnect');
      server.dropAll();
      expect(await reconnect).toMatchObject({ session: 's1', resumed: true });
      expect((await tick2).tick).toBe(2);
      expect(server.last.received.map((m) => m.t)).toEqual(expected);
      // A tick asked for while disconnected waits too, and goes out after the resume.
      server.dropAll();
      const tick3 = client.lockstep({ tick: 3, time: 0.2 });
      expect((await tick3).tick).toBe(3);
    });
  }

  it('lockstep: a large snapshot kept for the resume is sent again intact after large ones were encoded meanwhile', async () => {
    const client = await connect({ mode: 'lockstep', fields: ['hp'] });
    const rows = client.rows();
    const snapshot = (tick: number): { tick: number; time: number; agents: typeof rows } => {
      rows.begin();
      for (let i = 0; i < 12_000; i++) rows.row(i)[1] = tick * 100_000 + i;
      return { tick, time: tick / 10, agents: rows };
    };
    expect((await client.lockstep(snapshot(1))).tick).toBe(1);
    server.onMessage = (msg) => msg.t === 'snapshot'; // tick 2 goes unanswered: its frame is kept, written out
    const tick2 = client.lockstep(snapshot(2));
    await server.until(() => server.last.received.length === 2);
    const disconnect = client.next('disconnect');
    server.resumeTick = 1;
    server.dropAll();
    await disconnect;
    // Asked for while disconnected: encoded now, into memory other than tick 2's, which the resend still needs.
    const tick3 = client.lockstep(snapshot(3));
    server.onMessage = undefined;
    expect((await tick2).tick).toBe(2);
    expect((await tick3).tick).toBe(3);
    const resent = server.last.received.map((m) => (m.t === 'snapshot' ? [m.tick, (m.agents as unknown as number[][])[11_999]] : undefined));
    expect(resent).toEqual([[2, [11_999, 211_999]], [3, [11_999, 311_999]]]);
  });

  it('lockstep: a tick asked for while the socket is closing (close frame in, TCP not yet closed) waits for the resume', async () => {
    const client = await connect({ mode: 'lockstep', fields: ['x'] });
    expect((await client.lockstep({ tick: 1, time: 0 })).tick).toBe(1);
    const conn = server.last;
    // The server's side stops reading and a close frame (1001) goes out below ws: the client answers it and
    // stays CLOSING until the TCP link closes — the window a killed instance leaves between its FIN and 'close'.
    conn.tcp.pause();
    conn.tcp.write(Buffer.from([0x88, 0x02, 0x03, 0xe9]));
    for (let i = 0; client.connected; i++) {
      if (i > 500) throw new Error('the client never saw the close frame');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const tick2 = client.lockstep({ tick: 2, time: 0.1 });
    const reconnect = client.next('reconnect');
    conn.tcp.destroy();
    expect(await reconnect).toMatchObject({ session: 's1', resumed: true });
    expect((await tick2).tick).toBe(2);
    expect(server.last.received.map((m) => m.t)).toEqual(['snapshot']);
  });

  it('reconnects after a drop and resumes the session with its token', async () => {
    server.onMessage = (msg) => msg.t === 'ping'; // pings go unanswered
    const client = await connect();
    const token = client.resumeToken;
    const pending = client.ping();
    const disconnect = client.next('disconnect');
    const reconnect = client.next('reconnect');
    server.dropAll();

    expect((await rejection(pending)).code).toBe('E_CLOSED');
    expect(await disconnect).toMatchObject({ code: 1006, attempt: 1 });
    expect(await reconnect).toEqual({ session: 's1', resumed: true, attempts: 1 });
    expect(server.hellos[1]).toMatchObject({ resume: token });
    expect(client.session).toBe('s1');
    expect(client.resumeToken).not.toBe(token);
    server.onMessage = undefined;
    expect(await client.spawn([{ id: 1, tree: 'guard' }])).toEqual({ ids: [1], errors: [] });
  });

  it('reports resumed: false when the server starts a new session', async () => {
    const client = await connect();
    server.onHello = (hello) => {
      if (hello.resume !== undefined) (hello as { resume?: string }).resume = 'unknown';
    };
    const reconnect = client.next('reconnect');
    server.dropAll();
    expect(await reconnect).toEqual({ session: 's2', resumed: false, attempts: 1 });
  });

  it('opens a fresh session when the server refuses the resume token', async () => {
    const client = await connect();
    server.onHello = (hello, socket) => {
      if (hello.resume === undefined) return false;
      socket.send(encodeError('E_BAD_FIELD', 'hello.resume: unknown or expired token'));
      socket.close();
      return true;
    };
    const reconnect = client.next('reconnect');
    server.dropAll();
    expect(await reconnect).toEqual({ session: 's2', resumed: false, attempts: 2 });
    expect(server.hellos.map((h) => h.resume === undefined)).toEqual([true, false, true]);
  });

  it('backs off exponentially with jitter while the server refuses', async () => {
    const client = await connect({ reconnect: { minDelayMs: 20, maxDelayMs: 80 } });
    server.refuseUpgrades = 4;
    const delays: number[] = [];
    client.on('disconnect', (d) => delays.push(d.retryInMs));
    const reconnect = client.next('reconnect');
    server.dropAll();
    expect(await reconnect).toMatchObject({ resumed: true, attempts: 5 });
    expect(delays).toHaveLength(5);
    const steps = [20, 40, 80, 80, 80];
    delays.forEach((delay, i) => {
      expect(delay).toBeGreaterThanOrEqual(steps[i]! / 2);
      expect(delay).toBeLessThanOrEqual(steps[i]!);
    });
  });

  it('gives up after maxAttempts and emits close with the reason', async () => {
    const client = await connect({ reconnect: { minDelayMs: 5, maxDelayMs: 10, maxAttempts: 2 } });
    server.refuseUpgrades = 10;
    const closed = client.next('close');
    server.dropAll();
    const event = await closed;
    expect(event.error?.code).toBe('E_CLOSED');
    expect(event.error?.message).toBe('gave up reconnecting after 2 attempts');
  });

  it('stops on a 401 during reconnect', async () => {
    const client = await connect();
    server.apiKey = 'rotated';
    const closed = client.next('close');
    server.dropAll();
    expect((await closed).error).toMatchObject({ code: 'E_UNAUTHORIZED', status: 401 });
  });

  it('honours goodbye.retryAfterMs', async () => {
    const client = await connect({ reconnect: { minDelayMs: 5, maxDelayMs: 10 } });
    const bye = client.next('goodbye');
    const disconnect = client.next('disconnect');
    const reconnect = client.next('reconnect');
    goodbye(server.last, 150);
    expect(await bye).toEqual({ reason: 'shutting down', retryAfterMs: 150 });
    const dropped = await disconnect;
    const droppedAt = performance.now();
    expect(dropped).toMatchObject({ code: 1001, retryInMs: 150 });
    await reconnect;
    expect(performance.now() - droppedAt).toBeGreaterThanOrEqual(140);
  });

  it('does not reconnect after a goodbye without retryAfterMs', async () => {
    const client = await connect();
    const closed = client.next('close');
    server.last.send({ t: 'goodbye', reason: 'session resumed by another connection' });
    server.last.socket.close(1008, 'replaced');
    const event = await closed;
    expect(event).toMatchObject({ code: 1008, reason: 'session resumed by another connection' });
    expect(event.error?.message).toBe('the service said goodbye: session resumed by another connection');
    expect(server.hellos).toHaveLength(1);
  });

  it('delivers frames that follow the welcome in the same read', async () => {
    const client = await connect();
    server.onHello = (hello, socket, tcp) => {
      if (hello.resume === undefined) return false;
      // Welcome the resume by hand with decisions right behind it, in one TCP write (corked).
      tcp.cork();
      socket.send(encodeWelcome({ session: 's1', resume: 'again', mode: 'fixed', hz: 20, trees: [], limits: { maxAgents: 1, maxFrameBytes: 1 << 20 } }));
      socket.send(encodeDecisions({ tick: 77 }));
      tcp.uncork();
      return true;
    };
    const order: string[] = [];
    client.on('reconnect', () => order.push('reconnect'));
    const decisions = client.next('decisions', undefined, 2000);
    client.on('decisions', (d) => order.push(`decisions ${d.tick}`));
    server.dropAll();
    expect((await decisions).tick).toBe(77);
    expect(order).toEqual(['reconnect', 'decisions 77']);
  });

  it('close() while reconnecting stops for good', async () => {
    const client = await connect({ reconnect: { minDelayMs: 50, maxDelayMs: 50 } });
    const disconnect = client.next('disconnect');
    server.dropAll();
    await disconnect;
    await client.close();
    expect(server.hellos).toHaveLength(1);
    expect(client.connected).toBe(false);
  });
});
