import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { EddyError } from "../core/errors.ts";
import { copyValue } from "./copy-value.ts";

test("primitives are returned as they are", () => {
  for (const v of [1, "s", 10n, true, null, undefined, Number.NaN]) assert.equal(copyValue(v), v);
  const fn = (): number => 1;
  assert.equal(copyValue(fn), fn);
});

test("plain objects and arrays are copied deeply and share nothing", () => {
  const src = { a: 1, b: { c: [1, { d: "x" }], e: null }, f: [[1], [2]] };
  const copy = copyValue(src);
  assert.deepEqual(copy, src);
  assert.notEqual(copy, src);
  assert.notEqual(copy.b, src.b);
  assert.notEqual(copy.b.c, src.b.c);
  assert.notEqual(copy.b.c[1], src.b.c[1]);
  assert.notEqual(copy.f[0], src.f[0]);
  src.b.c.push(3);
  (src.b.c[1] as { d: string }).d = "y";
  assert.deepEqual(copy.b.c, [1, { d: "x" }]);
});

test("null-prototype objects keep a null prototype", () => {
  const src = Object.assign(Object.create(null) as Record<string, unknown>, { a: { b: 1 } });
  const copy = copyValue(src);
  assert.equal(Object.getPrototypeOf(copy), null);
  assert.deepEqual({ ...copy }, { a: { b: 1 } });
  assert.notEqual(copy["a"], src["a"]);
});

test("Map, Set, Date, typed arrays and Buffers are copied with their type", () => {
  const src = {
    m: new Map<string, { n: number }>([["k", { n: 1 }]]),
    s: new Set([{ n: 2 }]),
    d: new Date(1700000000000),
    u: new Uint8Array([1, 2, 3]),
    b: Buffer.from("abc"),
    r: /x+/g,
  };
  const copy = copyValue(src);
  assert.deepEqual(copy, src);
  assert.ok(copy.m instanceof Map && copy.m !== src.m && copy.m.get("k") !== src.m.get("k"));
  assert.ok(copy.s instanceof Set && [...copy.s][0] !== [...src.s][0]);
  assert.ok(copy.d instanceof Date && copy.d !== src.d);
  assert.ok(copy.u instanceof Uint8Array && copy.u !== src.u);
  assert.ok(Buffer.isBuffer(copy.b) && copy.b !== src.b);
  src.u[0] = 9;
  src.b[0] = 0;
  assert.equal(copy.u[0], 1);
  assert.equal(copy.b.toString(), "abc");
});

test("cyclic and very deep values fall back to structuredClone", () => {
  const cyclic: { self?: unknown; n: number } = { n: 1 };
  cyclic.self = cyclic;
  const copy = copyValue(cyclic);
  assert.notEqual(copy, cyclic);
  assert.equal(copy.self, copy);

  let deep: { next?: unknown } = {};
  const root = deep;
  for (let i = 0; i < 200; i++) deep = deep.next = {};
  const deepCopy = copyValue(root);
  assert.deepEqual(deepCopy, root);
  assert.notEqual(deepCopy.next, root.next);
});

test("instances of user classes are rejected with a clear error", () => {
  class Point {
    constructor(readonly x: number) {}
  }
  assert.throws(
    () => copyValue({ p: new Point(1) }),
    (e: unknown) => e instanceof EddyError && e.code === "VALUE_NOT_COPYABLE" && /Point/.test(e.message),
  );
});

test("measures the cost of copying a small record", (t) => {
  const records = Array.from({ length: 1024 }, (_, i) => ({ key: `k${i}`, count: i, ts: 1700000000000 + i }));
  let sink = 0;
  const rounds = 2_000;
  for (let r = 0; r < 200; r++) for (let i = 0; i < 1024; i++) sink += copyValue(records[i]!).count; // warm up
  const start = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) for (let i = 0; i < 1024; i++) sink += copyValue(records[i]!).count;
  const ns = Number(process.hrtime.bigint() - start) / (rounds * 1024);
  t.diagnostic(`copyValue({key, count, ts}): ${ns.toFixed(1)} ns per copy (sink ${sink % 7})`);
  assert.ok(ns < 2_000);
});

test("an own __proto__ key stays a key and does not change the prototype", () => {
  const src = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
  const copy = copyValue(src);
  assert.equal(Object.getPrototypeOf(copy), Object.prototype);
  assert.deepEqual(Object.keys(copy), ["__proto__", "a"]);
  assert.equal((copy as { polluted?: boolean }).polluted, undefined);
});

test("the plain-object fast path decides by the prototype, never by a `constructor` property", () => {
  // An own `constructor` key on a plain object: still a plain object, copied deeply.
  const own = { constructor: { note: "a key like any other" }, a: { b: 1 } };
  const ownCopy = copyValue(own);
  assert.deepEqual(ownCopy, own);
  assert.notEqual(ownCopy.constructor, own.constructor);
  assert.notEqual(ownCopy.a, own.a);
  // `constructor` says Object but the prototype is not Object.prototype: not a plain object.
  const disguised = Object.create({ constructor: Object }) as object;
  assert.throws(() => copyValue(disguised), (e: unknown) => e instanceof EddyError && e.code === "VALUE_NOT_COPYABLE");
  // Many shapes through the same path (V8 sees them all at one site) stay correct.
  for (let i = 0; i < 20; i++) {
    const src: Record<string, unknown> = { [`k${i}`]: i, nested: { i }, d: 0.5 + i };
    const copy = copyValue(src);
    assert.deepEqual(copy, src);
    assert.notEqual(copy["nested"], src["nested"]);
  }
});

test("objects of any shape are copied deeply, in key order, sharing nothing (also past the shape cache and from one shape to its prefix or extension)", () => {
  /** Every object reachable from `copy` is new, and equal to its counterpart in `src`. */
  const sharesNothing = (copy: unknown, src: unknown): boolean => {
    if (typeof src !== "object" || src === null) return copy === src || (Number.isNaN(copy) && Number.isNaN(src));
    if (copy === src || typeof copy !== "object" || copy === null) return false;
    const keys = Object.keys(src);
    if (JSON.stringify(Object.keys(copy)) !== JSON.stringify(keys)) return false;
    return keys.every((k) => sharesNothing((copy as Record<string, unknown>)[k], (src as Record<string, unknown>)[k]));
  };
  const value = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: "small" }, fc.oneof(fc.integer(), fc.double(), fc.string(), fc.boolean(), fc.constant(null)), tie("object"), tie("array")),
    object: fc.dictionary(fc.oneof(fc.constantFrom("a", "b", "c", "0", "1", "__proto__", "constructor", 'q"uote'), fc.string()), tie("node"), { maxKeys: 6 }),
    array: fc.array(tie("node"), { maxLength: 4 }),
  }));
  fc.assert(
    fc.property(fc.array(value.object, { minLength: 1, maxLength: 8 }), (objects) => {
      for (const src of objects) {
        const copy = copyValue(src);
        assert.ok(sharesNothing(copy, src), `copy of ${JSON.stringify(src)}: ${JSON.stringify(copy)}`);
        assert.equal(Object.getPrototypeOf(copy), Object.getPrototypeOf(src));
      }
    }),
    { numRuns: 1500 },
  );
  // A shape, then its prefix, its extension, and the same keys in another order.
  for (const src of [{ a: 1, b: { c: 2 } }, { a: 1 }, { a: 1, b: 2, c: { d: 3 } }, { b: 2, a: 1 }, { a: 1, b: { c: 2 } }]) {
    assert.ok(sharesNothing(copyValue(src), src));
  }
  // Wider than a generated copier.
  const wide = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`f${i}`, { i }]));
  assert.ok(sharesNothing(copyValue(wide), wide));
});

test("objects with symbol-keyed properties are copied by their string keys (symbols are not data)", () => {
  const s = Symbol("tag");
  for (let round = 0; round < 40; round++) {
    // Rounds past the copier sampling too: the shape is first spread, later copied by a copier.
    for (const src of [{ a: { b: round }, [s]: "x" }, Object.assign(Object.create(null) as Record<string | symbol, unknown>, { a: { b: round }, [s]: "x" })]) {
      const copy = copyValue(src) as Record<string | symbol, unknown>;
      assert.deepEqual(copy["a"], { b: round });
      assert.notEqual(copy["a"], src["a"]);
      assert.equal(Object.getPrototypeOf(copy), Object.getPrototypeOf(src));
    }
  }
});

test("getters are read once and copied as values", () => {
  let reads = 0;
  const src = {
    get n(): number {
      reads++;
      return 7;
    },
    m: 1,
  };
  const copy = copyValue(src);
  assert.equal(reads, 1);
  assert.deepEqual(Object.getOwnPropertyDescriptor(copy, "n"), { value: 7, writable: true, enumerable: true, configurable: true });
});
