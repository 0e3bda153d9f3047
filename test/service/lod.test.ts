// AI level of detail (docs/protocol.md, `every` and `lod`): agents ticked every N session ticks, spread evenly,
// with exact tree time; results wait for the agent's next tick; the same decisions on any number of workers,
// after a worker crash, and in a replay of the recorded session; bad input gets a precise code and field path.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashWorkerForTests, createAgentPool, type AgentPool, type Decisions } from '../../src/service/pool/index.js';
import { lodPhase } from '../../src/service/pool/lod.js';
import { parseClientMessage } from '../../src/protocol/index.js';
import { verifyRecording } from '../../src/record/index.js';
import type { AgentId } from '../../src/bt/index.js';
import { http, RawClient, start, writeFixture, type Frame, type Running } from './harness.js';

const TREES = {
  // Every tick of the agent: one instant action carrying the tree time and dt it saw.
  probe: { root: { type: 'action', action: 'probe', args: { time: 'time', dt: 'dt' }, instant: true } },
  // A long action waiting on the game's result.
  walker: { root: { type: 'action', action: 'walk' } },
  // Random choices, waits and results: what recovery and replay must reproduce.
  mixed: {
    blackboard: { mood: 1 },
    root: {
      type: 'random',
      children: [
        { type: 'action', action: 'shout', args: { x: 'self.x', mood: 'bb.mood', r: 'rand()', dt: 'dt' }, instant: true },
        { type: 'action', action: 'walk', args: { x: 'self.x' } },
        { type: 'sequence', children: [{ type: 'wait', seconds: [0.1, 0.4] }, { type: 'action', action: 'ring', args: { r: 'rand()' }, instant: true }] },
      ],
    },
  },
};

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture(TREES);
});
afterAll(async () => {
  await fixture.remove();
});

const DT = 0.05;

/** Ticks `pool`'s session `s` once at tick `tick` (tree time tick × DT). */
function tick(pool: AgentPool, t: number): Promise<Decisions> {
  return pool.tick('s', t, t * DT, DT, t);
}

/** The probe actions of a tick: agent id → { time, dt }. */
function probes(d: Decisions): Map<AgentId, { time: number; dt: number }> {
  return new Map(d.actions.filter((a) => a[2] === 'probe').map((a) => [a[0], a[3] as { time: number; dt: number }]));
}

describe('level of detail in the pool', () => {
  it('spreads agents with the same interval evenly over its ticks; each sees the time since its own last tick', async () => {
    const pool = await createAgentPool({ trees: fixture.trees, workers: 0 });
    pool.createSession('s', { fields: null, maxAgents: 10_000 });
    const ids = Array.from({ length: 2000 }, (_, i) => i);
    // Dense ids, and ids that are all multiples of 4 (a game's handles with tag bits): both must spread.
    expect(pool.spawn('s', ids.map((i) => ({ id: i % 2 === 0 ? i : i * 4_000_000, tree: 'probe', every: 4 }))).errors).toEqual([]);
    const seen = new Map<AgentId, number[]>();
    const perTick: number[] = [];
    for (let t = 1; t <= 12; t++) {
      const p = probes(await tick(pool, t));
      perTick.push(p.size);
      for (const [id, { time, dt }] of p) {
        const ticks = seen.get(id) ?? [];
        // First tick: the tick's own dt; then exactly the time since the agent's own last tick (4 ticks).
        expect(dt).toBe(ticks.length === 0 ? DT : t * DT - ticks.at(-1)! * DT);
        expect(time).toBe(t * DT);
        ticks.push(t);
        seen.set(id, ticks);
      }
    }
    // Every agent ticked exactly every 4th tick, 3 times in 12 ticks.
    expect(seen.size).toBe(2000);
    for (const ticks of seen.values()) expect([ticks[1]! - ticks[0]!, ticks[2]! - ticks[1]!, ticks.length]).toEqual([4, 4, 3]);
    // About a quarter per tick (a hash of the id: within 10 % of 500), the same every 4 ticks.
    for (const n of perTick) expect(Math.abs(n - 500)).toBeLessThan(50);
    expect(perTick.slice(4, 8)).toEqual(perTick.slice(0, 4));
    await pool.close();
  });

  it('a lod change takes effect at the next tick; results for an agent between its ticks wait for its next tick', async () => {
    const pool = await createAgentPool({ trees: fixture.trees, workers: 0 });
    pool.createSession('s', { fields: null, maxAgents: 100 });
    pool.spawn('s', [
      { id: 'far', tree: 'probe', every: 20 },
      { id: 'near', tree: 'probe' },
      { id: 'w', tree: 'walker', every: 3 },
    ]);
    const phase = lodPhase('far', 20);
    const timeline: Array<{ far: boolean; near: boolean }> = [];
    let walk: [AgentId, number] | null = null;
    let done: number | null = null;
    const walkTicks: number[] = [];
    let changed: unknown = null;
    for (let t = 1; t <= 12; t++) {
      if (t === 4) changed = pool.lod('s', [['far', 1], ['near', 5]]);
      const d = await tick(pool, t);
      const p = probes(d);
      timeline.push({ far: p.has('far'), near: p.has('near') });
      const a = d.actions.find((x) => x[0] === 'w');
      if (a !== undefined) {
        walk = [a[0], a[1]];
        walkTicks.push(t);
      }
      if (d.done.some((x) => x[0] === 'w')) done = t;
      // The result arrives on the tick after the walk started: the walker is between its ticks then.
      if (a !== undefined && walk !== null && walk[1] === 1) pool.results('s', [['w', 1, 'success']]);
    }
    expect(changed).toEqual([]);
    // 'far' (every 20, phase < 20) ticked in ticks 1-3 only if its phase said so; from tick 4 on, every tick.
    expect(timeline.slice(0, 3).map((x) => x.far)).toEqual([0, 1, 2].map((k) => k === phase));
    expect(timeline.slice(3).every((x) => x.far)).toBe(true);
    // 'near' ticked every tick until tick 3, then every 5th tick from its phase under 5.
    expect(timeline.slice(0, 3).every((x) => x.near)).toBe(true);
    const nearTicks = timeline.map((x, i) => (x.near ? i + 1 : 0)).filter((t) => t > 3);
    expect(nearTicks[0]).toBe(4 + lodPhase('near', 5));
    for (let k = 1; k < nearTicks.length; k++) expect(nearTicks[k]! - nearTicks[k - 1]!).toBe(5);
    // The walker ticks every 3rd tick: the result sent right after its first tick is read at its next one.
    expect(walkTicks.length).toBeGreaterThan(0);
    expect(done).toBe(walkTicks[0]! + 3);
    await pool.close();
  });

  it('a session that never used level of detail: the first change keeps dt exact (time since the last tick)', async () => {
    const pool = await createAgentPool({ trees: fixture.trees, workers: 0 });
    pool.createSession('s', { fields: null, maxAgents: 100 });
    pool.spawn('s', [{ id: 'a', tree: 'probe' }, { id: 'b', tree: 'probe' }]);
    const seen: Array<[number, number]> = [];
    for (let t = 1; t <= 12; t++) {
      if (t === 4) pool.lod('s', [['a', 4]]);
      // Spawned after the change, every tick: its first tick reads the tick's own dt.
      if (t === 6) pool.spawn('s', [{ id: 'c', tree: 'probe' }]);
      const p = probes(await tick(pool, t));
      const a = p.get('a');
      if (a !== undefined) seen.push([t, a.dt]);
      if (t === 6) seen.push([-6, p.get('c')!.dt]);
    }
    const first = 4 + lodPhase('a', 4);
    expect(seen.filter(([t]) => t >= 4 || t === -6)).toEqual([
      [first, first * DT - 3 * DT],
      [-6, DT],
      ...[first + 4, first + 8].filter((t) => t <= 12).map((t) => [t, t * DT - (t - 4) * DT]),
    ].toSorted((x, y) => (x[0] === -6 ? 6.5 : x[0]!) - (y[0] === -6 ? 6.5 : y[0]!)));
    await pool.close();
  });

  it('refuses bad intervals and unknown agents with precise codes; the good entries apply', async () => {
    const pool = await createAgentPool({ trees: fixture.trees, workers: 0 });
    pool.createSession('s', { fields: null, maxAgents: 100 });
    const spawned = pool.spawn('s', [
      { id: 1, tree: 'probe', every: 0 },
      { id: 2, tree: 'probe', every: 2.5 },
      { id: 3, tree: 'probe', every: 2 },
    ]);
    expect(spawned.ids).toEqual([3]);
    expect(spawned.errors.map((e) => [e.id, e.code, e.message.split(':')[0]])).toEqual([
      [1, 'E_BAD_FIELD', 'every'],
      [2, 'E_BAD_FIELD', 'every'],
    ]);
    const errors = pool.lod('s', [
      [404, 2],
      [3, -1],
      [3, 1],
    ]);
    expect(errors.map((e) => [e.id, e.code])).toEqual([
      [404, 'E_UNKNOWN_AGENT'],
      [3, 'E_BAD_FIELD'],
    ]);
    // [3, 1] applied: agent 3 ticks every tick from now on.
    for (let t = 1; t <= 3; t++) expect(probes(await tick(pool, t)).has(3)).toBe(true);
    await pool.close();
  });

  it('the protocol names the field at fault: spawn.agents[i].every and lod.agents[i][1]', () => {
    const spawn = parseClientMessage({ t: 'spawn', agents: [{ id: 1, tree: 'probe', every: 0 }, { id: 2, tree: 'probe', every: 3 }, { id: 3, tree: 'probe', every: 'x' }] });
    expect(spawn.ok).toBe(true);
    if (!spawn.ok || spawn.msg.t !== 'spawn') return;
    expect(spawn.msg.agents).toEqual([{ id: 2, tree: 'probe', every: 3 }]);
    expect(spawn.errors.map((e) => [e.id, e.code, e.message.slice(0, 26)])).toEqual([
      [1, 'E_BAD_FIELD', 'spawn.agents[0].every: exp'],
      [3, 'E_BAD_FIELD', 'spawn.agents[2].every: exp'],
    ]);
    const lod = parseClientMessage({ t: 'lod', id: 7, agents: [[1, 4], [2, 1.5], [3], [{}, 2], [4, 1_000_001]] });
    expect(lod.ok).toBe(true);
    if (!lod.ok || lod.msg.t !== 'lod') return;
    expect(lod.msg.agents).toEqual([[1, 4]]);
    expect(lod.errors.map((e) => [e.code, e.message.split(':')[0]])).toEqual([
      ['E_BAD_FIELD', 'lod.agents[1][1]'],
      ['E_BAD_FIELD', 'lod.agents[2]'],
      ['E_BAD_FIELD', 'lod.agents[3][0]'],
      ['E_BAD_FIELD', 'lod.agents[4][1]'],
    ]);
    const notList = parseClientMessage({ t: 'lod', agents: 5 });
    expect(notList).toMatchObject({ ok: false, code: 'E_BAD_FIELD', field: 'lod.agents' });
  });
});

/** A scripted session with level of detail: spawns with intervals, lod changes, results, despawns, a late spawn. */
async function script(first: AgentPool, crashAt: Record<number, number> = {}, moveAt?: { tick: number; to: () => Promise<AgentPool> }): Promise<Decisions[]> {
  let pool = first;
  pool.createSession('s', { fields: ['x'], maxAgents: 1000 });
  const every = (i: number): number => (i % 10 === 0 ? 1 : i % 10 < 4 ? 4 : 20);
  pool.spawn('s', Array.from({ length: 60 }, (_, i) => ({ id: i, tree: 'mixed', seed: i * 7, every: every(i) })));
  const out: Decisions[] = [];
  let results: Array<[AgentId, number, 'success' | 'failure']> = [];
  for (let t = 1; t <= 40; t++) {
    if (moveAt !== undefined && t === moveAt.tick) {
      // Durable sessions: the session exported here, imported by another pool, which goes on.
      const exported = await pool.exportSession('s');
      pool = await moveAt.to();
      pool.importSession('s', { fields: ['x'], maxAgents: 1000 }, exported);
    }
    if (t === 5) pool.lod('s', [[1, 1], [2, 20], [11, 2]]);
    if (t === 9) pool.despawn('s', [4, 5]);
    if (t === 11) pool.spawn('s', [{ id: 70, tree: 'mixed', seed: 1, every: 3 }]);
    if (t === 17) pool.lod('s', Array.from({ length: 20 }, (_, i) => [i + 20, 1 + (i % 5)] as [number, number]));
    pool.observe('s', Array.from({ length: 60 }, (_, i) => [i, t * 10 + i]), false);
    pool.results('s', results);
    const crash = crashAt[t];
    const replaced = crash === undefined ? null : crashWorkerForTests(pool, crash);
    const d = await tick(pool, t);
    await replaced;
    out.push(d);
    results = d.actions.filter((a) => a[2] === 'walk' && a[1] % 3 !== 0).map((a) => [a[0], a[1], a[1] % 2 === 0 ? 'success' : 'failure']);
  }
  return out;
}

/** Decisions with each list sorted: the order between agents depends on workers (not part of the contract). */
function canonical(ds: Decisions[]): unknown[] {
  const sort = <T>(list: T[]): T[] => list.map((x) => JSON.stringify(x)).toSorted().map((x) => JSON.parse(x) as T);
  return ds.map((d) => ({ tick: d.tick, actions: sort(d.actions), cancels: sort(d.cancels), done: sort(d.done), errors: sort(d.errors) }));
}

describe('level of detail: determinism, workers, crash recovery', () => {
  // Four worker restarts (each loads the trees again): allow for a busy machine.
  it('gives the same decisions inline, on 2 workers, after worker crashes and after an export and import (interval and phase carried)', { timeout: 60_000 }, async () => {
    const inline = await createAgentPool({ trees: fixture.trees, workers: 0 });
    const reference = await script(inline);
    await inline.close();
    expect(reference.flatMap((d) => d.errors)).toEqual([]);
    expect(reference.reduce((n, d) => n + d.actions.length, 0)).toBeGreaterThan(150);
    const again = await createAgentPool({ trees: fixture.trees, workers: 0 });
    expect(await script(again)).toEqual(reference);
    await again.close();
    // Exported after tick 12 (intervals, countdowns and last tick times included), imported by a pool on 2 workers.
    let target: AgentPool | null = null;
    const from = await createAgentPool({ trees: fixture.trees, workers: 0 });
    const moved = await script(from, {}, {
      tick: 13,
      to: async () => {
        target = await createAgentPool({ trees: fixture.trees, workers: 2, sessionAffinity: 0 });
        await target.ready();
        return target;
      },
    });
    await from.close();
    await (target as AgentPool | null)?.close();
    expect(canonical(moved)).toEqual(canonical(reference));
    // checkpointMs 200: a checkpoint every 4 ticks; crashes before the first, right after one, between two.
    // Spread: each crash hits agents of the session.
    const pool = await createAgentPool({ trees: fixture.trees, workers: 2, checkpointMs: 200, checkpointTicks: 1, sessionAffinity: 0 });
    try {
      await pool.ready();
      const recovered = await script(pool, { 3: 0, 9: 1, 19: 0, 30: 1 });
      expect(canonical(recovered)).toEqual(canonical(reference));
    } finally {
      await pool.close();
    }
  });
});

describe('level of detail over the wire, recorded and replayed', () => {
  let running: Running;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'canopy-lod-'));
    running = await start({ trees: fixture.trees, workers: 2, recordDir: join(dir, 'recordings') });
  });
  afterAll(async () => {
    await running.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('lod messages apply at the next tick, errors name the entry, and the recording replays byte for byte', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x'], record: true });
    const spawned = await client.request({ t: 'spawn', agents: [...Array.from({ length: 40 }, (_, i) => ({ id: i, tree: 'mixed', every: 1 + (i % 4) * 3 })), { id: 99, tree: 'probe', every: 0 }] }, 'spawned');
    expect(spawned.ids).toHaveLength(40);
    expect(spawned.errors).toEqual([{ id: 99, code: 'E_BAD_FIELD', message: expect.stringMatching(/^spawn\.agents\[40\]\.every: /) as unknown }]);
    await client.request({ t: 'spawn', agents: [{ id: 'p', tree: 'probe', every: 50 }] }, 'spawned');
    const frames: Frame[] = [];
    let owed: unknown[] = [];
    const refused: Frame[] = [];
    const probeTicks: number[] = [];
    for (let t = 1; t <= 30; t++) {
      if (t === 10) {
        client.send({ t: 'lod', id: 5, agents: [['p', 1], [404, 2], [3, 0]] });
        refused.push(await client.next('error'), await client.next('error'));
      }
      const d = await client.step({ tick: t, time: t * 0.1, agents: Array.from({ length: 40 }, (_, i) => [i, t + i]), results: owed });
      frames.push(d);
      owed = ((d.actions as Array<[AgentId, number, string]> | undefined) ?? []).filter((a) => a[2] === 'walk').map((a) => [a[0], a[1], 'success']);
      // From tick 10 on, the probe ticks every tick: its action is in every frame.
      const probe = ((d.actions as Array<[AgentId, number, string, { dt: number }]> | undefined) ?? []).find((a) => a[0] === 'p');
      if (probe !== undefined) probeTicks.push(t);
    }
    expect(refused.map((e) => [e.code, e.re])).toEqual([
      ['E_BAD_FIELD', 5],
      ['E_UNKNOWN_AGENT', 5],
    ]);
    expect(refused[0]!.message).toMatch(/^lod\.agents\[2\]\[1\]: /);
    expect(refused[1]!.message).toMatch(/404/);
    // From tick 10 on, the probe (every 50 before) ticks every tick.
    expect(probeTicks.filter((t) => t >= 10)).toEqual(Array.from({ length: 21 }, (_, i) => 10 + i));
    const inspected = await http(running.base, 'GET', `/v1/sessions/${welcome.session as string}/agents/3`);
    expect((inspected.body as { every: number }).every).toBe(10);
    const res = await http(running.base, 'DELETE', `/v1/sessions/${welcome.session as string}/recording`);
    const file = join(dir, 'recordings', `${(res.body as { recording: string }).recording}.p001.canopyrec`);
    await client.close();
    expect(await verifyRecording(file)).toMatchObject({ identical: true, frames: 30 });
    expect(await verifyRecording(file, { workers: 2 })).toMatchObject({ identical: true, frames: 30 });
  });
});
