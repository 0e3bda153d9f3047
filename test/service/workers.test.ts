// The service on real worker threads (workers: 2): lockstep and fixed sessions at once, agents spread
// over both workers, a throwing plugin loaded in each worker, E_INTERNAL when a worker dies, and a worker stuck in a plugin loop replaced.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { crashWorkerForTests } from '../../src/service/pool/index.js';
import { RawClient, http, start, writeFixture, BOOM_PLUGIN, PLUGGED_TREE, TREES, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture({ ...TREES, plugged: PLUGGED_TREE }, { 'boom.mjs': BOOM_PLUGIN });
  // Sessions spread over both workers, so that each case crosses them (sessions kept on one: pool.test.ts).
  running = await start({ trees: fixture.trees, plugins: fixture.plugins, workers: 2, hz: 50, tuning: { sessionAffinity: 0 } });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

describe('worker threads', () => {
  test('readyz reports both workers; agents are spread over them', async () => {
    expect(await http(running.base, 'GET', '/readyz')).toMatchObject({ status: 200, body: { workers: 2 } });
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x'] });
    const agents = Array.from({ length: 200 }, (_, i) => ({ id: i, tree: 'talker' }));
    expect((await client.request({ t: 'spawn', agents }, 'spawned')).ids).toHaveLength(200);
    const listed = (await http(running.base, 'GET', `/v1/sessions/${welcome.session as string}/agents`)).body as { agents: Array<{ worker: number }> };
    expect(new Set(listed.agents.map((a) => a.worker)).size).toBe(2);

    for (let tick = 1; tick <= 5; tick++) {
      const rows = agents.map((a) => [a.id, tick * 1000 + a.id]);
      const d = await client.step({ tick, time: tick / 10, agents: rows });
      expect(d.tick).toBe(tick);
      const actions = d.actions as Array<[number, number, string, { x: number }]>;
      expect(actions).toHaveLength(200);
      for (const [id, seq, , args] of actions) {
        expect(seq).toBe(tick);
        expect(args.x).toBe(tick * 1000 + id);
      }
    }
    const metrics = (await http(running.base, 'GET', '/metrics')).body as string;
    expect(metrics).toMatch(/canopy_worker_event_loop_utilization\{worker="1"\}/);
    expect(metrics).toMatch(/canopy_worker_agents\{worker="\d"\} [1-9]/);
    // Each tick order's round trip in its parts: five ticks on each of the two workers, at least, and as many of each part.
    const counts = ['waiting', 'working', 'returning'].map((part) => Number(new RegExp(`^canopy_worker_tick_seconds_count\\{part="${part}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]));
    expect(counts[0]).toBeGreaterThanOrEqual(10);
    expect(counts).toEqual([counts[0], counts[0], counts[0]]);
    // Every frame went to the workers in a shared buffer, reused or new: the five ticks' at least.
    const frames = ['reused', 'allocated'].map((outcome) => Number(new RegExp(`^canopy_frame_buffers_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]));
    expect(frames[0]! + frames[1]!).toBeGreaterThanOrEqual(5);
    // CPU by thread (read from /proc: Linux only): the main thread, each worker by its index, and the rest; the workers ran the ticks.
    const cpu = threadCpu(metrics);
    expect(Object.keys(cpu).toSorted()).toEqual(LINUX ? ['main', 'other', 'worker-0', 'worker-1'] : []);
    expect(LINUX ? cpu.main! > 0 && cpu['worker-0']! + cpu['worker-1']! > 0 : true).toBe(true);
    expect(/^canopy_thread_minor_page_faults_total\{thread="worker-1"\} [1-9]/m.test(metrics)).toBe(LINUX);
    await client.close();
  });

  test("crash recovery's checkpoints show in /metrics: what they hold and what packing them cost", async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x'] });
    const agents = Array.from({ length: 300 }, (_, i) => ({ id: `r${i}`, tree: 'talker' }));
    await client.request({ t: 'spawn', agents }, 'spawned');
    const value = (metrics: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
    // A second of session time a tick: a worker checkpoints a session 2 s of session time after its first tick, then
    // every 2 s; the checkpoint is packed after the tick is answered, so it is looked for at the next ticks.
    let metrics = '';
    for (let tick = 1; tick <= 30 && !(value(metrics, 'canopy_recovery_checkpoints_total') >= 2); tick++) {
      await client.step({ tick, time: tick, agents: agents.map((a, i) => [a.id, tick + i]) });
      metrics = (await http(running.base, 'GET', '/metrics')).body as string;
    }
    expect(value(metrics, 'canopy_recovery_checkpoints_total')).toBeGreaterThanOrEqual(2);
    expect(value(metrics, 'canopy_recovery_checkpointed_agents')).toBeGreaterThanOrEqual(300);
    expect(value(metrics, 'canopy_recovery_checkpoint_bytes')).toBeGreaterThan(300 * 20);
    expect(value(metrics, 'canopy_recovery_pack_seconds_total')).toBeGreaterThan(0);
    expect(value(metrics, 'canopy_recovery_logged_ticks')).toBeGreaterThanOrEqual(0);
    expect(value(metrics, 'canopy_recovery_reused_packs_total')).toBeGreaterThanOrEqual(0); // small sessions: new memory
    await client.close();
  });

  test('several sessions at once, fixed and lockstep, each with its own agents', async () => {
    const fixed = await RawClient.hello(running.wsUrl);
    const steps = await Promise.all([0, 1, 2].map(() => RawClient.hello(running.wsUrl, { mode: 'lockstep' })));
    await fixed.client.request({ t: 'spawn', agents: [{ id: 'f', tree: 'talker', bb: { word: 'fixed' } }] }, 'spawned');
    await Promise.all(steps.map((s, i) => s.client.request({ t: 'spawn', agents: [{ id: 'f', tree: 'talker', bb: { word: `step${i}` } }] }, 'spawned')));
    const results = await Promise.all(steps.map((s) => s.client.step({ tick: 1, time: 0 })));
    results.forEach((d, i) => expect(d.actions).toEqual([['f', 1, 'say', { word: `step${i}`, x: null }]]));
    const d = await fixed.client.next('decisions', (f) => Array.isArray(f.actions));
    expect((d.actions as unknown[][])[0]![3]).toEqual({ word: 'fixed', x: null });
    await Promise.all([fixed.client.close(), ...steps.map((s) => s.client.close())]);
  });

  test('a plugin that throws in a worker stops only its agent (E_PLUGIN)', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    const agents = Array.from({ length: 10 }, (_, i) => ({ id: i, tree: 'plugged' }));
    await client.request({ t: 'spawn', agents }, 'spawned');
    const d = await client.step({ tick: 1, time: 0, agents: { '3': { boom: true }, '8': { boom: true } } });
    expect((d.errors as unknown[][]).map((e) => [e[0], e[1]]).toSorted()).toEqual([
      [3, 'E_PLUGIN'],
      [8, 'E_PLUGIN'],
    ]);
    expect((d.actions as unknown[][]).map((a) => a[0]).toSorted()).toEqual([0, 1, 2, 4, 5, 6, 7, 9]);
    await client.close();
  });

  // Recovery is the contract now (docs/durability.md): before it, the tick in flight got an E_INTERNAL error and
  // the dead worker's agents were reported lost with E_INTERNAL on the next ticks.
  test('a worker dying mid-tick: its agents are restored on a replacement; that tick and the next are answered in full, no error', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    const agents = Array.from({ length: 20 }, (_, i) => ({ id: i, tree: 'walker' }));
    await client.request({ t: 'spawn', agents }, 'spawned');
    const first = await client.step({ tick: 1, time: 0 });
    expect(first.actions).toHaveLength(20);
    const before = threadCpu((await http(running.base, 'GET', '/metrics')).body as string);
    const crashed = crashWorkerForTests(running.server.pool, 0);
    // Each walker's action 1 succeeds with tick 2: each starts action 2 on tick 3, whichever worker it was on.
    const d2 = await client.step({ tick: 2, time: 0.1, results: agents.map((a) => [a.id, 1, 'success']) });
    await crashed;
    expect(d2.errors ?? []).toEqual([]);
    const d3 = await client.step({ tick: 3, time: 0.2 });
    expect(d3.errors ?? []).toEqual([]);
    const seqs = [...((d2.actions as unknown[][] | undefined) ?? []), ...((d3.actions as unknown[][] | undefined) ?? [])].map((a) => [a[0], a[1]]);
    expect(seqs.toSorted((x, y) => Number(x[0]) - Number(y[0]))).toEqual(agents.map((a) => [a.id, 2]));
    expect(client.frames.filter((f) => f.t === 'error')).toEqual([]);
    // The dead worker's CPU still counts for worker 0, and its replacement counts on from there (Linux: /proc).
    const after = threadCpu((await http(running.base, 'GET', '/metrics')).body as string);
    expect(Object.keys(after).toSorted()).toEqual(LINUX ? ['main', 'other', 'worker-0', 'worker-1'] : []);
    expect(Object.keys(before).filter((role) => !(after[role]! >= before[role]!))).toEqual([]);
    await client.close();
  });
});

const LINUX = process.platform === 'linux';

/** canopy_thread_cpu_seconds_total by its `thread` label. */
function threadCpu(metrics: string): Record<string, number> {
  return Object.fromEntries([...metrics.matchAll(/^canopy_thread_cpu_seconds_total\{thread="([^"]+)"\} (\S+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe('a stuck worker', () => {
  const HANG_PLUGIN = `export default {
  name: 'hang',
  conditions: {
    hangs: {
      description: 'Never returns when self.hang is true.',
      test(ctx) {
        if (ctx.self !== null && typeof ctx.self === 'object' && ctx.self.hang === true) for (;;);
        return true;
      },
    },
  },
};
`;
  const STICKY = { root: { type: 'sequence', children: [{ type: 'hangs' }, { type: 'action', action: 'ok', instant: true }] } };

  // Recovery (docs/durability.md): the loop comes back when the replacement replays the tick, so the next
  // replacement stops that agent with E_PLUGIN. Before recovery, the tick got an E_INTERNAL error and every agent of
  // the stuck worker was reported lost.
  test('a plugin in an endless loop on every attempt: the worker is replaced, that agent alone stops (E_PLUGIN), the tick is answered, the others go on', async () => {
    const fx = await writeFixture({ sticky: STICKY }, { 'hang.mjs': HANG_PLUGIN });
    const srv = await start({ trees: fx.trees, plugins: fx.plugins, workers: 2, tuning: { workerStallMs: 300 } });
    try {
      const { client } = await RawClient.hello(srv.wsUrl, { mode: 'lockstep' });
      const other = (await RawClient.hello(srv.wsUrl, { mode: 'lockstep' })).client;
      const ids = Array.from({ length: 6 }, (_, i) => i);
      await client.request({ t: 'spawn', agents: ids.map((id) => ({ id, tree: 'sticky' })) }, 'spawned');
      await other.request({ t: 'spawn', agents: [{ id: 'x', tree: 'sticky' }] }, 'spawned');
      // Agent 0 hangs its worker; the tick is answered with every other agent's decision and agent 0 stopped.
      client.send({ t: 'snapshot', tick: 1, time: 0, agents: { '0': { hang: true } }, id: 5 });
      const d1 = await client.next('decisions', (f) => f.tick === 1);
      expect((d1.errors as unknown[][]).map((e) => [e[0], e[1]])).toEqual([[0, 'E_PLUGIN']]);
      expect((d1.actions as unknown[][]).map((a) => a[0])).toEqual(ids.slice(1));
      expect(client.frames.filter((f) => f.t === 'error')).toEqual([]);
      const d = await client.step({ tick: 2, time: 0.1, agents: { '0': { hang: false } } });
      expect(d.errors ?? []).toEqual([]);
      expect((d.actions as unknown[][]).map((a) => a[0])).toEqual(ids.slice(1));
      expect((await other.step({ tick: 1, time: 0 })).t).toBe('decisions');
      // New agents can be spawned and tick (on the replacement worker or the other one).
      await client.request({ t: 'spawn', agents: [{ id: 100, tree: 'sticky' }] }, 'spawned');
      expect(((await client.step({ tick: 3, time: 0.2 })).actions as unknown[][]).map((a) => a[0])).toContain(100);
      await Promise.all([client.close(), other.close()]);
    } finally {
      await srv.close();
      await fx.remove();
    }
  });
});
