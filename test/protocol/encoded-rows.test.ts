// A snapshot's rows written by the protocol's row encoder (the SDK's snapshots): byte for byte what the codec writes
// for the same list, whatever the rows hold, so that a game server's frames read the same on every decoder; and a
// snapshot frame spliced from its head and its rows is the frame the codec writes for the whole message.

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decode, encodeRows, joinMap } from '../../src/protocol/index.js';
import { encode } from '../../src/protocol/codec.js';
import { id, key, value } from './row-arbitraries.js';

const row = fc.tuple(id, fc.array(value, { maxLength: 17 })).map(([i, values]) => [i, ...values]);
// Lengths around the fixarray (16) boundary; maps (the map form) among the rows.
const rows = fc.oneof(fc.array(row, { maxLength: 20 }), fc.array(row, { minLength: 15, maxLength: 17 }), fc.array(fc.oneof(row, fc.dictionary(key, value, { maxKeys: 4 })), { maxLength: 6 }));

function bytes(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

describe('encodeRows', () => {
  test('writes any list of rows as the codec does', () => {
    fc.assert(
      fc.property(rows, (list) => {
        expect(bytes(encodeRows(list)).equals(encode(list))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  test('writes tens of thousands of rows (array32, a grown buffer) as the codec does, and again after', () => {
    const many = Array.from({ length: 70_000 }, (_, i) => [i * 1_000_003, Math.round(i % 150), i % 3 === 0, i % 3 === 0 ? (i % 97) + 0.25 : null, i % 3 === 0 ? [i + 0.5, -i - 0.5] : null]);
    expect(bytes(encodeRows(many)).equals(encode(many))).toBe(true);
    const few = many.slice(0, 16_000);
    expect(bytes(encodeRows(few)).equals(encode(few))).toBe(true);
    expect(bytes(encodeRows([])).equals(encode([]))).toBe(true);
  });

  test('a snapshot spliced from its head and its rows is the frame the codec writes for the message', () => {
    const head = fc.record({ t: fc.constant('snapshot'), tick: fc.nat(), id: fc.nat(), time: fc.double({ noNaN: true }), world: fc.dictionary(key, value, { maxKeys: 3 }), results: fc.array(fc.tuple(id, fc.nat(), fc.constantFrom('success', 'failure'))), full: fc.boolean() }, { requiredKeys: ['t', 'tick'] });
    fc.assert(
      fc.property(head, rows, (h, list) => {
        const frame = joinMap(h, 1, [encode('agents'), encodeRows(list)]);
        expect(frame.equals(encode({ ...h, agents: list }))).toBe(true);
        expect(decode(frame)).toEqual(decode(encode({ ...h, agents: list })));
      }),
      { numRuns: 200 },
    );
  });
});
