// IdIndex (src/protocol/results.ts): a session's string ids with their routes, in an open-addressing table that
// results find from a frame's bytes and the router and workers by a hash of their characters. Filed, filed anew and
// deleted in any order, it answers as a Map would.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdIndex } from '../../src/protocol/index.js';

/** What `index` finds from `id`'s bytes: [id, value], or undefined. */
function found(index: IdIndex, id: string): [string, number] | undefined {
  const bytes = Buffer.from(id, 'latin1');
  const slot = index.find(bytes, 0, bytes.length);
  return slot < 0 ? undefined : [index.idAt(slot), index.valueAt(slot)];
}

describe('IdIndex', () => {
  it('property: any sequence of set and delete leaves it answering as a Map of the ASCII ids', () => {
    // Few distinct ids and many operations: slots collide, runs form and deletes shift entries back through them.
    const id = fc.oneof({ weight: 10, arbitrary: fc.nat({ max: 120 }).map((n) => `k${n}`) }, fc.constantFrom('', 'é', 'x'.repeat(200)));
    const op = fc.tuple(fc.boolean(), id, fc.integer({ min: 0, max: 0x7fffffff }));
    fc.assert(
      fc.property(fc.array(op, { minLength: 50, maxLength: 400 }), (ops) => {
        const index = new IdIndex();
        const reference = new Map<string, number>();
        const answers: boolean[] = [];
        const expected: boolean[] = [];
        for (const [set, key, value] of ops) {
          answers.push(set ? index.set(key, value) : index.delete(key));
          // Only ids readId reads are kept: ASCII, 1 to 128 characters; set and delete say whether they filed or removed one.
          const readable = key.length >= 1 && key.length <= 128 && [...key].every((c) => c.charCodeAt(0) < 0x80);
          expected.push(readable && (set || reference.has(key)));
          if (!readable) continue;
          if (set) reference.set(key, value);
          else reference.delete(key);
        }
        expect(answers).toEqual(expected);
        for (const [, key] of ops) {
          const v = reference.get(key);
          expect(found(index, key)).toEqual(v === undefined ? undefined : [key, v]);
          // Found by its characters as by its bytes.
          expect(index.get(key)).toBe(v ?? -1);
        }
        const listed: Array<[string, number]> = [];
        index.forEach((key, value) => listed.push([key, value]));
        expect(new Map(listed)).toEqual(reference);
        expect(listed).toHaveLength(index.size);
      }),
      { numRuns: 500 },
    );
  });

  it('grows past many ids and still finds each, and none it never held', () => {
    const index = new IdIndex();
    for (let i = 0; i < 5000; i++) index.set(`npc-${i}`, i);
    for (let i = 0; i < 5000; i += 2) index.delete(`npc-${i}`);
    for (let i = 0; i < 5000; i++) expect(found(index, `npc-${i}`)).toEqual(i % 2 === 0 ? undefined : [`npc-${i}`, i]);
    expect(found(index, 'npc-5000')).toBeUndefined();
    expect(index.size).toBe(2500);
  });
});
