// A tick order's round trip to a worker in its three parts (WorkerPool.tickParts, canopy_worker_tick_seconds):
// waiting for the worker, the worker's tick, waiting for the main thread to read the reply. Real worker threads: a
// worker busy with another session's slow tick shows as `waiting`, a main thread that cannot read the reply as
// `returning`, and the parts add up to the round trip the caller saw.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAgentPool, WorkerPool, type AgentPool, type TickParts } from '../../src/service/pool/index.js';
import { writeFixture } from './harness.js';

/** `slow` holds its worker for `self.spin` ms (none when absent), then succeeds. */
const SLOW_PLUGIN = `export default {
  name: 'slow-plugin',
  conditions: {
    slow: {
      description: 'Keeps its worker busy for self.spin milliseconds.',
      test(ctx) {
        const ms = ctx.self === null ? 0 : Number(ctx.self.spin ?? 0);
        const until = performance.now() + ms;
        while (performance.now() < until) {
          // spin
        }
        return true;
      },
    },
  },
};
`;
const SLOW = { root: { type: 'sequence', children: [{ type: 'slow' }, { type: 'action', action: 'ok', instant: true }] } };

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture({ slow: SLOW }, { 'slow.mjs': SLOW_PLUGIN });
});
afterAll(async () => {
  await fixture.remove();
});

/** The parts as they are reported, one entry per tick order (seconds), in the order the replies were read. */
function recordParts(): TickParts & { seen: Array<{ waiting: number; working: number; returning: number }> } {
  const seen: Array<{ waiting: number; working: number; returning: number }> = [];
  return {
    seen,
    waiting: { observe: (s) => seen.push({ waiting: s, working: Number.NaN, returning: Number.NaN }) },
    working: { observe: (s) => (seen.at(-1)!.working = s) },
    returning: { observe: (s) => (seen.at(-1)!.returning = s) },
  };
}

/** Keeps the main thread busy (no event loop turn) for `ms`. */
function blockMainThread(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

async function onePool(): Promise<{ pool: AgentPool; parts: ReturnType<typeof recordParts> }> {
  const pool = await createAgentPool({ trees: fixture.trees, plugins: fixture.plugins!, workers: 1 });
  await pool.ready();
  const parts = recordParts();
  (pool as WorkerPool).tickParts = parts;
  return { pool, parts };
}

describe('tick parts', () => {
  test("a main thread that cannot read the reply: the parts add up to the round trip, the block included", async () => {
    const { pool, parts } = await onePool();
    try {
      pool.createSession('s', { fields: ['spin'], maxAgents: 10 });
      pool.spawn('s', [{ id: 1, tree: 'slow' }]);
      await pool.tick('s', 1, 0.05, 0.05, 1);
      const before = performance.now();
      const tick = pool.tick('s', 2, 0.1, 0.05, 2); // posted now
      blockMainThread(200); // the worker answers meanwhile; nobody reads the reply
      expect((await tick).actions).toHaveLength(1);
      const roundTripMs = performance.now() - before;
      expect(parts.seen).toHaveLength(2);
      const last = parts.seen[1]!;
      for (const s of [last.waiting, last.working, last.returning]) expect(s).toBeGreaterThanOrEqual(0);
      const sumMs = 1000 * (last.waiting + last.working + last.returning);
      expect(sumMs).toBeGreaterThanOrEqual(200);
      expect(sumMs).toBeLessThanOrEqual(roundTripMs + 1);
    } finally {
      await pool.close();
    }
  });

  test("a tick posted behind another session's slow tick on the same worker waits for it", async () => {
    const { pool, parts } = await onePool();
    try {
      pool.createSession('busy', { fields: ['spin'], maxAgents: 10 });
      pool.createSession('quick', { fields: ['spin'], maxAgents: 10 });
      pool.spawn('busy', [{ id: 1, tree: 'slow' }]);
      pool.spawn('quick', [{ id: 1, tree: 'slow' }]);
      await Promise.all([pool.tick('busy', 1, 0.05, 0.05, 1), pool.tick('quick', 1, 0.05, 0.05, 1)]);
      parts.seen.length = 0;
      pool.observe('busy', [[1, 300]], false);
      const busy = pool.tick('busy', 2, 0.1, 0.05, 2);
      const quick = pool.tick('quick', 2, 0.1, 0.05, 2); // behind the 300 ms tick on the one worker
      await Promise.all([busy, quick]);
      expect(parts.seen).toHaveLength(2);
      const [slow, behind] = parts.seen as [(typeof parts.seen)[0], (typeof parts.seen)[0]];
      expect(slow.working).toBeGreaterThanOrEqual(0.3);
      expect(behind.working).toBeLessThan(0.3);
      // Posted a moment after the slow one: it waited for nearly all of it.
      expect(behind.waiting).toBeGreaterThanOrEqual(0.15);
    } finally {
      await pool.close();
    }
  });
});
