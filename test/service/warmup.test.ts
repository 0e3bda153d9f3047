// The start-up warm-up (src/service/warmup.ts): agents of the service's own, spawned, ticked and freed before the
// service says it is ready. Nothing of it may remain or be seen by a game server.

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAgentPool, type AgentPool } from '../../src/service/pool/index.js';
import { TAIL_AGENTS, TAIL_TICKS, WarmGame, WARMUP_TICKS, warmUp, warmupFields } from '../../src/service/warmup.js';
import { LIMITS } from '../../src/protocol/index.js';
import { TreeLibrary } from '../../src/bt/index.js';
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

  test('plays a game with the fields the trees read, so that every branch of the guard tree runs before a game server does', async () => {
    const loaded = await TreeLibrary.loadFolder(TREES);
    if (!loaded.ok) throw new Error('trees/ does not load');
    const fields = warmupFields([loaded.library.get('guard')!.observed]);
    const o = { agents: 300, rounds: 1, ticks: WARMUP_TICKS, maxFrameBytes: LIMITS.defaultMaxFrameBytes };
    const played = await warmUp(pool, ['guard'], { ...o, fields });
    // Fleeing, aiming and shooting, chasing and patrolling: each branch was ticked (and its actions answered).
    expect(played.actions).toEqual(['aim', 'flee', 'moveTo', 'shoot']);
    expect(played.results).toBeGreaterThan(300);
    expect(played.stopped).toBe(0);
    // Observations without those fields read null: the guard only patrols, and the rest of its code waits for a game.
    const blind = await warmUp(pool, ['guard'], o);
    expect(blind.actions).toEqual(['moveTo']);
    expect(pool.agentCount()).toBe(0);
  });

  test('keeps its snapshots within the frame limit, with as many fields as it takes', async () => {
    const wide = warmupFields([{ self: Array.from({ length: 40 }, (_, i) => `f${i}`), world: [] }]);
    expect(wide.self).toHaveLength(33); // its own field and the first 32
    const small = await warmUp(pool, ['guard'], { agents: 300, rounds: 1, ticks: 12, maxFrameBytes: 64 * 1024, fields: wide });
    expect(small.error).toBeUndefined();
    expect(small).toMatchObject({ ticks: 12 });
    expect(small.agents).toBeGreaterThan(100);
    expect(small.agents).toBeLessThan(300);
    expect(pool.agentCount()).toBe(0);
  });

  test('ticks nothing when told so (plugins loaded), and does nothing with 0 agents', async () => {
    expect(await warmUp(pool, ['guard'], { agents: 100, rounds: 1, ticks: 0, maxFrameBytes: LIMITS.defaultMaxFrameBytes })).toMatchObject({ agents: 100, ticks: 0 });
    expect(await warmUp(pool, ['guard'], { agents: 0, rounds: 3, ticks: 5, maxFrameBytes: LIMITS.defaultMaxFrameBytes })).toMatchObject({ agents: 0, ticks: 0 });
    expect(pool.agentCount()).toBe(0);
  });
});

describe("the warm-up's game", () => {
  test('gives values to the fields the trees read, its own field first, and to the world fields', () => {
    const fields = warmupFields([
      { self: ['hp', 'pos'], world: ['player'] },
      { self: ['pos', 'lastHit'], world: ['cover', 'player'] },
    ]);
    // Its own first field keeps its observation objects' hidden class apart from a game's that declares hp, pos, lastHit.
    expect(fields).toEqual({ self: ['canopyWarmup', 'hp', 'pos', 'lastHit'], world: ['player', 'cover'] });
    expect(warmupFields([{ self: [], world: [] }]).self).toEqual(['warmA', 'warmB', 'warmC', 'warmD']);
  });

  test('varies each value, keeps each agent to one kind per field, moves time on in steps, and answers actions later', () => {
    const game = new WarmGame({ self: ['canopyWarmup', 'hp', 'pos'], world: ['player'] }, [1, 'b', 3]);
    const kinds = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'point' : typeof v);
    const seen = new Map<string, Set<string>>();
    const values = new Set<string>();
    let time = 0;
    let answered = 0;
    for (let t = 1; t <= 30; t++) {
      const snapshot = game.snapshot(t) as { tick: number; time: number; agents: unknown[][]; world: Record<string, unknown>; results?: unknown[][] };
      expect(snapshot.tick).toBe(t);
      expect(snapshot.time).toBeCloseTo(time + game.dt(t), 9);
      time = snapshot.time;
      expect(Object.keys(snapshot.world)).toEqual(['player']);
      for (const row of snapshot.agents) {
        expect(row).toHaveLength(4);
        for (let k = 1; k < row.length; k++) {
          const key = `${String(row[0])}/${k}`;
          if (!seen.has(key)) seen.set(key, new Set());
          seen.get(key)!.add(kinds(row[k]));
          values.add(`${key}=${JSON.stringify(row[k])}`);
        }
      }
      for (const r of snapshot.results ?? []) {
        expect(r[2] === 'success' || r[2] === 'failure').toBe(true);
        answered++;
      }
      game.decided(t, { t: 'decisions', actions: [[1, t, 'moveTo', {}], ['b', t, 'aim', {}]], errors: t === 5 ? [[3, 'E_PLUGIN', 'x']] : [] });
    }
    for (const kindsOf of seen.values()) expect(kindsOf.size).toBe(1);
    // More values than fields: each changes over the ticks.
    expect(values.size).toBeGreaterThan(3 * seen.size);
    expect(new Set([1, 2, 3, 4, 5, 6].map((t) => game.dt(t))).size).toBeGreaterThan(1);
    expect(answered).toBeGreaterThan(20);
    expect(game.results).toBe(answered);
    expect([...game.actions].toSorted()).toEqual(['aim', 'moveTo']);
    expect(game.stopped).toBe(1);
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
    // A first round long enough for the trees' branches, then two short ones; the world's fields too (the squad fires at world.enemies).
    expect(running.server.warmup.pool).toMatchObject({ agents: 600, ticks: WARMUP_TICKS + 10, stopped: 0 });
    expect(running.server.warmup.pool?.actions).toEqual(expect.arrayContaining(['aim', 'fire', 'flee', 'moveTo', 'shoot']));
    expect(running.server.warmup.pool?.error).toBeUndefined();
    // Two rounds of 250 agents and 5 ticks, then the long play: a game server per worker, each TAIL_TICKS ticks of
    // TAIL_AGENTS agents (frames staged on their worker, as a game server's are).
    expect(running.server.warmup.session).toMatchObject({ agents: 500 + 2 * TAIL_AGENTS, ticks: 10 + 2 * TAIL_TICKS });
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
    expect(running.server.warmup.session).toMatchObject({ agents: 250 + TAIL_AGENTS, ticks: 10 + TAIL_TICKS });
    expect(running.server.warmup.session?.error).toBeUndefined();
    expect((await readdir(recordDir)).filter((f) => !f.startsWith('.'))).toEqual([]);
    // The warm-up's header means nothing once the service is ready: an upgrade without a key is still refused.
    await expect(RawClient.open(running.wsUrl, { headers: { 'x-canopy-warmup': 'anything' } })).rejects.toMatchObject({ status: 401 });
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' }, { headers: { authorization: 'Bearer k1' } });
    expect((await client.request({ t: 'spawn', agents: [{ id: 7, tree: 'guard' }] }, 'spawned')).ids).toEqual([7]);
    await client.close();
  });
});
