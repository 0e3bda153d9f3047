// The numbers that stamp slots on a worker (a stage's rows read into spare observations, a frame's results waiting
// for their agents' ticks): a stamp must never match a slot stamped long before, even after two billion ticks.

import { describe, expect, it } from 'vitest';
import { nextStamp } from '../../src/service/pool/host.js';

describe('stamp numbers (nextStamp)', () => {
  it('start at 1, never 0 (what every stamp starts at), and count up', () => {
    const counter = { stage: 0 };
    const stamps = new Int32Array(4);
    expect([nextStamp(counter, stamps), nextStamp(counter, stamps), nextStamp(counter, stamps)]).toEqual([1, 2, 3]);
  });

  it('clear the stamps and start again at 1 rather than wrap around to a number a slot may still hold', () => {
    const counter = { stage: 0x7ffffffe };
    const stamps = new Int32Array([1, 5, 0x7fffffff, -3]);
    expect(nextStamp(counter, stamps)).toBe(0x7fffffff);
    expect(Array.from(stamps)).toEqual([1, 5, 0x7fffffff, -3]);
    expect(nextStamp(counter, stamps)).toBe(1);
    expect(Array.from(stamps)).toEqual([0, 0, 0, 0]);
    expect(nextStamp(counter, stamps)).toBe(2);
  });
});
