// Regression (issue 13): worker event-loop utilization was measured "since the previous call", so two scrapers
// reset each other's baseline and the value could go negative. Now: fixed windows inside the pool.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAgentPool } from '../../src/service/pool/index.js';
import { TREES, writeFixture } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture(TREES);
});
afterAll(async () => {
  await fixture.remove();
});

describe.each([
  ['inline', 0],
  ['two worker threads', 2],
])('event-loop utilization (%s)', (_name, workers) => {
  test('two scrapes in a row give the same values, each between 0 and 1', async () => {
    const pool = await createAgentPool({ trees: fixture.trees, workers, eluWindowMs: 50 });
    try {
      await pool.ready();
      pool.createSession('s', { fields: ['x'], maxAgents: 1000 });
      const ids = Array.from({ length: 1000 }, (_, i) => i);
      pool.spawn('s', ids.map((id) => ({ id, tree: 'talker' })));
      // Busy until a window with work in it has completed on some host (a sampler event, awaited by polling ticks).
      for (let tick = 1; pool.workerStats().every((w) => w.elu === 0); tick++) {
        pool.observe('s', ids.map((id) => [id, tick]), true);
        await pool.tick('s', tick, tick / 20, 0.05, tick);
        await new Promise((resolve) => setImmediate(resolve)); // the inline pool answers in microtasks: let timers run
      }
      const a = pool.workerStats().map((w) => w.elu);
      const b = pool.workerStats().map((w) => w.elu);
      expect(b).toEqual(a);
      for (const u of a) {
        expect(u).toBeGreaterThanOrEqual(0);
        expect(u).toBeLessThanOrEqual(1);
      }
      expect(a.some((u) => u > 0)).toBe(true);
    } finally {
      await pool.close();
    }
  });
});
