import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { stringify } from "csv-stringify/sync";
import { defaultCsvEncoder } from "./csv-encoder.ts";

const text = fc.string({ unit: fc.constantFrom("a", "b", " ", ",", '"', "\n", "\r", "=", "-", "é", "\t", ";") });
const field = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.bigInt(),
  fc.date({ noInvalidDate: true }),
  fc.dictionary(fc.constantFrom("x", "y,z", 'q"'), text),
  fc.array(text, { maxLength: 3 }),
);

test("records as csv-stringify writes them with default options: objects by columns, arrays with and without columns", () => {
  const columns = ["a", "b", { key: "c", header: "C" }];
  // Compiled per columns (as it runs by default), and the general path.
  for (const compile of [true, false]) {
    const byColumns = defaultCsvEncoder(columns, undefined, compile)!;
    const plain = defaultCsvEncoder(undefined, {}, compile)!;
    fc.assert(
      fc.property(fc.record({ a: field, b: field, c: field }, { requiredKeys: [] }), fc.array(field, { maxLength: 5 }), (obj, arr) => {
        assert.equal(byColumns(obj), stringify([obj], { columns }));
        assert.equal(byColumns(arr), stringify([arr], { columns }));
        assert.equal(plain(arr), stringify([arr]));
      }),
      { numRuns: 2000 },
    );
  }
});

test("what it leaves to csv-stringify: options given, path columns, records and fields it does not cover", () => {
  assert.equal(defaultCsvEncoder(["a"], { delimiter: ";" }), undefined);
  assert.equal(defaultCsvEncoder(["a.b"], undefined), undefined);
  assert.equal(defaultCsvEncoder(["a[0]"], undefined), undefined);
  assert.equal(defaultCsvEncoder({ a: "A" }, undefined), undefined);
  const enc = defaultCsvEncoder(["a"], undefined)!;
  assert.equal(enc("text"), undefined);
  assert.equal(enc(null), undefined);
  assert.equal(enc({ a: () => 1 }), undefined);
  assert.equal(enc({ a: Symbol("s") }), undefined);
  assert.equal(defaultCsvEncoder(undefined, undefined)!({ a: 1 }), undefined, "an object record needs columns");
});

test("column names that are not identifiers (quotes, backslashes, line breaks, code) are read as names, as csv-stringify reads them", () => {
  const columns = ['we"ird', "back\\slash", "two\nlines", "x); throw new Error(1); (y"];
  const enc = defaultCsvEncoder(columns, undefined)!;
  fc.assert(
    fc.property(fc.tuple(field, field, field, field), (values) => {
      const record = Object.fromEntries(columns.map((c, i) => [c, values[i]]));
      assert.equal(enc(record), stringify([record], { columns }));
    }),
    { numRuns: 500 },
  );
  assert.equal(enc({}), stringify([{}], { columns }), "missing columns are empty fields");
});
