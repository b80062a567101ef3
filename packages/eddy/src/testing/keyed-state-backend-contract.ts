/**
 * The contract every keyed state backend keeps (state/keyed-state-backend.ts), as one suite that
 * runs against each implementation: `keyedStateBackendContract("heap", heapStateBackend)` in
 * state/heap-keyed-state-backend.contract.test.ts, and the same call for the disk backend when it
 * lands. Checks what operators rely on, through the interface only: scoping by key and namespace,
 * every state kind, merging namespaces, TTL, the copy rules, and snapshots that restore by
 * key-group range into a fresh backend (rescaling), also across factories.
 *
 * Not exported from eddy/testing: a tool for Eddy's own tests.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { ManualClock } from "../core/clock.ts";
import { assignToKeyGroup } from "../core/key-group.ts";
import type { Key } from "../core/key.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "../state/descriptors.ts";
import type { KeyedStateBackend, KeyedStateBackendFactory, KeyedStateSnapshot } from "../state/keyed-state-backend.ts";
import type { KeyGroupRangeLike } from "../state/namespace.ts";
import { VOID_NAMESPACE } from "../state/namespace.ts";

const MAX_PARALLELISM = 16;
const ALL: KeyGroupRangeLike = { start: 0, end: MAX_PARALLELISM - 1 };

const count = new ValueStateDescriptor<{ n: number }>("count");
const seen = new ListStateDescriptor<string>("seen");
const tags = new MapStateDescriptor<string, number>("tags");
const sum = new ReducingStateDescriptor<number>("sum", (a, b) => a + b);
const average = new AggregatingStateDescriptor<number, { total: number; n: number }, number>("average", {
  createAccumulator: () => ({ total: 0, n: 0 }),
  add: (v, acc) => ({ total: acc.total + v, n: acc.n + 1 }),
  getResult: (acc) => acc.total / acc.n,
  merge: (a, b) => ({ total: a.total + b.total, n: a.n + b.n }),
});

/** Writes every key group of `range` a snapshot holds (canonical format), giving each back once written; then releases it. */
export function writeKeyGroups(snapshot: KeyedStateSnapshot, range: KeyGroupRangeLike): Map<number, ArrayBuffer> {
  const groups = new Map<number, ArrayBuffer>();
  for (let kg = range.start; kg <= range.end; kg++) {
    if (!snapshot.hasKeyGroup(kg)) continue;
    const out = new ByteWriter();
    snapshot.writeKeyGroup(kg, out);
    groups.set(kg, out.finish());
    snapshot.releaseKeyGroup(kg);
  }
  snapshot.release();
  return groups;
}

/** Registers the contract's tests for the backends `create` makes (`other`: a second factory to restore into). */
export function keyedStateBackendContract(name: string, create: KeyedStateBackendFactory, other: KeyedStateBackendFactory = create): void {
  const backend = (range: KeyGroupRangeLike = ALL, clock = new ManualClock(0)): KeyedStateBackend => create({ keyGroupRange: range, clock, operatorName: "contract" });
  const at = (b: KeyedStateBackend, key: Key): void => b.setCurrentKey(key, assignToKeyGroup(key, MAX_PARALLELISM));

  test(`${name} backend: every kind of state is scoped to the current key`, () => {
    const b = backend();
    for (const key of ["a", "b", 7]) {
      at(b, key);
      b.getState(count).update({ n: String(key).length });
      b.getListState(seen).add(`${key}`);
      b.getMapState(tags).put(`t-${key}`, 1);
      b.getReducingState(sum).add(10);
      b.getAggregatingState(average).add(4);
    }
    at(b, "b");
    b.getReducingState(sum).add(5);
    b.getAggregatingState(average).add(8);
    assert.deepEqual(b.getState(count).value(), { n: 1 });
    assert.deepEqual(b.getListState(seen).get(), ["b"]);
    assert.deepEqual([...b.getMapState(tags).entries()], [["t-b", 1]]);
    assert.equal(b.getReducingState(sum).get(), 15);
    assert.equal(b.getAggregatingState(average).get(), 6);
    at(b, "never");
    assert.equal(b.getState(count).value(), undefined);
    assert.deepEqual(b.getListState(seen).get(), []);
    assert.equal(b.getReducingState(sum).get(), undefined);
    assert.equal(b.getCurrentKey(), "never");
    assert.deepEqual(b.stateNames(), ["count", "seen", "tags", "sum", "average"]);
  });

  test(`${name} backend: namespaces scope state below the key; merging moves the sources into the target`, () => {
    const b = backend();
    at(b, "k");
    const s = b.getReducingState(sum);
    for (const [ns, v] of [[1, 1], [2, 2], [3, 4]] as const) {
      s.setCurrentNamespace(ns);
      s.add(v);
    }
    s.setCurrentNamespace(VOID_NAMESPACE);
    assert.equal(s.get(), undefined, "the void namespace is its own");
    s.mergeNamespaces(10, [1, 2]);
    s.setCurrentNamespace(10);
    assert.equal(s.get(), 3);
    s.setCurrentNamespace(1);
    assert.equal(s.get(), undefined, "a merged source is gone");
    s.setCurrentNamespace(3);
    assert.equal(s.get(), 4, "another namespace is untouched");
    const list = b.getListState(seen);
    list.setCurrentNamespace("w1");
    list.add("x");
    list.setCurrentNamespace("w2");
    list.add("y");
    list.mergeNamespaces("w2", ["w1"]);
    assert.deepEqual([...list.get()].sort(), ["x", "y"]);
  });

  test(`${name} backend: clearing leaves nothing behind`, () => {
    const b = backend();
    at(b, "k");
    b.getState(count).update({ n: 1 });
    b.getMapState(tags).put("x", 1);
    assert.equal(b.numKeys("count"), 1);
    b.getState(count).clear();
    b.getMapState(tags).remove("x");
    assert.equal(b.getState(count).value(), undefined);
    assert.equal(b.numKeys("count"), 0);
    assert.equal(b.numKeys("tags"), 0, "an emptied map leaves no key behind");
  });

  test(`${name} backend: keysOf lists the keys with a visible value in a namespace, and may be written through`, () => {
    const clock = new ManualClock(0);
    const b = backend({ start: 0, end: 7 }, clock);
    const inRange = ["a", "b", "c", "d", "e", "f", "g", "h", 1, 2, 3, 4].filter((k) => assignToKeyGroup(k, MAX_PARALLELISM) <= 7);
    const ttl = new ValueStateDescriptor<number>("short", { ttl: { ttlMs: 10 } });
    for (const key of inRange) {
      at(b, key);
      b.getState(count).update({ n: 1 });
      b.getState(ttl).update(1);
      const windowed = b.getListState(seen);
      windowed.setCurrentNamespace(5);
      windowed.add(String(key));
    }
    at(b, inRange[0]!);
    b.getState(count).clear();
    const listed = b.keysOf("count");
    assert.deepEqual(new Set(listed.map((e) => e.key)), new Set(inRange.slice(1)), "the cleared key is not listed");
    for (const { key, keyGroup } of listed) assert.equal(keyGroup, assignToKeyGroup(key, MAX_PARALLELISM));
    assert.deepEqual(b.keysOf("seen"), [], "the list lives in namespace 5 only");
    assert.equal(b.keysOf("seen", 5).length, inRange.length);
    clock.advanceTo(10);
    assert.deepEqual(b.keysOf("short"), [], "expired values are not listed");
    // Writing while going through the list (clearing every key) is allowed: the list was taken first.
    for (const { key, keyGroup } of listed) {
      b.setCurrentKey(key, keyGroup);
      b.getState(count).clear();
    }
    assert.equal(b.numKeys("count"), 0);
    assert.throws(() => b.keysOf("nope"), /UNKNOWN_STATE|no keyed state/);
  });

  test(`${name} backend: with copy "deep", nothing stored is reachable from user code`, () => {
    const b = backend();
    at(b, "k");
    const written = { n: 1 };
    b.getState(count).update(written);
    written.n = 99;
    const read = b.getState(count).value()!;
    assert.equal(read.n, 1, "a mutation after update() is not stored");
    read.n = 42;
    assert.equal(b.getState(count).value()!.n, 1, "a mutation of a read value is not stored");
  });

  test(`${name} backend: with copy "none", changes written through update() persist`, () => {
    const b = backend();
    const shared = new ValueStateDescriptor<{ n: number }>("shared", { copy: "none" });
    at(b, "k");
    b.getState(shared).update({ n: 1 });
    const v = b.getState(shared).value()!;
    b.getState(shared).update({ n: v.n + 1 });
    assert.deepEqual(b.getState(shared).value(), { n: 2 });
    // Whether an in-place mutation without update() is seen is left to the backend (see the interface).
  });

  test(`${name} backend: an expired value is never returned`, () => {
    const clock = new ManualClock(0);
    const b = backend(ALL, clock);
    const ttl = new ValueStateDescriptor<number>("ttl", { ttl: { ttlMs: 100 } });
    at(b, "k");
    b.getState(ttl).update(1);
    clock.advance(99);
    assert.equal(b.getState(ttl).value(), 1);
    clock.advance(1);
    assert.equal(b.getState(ttl).value(), undefined);
    assert.equal(b.getValueForKey("ttl", "k", assignToKeyGroup("k", MAX_PARALLELISM)), undefined, "nor to queryable reads");
  });

  test(`${name} backend: TTL returnExpiredIfNotCleanedUp returns an expired value still stored once, per element for lists and maps`, () => {
    const clock = new ManualClock(0);
    const b = backend(ALL, clock);
    const ttl = { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup: { incremental: false, background: false } } as const;
    const v = new ValueStateDescriptor<number>("v", { ttl });
    const l = new ListStateDescriptor<string>("l", { ttl });
    const m = new MapStateDescriptor<string, number>("m", { ttl });
    at(b, "k");
    b.getState(v).update(1);
    b.getListState(l).add("old");
    b.getMapState(m).put("old", 1);
    clock.advance(50);
    b.getListState(l).add("new");
    b.getMapState(m).put("new", 2);
    clock.advance(50);
    assert.equal(b.getState(v).value(), 1);
    assert.equal(b.getState(v).value(), undefined);
    assert.deepEqual(b.getListState(l).get(), ["old", "new"]);
    assert.deepEqual(b.getListState(l).get(), ["new"]);
    assert.equal(b.getMapState(m).get("old"), 1);
    assert.deepEqual([...b.getMapState(m).entries()], [["new", 2]]);
  });

  test(`${name} backend: TTL fullSnapshot cleanup leaves expired values out of snapshots; fullSnapshot: false keeps them`, () => {
    for (const fullSnapshot of [true, false]) {
      const clock = new ManualClock(0);
      const b = backend(ALL, clock);
      const v = new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup: { fullSnapshot, incremental: false } } });
      at(b, "k");
      b.getState(v).update(1);
      clock.advance(100);
      const snapshot = b.snapshot();
      const kg = assignToKeyGroup("k", MAX_PARALLELISM);
      const r = other({ keyGroupRange: ALL, clock, operatorName: "contract" });
      if (snapshot.hasKeyGroup(kg)) {
        const out = new ByteWriter();
        snapshot.writeKeyGroup(kg, out);
        r.restoreKeyGroup(kg, new ByteReader(out.finish()), snapshot.states);
      }
      snapshot.release();
      at(r, "k");
      assert.equal(r.getState(v).value(), fullSnapshot ? undefined : 1, `fullSnapshot: ${fullSnapshot}`);
    }
  });

  test(`${name} backend: queryable reads see any key's value of every kind, without moving the current key`, () => {
    const b = backend();
    const keys = Array.from({ length: 20 }, (_, i) => `q-${i}`);
    for (const [i, key] of keys.entries()) {
      at(b, key);
      b.getState(count).update({ n: i });
      b.getListState(seen).addAll([key, "y"]);
      b.getMapState(tags).put(key, i);
      b.getReducingState(sum).add(i);
      b.getAggregatingState(average).add(i * 2);
      const windowed = b.getReducingState(sum);
      windowed.setCurrentNamespace(5);
      windowed.add(100 + i);
      windowed.setCurrentNamespace(VOID_NAMESPACE);
    }
    at(b, "elsewhere");
    for (const [i, key] of keys.entries()) {
      const kg = assignToKeyGroup(key, MAX_PARALLELISM);
      assert.deepEqual(b.getValueForKey("count", key, kg), { n: i }, key);
      assert.deepEqual(b.getValueForKey("seen", key, kg), [key, "y"]);
      assert.deepEqual(b.getValueForKey("tags", key, kg), new Map([[key, i]]));
      assert.equal(b.getValueForKey("sum", key, kg), i);
      assert.equal(b.getValueForKey("average", key, kg), i * 2);
      assert.equal(b.getValueForKey("sum", key, kg, 5), 100 + i);
      assert.equal(b.getValueForKey("sum", key, kg, 6), undefined);
    }
    assert.equal(b.getValueForKey("count", "absent", assignToKeyGroup("absent", MAX_PARALLELISM)), undefined);
    assert.equal(b.getCurrentKey(), "elsewhere");
    assert.equal(b.getState(count).value(), undefined);
  });

  test(`${name} backend: a key group outside the range is refused`, () => {
    const b = backend({ start: 0, end: 7 });
    const outside = [...Array(100).keys()].map(String).find((k) => assignToKeyGroup(k, MAX_PARALLELISM) > 7)!;
    assert.throws(() => at(b, outside), /key group/);
  });

  test(`${name} backend: a snapshot restores by key-group range into fresh backends; later writes are not in it`, () => {
    const b = backend();
    const keys = Array.from({ length: 200 }, (_, i) => `key-${i}`);
    for (const key of keys) {
      at(b, key);
      b.getState(count).update({ n: key.length });
      b.getListState(seen).addAll([key, "x"]);
      b.getMapState(tags).put(key, 1);
      b.getReducingState(sum).add(2);
      b.getAggregatingState(average).add(3);
      const windowed = b.getReducingState(sum);
      windowed.setCurrentNamespace(1_000);
      windowed.add(7);
      windowed.setCurrentNamespace(VOID_NAMESPACE);
    }
    const snapshot = b.snapshot();
    // Written after the snapshot, to every key (a backend with a small cache moves them to its
    // store meanwhile), some of it removed: none of it may show in what the snapshot restores.
    for (const [i, key] of keys.entries()) {
      at(b, key);
      b.getState(count).update({ n: -1 });
      if (i % 2 === 0) b.getListState(seen).clear();
      else b.getMapState(tags).put("later", 2);
    }
    const groups = writeKeyGroups(snapshot, ALL);
    snapshot.release();
    // Rescaled: two backends of half the key groups each, made by `other`.
    const halves = [
      { start: 0, end: 7 },
      { start: 8, end: 15 },
    ].map((range) => {
      const r = other({ keyGroupRange: range, clock: new ManualClock(0), operatorName: "contract" });
      for (let kg = range.start; kg <= range.end; kg++) {
        const bytes = groups.get(kg);
        if (bytes !== undefined) r.restoreKeyGroup(kg, new ByteReader(bytes), snapshot.states);
      }
      return r;
    });
    for (const key of keys) {
      const kg = assignToKeyGroup(key, MAX_PARALLELISM);
      const r = halves[kg <= 7 ? 0 : 1]!;
      r.setCurrentKey(key, kg);
      assert.deepEqual(r.getState(count).value(), { n: key.length }, key);
      assert.deepEqual(r.getListState(seen).get(), [key, "x"]);
      assert.equal(r.getMapState(tags).get(key), 1);
      assert.equal(r.getReducingState(sum).get(), 2);
      assert.equal(r.getAggregatingState(average).get(), 3);
      const windowed = r.getReducingState(sum);
      windowed.setCurrentNamespace(1_000);
      assert.equal(windowed.get(), 7);
      // The same handle as above (one per state): back to the void namespace for the next key.
      windowed.setCurrentNamespace(VOID_NAMESPACE);
    }
    assert.equal(halves[0]!.numKeys("count") + halves[1]!.numKeys("count"), keys.length);
  });
}
