// FastCounter (src/service/metrics.ts): counts kept in plain numbers on the hot path must reach the scrape exactly as
// prom-client's own counter would have them, and a reset must drop what was counted but not yet scraped.
import { Counter, Registry } from 'prom-client';
import { describe, expect, test } from 'vitest';
import { FastCounter } from '../../src/service/metrics.js';

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
