/**
 * The disk backend writes back only entries that changed (issue 29, the dirty flag): a key loaded
 * and only read is not written again when evicted, and every write path — every state kind, TTL
 * refreshes and purges, window merges, clear, the value cursor — makes its entry dirty, so the
 * change survives eviction. Each write case: load the key (clean), write, evict it (a cache of one
 * key), read it back from the store.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ManualClock } from "../core/clock.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "./descriptors.ts";
import { DiskKeyedStateBackend } from "./disk-keyed-state-backend.ts";
import type { InternalValueState } from "./internal-state.ts";

const root = mkdtempSync(join(tmpdir(), "eddy-disk-dirty-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const RANGE = { start: 0, end: 3 };
const make = (cacheSize: number, clock = new ManualClock(0)): DiskKeyedStateBackend =>
  new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock, storeDir: join(root, `b${n++}`), cacheSize });

const count = new ValueStateDescriptor<number>("count");

test("disk backend: a key created and cleared while cached, never written out, costs no store delete (KeyEntry.fresh); one written out does", () => {
  const b = make(1_000);
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 50; i++) {
      b.setCurrentKey(i, i % 4);
      b.getState(count).update(i);
      b.getState(count).clear();
    }
  }
  b.numKeys("count"); // writes the cache and the write batch to the store
  assert.equal(b.storeWrites, 0, "nothing written for keys that never left the cache");
  for (let i = 0; i < 50; i++) {
    b.setCurrentKey(i, i % 4);
    b.getState(count).update(i);
  }
  b.numKeys("count"); // written: from now on their removal is a store delete
  assert.equal(b.storeWrites, 50);
  for (let i = 0; i < 50; i++) {
    b.setCurrentKey(i, i % 4);
    b.getState(count).clear();
  }
  assert.equal(b.numKeys("count"), 0);
  assert.equal(b.storeWrites, 100, "50 puts, then 50 deletes");
  b.dispose();
});

test("disk backend: keys only read are not written back when evicted; changed ones are", () => {
  const b = make(10);
  for (let i = 0; i < 200; i++) {
    b.setCurrentKey(i, i % 4);
    b.getState(count).update(i);
  }
  b.numKeys("count"); // writes the cache and the write batch to the store
  const afterLoad = b.storeWrites;
  assert.ok(afterLoad >= 200, `${afterLoad} records written for 200 keys`);
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 200; i++) {
      b.setCurrentKey(i, i % 4);
      assert.equal(b.getState(count).value(), i);
    }
  }
  b.numKeys("count");
  assert.equal(b.storeWrites, afterLoad, "reading every key three times (each a miss and an eviction) wrote nothing");
  for (let i = 0; i < 200; i += 2) {
    b.setCurrentKey(i, i % 4);
    b.getState(count).update(-i);
  }
  b.numKeys("count");
  assert.equal(b.storeWrites, afterLoad + 100, "the 100 keys updated were written back, and only they");
  for (let i = 0; i < 200; i++) {
    b.setCurrentKey(i, i % 4);
    assert.equal(b.getState(count).value(), i % 2 === 0 ? -i : i);
  }
  b.dispose();
});

/**
 * One write path: `prepare` writes the key's initial state (then flushed, and the key reloaded
 * clean), `write` changes it, `check` reads it after the key went through the store again.
 */
interface WriteCase {
  readonly name: string;
  prepare(b: DiskKeyedStateBackend, clock: ManualClock): void;
  write(b: DiskKeyedStateBackend, clock: ManualClock): void;
  check(b: DiskKeyedStateBackend, clock: ManualClock): void;
}

const sum = new ReducingStateDescriptor<number>("sum", (a, c) => a + c);
const avg = new AggregatingStateDescriptor<number, { n: number; s: number }, number>("avg", {
  createAccumulator: () => ({ n: 0, s: 0 }),
  add: (v, acc) => ({ n: acc.n + 1, s: acc.s + v }),
  getResult: (acc) => acc.s / acc.n,
  merge: (a, c) => ({ n: a.n + c.n, s: a.s + c.s }),
});
const list = new ListStateDescriptor<string>("list");
const map = new MapStateDescriptor<string, number>("map");
const refreshed = new ValueStateDescriptor<string>("refreshed", { ttl: { ttlMs: 100, updateType: "onReadAndWrite" } });
const refreshedList = new ListStateDescriptor<string>("refreshed-list", { ttl: { ttlMs: 100, updateType: "onReadAndWrite" } });
const refreshedMap = new MapStateDescriptor<string, number>("refreshed-map", { ttl: { ttlMs: 100, updateType: "onReadAndWrite" } });
const expiring = new ListStateDescriptor<string>("expiring", { ttl: { ttlMs: 100 } });
const windowSum = new ReducingStateDescriptor<number>("window-sum", (a, c) => a + c);
const cursorValue = new ValueStateDescriptor<number>("cursor", { copy: "none" });
const pane = new ValueStateDescriptor<{ n: number }>("pane", { copy: "none" });
/** The sliding pane operator's fold: adds into the accumulator in place. */
const paneFold = { create: (v: number) => ({ n: v }), add: (acc: { n: number }, v: number) => ((acc.n += v), acc) };
const paneState = (b: DiskKeyedStateBackend): InternalValueState<{ n: number }> => b.getState(pane) as InternalValueState<{ n: number }>;

/** Window sums 1 in "w1" and 2 in "w2" for the current key. */
function twoWindows(b: DiskKeyedStateBackend): void {
  const s = b.getReducingState(windowSum);
  s.setCurrentNamespace("w1");
  s.add(1);
  s.setCurrentNamespace("w2");
  s.add(2);
}

const CASES: WriteCase[] = [
  { name: "value update", prepare: (b) => b.getState(count).update(1), write: (b) => b.getState(count).update(2), check: (b) => assert.equal(b.getState(count).value(), 2) },
  { name: "value clear", prepare: (b) => b.getState(count).update(1), write: (b) => b.getState(count).clear(), check: (b) => assert.equal(b.getState(count).value(), undefined) },
  { name: "reducing add to an existing value", prepare: (b) => b.getReducingState(sum).add(1), write: (b) => b.getReducingState(sum).add(5), check: (b) => assert.equal(b.getReducingState(sum).get(), 6) },
  { name: "aggregating add to an existing accumulator", prepare: (b) => b.getAggregatingState(avg).add(2), write: (b) => b.getAggregatingState(avg).add(4), check: (b) => assert.equal(b.getAggregatingState(avg).get(), 3) },
  { name: "list add", prepare: (b) => b.getListState(list).add("a"), write: (b) => b.getListState(list).add("b"), check: (b) => assert.deepEqual(b.getListState(list).get(), ["a", "b"]) },
  { name: "list update", prepare: (b) => b.getListState(list).add("a"), write: (b) => b.getListState(list).update(["x", "y"]), check: (b) => assert.deepEqual(b.getListState(list).get(), ["x", "y"]) },
  { name: "map put", prepare: (b) => b.getMapState(map).put("a", 1), write: (b) => b.getMapState(map).put("b", 2), check: (b) => assert.deepEqual([...b.getMapState(map).entries()], [["a", 1], ["b", 2]]) },
  {
    name: "map remove (map not empty after)",
    prepare: (b) => b.getMapState(map).putAll([["a", 1], ["b", 2]]),
    write: (b) => b.getMapState(map).remove("a"),
    check: (b) => assert.deepEqual([...b.getMapState(map).entries()], [["b", 2]]),
  },
  {
    name: "clear of one namespace (the key keeps another)",
    prepare: twoWindows,
    write: (b) => {
      const s = b.getReducingState(windowSum);
      s.setCurrentNamespace("w1");
      s.clear();
    },
    check: (b) => {
      const s = b.getReducingState(windowSum);
      s.setCurrentNamespace("w1");
      assert.equal(s.get(), undefined);
      s.setCurrentNamespace("w2");
      assert.equal(s.get(), 2);
    },
  },
  {
    name: "merging windows (mergeNamespaces)",
    prepare: twoWindows,
    write: (b) => b.getReducingState(windowSum).mergeNamespaces("w2", ["w1"]),
    check: (b) => {
      const s = b.getReducingState(windowSum);
      s.setCurrentNamespace("w1");
      assert.equal(s.get(), undefined);
      s.setCurrentNamespace("w2");
      assert.equal(s.get(), 3);
    },
  },
  {
    name: "TTL refreshed by a read (value, onReadAndWrite)",
    prepare: (b) => b.getState(refreshed).update("v"),
    write: (b, clock) => {
      clock.advanceTo(60);
      assert.equal(b.getState(refreshed).value(), "v"); // expiry 100 → 160
    },
    check: (b, clock) => {
      clock.advanceTo(120);
      assert.equal(b.getState(refreshed).value(), "v", "the refreshed expiry was written back");
    },
  },
  {
    name: "TTL refreshed by a read (list, onReadAndWrite)",
    prepare: (b) => b.getListState(refreshedList).add("v"),
    write: (b, clock) => {
      clock.advanceTo(60);
      assert.deepEqual(b.getListState(refreshedList).get(), ["v"]);
    },
    check: (b, clock) => {
      clock.advanceTo(120);
      assert.deepEqual(b.getListState(refreshedList).get(), ["v"]);
    },
  },
  {
    name: "TTL refreshed by a read (map entry, onReadAndWrite)",
    prepare: (b) => b.getMapState(refreshedMap).put("k", 1),
    write: (b, clock) => {
      clock.advanceTo(60);
      assert.equal(b.getMapState(refreshedMap).get("k"), 1);
    },
    check: (b, clock) => {
      clock.advanceTo(120);
      assert.equal(b.getMapState(refreshedMap).get("k"), 1);
    },
  },
  {
    name: "expired list elements dropped on a write",
    prepare: (b, clock) => {
      b.getListState(expiring).add("old");
      clock.advanceTo(50);
      b.getListState(expiring).add("new"); // expires at 150
    },
    write: (b, clock) => {
      clock.advanceTo(120); // "old" expired
      b.getListState(expiring).add("newer");
    },
    check: (b) => assert.deepEqual(b.getListState(expiring).get(), ["new", "newer"]),
  },
  {
    name: "value accumulate into an existing cell (in place)",
    prepare: (b) => assert.equal(paneState(b).accumulate(1, paneFold), true),
    write: (b) => assert.equal(paneState(b).accumulate(4, paneFold), false),
    check: (b) => assert.deepEqual(paneState(b).value(), { n: 5 }),
  },
  {
    name: "value cursor set",
    prepare: (b) => b.getState(cursorValue).update(1),
    write: (b) => {
      const cursor = b.getVoidValueCursor(cursorValue);
      assert.equal(cursor.seek(7, 3), 1);
      cursor.set(9);
    },
    check: (b) => assert.equal(b.getState(cursorValue).value(), 9),
  },
];

for (const c of CASES) {
  test(`disk backend: a change is written back when evicted: ${c.name}`, () => {
    const clock = new ManualClock(0);
    const b = make(1, clock);
    b.setCurrentKey(7, 3);
    c.prepare(b, clock);
    b.numKeys(b.stateNames()[0]!); // the key is in the store now, and clean in the cache
    b.setCurrentKey(8, 0); // evicts 7 (clean: no write)
    b.setCurrentKey(7, 3); // loads 7 from the store, clean
    const before = b.storeWrites;
    c.write(b, clock);
    b.setCurrentKey(8, 0); // evicts 7: must be written back
    b.numKeys(b.stateNames()[0]!);
    assert.ok(b.storeWrites > before, "the changed entry was written back");
    b.setCurrentKey(7, 3); // loads 7 from the store again
    c.check(b, clock);
    b.dispose();
  });
}
