// A large list of a frame cut into parts without decoding it (splitFrameList), then decoded part by part
// (decodeItems): the same values as decoding the frame whole, the same refusals (ws.ts decodes large spawns so).

import { describe, expect, it } from 'vitest';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { pack } from 'msgpackr';
import { LIMITS, decode, decodeItems, encode, readSpawnEntries, splitFrameList } from '../../src/protocol/index.js';

const agents = Array.from({ length: 2345 }, (_, i) => ({ id: i % 2 === 0 ? i : `n-${i}`, tree: 'guard', ...(i % 10 === 0 ? { seed: i, bb: { v: [i, 'x', { y: null }] } } : {}) }));

describe('a frame list in parts', () => {
  it('decodes to what the whole frame decodes to, fields in frame order', () => {
    const frame = encode({ t: 'spawn', id: 7, agents, extra: { a: 1 } });
    const split = splitFrameList(frame, 'agents', 1000);
    expect(split).toBeDefined();
    expect(split!.parts.map((p) => p.count)).toEqual([1000, 1000, 345]);
    expect(Object.keys(split!.fields)).toEqual(['t', 'id', 'agents', 'extra']);
    const items = split!.parts.flatMap((p) => decodeItems(p.bytes, p.count, 2)!);
    expect({ ...split!.fields, agents: items }).toEqual(decode(frame));
  });

  it('gives up on what it does not take (no list, a key twice, bytes left over), so the whole frame is decoded', () => {
    expect(splitFrameList(encode({ t: 'spawn', agents: 5 }), 'agents', 1000)).toBeUndefined();
    expect(splitFrameList(encode({ t: 'spawn' }), 'agents', 1000)).toBeUndefined();
    const twice = Buffer.concat([Buffer.from([0x82]), encode('agents'), encode([1]), encode('agents'), encode([2])]);
    expect(splitFrameList(twice, 'agents', 1000)).toBeUndefined();
    expect(splitFrameList(Buffer.concat([encode({ t: 'spawn', agents: [1] }), Buffer.from([0xc0])]), 'agents', 1000)).toBeUndefined();
  });

  it('refuses a part the whole frame would refuse: __proto__ keys, nesting counted from the frame', () => {
    const proto = encode({ t: 'spawn', agents: [{ id: 1 }, JSON.parse('{"__proto__": 1}')] });
    const p = splitFrameList(proto, 'agents', 1000)!;
    expect(decodeItems(p.parts[0]!.bytes, p.parts[0]!.count, 2)).toBeUndefined();
    // An entry nested as deep as the frame allows (the frame's map and the list take two levels) is fine; one more is not.
    const nest = (n: number): unknown => (n === 0 ? 1 : [nest(n - 1)]);
    for (const extra of [0, 1]) {
      const frame = encode({ t: 'spawn', agents: [nest(LIMITS.maxDepth - 2 + extra)] });
      // Cut as deep as the frame allows; one level more, either the cut gives up or the part is refused.
      const s = splitFrameList(frame, 'agents', 1000);
      expect(s !== undefined || extra === 1).toBe(true);
      const items = s === undefined ? undefined : decodeItems(s.parts[0]!.bytes, s.parts[0]!.count, 2);
      let whole: unknown;
      try {
        whole = decode(frame);
      } catch {
        whole = undefined;
      }
      expect(items === undefined).toBe(whole === undefined);
      expect(whole === undefined).toBe(extra === 1);
    }
  });
});

describe('spawn entries read straight from a part (readSpawnEntries)', () => {
  const partsOf = (list: unknown[]): Array<{ count: number; bytes: Uint8Array }> => [...splitFrameList(encode({ t: 'spawn', agents: list }), 'agents', 1000)!.parts];

  it('reads the usual entries as the decoder does, one string for a spawn’s one tree and label', () => {
    const list = Array.from({ length: 2500 }, (_, i) => ({
      id: i % 3 === 0 ? 7_000_000 + i : i % 3 === 1 ? -i : `npc-${i}`,
      tree: i < 2000 ? 'guard' : 'squad',
      ...(i % 2 === 0 ? { seed: i * 1_000_003 } : {}),
      ...(i % 5 === 0 ? { label: 'Blue Team/Warriors' } : {}),
      ...(i % 7 === 0 ? { every: 20 } : {}),
    }));
    const parts = partsOf(list);
    const read = parts.flatMap((p) => readSpawnEntries(p.bytes, p.count)!);
    expect(read).toEqual(parts.flatMap((p) => decodeItems(p.bytes, p.count, 2)!));
    expect(read).toEqual(list);
    expect(read[1]!['tree']).toBe('guard');
    expect(read[2100]!['tree']).toBe('squad');
  });

  it('reads entries written as map16, as msgpackr writes maps by default', () => {
    const list = [
      { id: 1_000_000, tree: 'guard' },
      { id: 'a', tree: 'guard', seed: 3 },
    ];
    const frame = pack({ t: 'spawn', agents: list });
    const [part] = splitFrameList(frame, 'agents', 1000)!.parts;
    expect(part!.bytes[0]).toBe(0xde);
    expect(readSpawnEntries(part!.bytes, part!.count)).toEqual(list);
  });

  it('declines what it does not read, so the decoder reads it (and validation words any refusal)', () => {
    const declined = [
      { id: 1, tree: 'guard', bb: { hp: 3 } },
      { id: 1, tree: 'guard', reload: 'keep' },
      { id: 1, tree: 'guard', other: 1 },
      { id: 1.5, tree: 'guard' },
      { id: '', tree: 'guard' },
      { id: 'é', tree: 'guard' },
      { id: 1, tree: '' },
      { id: 1, tree: 3 },
      { id: 1 },
      { tree: 'guard' },
      { id: 1, tree: 'guard', seed: 0.5 },
      { id: 1, tree: 'guard', seed: null },
      { id: 1, tree: 'guard', every: 0 },
      { id: 1, tree: 'guard', every: LIMITS.maxEvery + 1 },
      { id: 1, tree: 'guard', label: 'x'.repeat(LIMITS.maxLabelLength + 1) },
      [1, 'guard'],
      7,
    ];
    const read = declined.map((entry) => {
      const [part] = partsOf([{ id: 0, tree: 'guard' }, entry]);
      return readSpawnEntries(part!.bytes, part!.count);
    });
    expect(read).toEqual(declined.map(() => undefined));
    // A key twice (the decoder keeps the last; validation reads that one).
    const twice = Buffer.concat([Buffer.from([0x91, 0x83]), encode('id'), encode(1), encode('tree'), encode('guard'), encode('id'), encode(2)]);
    expect(readSpawnEntries(twice.subarray(1), 1)).toBeUndefined();
    // Bytes left over, or cut short.
    const [whole] = partsOf([{ id: 1, tree: 'guard' }]);
    expect(readSpawnEntries(Buffer.concat([whole!.bytes, Buffer.from([0xc0])]), 1)).toBeUndefined();
    expect(readSpawnEntries(whole!.bytes.subarray(0, whole!.bytes.length - 1), 1)).toBeUndefined();
  });

  it('never reads an entry otherwise than the decoder (fuzzed entries)', () => {
    let fast = 0;
    const text = fc.oneof(fc.constantFrom('guard', 'squad', '', 'é'), fc.string({ maxLength: 8 }));
    const value = fc.oneof(fc.integer(), fc.double(), fc.constant(null), text, fc.boolean(), fc.constant(Number.MAX_SAFE_INTEGER + 2));
    const usual = fc.record(
      { id: fc.oneof(fc.nat(), fc.string({ minLength: 1, maxLength: 8 })), tree: fc.constantFrom('guard', 'squad'), label: fc.constantFrom('', 'a/b'), seed: fc.integer(), every: fc.integer({ min: 1, max: 30 }) },
      { requiredKeys: ['id', 'tree'] },
    );
    const entry = fc.oneof(
      { arbitrary: usual, weight: 30 },
      fc.record({ id: fc.oneof(fc.integer(), text), tree: text, label: text, seed: fc.oneof(fc.integer(), fc.double()), every: fc.integer({ min: -1, max: 30 }) }, { requiredKeys: [] }),
      fc.dictionary(fc.constantFrom('id', 'tree', 'label', 'seed', 'every', 'bb', 'x'), value, { maxKeys: 6 }),
    );
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 20 }), (list) => {
        const [part] = partsOf(list);
        const read = readSpawnEntries(part!.bytes, part!.count);
        if (read !== undefined) fast++;
        // Declined, or read exactly as the decoder reads it.
        return read === undefined || isDeepStrictEqual(read, decodeItems(part!.bytes, part!.count, 2));
      }),
      { numRuns: 500 },
    );
    // The usual shapes were read (not everything declined).
    expect(fast).toBeGreaterThan(50);
  });
});
