// Durable sessions when Redis is slow or gone: sessions keep ticking (every lockstep tick is answered, its
// decisions those of a run without Redis), the canopy_durable_degraded metric and a log line say so, and the
// store recovers by itself once Redis keeps up again.

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CanopyClient } from '../../src/client/index.js';
import { start, writeFixture, type Running } from '../service/harness.js';
import { FIELDS, Game, TREES } from './game.js';
import { metric, startRedis } from './procs.js';

const AGENTS = 500;

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let redis: Awaited<ReturnType<typeof startRedis>>;

beforeAll(async () => {
  fixture = await writeFixture(TREES);
  redis = await startRedis(['--enable-debug-command', 'yes']);
});

afterAll(async () => {
  await redis?.stop();
  await fixture?.remove();
});

/** Polls a metric until it reads `value` (a state reached through Redis's own events; bounded by the test timeout). */
async function until(base: string, line: string, value: number): Promise<void> {
  while ((await metric(base, line)) !== value) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function play(running: Running, ticks: number, during: (tick: number) => Promise<void>): Promise<Game> {
  const client = await CanopyClient.connect(running.wsUrl, { mode: 'lockstep', fields: FIELDS, reconnect: false });
  const game = new Game(AGENTS);
  await game.spawn(client);
  for (let tick = 1; tick <= ticks; tick++) {
    await during(tick);
    await game.tick(client, tick);
  }
  await client.bye();
  return game;
}

describe('durable sessions with Redis slow, then gone', () => {
  test('sessions keep ticking; the metric says degraded, then healthy again after a stall; decisions unchanged', async () => {
    const plain = await start({ trees: fixture.trees, workers: 1 });
    const expected = await play(plain, 40, async () => {});
    await plain.close();

    const running = await start({ trees: fixture.trees, workers: 1, redisUrl: redis.url, redisWaitMs: 50 });
    const admin = new Redis(redis.url);
    try {
      let before: Array<number | undefined> = [];
      const game = await play(running, 40, async (tick) => {
        if (tick === 5) {
          before = [await metric(running.base, 'canopy_durable_degraded'), await metric(running.base, 'canopy_durable_bytes_total{kind="log"}')];
          // Redis stops answering for 1.5 s: ticks do not wait for it (beyond redisWaitMs once).
          void admin.call('DEBUG', 'SLEEP', '1.5').catch(() => {});
        }
        if (tick === 10) await until(running.base, 'canopy_durable_degraded', 1);
        if (tick === 15) await until(running.base, 'canopy_durable_degraded', 0);
        if (tick === 20) {
          admin.disconnect();
          await redis.stop(); // gone for good
        }
        if (tick === 25) await until(running.base, 'canopy_durable_degraded', 1);
      });
      expect(before[0]).toBe(0);
      expect(before[1]).toBeGreaterThan(0);
      expect(await metric(running.base, 'canopy_durable_degradations_total')).toBe(2);
      for (let tick = 1; tick <= 40; tick++) expect(game.decisions.get(tick), `decisions of tick ${tick}`).toEqual(expected.decisions.get(tick));
    } finally {
      admin.disconnect();
      await running.close();
    }
  }, 60_000);
});
