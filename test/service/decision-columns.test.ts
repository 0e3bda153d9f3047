// A host's decision columns and the router's merge, without threads: actions are encoded in the host's sink, merged
// from several hosts in spawn order as bytes, and parts kept past their tick survive their columns being reused.

import { describe, expect, test } from 'vitest';
import type { Agent } from '../../src/bt/index.js';
import { decode, encodeDecisions } from '../../src/protocol/index.js';
import { ColumnSink, keepParts, mergeDecisions, unpackDecisions, type DecisionLists } from '../../src/service/pool/decisions.js';

/** What the sink reads of an agent: its id. */
const agent = (id: number | string): Agent => ({ id }) as unknown as Agent;

/** One host's tick: `acts` as [slot, id, seq, action, args], ids and spawn ordinals by slot. */
function hostTick(acts: ReadonlyArray<[number, number | string, number, string, Record<string, unknown>]>, ids: Array<number | string>, ordinals: number[]): { sink: ColumnSink; part: DecisionLists } {
  const sink = new ColumnSink(null);
  for (const [slot, id, seq, name, args] of acts) {
    sink.slot = slot;
    sink.action(agent(id), seq, name, args);
  }
  return { sink, part: unpackDecisions(sink.columns(), ids, ordinals) };
}

describe('decision columns', () => {
  test("two hosts' actions merge in spawn order, as the frame written from the values", () => {
    // Spawn order 0..5 alternates between the hosts: host A has spawns 0, 2, 4; host B 1, 3, 5 (B's slot 2 is spawn 5).
    const a = hostTick([[0, 'a0', 1, 'moveTo', { to: [1, 2] }], [1, 'a2', 7, 'shoot', {}], [2, 'a4', 3, 'flee', { from: [0.5, 9] }]], ['a0', 'a2', 'a4'], [0, 2, 4]);
    const b = hostTick([[0, 2 ** 40, 2, 'aim', { at: null }], [2, 'b5', 1, 'moveTo', { speed: 'run' }]], [2 ** 40, 'b3', 'b5'], [1, 3, 5]);
    const d = mergeDecisions(4, 4, [a.part, b.part], []);
    const expected = [
      ['a0', 1, 'moveTo', { to: [1, 2] }],
      [2 ** 40, 2, 'aim', { at: null }],
      ['a2', 7, 'shoot', {}],
      ['a4', 3, 'flee', { from: [0.5, 9] }],
      ['b5', 1, 'moveTo', { speed: 'run' }],
    ];
    expect(d.actions).toEqual(expected);
    const spliced = encodeDecisions({ tick: 4, basedOn: 4, encodedActions: d.encodedActions });
    expect(spliced.equals(encodeDecisions({ tick: 4, basedOn: 4, actions: expected as never }))).toBe(true);
    expect(decode(spliced)).toEqual({ t: 'decisions', tick: 4, basedOn: 4, actions: expected });
  });

  test('parts kept past their tick keep their actions when the host reuses its columns', () => {
    const a = hostTick([[0, 1, 1, 'moveTo', { to: [1, 2] }]], [1], [0]);
    const b = hostTick([[0, 2, 5, 'shoot', { at: [3, 4] }]], [2], [1]);
    const kept = keepParts([a.part, b.part]);
    // The columns go back to their hosts with the next tick, which write over them.
    a.sink.columns().actionBytes.fill(0xc1);
    b.sink.columns().actionBytes.fill(0xc1);
    expect(mergeDecisions(5, 5, kept, []).actions).toEqual([
      [1, 1, 'moveTo', { to: [1, 2] }],
      [2, 5, 'shoot', { at: [3, 4] }],
    ]);
  });

  test('a sink reused for the next tick starts empty, its buffers grown as a tick needs', () => {
    const sink = new ColumnSink(null);
    for (let i = 0; i < 500; i++) {
      sink.slot = i;
      sink.action(agent(i), 1, 'moveTo', { to: [i, i + 0.5], speed: 'run' });
    }
    const first = mergeDecisions(1, 1, [unpackDecisions(sink.columns(), Array.from({ length: 500 }, (_, i) => i), Array.from({ length: 500 }, (_, i) => i))], []);
    expect(first.actions).toHaveLength(500);
    expect(first.actions[499]).toEqual([499, 1, 'moveTo', { to: [499, 499.5], speed: 'run' }]);
    const c = sink.columns();
    sink.reset({ actions: c.actions, actionBytes: c.actionBytes, cancels: c.cancels, done: c.done });
    sink.slot = 0;
    sink.action(agent(0), 2, 'shoot', {});
    expect(mergeDecisions(2, 2, [unpackDecisions(sink.columns(), [0], [0])], []).actions).toEqual([[0, 2, 'shoot', {}]]);
    // The first tick's merged actions are a copy of their own.
    expect(first.actions[0]).toEqual([0, 1, 'moveTo', { to: [0, 0.5], speed: 'run' }]);
  });
});
