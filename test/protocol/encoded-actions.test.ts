// Actions, cancels and done entries encoded where they are made (a pool worker's sink) and spliced into the `decisions` frame: the frame must
// be byte for byte the one encodeDecisions writes from the values, and the values read back must be those a client
// reads from that frame; the same for decisions merged while a reader lags (HeldDecisions).

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  EncodedTuples,
  HeldDecisions,
  decode,
  encodeActionTuple,
  encodeCancelTuple,
  encodeDecisions,
  encodeDoneTuple,
  writeActionTuple,
  writeCancelTuple,
  writeDoneTuple,
  type ActionDecision,
  type CancelDecision,
  type DoneDecision,
  type DecisionsFields,
} from '../../src/protocol/index.js';
import { encode } from '../../src/protocol/codec.js';
import { smallMap } from '../../src/protocol/encode.js';

/** The actions as a pool carries them: each tuple encoded on its own, copied out, then concatenated. */
function encoded(actions: readonly ActionDecision[]): EncodedTuples<ActionDecision> {
  const parts = actions.map(([id, seq, name, args]) => Buffer.from(encodeActionTuple(id, seq, name, args)));
  return new EncodedTuples(actions.length, Buffer.concat(parts));
}

/** Cancels and done entries as a pool carries them. */
function encodedCancels(cancels: readonly CancelDecision[]): EncodedTuples<CancelDecision> {
  return new EncodedTuples(cancels.length, Buffer.concat(cancels.map(([id, seq]) => Buffer.from(encodeCancelTuple(id, seq)))));
}
function encodedDone(done: readonly DoneDecision[]): EncodedTuples<DoneDecision> {
  return new EncodedTuples(done.length, Buffer.concat(done.map(([id, status]) => Buffer.from(encodeDoneTuple(id, status)))));
}

/** `fields` with the lists `which` says ([actions, cancels, done]) given encoded instead of as values. */
function withEncoded(fields: DecisionsFields, which: readonly boolean[]): DecisionsFields {
  const { actions = [], cancels = [], done = [], ...rest } = fields;
  return {
    ...rest,
    ...(which[0] ? { encodedActions: encoded(actions) } : { actions }),
    ...(which[1] ? { encodedCancels: encodedCancels(cancels) } : { cancels }),
    ...(which[2] ? { encodedDone: encodedDone(done) } : { done }),
  };
}
const which = fc.array(fc.boolean(), { minLength: 3, maxLength: 3 });

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
  cancels: fc.oneof(fc.array(fc.tuple(id, seq), { maxLength: 3 }), fc.array(fc.tuple(id, seq), { minLength: 15, maxLength: 17 })),
  done: fc.oneof(fc.array(fc.tuple(id, fc.constantFrom('success' as const, 'failure' as const)), { maxLength: 3 }), fc.array(fc.tuple(id, fc.constantFrom('success' as const, 'failure' as const)), { minLength: 15, maxLength: 17 })),
  errors: fc.array(fc.tuple(id, fc.constantFrom('E_PLUGIN'), fc.string({ maxLength: 10 })), { maxLength: 2 }),
});

describe('decision lists encoded where they are made', () => {
  test('the spliced decisions frame is byte for byte the one written from the values', () => {
    fc.assert(
      fc.property(fc.nat(), actions, rest, which, (tick, list, r, w) => {
        const fields = { tick, ...r, actions: list };
        const spliced = encodeDecisions(withEncoded(fields, w));
        expect(spliced.equals(encodeDecisions(fields))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  test('the values read back are those a client reads from the frame', () => {
    fc.assert(
      fc.property(actions, rest, (list, r) => {
        const frame = decode(encodeDecisions({ tick: 1, ...r, actions: list })) as { actions?: unknown[]; cancels?: unknown[]; done?: unknown[] };
        expect(encoded(list).decode()).toEqual(frame.actions ?? []);
        expect(encodedCancels(r.cancels).decode()).toEqual(frame.cancels ?? []);
        expect(encodedDone(r.done).decode()).toEqual(frame.done ?? []);
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
      fc.property(fc.array(fc.tuple(actions, rest, which), { minLength: 1, maxLength: 4 }), (ticks) => {
        const fromValues = new HeldDecisions();
        const fromBytes = new HeldDecisions();
        ticks.forEach(([list, r, w], t) => {
          const fields: DecisionsFields = { tick: t, ...r, actions: list };
          expect(fromValues.add(fields)).toBe(true);
          expect(fromBytes.add(withEncoded(fields, w))).toBe(true);
        });
        expect(fromBytes.frame().equals(fromValues.frame())).toBe(true);
        expect(fromBytes.bytes).toBe(fromValues.bytes);
      }),
      { numRuns: 200 },
    );
  });

  test('cancels and done entries written in place are the bytes the codec writes, and never past the room given', () => {
    const int = fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), fc.constantFrom(0, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, -0x20, -0x21, -0x80, -0x81, -0x8000, -0x8001, 2 ** 32 - 1, -(2 ** 31)));
    // String ids around the fixstr/str8 and 64-unit boundaries, non-ASCII and surrogates among them.
    const named = fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,40}$/), fc.string({ minLength: 1, maxLength: 70 }), fc.constantFrom('a'.repeat(31), 'a'.repeat(32), 'x'.repeat(63), 'x'.repeat(64), 'ü'.repeat(16), '\ud83d\ude00', 'a\udc00'));
    let inPlace = 0;
    fc.assert(
      fc.property(fc.oneof(int, id, named), fc.oneof(int, seq), fc.boolean(), fc.nat({ max: 260 }), (i, q, ok, cut) => {
        // Written in place exactly where the id is an integer within 32 bits or a string under 64 units, and the seq
        // an integer within 32 bits; -1 (the codec's turn) otherwise, or when the room ends first.
        const fits = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 32;
        const idFits = fits(i) || (typeof i === 'string' && i.length < 64);
        const status = ok ? 'success' : 'failure';
        for (const limit of [3 + 256, 3 + cut]) {
          const target = new Uint8Array(3 + 300).fill(0xc1);
          const other = new Uint8Array(3 + 300).fill(0xc1);
          const cancel = writeCancelTuple(target, 3, limit, i, q);
          const done = writeDoneTuple(other, 3, limit, i, status);
          const codecCancel = Buffer.from(encodeCancelTuple(i, q));
          const codecDone = Buffer.from(encodeDoneTuple(i, status));
          const got = {
            cancel: cancel < 0 ? null : Buffer.from(target.subarray(3, cancel)),
            done: done < 0 ? null : Buffer.from(other.subarray(3, done)),
            untouched: target.subarray(limit).every((b) => b === 0xc1) && other.subarray(limit).every((b) => b === 0xc1),
          };
          // With room: in place exactly where it applies. A short room: the same bytes or -1, nothing at or past the limit.
          const roomy = limit === 3 + 256;
          const want = {
            cancel: (roomy ? idFits && fits(q) : cancel >= 0) ? codecCancel : null,
            done: (roomy ? idFits : done >= 0) ? codecDone : null,
            untouched: true,
          };
          expect(got).toEqual(want);
          inPlace += roomy && cancel >= 0 ? 1 : 0;
        }
      }),
      { numRuns: 1000 },
    );
    expect(inPlace).toBeGreaterThan(300);
  });
  // Strings around the 32-byte fixstr and 64-unit boundaries, non-ASCII, surrogate pairs and lone surrogates.
  const text = fc.oneof(
    fc.string({ maxLength: 70 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom('', 'a'.repeat(31), 'a'.repeat(32), 'ü'.repeat(16), 'ü'.repeat(15) + 'a', 'x'.repeat(63), 'x'.repeat(64), '\ud800', 'a\udc00b', '\ud83d\ude00', '\ud83d'.repeat(20), '\ud800'.repeat(70), 'y'.repeat(66) + '\udc00'),
  );
  const number = fc.oneof(
    fc.double(),
    fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
    fc.constantFrom(-0, NaN, Infinity, -Infinity, 0x7f, 0x80, 0x100, 0x10000, -0x20, -0x21, -0x81, -0x8001, 2 ** 32, -(2 ** 31) - 1, 2 ** 53, 0.5),
  );
  const { tree } = fc.letrec((tie) => ({
    tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('list'), tie('map')),
    leaf: fc.oneof(number, text, fc.boolean(), fc.constantFrom(null, undefined), fc.constantFrom(new Date(0), new Uint8Array([1, 2]), new Map([[1, 2]]), 10n)),
    list: fc.oneof(fc.array(tie('tree'), { maxLength: 4 }), fc.array(fc.integer(), { minLength: 15, maxLength: 17 })),
    map: fc.oneof(
      fc.dictionary(text.filter((k) => k !== '__proto__'), tie('tree'), { maxKeys: 4 }),
      fc.dictionary(fc.string({ minLength: 1, maxLength: 3 }).filter((k) => k !== '__proto__'), fc.integer(), { minKeys: 15, maxKeys: 17 }),
    ),
  }));
  const deep = fc.integer({ min: 1, max: 7 }).map((n) => {
    let v: unknown = { at: [1.5, -2] };
    for (let i = 0; i < n; i++) v = { v };
    return v;
  });

  test('actions written in place are the bytes the codec writes, or left to it', () => {
    fc.assert(
      fc.property(id, seq, text, fc.oneof(tree, deep), fc.nat(300), (i, q, name, a, room) => {
        const limit = 3 + room;
        const target = new Uint8Array(limit + 4).fill(0xc1);
        const end = writeActionTuple(target, 3, limit, i, q, name, a);
        // Never a byte at or past the limit, whatever happened.
        expect([...target.subarray(limit)]).toEqual([0xc1, 0xc1, 0xc1, 0xc1]);
        // Where it wrote, exactly the codec's bytes; where it did not, the codec's turn.
        const written = end < 0 ? null : Buffer.from(target.subarray(3, end));
        expect(written).toEqual(end < 0 ? null : Buffer.from(encodeActionTuple(i, q, name, a)));
      }),
      { numRuns: 3000 },
    );
  });

  test('args of a polluted prototype: its enumerable keys are not written in place, as the codec does not write them', () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto['polluted'] = 1;
    try {
      const given = { to: [1.5, 2], speed: 'run', 3: true, 1: null };
      const target = new Uint8Array(256);
      const end = writeActionTuple(target, 0, target.length, 7, 9, 'moveTo', given);
      expect(end).toBeGreaterThan(0);
      expect(Buffer.from(target.subarray(0, end))).toEqual(Buffer.from(encodeActionTuple(7, 9, 'moveTo', given)));
      // Integer keys first, as Object.keys lists them.
      expect(decode(target.subarray(0, end))).toEqual([7, 9, 'moveTo', { 1: null, 3: true, to: [1.5, 2], speed: 'run' }]);
      expect(Object.keys((decode(target.subarray(0, end)) as unknown[])[3] as object)).toEqual(['1', '3', 'to', 'speed']);
    } finally {
      delete proto['polluted'];
    }
  });

  test("actions of the values trees' args are made of are written in place", () => {
    const small = fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), fc.double(), fc.string({ maxLength: 20 }), fc.boolean(), fc.constant(null), fc.tuple(fc.double(), fc.double()));
    const simple = fc.dictionary(fc.string({ maxLength: 10 }).filter((k) => k !== '__proto__'), small, { maxKeys: 4, noNullPrototype: true });
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.string({ maxLength: 12 })), fc.nat(), fc.string({ maxLength: 20 }), simple, (i, q, name, a) => {
        const target = new Uint8Array(256);
        const end = writeActionTuple(target, 0, target.length, i, q, name, a);
        expect(end).toBeGreaterThan(0);
        expect(Buffer.from(target.subarray(0, end))).toEqual(Buffer.from(encodeActionTuple(i, q, name, a)));
      }),
      { numRuns: 1000 },
    );
  });
  test('a frame head written by hand (smallMap) is the codec\'s bytes, or left to the codec', () => {
    const key = fc.oneof({ weight: 4, arbitrary: fc.stringMatching(/^[a-zA-Z]{1,12}$/) }, fc.string({ maxLength: 40 }).filter((k) => k !== '__proto__'), fc.constantFrom('k'.repeat(31), 'k'.repeat(32)));
    const entryValue = fc.oneof(
      fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
      fc.oneof(fc.constant(-0), fc.constant(2 ** 32), fc.constant(-(2 ** 31) - 1), fc.double()),
      fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('decisions', 'é', '', 'x'.repeat(31), 'x'.repeat(32))),
      fc.constantFrom(true, false, null, undefined),
    );
    let byHand = 0;
    fc.assert(
      fc.property(fc.dictionary(key, entryValue, { maxKeys: 17, noNullPrototype: true }), (map) => {
        const mine = smallMap(map);
        if (mine === null) return;
        byHand++;
        expect(Buffer.from(mine)).toEqual(Buffer.from(encode(map)));
      }),
      { numRuns: 2000 },
    );
    expect(byHand).toBeGreaterThan(200);
    // A decisions frame's head always goes by hand.
    for (const [tick, basedOn] of [[0, 0], [127, 128], [65_535, 65_536], [2 ** 32 - 1, 2 ** 31]]) {
      const head = { t: 'decisions', tick, basedOn };
      expect(Buffer.from(smallMap(head)!)).toEqual(Buffer.from(encode(head)));
    }
  });
});
