// Crash recovery at the pool level (recovery.ts) on real worker threads: crashes at several points of the
// checkpoint cycle give the decisions of the inline pool for the same inputs; the log is cut at each checkpoint;
// a plugin that kills its worker on every attempt stops only its own agent (E_PLUGIN).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashWorkerForTests, createAgentPool, type AgentPool, type Decisions, type WorkerPool } from '../../src/service/pool/index.js';
import { SLICED_PACK } from '../../src/service/pool/slicer.js';
import { MIN_REUSED_CHECKPOINT_BYTES } from '../../src/service/pool/checkpoint.js';
import type { AgentId } from '../../src/bt/index.js';
import { writeFixture } from './harness.js';

const TREES = {
  mixed: {
    blackboard: { mood: 1 },
    root: {
      type: 'random',
      children: [
        { type: 'action', action: 'shout', args: { x: 'self.x', mood: 'bb.mood', r: 'rand()' }, instant: true },
        { type: 'action', action: 'walk', args: { x: 'self.x' } },
        { type: 'sequence', children: [{ type: 'wait', seconds: [0.1, 0.4] }, { type: 'action', action: 'ring', args: { r: 'rand()' }, instant: true }] },
      ],
    },
  },
  deadly: { root: { type: 'sequence', children: [{ type: 'killer' }, { type: 'action', action: 'ok', instant: true }] } },
};

/** Exits its worker thread whenever self.kill is true: on every attempt, replays included. */
const KILLER = `export default {
  name: 'killer',
  conditions: {
    killer: {
      description: 'Exits the thread when self.kill is true.',
      test(ctx) {
        if (ctx.self !== null && typeof ctx.self === 'object' && ctx.self.kill === true) process.exit(9);
        return true;
      },
    },
  },
};
`;

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture(TREES, { 'killer.mjs': KILLER });
});
afterAll(async () => {
  await fixture.remove();
});

/** Ticks 1..24 of a scripted session; `crashAt` ticks get a crash of worker `crashAt[tick]` posted just before them. */
async function run(pool: AgentPool, crashAt: Record<number, number>, agents = 30): Promise<Decisions[]> {
  pool.createSession('s', { fields: ['x'], maxAgents: 10_000 });
  pool.spawn('s', Array.from({ length: agents }, (_, i) => ({ id: i, tree: 'mixed', seed: i * 7 })));
  const out: Decisions[] = [];
  let results: Array<[AgentId, number, 'success' | 'failure']> = [];
  for (let tick = 1; tick <= 24; tick++) {
    if (tick === 6) pool.setBlackboard('s', [[3, { mood: 5 }]]);
    if (tick === 9) pool.despawn('s', [4, 5]);
    if (tick === 11) pool.spawn('s', [{ id: 50, tree: 'mixed', seed: 1 }]);
    if (tick === 13) pool.setWorld('s', { tick });
    pool.observe('s', Array.from({ length: agents }, (_, i) => [i, tick * 10 + i]), false);
    pool.results('s', results);
    const crash = crashAt[tick];
    const replaced = crash === undefined ? null : crashWorkerForTests(pool, crash);
    const d = await pool.tick('s', tick, tick * 0.05, 0.05, tick);
    await replaced;
    out.push(d);
    results = d.actions.filter((a) => a[2] === 'walk' && a[1] % 3 !== 0).map((a) => [a[0], a[1], a[1] % 2 === 0 ? 'success' : 'failure']);
  }
  return out;
}

/** The session of `run` on the inline pool: what every crashed run must decide. */
async function inlineReference(agents = 30): Promise<Decisions[]> {
  const inline = await createAgentPool({ trees: fixture.trees, plugins: fixture.plugins!, workers: 0 });
  const reference = await run(inline, {}, agents);
  await inline.close();
  expect(reference.flatMap((d) => d.errors)).toEqual([]);
  return reference;
}

describe('crash recovery (worker pool)', () => {
  it('crashes before the first checkpoint, right after one and between two: the decisions of the inline pool, none lost', async () => {
    const reference = await inlineReference();
    // checkpointMs 200: a checkpoint every 4 ticks of session time (50 ms a tick).
    const pool = await createAgentPool({ trees: fixture.trees, plugins: fixture.plugins!, workers: 2, checkpointMs: 200, checkpointTicks: 1, sessionAffinity: 0 });
    try {
      await pool.ready();
      const crashed = await run(pool, { 1: 0, 5: 1, 6: 1, 15: 0, 16: 1, 22: 0 });
      expect(crashed).toEqual(reference);
      const { loggedTicks } = (pool as WorkerPool).recoveryStats();
      expect(loggedTicks).toBeLessThanOrEqual(2 * 5); // per worker, at most the ticks since the latest checkpoint
    } finally {
      await pool.close();
    }
  });

  it(`sessions large enough to be packed in parts (over ${SLICED_PACK} agents a worker): crashes right after a checkpoint and between two, the decisions of the inline pool`, async () => {
    const agents = 2 * SLICED_PACK + 500;
    const reference = await inlineReference(agents);
    const pool = await createAgentPool({ trees: fixture.trees, plugins: fixture.plugins!, workers: 2, checkpointMs: 200, checkpointTicks: 1, sessionAffinity: 0 });
    try {
      await pool.ready();
      const crashed = await run(pool, { 6: 1, 11: 0, 16: 1 }, agents);
      expect(crashed).toEqual(reference);
      const stats = (pool as WorkerPool).recoveryStats();
      expect(stats.checkpoints).toBeGreaterThan(4);
      // Checkpoints of this size go back to their worker once replaced and are packed into again: the restores
      // above read such packs, and gave the inline pool's decisions.
      expect(stats.checkpointBytes / 2).toBeGreaterThanOrEqual(MIN_REUSED_CHECKPOINT_BYTES);
      expect(stats.reusedPacks).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it("checkpoints go back to their worker as soon as newer ones replace them: after each session's first, every pack reuses memory", async () => {
    const pool = await createAgentPool({ trees: fixture.trees, plugins: fixture.plugins!, workers: 2, checkpointMs: 200, checkpointTicks: 1, sessionAffinity: 0 });
    try {
      await pool.ready();
      const sessions = ['a', 'b', 'c'];
      for (const s of sessions) {
        pool.createSession(s, { fields: ['x'], maxAgents: 10_000 });
        pool.spawn(s, Array.from({ length: 3000 }, (_, i) => ({ id: i, tree: 'mixed', seed: i })));
      }
      // Every session ticks at once: their checkpoints fall due together on both workers.
      for (let tick = 1; tick <= 60; tick++) {
        await Promise.all(
          sessions.map((s) => {
            pool.observe(s, Array.from({ length: 3000 }, (_, i) => [i, tick + i / 7]), false);
            return pool.tick(s, tick, tick * 0.05, 0.05, tick);
          }),
        );
      }
      const stats = (pool as WorkerPool).recoveryStats();
      expect(stats.checkpointBytes / 6).toBeGreaterThanOrEqual(MIN_REUSED_CHECKPOINT_BYTES);
      expect(stats.checkpoints).toBeGreaterThan(30);
      // The first pack of each of the 6 session shares takes new memory, and a few more where a worker packs several
      // at once before the replaced buffers are back (60 of 72 reused when this was written). Held back until each
      // worker's next request instead, about half of them took new memory.
      expect(stats.reusedPacks / stats.checkpoints).toBeGreaterThan(0.75);
    } finally {
      await pool.close();
    }
  });

  it('a replacement that goes down again before its restore is done is replaced again: the decisions of the inline pool', async () => {
    const reference = await inlineReference();
    let recoveries = 0;
    // The replacement is stopped from outside as soon as it exists, before it has loaded or replayed anything:
    // nothing points at an agent, so the same restore is tried again (CI once saw a replacement go down before
    // the main thread had read the end of its replay, and every agent of that worker was lost).
    const pool: AgentPool = await createAgentPool({
      trees: fixture.trees,
      plugins: fixture.plugins!,
      workers: 2,
      checkpointMs: 200,
      checkpointTicks: 1,
      sessionAffinity: 0,
      onRecovery: () => {
        if (++recoveries === 1) queueMicrotask(() => void crashWorkerForTests(pool, 1, 'terminate'));
      },
    });
    try {
      await pool.ready();
      expect(await run(pool, { 7: 1 })).toEqual(reference);
      expect(recoveries).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it('a plugin that kills its worker on every attempt: after a failed recovery that agent alone stops (E_PLUGIN), the tick in flight is answered, every other agent goes on', async () => {
    const pool = await createAgentPool({ trees: fixture.trees, plugins: fixture.plugins!, workers: 2, sessionAffinity: 0 });
    try {
      await pool.ready();
      pool.createSession('k', { fields: ['kill'], maxAgents: 10 });
      pool.spawn('k', Array.from({ length: 6 }, (_, i) => ({ id: i, tree: 'deadly' })));
      const doomed = pool.listAgents('k').find((a) => a.worker === 1)!.id as number;
      expect((await pool.tick('k', 1, 0.05, 0.05, 1)).actions).toHaveLength(6);
      pool.observe('k', [[doomed, true]], false);
      let d = await pool.tick('k', 2, 0.1, 0.05, 2);
      expect(d.errors).toEqual([[doomed, 'E_PLUGIN', 'agent stopped: plugin code crashed its worker thread on every attempt']]);
      const others = Array.from({ length: 6 }, (_, i) => i).filter((id) => id !== doomed);
      expect(d.actions.map((a) => [a[0], a[1]])).toEqual(others.map((id) => [id, 2]));
      d = await pool.tick('k', 3, 0.15, 0.05, 3);
      expect(d.errors).toEqual([]);
      expect(d.actions.map((a) => [a[0], a[1]])).toEqual(others.map((id) => [id, 3]));
      expect(pool.agentCount('k')).toBe(6); // a stopped agent stays until despawned, as with any E_PLUGIN
    } finally {
      await pool.close();
    }
  });
});
