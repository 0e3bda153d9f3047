// Crash and stall recovery (docs/durability.md) over a real WebSocket with 2 real worker threads: a worker killed
// mid-session (a plugin exits its thread once) or stalled (a plugin spins once past stallMs) changes no byte of
// the decisions stream compared to a reference run of the same inputs without the crash.

import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decode } from 'msgpackr';
import type { RawData } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RawClient, start, writeFixture, type Running } from './harness.js';

/** A condition that, once per marker file, kills its worker thread (die 1: exit) or spins for 3 s (die 2: a stall). */
function oncePlugin(marker: string): string {
  return `import { existsSync, writeFileSync } from 'node:fs';
const MARKER = ${JSON.stringify(marker)};
export default {
  name: 'die-once',
  conditions: {
    dieOnce: {
      description: 'Kills or stalls its worker the first time self.die is set (a marker file remembers).',
      test(ctx) {
        const die = ctx.self !== null && typeof ctx.self === 'object' ? ctx.self.die : 0;
        if (die > 0 && !existsSync(MARKER)) {
          writeFileSync(MARKER, 'done');
          if (die === 1) process.exit(7);
          const until = Date.now() + 3000;
          while (Date.now() < until) {}
        }
        return true;
      },
    },
  },
};
`;
}

const TREES = {
  // Random draws, timers and actions awaiting the game's results: all of it must continue exactly.
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
  crashy: { root: { type: 'sequence', children: [{ type: 'dieOnce' }, { type: 'action', action: 'ok', args: { x: 'self.x' }, instant: true }] } },
};

const TICKS = 30;
const CRASH_TICK = 12;
const AGENTS = 40;

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let marker: string;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture(TREES, { 'once.mjs': oncePlugin('MARKER') });
  marker = join(fixture.dir, 'marker');
  // The plugin is written again once the marker's path is known.
  writeFileSync(join(fixture.plugins!, 'once.mjs'), oncePlugin(marker));
  // One server for every run (plugins register their node types once per process); sessions come and go.
  running = await start({ trees: fixture.trees, plugins: fixture.plugins, workers: 2, tuning: { workerStallMs: 500 } });
});

afterAll(async () => {
  await running?.close();
  await fixture.remove();
});

/**
 * One lockstep session of scripted inputs (spawns, rows, results of the actions it got, bb writes, a despawn,
 * late spawns) on the 2-worker server; `die` (1 exit, 2 stall) is set on agent 1's row at CRASH_TICK.
 * Returns the decisions frames as the bytes the socket received, and the error frames.
 */
async function session(die: 1 | 2): Promise<{ frames: Buffer[]; errors: unknown[] }> {
  const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: ['x', 'die'] });
  const frames: Buffer[] = [];
  client.socket.on('message', (data: RawData) => {
    const bytes = Buffer.from(data as Buffer);
    if ((decode(bytes) as { t: string }).t === 'decisions') frames.push(bytes);
  });
  const spawn = (from: number, to: number): Array<Record<string, unknown>> =>
    Array.from({ length: to - from }, (_, k) => ({ id: from + k, tree: (from + k) % 4 === 1 ? 'crashy' : 'mixed', seed: 1000 + from + k }));
  await client.request({ t: 'spawn', agents: spawn(0, AGENTS) }, 'spawned');
  const alive = new Set(Array.from({ length: AGENTS }, (_, i) => i));
  let results: Array<[number, number, string]> = [];
  for (let tick = 1; tick <= TICKS; tick++) {
    if (tick === 8) client.send({ t: 'bb', set: [[0, { mood: 7 }], [4, { mood: 9 }]] }); // no reply unless an entry is wrong
    if (tick === 15) {
      await client.request({ t: 'despawn', ids: [2, 3] }, 'despawned');
      alive.delete(2);
      alive.delete(3);
    }
    if (tick === 18) {
      await client.request({ t: 'spawn', agents: spawn(AGENTS, AGENTS + 6) }, 'spawned');
      for (let id = AGENTS; id < AGENTS + 6; id++) alive.add(id);
    }
    const rows = [...alive].map((id) => [id, tick * 100 + id, tick === CRASH_TICK && id === 1 ? die : 0]);
    const d = await client.step({ tick, time: tick * 0.05, agents: rows, ...(results.length > 0 ? { results } : {}) });
    // Every other walk succeeds on the next tick; the rest wait for a later result or never get one.
    results = ((d.actions as Array<[number, number, string]> | undefined) ?? []).filter((a) => a[2] === 'walk' && a[1] % 2 === 0).map((a) => [a[0], a[1], 'success']);
  }
  const errors = client.frames.filter((f) => f.t === 'error');
  await client.close();
  return { frames, errors };
}

describe('crash and stall recovery (2 workers, lockstep over a WebSocket)', () => {
  test('a worker killed mid-session: the decisions stream is byte-identical to a run without the crash', async () => {
    writeFileSync(marker, 'no crash');
    const reference = await session(1);
    rmSync(marker);
    const crashed = await session(1);
    expect(existsSync(marker)).toBe(true); // the plugin did kill its worker
    expect((await running.server.metrics.workerRecoveries.get()).values[0]?.value).toBeGreaterThanOrEqual(1);
    expect(crashed.errors).toEqual([]);
    expect(reference.frames).toHaveLength(TICKS);
    expect(crashed.frames).toHaveLength(TICKS);
    for (let k = 0; k < TICKS; k++) expect(crashed.frames[k]!.equals(reference.frames[k]!), `decisions of tick ${k + 1}`).toBe(true);
  });

  test('a stalled worker replaced by the watchdog: the decisions stream is byte-identical to a run without the stall', async () => {
    writeFileSync(marker, 'no stall');
    const reference = await session(2);
    rmSync(marker);
    const stalled = await session(2);
    expect(existsSync(marker)).toBe(true);
    expect(stalled.errors).toEqual([]);
    expect(stalled.frames).toHaveLength(TICKS);
    for (let k = 0; k < TICKS; k++) expect(stalled.frames[k]!.equals(reference.frames[k]!), `decisions of tick ${k + 1}`).toBe(true);
  });
});
