// The codec: standard MessagePack out, safe decoding in (prototype keys, extensions, depth).

import { Packr, Unpackr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import {
  DecodeError,
  LIMITS,
  Msg,
  checkFrame,
  decode,
  encode,
  encodeDecisions,
  encodeDespawned,
  encodeEntryError,
  encodeError,
  encodeGoodbye,
  encodePong,
  encodeSpawned,
  encodeWelcome,
} from '../../src/protocol/index.js';
import { referenceDecode } from './reference-decoder.js';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const fromHex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text.replace(/\s+/g, ''), 'hex'));
/** `levels` arrays nested in each other, the innermost empty. */
const nested = (levels: number): Uint8Array => fromHex(`${'91'.repeat(levels - 1)}90`);

/** Every kind of frame the server sends, built with the encode helpers. */
const serverFrames = () => ({
  welcome: encodeWelcome(
    { session: 's1', resume: 'tok', mode: 'fixed', hz: 20, trees: ['guard', 'orc'], limits: { maxAgents: 1000, maxFrameBytes: 1 << 20 } },
    1,
  ),
  spawned: encodeSpawned([1, 'orc-2'], [{ id: 3, code: 'E_UNKNOWN_TREE', message: 'unknown tree "x"' }], 2),
  despawned: encodeDespawned([1], [], 3),
  decisions: encodeDecisions({
    tick: 7,
    basedOn: 6,
    actions: [[1, 1, 'moveTo', { x: 1.5, y: -2, path: [1, 2, 3] }]],
    cancels: [[2, 4]],
    done: [[3, 'success']],
    errors: [[4, 'E_PLUGIN', 'plugin "los" threw: boom']],
  }),
  error: encodeError('E_BAD_FIELD', 'spawn.agents[3].tree: expected a string', 9),
  entryError: encodeEntryError({ id: 'orc-2', code: 'E_UNKNOWN_KEY', message: 'blackboard key "x" is not declared by tree "orc"' }, 11),
  goodbye: encodeGoodbye('shutting down', 5000),
  pong: encodePong(42, 10),
});

describe('encoding is plain standard MessagePack', () => {
  it.each(Object.entries(serverFrames()))('%s decodes with a spec-only decoder and with a fresh msgpackr Unpackr', (_name, frame) => {
    const reference = referenceDecode(frame);
    const fresh = new Unpackr({ useRecords: false, mapsAsObjects: true }).unpack(frame) as unknown;
    expect(fresh).toEqual(reference);
    expect(checkFrame(frame)).toBeUndefined();
    expect(decode(frame)).toEqual(reference);
  });

  it('writes exactly the canonical bytes of a small message (fixmap, fixstr, positive fixint)', () => {
    // {"t":"error","code":"E_LIMIT","message":"x","re":7}
    const expected = ['84', 'a174', 'a56572726f72', 'a4636f6465', 'a7455f4c494d4954', 'a76d657373616765', 'a178', 'a27265', '07'];
    expect(hex(encodeError('E_LIMIT', 'x', 7))).toBe(expected.join(''));
  });

  it('marks entry errors with entry: true and the agent id when known', () => {
    expect(decode(serverFrames().entryError)).toEqual({
      t: 'error',
      code: 'E_UNKNOWN_KEY',
      message: 'blackboard key "x" is not declared by tree "orc"',
      entry: true,
      agent: 'orc-2',
      re: 11,
    });
    expect(decode(encodeEntryError({ code: 'E_BAD_FIELD', message: 'bb.set[0]: expected a list [id, {key: value}]' }))).toEqual({
      t: 'error',
      code: 'E_BAD_FIELD',
      message: 'bb.set[0]: expected a list [id, {key: value}]',
      entry: true,
    });
  });

  it('round-trips the decisions map and leaves empty lists out', () => {
    expect(decode(serverFrames().decisions)).toEqual({
      t: 'decisions',
      tick: 7,
      basedOn: 6,
      actions: [[1, 1, 'moveTo', { x: 1.5, y: -2, path: [1, 2, 3] }]],
      cancels: [[2, 4]],
      done: [[3, 'success']],
      errors: [[4, 'E_PLUGIN', 'plugin "los" threw: boom']],
    });
    expect(decode(encodeDecisions({ tick: 1, actions: [], cancels: [], done: [], errors: [] }))).toEqual({ t: 'decisions', tick: 1 });
    expect(decode(encodeDecisions({ tick: 1, basedOn: undefined }))).toEqual({ t: 'decisions', tick: 1 });
  });

  it('writes integers wider than 32 bits as int64, not float64, in ids, ticks and seqs', () => {
    const wide = 2 ** 40 + 1;
    const frame = encodeDecisions({ tick: wide, basedOn: wide, actions: [[wide, wide, 'go', {}]], cancels: [[-wide, 3]] });
    const decoded = referenceDecode(frame) as Record<string, unknown>;
    expect(decoded.tick).toBe(BigInt(wide));
    expect(decoded.basedOn).toBe(BigInt(wide));
    expect(decoded.actions).toEqual([[BigInt(wide), BigInt(wide), 'go', {}]]);
    expect(decoded.cancels).toEqual([[BigInt(-wide), 3]]);
    // Our own decoder reads them back as numbers.
    expect(decode(frame)).toMatchObject({ tick: wide, actions: [[wide, wide, 'go', {}]] });
    expect(referenceDecode(encodeSpawned([wide, 5], [{ id: wide, code: 'E_DUPLICATE_AGENT', message: 'm' }]))).toEqual({
      t: 'spawned',
      ids: [BigInt(wide), 5],
      errors: [{ id: BigInt(wide), code: 'E_DUPLICATE_AGENT', message: 'm' }],
    });
  });

  it('does not copy or change the caller\'s lists', () => {
    const actions = [[1, 2, 'go', {}] as const];
    const wideActions = [[2 ** 40, 2, 'go', {}] as const];
    encodeDecisions({ tick: 1, actions });
    encodeDecisions({ tick: 1, actions: wideActions });
    expect(wideActions[0]![0]).toBe(2 ** 40);
  });

  it('encodes undefined as nil and a JS Map as a plain map', () => {
    expect(hex(encode({ a: undefined }))).toBe('81a161c0');
    expect(decode(encode(new Map<unknown, unknown>([['k', 1], [2, 'v']])))).toEqual({ k: 1, '2': 'v' });
  });

  it('keeps earlier encoded buffers intact when encoding more', () => {
    const first = encodeError('E_LIMIT', 'first');
    const copy = Buffer.from(first);
    for (let i = 0; i < 2000; i++) encodeError('E_LIMIT', `other ${i}`.repeat(20));
    expect(Buffer.compare(first, copy)).toBe(0);
  });
});

describe('decoding untrusted bytes', () => {
  it('msgpackr renames a "__proto__" map key rather than setting a prototype; our decode refuses it outright', () => {
    // {"__proto__": {"polluted": true}}
    const frame = fromHex('81 a95f5f70726f746f5f5f 81 a8706f6c6c75746564 c3');
    const raw = new Unpackr({ useRecords: false, mapsAsObjects: true }).unpack(frame) as Record<string, unknown>;
    expect(Object.getPrototypeOf(raw)).toBe(Object.prototype);
    expect(Object.keys(raw)).toEqual(['__proto_']);
    expect(() => decode(frame)).toThrow(new DecodeError(Msg.protoKey()));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses "__proto__" in every string encoding and at any depth, but not as a value', () => {
    expect(checkFrame(fromHex('81 d9095f5f70726f746f5f5f c0'))).toBe(Msg.protoKey()); // str8 key
    expect(checkFrame(fromHex('81 a161 91 81 a95f5f70726f746f5f5f c0'))).toBe(Msg.protoKey());
    expect(checkFrame(fromHex('81 a161 a95f5f70726f746f5f5f'))).toBeUndefined();
  });

  it('accepts the timestamp extension and refuses every other extension type', () => {
    const date = new Date(1_700_000_000_000);
    expect(decode(encode({ at: date }))).toEqual({ at: date });
    expect(checkFrame(fromHex('81 a161 d6ff 00000001'))).toBeUndefined(); // timestamp 32
    expect(checkFrame(fromHex('81 a161 c70cff 000000000000000000000001'))).toBeUndefined(); // timestamp 96
    expect(checkFrame(fromHex('81 a161 d405 00'))).toBe(Msg.extensionType(5));
    expect(checkFrame(fromHex('81 a161 d4ff 00'))).toBe(Msg.extensionType(-1)); // timestamp of a bad length
    expect(checkFrame(fromHex('81 a161 d400 00'))).toBe(Msg.extensionType(0)); // msgpackr's "undefined"
    expect(checkFrame(fromHex('81 a161 c801007f' + '00'.repeat(256)))).toBe(Msg.extensionType(127));
  });

  it('refuses msgpackr-only encodings: records, structured clone, bundled strings, sets', () => {
    const records = new Packr({ useRecords: true }).pack([{ a: 1 }, { a: 2 }]);
    const clone = new Packr({ structuredClone: true }).pack({ s: new Set([1]), e: new Error('x') });
    const bundled = new Packr({ bundleStrings: true, useRecords: false }).pack({ a: 'x'.repeat(50), b: 'y'.repeat(50) });
    for (const frame of [records, clone, bundled]) {
      expect(() => decode(frame)).toThrow(DecodeError);
      expect(checkFrame(frame)).toMatch(/^MessagePack extension type -?\d+ is not part of the protocol/);
    }
  });

  it('refuses truncated frames, trailing bytes and the reserved byte 0xc1', () => {
    const frame = encode({ t: 'ping', n: 'x'.repeat(40) });
    for (let cut = 0; cut < frame.length; cut++) {
      expect(checkFrame(frame.subarray(0, cut))).toBe(Msg.truncated());
    }
    expect(checkFrame(Buffer.concat([frame, Buffer.from([0])]))).toBe(Msg.trailingBytes());
    expect(checkFrame(fromHex('c1'))).toBe(Msg.reservedByte());
    expect(checkFrame(fromHex('81 c1 00'))).toBe(Msg.reservedByte());
    expect(checkFrame(fromHex('dd ffffffff'))).toBe(Msg.truncated()); // a 4-billion-item array in 5 bytes
    expect(checkFrame(fromHex('df ffffffff 00'))).toBe(Msg.truncated());
  });

  it('accepts string and integer map keys, refuses any other key', () => {
    expect(decode(fromHex('82 07 a161 ff a162'))).toEqual({ '7': 'a', '-1': 'b' });
    expect(checkFrame(fromHex('81 cb3ff0000000000000 c0'))).toBe(Msg.badMapKey());
    expect(checkFrame(fromHex('81 c3 c0'))).toBe(Msg.badMapKey());
    expect(checkFrame(fromHex('81 c0 c0'))).toBe(Msg.badMapKey());
    expect(checkFrame(fromHex('81 90 c0'))).toBe(Msg.badMapKey());
    expect(checkFrame(fromHex('81 80 c0'))).toBe(Msg.badMapKey());
  });

  it(`limits nesting to ${LIMITS.maxDepth} levels without recursion`, () => {
    expect(checkFrame(nested(LIMITS.maxDepth))).toBeUndefined();
    expect(checkFrame(nested(LIMITS.maxDepth + 1))).toBe(Msg.tooDeep(LIMITS.maxDepth));
    // A million levels: refused quickly, no stack overflow.
    expect(checkFrame(new Uint8Array(1_000_000).fill(0x91))).toBe(Msg.tooDeep(LIMITS.maxDepth));
    expect(checkFrame(nested(3), 2)).toBe(Msg.tooDeep(2));
  });

  it('decodes binary as a copy, not a view of the frame', () => {
    const frame = encode({ b: Buffer.from([1, 2, 3]) });
    const value = decode(frame) as { b: Uint8Array };
    expect([...value.b]).toEqual([1, 2, 3]);
    frame.fill(0);
    expect([...value.b]).toEqual([1, 2, 3]);
  });

  it('decodes 64-bit integers as numbers', () => {
    expect(decode(fromHex('cf 0000010000000001'))).toBe(2 ** 40 + 1);
    expect(decode(fromHex('d3 fffffeffffffffff'))).toBe(-(2 ** 40) - 1);
  });
});
