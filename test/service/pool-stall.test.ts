// Regression (issue 13): the stall watchdog judged workers by how late the main thread read their replies, so a
// main thread blocked longer than stallMs killed healthy workers with every agent on them. Real worker threads.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAgentPool, type AgentPool, type PoolLogger } from '../../src/service/pool/index.js';
import { TREES, writeFixture } from './harness.js';

const STALL_MS = 300;
const AGENTS = 2000;

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture(TREES);
});
afterAll(async () => {
  await fixture.remove();
});

/** Keeps the calling thread busy (no event loop turn) for `ms`: what a huge HTTP validate or a GC storm does. */
function blockMainThread(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

/** A logger recording the pool's error lines (a replaced worker logs one). */
function recorder(): PoolLogger & { errors: unknown[] } {
  const errors: unknown[] = [];
  return { errors, info() {}, warn() {}, error: (obj) => errors.push(obj) };
}

describe('stall watchdog', () => {
  test('a main thread blocked for several stallMs while a tick is out kills no worker and loses no agent', async () => {
    const logger = recorder();
    const pool: AgentPool = await createAgentPool({ trees: fixture.trees, workers: 2, stallMs: STALL_MS, logger });
    try {
      await pool.ready();
      pool.createSession('s', { fields: ['x'], maxAgents: AGENTS });
      const ids = Array.from({ length: AGENTS }, (_, i) => i);
      expect(pool.spawn('s', ids.map((id) => ({ id, tree: 'talker' }))).errors).toEqual([]);
      await pool.tick('s', 1, 0, 0.05, 1); // the workers are warm
      for (let round = 2; round <= 3; round++) {
        pool.observe('s', ids.map((id) => [id, round]), true);
        const tick = pool.tick('s', round, round / 20, 0.05, round); // posted to both workers now
        blockMainThread(5 * STALL_MS); // the workers answer meanwhile; nobody reads the replies
        const d = await tick;
        expect(d.errors).toEqual([]);
        expect(d.actions).toHaveLength(AGENTS);
      }
      const next = await pool.tick('s', 4, 0.2, 0.05, 4);
      expect(next.errors).toEqual([]); // no agent reported lost
      expect(next.actions).toHaveLength(AGENTS);
      expect(pool.agentCount('s')).toBe(AGENTS);
      expect(logger.errors).toEqual([]); // no worker replaced
    } finally {
      await pool.close();
    }
  });
});
