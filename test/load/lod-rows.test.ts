// `--lod-rows due` (bench/load/lod.ts DueSchedule): a game with level of detail sends an agent's row only on the
// session ticks the service ticks it. Checked against the real pool (2 worker threads, the service's own phase
// rule): each tick, the agents whose rows were sent are exactly the agents ticked, and each ticked agent reads
// the row sent on that very tick (not one a tick late). Also: the world writes only the rows asked for, and the
// command line's defaults and refusals.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { agentIds, type IdStyle } from '../../bench/load/ids.js';
import { DEFAULT_LOD_MIX, DueSchedule, everyOf } from '../../bench/load/lod.js';
import { parseOptions } from '../../bench/load/options.js';
import { lodRowsOf } from '../../bench/load/run.js';
import { FIELDS, GameWorld } from '../../bench/load/world.js';
import { RowWriter } from '../../src/client/index.js';
import type { AgentId } from '../../src/bt/index.js';
import { createAgentPool } from '../../src/service/pool/index.js';
import { writeFixture } from '../service/harness.js';

const TREES = {
  // Every tick of the agent: one instant action carrying the observation it read.
  probe: { root: { type: 'action', action: 'probe', args: { x: 'self.x' }, instant: true } },
};

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture(TREES);
});
afterAll(async () => {
  await fixture.remove();
});

describe('DueSchedule: rows sent exactly on the ticks the service ticks the agent', () => {
  test.each(['dense', 'sparse', 'string'] as IdStyle[])('%s ids, the default mix, 2 workers, 45 ticks', async (style) => {
    const n = 600;
    const ids = agentIds(style, 3, n);
    const idOf = (i: number): AgentId => (ids === null ? i : ids[i]!);
    const schedule = new DueSchedule(DEFAULT_LOD_MIX, n, ids);
    const pool = await createAgentPool({ trees: fixture.trees, workers: 2 });
    try {
      pool.createSession('s', { fields: ['x'], maxAgents: n });
      const spawn = Array.from({ length: n }, (_, i) => {
        const every = everyOf(DEFAULT_LOD_MIX, i);
        return { id: idOf(i), tree: 'probe', ...(every !== 1 ? { every } : {}) };
      });
      expect(pool.spawn('s', spawn).errors).toEqual([]);
      const ticks = new Map<AgentId, number>();
      for (let t = 1; t <= 45; t++) {
        // Session tick k = t − 1: the first tick after the spawn is 0. Rows carry the tick they were sent on.
        const due = [...schedule.due(t - 1)];
        pool.observe('s', due.map((i) => [idOf(i), t]), false);
        const d = await pool.tick('s', t, t * 0.05, 0.05, t);
        const ticked = new Map(d.actions.filter((a) => a[2] === 'probe').map((a) => [a[0], (a[3] as { x: unknown }).x]));
        expect(new Set(ticked.keys())).toEqual(new Set(due.map(idOf)));
        for (const x of ticked.values()) expect(x).toBe(t);
        for (const id of ticked.keys()) ticks.set(id, (ticks.get(id) ?? 0) + 1);
      }
      // Over 45 ticks (after the first 20, every class has come round): each agent ticked 45/every times, ± 1.
      for (let i = 0; i < n; i++) {
        const every = everyOf(DEFAULT_LOD_MIX, i);
        expect(Math.abs(ticks.get(idOf(i))! - 45 / every)).toBeLessThanOrEqual(1);
      }
    } finally {
      await pool.close();
    }
  });

  test('each agent is due once per interval; about 20.5 % of the agents per tick with the default mix', () => {
    const n = 2000;
    const schedule = new DueSchedule(DEFAULT_LOD_MIX, n, null);
    const seen = new Int32Array(n);
    let rows = 0;
    for (let k = 0; k < 20; k++) {
      const due = schedule.due(k);
      rows += due.length;
      for (const i of due) seen[i]!++;
    }
    for (let i = 0; i < n; i++) expect(seen[i]).toBe(20 / everyOf(DEFAULT_LOD_MIX, i));
    expect(rows / 20 / n).toBeCloseTo(0.205, 9);
  });
});

test('GameWorld.writeRows: only the agents asked for, with their own ids and observations', () => {
  const ids = agentIds('string', 1, 50);
  const all = new RowWriter(FIELDS);
  const some = new RowWriter(FIELDS);
  const world = new GameWorld(50, 7, ids);
  world.step(0.05);
  world.writeRows(all);
  world.writeRows(some, Int32Array.of(3, 17, 49));
  expect(all.length).toBe(50);
  expect(some.rows().map((r) => [...r])).toEqual([3, 17, 49].map((i) => [...all.rows()[i]!]));
});

test('--lod-rows: due by default in lockstep runs, all in fixed runs; due refused with fixed mode or without --lod', () => {
  expect(parseOptions(['--lod', 'on']).lodRows).toBeUndefined();
  expect(lodRowsOf({ mode: 'lockstep' })).toBe('due');
  expect(lodRowsOf({ mode: 'fixed' })).toBe('all');
  expect(lodRowsOf({ mode: 'lockstep', lodRows: 'all' })).toBe('all');
  expect(parseOptions(['--lod', 'on', '--lod-rows', 'all']).lodRows).toBe('all');
  expect(parseOptions(['--lod', 'on', '--lod-rows', 'due']).lodRows).toBe('due');
  expect(parseOptions(['--lod', 'on', '--mode', 'both', '--lod-rows', 'all']).lodRows).toBe('all');
  expect(() => parseOptions(['--lod', 'on', '--mode', 'fixed', '--lod-rows', 'due'])).toThrow(/lockstep only/);
  expect(() => parseOptions(['--lod-rows', 'due'])).toThrow(/only with --lod/);
  expect(() => parseOptions(['--lod', 'on', '--lod-rows', 'some'])).toThrow(/--lod-rows/);
});
