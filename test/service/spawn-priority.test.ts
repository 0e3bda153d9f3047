// V8's helper threads yield to the ticks for a while after a large spawn (src/service/spawn-priority.ts): lowered on a spawn
// of 1,000 agents or more, given their priority back `holdMs` after the last one, and never touched otherwise. The
// threads are found by name, which Node 24 and later give them: on Node 20 these tests are skipped.

import { afterEach, describe, expect, test, vi } from 'vitest';
import { SPAWN_AGENTS, SpawnPriority, helperThreads, threadNice } from '../../src/service/spawn-priority.js';
import { RawClient, start, writeFixture } from './harness.js';

const niceOf = (): Array<number | undefined> => helperThreads().map(threadNice);
/** Whether this process has named helper threads whose priority it may give back (the class acts on none otherwise). */
const acts = new SpawnPriority(1, 1).threads > 0;

afterEach(() => {
  vi.useRealTimers();
});

describe.skipIf(!acts)("V8's helper threads during a spawn", () => {
  test('a spawn of 1,000 agents or more lowers them by the nice given; a smaller one does not; restore gives their own back', () => {
    const before = niceOf();
    expect(before.length).toBeGreaterThan(0);
    const p = new SpawnPriority(10, 60_000);
    p.spawning(SPAWN_AGENTS - 1);
    expect([p.active, niceOf()]).toEqual([false, before]);
    p.spawning(SPAWN_AGENTS);
    expect(p.active).toBe(true);
    expect(niceOf()).toEqual(before.map((n) => Math.min(19, n! + 10)));
    p.restore();
    expect([p.active, niceOf()]).toEqual([false, before]);
  });

  test('they keep it for holdMs after the last large spawn, then get their own priority back by themselves', () => {
    vi.useFakeTimers();
    const before = niceOf();
    const p = new SpawnPriority(5, 1000);
    p.spawning(2500);
    vi.advanceTimersByTime(600);
    p.spawning(2500); // a second game server spawning: the hold starts again
    vi.advanceTimersByTime(600);
    expect(p.active).toBe(true);
    expect(niceOf()).toEqual(before.map((n) => Math.min(19, n! + 5)));
    vi.advanceTimersByTime(500);
    expect([p.active, niceOf()]).toEqual([false, before]);
  });

  test('a game server spawning 2,500 agents over the WebSocket lowers them; the service gives them back when it stops', async () => {
    const fixture = await writeFixture();
    const running = await start({ trees: fixture.trees, tuning: { spawnHelperNice: 10, spawnHelperHoldMs: 60_000 } });
    try {
      const before = niceOf();
      const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x'] });
      const spawned = await client.request({ t: 'spawn', agents: Array.from({ length: 2500 }, (_, i) => ({ id: i, tree: 'talker' })) }, 'spawned');
      expect((spawned.ids as unknown[]).length).toBe(2500);
      expect(niceOf()).toEqual(before.map((n) => Math.min(19, n! + 10)));
      await client.close();
      await running.close();
      expect(niceOf()).toEqual(before);
    } finally {
      await running.close();
      await fixture.remove();
    }
  });
});

test('spawns leave the helper threads alone when the nice added is 0', () => {
  const before = niceOf();
  const p = new SpawnPriority(0, 1000);
  p.spawning(10_000);
  expect([p.threads, p.active, niceOf()]).toEqual([0, false, before]);
});
