// Semantics of the decorators (trees.md "Decorators"): scripted child, every status asserted per tick.

import { describe, expect, it } from 'vitest';
import { events, Harness, s, tree } from './helpers.js';

const dec = (type: string, child: ReturnType<typeof s>, params: Record<string, unknown> = {}) => tree({ type, name: 'd', ...params, child });

describe('inverter, succeeder, failer', () => {
  it('inverter swaps success and failure, running unchanged', () => {
    const h = new Harness(dec('inverter', s('c', 'running', 'success', 'failure')));
    expect([h.step(), h.status('d')][1]).toBe('running');
    h.step();
    expect(h.statuses()).toEqual({ d: 'failure', c: 'success' });
    h.step();
    expect(h.statuses()).toEqual({ d: 'success', c: 'failure' });
  });

  it('succeeder / failer force any finished result', () => {
    for (const [type, word] of [['succeeder', 'success'], ['failer', 'failure']] as const) {
      const h = new Harness(dec(type, s('c', 'running', 'failure', 'success')));
      h.step();
      expect(h.status('d')).toBe('running');
      h.step();
      expect(h.status('d')).toBe(word);
      h.step();
      expect(h.status('d')).toBe(word);
    }
  });
});

describe('repeat', () => {
  it('one repetition per tick: restarts the child after each success, success after `times`', () => {
    const h = new Harness(dec('repeat', s('c', 'success'), { times: 3 }));
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      h.step();
      seen.push(`${h.status('d')}/${h.status('c')}`);
    }
    expect(seen).toEqual(['running/success', 'running/success', 'success/success', 'running/success']);
    expect(events).toEqual(['start c', 'start c', 'start c', 'start c']);
  });

  it('child failure → failure; a running child is resumed', () => {
    const h = new Harness(dec('repeat', s('c', 'running', 'success', 'failure'), { times: 5 }));
    h.step();
    h.step();
    expect(h.status('d')).toBe('running');
    h.step();
    expect(h.statuses()).toEqual({ d: 'failure', c: 'failure' });
    expect(events).toEqual(['start c', 'tick c', 'start c']);
  });

  it('times: -1 repeats forever', () => {
    const h = new Harness(dec('repeat', s('c', 'success'), { times: -1 }));
    for (let i = 0; i < 50; i++) h.step();
    expect(h.status('d')).toBe('running');
    expect(events.length).toBe(50);
  });
});

describe('retry', () => {
  it('one attempt per tick; success → success', () => {
    const h = new Harness(dec('retry', s('c', 'failure', 'failure', 'success'), { attempts: 5 }));
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      h.step();
      seen.push(h.status('d'));
    }
    expect(seen).toEqual(['running', 'running', 'success']);
  });

  it('after `attempts` failures → failure', () => {
    const h = new Harness(dec('retry', s('c', 'failure'), { attempts: 2 }));
    h.step();
    expect(h.status('d')).toBe('running');
    h.step();
    expect(h.status('d')).toBe('failure');
  });
});

describe('keepRunningUntilFailure', () => {
  it('restarts the child after success, fails on failure', () => {
    const h = new Harness(dec('keepRunningUntilFailure', s('c', 'success', 'running', 'success', 'failure')));
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      h.step();
      seen.push(h.status('d'));
    }
    expect(seen).toEqual(['running', 'running', 'running', 'failure']);
    expect(events).toEqual(['start c', 'start c', 'tick c', 'start c']);
  });
});

describe('cooldown (tree time)', () => {
  it('after the child finishes, fails without ticking it until `seconds` have passed', () => {
    const h = new Harness(dec('cooldown', s('c', 'success'), { seconds: 0.3 }), { period: 0.1 });
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      h.step();
      seen.push(h.status('d'));
    }
    // t=0 success; t=0.1, 0.2 cooling; t=0.3 ready again (success); t=0.4 cooling.
    expect(seen).toEqual(['success', 'failure', 'failure', 'success', 'failure']);
    expect(events).toEqual(['start c', 'start c']);
  });

  it('a running child is not interrupted by the cooldown; it starts when the child finishes', () => {
    const h = new Harness(dec('cooldown', s('c', 'running', 'failure', 'success'), { seconds: 0.2 }), { period: 0.1 });
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      h.step();
      seen.push(h.status('d'));
    }
    expect(seen).toEqual(['running', 'failure', 'failure', 'success', 'failure']);
  });
});

describe('timeLimit (tree time)', () => {
  it('halts a child still running `seconds` after entry and fails', () => {
    const h = new Harness(dec('timeLimit', s('c', 'running'), { seconds: 0.25 }), { period: 0.1 });
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      h.step();
      seen.push(`${h.status('d')}/${h.status('c')}`);
    }
    // entry t=0; t=0.1, 0.2 still inside; t=0.3 ≥ 0.25 → halted.
    expect(seen).toEqual(['running/running', 'running/running', 'running/running', 'failure/halted']);
    expect(events).toEqual(['start c', 'tick c', 'tick c', 'halt c']);
  });

  it('a child finishing in time returns its own result', () => {
    const h = new Harness(dec('timeLimit', s('c', 'running', 'success'), { seconds: 1 }));
    h.step();
    h.step();
    expect(h.status('d')).toBe('success');
  });
});

describe('delay (tree time)', () => {
  it('returns running for `seconds` after entry, then ticks the child', () => {
    const h = new Harness(dec('delay', s('c', 'success'), { seconds: 0.2 }), { period: 0.1 });
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      h.step();
      seen.push(`${h.status('d')}/${h.status('c')}`);
    }
    expect(seen).toEqual(['running/idle', 'running/idle', 'success/success', 'running/success']);
  });
});

describe('once', () => {
  it('ticks the child until it finishes once, then returns that result without ticking it', () => {
    const h = new Harness(dec('once', s('c', 'running', 'failure', 'success')));
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      h.step();
      seen.push(h.status('d'));
    }
    expect(seen).toEqual(['running', 'failure', 'failure', 'failure']);
    expect(events).toEqual(['start c', 'tick c']);
  });
});
