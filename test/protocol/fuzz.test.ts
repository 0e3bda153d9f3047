// Fuzzing the inbound path: whatever the bytes, parseClientFrame returns a result, never throws,
// and never touches Object.prototype.

import * as fc from 'fast-check';
import { Packr } from 'msgpackr';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_MESSAGE_TYPES, ErrorCode, encode, parseClientFrame, type ParseResult } from '../../src/protocol/index.js';

const MAX = 1 << 20;
const CODES = new Set<string>(Object.values(ErrorCode));
let prototypeKeys: string[];

beforeAll(() => {
  prototypeKeys = Object.getOwnPropertyNames(Object.prototype).toSorted();
});

function wellFormed(result: ParseResult): boolean {
  if (result.ok) return typeof result.msg.t === 'string' && Array.isArray(result.errors);
  return CODES.has(result.code) && typeof result.message === 'string' && result.message.length > 0;
}

function parse(bytes: Uint8Array): ParseResult {
  return parseClientFrame(bytes, MAX, { fieldCount: 2, mode: 'lockstep' });
}

const fieldValue = fc.oneof(
  fc.anything({ maxDepth: 3, withNullPrototype: true, withObjectString: true }),
  fc.constantFrom('__proto__', 'constructor', 'success', 'failure', 'fixed', 'lockstep', ''),
  fc.integer(),
  fc.double(),
);
const entry = fc.oneof(
  fc.array(fieldValue, { maxLength: 4 }),
  fc.dictionary(fc.constantFrom('id', 'tree', 'label', 'seed', 'bb', '__proto__', 'x'), fieldValue),
  fieldValue,
);
/** Maps shaped like client messages, with plausible and implausible field values. */
const message = fc.record(
  {
    t: fc.oneof(fc.constantFrom(...CLIENT_MESSAGE_TYPES), fc.string(), fc.integer()),
    id: fc.oneof(fc.integer(), fc.double(), fc.string()),
    v: fc.oneof(fc.constant(1), fieldValue),
    mode: fieldValue,
    hz: fc.oneof(fc.double(), fieldValue),
    fields: fc.oneof(fc.array(fc.string(), { maxLength: 5 }), fieldValue),
    agents: fc.oneof(fc.array(entry, { maxLength: 6 }), fc.dictionary(fc.string(), entry, { maxKeys: 4 }), fieldValue),
    ids: fc.oneof(fc.array(fieldValue, { maxLength: 6 }), fieldValue),
    set: fc.oneof(fc.array(entry, { maxLength: 6 }), fieldValue),
    results: fc.oneof(fc.array(entry, { maxLength: 6 }), fieldValue),
    tick: fc.oneof(fc.integer(), fieldValue),
    time: fc.oneof(fc.double(), fieldValue),
    world: fieldValue,
    full: fieldValue,
    n: fieldValue,
  },
  { requiredKeys: ['t'] },
);

// msgpackr with its extensions on, to throw records, sets, errors and friends at the parser too.
const extended = new Packr({ structuredClone: true, useRecords: true, moreTypes: true });

describe('parseClientFrame never throws', () => {
  it('on random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        expect(parse(bytes)).toSatisfy(wellFormed);
      }),
      { numRuns: 3000 },
    );
  });

  it('on random bytes behind a map header', () => {
    fc.assert(
      fc.property(fc.constantFrom(0x81, 0x82, 0x8f, 0xde, 0xdf), fc.uint8Array({ maxLength: 256 }), (head, tail) => {
        expect(parse(Uint8Array.of(head, ...tail))).toSatisfy(wellFormed);
      }),
      { numRuns: 3000 },
    );
  });

  it('on random MessagePack values', () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withObjectString: true, withMap: true, withSet: true, withDate: true, withTypedArray: true, withSparseArray: true }), (value) => {
        let bytes: Uint8Array;
        try {
          bytes = encode(value);
        } catch {
          return; // a value msgpackr itself cannot encode is not a frame
        }
        expect(parse(bytes)).toSatisfy(wellFormed);
      }),
      { numRuns: 2000 },
    );
  });

  it('on message-shaped maps, in standard and msgpackr-extended encodings', () => {
    fc.assert(
      fc.property(message, (value) => {
        expect(parse(encode(value))).toSatisfy(wellFormed);
        let ext: Uint8Array;
        try {
          ext = extended.pack(value);
        } catch {
          return; // not every value survives msgpackr's extensions
        }
        expect(parse(ext)).toSatisfy(wellFormed);
      }),
      { numRuns: 3000 },
    );
  });

  it('on valid frames with random bytes flipped', () => {
    const frames = [
      encode({ t: 'hello', v: 1, mode: 'lockstep', fields: ['x', 'y'], id: 1 }),
      encode({ t: 'spawn', id: 2, agents: [{ id: 1, tree: 'guard', bb: { a: [1, { b: 2 }] } }] }),
      encode({ t: 'snapshot', tick: 1, time: 0.5, agents: [[1, 2, 3], ['x', null, 'y']], world: { at: new Date(0) }, results: [[1, 1, 'success']] }),
      encode({ t: 'bb', set: [[1, { a: 1 }]] }),
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...frames),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        (frame, flips) => {
          const bytes = Uint8Array.from(frame);
          for (const [at, byte] of flips) bytes[at % bytes.length] = byte;
          expect(parse(bytes)).toSatisfy(wellFormed);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('left Object.prototype untouched', () => {
    expect(Object.getOwnPropertyNames(Object.prototype).toSorted()).toEqual(prototypeKeys);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
