// A host's decision columns and the router's merge, without threads: actions are encoded in the host's sink, merged
// from several hosts in spawn order as bytes, and parts kept past their tick survive their columns being reused.

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Agent } from '../../src/bt/index.js';
import { decode, encodeDecisions } from '../../src/protocol/index.js';
import { ColumnSink, keepParts, mergeDecisions, type DecisionLists } from '../../src/service/pool/decisions.js';
import { SessionShard } from '../../src/service/pool/shard.js';

/** What the sink reads of an agent: its id. */
const agent = (id: number | string): Agent => ({ id }) as unknown as Agent;

/** One host's tick: `acts` as [slot, id, seq, action, args], ids and spawn ordinals by slot. */
function hostTick(acts: ReadonlyArray<[number, number | string, number, string, Record<string, unknown>]>, ids: Array<number | string>, ordinals: number[]): { sink: ColumnSink; part: DecisionLists } {
  const sink = new ColumnSink();
  for (const [slot, id, seq, name, args] of acts) {
    sink.slot = slot;
    sink.action(agent(id), seq, name, args);
  }
  return { sink, part: { columns: sink.columns(), ids, ordinals } };
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
    a.sink.columns().actions.bytes.fill(0xc1);
    b.sink.columns().actions.bytes.fill(0xc1);
    expect(mergeDecisions(5, 5, kept, []).actions).toEqual([
      [1, 1, 'moveTo', { to: [1, 2] }],
      [2, 5, 'shoot', { at: [3, 4] }],
    ]);
  });

  test('a sink reused for the next tick starts empty, its buffers grown as a tick needs', () => {
    const sink = new ColumnSink();
    for (let i = 0; i < 500; i++) {
      sink.slot = i;
      sink.action(agent(i), 1, 'moveTo', { to: [i, i + 0.5], speed: 'run' });
    }
    const first = mergeDecisions(1, 1, [{ columns: sink.columns(), ids: Array.from({ length: 500 }, (_, i) => i), ordinals: Array.from({ length: 500 }, (_, i) => i) }], []);
    expect(first.actions).toHaveLength(500);
    expect(first.actions[499]).toEqual([499, 1, 'moveTo', { to: [499, 499.5], speed: 'run' }]);
    sink.reset();
    sink.slot = 0;
    sink.action(agent(0), 2, 'shoot', {});
    expect(mergeDecisions(2, 2, [{ columns: sink.columns(), ids: [0], ordinals: [0] }], []).actions).toEqual([[0, 2, 'shoot', {}]]);
    // The first tick's merged actions are a copy of their own.
    expect(first.actions[0]).toEqual([0, 1, 'moveTo', { to: [0, 0.5], speed: 'run' }]);
  });

  test('a reply carries the buffers only when the router does not hold them: the first tick, a list grown, another router', () => {
    const sink = new ColumnSink();
    const shard = new SessionShard(1);
    const tick = (acts: number, known: number) => {
      sink.reset();
      for (let i = 0; i < acts; i++) {
        sink.slot = i;
        sink.action(agent(i), i, 'moveTo', { to: [i, 10 - i] });
        sink.finished(agent(i), 'success');
      }
      sink.slot = 0;
      sink.error(agent(0), 'E_PLUGIN', `after ${acts}`);
      // As a worker's reply crosses: a structured clone, the buffers shared memory.
      return structuredClone(sink.shared(known));
    };
    const merged = (d: ReturnType<typeof tick>, n: number) => mergeDecisions(1, 1, [{ columns: shard.decisions(d), ids: Array.from({ length: n }, (_, i) => i), ordinals: Array.from({ length: n }, (_, i) => i) }], []);
    const first = tick(3, -1);
    expect(first.buffers).not.toBeNull();
    expect(first.buffers!.every((b) => b.buffer instanceof SharedArrayBuffer)).toBe(true);
    expect(merged(first, 3).actions).toEqual([0, 1, 2].map((i) => [i, i, 'moveTo', { to: [i, 10 - i] }]));
    // The router holds them now: the next tick is numbers only, read in the buffers it holds.
    const second = tick(2, first.gen);
    expect(second.buffers).toBeNull();
    expect(second.gen).toBe(first.gen);
    const d2 = merged(second, 2);
    expect(d2.actions).toEqual([0, 1].map((i) => [i, i, 'moveTo', { to: [i, 10 - i] }]));
    expect(d2.done).toEqual([[0, 'success'], [1, 'success']]);
    expect(d2.errors).toEqual([[0, 'E_PLUGIN', 'after 2']]);
    // 500 actions outgrow the buffers: new ones, sent again, under a new generation.
    const third = tick(500, second.gen);
    expect(third.buffers).not.toBeNull();
    expect(third.gen).not.toBe(first.gen);
    expect(merged(third, 500).actions[499]).toEqual([499, 499, 'moveTo', { to: [499, -489] }]);
    // A router that names another generation (a replacement worker's replay, say) is sent them again.
    expect(tick(1, first.gen).buffers).not.toBeNull();
    // Numbers naming buffers this router was never sent are refused, not read in others.
    expect(() => new SessionShard(1).decisions(tick(1, third.gen))).toThrow(/not sent/);
    // No log line this tick: the reply says null, the router reads an empty list.
    expect(tick(1, third.gen).logs).toBeNull();
  });

  test('every list merges as a stable sort of the parts by spawn order: parts in order or not, carried parts, any number of hosts', () => {
    const entry = fc.record({ slot: fc.nat(5), kind: fc.constantFrom('action', 'cancel', 'done', 'error'), seq: fc.nat(9) });
    // Ordinals in any order, or rising with the slot (a host whose slot order is spawn order, which it may say: `claim`).
    const slotOrdinals = fc.oneof(fc.array(fc.nat(12), { minLength: 6, maxLength: 6 }), fc.uniqueArray(fc.nat(40), { minLength: 6, maxLength: 6 }).map((o) => o.toSorted((x, y) => x - y)));
    const part = fc.record({ ordinals: slotOrdinals, entries: fc.array(entry, { maxLength: 12 }), claim: fc.boolean() });
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), fc.boolean(), (spec, keep) => {
        const want = { actions: [] as Array<[number, unknown[]]>, cancels: [] as Array<[number, unknown[]]>, done: [] as Array<[number, unknown[]]>, errors: [] as Array<[number, unknown[]]> };
        let parts: DecisionLists[] = spec.map(({ ordinals, entries, claim }, k) => {
          // Integer ids (written in place) on even parts, string ids (through the codec) on odd ones.
          const ids = ordinals.map((_, slot) => (k % 2 === 0 ? k * 100 + slot : `h${k}s${slot}`));
          const sink = new ColumnSink();
          for (const { slot, kind, seq } of entries) {
            sink.slot = slot;
            const a = agent(ids[slot]!);
            const key = ordinals[slot]!;
            if (kind === 'action') {
              sink.action(a, seq, 'act', { n: seq });
              want.actions.push([key, [ids[slot], seq, 'act', { n: seq }]]);
            } else if (kind === 'cancel') {
              sink.cancel(a, seq);
              want.cancels.push([key, [ids[slot], seq]]);
            } else if (kind === 'done') {
              sink.finished(a, seq % 2 === 0 ? 'success' : 'failure');
              want.done.push([key, [ids[slot], seq % 2 === 0 ? 'success' : 'failure']]);
            } else {
              sink.error(a, 'E_PLUGIN', `m${seq}`);
              want.errors.push([key, [ids[slot], 'E_PLUGIN', `m${seq}`]]);
            }
          }
          const rising = ordinals.every((o, slot) => slot === 0 || o > ordinals[slot - 1]!);
          return { columns: sink.columns(), ids, ordinals, slotsInSpawnOrder: claim && rising };
        });
        if (keep) {
          parts = keepParts(parts);
          // The hosts write over their columns and reuse their slots; kept parts do not see it.
          for (const p of spec) p.ordinals.fill(0);
        }
        const d = mergeDecisions(3, 3, parts, [[99, 'E_WORKER', 'lost']]);
        const sorted = (l: Array<[number, unknown[]]>) => l.toSorted((x, y) => x[0] - y[0]).map(([, t]) => t);
        expect(d.actions).toEqual(sorted(want.actions));
        expect(d.cancels).toEqual(sorted(want.cancels));
        expect(d.done).toEqual(sorted(want.done));
        expect(d.errors).toEqual([[99, 'E_WORKER', 'lost'], ...sorted(want.errors)]);
        expect(d.encodedActions.count).toBe(want.actions.length);
      }),
      { numRuns: 500 },
    );
  });
  test("a shard's slot order is spawn order until a slot is reused or an ordinal comes out of order", () => {
    const fresh = new SessionShard(0);
    for (let i = 0; i < 5; i++) fresh.allocate(i, i * 2);
    expect(fresh.slotsInSpawnOrder).toBe(true);
    // A freed slot is reused once a tick has carried it: the newcomer's ordinal sits below later slots'.
    fresh.release(1);
    fresh.take();
    expect(fresh.allocate(9, 10)).toBe(1);
    expect(fresh.slotsInSpawnOrder).toBe(false);
    fresh.allocate(10, 11);
    expect(fresh.slotsInSpawnOrder).toBe(false);
    // An imported session's agents may come with their ordinals in any order.
    const imported = new SessionShard(0);
    imported.allocate('a', 3);
    imported.allocate('b', 1);
    expect(imported.slotsInSpawnOrder).toBe(false);
  });
});
