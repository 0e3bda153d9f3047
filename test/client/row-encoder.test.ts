// The SDK's RowEncoder: rows written straight into bytes are byte for byte what the codec writes for the same rows
// (so the service reads them as it reads any other game server's), batch after batch in the same memory, and a row
// that does not fit the fields is refused with the agent named, never sent.

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { RowEncoder, RowWriter } from '../../src/client/index.js';
import { encode } from '../../src/protocol/codec.js';
import { encodeRows } from '../../src/protocol/index.js';
import { id, value } from '../protocol/row-arbitraries.js';

function bytes(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Writes `rows` (`[id, ...values]`) through the encoder's typed methods where a value has one, value() for the rest. */
function write(encoder: RowEncoder, rows: readonly (readonly unknown[])[]): void {
  encoder.begin();
  for (const [rowId, ...values] of rows) {
    encoder.row(rowId as number | string);
    for (const v of values) {
      if (typeof v === 'number') encoder.number(v);
      else if (typeof v === 'boolean') encoder.boolean(v);
      else if (v === null) encoder.nil();
      else if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'number' && typeof v[1] === 'number') encoder.point(v[0], v[1]);
      else encoder.value(v);
    }
  }
}

const fieldsOf = (width: number): string[] => Array.from({ length: width }, (_, k) => `f${k}`);

// Widths around the fixarray boundary (a row of 16 elements or more is an array16); batches around the list's.
const batch = fc.integer({ min: 0, max: 17 }).chain((width) =>
  fc.record({
    width: fc.constant(width),
    rows: fc.oneof(fc.array(fc.tuple(id, fc.array(value, { minLength: width, maxLength: width })), { maxLength: 20 }), fc.array(fc.tuple(id, fc.array(value, { minLength: width, maxLength: width })), { minLength: 15, maxLength: 17 })).map((list) => list.map(([i, values]) => [i, ...values])),
  }),
);

describe('RowEncoder', () => {
  test('writes any rows as the codec writes them, batch after batch in the same encoder', () => {
    fc.assert(
      fc.property(batch, fc.array(fc.integer({ min: 0, max: 19 }), { maxLength: 3 }), ({ width, rows }, cuts) => {
        const encoder = new RowEncoder(fieldsOf(width));
        write(encoder, rows);
        expect(encoder.length).toBe(rows.length);
        expect(bytes(encoder.bytes()).equals(encode(rows))).toBe(true);
        // The next batches reuse the memory: shorter and longer ones are still exact.
        for (const cut of cuts) {
          const next = rows.slice(0, cut);
          write(encoder, next);
          expect(bytes(encoder.bytes()).equals(encode(next))).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  test('writes the same bytes as a RowWriter with the same values, through the protocol row encoder', () => {
    const fields = ['hp', 'visible', 'dist', 'pos', 'state'];
    const encoder = new RowEncoder(fields);
    const writer = new RowWriter(fields);
    encoder.begin();
    writer.begin();
    for (let i = 0; i < 300; i++) {
      const agent = i % 5 === 0 ? `npc-${i}` : i * 1_000_003;
      const seen = i % 3 === 0;
      encoder.row(agent).number(i % 150).boolean(seen);
      if (seen) encoder.number(i + 0.25).point(i + 0.5, -i);
      else encoder.nil().nil();
      encoder.value(i % 7 === 0 ? { mode: 'alert', since: i } : 'idle');
      const r = writer.row(agent);
      r[1] = i % 150;
      r[2] = seen;
      r[3] = seen ? i + 0.25 : null;
      r[4] = seen ? [i + 0.5, -i] : null;
      r[5] = i % 7 === 0 ? { mode: 'alert', since: i } : 'idle';
    }
    expect(bytes(encoder.bytes()).equals(bytes(encodeRows(writer.rows())))).toBe(true);
  });

  test('tens of thousands of rows: an array32 and a grown buffer, as the codec writes them', () => {
    const rows = Array.from({ length: 70_000 }, (_, i) => [i * 1_000_003, i % 150, i % 3 === 0, i % 3 === 0 ? (i % 97) + 0.25 : null, i % 3 === 0 ? [i + 0.5, -i - 0.5] : null]);
    const encoder = new RowEncoder(['hp', 'visible', 'dist', 'pos']);
    write(encoder, rows);
    expect(bytes(encoder.bytes()).equals(encode(rows))).toBe(true);
    write(encoder, []);
    expect(bytes(encoder.bytes()).equals(encode([]))).toBe(true);
  });

  test('a long string, a large map: written through the codec, and the values after them still fit', () => {
    const long = 'x'.repeat(100_000);
    const big = Object.fromEntries(Array.from({ length: 40 }, (_, k) => [`k${k}`, k]));
    const encoder = new RowEncoder(['a', 'b', 'c']);
    encoder.begin();
    encoder.row('npc-1').value(long).value(big).point(1.5, 2.5);
    encoder.row(2).number(1).value(long).point(3.5, 4.5);
    expect(bytes(encoder.bytes()).equals(encode([['npc-1', long, big, [1.5, 2.5]], [2, 1, long, [3.5, 4.5]]]))).toBe(true);
  });

  test('a new encoder takes rows before any begin(), and gives an empty list before any row', () => {
    const encoder = new RowEncoder(['hp']);
    expect(bytes(encoder.bytes()).equals(encode([]))).toBe(true);
    encoder.row(1).number(10).row('npc-2').number(2.5);
    expect(bytes(encoder.bytes()).equals(encode([[1, 10], ['npc-2', 2.5]]))).toBe(true);
  });

  test('a row with too few values is refused when the next row starts, one with too many when the rows are taken', () => {
    const encoder = new RowEncoder(['hp', 'pos']);
    encoder.begin();
    encoder.row(7).number(100);
    expect(() => encoder.row(8)).toThrow(/the row of agent 7 has 1 values; the fields are 2 \(hp, pos\)/);
    encoder.begin();
    encoder.row('npc-1').number(1).point(0, 0).nil();
    expect(() => encoder.bytes()).toThrow(/the row of agent "npc-1" has 3 values; the fields are 2/);
    // The encoder is usable again after begin().
    encoder.begin();
    encoder.row(1).number(5).point(1.5, 2);
    expect(bytes(encoder.bytes()).equals(encode([[1, 5, [1.5, 2]]]))).toBe(true);
  });
});
