// A large list of a frame cut into parts without decoding it (splitFrameList), then decoded part by part
// (decodeItems): the same values as decoding the frame whole, the same refusals (ws.ts decodes large spawns so).

import { describe, expect, it } from 'vitest';
import { LIMITS, decode, decodeItems, encode, splitFrameList } from '../../src/protocol/index.js';

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
