// A stage's rows read while they are checked (host.ts: checkedRowWriter through a RowReader, as the worker's
// StageReader reads them into the agents' spare observations): it must take exactly the frames the rows' check takes
// (checkFrameRows), and read exactly the values the check-then-apply path reads (frameRowWriter), whatever the bytes.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CODE_GENERATION } from '../../src/bt/codegen.js';
import { FrameCursor, checkFrameRows, encode, readSnapshotHead, type AgentId, type RowReader } from '../../src/protocol/index.js';
import { checkedRowWriter, frameRowWriter } from '../../src/service/pool/host.js';

const FIELDS = ['hp', 'seen', 'dist', 'pos'];

type Rows = Array<[AgentId, Record<string, unknown>]> | null;

/** The frame's rows as the check then the apply read them, and as the checked writer reads them in one pass (null: refused). */
function bothWays(bytes: Uint8Array): { apart: Rows; together: Rows } | undefined {
  const head = readSnapshotHead(bytes, FIELDS.length);
  if (head === undefined) return undefined;
  const ids: AgentId[] = [];
  const offsets = new Int32Array(head.count);
  let apart: Rows = null;
  if (checkFrameRows(bytes, head.start, head.count, FIELDS.length, ids, offsets)) {
    const cursor = new FrameCursor();
    cursor.frame(bytes);
    const write = frameRowWriter(FIELDS);
    apart = ids.map((id, i) => {
      const obs: Record<string, unknown> = {};
      cursor.pos = offsets[i]!;
      write(obs, cursor);
      return [id, obs];
    });
  }
  const read = checkedRowWriter(FIELDS);
  const cursor = new FrameCursor();
  cursor.frame(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rows: Array<[AgentId, Record<string, unknown>]> = [];
  const reader: RowReader = {
    values(i, id, p) {
      const obs: Record<string, unknown> = {};
      rows[i] = [id, obs];
      return read(obs, bytes, view, p, bytes.length, cursor);
    },
  };
  const passed = checkFrameRows(bytes, head.start, head.count, FIELDS.length, [], new Int32Array(head.count), null, reader);
  return { apart, together: passed ? rows : null };
}

const value = fc.oneof(
  fc.double(),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.nat({ max: 300 }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.array(fc.double(), { maxLength: 3 }),
  fc.array(fc.integer({ min: -200, max: 200 }), { maxLength: 17 }),
  fc.tuple(fc.double(), fc.double()),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.nat(), { maxKeys: 2 }),
);
const id = fc.oneof(fc.nat({ max: 70_000 }), fc.integer({ min: -5, max: 2 ** 53 - 1 }), fc.string({ minLength: 1, maxLength: 8 }));
const row = fc.oneof({ weight: 8, arbitrary: fc.tuple(id, value, value, value, value).map((r) => [...r]) }, { weight: 1, arbitrary: fc.array(value, { maxLength: 6 }) });

describe.skipIf(!CODE_GENERATION)("a stage's rows read while they are checked", () => {
  it('property: takes exactly the frames the check takes, and reads the values the check-then-apply path reads', () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 8 }), (rows) => {
        const out = bothWays(encode({ t: 'snapshot', tick: 1, time: 0, agents: rows }));
        expect(out?.together).toEqual(out?.apart);
      }),
      { numRuns: 1500 },
    );
  });

  it('property: truncated or corrupted frames: refused by both or read the same by both', () => {
    const rows: unknown[][] = Array.from({ length: 12 }, (_, i) => [i * 1000, i, i % 2 === 0, i * 1.5, i % 3 === 0 ? null : [i * 0.5, -i * 0.25]]);
    rows.push([99, 'patrol', true, 2 ** 33, [1, 2, 3]], ['orc-7', -3, false, 0.1, []]);
    const bytes = encode({ t: 'snapshot', tick: 1, time: 0, agents: rows });
    const whole = bothWays(bytes)!;
    expect(whole.apart).not.toBeNull();
    expect(whole.together).toEqual(whole.apart);
    fc.assert(
      fc.property(fc.nat({ max: bytes.length }), fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 0, max: 255 }), (cut, at, byte) => {
        const corrupted = Buffer.from(bytes);
        corrupted[at] = byte;
        for (const frame of [bytes.subarray(0, cut), corrupted]) {
          const out = bothWays(frame);
          expect(out?.together).toEqual(out?.apart);
        }
      }),
      { numRuns: 1500 },
    );
  });
});
