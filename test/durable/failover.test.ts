// Durable sessions across instances (docs/durability.md, "Across instances"): real Canopy processes, a real
// redis-server, the TypeScript client with a list of URLs. A lockstep session of a few thousand agents on A; A is
// killed (SIGKILL); the client resumes on B (another worker count), which adopts the session from Redis once A's
// lease expires; then B is drained (SIGTERM) and the session migrates to C. Every tick's decisions equal those of a
// reference run of the same inputs on one instance without any failure.

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, onTestFailed, test } from 'vitest';
import { CanopyClient } from '../../src/client/index.js';
import { sessionKeys } from '../../src/durable/store.js';
import { RawClient, start, writeFixture } from '../service/harness.js';
import { FIELDS, Game, TREES } from './game.js';
import { metric, startInstance, startRedis, type Instance } from './procs.js';

const AGENTS = 2000;
const KILL_AFTER = 15;
const DRAIN_AFTER = 30;
const TICKS = 45;

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let redis: Awaited<ReturnType<typeof startRedis>>;
const instances: Instance[] = [];

beforeAll(async () => {
  fixture = await writeFixture(TREES);
  redis = await startRedis();
});

afterAll(async () => {
  for (const i of instances) i.proc.kill('SIGKILL');
  await Promise.all(instances.map((i) => i.proc.exit));
  await redis?.stop();
  await fixture?.remove();
});

/** The reference: the same game on one in-process instance, nothing failing. */
async function reference(): Promise<Game> {
  const running = await start({ trees: fixture.trees, workers: 2 });
  try {
    const client = await CanopyClient.connect(running.wsUrl, { mode: 'lockstep', fields: FIELDS, reconnect: false });
    const game = new Game(AGENTS);
    await game.spawn(client);
    for (let tick = 1; tick <= TICKS; tick++) await game.tick(client, tick);
    await client.bye();
    return game;
  } finally {
    await running.close();
  }
}

function env(workers: number): Record<string, string> {
  return { CANOPY_TREES: fixture.trees, CANOPY_WORKERS: String(workers), CANOPY_REDIS_URL: redis.url, CANOPY_REDIS_LEASE_MS: '1000', CANOPY_SHUTDOWN_MS: '20000' };
}

describe('durable sessions: two instances and Redis', () => {
  test('SIGKILL of the owner: the client resumes on another instance, which adopts the session exactly; a drain migrates it again', async () => {
    onTestFailed(() => {
      for (const i of instances) console.error(`--- instance ${i.port}\n${i.proc.output().split('\n').filter((l) => !l.includes('"level":30') || /durable|session|goodbye|drain/.test(l)).slice(-30).join('\n')}`);
    });
    const expected = await reference();
    const [a, b, c] = await Promise.all([startInstance(env(2)), startInstance(env(1)), startInstance(env(2))]);
    instances.push(a!, b!, c!);
    const client = await CanopyClient.connect([a!.wsUrl, b!.wsUrl, c!.wsUrl], {
      mode: 'lockstep',
      fields: FIELDS,
      reconnect: { minDelayMs: 50, maxDelayMs: 500 },
      requestTimeoutMs: 30_000,
    });
    const reconnects: Array<{ session: string; resumed: boolean }> = [];
    client.on('reconnect', (r) => reconnects.push(r));
    const session = client.session;
    const game = new Game(AGENTS);
    await game.spawn(client);
    for (let tick = 1; tick <= KILL_AFTER; tick++) await game.tick(client, tick);
    const openBeforeCrash = new Set(game.open);
    expect(openBeforeCrash.size).toBeGreaterThan(0);

    a!.proc.kill('SIGKILL');
    await a!.proc.exit;
    for (let tick = KILL_AFTER + 1; tick <= DRAIN_AFTER; tick++) await game.tick(client, tick);
    expect(reconnects).toEqual([{ session, resumed: true, attempts: expect.any(Number) }]);
    expect(await metric(b!.base, 'canopy_durable_adoptions_total{how="adopted"}')).toBe(1);
    // Walks issued on A were completed by results B accepted: they are no longer open, and B's decisions match.
    expect([...openBeforeCrash].filter((k) => game.open.has(k)).length).toBeLessThan(openBeforeCrash.size);

    b!.proc.kill('SIGTERM');
    for (let tick = DRAIN_AFTER + 1; tick <= TICKS; tick++) await game.tick(client, tick);
    expect(await b!.proc.exit).toBe(0);
    expect(reconnects.map((r) => r.resumed)).toEqual([true, true]);
    expect(client.session).toBe(session);
    // B released the session when it drained: C took it over as handed over, not after a lease expiry.
    expect(await metric(c!.base, 'canopy_durable_adoptions_total{how="handed over"}')).toBe(1);

    expect(expected.decisions.size).toBe(TICKS);
    for (let tick = 1; tick <= TICKS; tick++) expect(game.decisions.get(tick), `decisions of tick ${tick}`).toEqual(expected.decisions.get(tick));
    await client.bye();
  }, 180_000);

  test('hand-over: a client presenting the token to another instance while the owner lives gets the session, exactly', async () => {
    onTestFailed(() => {
      for (const i of instances) console.error(`--- instance ${i.port}\n${i.proc.output().split('\n').slice(-20).join('\n')}`);
    });
    const expected = await reference();
    const [a, b] = await Promise.all([startInstance(env(2)), startInstance(env(2))]);
    instances.push(a!, b!);
    const first = await CanopyClient.connect(a!.wsUrl, { mode: 'lockstep', fields: FIELDS, reconnect: false });
    const goodbye = new Promise((resolve) => first.on('goodbye', resolve));
    const game = new Game(AGENTS);
    await game.spawn(first);
    for (let tick = 1; tick <= KILL_AFTER; tick++) await game.tick(first, tick);
    // A second connection (the game server restarted, or a load balancer sent it elsewhere) resumes on B.
    const second = await CanopyClient.connect(b!.wsUrl, { mode: 'lockstep', fields: FIELDS, resume: first.resumeToken, reconnect: false });
    expect(second.session).toBe(first.session);
    expect(second.welcome.tick).toBe(KILL_AFTER);
    expect(await goodbye).toEqual({ reason: 'session resumed by another connection', retryAfterMs: undefined });
    for (let tick = KILL_AFTER + 1; tick <= TICKS; tick++) await game.tick(second, tick);
    expect(await metric(b!.base, 'canopy_durable_adoptions_total{how="handed over"}')).toBe(1);
    expect(await metric(a!.base, 'canopy_sessions{mode="lockstep",transport="ws",connected="true"}')).toBeUndefined();
    for (let tick = 1; tick <= TICKS; tick++) expect(game.decisions.get(tick), `decisions of tick ${tick}`).toEqual(expected.decisions.get(tick));
    await second.bye();
  }, 120_000);

  test('a client that leaves while an instance waits for its session\'s lease leaves nothing behind: it resumes anywhere later, exactly', async () => {
    const a = await startInstance(env(1));
    instances.push(a);
    const c = await start({ trees: fixture.trees, workers: 1, redisUrl: redis.url, redisLeaseMs: 1000 });
    const admin = new Redis(redis.url);
    try {
      const first = await CanopyClient.connect(a.wsUrl, { mode: 'lockstep', fields: FIELDS, reconnect: false });
      const game = new Game(100);
      await game.spawn(first);
      for (let tick = 1; tick <= 3; tick++) await game.tick(first, tick);
      const owner = sessionKeys(first.session).owner;
      const ownerA = await admin.get(owner);
      expect(ownerA).not.toBeNull();
      a.proc.kill('SIGKILL');
      await a.proc.exit;

      // A resume on C while A's lease lives: C waits for it. The client gives up (a connect timeout, say) and leaves.
      const raw = await RawClient.open(c.wsUrl);
      raw.send({ t: 'hello', v: 1, mode: 'lockstep', fields: FIELDS, resume: first.resumeToken });
      raw.socket.close();
      await raw.closed;
      // A's lease runs out. Nobody waits for the session any more, so nobody takes it.
      while ((await admin.get(owner)) === ownerA) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await admin.get(owner)).toBeNull();

      // The client comes back with the token it holds: the session, exactly where it was.
      const second = await CanopyClient.connect(c.wsUrl, { mode: 'lockstep', fields: FIELDS, resume: first.resumeToken, reconnect: false });
      expect(second.session).toBe(first.session);
      expect(second.welcome.tick).toBe(3);
      await game.tick(second, 4);
      expect(await metric(c.base, 'canopy_durable_adoptions_total{how="adopted"}')).toBe(1);
      await second.bye();
    } finally {
      admin.disconnect();
      await c.close();
    }
  }, 60_000);

  test('an instance whose trees differ from the checkpoint\'s cannot adopt: the client gets a new session (resumed: false)', async () => {
    const other = await writeFixture({ mixed: { ...TREES.mixed, blackboard: { mood: 2, extra: 0 } } });
    try {
      const a = await startInstance(env(1));
      const b = await startInstance({ ...env(1), CANOPY_TREES: other.trees });
      instances.push(a, b);
      const client = await CanopyClient.connect([a.wsUrl, b.wsUrl], { mode: 'lockstep', fields: FIELDS, reconnect: { minDelayMs: 50, maxDelayMs: 500 } });
      const game = new Game(100);
      await game.spawn(client);
      for (let tick = 1; tick <= 3; tick++) await game.tick(client, tick);
      const reconnected = client.next('reconnect');
      a.proc.kill('SIGKILL');
      expect(await reconnected).toMatchObject({ resumed: false });
      await b.proc.waitFor(/a stored session cannot be restored here; it is dropped/);
      expect(await metric(b.base, 'canopy_agents')).toBe(0);
      await client.bye();
    } finally {
      await other.remove();
    }
  }, 60_000);

  test('fixed mode: a drained session continues on another instance, its clock numbering and agents as they were', async () => {
    const [a, b] = await Promise.all([startInstance(env(1)), startInstance(env(1))]);
    instances.push(a!, b!);
    const client = await CanopyClient.connect([a!.wsUrl, b!.wsUrl], { mode: 'fixed', hz: 50, fields: FIELDS, reconnect: { minDelayMs: 50, maxDelayMs: 500 } });
    const ticks: number[] = [];
    client.on('decisions', (d) => ticks.push(d.tick));
    await new Game(200).spawn(client);
    await client.next('decisions');
    const reconnected = client.next('reconnect');
    a!.proc.kill('SIGTERM');
    expect(await reconnected).toMatchObject({ session: client.session, resumed: true });
    expect(await a!.proc.exit).toBe(0);
    const before = ticks.length;
    const after = await client.next('decisions');
    expect(ticks.length).toBeGreaterThan(before);
    // The service tick goes on from where A left it (not from 1): the clock was restored with the session.
    expect(after.tick).toBeGreaterThan(ticks[before - 1]!);
    expect(await metric(b!.base, 'canopy_agents')).toBe(200);
    await client.bye();
  }, 60_000);
});
