import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ByteReader, ByteWriter } from "./bytes.ts";
import { CodecError, recordCodec, type BatchCodec } from "./codec.ts";
import { defaultCodec } from "./default-codec.ts";
import { FrozenMap } from "./frozen-map.ts";
import { decodeValue, encodeValue, valueCodec } from "./value-codec.ts";

// ---------------------------------------------------------------------------------------------
// Oracle: a description of a value that captures everything the codecs promise to preserve
// (types, −0 and NaN, key order, null prototypes, Map/Set order, invalid Dates, typed array
// kinds), so two values round-trip exactly iff their descriptions are deep-equal. Holes read as
// undefined, which is what the codecs promise for them.

function describeValue(v: unknown): unknown {
  switch (typeof v) {
    case "number":
      return ["number", Object.is(v, -0) ? "-0" : String(v)];
    case "bigint":
      return ["bigint", v.toString()];
    case "string":
      return ["string", v];
    case "object": {
      if (v === null) return ["null"];
      if (Array.isArray(v)) return ["array", Array.from({ length: v.length }, (_, i) => describeValue(v[i]))];
      if (v instanceof Map) return ["map", [...v].map(([k, x]) => [describeValue(k), describeValue(x)])];
      if (v instanceof Set) return ["set", [...v].map(describeValue)];
      if (v instanceof Date) return ["date", String(v.getTime())];
      if (ArrayBuffer.isView(v)) return ["typed", v.constructor.name, [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)]];
      const fields: unknown[] = [];
      for (const k in v) fields.push([k, describeValue((v as Record<string, unknown>)[k])]);
      return [Object.getPrototypeOf(v) === null ? "null-proto object" : "object", fields];
    }
    default:
      return [typeof v, String(v)];
  }
}

function assertSameValues(actual: readonly unknown[], expected: readonly unknown[]): void {
  assert.deepStrictEqual(actual.map(describeValue), expected.map(describeValue));
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

const key = fc.oneof(
  fc.string({ unit: "binary", maxLength: 6 }),
  fc.constantFrom("a", "b", "id", "0", "1", "__proto__", "constructor", '"];process.exit()//', "x\ny"),
);

const leaf = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.double(),
  fc.integer(),
  fc.constantFrom(-0, NaN, Infinity, -Infinity, 2 ** 31, -(2 ** 31), Number.MAX_SAFE_INTEGER, 5e-324),
  fc.string({ unit: "binary" }),
  fc.bigInt({ min: -(1n << 200n), max: 1n << 200n }),
  fc.date({ noInvalidDate: false }),
  fc.uint8Array({ maxLength: 8 }),
  fc.uint8Array({ maxLength: 8 }).map((bytes) => Buffer.from(bytes)), // Node's Buffer: decoded as a Buffer
  fc.float64Array({ maxLength: 3 }),
  fc.int16Array({ maxLength: 3 }),
  fc.bigInt64Array({ maxLength: 2 }),
);

const { value: anyValue } = fc.letrec<{ value: unknown; array: unknown; object: unknown; map: unknown; set: unknown }>((tie) => ({
  value: fc.oneof({ depthSize: "small", maxDepth: 4 }, leaf, tie("array"), tie("object"), tie("map"), tie("set")),
  array: fc.array(tie("value"), { maxLength: 5 }),
  // May produce null-prototype objects.
  object: fc.dictionary(key, tie("value"), { maxKeys: 5 }),
  map: fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 4 }).map((entries) => new Map(entries)),
  set: fc.array(tie("value"), { maxLength: 4 }).map((values) => new Set(values)),
}));

/** Records of a few fixed shapes with varied field types, so shapes and column kinds change mid-batch. */
const shapedRecord = fc
  .tuple(
    fc.constantFrom(["key", "value"], ["auction", "bidder", "price", "channel"], ["a"], ["value", "key"], ["key", "value", "extra"]),
    fc.constantFrom("number", "string", "boolean", "nested", "any"),
  )
  .chain(([keys, kind]) => {
    const field =
      kind === "number"
        ? fc.oneof(fc.double(), fc.integer())
        : kind === "string"
          ? fc.string({ unit: "binary", maxLength: 10 })
          : kind === "boolean"
            ? fc.boolean()
            : kind === "nested"
              ? fc.record({ x: fc.integer(), y: fc.oneof(fc.string(), fc.integer()) })
              : anyValue;
    return fc.tuple(...keys.map(() => field)).map((values) => Object.fromEntries(keys.map((k, i) => [k, values[i]])));
  });

const batchOf = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { maxLength: 40 });
const mixedBatch = batchOf(fc.oneof(shapedRecord, shapedRecord, anyValue, fc.double(), fc.string({ unit: "binary" })));
const jsonBatch = batchOf(fc.jsonValue());

// ---------------------------------------------------------------------------------------------
// Helpers

/** Encodes after a frame header of `prefix` bytes, decodes, and checks every byte was consumed. */
function roundTrip(codec: BatchCodec, batch: readonly unknown[], prefix = 3): unknown[] {
  const w = new ByteWriter(32);
  for (let i = 0; i < prefix; i++) w.u8(0xaa);
  codec.encode(batch, w);
  const r = new ByteReader(w.finish());
  r.skip(prefix);
  const decoded = codec.decode(r, batch.length);
  assert.equal(r.remaining, 0, "decode consumes exactly what encode wrote");
  return decoded;
}

function encoded(codec: BatchCodec, batch: readonly unknown[]): Uint8Array {
  const w = new ByteWriter();
  codec.encode(batch, w);
  return new Uint8Array(w.finish());
}

function encodeError(codec: BatchCodec, batch: readonly unknown[]): CodecError {
  try {
    codec.encode(batch, new ByteWriter());
  } catch (e) {
    assert.ok(e instanceof CodecError, `expected a CodecError, got ${String(e)}`);
    assert.equal(e.code, "RECORD_NOT_ENCODABLE");
    assert.equal(e.domain, "user");
    return e;
  }
  assert.fail("encode did not throw");
}

/** Decodes, requiring either success or a CodecError "CORRUPT_FRAME". */
function decodeOrCorrupt(codec: BatchCodec, bytes: Uint8Array, count: number): void {
  try {
    codec.decode(new ByteReader(bytes.slice().buffer), count);
  } catch (e) {
    assert.ok(e instanceof CodecError, `expected a CodecError, got ${String(e)}`);
    assert.equal(e.code, "CORRUPT_FRAME");
  }
}

/** A per-record codec built on the value encoding, so `recordCodec` can run the same suite. */
function valueRecordCodec(): BatchCodec {
  const w = new ByteWriter();
  return recordCodec<unknown>({
    id: "test.value-record/1",
    encode(value) {
      encodeValue(value, w);
      return new Uint8Array(w.finish());
    },
    decode(bytes) {
      return decodeValue(new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    },
  });
}

// ---------------------------------------------------------------------------------------------
// The contract every codec meets

const CODECS: [string, () => BatchCodec][] = [
  ["defaultCodec", defaultCodec],
  ["valueCodec", valueCodec],
  ["recordCodec", valueRecordCodec],
];

for (const [name, makeCodec] of CODECS) {
  describe(`${name} contract`, () => {
    test("round-trips batches of JSON values exactly", () => {
      const codec = makeCodec();
      fc.assert(fc.property(jsonBatch, fc.nat(9), (batch, prefix) => assertSameValues(roundTrip(codec, batch, prefix), batch)));
    });

    test("round-trips mixed batches: bigint, Date, typed arrays, Map, Set, undefined fields, −0, NaN, lone surrogates, changing shapes", () => {
      const codec = makeCodec();
      fc.assert(
        fc.property(mixedBatch, fc.nat(9), (batch, prefix) => assertSameValues(roundTrip(codec, batch, prefix), batch)),
        { numRuns: 300 },
      );
    });

    test("decodes each batch on its own, with a fresh codec instance", () => {
      fc.assert(
        fc.property(fc.array(mixedBatch, { maxLength: 4 }), (batches) => {
          const encoder = makeCodec();
          const frames = batches.map((batch) => encoded(encoder, batch));
          // Decode in reverse order with another instance: no state may carry over.
          const decoder = makeCodec();
          for (let i = frames.length - 1; i >= 0; i--) {
            const batch = batches[i] as unknown[];
            assertSameValues(decoder.decode(new ByteReader((frames[i] as Uint8Array).slice().buffer), batch.length), batch);
          }
        }),
        { numRuns: 50 },
      );
    });

    test("preserves the edge values", () => {
      const codec = makeCodec();
      const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
      const batch = [
        -0,
        NaN,
        { a: undefined, b: -0, c: NaN },
        new Date(NaN),
        new Date(8.64e15),
        Object.assign(Object.create(null) as object, { z: 1, a: 2 }),
        JSON.parse('{"__proto__": {"x": 1}, "a": 2}') as unknown,
        { 2: "two", b: "b", 1: "one" },
        sparse,
        -(2n ** 300n),
        0n,
        "\uD800",
        "\uFEFF",
        new Map<unknown, unknown>([[{ k: 1 }, new Set([1, "1", 1n])]]),
      ];
      const decoded = roundTrip(codec, batch);
      assertSameValues(decoded, batch);
      assert.deepEqual(decoded[8], [1, undefined, 3]);
      const protoKey = decoded[6] as Record<string, unknown>;
      assert.equal(Object.getPrototypeOf(protoKey), Object.prototype, "an own __proto__ key does not set the prototype");
      assert.deepEqual(Object.getOwnPropertyDescriptor(protoKey, "__proto__")?.value, { x: 1 });
    });

    test("refuses a corrupt or truncated buffer with CORRUPT_FRAME, never hanging or allocating wildly", () => {
      const codec = makeCodec();
      fc.assert(
        fc.property(mixedBatch, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), (batch, flips) => {
          const bytes = encoded(codec, batch);
          // Every strict prefix is truncated.
          for (let end = 0; end < bytes.length; end += Math.max(1, bytes.length >> 4)) {
            assert.throws(
              () => codec.decode(new ByteReader(bytes.slice(0, end).buffer), batch.length),
              (e: unknown) => e instanceof CodecError && e.code === "CORRUPT_FRAME",
            );
          }
          if (bytes.length === 0) return;
          const corrupt = bytes.slice();
          for (const [at, value] of flips) corrupt[at % corrupt.length] = value;
          decodeOrCorrupt(codec, corrupt, batch.length);
        }),
        { numRuns: 200 },
      );
    });

    test("refuses random bytes and absurd record counts with CORRUPT_FRAME", () => {
      const codec = makeCodec();
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 64 }), fc.oneof(fc.nat(100), fc.constant(2 ** 31)), (bytes, count) =>
          decodeOrCorrupt(codec, bytes, count),
        ),
        { numRuns: 2000 },
      );
      const start = performance.now();
      assert.throws(() => codec.decode(new ByteReader(new Uint8Array([1, 0, 0]).buffer), 1e9), CodecError);
      assert.ok(performance.now() - start < 100);
    });

    test("names the path of a function, symbol, cyclic reference or class instance", () => {
      const codec = makeCodec();
      class Foo {}
      const cyclic: Record<string, unknown> = { a: { b: 1 } };
      (cyclic["a"] as Record<string, unknown>)["self"] = cyclic;
      const fn = () => 1;
      const cases: [unknown, string, RegExp][] = [
        [{ payload: { items: [1, 2, 3, { fn }] } }, "payload.items[3].fn", /is a function/],
        [Symbol("s"), "$", /the record is a symbol/],
        [{ s: Symbol("s") }, "s", /is a symbol/],
        [cyclic, "a.self", /cyclic reference/],
        [{ x: new Foo() }, "x", /is an instance of class Foo; give the stream a codec \(DataStream.setCodec\) or emit plain objects/],
        [{ tags: new Map<unknown, unknown>([[1, 1], [2, 2], [3, fn]]) }, "tags<Map>[2].value", /is a function/],
        [{ tags: new Set([1, fn]) }, "tags<Set>[1]", /is a function/],
        [{ "odd key": new WeakMap() }, '["odd key"]', /class WeakMap/],
        [[Promise.resolve()], "[0]", /class Promise/],
        [{ re: /x/ }, "re", /class RegExp/],
      ];
      for (const [bad, path, message] of cases) {
        const error = encodeError(codec, [{ key: 1, value: 2 }, bad, 3]);
        assert.equal(error.path, path);
        assert.equal(error.recordIndex, 1);
        assert.match(error.message, message);
      }
    });

    test("reports the first bad record of the batch", () => {
      const codec = makeCodec();
      const batch = Array.from({ length: 50 }, (_, i) => ({ key: i, value: i === 17 || i === 30 ? () => i : i }));
      const error = encodeError(codec, batch);
      assert.equal(error.recordIndex, 17);
      assert.equal(error.path, "value");
    });
  });
}

// ---------------------------------------------------------------------------------------------
// defaultCodec specifics

describe("defaultCodec", () => {
  test("field names cannot inject code into the generated decoder", () => {
    const names = ['"];process.exit()//', "'];globalThis.__pwned = 1;//", "a\nb", "\u2028", "`${globalThis.__pwned = 1}`", "}", "\\", "\uD800"];
    const batch = Array.from({ length: 8 }, (_, i) => Object.fromEntries(names.map((n, f) => [n, f % 2 === 0 ? i : `v${i}`])));
    const decoded = roundTrip(defaultCodec(), batch);
    assertSameValues(decoded, batch);
    assert.equal((globalThis as Record<string, unknown>)["__pwned"], undefined);
  });

  test("a corrupt frame cannot declare a shape that sets prototypes or duplicates fields", () => {
    for (const names of [["__proto__"], ["a", "a"]]) {
      const w = new ByteWriter();
      w.varuint(1); // one group
      w.u8(0); // shape
      w.varuint(names.length);
      for (const n of names) w.string(n);
      for (const _ of names) {
        w.u8(3); // value column
        w.u8(0x01); // null
      }
      assert.throws(
        () => defaultCodec().decode(new ByteReader(w.finish()), 1),
        (e: unknown) => e instanceof CodecError && e.code === "CORRUPT_FRAME",
      );
    }
  });

  test("preserves record order across interleaved shapes and kinds", () => {
    const batch: unknown[] = [];
    for (let i = 0; i < 600; i++) {
      const k = i % 5;
      batch.push(k === 0 ? { key: i, value: i / 2 } : k === 1 ? { b: `s${i}`, a: i % 3 === 0 } : k === 2 ? i : k === 3 ? `str${i}` : [i]);
    }
    assertSameValues(roundTrip(defaultCodec(), batch), batch);
  });

  test("keeps working past the shape cache and the group limit", () => {
    const codec = defaultCodec();
    for (let round = 0; round < 3; round++) {
      const batch = Array.from({ length: 700 }, (_, i) => ({ [`f${round}_${i}`]: i, n: { [`g${i}`]: true } }));
      assertSameValues(roundTrip(codec, batch), batch);
    }
  });

  test("a shape's generated extractor, which decides the column kinds as it reads, writes the bytes of the general path", () => {
    // A codec whose extractor cache is full encodes new shapes on the general path (one pass per
    // column to decide its kind); a fresh codec compiles an extractor for them.
    const general = defaultCodec();
    for (let i = 0; i < 300; i++) general.encode([{ [`filler${i}`]: i }], new ByteWriter());
    // Columns that stay one kind, and columns that mix kinds, −0, NaN and non-int32 numbers.
    const column = fc.oneof(
      fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { minLength: 1, maxLength: 40 }),
      fc.array(fc.oneof(fc.integer(), fc.constantFrom(-0, NaN, 0.5, 2 ** 31, -Infinity)), { minLength: 1, maxLength: 40 }),
      fc.array(fc.string({ maxLength: 4 }), { minLength: 1, maxLength: 40 }),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
      fc.array(fc.record({ a: fc.integer(), b: fc.string({ maxLength: 3 }) }), { minLength: 1, maxLength: 40 }),
      // Two or three kinds only, whichever comes first.
      fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer()), { minLength: 1, maxLength: 40 }),
      fc.array(fc.oneof(fc.boolean(), fc.integer({ min: -5, max: 5 }), fc.constant(0.5)), { minLength: 1, maxLength: 40 }),
      fc.array(fc.oneof(fc.boolean(), fc.string({ maxLength: 3 })), { minLength: 1, maxLength: 40 }),
      fc.array(leaf, { minLength: 1, maxLength: 40 }),
    );
    fc.assert(
      fc.property(fc.uniqueArray(fc.constantFrom("id", "price", "name", "flag", "at", "meta", "x"), { minLength: 1, maxLength: 5 }), fc.array(column, { minLength: 5, maxLength: 5 }), (fields, columns) => {
        const m = Math.min(...columns.slice(0, fields.length).map((c) => c.length));
        const batch = Array.from({ length: m }, (_, i) => Object.fromEntries(fields.map((f, j) => [f, columns[j]![i]])));
        // A fresh codec per batch: its extractor for the shape is compiled, never the general path.
        assert.deepStrictEqual(encoded(defaultCodec(), batch), encoded(general, batch));
        assertSameValues(roundTrip(defaultCodec(), batch), batch);
      }),
      { numRuns: 300 },
    );
  });

  test("numeric records are encoded column-wise: about 8 bytes per number", () => {
    const batch = Array.from({ length: 1024 }, (_, i) => ({ key: i, value: i * 0.5 }));
    const bytes = encoded(defaultCodec(), batch);
    assert.ok(bytes.length < 1024 * 16 + 64, `${bytes.length} bytes`);
  });

  test("the shape remembered from the last batch never hides a change: extra keys, another order, a last record of another shape", () => {
    const codec = defaultCodec();
    const a = (i: number): unknown => ({ key: i, value: i * 2 });
    const batches: unknown[][] = [
      Array.from({ length: 50 }, (_, i) => a(i)),
      [...Array.from({ length: 49 }, (_, i) => a(i)), { key: 1, value: 2, extra: 3 }],
      [{ value: 1, key: 2 }, ...Array.from({ length: 49 }, (_, i) => a(i))],
      [...Array.from({ length: 49 }, (_, i) => a(i)), { value: 1, key: 2 }],
      Array.from({ length: 50 }, (_, i) => ({ other: `o${i}` })),
      [...Array.from({ length: 49 }, (_, i) => a(i)), Object.assign(Object.create(null) as object, { key: 1, value: 2 })],
      Array.from({ length: 50 }, (_, i) => a(i)),
      // The plain-object check reads `constructor` (see isPlainObject): an own field of that name
      // is data like any other, numeric or not.
      Array.from({ length: 50 }, (_, i) => ({ constructor: i, value: i * 2 })),
      Array.from({ length: 50 }, (_, i) => ({ constructor: `c${i}`, value: i * 2 })),
      // A nested object of the column's shape but with another prototype is not taken for it.
      [...Array.from({ length: 49 }, (_, i) => ({ inner: { x: i } })), { inner: Object.assign(Object.create(null) as object, { x: 1 }) }],
    ];
    for (const batch of batches) {
      const decoded = roundTrip(codec, batch) as object[];
      assertSameValues(decoded, batch);
      // Same bytes as a codec that remembers nothing.
      assert.deepEqual(encoded(codec, batch), encoded(defaultCodec(), batch));
    }
  });

  test("numeric shapes: int32 columns stay 4 bytes a value, −0, NaN, ±Infinity, 2^31 and fractions make a column f64, a non-number anywhere falls back", () => {
    const codec = defaultCodec();
    const ints = Array.from({ length: 256 }, (_, i) => ({ key: i - 128, value: 1 }));
    assertSameValues(roundTrip(codec, ints), ints);
    assert.ok(encoded(codec, ints).length < 256 * 8 + 64, "two int32 columns");
    for (const odd of [-0, NaN, Infinity, -Infinity, 2 ** 31, -(2 ** 31) - 1, 0.5]) {
      for (const at of [0, 100, 255]) {
        const batch = ints.map((r, i) => (i === at ? { key: r.key, value: odd } : r));
        const decoded = roundTrip(codec, batch) as { value: number }[];
        assertSameValues(decoded, batch);
        assert.ok(Object.is(decoded[at]!.value, odd), `${odd} at ${at}`);
        const size = encoded(codec, batch).length;
        assert.ok(size > 256 * 12 && size < 256 * 12 + 64, `${odd} at ${at}: one int32 and one f64 column, ${size} bytes`);
      }
    }
    for (const odd of ["1", null, undefined, 1n, { n: 1 }]) {
      const batch = ints.map((r, i) => (i === 200 ? { key: r.key, value: odd } : r));
      assertSameValues(roundTrip(codec, batch), batch);
    }
    assertSameValues(roundTrip(codec, ints), ints);
  });

  test("decoded records of one shape share their key order and construction", () => {
    const batch = Array.from({ length: 10 }, (_, i) => ({ z: i, a: `${i}`, m: i % 2 === 0 }));
    const decoded = roundTrip(defaultCodec(), batch) as Record<string, unknown>[];
    for (const record of decoded) assert.deepEqual(Object.keys(record), ["z", "a", "m"]);
    assert.deepStrictEqual(decoded, batch);
  });

  test("deep nesting within the limit round-trips; beyond it, encode refuses with a path", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 900; i++) deep = { d: deep };
    // Walked in a loop: a recursive deep-equal over 900 levels can itself overflow the stack.
    let decoded = (roundTrip(defaultCodec(), [deep]) as unknown[])[0];
    for (let i = 0; i < 900; i++) {
      assert.deepEqual(Object.keys(decoded as object), ["d"], `level ${i}`);
      decoded = (decoded as { d: unknown }).d;
    }
    assert.equal(decoded, 1);
    let tooDeep: unknown = 1;
    for (let i = 0; i < 1200; i++) tooDeep = [tooDeep];
    const error = encodeError(defaultCodec(), [tooDeep]);
    assert.match(error.message, /nests deeper than/);
  });
});

/**
 * A lists (4) or maps (5) group claiming 2^30 elements with no bytes behind them, and one nested
 * 12 deep, are refused as corrupt (`tooMany` names the first error), never allocated.
 */
function assertCorruptNestingRefused(kind: 4 | 5, tooMany: RegExp): void {
  const codec = defaultCodec();
  const w = new ByteWriter();
  w.varuint(1); // one group
  w.u8(kind);
  w.varuint(2 ** 30); // a list or map claiming 2^30 elements
  assert.throws(() => codec.decode(new ByteReader(w.finish()), 1), (e: unknown) => e instanceof CodecError && tooMany.test(e.message));
  const nested = new ByteWriter();
  for (let depth = 0; depth < 12; depth++) {
    nested.varuint(1);
    nested.u8(kind);
    nested.varuint(1);
  }
  nested.varuint(1);
  nested.u8(1);
  nested.f64(1);
  assert.throws(() => codec.decode(new ByteReader(nested.finish()), 1), (e: unknown) => e instanceof CodecError && /nested deeper/.test(e.message));
}

describe("defaultCodec: lists (arrays as values: list state, a value that is an array of records)", () => {
  const bid = (i: number) => ({ auction: i % 7, bidder: i * 31, price: i * 1.5, channel: `ch-${i % 3}`, url: `https://x/${i}`, extra: "é".repeat(i % 4) });

  test("arrays of records are written column-wise once per batch: round-trip exact, and far smaller than value by value", () => {
    const batch = Array.from({ length: 500 }, (_, i) => Array.from({ length: i % 11 }, (_, j) => bid(i * 10 + j)));
    const codec = defaultCodec();
    assert.deepStrictEqual(roundTrip(codec, batch), batch);
    const lists = encoded(codec, batch).byteLength;
    // The same arrays inside a value the codec does not take apart (a Set) go value by value.
    const valueByValue = batch.reduce((n, list) => n + encoded(codec, [new Set([list])]).byteLength, 0);
    assert.ok(lists * 2 < valueByValue, `${lists} bytes as lists, ${valueByValue} value by value`);
  });

  test("empty arrays, holes (undefined, as the value codec reads them), mixed elements, arrays beside records and numbers, nested arrays", () => {
    const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
    const batch: unknown[] = [[], sparse, [1, "a", null, undefined, { x: 1 }, [2, [3, []]]], { a: [1, 2] }, 7, "s", [[[]]], [new Map([[1, 2]])]];
    const decoded = roundTrip(defaultCodec(), batch);
    assert.deepStrictEqual(decoded[1], [1, undefined, 3]);
    assert.ok(1 in (decoded[1] as unknown[]), "a hole comes back as undefined");
    assertSameValues(decoded, batch.map((v) => (v === sparse ? [1, undefined, 3] : v)));
  });

  test("arrays nested deeper than the lists limit go value by value and still round-trip; an array subclass is refused as before", () => {
    let deep: unknown = [1];
    for (let i = 0; i < 20; i++) deep = [deep, i];
    const decoded = roundTrip(defaultCodec(), [deep, [deep]]);
    assert.deepStrictEqual(decoded[0], deep);
    assert.deepStrictEqual(decoded[1], [deep]);
    class Tagged extends Array<number> {}
    assert.match(encodeError(defaultCodec(), [[1], Tagged.from([1, 2])]).message, /instance of class Tagged.*record 1 of the batch/);
  });

  test("a corrupt lists group is refused, never a huge allocation: more elements than bytes, nesting past the limit", () => {
    assertCorruptNestingRefused(4, /list elements|truncated|corrupt/i);
  });
});

describe("defaultCodec: maps and int32 numbers (eddy.default/3)", () => {
  test("maps are written as sizes and two nested batches: round-trip exact (order, key types, nested values), smaller than entry by entry", () => {
    // A map state's cells: q16's bidder → price-band masks, of very different sizes.
    const batch = Array.from({ length: 300 }, (_, i) => new Map(Array.from({ length: (i * 37) % 50 }, (_, j) => [i * 1000 + j * 7, (j % 7) + 1] as [number, number])));
    const codec = defaultCodec();
    const decoded = roundTrip(codec, batch) as Map<number, number>[];
    assert.deepStrictEqual(decoded, batch);
    for (let i = 0; i < batch.length; i++) assert.deepEqual([...decoded[i]!.keys()], [...batch[i]!.keys()], "insertion order kept");
    const columns = encoded(codec, batch).byteLength;
    const entryByEntry = batch.reduce((n, map) => n + encoded(codec, [new Set([map])]).byteLength, 0);
    assert.ok(columns < entryByEntry, `${columns} bytes as maps, ${entryByEntry} entry by entry`);
    // Keys and values of any kind, empty maps, maps beside other groups, maps in lists and lists in maps.
    const mixed: unknown[] = [
      new Map(),
      new Map<unknown, unknown>([["a", { x: 1, y: "z" }], [2, [1, 2]], [-0, -0], [Number.NaN, null], [true, undefined], [10n, new Date(5)]]),
      new Map([[{ k: 1 }, new Map([[1, new Map([[2, 3]])]])]]),
      [new Map([[1, 2]]), new Map()],
      { m: new Map([[1, "one"]]) },
      7,
      "s",
    ];
    const back = roundTrip(defaultCodec(), mixed);
    assert.deepStrictEqual(back, mixed);
    assert.ok(Object.is((back[1] as Map<unknown, unknown>).get(0), -0), "−0 as a value stays −0");
    // Maps of numbers to numbers take a path of their own (int32 or float64 columns, scratch kept
    // between batches); a non-number anywhere, even the last entry, takes the general path.
    const reused = defaultCodec();
    const numeric = [new Map([[1, 2], [3, 4]]), new Map([[1.5, -0], [2 ** 40, Number.NaN]]), new Map(), new Map([[-7, 2 ** 31]])];
    const numericBack = roundTrip(reused, numeric) as Map<number, number>[];
    assert.deepStrictEqual(numericBack, numeric);
    assert.ok(Object.is(numericBack[1]!.get(1.5), -0));
    const lateString = [new Map([[1, 2], [3, 4]]), new Map<number, unknown>([[5, 6], [7, "eight"]])];
    assert.deepStrictEqual(roundTrip(reused, lateString), lateString);
    const smaller = [new Map([[9, 9]])];
    assert.deepStrictEqual(roundTrip(reused, smaller), smaller, "the scratch of a larger batch leaks nothing into a smaller one");
  });

  test("a FrozenMap (a snapshot's frozen map cell) is written byte for byte as the Map it was, and decoded as that Map", () => {
    const maps = [new Map([[1, 2], [3, 4]]), new Map<unknown, unknown>([["k", { v: 1 }], [2, [3]]]), new Map(), new Map([[1.5, -0]])];
    for (const batch of [maps, [maps[0]!], [maps[1]!, 7, "s"]]) {
      const frozen = batch.map((v) => (v instanceof Map ? new FrozenMap(v) : v));
      assert.deepEqual(encoded(defaultCodec(), frozen), encoded(defaultCodec(), batch));
      assert.deepStrictEqual(roundTrip(defaultCodec(), frozen), batch);
    }
    assert.deepStrictEqual(new FrozenMap(maps[1]!).toMap(), maps[1]);
  });

  test("maps nested past the limit go value by value; a Map subclass is refused as before; a map cycle is refused", () => {
    let deep: Map<number, unknown> = new Map([[0, 1]]);
    for (let i = 0; i < 20; i++) deep = new Map([[i, deep]]);
    assert.deepStrictEqual(roundTrip(defaultCodec(), [deep, new Map([[1, deep]])]), [deep, new Map([[1, deep]])]);
    class Tagged extends Map<number, number> {}
    assert.match(encodeError(defaultCodec(), [new Map(), new Tagged([[1, 2]])]).message, /instance of class Tagged.*record 1 of the batch/);
    const cyclic = new Map<number, unknown>();
    cyclic.set(1, cyclic);
    assert.match(encodeError(defaultCodec(), [cyclic]).message, /cyclic/);
  });

  test("a batch of integers is written as int32 (half the bytes) and decoded as small integers; −0, fractions and large numbers keep float64", () => {
    const ints = Array.from({ length: 1000 }, (_, i) => i * 2_000_003 - 1_000_000_000);
    const codec = defaultCodec();
    assert.deepStrictEqual(roundTrip(codec, ints), ints);
    const floats = ints.map((v) => v + 0.5);
    assert.deepStrictEqual(roundTrip(codec, floats), floats);
    assert.ok(encoded(codec, ints).byteLength * 1.9 < encoded(codec, floats).byteLength);
    for (const odd of [[1, -0, 2], [1, 2 ** 31], [1, -(2 ** 31) - 1], [1, Number.NaN], [1, Infinity]]) {
      const back = roundTrip(codec, odd) as number[];
      for (let i = 0; i < odd.length; i++) assert.ok(Object.is(back[i], odd[i]), `${String(odd[i])} in ${String(odd)}`);
      assert.equal(encoded(codec, odd).byteLength, encoded(codec, odd.map((v) => v + 0.5)).byteLength, "float64, not int32");
    }
  });

  test("a corrupt maps group is refused, never a huge allocation: more entries than bytes, nesting past the limit", () => {
    assertCorruptNestingRefused(5, /map entries|truncated|corrupt/i);
  });
});

describe("recordCodec", () => {
  test("wraps a failing user encoder and decoder", () => {
    const codec = recordCodec<number>({
      id: "test.picky/1",
      encode(value) {
        if (value < 0) throw new Error("negative");
        return new Uint8Array([value]);
      },
      decode(bytes) {
        if (bytes[0] === 99) throw new Error("no 99");
        return bytes[0] as number;
      },
    });
    assert.deepEqual(roundTrip(codec, [1, 2, 3]), [1, 2, 3]);
    const error = encodeError(codec, [1, -1]);
    assert.equal(error.recordIndex, 1);
    assert.match(error.message, /negative/);
    assert.throws(
      () => codec.decode(new ByteReader(encoded(codec, [1, 99]).buffer as ArrayBuffer), 2),
      (e: unknown) => e instanceof CodecError && e.code === "CORRUPT_FRAME" && e.recordIndex === 1,
    );
  });
});

for (const [column, tail] of [
  ["an ASCII column (pieces decoded from the bytes)", "y"],
  ["a column with other characters (decoded whole, pieces copied)", "é"],
] as const) {
  test(`a string kept from a decoded batch does not keep the batch's string column alive: ${column}`, async () => {
    const { setFlagsFromString } = await import("node:v8");
    const { runInNewContext } = await import("node:vm");
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const codec = defaultCodec();
    const kept: string[] = [];
    gc();
    const before = process.memoryUsage().heapUsed;
    // 300 batches whose `text` column is ~100 K characters each; one 100-character string of each
    // is kept, as state keeps one value of a key. Kept strings need ~30 KB; the columns ~30 MB.
    for (let b = 0; b < 300; b++) {
      const batch = Array.from({ length: 1_000 }, (_, i) => ({ n: i, text: `${tail.repeat(90)}${String(1e9 + b * 1_000 + i)}` }));
      const decoded = roundTrip(codec, batch) as { n: number; text: string }[];
      kept.push(decoded[b % 1_000]!.text);
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.equal(kept.length, 300);
    assert.equal(kept[7], `${tail.repeat(90)}${String(1e9 + 7 * 1_000 + 7)}`);
    assert.ok(grown < 5e6, `the heap grew by ${(grown / 1e6).toFixed(1)} MB for 300 kept strings`);
  });
}

test("string columns cut into pieces round-trip exactly: short, long and longer-than-a-piece values, surrogates included", () => {
  const text = fc.oneof(
    fc.string({ unit: "binary", maxLength: 12 }),
    fc.string({ unit: "binary", minLength: 13, maxLength: 300 }),
    fc.string({ unit: "grapheme", minLength: 900, maxLength: 2500 }),
  );
  fc.assert(
    fc.property(fc.array(fc.record({ id: fc.integer(), text }), { minLength: 1, maxLength: 200 }), (batch) => {
      assertSameValues(roundTrip(defaultCodec(), batch), batch);
    }),
    { numRuns: 60 },
  );
  // The same for columns of ASCII only, whose pieces are decoded straight from the bytes.
  const ascii = fc.oneof(
    fc.string({ unit: "grapheme-ascii", maxLength: 12 }),
    fc.string({ unit: "grapheme-ascii", minLength: 13, maxLength: 300 }),
    fc.string({ unit: "grapheme-ascii", minLength: 900, maxLength: 2500 }),
  );
  fc.assert(
    fc.property(fc.array(fc.record({ id: fc.integer(), text: ascii }), { minLength: 1, maxLength: 200 }), (batch) => {
      assertSameValues(roundTrip(defaultCodec(), batch), batch);
    }),
    { numRuns: 60 },
  );
});
