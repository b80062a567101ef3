/**
 * Key rows (key-rows.ts): which keys get one, that equal keys share it and others never do, the
 * bound on rows, and the pause after a period of misses. That the tables keep their rows right
 * under writes, removals and snapshots is tested through the backend (heap-snapshot.test.ts, rows
 * dropped and made again; heap-state-model.test.ts, the disk backend evicting).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { mapKeyOf, type Key } from "../core/key.ts";
import { KeyRows } from "./key-rows.ts";

test("equal string and composite keys share one row with the key's map identity; other keys, tables or parts get none", () => {
  const rows = new KeyRows<unknown>();
  const row = rows.rowOf(["Google", 20_000], 3, 0);
  assert.ok(row !== undefined);
  assert.equal(row.mapKey, mapKeyOf(["Google", 20_000]));
  // A fresh array with equal parts: the same row, so the same map identity object.
  assert.equal(rows.rowOf(["Google", 20_000], 3, 0), row);
  assert.equal(rows.rowOf(["Google", -0 + 20_000], 3, 0), row);
  const s = rows.rowOf("channel-7", 3, 0);
  assert.equal(s?.mapKey, "channel-7");
  assert.equal(rows.rowOf("channel-7", 3, 0), s);
  // One table: nothing to share. Numbers, bigints and nested keys: the tables' own paths.
  assert.equal(rows.rowOf("channel-7", 1, 0), undefined);
  for (const key of [7, 1.5, 7n, [[1, 2], 3], [1n, "a"]] as Key[]) assert.equal(rows.rowOf(key, 3, 0), undefined, JSON.stringify(key, (_, v) => (typeof v === "bigint" ? `${v}n` : v)));
});

test("keys that differ get different rows, also in the same slot", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true, noDefaultInfinity: true })), { minLength: 1, maxLength: 3 })), {
        maxLength: 40,
      }),
      (keys) => {
        const rows = new KeyRows<unknown>();
        for (const key of keys as Key[]) {
          const row = rows.rowOf(key, 2, 0)!;
          assert.equal(row.mapKey, mapKeyOf(key), "a row's identity is its key's");
          assert.equal(rows.rowOf(key, 2, 0), row, "asked again at once: the same row");
        }
      },
    ),
    { numRuns: 300 },
  );
  // ["1"] and [1], ["a", "b"] and ["a,b"]: other keys, other rows; 0 and -0: one key, one row.
  const rows = new KeyRows<unknown>();
  assert.notEqual(rows.rowOf(["1"], 2, 0)?.mapKey, rows.rowOf([1], 2, 0)?.mapKey);
  assert.notEqual(rows.rowOf(["a", "b"], 2, 0)?.mapKey, rows.rowOf(["a,b"], 2, 0)?.mapKey);
  assert.equal(rows.rowOf([0, "x"], 2, 0), rows.rowOf([-0, "x"], 2, 0));
  // Keys that are prefixes of each other, or of another length, are other keys.
  assert.notEqual(rows.rowOf(["a"], 2, 0), rows.rowOf(["a", "b"], 2, 0));
  assert.notEqual(rows.rowOf("a", 2, 0), rows.rowOf(["a"], 2, 0));
});

test("rows are dropped all at once past the bound and made again as keys recur", () => {
  const rows = new KeyRows<unknown>(3);
  const a = rows.rowOf("a", 2, 1)!;
  const b = rows.rowOf(["b", 1], 2, 2)!;
  const c = rows.rowOf(["c", 1], 2, 3)!;
  assert.equal(rows.find("a", 2), a);
  rows.rowOf("a", 2, 1);
  assert.equal(rows.find(["b", 1], 2), b);
  rows.rowOf(["b", 1], 2, 2);
  const d = rows.rowOf("d", 2, 4)!;
  assert.ok(d !== undefined, "a fourth key gets a row");
  for (const gone of ["a", ["b", 1], ["c", 1]]) assert.equal(rows.find(gone, 2), undefined, `${String(gone)} was dropped`);
  assert.equal(rows.find("d", 2), d);
  rows.rowOf("d", 2, 4);
  const again = rows.rowOf(["c", 1], 2, 3)!;
  assert.notEqual(again, c, "made again: a new row");
  assert.equal(again.keyGroup, 3);
  assert.equal(rows.find(["c", 1], 2), again);
});

test("find: the row of an equal key with its key group, for a selector's unchecked result; never one it would not have made", () => {
  const rows = new KeyRows<unknown>();
  const row = rows.rowOf(["Google", 20_000], 3, 41)!;
  const other = rows.rowOf("channel-7", 3, 9)!;
  const found = rows.find(["Google", 20_000], 3);
  assert.equal(found, row);
  assert.equal(found?.keyGroup, 41);
  assert.equal(rows.find("channel-7", 3)?.keyGroup, 9);
  assert.equal(rows.find("channel-7", 3), other);
  // What has no row is not found, and nothing is made: unseen keys, other parts, invalid results.
  for (const selected of [["Google", 20_001], ["Google"], "channel-8", 7, null, undefined, {}, { length: 2 }, [Number.NaN, "a"], [{}, 1], [null], [[1]]]) {
    assert.equal(rows.find(selected, 3), undefined, String(selected));
  }
  assert.equal(rows.find(["Google", 20_000], 1), undefined, "one table: no rows");
  // The next rowOf of the key found takes the row without a second probe; another key probes.
  const again = ["Google", 20_000];
  assert.equal(rows.find(again, 3), row);
  assert.equal(rows.rowOf(again as Key[], 3, 41), row);
  assert.equal(rows.find("channel-7", 3), other);
  assert.equal(rows.rowOf(["Google", 20_000], 3, 41), row, "a different key after a find: its own lookup");
});

test("rows pause for 65,536 lookups after a period of 4,096 in which most missed, then come back", () => {
  const rows = new KeyRows<unknown>();
  for (let i = 0; i < 4096; i++) assert.ok(rows.rowOf(`once-${i}`, 2, 0) !== undefined);
  assert.equal(rows.rowOf("again", 2, 0), undefined, "paused");
  for (let i = 1; i < 65_536; i++) rows.rowOf("again", 2, 0);
  const back = rows.rowOf("again", 2, 0);
  assert.ok(back !== undefined, "in use again");
  // Recurring keys keep them: a period of hits does not pause.
  for (let i = 0; i < 10_000; i++) assert.ok(rows.rowOf(`hot-${i % 4}`, 2, 0) !== undefined);
});
