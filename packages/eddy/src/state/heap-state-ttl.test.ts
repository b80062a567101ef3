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
