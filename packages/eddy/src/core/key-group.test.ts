import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Key } from "./key.ts";
import {
  MAX_MAX_PARALLELISM,
  assignToKeyGroup,
  checkParallelism,
  computeKeyGroupForKeyHash,
  computeOperatorIndexForKeyGroup,
  defaultMaxParallelism,
  encodeKeyCanonical,
  hashKey,
  hashKeyGeneral,
  KeyGroupAssigner,
  keyGroupRangeContains,
  keyGroupRangeForOperator,
  keyGroupRangeSize,
  murmur3_32,
} from "./key-group.ts";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
const hex = (u: Uint8Array): string => Buffer.from(u).toString("hex");

// Published MurmurHash3 x86_32 vectors (SMHasher-derived tables, Python mmh3). Two are also
// checkable by reasoning: "" with seed 1 and [0x00] with seed 0 both reduce to fmix32(1) (no
// block; the tail byte 0 mixes to 0; h = seed ^ length = 1), so they must be equal; and
// 21 43 65 87 with seed 0x5082EDEE equals 00 00 00 00 with seed 0, because that seed is exactly
// the mixed block k of 0x87654321, so h = seed ^ k = 0 as for the all-zero block.
const MURMUR_VECTORS: readonly [string, Uint8Array, number, number][] = [
  ["empty, seed 0", utf8(""), 0, 0],
  ["empty, seed 1", utf8(""), 1, 0x514e28b7],
  ["empty, seed 0xffffffff", utf8(""), 0xffffffff, 0x81f16f39],
  ["00, seed 0", bytes(0), 0, 0x514e28b7],
  ["00 00, seed 0", bytes(0, 0), 0, 0x30f4c306],
  ["00 00 00, seed 0", bytes(0, 0, 0), 0, 0x85f0b427],
  ["00 00 00 00, seed 0", bytes(0, 0, 0, 0), 0, 0x2362f9de],
  ["21 43 65 87, seed 0x5082EDEE", bytes(0x21, 0x43, 0x65, 0x87), 0x5082edee, 0x2362f9de],
  ["21 43 65 87, seed 0", bytes(0x21, 0x43, 0x65, 0x87), 0, 0xf55b516b],
  ["21 43 65, seed 0", bytes(0x21, 0x43, 0x65), 0, 0x7e4a8634],
  ["21 43, seed 0", bytes(0x21, 0x43), 0, 0xa0f7b07a],
  ["21, seed 0", bytes(0x21), 0, 0x72661cf4],
  ["ff ff ff ff, seed 0", bytes(0xff, 0xff, 0xff, 0xff), 0, 0x76293b50],
  ['"hello", seed 0', utf8("hello"), 0, 0x248bfa47],
  ['"abc", seed 0', utf8("abc"), 0, 0xb3dd93fa],
  ['"The quick brown fox jumps over the lazy dog", seed 0', utf8("The quick brown fox jumps over the lazy dog"), 0, 0x2e4ff723],
  ['"The quick brown fox jumps over the lazy dog", seed 0x9747b28c', utf8("The quick brown fox jumps over the lazy dog"), 0x9747b28c, 0x2fa826cd],
  ['"Hello, world!", seed 0x9747b28c', utf8("Hello, world!"), 0x9747b28c, 0x24884cba],
  ['"aaaa", seed 0x9747b28c', utf8("aaaa"), 0x9747b28c, 0x5a97808a],
  ['"aaa", seed 0x9747b28c', utf8("aaa"), 0x9747b28c, 0x283e0130],
  ['"ππππππππ" (UTF-8), seed 0x9747b28c', utf8("ππππππππ"), 0x9747b28c, 0xd58063c1],
  ['256 x "a", seed 0x9747b28c', utf8("a".repeat(256)), 0x9747b28c, 0x37405bdc],
];

test("murmur3_32 matches the published MurmurHash3 x86_32 test vectors", () => {
  for (const [name, input, seed, expected] of MURMUR_VECTORS) {
    assert.equal(murmur3_32(input, seed), expected, name);
  }
});

test("murmur3_32 defaults to seed 0 and rejects seeds outside uint32", () => {
  assert.equal(murmur3_32(utf8("hello")), 0x248bfa47);
  assert.throws(() => murmur3_32(utf8(""), -1), RangeError);
  assert.throws(() => murmur3_32(utf8(""), 2 ** 32), RangeError);
  assert.throws(() => murmur3_32(utf8(""), 1.5), RangeError);
});

test("encodeKeyCanonical writes the documented byte format", () => {
  assert.equal(hex(encodeKeyCanonical("é")), "01" + "00000002" + "c3a9");
  assert.equal(hex(encodeKeyCanonical(1)), "02" + "3ff0000000000000");
  assert.equal(hex(encodeKeyCanonical(-0)), "02" + "0000000000000000");
  assert.equal(hex(encodeKeyCanonical(0n)), "03" + "00" + "00000000");
  assert.equal(hex(encodeKeyCanonical(-258n)), "03" + "01" + "00000002" + "0102");
  assert.equal(hex(encodeKeyCanonical(["a", 2])), "04" + "00000002" + "01000000" + "0161" + "024000000000000000");
  assert.equal(hex(encodeKeyCanonical("\ud800")), "01" + "00000003" + "efbfbd");
});

// pinned: part of the savepoint format; a change here breaks every savepoint.
// [key, hashKey(key), key group at maxParallelism 128, key group at maxParallelism 32768]
const PINNED: readonly [Key, number, number, number][] = [
  ["", 0x1c6d9713, 19, 5907],
  ["a", 0x98ac56d2, 82, 22226],
  ["hello", 0x3998940b, 11, 5131],
  ["Grüße, 世界", 0xef538b13, 19, 2835],
  ["🦀", 0x1c79a663, 99, 9827],
  [0, 0xcec43499, 25, 13465],
  [-0, 0xcec43499, 25, 13465],
  [1.5, 0x4f7d2bb9, 57, 11193],
  [-7, 0xbe1234ef, 111, 13551],
  [2 ** 53, 0x3a5f7aed, 109, 31469],
  [0n, 0x0699d710, 16, 22288],
  [42n, 0x6224d343, 67, 21315],
  [-12345678901234567890n, 0x9e977482, 2, 29826],
  [["user", 42], 0xc673a36c, 108, 9068],
  [[["a", 1n], -0.5], 0xecfbab99, 25, 11161],
];

test("pinned key hashes and key groups never change", () => {
  for (const [key, hash, kg128, kg32768] of PINNED) {
    const name = typeof key === "object" ? JSON.stringify(key, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)) : String(key);
    assert.equal(hashKey(key), hash, `hashKey(${name})`);
    assert.equal(murmur3_32(encodeKeyCanonical(key)), hash, `murmur3_32(encodeKeyCanonical(${name}))`);
    assert.equal(assignToKeyGroup(key, 128), kg128, `key group of ${name} at 128`);
    assert.equal(assignToKeyGroup(key, 32768), kg32768, `key group of ${name} at 32768`);
  }
});

test("0 and -0 hash alike; 1, '1' and 1n differ; ['a','b'] differs from ['ab'] and 'ab'", () => {
  assert.equal(hashKey(-0), hashKey(0));
  assert.equal(hashKey([-0, "x"]), hashKey([0, "x"]));
  const ones = new Set([hashKey(1), hashKey("1"), hashKey(1n), hashKey([1])]);
  assert.equal(ones.size, 4);
  assert.notEqual(hashKey(["a", "b"]), hashKey(["ab"]));
  assert.notEqual(hashKey(["ab"]), hashKey("ab"));
  assert.notEqual(hashKey([["a"], "b"]), hashKey(["a", ["b"]]));
  assert.notEqual(hex(encodeKeyCanonical(["a", "b"])), hex(encodeKeyCanonical(["ab"])));
});

test("invalid keys are rejected with RangeError by both encoders", () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, [], ["a", []], [Number.NaN]] as Key[]) {
    assert.throws(() => hashKey(bad), RangeError);
    assert.throws(() => encodeKeyCanonical(bad), RangeError);
  }
  assert.throws(() => hashKey({} as unknown as Key), RangeError);
  assert.throws(() => hashKey(undefined as unknown as Key), RangeError);
});

// Strings made of code units that exercise every UTF-8 branch, including lone surrogates.
const codeUnit = fc.oneof(
  fc.integer({ min: 0, max: 0x7f }),
  fc.integer({ min: 0x80, max: 0x7ff }),
  fc.integer({ min: 0x800, max: 0xffff }),
  fc.integer({ min: 0xd800, max: 0xdfff }),
);
const anyString = fc.oneof(
  fc.string({ unit: "grapheme" }),
  fc.string({ unit: "binary" }),
  fc.array(codeUnit, { maxLength: 40 }).map((units) => String.fromCharCode(...units)),
);
const scalarKey = fc.oneof(
  anyString,
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.bigInt(),
  fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }),
);
const { key: anyKey } = fc.letrec<{ key: Key }>((tie) => ({
  key: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalarKey,
    fc.array(tie("key"), { minLength: 1, maxLength: 4 }),
  ),
}));

test("hashKey equals murmur3_32 of encodeKeyCanonical for random keys (property)", () => {
  fc.assert(
    fc.property(anyKey, (key) => {
      assert.equal(hashKey(key), murmur3_32(encodeKeyCanonical(key), 0));
    }),
    { numRuns: 2000 },
  );
});

test("hashKey agrees with the reference encoder after the scratch buffer grows", () => {
  const long = "x🦀\udc00é".repeat(500);
  assert.equal(hashKey(long), murmur3_32(encodeKeyCanonical(long)));
  assert.equal(hashKey([long, 5n ** 2000n, long]), murmur3_32(encodeKeyCanonical([long, 5n ** 2000n, long])));
  assert.equal(hashKey("short"), murmur3_32(encodeKeyCanonical("short")));
});

test("computeKeyGroupForKeyHash is hash mod maxParallelism and checks its inputs", () => {
  assert.equal(computeKeyGroupForKeyHash(0xffffffff, 128), 0xffffffff % 128);
  assert.equal(computeKeyGroupForKeyHash(1000, 1), 0);
  assert.throws(() => computeKeyGroupForKeyHash(-1, 128), RangeError);
  assert.throws(() => computeKeyGroupForKeyHash(2 ** 32, 128), RangeError);
  assert.throws(() => computeKeyGroupForKeyHash(5, 0), RangeError);
  assert.throws(() => assignToKeyGroup("a", MAX_MAX_PARALLELISM + 1), RangeError);
});

const parallelismPair = fc
  .integer({ min: 1, max: MAX_MAX_PARALLELISM })
  .chain((maxP) => fc.tuple(fc.constant(maxP), fc.integer({ min: 1, max: maxP })));

test("subtask ranges partition [0, maxP) contiguously and agree with computeOperatorIndexForKeyGroup (property)", () => {
  fc.assert(
    fc.property(parallelismPair, ([maxP, p]) => {
      let next = 0;
      for (let i = 0; i < p; i++) {
        const range = keyGroupRangeForOperator(maxP, p, i);
        assert.equal(range.start, next, `range of subtask ${i} starts where the previous ended`);
        assert.ok(keyGroupRangeSize(range) >= 1, "no subtask gets an empty range when p <= maxP");
        assert.equal(computeOperatorIndexForKeyGroup(maxP, p, range.start), i);
        assert.equal(computeOperatorIndexForKeyGroup(maxP, p, range.end), i);
        next = range.end + 1;
      }
      assert.equal(next, maxP, "ranges cover every key group");
    }),
    { numRuns: 100 },
  );
});

test("key group kg is in subtask i's range iff computeOperatorIndexForKeyGroup(kg) == i (property)", () => {
  const input = parallelismPair.chain(([maxP, p]) =>
    fc.tuple(fc.constant(maxP), fc.constant(p), fc.integer({ min: 0, max: maxP - 1 }), fc.integer({ min: 0, max: p - 1 })),
  );
  fc.assert(
    fc.property(input, ([maxP, p, kg, i]) => {
      const inRange = keyGroupRangeContains(keyGroupRangeForOperator(maxP, p, i), kg);
      assert.equal(computeOperatorIndexForKeyGroup(maxP, p, kg) === i, inRange);
      const owner = computeOperatorIndexForKeyGroup(maxP, p, kg);
      assert.ok(keyGroupRangeContains(keyGroupRangeForOperator(maxP, p, owner), kg));
    }),
    { numRuns: 2000 },
  );
});

test("keyGroupRangeForOperator matches Flink's layout on small examples", () => {
  assert.deepEqual(keyGroupRangeForOperator(128, 3, 0), { start: 0, end: 42 });
  assert.deepEqual(keyGroupRangeForOperator(128, 3, 1), { start: 43, end: 85 });
  assert.deepEqual(keyGroupRangeForOperator(128, 3, 2), { start: 86, end: 127 });
  assert.deepEqual(keyGroupRangeForOperator(10, 10, 9), { start: 9, end: 9 });
  assert.equal(keyGroupRangeSize({ start: 5, end: 4 }), 0);
  assert.equal(keyGroupRangeContains({ start: 5, end: 4 }, 5), false);
});

test("defaultMaxParallelism rounds p * 1.5 up to a power of two within [128, 32768]", () => {
  assert.equal(defaultMaxParallelism(1), 128);
  assert.equal(defaultMaxParallelism(85), 128); // 85 + 42 = 127
  assert.equal(defaultMaxParallelism(86), 256); // 86 + 43 = 129
  assert.equal(defaultMaxParallelism(1000), 2048);
  assert.equal(defaultMaxParallelism(21845), 32768);
  assert.equal(defaultMaxParallelism(32768), 32768);
  assert.throws(() => defaultMaxParallelism(0), RangeError);
  assert.throws(() => defaultMaxParallelism(32769), RangeError);
  assert.throws(() => defaultMaxParallelism(2.5), RangeError);
});

test("checkParallelism rejects invalid combinations with a RangeError naming the problem", () => {
  checkParallelism(1, 1);
  checkParallelism(4, 128);
  checkParallelism(32768, 32768);
  assert.throws(() => checkParallelism(0, 128), /parallelism must be an integer ≥ 1/);
  assert.throws(() => checkParallelism(1.5, 128), RangeError);
  assert.throws(() => checkParallelism(4, 0), /maxParallelism must be an integer in \[1, 32768\]/);
  assert.throws(() => checkParallelism(4, 32769), RangeError);
  assert.throws(() => checkParallelism(200, 128), /exceeds maxParallelism/);
  assert.throws(() => keyGroupRangeForOperator(128, 4, 4), RangeError);
  assert.throws(() => computeOperatorIndexForKeyGroup(128, 4, 128), RangeError);
});

test("the number fast path of hashKey equals murmur3 over the canonical encoding", () => {
  fc.assert(
    fc.property(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constantFrom(0, -0, 1, -1, 2 ** 53, Number.MIN_VALUE)), (n) => {
      assert.equal(hashKey(n), murmur3_32(encodeKeyCanonical(n)));
      assert.equal(hashKey(n), hashKeyGeneral(n));
    }),
    { numRuns: 2000 },
  );
});

test("KeyGroupAssigner agrees with assignToKeyGroup, cached or not, slots shared or not (property)", () => {
  const key: fc.Arbitrary<Key> = fc.oneof(
    fc.integer({ min: -5000, max: 5000 }),
    // Keys 4096 apart share a cache slot and must evict each other correctly.
    fc.integer({ min: 0, max: 8 }).map((i) => 7 + 4096 * i),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(0, -0, 2 ** 53, -(2 ** 31), 2 ** 32 + 5, Number.MAX_VALUE),
    fc.string(),
    fc.tuple(fc.string(), fc.integer()),
  );
  fc.assert(
    fc.property(fc.constantFrom(1, 7, 128, 1000, 32768), fc.array(key, { maxLength: 200 }), (maxParallelism, keys) => {
      const assigner = new KeyGroupAssigner(maxParallelism);
      // Every key twice, so the second look-up of a number key can hit the cache.
      for (const k of [...keys, ...keys]) assert.equal(assigner.keyGroupOf(k), assignToKeyGroup(k, maxParallelism));
    }),
    { numRuns: 300 },
  );
});

test("KeyGroupAssigner pins the fixture key groups and rejects invalid input like assignToKeyGroup", () => {
  const a128 = new KeyGroupAssigner(128);
  const a32768 = new KeyGroupAssigner(32768);
  for (let round = 0; round < 2; round++) {
    for (const [key, , kg128, kg32768] of PINNED) {
      assert.equal(a128.keyGroupOf(key), kg128);
      assert.equal(a32768.keyGroupOf(key), kg32768);
    }
  }
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) assert.throws(() => a128.keyGroupOf(bad), RangeError);
  assert.throws(() => new KeyGroupAssigner(0), RangeError);
  assert.throws(() => new KeyGroupAssigner(MAX_MAX_PARALLELISM + 1), RangeError);
});
