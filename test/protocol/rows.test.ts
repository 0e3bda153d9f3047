// The snapshot fast path (src/protocol/rows.ts): rows read straight into columns must give exactly what
// the ordinary decode + validate gives, for any frame, and it must actually take the frames a game
// server sends (otherwise it is only dead weight).

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { IdIndex, KnownRowIds, LIMITS, ResultColumns, checkFrameRows, encode, isPackedRows, parseClientFrame, parseSnapshotHead, readSnapshotHead, readSnapshotRows, resultTuples, unpackRows, type AgentId, type ParseResult } from '../../src/protocol/index.js';
import { RowWriter } from '../../src/client/index.js';

const MAX = LIMITS.defaultMaxFrameBytes;

/** Adds a row to a RowWriter batch. */
function add(w: RowWriter, id: number | string, ...values: unknown[]): void {
  const row = w.row(id);
  values.forEach((v, k) => (row[k + 1] = v));
}

/**
 * Both paths on the same bytes; the fast one's packed rows turned back into arrays, its results in columns back
 * into their list (`resultsPacked` says they came in columns).
 */
function bothPaths(bytes: Uint8Array, fieldCount: number, mode: 'fixed' | 'lockstep' = 'lockstep'): { fast: ParseResult; slow: ParseResult; packed: boolean; resultsPacked: boolean } {
  const slow = parseClientFrame(bytes, MAX, { fieldCount, mode });
  let fast = parseClientFrame(bytes, MAX, { fieldCount, mode, packRows: true });
  const results = fast.ok ? (fast.msg as { results?: unknown }).results : undefined;
  const resultsPacked = results instanceof ResultColumns;
  // The head reader (rows left unread) takes the same lists and leaves them in the frame, read when asked.
  const head = mode === 'lockstep' && fast.ok ? parseSnapshotHead(bytes, MAX, { fieldCount, mode, packRows: true }) : undefined;
  expect(head === undefined ? null : unreadMismatch(head.parsed.msg.results, results, bytes)).toBeNull();
  if (fast.ok && results instanceof ResultColumns) fast = { ...fast, msg: { ...fast.msg, results: resultTuples(results) } } as unknown as ParseResult;
  const agents = fast.ok ? (fast.msg as { agents?: unknown }).agents : undefined;
  if (fast.ok && isPackedRows(agents)) {
    return { fast: { ...fast, msg: { ...fast.msg, agents: unpackRows(agents) } } as unknown as ParseResult, slow, packed: true, resultsPacked };
  }
  return { fast, slow, packed: false, resultsPacked };
}

/**
 * How the results the head reader left in the frame differ from those the frame reader read (`read`), or null: the
 * same entries, and left in these very bytes where they came in columns.
 */
function unreadMismatch(unread: unknown, read: unknown, bytes: Uint8Array): string | null {
  const listed = read instanceof ResultColumns ? resultTuples(read) : read;
  if (!(unread instanceof ResultColumns)) {
    if (read instanceof ResultColumns) return 'the head reader decoded a list the frame reader took in columns';
    return JSON.stringify(unread) === JSON.stringify(read) ? null : 'a different list';
  }
  if (unread.frame !== bytes) return 'columns not left in the frame';
  return JSON.stringify(resultTuples(unread)) === JSON.stringify(listed) ? null : 'different entries';
}

describe('snapshot rows fast path', () => {
  test('takes the frames the client SDK sends, and reads them exactly', () => {
    const rows = new RowWriter(['hp', 'enemyVisible', 'enemyDist', 'enemyPos', 'state']);
    add(rows, 1, 80, true, 3.25, [1.5, -2], 'patrol');
    add(rows, 'orc-7', 12, false, null, null, '');
    add(rows, 2 ** 31, -5, true, 0, [], 'x');
    add(rows, -3, 1e300, false, -0, [0.1, 0.2, 0.3], 'chase');
    const bytes = encode({ t: 'snapshot', tick: 9, time: 0.45, agents: rows.rows(), results: [[1, 2, 'success']], id: 4 });
    const { fast, slow, packed, resultsPacked } = bothPaths(bytes, 5);
    expect(packed).toBe(true);
    expect(resultsPacked).toBe(true);
    expect(fast).toEqual(slow);
    expect(slow.ok && slow.msg).toMatchObject({ t: 'snapshot', tick: 9, id: 4, results: [[1, 2, 'success']] });
  });

  test('every MessagePack number form reads as msgpackr reads it (float32, int64, uint64, all widths)', () => {
    const f32 = Buffer.alloc(4);
    f32.writeFloatBE(0.1);
    const u64 = Buffer.from([0xcf, 0, 0, 0x01, 0, 0, 0, 0, 0x05]);
    const i64 = Buffer.from([0xd3, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0x01]);
    const values = [
      Buffer.concat([Buffer.from([0xca]), f32]),
      u64,
      i64,
      Buffer.from([0xcc, 0xff]),
      Buffer.from([0xcd, 0xff, 0xfe]),
      Buffer.from([0xce, 0xff, 0xff, 0xff, 0xfe]),
      Buffer.from([0xd0, 0x80]),
      Buffer.from([0xd1, 0x80, 0x01]),
      Buffer.from([0xd2, 0x80, 0, 0, 1]),
      Buffer.from([0xe0]),
      Buffer.from([0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0]), // NaN
    ];
    const head = encode({ t: 'snapshot', tick: 1, time: 0 });
    // {t, tick, time, agents: [[7, ...values], [u64 as id, ...values]]}: map header + 1 entry, then the rows.
    const row = (id: Buffer): Buffer => Buffer.concat([Buffer.from([0x90 + values.length + 1]), id, ...values]);
    const frame = Buffer.concat([Buffer.from([head[0]! + 1]), head.subarray(1), encode('agents'), Buffer.from([0x92]), row(Buffer.from([7])), row(u64)]);
    const { fast, slow, packed } = bothPaths(frame, values.length);
    expect(packed).toBe(true);
    expect(fast).toEqual(slow);
    expect(slow.ok).toBe(true);
  });

  test('steps aside for what it does not read itself; the ordinary path answers', () => {
    const cases: Array<[string, unknown, number]> = [
      ['a row too short', [[1, 2]], 2],
      ['a map value', [[1, { x: 1 }]], 1],
      ['a unicode string', [[1, 'ünï']], 1],
      ['a long array', [[1, Array.from({ length: 20 }, (_, k) => k)]], 1],
      ['an empty id', [['', 1]], 1],
      ['an unsafe integer id', [[2 ** 60, 1]], 1],
      ['a fractional id', [[1.5, 1]], 1],
      ['rows that are maps', [{ id: 1 }], 1],
    ];
    for (const [what, agents, width] of cases) {
      const bytes = encode({ t: 'snapshot', tick: 1, time: 0, agents });
      expect({ what, read: readSnapshotRows(bytes, width) }).toEqual({ what, read: undefined });
      expect({ what, inFrame: readSnapshotRows(bytes, width, true) }).toEqual({ what, inFrame: undefined });
      const { fast, slow } = bothPaths(bytes, width);
      expect({ what, fast }).toEqual({ what, fast: slow });
    }
    // Not a snapshot, or a snapshot with a bad field: the ordinary path, same errors.
    for (const msg of [
      { t: 'spawn', agents: [[1, 2]] },
      { t: 'snapshot', tick: 'soon', agents: [[1, 2]] },
      { t: 'snapshot', tick: 1, agents: [[1, 2]] },
    ]) {
      const { fast, slow, packed } = bothPaths(encode(msg), 1);
      expect({ msg, packed }).toEqual({ msg, packed: false });
      expect(fast).toEqual(slow);
    }
  });

  const id = fc.oneof(
    fc.integer({ min: -1000, max: 100_000 }),
    fc.integer({ min: 65_536, max: 2 ** 32 - 1 }),
    fc.constantFrom(2 ** 32, -(2 ** 31) - 1, 2 ** 53 - 1, 2 ** 53, 2 ** 60, 0.5),
    fc.string({ maxLength: 130 }),
    fc.string({ unit: 'binary', maxLength: 8 }),
  );
  const number = fc.oneof(fc.integer(), fc.double(), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.constantFrom(-0, NaN, Infinity, 2 ** 63));
  const value = fc.oneof(
    { weight: 4, arbitrary: number },
    fc.boolean(),
    fc.constant(null),
    fc.string({ maxLength: 300 }),
    fc.array(number, { maxLength: 20 }),
    fc.array(fc.oneof(number, fc.string()), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 4 }), number, { maxKeys: 2 }),
  );

  const simpleId = fc.oneof(fc.integer({ min: -1000, max: 100_000 }), fc.integer({ min: 2 ** 31, max: 2 ** 32 - 1 }), fc.stringMatching(/^[a-z0-9-]{1,12}$/));
  const simpleValue = fc.oneof(number, fc.boolean(), fc.constant(null), fc.stringMatching(/^[a-z]{0,8}$/), fc.array(number, { maxLength: 4 }));
  const goodFields = fc.record(
    {
      t: fc.constant('snapshot'),
      tick: fc.nat(),
      time: fc.double({ min: 0, max: 1e6, noNaN: true }),
      id: fc.nat(),
      full: fc.boolean(),
      results: fc.array(fc.tuple(simpleId, fc.nat(), fc.constantFrom('success', 'failure', 'maybe')), { maxLength: 3 }),
    },
    { requiredKeys: ['t', 'tick', 'time'] },
  );

  test('property: for any snapshot-like frame, both paths give the same result', () => {
    let packedRuns = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        fc.oneof(
          fc.array(fc.tuple(id, fc.array(value, { maxLength: 17 })), { maxLength: 12 }),
          fc.array(fc.tuple(simpleId, fc.array(simpleValue, { maxLength: 17 })), { maxLength: 12 }),
        ),
        fc.oneof(
          goodFields,
          fc.record(
          {
            t: fc.constantFrom('snapshot', 'snapshot', 'snapshot', 'result', 'nope'),
            tick: fc.oneof(fc.nat(), fc.constant(-1), fc.string({ maxLength: 2 })),
            time: fc.oneof(fc.double({ min: 0, max: 1e6, noNaN: true }), fc.constant(null)),
            id: fc.nat(),
            full: fc.boolean(),
            results: fc.array(fc.tuple(id, fc.nat(), fc.constantFrom('success', 'failure', 'maybe')), { maxLength: 3 }),
            world: fc.dictionary(fc.string({ maxLength: 4 }), value, { maxKeys: 3 }),
          },
            { requiredKeys: ['t'] },
          ),
        ),
        fc.boolean(),
        fc.boolean(),
        (width, rawRows, fields, exactWidth, agentsFirst) => {
          const agents = rawRows.map(([rid, vals]) => [rid, ...(exactWidth ? Array.from({ length: width }, (_, k) => vals[k] ?? null) : vals)]);
          const msg = agentsFirst ? { agents, ...fields } : { ...fields, agents };
          const bytes = encode(msg);
          const { fast, slow, packed } = bothPaths(bytes, width, 'lockstep');
          expect(fast).toEqual(slow);
          // Rows checked in their frame and rows read into columns: the same frames taken, the same values.
          const columns = readSnapshotRows(bytes, width);
          const inFrame = readSnapshotRows(bytes, width, true);
          expect(inFrame === undefined).toBe(columns === undefined);
          expect(inFrame === undefined ? null : unpackRows(inFrame.rows)).toEqual(columns === undefined ? null : unpackRows(columns.rows));
          if (packed) packedRuns++;
        },
      ),
      { numRuns: 400 },
    );
    // The comparison means something only if the fast path took a fair share of the frames.
    expect(packedRuns).toBeGreaterThan(20);
  });

  test('nesting at and past the depth limit: both paths agree (a field 33 deep was accepted by the fast path)', () => {
    const rows = new RowWriter(['a']);
    add(rows, 1, 2);
    /** A value nesting `levels` containers (maps and arrays alternating). */
    const nest = (levels: number): unknown => {
      let v: unknown = 1;
      for (let i = 0; i < levels; i++) v = i % 2 === 0 ? [v] : { k: v };
      return v;
    };
    // The frame's map is level 1, so a field value may nest LIMITS.maxDepth - 1 levels.
    for (let levels = LIMITS.maxDepth - 4; levels <= LIMITS.maxDepth + 2; levels++) {
      for (const field of ['world', 'results', 'unknownField']) {
        const bytes = encode({ t: 'snapshot', tick: 1, time: 0, agents: rows.rows(), [field]: field === 'world' ? { deep: nest(levels - 1) } : nest(levels) });
        const { fast, slow } = bothPaths(bytes, 1);
        expect({ field, levels, result: fast }).toEqual({ field, levels, result: slow });
      }
    }
    const tooDeep = encode({ t: 'snapshot', tick: 1, time: 0, agents: rows.rows(), x: nest(LIMITS.maxDepth) });
    expect(bothPaths(tooDeep, 1).slow).toMatchObject({ ok: false, code: 'E_PROTOCOL' });
    expect(bothPaths(tooDeep, 1).fast).toMatchObject({ ok: false, code: 'E_PROTOCOL' });
  });

  test('property: any nesting depth of any field gives the same result on both paths', () => {
    const rows = new RowWriter(['a', 'b']);
    add(rows, 1, 2, [1, 2]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: LIMITS.maxDepth + 3 }), fc.constantFrom('world', 'results', 'extra', 'time'), fc.boolean(), (levels, field, arraysFirst) => {
        let v: unknown = 'x';
        for (let i = 0; i < levels; i++) v = (i % 2 === 0) === arraysFirst ? [v] : { k: v };
        const { fast, slow } = bothPaths(encode({ t: 'snapshot', tick: 1, time: 0, agents: rows.rows(), [field]: v }), 2);
        expect(fast).toEqual(slow);
      }),
      { numRuns: 200 },
    );
  });

  test('property: truncated or corrupted frames give the same result on both paths, and never throw', () => {
    const rows = new RowWriter(['a', 'b', 'c']);
    for (let i = 0; i < 20; i++) add(rows, i, i * 1.5, i % 2 === 0, [i, -i]);
    const results = [[1, 7, 'success'], ['orc-2', 300, 'failure'], [2 ** 40, 2 ** 33, 'success']];
    const bytes = encode({ t: 'snapshot', tick: 3, time: 1, results, agents: rows.rows() });
    expect(bothPaths(bytes, 3).resultsPacked).toBe(true);
    fc.assert(
      fc.property(fc.nat({ max: bytes.length }), fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 0, max: 255 }), (cut, at, byte) => {
        const corrupted = Buffer.from(bytes);
        corrupted[at] = byte;
        for (const frame of [bytes.subarray(0, cut), corrupted]) {
          const { fast, slow } = bothPaths(frame, 3);
          expect(fast).toEqual(slow);
        }
      }),
      { numRuns: 500 },
    );
  });
  test("results: the client SDK's lists come in columns, every number form of ids and seqs as msgpackr reads it", () => {
    const rows = new RowWriter(['a']);
    add(rows, 1, 2);
    const results = [[1, 1, 'success'], ['orc-7', 2 ** 31, 'failure'], [-3, 200, 'success'], [2 ** 53 - 1, 2 ** 53 - 1, 'failure'], [0, 1.0, 'success']];
    const bytes = encode({ t: 'snapshot', tick: 1, time: 0, results, agents: rows.rows() });
    const { fast, slow, resultsPacked } = bothPaths(bytes, 1);
    expect(resultsPacked).toBe(true);
    expect(fast).toEqual(slow);
    expect(slow.ok && slow.msg).toMatchObject({ results });
    // Hand-made number forms: ids and seqs as uint8/16/32/64, int8-64, float32 and float64 holding integers.
    const forms = [[0xcc, 9], [0xcd, 0, 9], [0xce, 0, 0, 0, 9], [0xcf, 0, 0, 0, 0, 0, 0, 0, 9], [0xd0, 9], [0xd1, 0, 9], [0xd2, 0, 0, 0, 9], [0xd3, 0, 0, 0, 0, 0, 0, 0, 9], [0xca, 0x41, 0x10, 0, 0], [0xcb, 0x40, 0x22, 0, 0, 0, 0, 0, 0]];
    for (const form of forms) {
      const entry = Buffer.concat([Buffer.from([0x93]), Buffer.from(form), Buffer.from(form), encode('success')]);
      const head = encode({ t: 'snapshot', tick: 1, time: 0 });
      const frame = Buffer.concat([Buffer.from([head[0]! + 2]), head.subarray(1), encode('results'), Buffer.from([0x91]), entry, encode('agents'), Buffer.from(encode(rows.rows()))]);
      const both = bothPaths(frame, 1);
      expect({ form, packed: both.resultsPacked }).toEqual({ form, packed: true });
      expect(both.fast).toEqual(both.slow);
      expect(both.slow.ok && both.slow.msg).toMatchObject({ results: [[9, 9, 'success']] });
    }
  });

  test('results: any entry validation would refuse (or an unusual form) sends the list the ordinary way, with the same errors', () => {
    const rows = new RowWriter(['a']);
    add(rows, 1, 2);
    const cases: Array<[string, unknown]> = [
      ['seq 0', [[1, 0, 'success']]],
      ['a fractional seq', [[1, 1.5, 'success']]],
      ['an unsafe seq', [[1, 2 ** 60, 'success']]],
      ['a string seq', [[1, '3', 'success']]],
      ['another status', [[1, 3, 'maybe']]],
      ['a status in capitals', [[1, 3, 'SUCCESS']]],
      ['four items', [[1, 3, 'success', 4]]],
      ['two items', [[1, 3]]],
      ['an empty id', [['', 3, 'success']]],
      ['a unicode id', [['ünï', 3, 'success']]],
      ['a fractional id', [[0.5, 3, 'success']]],
      ['a map entry', [{ id: 1 }]],
      ['not a list', { 1: [1, 3, 'success'] }],
      ['nil', null],
      ['one bad entry among good ones', [[1, 3, 'success'], [2, -1, 'failure'], [3, 4, 'failure']]],
    ];
    for (const [what, results] of cases) {
      const { fast, slow, resultsPacked } = bothPaths(encode({ t: 'snapshot', tick: 1, time: 0, results, agents: rows.rows() }), 1);
      expect({ what, resultsPacked }).toEqual({ what, resultsPacked: false });
      expect({ what, fast }).toEqual({ what, fast: slow });
    }
    // A status as str8 rather than fixstr: valid, read the ordinary way.
    const head = encode({ t: 'snapshot', tick: 1, time: 0 });
    const str8 = Buffer.concat([Buffer.from([0x93, 1, 2, 0xd9, 7]), Buffer.from('failure')]);
    const frame = Buffer.concat([Buffer.from([head[0]! + 2]), head.subarray(1), encode('results'), Buffer.from([0x91]), str8, encode('agents'), Buffer.from(encode(rows.rows()))]);
    const both = bothPaths(frame, 1);
    expect(both.resultsPacked).toBe(false);
    expect(both.fast).toEqual(both.slow);
    expect(both.slow.ok && both.slow.msg).toMatchObject({ results: [[1, 2, 'failure']] });
  });

  test('property: results of any shape give the same message and errors on both paths', () => {
    const rows = new RowWriter(['a']);
    add(rows, 1, 2);
    const entry = fc.oneof(
      { weight: 6, arbitrary: fc.tuple(fc.oneof(fc.integer({ min: -1000, max: 100_000 }), fc.integer({ min: 2 ** 31, max: 2 ** 32 + 5 }), fc.stringMatching(/^[a-z0-9-]{1,12}$/)), fc.integer({ min: 1, max: 2 ** 40 }), fc.constantFrom('success', 'failure')) },
      fc.tuple(id, fc.oneof(fc.nat(), fc.double(), fc.string({ maxLength: 2 })), fc.constantFrom('success', 'failure', 'maybe', '')),
      fc.array(fc.nat(), { maxLength: 4 }),
    );
    let packedRuns = 0;
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 20 }), fc.boolean(), (results, agentsFirst) => {
        const msg = agentsFirst ? { t: 'snapshot', tick: 1, time: 0, agents: rows.rows(), results } : { t: 'snapshot', tick: 1, time: 0, results, agents: rows.rows() };
        const { fast, slow, resultsPacked } = bothPaths(encode(msg), 1);
        expect(fast).toEqual(slow);
        if (resultsPacked) packedRuns++;
      }),
      { numRuns: 400 },
    );
    expect(packedRuns).toBeGreaterThan(40);
  });
  test('property: a head\'s numbers and strings, in every encoding, read as the ordinary decoder reads them (parseSnapshotHead)', () => {
    const rows = new RowWriter(['a']);
    add(rows, 1, 2);
    const agents = Buffer.from(encode(rows.rows()));
    const f32 = (x: number): Buffer => {
      const b = Buffer.alloc(5);
      b[0] = 0xca;
      b.writeFloatBE(x, 1);
      return b;
    };
    const f64 = (x: number): Buffer => {
      const b = Buffer.alloc(9);
      b[0] = 0xcb;
      b.writeDoubleBE(x, 1);
      return b;
    };
    const uint = (x: number, width: 1 | 2 | 4): Buffer => {
      const b = Buffer.alloc(1 + width);
      b[0] = width === 1 ? 0xcc : width === 2 ? 0xcd : 0xce;
      b.writeUIntBE(x % 2 ** (8 * width), 1, width);
      return b;
    };
    const str8 = (text: string): Buffer => Buffer.concat([Buffer.from([0xd9, Buffer.byteLength(text)]), Buffer.from(text)]);
    // A value's bytes: every form headField reads in place, the forms it leaves to the decoder, and cut-off ones.
    const headValue = fc.oneof(
      fc.nat({ max: 0x7f }).map((x) => Buffer.from([x])),
      fc.tuple(fc.nat(), fc.constantFrom(1, 2, 4) as fc.Arbitrary<1 | 2 | 4>).map(([x, w]) => uint(x, w)),
      fc.double().map(f64),
      fc.float().map(f32),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((x) => Buffer.from(encode(x))),
      fc.constantFrom('snapshot', 'snapshots', '', 'ßnapshot', 'x'.repeat(40)).map((t) => Buffer.from(encode(t))),
      fc.constantFrom('snapshot', 'é', 'y'.repeat(200)).map(str8),
      fc.constantFrom(null, true, [1, 2], { a: 1 }).map((v) => Buffer.from(encode(v))),
    );
    // Mostly values a snapshot may carry (so that most heads are read), some of any kind.
    const tValue = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(Buffer.from(encode('snapshot')), str8('snapshot')) }, headValue);
    const integer = fc.oneof(
      fc.nat({ max: 0x7f }).map((x) => Buffer.from([x])),
      fc.tuple(fc.nat(), fc.constantFrom(1, 2, 4) as fc.Arbitrary<1 | 2 | 4>).map(([x, w]) => uint(x, w)),
      fc.nat({ max: 2 ** 40 }).map(f64),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((x) => Buffer.from(encode(x))),
    );
    const cut = fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true));
    let read = 0;
    fc.assert(
      fc.property(fc.tuple(tValue, fc.oneof({ weight: 4, arbitrary: integer }, headValue), fc.oneof({ weight: 2, arbitrary: integer }, headValue)), cut, (values, truncate) => {
        const [t, tick, time] = values;
        const head = Buffer.concat([Buffer.from([0x84]), Buffer.from(encode('t')), t, Buffer.from(encode('tick')), tick, Buffer.from(encode('time')), time, Buffer.from(encode('agents'))]);
        const bytes = truncate ? Buffer.concat([head, agents]).subarray(0, head.length - 7) : Buffer.concat([head, agents]);
        const options = { fieldCount: 1, mode: 'lockstep' as const, packRows: true };
        const unread = parseSnapshotHead(bytes, MAX, options);
        const slow = parseClientFrame(bytes, MAX, { fieldCount: 1, mode: 'lockstep' });
        if (unread === undefined) return;
        read++;
        // What the head path read is what the decoder reads, field for field (`agents` aside: left unread).
        expect(slow.ok).toBe(true);
        const { agents: _agents, ...fields } = (slow as unknown as { msg: Record<string, unknown> }).msg;
        expect(unread.parsed.msg).toEqual(fields);
      }),
      { numRuns: 600 },
    );
    expect(read).toBeGreaterThan(30);
  });
  test('property: string ids known from an earlier frame give the same verdict and the same ids', () => {
    const width = 2;
    /** The verdict and ids of checkFrameRows on `bytes`, given `known`. */
    const check = (bytes: Uint8Array, known: readonly AgentId[] | null): { ok: boolean; ids: AgentId[] } | null => {
      const head = readSnapshotHead(bytes, width);
      if (head === undefined) return null;
      const ids: AgentId[] = [];
      const ok = checkFrameRows(bytes, head.start, head.count, width, ids, new Int32Array(head.count), known === null ? null : KnownRowIds.of(known));
      return { ok, ids: ok ? ids.slice(0, head.count) : [] };
    };
    // Ids the earlier frame may have held: the same, one letter off, longer, shorter, non-ASCII of the same length, numbers.
    const variant = (agent: AgentId, how: number): AgentId => {
      if (typeof agent !== 'string') return how === 0 ? agent : `${agent}`;
      switch (how) {
        case 0:
          return agent;
        case 1:
          return agent.slice(0, -1) + (agent.endsWith('a') ? 'b' : 'a');
        case 2:
          return `${agent}x`;
        case 3:
          return agent.slice(1);
        case 4:
          return 'é'.repeat(agent.length);
        default:
          return agent.length;
      }
    };
    let reused = 0;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.oneof({ weight: 12, arbitrary: fc.stringMatching(/^[a-z0-9-]{1,40}$/) }, { weight: 3, arbitrary: fc.integer({ min: -5, max: 70_000 }) }, fc.constantFrom('', 'ünï', 'x'.repeat(129))), fc.double()), { maxLength: 12 }),
        fc.array(fc.nat({ max: 5 }), { maxLength: 14 }),
        fc.option(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }))),
        (rows, hows, corrupt) => {
          const bytes = Buffer.from(encode({ t: 'snapshot', tick: 1, time: 0, agents: rows.map(([agent, v]) => [agent, v, null]) }));
          if (corrupt !== null) bytes[corrupt[0] % bytes.length] = corrupt[1];
          const known = rows.map(([agent], i) => variant(agent, hows[i] ?? 0));
          const plain = check(bytes, null);
          const hinted = check(bytes, known);
          expect(hinted).toEqual(plain);
          if (hinted === null || !hinted.ok) return;
          // (Whether an id is the hint's own string object is not observable from JavaScript; equal is what counts.)
          reused += hinted.ids.filter((agent, i) => typeof agent === 'string' && agent === known[i]).length;
        },
      ),
      { numRuns: 400 },
    );
    expect(reused).toBeGreaterThan(100);
    // A byte above 0x7f is no ASCII id, whatever the earlier frame held (Latin-1 'é' is 0xe9 as a char code too).
    const latin = Buffer.from(encode({ t: 'snapshot', tick: 1, time: 0, agents: [['aé', 1, null]] }));
    const at = latin.indexOf(Buffer.from('a\u00c3', 'latin1'));
    const raw = Buffer.concat([latin.subarray(0, at - 1), Buffer.from([0xa2, 0x61, 0xe9]), latin.subarray(at + 3)]);
    expect(check(raw, null)).toEqual({ ok: false, ids: [] });
    expect(check(raw, ['a\u00e9'])).toEqual({ ok: false, ids: [] });
  });
  test('results: string ids the session knows (IdIndex) are found from the bytes; the same message either way', () => {
    // A reference FNV-1a, to find ids that share a hash (the index must tell them apart).
    const hash = (text: string): number => {
      let h = 0x811c9dc5 | 0;
      for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
      return h & 0x3fffffff;
    };
    // Pairs found by a search over random 10-character ids: each pair shares its hash.
    const shared = ['sysfxfycwl', '4th-hikf3f', 's8z5itg643', 'rjk9asn3ou', 'nrm5q802x8', 'g261h860en'];
    for (let k = 0; k < shared.length; k += 2) expect(hash(shared[k]!)).toBe(hash(shared[k + 1]!));
    const ids = [...shared, ...Array.from({ length: 20_000 }, (_, i) => `npc-${i}`)];
    const index = new IdIndex();
    for (const [k, agent] of ids.entries()) index.set(agent, k);
    index.set('ünï', -5); // not ASCII: never found from bytes (readId would not read them)
    /** The id and its number found from `agent`'s bytes, or undefined. */
    const find = (agent: string): [string, number] | undefined => {
      const bytes = Buffer.from(agent, 'latin1');
      const slot = index.find(bytes, 0, bytes.length);
      return slot < 0 ? undefined : [index.idAt(slot), index.valueAt(slot)];
    };
    for (const agent of [...shared, 'npc-0', 'npc-19999']) expect(find(agent)).toEqual([agent, ids.indexOf(agent)]);
    expect(find('npc-20000')).toBeUndefined();
    expect(find('ünï')).toBeUndefined();
    index.set('npc-7', 77); // filed anew
    expect(find('npc-7')).toEqual(['npc-7', 77]);
    for (const agent of shared.filter((_, k) => k % 2 === 0)) index.delete(agent);
    for (const [k, agent] of shared.entries()) expect(find(agent)).toEqual(k % 2 === 0 ? undefined : [agent, k]);

    const rows = new RowWriter(['a']);
    add(rows, 'npc-1', 2);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(fc.constantFrom(...shared, 'npc-7', 'npc-70000', 'nobody', 'ünï'), fc.nat()), fc.integer({ min: 1, max: 1000 }), fc.constantFrom('success', 'failure')), { maxLength: 8 }), (results) => {
        const bytes = encode({ t: 'snapshot', tick: 1, time: 0, results, agents: rows.rows() });
        const withIds = parseClientFrame(bytes, MAX, { fieldCount: 1, mode: 'lockstep', packRows: true, knownIds: { ids: index, version: 0, rowIds: () => null } });
        const without = parseClientFrame(bytes, MAX, { fieldCount: 1, mode: 'lockstep', packRows: true });
        const list = (r: ParseResult): unknown => (r.ok && r.msg.t === 'snapshot' && r.msg.results !== undefined ? resultTuples(r.msg.results) : r);
        expect(list(withIds)).toEqual(list(without));
        expect(list(without)).toEqual(list(parseClientFrame(bytes, MAX, { fieldCount: 1, mode: 'lockstep' })));
      }),
      { numRuns: 300 },
    );
  });
  test("rows checked on the main thread with the session's ids of the last frame (KnownIds.rowIds): the same message", () => {
    const ids: AgentId[] = ['npc-1', 'npc-2', 7, 'npc-3', 'n\u00e9', 'npc-44'];
    const rows = ids.map((agent, k) => [agent, k * 1.5, k % 2 === 0]);
    const variants: Array<readonly AgentId[]> = [ids, ids.slice(0, 3), ['npc-1', 'npc-22', 7, 'npc-4', 'n\u00e9', 'npc-44x'], [1, 2, 3], []];
    for (const good of [true, false]) {
      const bytes = Buffer.from(encode({ t: 'snapshot', tick: 1, time: 0, agents: good ? rows.filter((r) => r[0] !== 'n\u00e9') : rows }));
      const plain = parseClientFrame(bytes, MAX, { fieldCount: 2, mode: 'fixed', packRows: true });
      expect(plain.ok && isPackedRows((plain.msg as { agents?: unknown }).agents)).toBe(good);
      for (const known of variants) {
        const hinted = parseClientFrame(bytes, MAX, { fieldCount: 2, mode: 'fixed', packRows: true, knownIds: { ids: new IdIndex(), version: 0, rowIds: () => KnownRowIds.of(known) } });
        const view = (r: ParseResult): unknown => (r.ok && isPackedRows((r.msg as { agents?: unknown }).agents) ? unpackRows((r.msg as unknown as { agents: never }).agents) : r);
        expect({ known, parsed: view(hinted) }).toEqual({ known, parsed: view(plain) });
      }
    }
  });
});
