import { test } from "node:test";
import assert from "node:assert/strict";
import { parseArray, valueParser } from "./cdc-values.ts";
import { decodePgOutput, formatLsn, parseLsn, standbyStatusUpdate } from "./pgoutput.ts";
import { compareKeys, inRange, parseCdcSplit } from "./cdc-splits.ts";

test("array literals: quoting, escapes, NULL, nesting, dimension decorations", () => {
  const text = (s: string) => s;
  assert.deepEqual(parseArray('{a,"b c","d\\"e",NULL,"NULL"}', text), ["a", "b c", 'd"e', null, "NULL"]);
  assert.deepEqual(parseArray("{{1,2},{3,4}}", valueParser(23, "string")), [[1, 2], [3, 4]]);
  assert.deepEqual(parseArray("[0:1]={7,8}", valueParser(23, "string")), [7, 8]);
  assert.deepEqual(parseArray("{}", text), []);
  assert.throws(() => parseArray("{1,2", text), /unterminated|bad array literal/);
});

test("timestamps as epoch ms (with and without zone), dates, numeric by mode, bigint, floats", () => {
  assert.equal(valueParser(1184, "string")("2026-12-02 14:51:37.5+01"), Date.UTC(2026, 11, 2, 13, 51, 37, 500));
  assert.equal(valueParser(1184, "string")("2026-12-02 08:21:37-05:30"), Date.UTC(2026, 11, 2, 13, 51, 37));
  assert.equal(valueParser(1114, "string")("2026-12-02 13:51:37.123456"), Date.UTC(2026, 11, 2, 13, 51, 37, 123));
  assert.equal(valueParser(1082, "string")("2026-12-02"), Date.UTC(2026, 11, 2));
  assert.equal(valueParser(1700, "string")("1.50"), "1.50");
  assert.equal(valueParser(1700, "bigint")("123456789012345678901"), 123456789012345678901n);
  assert.throws(() => valueParser(1700, "bigint")("1.5"), /not an integer/);
  assert.equal(valueParser(20, "string")("-9007199254740993"), -9007199254740993n);
  assert.ok(Number.isNaN(valueParser(701, "string")("NaN") as number));
  assert.throws(() => valueParser(1184, "string")("yesterday"), /not a timestamp/);
});

test("LSN text round trip, standby status layout, a truncated message is an error", () => {
  assert.equal(formatLsn(parseLsn("16/B374D848")), "16/B374D848");
  const b = standbyStatusUpdate(parseLsn("0/20"), parseLsn("0/10"), Date.UTC(2000, 0, 1));
  assert.equal(b.length, 34);
  assert.equal(b.toString("latin1", 0, 1), "r");
  assert.equal(b.readBigUInt64BE(1), 0x20n);
  assert.equal(b.readBigUInt64BE(9), 0x10n);
  assert.equal(b.readBigInt64BE(25), 0n);
  assert.throws(() => decodePgOutput(new Uint8Array([0x42, 0, 0])), /truncated/);
});

test("keys compare the way PostgreSQL orders them (integers numerically, text bytewise, composite keys as row values), ranges are (after, upTo]", () => {
  const int = [{ name: "id", type: "integer" as const }];
  const text = [{ name: "id", type: "text" as const }];
  assert.ok(compareKeys(int, "9", "10") < 0);
  assert.ok(compareKeys(text, "Z", "a") < 0);
  assert.ok(compareKeys(text, "é", "z") > 0);
  assert.ok(inRange(int, "10", { after: "9", upTo: "10" }));
  assert.ok(!inRange(int, "9", { after: "9", upTo: null }));
  // (region, id): the first column decides, then the second, as PostgreSQL's (a, b) > (c, d).
  const composite = [{ name: "region", type: "text" as const }, { name: "id", type: "integer" as const }];
  assert.ok(compareKeys(composite, ["eu", "10"], ["eu", "9"]) > 0);
  assert.ok(compareKeys(composite, ["eu", "10"], ["us", "1"]) < 0);
  assert.equal(compareKeys(composite, ["eu", "10"], ["eu", "10"]), 0);
  assert.ok(inRange(composite, ["eu", "500"], { after: ["eu", "9"], upTo: ["us", "1"] }));
  assert.ok(inRange(composite, ["us", "1"], { after: ["eu", "9"], upTo: ["us", "1"] }));
  assert.ok(!inRange(composite, ["eu", "9"], { after: ["eu", "9"], upTo: ["us", "1"] }));
  assert.ok(!inRange(composite, ["us", "2"], { after: null, upTo: ["us", "1"] }));
  assert.throws(() => parseCdcSplit({ v: 1, kind: "stream", splitId: "stream", lsn: "nope" }), /CDC split/);
  // A composite key's cursor must have one value per key column.
  const table = { name: "public.t", schema: "public", table: "t", key: "region", keyType: "text", keyColumns: composite };
  const split = { v: 1, kind: "snapshot", splitId: "public.t#0", table, after: null, upTo: ["us", "1"], cursor: ["eu", "3"], parts: [] };
  assert.deepEqual(parseCdcSplit(split), split);
  assert.throws(() => parseCdcSplit({ ...split, cursor: ["eu"] }), /CDC split/);
  assert.throws(() => parseCdcSplit({ ...split, cursor: "eu" }), /CDC split/);
});
