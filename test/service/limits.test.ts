// Connection hardening against a real server: hello timeout, the WebSocket connection cap with the
// health routes still answering, HTTP session count and creation rate, request timeouts, and
// URL and field-name errors answered from the protocol's catalog.

import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RawClient, http, start, writeFixture, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;

beforeAll(async () => {
  fixture = await writeFixture();
});

afterAll(async () => {
  await fixture.remove();
});

/** A server for one test, closed afterwards even when the test fails. */
async function withServer(overrides: Parameters<typeof start>[0], body: (s: Running) => Promise<void>): Promise<void> {
  const s = await start({ trees: fixture.trees, ...overrides });
  try {
    await body(s);
  } finally {
    await s.close();
  }
}

/** A WebSocket upgrade request by hand, to read a refusal's status, Retry-After and body. */
function upgrade(port: number): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/v1/ws',
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
    });
    req.once('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, retryAfter: undefined, body: '' });
    });
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }));
    });
    req.once('error', reject);
    req.end();
  });
}

describe('hello timeout', () => {
  test('a connection that never says hello is told goodbye and closed 1008 (it lived forever)', async () => {
    await withServer({ helloTimeoutMs: 200 }, async (s) => {
      const client = await RawClient.open(s.wsUrl);
      expect(await client.next('goodbye')).toEqual({ t: 'goodbye', reason: 'no hello in time' });
      expect((await client.closed).code).toBe(1008);
      // A client that says hello in time is not affected.
      const { client: ok } = await RawClient.hello(s.wsUrl, {});
      expect(await ok.request({ t: 'ping', n: 1 }, 'pong')).toMatchObject({ n: 1 });
      await ok.close();
    });
  });
});

describe('connection limit', () => {
  test('past CANOPY_MAX_CONNECTIONS upgrades get 503 E_LIMIT while /healthz and /readyz still answer (idle sockets took the fds)', async () => {
    await withServer({ maxConnections: 3, helloTimeoutMs: 0 }, async (s) => {
      const idle = await Promise.all([RawClient.open(s.wsUrl), RawClient.open(s.wsUrl), RawClient.open(s.wsUrl)]);
      const refused = await upgrade(s.port);
      expect(refused.status).toBe(503);
      expect(refused.retryAfter).toBeDefined();
      expect(JSON.parse(refused.body)).toEqual({ code: 'E_LIMIT', message: 'open WebSocket connections (CANOPY_MAX_CONNECTIONS) exceeds the limit of 3' });
      await expect(RawClient.open(s.wsUrl)).rejects.toMatchObject({ status: 503 });
      expect(await http(s.base, 'GET', '/healthz')).toMatchObject({ status: 200 });
      expect(await http(s.base, 'GET', '/readyz')).toMatchObject({ status: 200 });
      // A place frees up: the next connection is accepted.
      await idle[0]!.close();
      const { client } = await RawClient.hello(s.wsUrl, {});
      await client.close();
      await Promise.all(idle.slice(1).map((c) => c.close()));
    });
  });
});

describe('HTTP sessions', () => {
  test('at most CANOPY_MAX_HTTP_SESSIONS are open; the next is 503 E_LIMIT until one is deleted', async () => {
    await withServer({ maxHttpSessions: 2, httpSessionRate: 0 }, async (s) => {
      const a = await http(s.base, 'POST', '/v1/sessions', {});
      const b = await http(s.base, 'POST', '/v1/sessions', {});
      expect([a.status, b.status]).toEqual([201, 201]);
      const c = await http(s.base, 'POST', '/v1/sessions', {});
      expect(c).toMatchObject({ status: 503, body: { code: 'E_LIMIT', message: 'open HTTP sessions (CANOPY_MAX_HTTP_SESSIONS) exceeds the limit of 2' } });
      expect((await http(s.base, 'DELETE', `/v1/sessions/${(a.body as { session: string }).session}`)).status).toBe(204);
      expect((await http(s.base, 'POST', '/v1/sessions', {})).status).toBe(201);
    });
  });

  test('creation beyond CANOPY_HTTP_SESSION_RATE per second is 429 E_LIMIT with Retry-After', async () => {
    await withServer({ httpSessionRate: 1 }, async (s) => {
      // Sent together: the bucket holds one second's worth (one), the others find it empty.
      const replies = await Promise.all([0, 1, 2].map(() => http(s.base, 'POST', '/v1/sessions', {})));
      const statuses = replies.map((r) => r.status).toSorted();
      expect(statuses[0]).toBe(201);
      expect(statuses[2]).toBe(429);
      const limited = replies.find((r) => r.status === 429)!;
      expect(limited.body).toMatchObject({ code: 'E_LIMIT' });
      expect(limited.headers.get('retry-after')).toBe('1');
    });
  });

  test('"__proto__" in fields is E_BAD_FIELD over HTTP and WebSocket (was E_INTERNAL / 500)', async () => {
    await withServer({}, async (s) => {
      expect(await http(s.base, 'POST', '/v1/sessions', { fields: ['pos', '__proto__'] })).toEqual(
        expect.objectContaining({ status: 400, body: { code: 'E_BAD_FIELD', message: 'hello.fields[1]: "__proto__" is not allowed as a field name' } }),
      );
      const client = await RawClient.open(s.wsUrl);
      client.send({ t: 'hello', v: 1, fields: ['__proto__'], id: 5 });
      expect(await client.next('error')).toEqual({ t: 'error', code: 'E_BAD_FIELD', message: 'hello.fields[0]: "__proto__" is not allowed as a field name', re: 5 });
      // The connection waits for a better hello.
      client.send({ t: 'hello', v: 1, fields: ['pos'] });
      expect(await client.next('welcome')).toMatchObject({ t: 'welcome' });
      await client.close();
    });
  });
});

describe('HTTP timeouts and URL errors', () => {
  test('a body shorter than its Content-Length does not hold the connection past CANOPY_REQUEST_TIMEOUT_MS', async () => {
    await withServer({ requestTimeoutMs: 300 }, async (s) => {
      const socket = connect(s.port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.on('data', () => undefined);
      socket.on('error', () => undefined);
      socket.write('POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"fie');
      // Without a timeout this waits for the test's own timeout (the socket was held > 120 s).
      await closed;
      expect(await http(s.base, 'GET', '/healthz')).toMatchObject({ status: 200 });
    });
  });

  test('WebSocket connections outlive CANOPY_REQUEST_TIMEOUT_MS: the timeout is for HTTP requests only', async () => {
    await withServer({ requestTimeoutMs: 200 }, async (s) => {
      const { client } = await RawClient.hello(s.wsUrl, {});
      // Idle for several times the HTTP idle timeout, which an HTTP connection would not survive.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(await client.request({ t: 'ping', n: 2 }, 'pong')).toMatchObject({ n: 2 });
      await client.close();
    });
  });

  test('bad URLs and bodies answer with catalog codes, never fastify FST_ERR_* codes', async () => {
    await withServer({}, async (s) => {
      for (const path of ['/v1/sessions/%zz', '/v1/sessions/%zz/agents', '/v1/sessions/x/agents/%E0%A4%A', '/v1/trees/%zz']) {
        const reply = await http(s.base, 'GET', path);
        expect({ path, status: reply.status, body: reply.body }).toMatchObject({ path, status: 400, body: { code: 'E_BAD_FIELD' } });
      }
      expect(await http(s.base, 'GET', '/nope')).toMatchObject({ status: 404, body: { code: 'E_NOT_FOUND' } });
      const bad = await fetch(`${s.base}/v1/sessions`, { method: 'POST', body: '{bad', headers: { 'content-type': 'application/json' } });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ code: 'E_PROTOCOL' });
    });
  });
});
