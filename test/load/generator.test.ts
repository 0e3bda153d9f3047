// The load generator's own logic, without a service: the open-loop schedule, the latency histograms,
// the capacity bisection, reading /metrics, the command line, and the simulated world.

import { watchPlan } from '../../bench/load/inspect.js';
import { describe, expect, test } from 'vitest';
import { findCapacity, roundTo } from '../../bench/load/capacity.js';
import { LatencyHistogram, mergeHistograms } from '../../bench/load/histogram.js';
import { OptionsError, parseOptions } from '../../bench/load/options.js';
import { buckets, byLabel, delta, fractionAtMost, maxBound, parseMetrics, parseSeries, quantile, sum } from '../../bench/load/prom.js';
import { split } from '../../bench/load/run.js';
import { Schedule, phaseOffsets } from '../../bench/load/schedule.js';
import { isLoopback } from '../../bench/load/service.js';
import { FIELDS, GameWorld, RULES } from '../../bench/load/world.js';
import { RowEncoder, RowWriter } from '../../src/client/index.js';
import { encode } from '../../src/protocol/codec.js';
import { agentIds } from '../../bench/load/ids.js';

describe('Schedule', () => {
  test('tick n is due at origin + offset + n/hz, computed from n (no drift)', () => {
    const s = new Schedule({ hz: 30, origin: 1000, offsetMs: 5 });
    expect(s.due(1)).toBeCloseTo(1000 + 5 + 1000 / 30, 9);
    expect(s.due(30_000)).toBe(1000 + 5 + 1_000_000);
    expect(s.time(45)).toBe(1.5);
    expect(s.nextDue()).toBe(s.due(1));
  });

  test('take() sends every tick due, oldest first, each once, with its due time', () => {
    const s = new Schedule({ hz: 20, origin: 0 });
    const sent: Array<[number, number]> = [];
    expect(s.take(49.9, (n, at) => sent.push([n, at]))).toBe(0);
    expect(s.take(50, (n, at) => sent.push([n, at]))).toBe(1);
    expect(s.take(175, (n, at) => sent.push([n, at]))).toBe(2);
    expect(s.take(175, (n, at) => sent.push([n, at]))).toBe(0);
    expect(sent).toEqual([[1, 50], [2, 100], [3, 150]]);
    expect(s.skipped).toBe(0);
  });

  test('open loop: a late generator still sends the ticks it missed, but skips (and counts) those over maxBehindMs late', () => {
    const s = new Schedule({ hz: 100, origin: 0, maxBehindMs: 100 });
    const sent: number[] = [];
    s.take(1000, (n) => sent.push(n));
    // Ticks due before 900 ms are skipped; 90..100 are sent back to back.
    expect(sent).toEqual([90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]);
    expect(s.skipped).toBe(89);
  });

  test('end bounds the run: no tick at or after it is sent, and nextDue becomes Infinity', () => {
    const s = new Schedule({ hz: 10, origin: 0 });
    s.end = s.tickAt(1000); // first tick due at or after 1 s
    expect(s.end).toBe(10);
    const sent: number[] = [];
    s.take(1000, (n) => sent.push(n));
    expect(sent).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(s.nextDue()).toBe(Infinity);
  });

  test('phase offsets spread game servers over one period, or put them all at 0', () => {
    expect(phaseOffsets(4, 50, true)).toEqual([0, 12.5, 25, 37.5]);
    expect(phaseOffsets(3, 50, false)).toEqual([0, 0, 0]);
  });

  test('a rate must be positive', () => {
    expect(() => new Schedule({ hz: 0, origin: 0 })).toThrow(RangeError);
  });
});

describe('LatencyHistogram', () => {
  test('percentiles of recorded milliseconds, to 3 significant digits', () => {
    const h = new LatencyHistogram();
    for (let i = 1; i <= 1000; i++) h.record(i / 10); // 0.1 .. 100 ms
    const s = h.summary();
    expect(s.count).toBe(1000);
    expect(s.p50).toBeCloseTo(50, 0);
    expect(s.p99).toBeCloseTo(99, 0);
    expect(s.p999).toBeCloseTo(99.9, 0);
    expect(s.max).toBeCloseTo(100, 0);
    expect(s.mean).toBeCloseTo(50.05, 0);
  });

  test('keeps microseconds; negatives record as 0; an empty histogram reads 0', () => {
    const h = new LatencyHistogram();
    expect(h.summary()).toEqual({ count: 0, mean: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0 });
    h.record(0.25);
    h.record(-3);
    expect(h.percentile(100)).toBeCloseTo(0.25, 3);
    expect(h.percentile(0)).toBe(0);
  });

  test('values beyond an hour are clamped and counted, never lost', () => {
    const h = new LatencyHistogram();
    h.record(2 * 3_600_000);
    expect(h.count).toBe(1);
    expect(h.clamped).toBe(1);
    expect(h.summary().max).toBeCloseTo(3_600_000, -3);
  });

  test('merging adds counts; reset forgets', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    for (let i = 0; i < 99; i++) a.record(1);
    b.record(500);
    const all = mergeHistograms([a, b]);
    expect(all.count).toBe(100);
    expect(all.percentile(99)).toBeCloseTo(1, 2);
    expect(all.summary().max).toBeCloseTo(500, 0);
    a.reset();
    expect(a.count).toBe(0);
  });
});

describe('findCapacity', () => {
  const options = { start: 10_000, min: 1000, max: 400_000, step: 400, resolution: 0.05, maxProbes: 20 };

  test('doubles to bracket the threshold, then bisects to within the resolution', async () => {
    const tried: number[] = [];
    const r = await findCapacity(options, async (n) => {
      tried.push(n);
      return { ok: n <= 37_000, detail: n };
    });
    expect(tried.slice(0, 3)).toEqual([10_000, 20_000, 40_000]);
    expect(r.capacity).toBeLessThanOrEqual(37_000);
    expect(r.failedAt! - r.capacity).toBeLessThanOrEqual(Math.max(400, r.capacity * 0.05));
    expect(r.capacity % 400).toBe(0);
    expect(r.atLeast).toBe(false);
    expect(r.probes.map((p) => p.agents)).toEqual(tried);
    expect(r.probes.every((p) => p.ok === p.agents <= 37_000)).toBe(true);
  });

  test('halves when the first guess fails', async () => {
    const r = await findCapacity(options, async (n) => ({ ok: n <= 3000, detail: null }));
    expect(r.probes[0]!.agents).toBe(10_000);
    expect(r.probes[1]!.agents).toBe(5200); // 5000 rounded to a multiple of 400
    expect(r.capacity).toBeLessThanOrEqual(3000);
    expect(r.capacity).toBeGreaterThanOrEqual(3000 * 0.95 - 400);
  });

  test('reports "at least max" when max passes, and 0 when min fails', async () => {
    const all = await findCapacity(options, async () => ({ ok: true, detail: null }));
    expect(all.capacity).toBe(400_000);
    expect(all.atLeast).toBe(true);
    expect(all.failedAt).toBeUndefined();
    const none = await findCapacity(options, async () => ({ ok: false, detail: null }));
    expect(none.capacity).toBe(0);
    expect(none.failedAt).toBe(1200); // min rounded up to a step
  });

  test('never runs more than maxProbes probes', async () => {
    let n = 0;
    const r = await findCapacity({ ...options, maxProbes: 3, resolution: 0.001 }, async (a) => ({ ok: a < 123_457 + n++ * 0, detail: null }));
    expect(r.probes.length).toBeLessThanOrEqual(3);
  });

  test('roundTo gives multiples of the step, at least one step', () => {
    expect(roundTo(1234, 400)).toBe(1200);
    expect(roundTo(10, 400)).toBe(400);
  });
});

describe('reading /metrics', () => {
  const before = parseMetrics(
    [
      '# HELP canopy_ticks_total Session ticks run',
      '# TYPE canopy_ticks_total counter',
      'canopy_ticks_total{mode="fixed"} 100',
      'canopy_ticks_total{mode="lockstep"} 7',
      'canopy_missed_ticks_total 1',
      'canopy_errors_total{code="E_BAD_FIELD"} 2',
      'canopy_tick_lateness_seconds_bucket{le="0.001"} 50',
      'canopy_tick_lateness_seconds_bucket{le="0.01"} 90',
      'canopy_tick_lateness_seconds_bucket{le="+Inf"} 100',
      'process_cpu_seconds_total 1.5',
    ].join('\n'),
  );
  const after = parseMetrics(
    [
      'canopy_ticks_total{mode="fixed"} 300',
      'canopy_ticks_total{mode="lockstep"} 7',
      'canopy_missed_ticks_total 1',
      'canopy_errors_total{code="E_BAD_FIELD"} 2',
      'canopy_errors_total{code="E_LIMIT"} 3',
      'canopy_tick_lateness_seconds_bucket{le="0.001"} 150',
      'canopy_tick_lateness_seconds_bucket{le="0.01"} 288',
      'canopy_tick_lateness_seconds_bucket{le="+Inf"} 300',
      'process_cpu_seconds_total 3.25 1700000000000',
    ].join('\n'),
  );

  test('samples by series, sums over labels, and differences of two scrapes', () => {
    expect(sum(after, 'canopy_ticks_total')).toBe(307);
    expect(sum(after, 'canopy_ticks_total', { mode: 'fixed' })).toBe(300);
    expect(sum(after, 'process_cpu_seconds_total')).toBe(3.25);
    const d = delta(before, after);
    expect(sum(d, 'canopy_ticks_total', { mode: 'fixed' })).toBe(200);
    expect(sum(d, 'canopy_missed_ticks_total')).toBe(0);
    expect(byLabel(d, 'canopy_errors_total', 'code')).toEqual({ E_BAD_FIELD: 0, E_LIMIT: 3 });
  });

  test('histogram quantiles interpolate inside buckets, like histogram_quantile', () => {
    const b = buckets(delta(before, after), 'canopy_tick_lateness_seconds');
    expect(b).toEqual([{ le: 0.001, count: 100 }, { le: 0.01, count: 198 }, { le: Infinity, count: 200 }]);
    expect(quantile(0.5, b)).toBeCloseTo(0.001, 9); // rank 100 = the end of the first bucket
    expect(quantile(0.25, b)).toBeCloseTo(0.0005, 9);
    expect(quantile(0.99, b)).toBeCloseTo(0.001 + 0.009 * (198 - 100) / 98, 9); // rank 198
    expect(quantile(0.999, b)).toBe(0.01); // in +Inf: the highest finite bound
    expect(maxBound(b)).toBe(Infinity);
    expect(fractionAtMost(0.01, b)).toBeCloseTo(0.99, 9);
    expect(Number.isNaN(quantile(0.5, []))).toBe(true);
  });

  test('label values may hold escaped quotes and spaces', () => {
    const s = parseMetrics('canopy_goodbyes_total{reason="slow \\"consumer\\" x"} 4');
    const [key] = [...s.samples.keys()];
    expect(parseSeries(key!)).toEqual({ name: 'canopy_goodbyes_total', labels: { reason: 'slow "consumer" x' } });
    expect(sum(s, 'canopy_goodbyes_total')).toBe(4);
  });
});

describe('command line', () => {
  test('defaults: lockstep, 4 game servers, 20,000 agents at 20 Hz for 60 s, a one-period budget, 2 workers', () => {
    const o = parseOptions([]);
    expect(o).toMatchObject({ modes: ['lockstep'], sessions: 4, agents: 20_000, hz: 20, seconds: 60, warmup: 5, workers: [2], budgetMs: 50, stagger: true, findCapacity: false, url: undefined });
  });

  test('flags', () => {
    const o = parseOptions(['--mode', 'both', '--hz', '30', '--workers', '1,2', '--find-capacity', '--json', 'out.json', '--no-stagger', '--node-args=--max-old-space-size=4096  --cpu-prof']);
    expect(o.modes).toEqual(['lockstep', 'fixed']);
    expect(o.budgetMs).toBeCloseTo(1000 / 30, 9);
    expect(o.workers).toEqual([1, 2]);
    expect(o.findCapacity).toBe(true);
    expect(o.json).toBe('out.json');
    expect(o.stagger).toBe(false);
    expect(o.nodeArgs).toEqual(['--max-old-space-size=4096', '--cpu-prof']);
  });

  test('every run is bounded, and bad values name the flag', () => {
    expect(() => parseOptions(['--seconds', '99999'])).toThrow(/--seconds/);
    expect(() => parseOptions(['--agents', '0'])).toThrow(/--agents/);
    expect(() => parseOptions(['--hz', '0'])).toThrow(/--hz/);
    expect(() => parseOptions(['--mode', 'turbo'])).toThrow(/--mode/);
    expect(() => parseOptions(['--agents', '3', '--sessions', '4'])).toThrow(/one agent per session/);
    expect(() => parseOptions(['--bogus'])).toThrow(OptionsError);
    expect(() => parseOptions(['--url', 'ws://10.0.0.1:8080', '--workers', '2'])).toThrow(/--workers/);
  });

  test('the generator starts services on loopback only', () => {
    expect(isLoopback('127.0.0.1')).toBe(true);
    expect(isLoopback('::1')).toBe(true);
    expect(isLoopback('localhost')).toBe(true);
    expect(isLoopback('0.0.0.0')).toBe(false);
    expect(isLoopback('10.1.2.3')).toBe(false);
  });

  test('--watch: one run per value; a single value with --find-capacity', () => {
    expect(parseOptions([]).watch).toEqual([0]);
    expect(parseOptions(['--watch', '0,10']).watch).toEqual([0, 10]);
    expect(() => parseOptions(['--watch', '-1'])).toThrow(/--watch/);
    expect(() => parseOptions(['--watch', '0,10', '--find-capacity'])).toThrow(/--watch/);
  });

  test('watched agents are spread over the sessions, never beyond their agents', () => {
    expect(watchPlan(['a', 'b'], [3, 1], 4)).toEqual([
      { session: 'a', agent: 0 },
      { session: 'b', agent: 0 },
      { session: 'a', agent: 1 },
      { session: 'a', agent: 2 },
    ]);
    expect(watchPlan(['a'], [2], 5)).toHaveLength(2);
  });

  test('agents are split evenly over the sessions', () => {
    expect(split(10, 4)).toEqual([3, 3, 2, 2]);
    expect(split(8, 2)).toEqual([4, 4]);
  });
});

describe('GameWorld', () => {
  const DT = 0.05;

  function rowsOf(world: GameWorld): unknown[][] {
    const rows = new RowWriter(FIELDS);
    world.writeRows(rows);
    return rows.rows().map((r) => [...r]);
  }

  test('one row per agent, in the declared field order: [id, hp, enemyVisible, enemyDist, enemyPos]', () => {
    const world = new GameWorld(50, 7);
    for (let k = 0; k < 200; k++) world.step(DT); // 10 s: enemies have appeared
    const rows = rowsOf(world);
    expect(rows.length).toBe(50);
    rows.forEach((r, i) => {
      expect(r.length).toBe(1 + FIELDS.length);
      expect(r[0]).toBe(i);
      expect(Number.isInteger(r[1])).toBe(true);
      // A visible enemy has a distance and an [x, y] position; none has neither.
      const shape = r.slice(2).map((v) => (v === null ? 'null' : Array.isArray(v) && v.length === 2 && v.every((n) => typeof n === 'number') ? 'pos' : String(v === true ? 'seen' : typeof v)));
      expect([['seen', 'number', 'pos'], ['boolean', 'null', 'null']]).toContainEqual(shape);
    });
    expect(rows.some((r) => r[2] === true)).toBe(true);
    expect(rows.some((r) => r[2] === false)).toBe(true);
    expect(world.counters.encounters).toBeGreaterThan(0);
  });

  test('for the squad tree: pos, lastHit and formationSlot after the guard fields, and a world of enemies and cover', () => {
    const world = new GameWorld(300, 7, null, true);
    expect(world.fields).toEqual([...FIELDS, 'pos', 'lastHit', 'formationSlot']);
    for (let k = 0; k < 200; k++) world.step(DT);
    const rows = new RowWriter(world.fields);
    world.writeRows(rows);
    const isPoint = (v: unknown): boolean => Array.isArray(v) && v.length === 2 && v.every((n) => typeof n === 'number');
    for (const r of rows.rows()) {
      expect(isPoint(r[5]) && isPoint(r[7])).toBe(true);
      expect(r[6] === null || typeof r[6] === 'number').toBe(true);
    }
    expect(rows.rows().some((r) => typeof r[6] === 'number')).toBe(true);
    const shared = world.worldState()!;
    expect(shared.enemies.length).toBeGreaterThan(0);
    expect(shared.enemies.length).toBeLessThanOrEqual(64);
    expect(shared.enemies.every(isPoint) && shared.cover.every(isPoint)).toBe(true);
    expect(new GameWorld(10, 7).worldState()).toBeUndefined();
  });

  test('the rows it sends (writeEncodedRows, a RowEncoder) are the bytes of its RowWriter rows: guard and squad fields, all agents or some', () => {
    for (const squad of [false, true]) {
      const world = new GameWorld(300, 7, squad ? agentIds('string', 2, 300) : null, squad);
      for (let k = 0; k < 200; k++) world.step(DT);
      const writer = new RowWriter(world.fields);
      const encoder = new RowEncoder(world.fields);
      for (const only of [null, [0, 5, 17, 299]]) {
        world.writeRows(writer, only);
        world.writeEncodedRows(encoder, only);
        expect(encoder.length).toBe(only === null ? 300 : 4);
        expect(Buffer.from(encoder.bytes()).equals(encode(writer.rows()))).toBe(true);
      }
    }
  });

  test('a moveTo finishes when the agent arrives: distance / speed', () => {
    const world = new GameWorld(1, 3);
    world.step(DT);
    // Walk to waypoint 1: two waypoints of a circle of radius r are r·√3 apart.
    world.apply([[0, 1, 'moveTo', { waypoint: 1, speed: 'walk' }]], []);
    const expectedTicks = Math.ceil((RULES.waypointRadius * Math.sqrt(3)) / RULES.walkSpeed / DT);
    let at = -1;
    for (let k = 1; k <= expectedTicks + 5 && at < 0; k++) {
      world.step(DT);
      if (world.results().some((r) => r[0] === 0 && r[1] === 1)) at = k;
    }
    expect(Math.abs(at - expectedTicks)).toBeLessThanOrEqual(1);
    expect(world.doingOf(0)).toBe('nothing');
  });

  test('shoot ends after a short time; aim is instant and gets no result; unknown actions end after a default time', () => {
    const world = new GameWorld(2, 3);
    world.apply([[0, 1, 'aim', { at: [0, 0] }], [0, 2, 'shoot', { at: [0, 0] }], [1, 1, 'dance', {}]], []);
    const results: Array<readonly unknown[]> = [];
    for (let k = 0; k < 20; k++) {
      world.step(DT);
      for (const r of world.results()) results.push([...r, world.time]);
    }
    expect(results.map((r) => [r[0], r[1]])).toEqual([[0, 2], [1, 1]]);
    expect(results[0]![3]).toBeCloseTo(RULES.shootSeconds, 1);
    expect(results[1]![3]).toBeCloseTo(RULES.otherSeconds, 1);
  });

  test('a cancel stops the action: no result follows; a cancel for another seq is counted stale', () => {
    const world = new GameWorld(1, 3);
    world.apply([[0, 5, 'flee', {}]], []);
    world.step(DT);
    world.apply([], [[0, 4]]);
    expect(world.counters.staleCancels).toBe(1);
    expect(world.doingOf(0)).toBe('flee');
    world.apply([], [[0, 5]]);
    expect(world.doingOf(0)).toBe('nothing');
    for (let k = 0; k < 100; k++) {
      world.step(DT);
      expect(world.results().filter((r) => r[1] === 5)).toEqual([]);
    }
  });

  test('unknown ids in decisions are ignored and counted', () => {
    const world = new GameWorld(2, 3);
    expect(world.apply([[7, 1, 'flee', {}], ['x', 1, 'flee', {}]], [[9, 1]])).toBe(3);
  });

  test('agents take damage from enemies in range and regenerate out of it; a world is deterministic for a seed', () => {
    const a = new GameWorld(200, 11);
    const b = new GameWorld(200, 11);
    let hurt = false;
    for (let k = 0; k < 400; k++) {
      a.step(DT);
      b.step(DT);
      for (let i = 0; i < 200; i++) if (a.hpOf(i) < 60) hurt = true;
    }
    expect(hurt).toBe(true);
    expect(rowsOf(a)).toEqual(rowsOf(b));
    for (let i = 0; i < 200; i++) {
      expect(a.hpOf(i)).toBeGreaterThan(0);
      expect(a.hpOf(i)).toBeLessThanOrEqual(RULES.maxHp);
    }
  });
});
