// Agent.restartOn: how an agent moves to a reloaded version of its tree (docs/reload.md, policy `restart`).

import { describe, expect, test } from 'vitest';
import { Agent, type DecisionSink } from '../../src/bt/index.js';
import { TreeLibrary } from '../../src/bt/library.js';

function compile(def: unknown) {
  const r = TreeLibrary.fromDefinitions({ guard: def });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.library.get('guard')!;
}

function sink() {
  const log: string[] = [];
  const out: DecisionSink = {
    action: (_a, seq, name, args) => void log.push(`action ${seq} ${name} ${JSON.stringify(args)}`),
    cancel: (_a, seq) => void log.push(`cancel ${seq}`),
    finished: (_a, status) => void log.push(`done ${status}`),
    error: (_a, code) => void log.push(`error ${code}`),
    log: () => {},
  };
  return { log, out };
}

describe('Agent.restartOn', () => {
  const v1 = compile({ blackboard: { alert: 0, mood: 'calm' }, root: { type: 'action', action: 'patrol', args: { alert: 'bb.alert' } } });
  const v2 = compile({ blackboard: { alert: 0, fresh: 7 }, root: { type: 'action', action: 'hunt', args: { alert: 'bb.alert', fresh: 'bb.fresh' } } });

  test('keeps the keys the new version declares, gives new keys their initial values, continues seq and the generator', () => {
    const old = new Agent(v1, 'orc', { label: 'Red/Orc', seed: 42, bb: { alert: 5, mood: 'angry' } });
    const twin = new Agent(v1, 'orc', { label: 'Red/Orc', seed: 42 });
    const { log, out } = sink();
    old.tick(1, 0.05, out);
    old.random();
    twin.random();
    old.halt(out);
    const next = old.restartOn(v2);
    expect(next.tree).toBe(v2);
    expect(next.label).toBe('Red/Orc');
    expect(next.bb).toEqual({ alert: 5, fresh: 7 });
    expect(next.time).toBe(1);
    next.tick(1.05, 0.05, out);
    expect(log).toEqual(['action 1 patrol {"alert":5}', 'cancel 1', 'action 2 hunt {"alert":5,"fresh":7}']);
    // The generator goes on where the old agent left it.
    expect(next.random()).toBe(twin.random());
  });

  test('an agent stopped by an error starts again', () => {
    const old = new Agent(v1, 1);
    old.stopped = true;
    expect(old.restartOn(v2).stopped).toBe(false);
  });
});

describe('Agent.out between ticks', () => {
  test('each tick and each halt writes to the sink it was given, never to an earlier one', () => {
    const tree = compile({ root: { type: 'sequence', children: [{ type: 'action', action: 'walk' }, { type: 'action', action: 'look', instant: true }] } });
    const agent = new Agent(tree, 'orc');
    const first = sink();
    const second = sink();
    const third = sink();
    agent.tick(1, 0.05, first.out);
    agent.tick(1.05, 0.05, first.out);
    agent.halt(second.out);
    agent.tick(1.1, 0.05, third.out);
    agent.deliverResult(2, true);
    agent.tick(1.15, 0.05, third.out);
    expect(first.log).toEqual(['action 1 walk {}']);
    expect(second.log).toEqual(['cancel 1']);
    expect(third.log).toEqual(['action 2 walk {}', 'action 3 look {}', 'done success']);
  });
});
