import { test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../core/clock.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "./descriptors.ts";
import type { StateTtlConfig } from "./descriptors.ts";
import { HeapKeyedStateBackend } from "./heap-keyed-state-backend.ts";

const RANGE = { start: 0, end: 127 };

function setup(): { clock: ManualClock; b: HeapKeyedStateBackend; at: (k: number) => void } {
  const clock = new ManualClock(1_000);
  const b = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock });
  return { clock, b, at: (k) => b.setCurrentKey(k, k % 128) };
}

const ttl = (ttlMs: number, updateType?: StateTtlConfig["updateType"]): { ttl: StateTtlConfig } => ({
  ttl: updateType === undefined ? { ttlMs } : { ttlMs, updateType },
});

test("a value is visible before its TTL and invisible from the moment it expires", () => {
  const { clock, b, at } = setup();
  const s = b.getState(new ValueStateDescriptor<string>("v", ttl(100)));
  at(1);
  s.update("x");
  clock.advance(99);
  assert.equal(s.value(), "x");
  clock.advance(1);
  assert.equal(s.value(), undefined);
  assert.equal(b.getValueForKey("v", 1, 1), undefined);
});

test("a write restarts the TTL; with onCreateAndWrite a read does not", () => {
  const { clock, b, at } = setup();
  const s = b.getState(new ValueStateDescriptor<number>("v", ttl(100)));
  at(1);
  s.update(1);
  clock.advance(60);
  s.update(2);
  clock.advance(60);
  assert.equal(s.value(), 2, "written again at +60, so alive at +120");
  clock.advance(39);
  assert.equal(s.value(), 2, "reads at +120 and +159 did not refresh...");
  clock.advance(1);
  assert.equal(s.value(), undefined, "...so it expires at +160");
});

test("with onReadAndWrite a read restarts the TTL", () => {
  const { clock, b, at } = setup();
  const s = b.getState(new ValueStateDescriptor<number>("v", ttl(100, "onReadAndWrite")));
  const r = b.getReducingState(new ReducingStateDescriptor<number>("r", (x, y) => x + y, ttl(100, "onReadAndWrite")));
  at(1);
  s.update(1);
  r.add(1);
  for (let i = 0; i < 5; i++) {
    clock.advance(90);
    assert.equal(s.value(), 1);
    assert.equal(r.get(), 1);
  }
  clock.advance(100);
  assert.equal(s.value(), undefined);
  assert.equal(r.get(), undefined);
  r.add(5);
  assert.equal(r.get(), 5, "an expired accumulator does not take part in the next reduction");
});

test("list state TTL is per element", () => {
  const { clock, b, at } = setup();
  const s = b.getListState(new ListStateDescriptor<string>("l", ttl(100)));
  at(1);
  s.add("old");
  clock.advance(60);
  s.addAll(["new1", "new2"]);
  assert.deepEqual(s.get(), ["old", "new1", "new2"]);
  clock.advance(40);
  assert.deepEqual(s.get(), ["new1", "new2"]);
  assert.deepEqual([...b.entries("l", 1)].map((e) => e.value), [["new1", "new2"]]);
  clock.advance(60);
  assert.deepEqual(s.get(), []);
  assert.equal(b.numKeys("l"), 0, "the emptied list was removed when read");
});

test("list state onReadAndWrite refreshes every element it returns", () => {
  const { clock, b, at } = setup();
  const s = b.getListState(new ListStateDescriptor<number>("l", ttl(100, "onReadAndWrite")));
  at(1);
  s.add(1);
  clock.advance(50);
  s.add(2);
  clock.advance(40);
  assert.deepEqual(s.get(), [1, 2]);
  clock.advance(99);
  assert.deepEqual(s.get(), [1, 2]);
});

test("map state TTL is per entry; contains, get and iteration hide expired entries", () => {
  const { clock, b, at } = setup();
  const s = b.getMapState(new MapStateDescriptor<string, number>("m", ttl(100)));
  at(1);
  s.put("a", 1);
  clock.advance(50);
  s.put("b", 2);
  clock.advance(50);
  assert.equal(s.contains("a"), false);
  assert.equal(s.get("a"), undefined);
  assert.equal(s.contains("b"), true);
  assert.deepEqual([...s.entries()], [["b", 2]]);
  clock.advance(50);
  assert.equal(s.isEmpty(), true);
  assert.deepEqual([...s.keys()], []);
  assert.equal(b.numKeys("m"), 0);
});

test("map state onReadAndWrite refreshes the entry that is read", () => {
  const { clock, b, at } = setup();
  const s = b.getMapState(new MapStateDescriptor<string, number>("m", ttl(100, "onReadAndWrite")));
  at(1);
  s.put("a", 1);
  s.put("b", 2);
  clock.advance(90);
  assert.equal(s.get("a"), 1);
  clock.advance(10);
  assert.deepEqual([...s.keys()], ["a"]);
});

test("aggregating state expires as a whole", () => {
  const { clock, b, at } = setup();
  const s = b.getAggregatingState(
    new AggregatingStateDescriptor<number, number, number>(
      "g",
      { createAccumulator: () => 0, add: (v, a) => a + v, getResult: (a) => a },
      ttl(100),
    ),
  );
  at(1);
  s.add(3);
  clock.advance(50);
  s.add(4);
  clock.advance(99);
  assert.equal(s.get(), 7);
  clock.advance(1);
  assert.equal(s.get(), undefined);
});

test("touching an expired key removes it (lazy cleanup)", () => {
  const { clock, b, at } = setup();
  const s = b.getState(new ValueStateDescriptor<number>("v", ttl(100)));
  at(1);
  s.update(1);
  at(2);
  s.update(2);
  clock.advance(100);
  assert.equal(b.numKeys("v"), 2);
  at(1);
  assert.equal(s.value(), undefined);
  assert.ok(b.numKeys("v") <= 1);
});

test("accesses to one key incrementally clean up idle expired keys", () => {
  const { clock, b, at } = setup();
  const s = b.getState(new ValueStateDescriptor<number>("v", ttl(100)));
  const l = b.getListState(new ListStateDescriptor<number>("l", ttl(100)));
  for (let k = 0; k < 500; k++) {
    at(k);
    s.update(k);
    s.setCurrentNamespace("w");
    s.update(k);
    s.setCurrentNamespace("");
    l.add(k);
  }
  clock.advance(100);
  at(1_000);
  let accesses = 0;
  while (b.numKeys("v") > 1 && accesses < 2_000) {
    s.update(accesses++);
  }
  assert.equal(b.numKeys("v"), 1, "only the key still being written remains");
  assert.ok(accesses <= 500, `needed ${accesses} accesses for 500 idle keys`);
  assert.equal(b.numKeys("l"), 500, "a state that is not accessed is not cleaned incrementally");
  let removed = 0;
  for (let i = 0; i < 100 && b.numKeys("l") > 0; i++) removed += b.cleanupExpired(10);
  assert.equal(removed, 500);
  assert.equal(b.numKeys("l"), 0, "cleanupExpired drops idle keys of every state");
});

test("state without TTL is never expired by the clock", () => {
  const { clock, b, at } = setup();
  const s = b.getState(new ValueStateDescriptor<number>("v"));
  at(1);
  s.update(1);
  clock.advance(1e12);
  assert.equal(s.value(), 1);
  assert.equal(b.cleanupExpired(100), 0);
});

test("returnExpiredIfNotCleanedUp: a read returns an expired value still stored, once, and removes it", () => {
  const { clock, b, at } = setup();
  const cfg = { ttl: { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup: { incremental: false } } } as const;
  const v = b.getState(new ValueStateDescriptor<string>("v", cfg));
  const never = b.getState(new ValueStateDescriptor<string>("never", { ttl: { ttlMs: 100, cleanup: { incremental: false } } }));
  at(1);
  v.update("x");
  never.update("x");
  clock.advance(150);
  assert.equal(never.value(), undefined, "the default never returns it");
  assert.equal(v.value(), "x", "still stored, so returned");
  assert.equal(v.value(), undefined, "the read that returned it cleaned it up");
  assert.equal(b.numKeys("v"), 0);
});

test("returnExpiredIfNotCleanedUp: reducing and aggregating state keep reducing into an expired accumulator still stored", () => {
  const { clock, b, at } = setup();
  const cfg = { ttl: { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup: { incremental: false } } } as const;
  const r = b.getReducingState(new ReducingStateDescriptor<number>("r", (x, y) => x + y, cfg));
  const g = b.getAggregatingState(
    new AggregatingStateDescriptor<number, number, number>("g", { createAccumulator: () => 0, add: (v, a) => a + v, getResult: (a) => a }, cfg),
  );
  at(1);
  r.add(1);
  g.add(1);
  clock.advance(200);
  r.add(2);
  g.add(2);
  assert.equal(r.get(), 3, "as Flink's TtlReduceFunction: the expired accumulator takes part");
  assert.equal(g.get(), 3);
  clock.advance(99);
  assert.equal(r.get(), 3, "and the write restarted its TTL");
});

test("returnExpiredIfNotCleanedUp: list elements and map entries that expired are returned once, then removed", () => {
  const { clock, b, at } = setup();
  const cfg = { ttl: { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup: { incremental: false } } } as const;
  const l = b.getListState(new ListStateDescriptor<string>("l", cfg));
  const m = b.getMapState(new MapStateDescriptor<string, number>("m", cfg));
  const m2 = b.getMapState(new MapStateDescriptor<string, number>("m2", cfg));
  at(1);
  l.add("old");
  m.put("old", 1);
  m2.put("a", 1);
  m2.put("b", 2);
  clock.advance(60);
  l.add("new");
  m.put("new", 2);
  clock.advance(60);
  assert.deepEqual(l.get(), ["old", "new"]);
  assert.deepEqual(l.get(), ["new"]);
  assert.deepEqual([...m.entries()], [["old", 1], ["new", 2]]);
  assert.deepEqual([...m.entries()], [["new", 2]]);
  assert.equal(m2.contains("a"), true, "expired, not cleaned up yet: visible");
  assert.equal(m2.get("a"), undefined, "the contains() above cleaned it up");
  assert.equal(m2.get("b"), 2);
  assert.equal(m2.get("b"), undefined);
  assert.equal(b.numKeys("m2"), 0);
});

test("incremental cleanup examines entriesPerAccess keys per access; false turns it off; everyRecord runs it per key change", () => {
  const run = (incremental: false | { entriesPerAccess: number; everyRecord?: boolean }, act: (b: HeapKeyedStateBackend, at: (k: number) => void) => void): number => {
    const { clock, b, at } = setup();
    const s = b.getState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100, cleanup: { incremental, background: false } } }));
    for (let k = 0; k < 100; k++) {
      at(k);
      s.update(k);
    }
    clock.advance(100);
    act(b, at);
    return b.numKeys("v");
  };
  const tenAccesses = (b: HeapKeyedStateBackend, at: (k: number) => void): void => {
    const s = b.getState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100, cleanup: { incremental: { entriesPerAccess: 5 }, background: false } } }));
    at(1_000);
    for (let i = 0; i < 10; i++) s.value();
  };
  assert.equal(run({ entriesPerAccess: 5 }, tenAccesses), 50, "10 accesses × 5 keys");
  const noAccess = (b: HeapKeyedStateBackend, at: (k: number) => void): void => {
    for (let i = 0; i < 10; i++) at(1_000 + i);
    assert.equal(b.cleanupExpired(1_000), 0, "background cleanup is off for this state");
  };
  assert.equal(run({ entriesPerAccess: 5 }, noAccess), 100, "without everyRecord, key changes alone clean nothing");
  assert.equal(run({ entriesPerAccess: 5, everyRecord: true }, noAccess), 50, "everyRecord: 10 records × 5 keys, no state access");
  const offAccesses = (b: HeapKeyedStateBackend, at: (k: number) => void): void => {
    const s = b.getState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100, cleanup: { incremental: false, background: false } } }));
    at(1_000);
    for (let i = 0; i < 10; i++) s.value();
  };
  assert.equal(run(false, offAccesses), 100);
});

test("background cleanup (cleanupExpired) cleans only states whose TTL asks for it, and announces the first one once", () => {
  const clock = new ManualClock(0);
  let announced = 0;
  const b = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock, onBackgroundCleanup: () => announced++ });
  b.getState(new ValueStateDescriptor<number>("plain"));
  assert.equal(announced, 0, "state without TTL needs no background cleanup");
  const bg = b.getState(new ValueStateDescriptor<number>("bg", { ttl: { ttlMs: 10, cleanup: { incremental: false } } }));
  const off = b.getState(new ValueStateDescriptor<number>("off", { ttl: { ttlMs: 10, cleanup: { incremental: false, background: false } } }));
  b.getState(new ValueStateDescriptor<number>("bg2", { ttl: { ttlMs: 10 } }));
  assert.equal(announced, 1);
  for (let k = 0; k < 20; k++) {
    b.setCurrentKey(k, k);
    bg.update(k);
    off.update(k);
  }
  clock.advance(10);
  assert.equal(b.cleanupExpired(1_000), 20);
  assert.equal(b.numKeys("bg"), 0);
  assert.equal(b.numKeys("off"), 20);
});

test("full-snapshot cleanup: expired cells, list elements and map entries are left out by default, written with fullSnapshot: false", async () => {
  const { ByteReader, ByteWriter } = await import("../core/codec/bytes.ts");
  const snapshotAndRestore = (fullSnapshot: boolean): { values: unknown[]; list: string[]; map: [string, number][] } => {
    const { clock, b, at } = setup();
    const cleanup = { fullSnapshot, incremental: false } as const;
    const opts = { ttl: { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup } } as const;
    const v = new ValueStateDescriptor<number>("v", opts);
    const l = new ListStateDescriptor<string>("l", opts);
    const m = new MapStateDescriptor<string, number>("m", opts);
    at(1);
    b.getState(v).update(1);
    b.getListState(l).add("old");
    b.getMapState(m).put("old", 1);
    clock.advance(60);
    b.getListState(l).add("new");
    b.getMapState(m).put("new", 2);
    clock.advance(60);
    const snap = b.snapshot();
    const out = new ByteWriter();
    snap.writeKeyGroup(1, out);
    snap.release();
    const restored = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock });
    restored.restoreKeyGroup(1, new ByteReader(out.finish()), snap.states);
    restored.setCurrentKey(1, 1);
    return {
      values: [restored.getState(v).value()],
      list: restored.getListState(l).get(),
      map: [...restored.getMapState(m).entries()],
    };
  };
  assert.deepEqual(snapshotAndRestore(true), { values: [undefined], list: ["new"], map: [["new", 2]] });
  assert.deepEqual(snapshotAndRestore(false), { values: [1], list: ["old", "new"], map: [["old", 1], ["new", 2]] });
});

test("snapshots record only ttlMs and updateType; a restored state is adopted by a descriptor with other visibility and cleanup, not another ttlMs", async () => {
  const { ByteReader, ByteWriter } = await import("../core/codec/bytes.ts");
  const { clock, b, at } = setup();
  at(1);
  b.getState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup: { background: false } } })).update(7);
  const snap = b.snapshot();
  assert.deepEqual(snap.states[0]!.ttl, { ttlMs: 100, updateType: "onCreateAndWrite" }, "the metadata's JSON is as before these options");
  const out = new ByteWriter();
  snap.writeKeyGroup(1, out);
  snap.release();
  const bytes = out.finish();
  const restore = (): HeapKeyedStateBackend => {
    const r = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock });
    r.restoreKeyGroup(1, new ByteReader(bytes), snap.states);
    r.setCurrentKey(1, 1);
    return r;
  };
  assert.equal(restore().getState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100, cleanup: { incremental: false } } })).value(), 7);
  assert.throws(
    () => restore().getState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 200 } })),
    (e: unknown) => e instanceof Error && (e as { code?: string }).code === "STATE_DESCRIPTOR_MISMATCH",
  );
  assert.throws(
    () => b.getState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100 } })),
    (e: unknown) => e instanceof Error && (e as { code?: string }).code === "STATE_DESCRIPTOR_MISMATCH",
    "within one run, one name keeps one set of options",
  );
});
