// KnownRowIds (src/protocol/known-rows.ts): the ids a session's rows named last time, with the string ones' characters
// end to end, which the frame readers compare a row's id bytes against instead of reading the string objects.

import { describe, expect, it } from 'vitest';
import { KnownRowIds, LIMITS, encode, type AgentId } from '../../src/protocol/index.js';
import { knownRowEnd } from '../../src/protocol/known-rows.js';

/** The bytes of `value` as the frame holds it, with a byte either side. */
function framed(value: unknown, header?: number[]): { bytes: Uint8Array; at: number; end: number } {
  const encoded = header === undefined ? encode(value) : Uint8Array.from([...header, ...Buffer.from(value as string)]);
  const bytes = Uint8Array.from([0xc0, ...encoded, 0xc0]);
  return { bytes, at: 1, end: 1 + encoded.length };
}

describe('KnownRowIds', () => {
  const long = 'x'.repeat(LIMITS.maxAgentIdLength);
  const ids: AgentId[] = ['npc-1', 7, '', 'n\u00e9', 'x'.repeat(LIMITS.maxAgentIdLength + 1), long, 'a'];
  const known = KnownRowIds.of(ids)!;

  it('lays out the characters of the string ids readId reads, nothing for the others', () => {
    expect(Array.from(known.ends)).toEqual([5, 5, 5, 5, 5, 5 + long.length, 6 + long.length]);
    expect(Buffer.from(known.bytes).toString('latin1')).toBe(`npc-1${long}a`);
  });

  it('matches a row whose id spells the row\'s known id, as a fixstr or a str8, and nothing else', () => {
    const at = (i: number, f: { bytes: Uint8Array; at: number; end: number }): number => knownRowEnd(known, i, f.bytes, f.at, f.bytes.length);
    const fix = framed('npc-1');
    expect(at(0, fix)).toBe(fix.end);
    const str8 = framed('npc-1', [0xd9, 5]);
    expect(at(0, str8)).toBe(str8.end);
    const longOne = framed(long);
    expect(longOne.bytes[1]).toBe(0xd9);
    expect(at(5, longOne)).toBe(longOne.end);
    expect(at(6, framed('a'))).toBe(3);
    // Another row's id, another spelling, a prefix, a number, ids that are not readable strings.
    expect(at(6, fix)).toBe(-1);
    expect(at(0, framed('npc-2'))).toBe(-1);
    expect(at(0, framed('npc-'))).toBe(-1);
    expect(at(0, framed('npc-10'))).toBe(-1);
    expect(at(1, framed(7))).toBe(-1);
    expect(at(2, framed(''))).toBe(-1);
    expect(at(3, framed('n\u00e9'))).toBe(-1);
    expect(at(7, fix)).toBe(-1); // past the rows known
    // Cut short: the string runs past the frame's end.
    expect(knownRowEnd(known, 0, fix.bytes, fix.at, fix.end - 1)).toBe(-1);
  });

  it('copies the list it is made from', () => {
    const list: AgentId[] = ['a', 'b'];
    const k = KnownRowIds.of(list);
    list[0] = 'c';
    expect(k?.ids).toEqual(['a', 'b']);
  });

  it('is null for ids of which none is a string readId reads: integer ids read fast as they are', () => {
    expect(KnownRowIds.of([1, 2, 3_000_000])).toBeNull();
    expect(KnownRowIds.of(['', 'n\u00e9', 4])).toBeNull();
    expect(KnownRowIds.of([])).toBeNull();
  });
});
