// FastCounter and FastHistogram (src/service/metrics.ts): counts and observations held on the hot path must reach the
// scrape exactly as prom-client's own metrics would have them, and a reset must drop what was held but not yet scraped.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, test } from 'vitest';
import { FastCounter, FastHistogram } from '../../src/service/metrics.js';

/** The exposition's lines, sorted: the order of a counter's label values is the order they were first counted. */
const lines = async (registry: Registry): Promise<string[]> => (await registry.metrics()).split('\n').toSorted();

describe('FastCounter', () => {
  test('a scrape shows what prom-client counting every call itself would show', async () => {
    const fast = new Registry();
    const plain = new Registry();
    const a = new FastCounter({ name: 'demo_bytes_total', help: 'Bytes', labelNames: ['transport'], registers: [fast] });
    const b = new Counter({ name: 'demo_bytes_total', help: 'Bytes', labelNames: ['transport'], registers: [plain] });
    const c = new FastCounter({ name: 'demo_ticks_total', help: 'Ticks', registers: [fast] });
    const d = new Counter({ name: 'demo_ticks_total', help: 'Ticks', registers: [plain] });
    const ws = a.tally('ws');
    for (let i = 0; i < 100; i++) {
      a.inc({ transport: 'http' }, i);
      b.inc({ transport: 'http' }, i);
      ws.inc(2);
      b.inc({ transport: 'ws' }, 2);
      c.inc();
      d.inc();
    }
    c.inc(0.5);
    d.inc(0.5);
    // Without a value for its label: a series without the label, as prom-client keeps one.
    a.inc({}, 3);
    b.inc({}, 3);
    expect(await lines(fast)).toEqual(await lines(plain));
    // Counted again after a scrape: added to what the scrape flushed, not lost or counted twice.
    a.inc({ transport: 'ws' }, 3);
    b.inc({ transport: 'ws' }, 3);
    expect(await lines(fast)).toEqual(await lines(plain));
    expect(await fast.metrics()).toMatch(/^demo_bytes_total\{transport="ws"\} 203$/m);
    expect((await a.get()).values.find((v) => v.labels.transport === 'http')?.value).toBe(4950);
  });

  test('a reset drops the counts not yet scraped', async () => {
    const registry = new Registry();
    const counter = new FastCounter({ name: 'demo_frames_total', help: 'Frames', labelNames: ['mode'], registers: [registry] });
    counter.inc({ mode: 'lockstep' });
    counter.reset();
    expect(await registry.metrics()).not.toMatch(/^demo_frames_total\{/m);
    counter.inc({ mode: 'fixed' }, 2);
    expect(await registry.metrics()).toMatch(/^demo_frames_total\{mode="fixed"\} 2$/m);
  });

  test('a bad value fails where it is counted, as prom-client fails, not at the next scrape', async () => {
    const registry = new Registry();
    const counter = new FastCounter({ name: 'demo_actions_total', help: 'Actions', registers: [registry] });
    for (const bad of [-1, Number.NaN, Infinity]) expect(() => counter.inc(bad)).toThrow(TypeError);
    counter.inc(4);
    expect(await registry.metrics()).toMatch(/^demo_actions_total 4$/m);
    expect(() => new FastCounter({ name: 'demo_two_total', help: 'Two labels', labelNames: ['a', 'b'], registers: [registry] })).toThrow(/at most one label/);
  });
});

describe('FastHistogram', () => {
  const buckets = [0.001, 0.01, 0.1, 1];

  test('a scrape shows what prom-client observing every value itself would show, past a full buffer too', async () => {
    const fast = new Registry();
    const plain = new Registry();
    const a = new FastHistogram({ name: 'demo_tick_seconds', help: 'Ticks', labelNames: ['mode'], buckets, registers: [fast] });
    const b = new Histogram({ name: 'demo_tick_seconds', help: 'Ticks', labelNames: ['mode'], buckets, registers: [plain] });
    const c = new FastHistogram({ name: 'demo_late_seconds', help: 'Late', buckets, registers: [fast] });
    const d = new Histogram({ name: 'demo_late_seconds', help: 'Late', buckets, registers: [plain] });
    const lockstep = a.of('lockstep');
    // 10,000 values: more than a buffer holds (1,024), so most of them are handed over before the scrape.
    for (let i = 0; i < 10_000; i++) {
      const v = ((i * 7919) % 2000) / 1000;
      lockstep.observe(v);
      b.observe({ mode: 'lockstep' }, v);
      a.observe({ mode: 'fixed' }, v / 10);
      b.observe({ mode: 'fixed' }, v / 10);
      c.observe(v / 100);
      d.observe(v / 100);
    }
    expect(await lines(fast)).toEqual(await lines(plain));
    lockstep.observe(0.5);
    b.observe({ mode: 'lockstep' }, 0.5);
    expect(await lines(fast)).toEqual(await lines(plain));
    expect((await a.get()).values.find((v) => v.metricName === 'demo_tick_seconds_count' && v.labels.mode === 'lockstep')?.value).toBe(10_001);
  });

  test('a reset drops the observations not yet scraped; a bad value fails where it is observed', async () => {
    const registry = new Registry();
    const h = new FastHistogram({ name: 'demo_frame_seconds', help: 'Frames', labelNames: ['mode'], buckets, registers: [registry] });
    h.observe({ mode: 'lockstep' }, 0.002);
    h.reset();
    expect(await registry.metrics()).not.toMatch(/^demo_frame_seconds_count\{/m);
    for (const bad of [Number.NaN, Infinity, -Infinity]) expect(() => h.of('fixed').observe(bad)).toThrow(TypeError);
    h.of('fixed').observe(0.002);
    expect(await registry.metrics()).toMatch(/^demo_frame_seconds_bucket\{le="0.01",mode="fixed"\} 1$/m);
  });
});
