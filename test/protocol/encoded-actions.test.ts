// Actions encoded where they are made (a pool worker's sink) and spliced into the `decisions` frame: the frame must
// be byte for byte the one encodeDecisions writes from the values, and the values read back must be those a client
// reads from that frame; the same for decisions merged while a reader lags (HeldDecisions).

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  EncodedTuples,
  HeldDecisions,
  decode,
  encodeActionTuple,
  encodeDecisions,
  type ActionDecision,
  type DecisionsFields,
} from '../../src/protocol/index.js';

/** The actions as a pool carries them: each tuple encoded on its own, copied out, then concatenated. */
function encoded(actions: readonly ActionDecision[]): EncodedTuples<ActionDecision> {
  const parts = actions.map(([id, seq, name, args]) => Buffer.from(encodeActionTuple(id, seq, name, args)));
  return new EncodedTuples(actions.length, Buffer.concat(parts));
}

const id = fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 }), fc.constantFrom(2 ** 40, 2 ** 53 - 1, -(2 ** 50), 4_294_967_296), fc.string({ maxLength: 12 }));
const seq = fc.oneof(fc.nat(), fc.constantFrom(0xffffffff, 2 ** 33, 2 ** 52));
// No `__proto__` keys: the protocol's decoder refuses them (only plugin code can make one, docs/protocol.md).
const value = fc.jsonValue({ maxDepth: 3 }).filter((v) => !JSON.stringify(v).includes('"__proto__"'));
const args = fc.dictionary(fc.string({ maxLength: 8 }).filter((k) => k !== '__proto__'), value, { maxKeys: 4 });
const action = fc.tuple(id, seq, fc.constantFrom('moveTo', 'shoot', 'ü-ñame', ''), args) as fc.Arbitrary<ActionDecision>;
// Lengths around the fixarray (16) and array16 boundaries are the interesting ones.
const actions = fc.oneof(fc.array(action, { maxLength: 20 }), fc.array(action, { minLength: 15, maxLength: 17 }));
const rest = fc.record({
  basedOn: fc.option(seq, { nil: undefined }),
  cancels: fc.array(fc.tuple(id, seq), { maxLength: 3 }),
  done: fc.array(fc.tuple(id, fc.constantFrom('success' as const, 'failure' as const)), { maxLength: 3 }),
  errors: fc.array(fc.tuple(id, fc.constantFrom('E_PLUGIN'), fc.string({ maxLength: 10 })), { maxLength: 2 }),
});

describe('actions encoded where they are made', () => {
  test('the spliced decisions frame is byte for byte the one written from the values', () => {
    fc.assert(
      fc.property(fc.nat(), actions, rest, (tick, list, r) => {
        const fields = { tick, ...r };
        const spliced = encodeDecisions({ ...fields, encodedActions: encoded(list) });
        expect(spliced.equals(encodeDecisions({ ...fields, actions: list }))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  test('the values read back are those a client reads from the frame', () => {
    fc.assert(
      fc.property(actions, (list) => {
        const frame = decode(encodeDecisions({ tick: 1, encodedActions: encoded(list) })) as { actions?: unknown[] };
        expect(encoded(list).decode()).toEqual(frame.actions ?? []);
      }),
      { numRuns: 200 },
    );
  });

  test('a list of 70,000 actions (array32 header) splices and decodes', () => {
    const list: ActionDecision[] = Array.from({ length: 70_000 }, (_, i) => [i, i + 1, 'moveTo', { to: [i, 0.5] }]);
    const spliced = encodeDecisions({ tick: 9, encodedActions: encoded(list) });
    expect(spliced.equals(encodeDecisions({ tick: 9, actions: list }))).toBe(true);
    expect(encoded(list).decode()[69_999]).toEqual([69_999, 70_000, 'moveTo', { to: [69_999, 0.5] }]);
  });

  test('decisions held for a slow reader merge to the same frame either way', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(actions, rest), { minLength: 1, maxLength: 4 }), (ticks) => {
        const fromValues = new HeldDecisions();
        const fromBytes = new HeldDecisions();
        ticks.forEach(([list, r], t) => {
          const fields: DecisionsFields = { tick: t, ...r };
          expect(fromValues.add({ ...fields, actions: list })).toBe(true);
          expect(fromBytes.add({ ...fields, encodedActions: encoded(list) })).toBe(true);
        });
        expect(fromBytes.frame().equals(fromValues.frame())).toBe(true);
        expect(fromBytes.bytes).toBe(fromValues.bytes);
      }),
      { numRuns: 200 },
    );
  });
});
