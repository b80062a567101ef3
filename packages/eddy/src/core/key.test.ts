import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { mapKeyOf, type Key } from "./key.ts";
import { encodeKeyCanonical } from "./key-group.ts";

// Values chosen so that equal keys come up often, and so do the edges of the map identity's
// number encoding (0 and -0, 2^16, 2^32 - 1 and 2^32, negative, fractional) and strings that
// look like parts of it.
const scalar: fc.Arbitrary<Key> = fc.constantFrom<Key>(
  0, -0, 1, 7, 0xffff, 0x10000, 0xd800, 0xffffffff, 2 ** 32, -1, 0.5, 1e21,
  "", "1", "u", "\u0000[", "n1;", "]", 1n, -1n, 0n,
);
const key: fc.Arbitrary<Key> = fc.letrec<{ key: Key }>((tie) => ({
  key: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, fc.array(tie("key"), { minLength: 1, maxLength: 3 })),
})).key;

const canonical = (k: Key): string => Buffer.from(encodeKeyCanonical(k)).toString("hex");

test("two keys have the same map identity exactly when their canonical encodings are equal (property)", () => {
  fc.assert(
    fc.property(fc.array(key, { minLength: 2, maxLength: 12 }), (keys) => {
      for (const a of keys) {
        for (const b of keys) {
          assert.equal(mapKeyOf(a) === mapKeyOf(b), canonical(a) === canonical(b), `${String(mapKeyOf(a))} vs ${String(mapKeyOf(b))}`);
        }
      }
    }),
    { numRuns: 500 },
  );
});

test("the one-allocation identity of a pair of small integers is the general encoding of the pair", () => {
  const inner = (k: Key): string => (mapKeyOf([k]) as string).slice(2, -1);
  const ints = [0, -0, 1, 0xffff, 0x10000, 0xd800, 20_000, 0xffffffff];
  for (const a of ints) {
    for (const b of ints) {
      assert.equal(mapKeyOf([a, b]), `\u0000[${inner(a)}${inner(b)}]`);
      assert.notEqual(mapKeyOf([a, b]), mapKeyOf([a, b, 0]));
      assert.notEqual(mapKeyOf([a, b]), mapKeyOf([[a, b]]));
    }
  }
  assert.notEqual(mapKeyOf([1, 2 ** 32]), mapKeyOf([1, 0]));
  assert.notEqual(mapKeyOf([1, -1]), mapKeyOf([1, 0xffffffff]));
  assert.equal(mapKeyOf([-0, 3]), mapKeyOf([0, 3]));
});
