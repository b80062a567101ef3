import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ByteReader, ByteWriter, varuintSize } from "./bytes.ts";
import { CodecError } from "./codec.ts";

function isTruncated(e: unknown): boolean {
  return e instanceof CodecError && e.code === "CORRUPT_FRAME" && e.message.includes("truncated");
}

test("primitives round-trip, little-endian, at any starting offset", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 15 }),
      fc.integer({ min: 0, max: 255 }),
      fc.integer({ min: 0, max: 0xffff }),
      fc.nat({ max: 0xffff_ffff }),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.double(),
      fc.nat({ max: 0xffff_ffff }),
      (prefix, a, b, c, d, e, v) => {
        const w = new ByteWriter(64);
        for (let i = 0; i < prefix; i++) w.u8(0xee);
        w.u8(a);
        w.u16(b);
        w.u32(c);
        w.i32(d);
        w.f64(e);
        w.varuint(v);
        const expectedLength = prefix + 1 + 2 + 4 + 4 + 8 + varuintSize(v);
        assert.equal(w.length, expectedLength);
        const buffer = w.finish();
        assert.equal(buffer.byteLength, expectedLength);
        assert.equal(w.length, 0, "finish resets the writer");
        const r = new ByteReader(buffer);
        r.skip(prefix);
        assert.equal(r.u8(), a);
        assert.equal(r.u16(), b);
        assert.equal(r.u32(), c);
        assert.equal(r.i32(), d);
        assert.ok(Object.is(r.f64(), e));
        assert.equal(r.varuint(), v);
        assert.equal(r.remaining, 0);
      },
    ),
  );
});

test("multi-byte values are little-endian on the wire", () => {
  const w = new ByteWriter();
  w.u32(0x01020304);
  w.varuint(300);
  assert.deepEqual([...new Uint8Array(w.finish())], [4, 3, 2, 1, 0xac, 0x02]);
});

test("varuint refuses values outside [0, 2^32 − 1] and over-long encodings", () => {
  const w = new ByteWriter();
  assert.throws(() => w.varuint(-1), RangeError);
  assert.throws(() => w.varuint(2 ** 32), RangeError);
  assert.throws(() => w.varuint(1.5), RangeError);
  const tooLong = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).buffer;
  assert.throws(() => new ByteReader(tooLong).varuint(), CodecError);
  const tooBig = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x7f]).buffer;
  assert.throws(() => new ByteReader(tooBig).varuint(), CodecError);
});

test("strings round-trip exactly, lone surrogates and BOM included", () => {
  const w = new ByteWriter(16);
  fc.assert(
    fc.property(fc.array(fc.string({ unit: "binary" }), { maxLength: 8 }), (strings) => {
      for (const s of strings) w.string(s);
      const r = new ByteReader(w.finish());
      for (const s of strings) assert.equal(r.string(), s);
      assert.equal(r.remaining, 0);
    }),
  );
  for (const s of ["\uFEFFbom", "\uD800", "a\uDC00b", "é".repeat(100), "x".repeat(70_000), "\uD83D\uDE00".repeat(40)]) {
    w.string(s);
    assert.equal(new ByteReader(w.finish()).string(), s);
  }
});

test("a string written as the buffer grows keeps its bytes", () => {
  for (let prefix = 0; prefix < 140; prefix++) {
    for (const s of ["韭", "é".repeat(30), "\uD83D\uDE00x", "\uDFFF".repeat(3)]) {
      const w = new ByteWriter(64);
      for (let i = 0; i < prefix; i++) w.u8(i);
      w.string(s);
      const r = new ByteReader(w.finish());
      r.skip(prefix);
      assert.equal(r.string(), s);
    }
  }
});

test("a string is encoded as UTF-8 when well-formed and as UTF-16 code units otherwise", () => {
  const w = new ByteWriter();
  w.string("é");
  assert.deepEqual([...new Uint8Array(w.finish())], [4, 0xc3, 0xa9]);
  w.string("\uD800");
  assert.deepEqual([...new Uint8Array(w.finish())], [3, 0x00, 0xd8]);
});

test("number arrays round-trip: align pads relative to the writer's start, the reader aligns relative to its start", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 20 }),
      fc.array(fc.double(), { maxLength: 20 }),
      fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 }),
      fc.integer({ min: 0, max: 7 }),
      fc.constantFrom("array", "typed", "longer"),
      (prefix, doubles, ints, shift, source) => {
        // "longer": the first `count` values of a longer array are written, not the whole array
        const from = source === "typed" ? Uint16Array.from(ints) : source === "longer" ? [...ints, 1, 2, 3] : ints;
        const w = new ByteWriter(8);
        for (let i = 0; i < prefix; i++) w.u8(1);
        w.f64Array(doubles, doubles.length);
        w.u8(0x5a);
        w.u16Array(from, ints.length);
        w.i32Array(from, ints.length);
        w.u8(0xa5);
        const bytes = new Uint8Array(w.finish());
        // Place the encoding at an arbitrary offset of a larger buffer: views may be misaligned.
        const host = new Uint8Array(bytes.length + shift + 3);
        host.set(bytes, shift);
        const r = new ByteReader(host.buffer, shift, shift + bytes.length);
        r.skip(prefix);
        assert.deepEqual([...r.f64Array(doubles.length)], doubles);
        assert.equal(r.u8(), 0x5a);
        assert.deepEqual([...r.u16Array(ints.length)], ints);
        assert.deepEqual([...r.i32Array(ints.length)], ints);
        assert.equal(r.u8(), 0xa5);
        assert.equal(r.offset, bytes.length);
      },
    ),
  );
});

test("finish returns a buffer the writer no longer uses", () => {
  const w = new ByteWriter(64);
  w.u32(7);
  const first = w.finish();
  structuredClone(first, { transfer: [first] }); // detaches `first`
  assert.equal(first.byteLength, 0);
  w.u32(9);
  assert.equal(new ByteReader(w.finish()).u32(), 9);
});


test("take hands out views the writer never writes over, each aligned as if written alone", () => {
  // Pieces of random sizes (some larger than the buffer), each a prefix then an f64 array, taken
  // one by one: every view must read back its own piece after all the others were written.
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.array(fc.double(), { maxLength: 40 })), { minLength: 1, maxLength: 30 }),
      fc.integer({ min: 64, max: 256 }),
      (pieces, capacity) => {
        const w = new ByteWriter(capacity);
        const views: Uint8Array[] = [];
        for (const [prefix, values] of pieces) {
          for (let i = 0; i < prefix; i++) w.u8(prefix);
          w.f64Array(values, values.length);
          views.push(w.take());
          assert.equal(w.length, 0);
        }
        pieces.forEach(([prefix, values], i) => {
          const view = views[i]!;
          const r = new ByteReader(view.buffer as ArrayBuffer, view.byteOffset, view.byteOffset + view.byteLength);
          for (let j = 0; j < prefix; j++) assert.equal(r.u8(), prefix);
          assert.deepEqual([...r.f64Array(values.length)], values);
          assert.equal(r.remaining, 0);
        });
      },
    ),
  );
});

test("finish and reset after take leave the taken views alone", () => {
  const w = new ByteWriter(64);
  w.u32(1);
  const view = w.take();
  w.u32(2);
  w.reset();
  w.u32(3);
  assert.equal(new ByteReader(w.finish()).u32(), 3);
  w.u32(4);
  const taken = w.take();
  w.u32(5);
  assert.equal(new ByteReader(w.finish()).u32(), 5);
  w.u32(6);
  assert.deepEqual([...view], [1, 0, 0, 0]);
  assert.deepEqual([...taken], [4, 0, 0, 0]);
});
test("reading past the end throws 'truncated' and never returns garbage", () => {
  const buffer = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]).buffer;
  const reads: ((r: ByteReader) => unknown)[] = [
    (r) => r.u16(),
    (r) => r.u32(),
    (r) => r.i32(),
    (r) => r.f64(),
    (r) => r.f64Array(2),
    (r) => r.u16Array(2),
    (r) => r.bytes(3),
    (r) => r.skip(3),
  ];
  for (const read of reads) {
    const r = new ByteReader(buffer, 0, 9);
    r.skip(8);
    assert.throws(() => read(r), isTruncated);
  }
  const r = new ByteReader(buffer, 2, 4);
  r.u16();
  assert.throws(() => r.u8(), isTruncated, "the end bound is respected, not the buffer's length");
  // A string header announcing more bytes than remain.
  const w = new ByteWriter();
  w.varuint(2 * 1000);
  assert.throws(() => new ByteReader(w.finish()).string(), isTruncated);
  w.varuint(2 ** 32 - 1);
  assert.throws(() => new ByteReader(w.finish()).string(), isTruncated);
});

test("invalid UTF-8 is refused as a corrupt frame", () => {
  const w = new ByteWriter();
  w.varuint(2 * 2);
  w.u8(0xc3);
  w.u8(0x28);
  assert.throws(
    () => new ByteReader(w.finish()).string(),
    (e: unknown) => e instanceof CodecError && e.code === "CORRUPT_FRAME",
  );
});

test("joinedString writes exactly the bytes of string(joined), lone surrogates and long strings included", () => {
  const piece = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.string({ unit: "grapheme", maxLength: 40 }),
    fc.string({ unit: "binary", maxLength: 40 }), // lone surrogates
    fc.constantFrom("\uD83D", "\uDE00", "é", "x".repeat(70)),
  );
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 30 }), fc.nat(30), (strings, cut) => {
      const m = Math.min(cut, strings.length);
      const a = new ByteWriter(16);
      a.joinedString(strings, m);
      const b = new ByteWriter(16);
      b.string(strings.slice(0, m).join(""));
      assert.deepEqual(new Uint8Array(a.finish()), new Uint8Array(b.finish()));
    }),
    { numRuns: 2000 },
  );
});

test("joinedString over columns longer than one joined chunk: same bytes, also where a surrogate pair straddles chunks", () => {
  const piece = fc.oneof(
    fc.string({ minLength: 200, maxLength: 3000 }),
    fc.string({ unit: "binary", minLength: 100, maxLength: 1000 }), // lone surrogates
    fc.constantFrom("a".repeat(16 * 1024 - 1) + "\uD83D", "\uDE00" + "b".repeat(500), "é".repeat(9000)),
  );
  const check = (strings: string[], m: number): void => {
    const a = new ByteWriter(16);
    a.joinedString(strings, m);
    const b = new ByteWriter(16);
    b.string(strings.slice(0, m).join(""));
    assert.deepEqual(new Uint8Array(a.finish()), new Uint8Array(b.finish()));
  };
  // A pair split exactly at the first chunk's end: each chunk alone is not well-formed, the whole is.
  check(["a".repeat(16 * 1024 - 1) + "\uD83D", "\uDE00" + "b".repeat(500)], 2);
  check(["x".repeat(40_000), "\uD83D", "y".repeat(20_000)], 3);
  fc.assert(
    fc.property(fc.array(piece, { minLength: 1, maxLength: 40 }), fc.nat(40), (strings, cut) => check(strings, Math.min(cut, strings.length))),
    { numRuns: 200 },
  );
});
