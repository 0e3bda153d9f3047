// Fixed-rate sessions over real sockets: cadence (measured loosely), heartbeats, basedOn, resume
// within the grace period with running state intact, expiry, dead sockets, slow readers, API keys.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RawClient, http, start, writeFixture, TREES, type Frame, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture(TREES);
  running = await start({
    trees: fixture.trees,
    hz: 50,
    // Long enough that a resume made at once succeeds on a loaded machine; the expiry test has its own server.
    resumeGraceMs: 10_000,
    tuning: { pingIntervalMs: 100 },
  });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

/** Collects decisions frames for `ms` (the only place a duration is measured, loosely). */
async function decisionsFor(client: RawClient, ms: number): Promise<Frame[]> {
  const from = client.frames.length;
  await new Promise((resolve) => setTimeout(resolve, ms));
  return client.frames.slice(from).filter((f) => f.t === 'decisions');
}

describe('fixed rate', () => {
  test('at hz 50 a talking agent gets decisions many times a second, service ticks increasing', async () => {
    const { client } = await RawClient.hello(running.wsUrl);
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    const frames = await decisionsFor(client, 1000);
    expect(frames.length).toBeGreaterThanOrEqual(5);
    const ticks = frames.map((f) => f.tick as number);
    for (let i = 1; i < ticks.length; i++) expect(ticks[i]!).toBeGreaterThan(ticks[i - 1]!);
    const seqs = frames.flatMap((f) => (f.actions as unknown[][]).map((a) => a[1]));
    expect(seqs).toEqual(seqs.map((_, i) => (seqs[0] as number) + i));
    await client.close();
  });

  test('basedOn is the latest snapshot applied; observations reach the trees', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { fields: ['x'] });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }] }, 'spawned');
    client.send({ t: 'snapshot', tick: 777, agents: [[1, 12]] });
    const d = await client.next('decisions', (f) => f.basedOn === 777);
    expect((d.actions as unknown[][])[0]![3]).toEqual({ word: 'hi', x: 12 });
    await client.close();
  });

  test('with nothing to say, an empty decisions arrives as a heartbeat about once a second', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { hz: 50 });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'idle' }] }, 'spawned');
    const heartbeat = await client.next('decisions', undefined, 3000);
    expect(Object.keys(heartbeat).toSorted()).toEqual(['t', 'tick']);
    expect(heartbeat.tick as number).toBeGreaterThanOrEqual(40);
    await client.close();
  });

  test('a slow rate (hz 0.5) still sends a heartbeat every second', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { hz: 0.5 });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'idle' }] }, 'spawned');
    // Before the first tick (due at 2 s) the heartbeat carries tick 0.
    expect(await client.next('decisions', undefined, 3000)).toEqual({ t: 'decisions', tick: 0 });
    await client.close();
  });
});

describe('resume', () => {
  test('a dropped session is taken over with its running state; decisions meanwhile are not replayed', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl);
    await client.request({ t: 'spawn', agents: [{ id: 'w', tree: 'walker' }] }, 'spawned');
    const first = await client.next('decisions', (f) => Array.isArray(f.actions));
    expect(first.actions).toEqual([['w', 1, 'walk', { speed: 1 }]]);
    client.terminate();
    await client.closed;

    const again = await RawClient.hello(running.wsUrl, { resume: welcome.resume, mode: 'lockstep', hz: 5 });
    expect(again.welcome).toMatchObject({ session: welcome.session, mode: 'fixed', hz: 50 });
    expect(again.welcome.resume).not.toBe(welcome.resume); // a token works once
    // The walk (seq 1) is still running: its result finishes the root.
    again.client.send({ t: 'result', results: [['w', 1, 'success']] });
    const done = await again.client.next('decisions', (f) => Array.isArray(f.done));
    expect(done.done).toEqual([['w', 'success']]);
    expect(again.client.frames.filter((f) => f.t === 'decisions' && f.tick === first.tick)).toEqual([]);
    await again.client.close();
  });

  test('a resume while the old socket still looks alive takes over; the old one is told goodbye', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl);
    const taker = await RawClient.hello(running.wsUrl, { resume: welcome.resume });
    expect(taker.welcome.session).toBe(welcome.session);
    expect(await client.next('goodbye')).toMatchObject({ reason: 'session resumed by another connection' });
    await client.closed;
    expect(await taker.client.request({ t: 'ping', n: 1 }, 'pong')).toMatchObject({ n: 1 });
    await taker.client.close();
  });

  test('after the grace period the session and its agents are freed; the token then opens a new session', async () => {
    const short = await start({ trees: fixture.trees, hz: 50, resumeGraceMs: 300 });
    try {
      const { client, welcome } = await RawClient.hello(short.wsUrl, { mode: 'lockstep' });
      await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'walker' }] }, 'spawned');
      await client.close();
      expect(short.server.pool.agentCount(welcome.session as string)).toBe(1);
      await expect.poll(() => short.server.pool.agentCount(welcome.session as string), { timeout: 10_000 }).toBe(0);
      const listed = (await http(short.base, 'GET', '/v1/sessions')).body as { sessions: Array<{ session: string }> };
      expect(listed.sessions.map((s) => s.session)).not.toContain(welcome.session);
      const later = await RawClient.hello(short.wsUrl, { resume: welcome.resume, mode: 'lockstep' });
      expect(later.welcome.session).not.toBe(welcome.session);
      await later.client.close();
    } finally {
      await short.close();
    }
  });

  test('a socket that stops answering pings is dropped and its session kept for resume', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' }, { autoPong: false });
    await client.request({ t: 'spawn', agents: [{ id: 5, tree: 'talker' }] }, 'spawned');
    await client.closed;
    const again = await RawClient.hello(running.wsUrl, { resume: welcome.resume });
    expect(again.welcome.session).toBe(welcome.session);
    expect(await again.client.step({ tick: 1, time: 0 })).toMatchObject({ actions: [[5, 1, 'say', { word: 'hi', x: null }]] });
    await again.client.close();
  });
});

describe('slow readers', () => {
  test('decisions are merged while the reader lags, then it is told goodbye (slow consumer)', async () => {
    // Its own server: a reader that does not read cannot answer pings either.
    const slow = await start({ trees: fixture.trees, tuning: { softBufferBytes: 64 * 1024, hardBufferBytes: 1024 * 1024 } });
    const { client } = await RawClient.hello(slow.wsUrl, { hz: 100 });
    const word = 'w'.repeat(2000);
    const agents = Array.from({ length: 100 }, (_, i) => ({ id: i, tree: 'talker', bb: { word } }));
    await client.request({ t: 'spawn', agents }, 'spawned');
    // Stop reading: the kernel buffers fill, then the server's.
    client.socket.pause();
    const metrics = async (): Promise<string> => (await http(slow.base, 'GET', '/metrics')).body as string;
    await expect.poll(async () => /canopy_goodbyes_total\{reason="slow consumer"\} 1/.test(await metrics()), { timeout: 10_000, interval: 100 }).toBe(true);
    expect(await metrics()).toMatch(/canopy_decisions_merged_total [1-9]/);
    client.socket.resume();
    expect(await client.next('goodbye', undefined, 10_000)).toEqual({ t: 'goodbye', reason: 'slow consumer' });
    await client.closed;
    await slow.close();
  });
});

describe('API keys', () => {
  test('the upgrade without a valid key is answered 401 and no socket opens; with one it works', async () => {
    const secured = await start({ trees: fixture.trees, apiKeys: ['k1', 'k2'] });
    try {
      await expect(RawClient.open(secured.wsUrl)).rejects.toMatchObject({ status: 401 });
      await expect(RawClient.open(secured.wsUrl, { headers: { authorization: 'Bearer nope' } })).rejects.toMatchObject({ status: 401 });
      const viaHeader = await RawClient.hello(secured.wsUrl, {}, { headers: { authorization: 'Bearer k2' } });
      const viaQuery = await RawClient.hello(`${secured.wsUrl}?key=k1`);
      expect(viaHeader.welcome.t).toBe('welcome');
      expect(viaQuery.welcome.t).toBe('welcome');
      await viaHeader.client.close();
      await viaQuery.client.close();

      expect((await http(secured.base, 'GET', '/v1/trees')).status).toBe(401);
      expect((await http(secured.base, 'GET', '/v1/trees')).body).toMatchObject({ code: 'E_UNAUTHORIZED' });
      expect((await http(secured.base, 'GET', '/v1/trees', undefined, { authorization: 'Bearer k1' })).status).toBe(200);
      expect((await http(secured.base, 'POST', '/v1/sessions?key=k2', {})).status).toBe(201);
      // Probes and scrapes stay open.
      for (const path of ['/healthz', '/readyz', '/metrics']) expect((await http(secured.base, 'GET', path)).status).toBe(200);
    } finally {
      await secured.close();
    }
  });
});
