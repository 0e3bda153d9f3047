// The load generator's burst runs and agent id styles (`--burst`, `--ids`): options, ids, and a world that names
// its agents by them. The runs themselves are benchmarks (docs/capacity.md), not tests.

import { describe, expect, test } from 'vitest';
import { agentIds, SPARSE_STRIDE } from '../../bench/load/ids.js';
import { parseOptions } from '../../bench/load/options.js';
import { FIELDS, GameWorld } from '../../bench/load/world.js';
import { RowWriter } from '../../src/client/index.js';

describe('--ids and --burst', () => {
  test('id styles: dense by default, one run per style; bad styles name the flag', () => {
    expect(parseOptions([]).ids).toEqual(['dense']);
    expect(parseOptions(['--ids', 'dense,sparse,string']).ids).toEqual(['dense', 'sparse', 'string']);
    expect(() => parseOptions(['--ids', 'uuid'])).toThrow(/--ids/);
  });

  test('burst runs have the cases of issue 11 as defaults, lockstep only', () => {
    expect(parseOptions([]).burst).toBeNull();
    const spawn = parseOptions(['--burst', 'spawn']);
    expect([spawn.burst, spawn.sessions, spawn.agents, spawn.burstAgents, spawn.burstRepeat, spawn.seconds]).toEqual([['spawn'], 7, 17_500, 10_000, 3, 10]);
    const start = parseOptions(['--burst', 'start']);
    expect([start.burst, start.sessions, start.agents]).toEqual([['start'], 8, 20_000]);
    expect(parseOptions(['--burst', 'both', '--sessions', '3', '--agents', '300']).burst).toEqual(['spawn', 'start']);
    expect(() => parseOptions(['--burst', 'spawn', '--mode', 'fixed'])).toThrow(/--burst/);
    expect(() => parseOptions(['--burst', 'later'])).toThrow(/--burst/);
    // Rehearsed first, unless told not to or the service is given (no throwaway service to rehearse against).
    expect([spawn.rehearse, parseOptions(['--burst', 'start', '--no-rehearse']).rehearse, parseOptions(['--burst', 'start', '--url', 'ws://127.0.0.1:1']).rehearse, parseOptions([]).rehearse]).toEqual([true, false, false, false]);
    // The generator collects its garbage on its main thread in burst runs, with V8's helpers otherwise (generator-gc.ts).
    expect([start.generatorGc, spawn.generatorGc, parseOptions([]).generatorGc]).toEqual(['single', 'single', 'parallel']);
    expect([parseOptions(['--burst', 'start', '--generator-gc', 'parallel']).generatorGc, parseOptions(['--generator-gc', 'single']).generatorGc]).toEqual(['parallel', 'single']);
    expect(() => parseOptions(['--generator-gc', 'none'])).toThrow(/--generator-gc: expected single or parallel/);
    // Without --burst, the steady defaults stay.
    expect([parseOptions([]).sessions, parseOptions([]).agents, parseOptions([]).seconds]).toEqual([4, 20_000, 60]);
  });

  test('ids per game server: none for dense, k·1,000,000 + i for sparse, "npc-k-i" for strings', () => {
    expect(agentIds('dense', 3, 2)).toBeNull();
    expect(agentIds('sparse', 3, 2)).toEqual([3 * SPARSE_STRIDE, 3 * SPARSE_STRIDE + 1]);
    expect(agentIds('string', 3, 2)).toEqual(['npc-3-0', 'npc-3-1']);
  });

  test('a world with its own ids writes its rows with them and applies decisions and results by them', () => {
    const ids = agentIds('string', 2, 3)!;
    const world = new GameWorld(3, 5, ids);
    const rows = new RowWriter(FIELDS);
    world.step(0.05);
    world.writeRows(rows);
    expect(rows.rows().map((r) => r[0])).toEqual(ids);
    // An action for npc-2-1 that ends after the default time; ids the world does not know are ignored.
    expect(world.apply([['npc-2-1', 1, 'dance', {}], [1, 1, 'dance', {}]], [])).toBe(1);
    expect(world.doingOf(1)).toBe('other');
    const results: unknown[] = [];
    for (let k = 0; k < 20; k++) {
      world.step(0.05);
      results.push(...world.results().map((r) => [r[0], r[1], r[2]]));
    }
    expect(results).toEqual([['npc-2-1', 1, 'success']]);
  });
});
