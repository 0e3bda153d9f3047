// Arbitrary row values for the property tests of the row encoders (the protocol's encodeRows, the SDK's RowEncoder):
// every form a row may hold, numbers at the edges of each MessagePack form among them.

import fc from 'fast-check';

export const number = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
  fc.constantFrom(0, -0, 127, 128, 255, 256, 65_535, 65_536, -32, -33, -128, -129, 2 ** 32, -(2 ** 31) - 1, 2 ** 53, Number.NaN, Infinity, 1e-300),
  fc.double(),
);
export const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ minLength: 60, maxLength: 70 }));
// No `__proto__` keys: the protocol's decoder refuses them.
export const key = fc.string({ maxLength: 8 }).filter((k) => k !== '__proto__');
export const value: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    number,
    text,
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.tuple(fc.double(), fc.double()),
    fc.array(number, { maxLength: 17 }),
    fc.sparseArray(number, { maxLength: 5 }),
    fc.uint8Array({ maxLength: 6 }),
    fc.array(tie('value'), { maxLength: 18 }),
    fc.dictionary(key, tie('value'), { maxKeys: 17 }),
  ),
})).value;
export const id = fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), fc.constantFrom(2 ** 40, 1_000_000_007), fc.string({ maxLength: 12 }));
