// The start-up warm-up (src/service/warmup.ts): agents of the service's own, spawned, ticked and freed before the
// service says it is ready. Nothing of it may remain or be seen by a game server.

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAgentPool, type AgentPool } from '../../src/service/pool/index.js';
import { warmUp } from '../../src/service/warmup.js';
import { LIMITS } from '../../src/protocol/index.js';
import { RawClient, http, start, type Running } from './harness.js';

const TREES = resolve('trees');

describe('start-up warm-up', () => {
  let pool: AgentPool;

  beforeAll(async () => {
    pool = await createAgentPool({ trees: TREES, workers: 2 });
    await pool.ready();
  });

  afterAll(async () => {
    await pool.close();
  });

  test('spawns, ticks and frees its agents on every tree, on the workers, and leaves nothing behind', async () => {
    const trees = ['guard', 'squad'];
    const done = await warmUp(pool, trees, { agents: 300, rounds: 2, ticks: 3, maxFrameBytes: LIMITS.defaultMaxFrameBytes });
    // One session per worker: sessions stay on one worker, and both workers' code is to be warm.
    expect(done).toMatchObject({ agents: 600, ticks: 6, workers: 2 });
    expect(done.error).toBeUndefined();
    expect(pool.agentCount()).toBe(0);
    expect(pool.workerStats().map((w) => w.agents)).toEqual([0, 0]);
  });

  test('ticks nothing when told so (plugins loaded), and does nothing with 0 agents', async () => {
    expect(await warmUp(pool, ['guard'], { agents: 100, rounds: 1, ticks: 0, maxFrameBytes: LIMITS.defaultMaxFrameBytes })).toMatchObject({ agents: 100, ticks: 0 });
    expect(await warmUp(pool, ['guard'], { agents: 0, rounds: 3, ticks: 5, maxFrameBytes: LIMITS.defaultMaxFrameBytes })).toMatchObject({ agents: 0, ticks: 0 });
    expect(pool.agentCount()).toBe(0);
  });
});

describe('a service that warms up', () => {
  let running: Running;

  beforeAll(async () => {
    running = await start({ trees: TREES, workers: 2, tuning: { warmupAgents: 200 } });
  });

  afterAll(async () => {
    await running.close();
  });

  test('is ready with no session and no agent of its own left, and serves sessions as usual', async () => {
    // Both parts ran in full: the pool's, then a game server's session through a loopback WebSocket.
    expect(running.server.warmup.pool).toMatchObject({ agents: 600, ticks: 15 });
    expect(running.server.warmup.pool?.error).toBeUndefined();
    expect(running.server.warmup.session).toMatchObject({ agents: 500, ticks: 10 });
    expect(running.server.warmup.session?.error).toBeUndefined();
    // No trace in the figures: no tick, byte or frame counted, no session open.
    const metrics = String((await http(running.base, 'GET', '/metrics')).body);
    expect(metrics).not.toMatch(/^canopy_(ticks|bytes_received|bytes_sent|decisions_frames)_total\{[^}]*\} [1-9]/m);
    expect(metrics).not.toMatch(/^canopy_sessions\{/m);
    const ready = await http(running.base, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ sessions: 0, agents: 0 });
    expect((await http(running.base, 'GET', '/v1/sessions')).body).toMatchObject({ sessions: [] });
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    const spawned = await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }] }, 'spawned');
    expect(spawned.ids).toEqual([1]);
    const d = await client.step({ tick: 1, time: 0 });
    expect(d.errors ?? []).toEqual([]);
    await client.close();
  });
});

describe('the session layer warm-up, with API keys and every session recorded', () => {
  let running: Running;
  let recordDir: string;

  beforeAll(async () => {
    recordDir = await mkdtemp(join(tmpdir(), 'canopy-warmup-'));
    running = await start({ trees: TREES, workers: 0, apiKeys: ['k1'], record: 'all', recordDir, tuning: { warmupAgents: 100 } });
  });

  afterAll(async () => {
    await running.close();
    await rm(recordDir, { recursive: true, force: true });
  });

  test('gets in with the first key, records nothing, and lets no other connection in with its header afterwards', async () => {
    expect(running.server.warmup.session).toMatchObject({ agents: 250, ticks: 10 });
    expect(running.server.warmup.session?.error).toBeUndefined();
    expect((await readdir(recordDir)).filter((f) => !f.startsWith('.'))).toEqual([]);
    // The warm-up's header means nothing once the service is ready: an upgrade without a key is still refused.
    await expect(RawClient.open(running.wsUrl, { headers: { 'x-canopy-warmup': 'anything' } })).rejects.toMatchObject({ status: 401 });
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' }, { headers: { authorization: 'Bearer k1' } });
    expect((await client.request({ t: 'spawn', agents: [{ id: 7, tree: 'guard' }] }, 'spawned')).ids).toEqual([7]);
    await client.close();
  });
});
