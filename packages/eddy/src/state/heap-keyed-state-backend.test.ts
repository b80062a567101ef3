import { test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "./descriptors.ts";
import type { AggregateFunction } from "./descriptors.ts";
import { HeapKeyedStateBackend, VOID_NAMESPACE } from "./heap-keyed-state-backend.ts";

interface Rec {
  name: string;
  tags: string[];
}

const rec = (name: string, ...tags: string[]): Rec => ({ name, tags });

function backend(start = 0, end = 127): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ keyGroupRange: { start, end }, clock: new ManualClock(0) });
}

/** A deterministic stand-in for the key-group assignment, good enough for placement tests. */
function kgOf(key: Key, start = 0, end = 127): number {
  const s = String(key);
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return start + (Math.abs(h) % (end - start + 1));
}

function at(b: HeapKeyedStateBackend, key: Key): void {
  b.setCurrentKey(key, kgOf(key, b.keyGroupRange.start, b.keyGroupRange.end));
}

const collect: AggregateFunction<string, { items: string[] }, string[]> = {
  createAccumulator: () => ({ items: [] }),
  add(value, acc) {
    acc.items.push(value);
    return acc;
  },
  getResult: (acc) => acc.items,
};

test("value state is isolated between keys and between namespaces", () => {
  const b = backend();
  const s = b.getState(new ValueStateDescriptor<number>("count"));
  at(b, "a");
  s.update(1);
  at(b, "b");
  assert.equal(s.value(), undefined);
  s.update(2);
  s.setCurrentNamespace("w1");
  assert.equal(s.value(), undefined);
  s.update(20);
  s.setCurrentNamespace(VOID_NAMESPACE);
  assert.equal(s.value(), 2);
  at(b, "a");
  assert.equal(s.value(), 1);
  at(b, ["a", 1]);
  assert.equal(s.value(), undefined);
  at(b, "b");
  s.setCurrentNamespace("w1");
  assert.equal(s.value(), 20);
  assert.equal(b.getValueForKey("count", "b", kgOf("b"), "w1"), 20);
  assert.equal(b.getValueForKey("count", "b", kgOf("b")), 2);
  assert.equal(b.getCurrentKey(), "b");
  assert.equal(b.numKeys("count"), 2);
});

test("every state kind is isolated between keys", () => {
  const b = backend();
  const list = b.getListState(new ListStateDescriptor<number>("l"));
  const map = b.getMapState(new MapStateDescriptor<string, number>("m"));
  const red = b.getReducingState(new ReducingStateDescriptor<number>("r", (x, y) => x + y));
  const agg = b.getAggregatingState(new AggregatingStateDescriptor("g", collect));
  at(b, 1);
  list.add(1);
  map.put("x", 1);
  red.add(1);
  agg.add("one");
  at(b, 2);
  assert.deepEqual(list.get(), []);
  assert.equal(map.isEmpty(), true);
  assert.equal(red.get(), undefined);
  assert.equal(agg.get(), undefined);
  list.addAll([2, 3]);
  red.add(2);
  red.add(3);
  at(b, 1);
  assert.deepEqual(list.get(), [1]);
  assert.deepEqual([...map.entries()], [["x", 1]]);
  assert.equal(red.get(), 1);
  assert.deepEqual(agg.get(), ["one"]);
  at(b, 2);
  assert.deepEqual(list.get(), [2, 3]);
  assert.equal(red.get(), 5);
});

test("value state: neither the written nor the read object aliases what state holds", () => {
  const b = backend();
  const s = b.getState(new ValueStateDescriptor<Rec>("rec"));
  at(b, "k");
  const written: Rec = { name: "a", tags: ["x"] };
  s.update(written);
  written.name = "changed";
  written.tags.push("y");
  const read = s.value()!;
  assert.deepEqual(read, { name: "a", tags: ["x"] });
  read.tags.push("z");
  read.name = "mutated";
  assert.deepEqual(s.value(), { name: "a", tags: ["x"] });
});

test("copy: 'none' stores and returns the very object", () => {
  const b = backend();
  const s = b.getState(new ValueStateDescriptor<Rec>("rec", { copy: "none" }));
  at(b, "k");
  const written: Rec = rec("a");
  s.update(written);
  assert.equal(s.value(), written);
});

test("list state: elements are copied in and out; get returns a fresh array", () => {
  const b = backend();
  const s = b.getListState(new ListStateDescriptor<Rec>("recs"));
  at(b, "k");
  const one: Rec = rec("one");
  const two: Rec = rec("two");
  s.add(one);
  s.addAll([two]);
  one.tags.push("x");
  two.name = "changed";
  const got = s.get();
  assert.deepEqual(got, [rec("one"), rec("two")]);
  got[0]!.tags.push("y");
  got.push(rec("three"));
  assert.deepEqual(s.get(), [rec("one"), rec("two")]);
  const replacement = [rec("r")];
  s.update(replacement);
  replacement[0]!.name = "changed";
  assert.deepEqual(s.get(), [rec("r")]);
  s.update([]);
  assert.deepEqual(s.get(), []);
  assert.equal(b.numKeys("recs"), 0);
});

test("map state: values are copied in and out; iteration yields copies", () => {
  const b = backend();
  const s = b.getMapState(new MapStateDescriptor<string, Rec>("m"));
  at(b, "k");
  const v: Rec = rec("a");
  s.put("x", v);
  s.putAll([["y", v]]);
  v.tags.push("mutated");
  assert.deepEqual(s.get("x"), rec("a"));
  s.get("x")!.tags.push("1");
  for (const [, value] of s.entries()) value.tags.push("2");
  for (const value of s.values()) value.tags.push("3");
  assert.deepEqual(s.get("x"), rec("a"));
  assert.deepEqual(s.get("y"), rec("a"));
  assert.deepEqual([...s.keys()], ["x", "y"]);
  assert.equal(s.contains("x"), true);
  s.remove("x");
  s.remove("absent");
  assert.equal(s.contains("x"), false);
  s.remove("y");
  assert.equal(s.isEmpty(), true);
  assert.equal(b.numKeys("m"), 0);
});

test("map state rejects object keys with a clear error", () => {
  const b = backend();
  const s = b.getMapState(new MapStateDescriptor<unknown, number>("m"));
  at(b, "k");
  assert.throws(
    () => s.put({ id: 1 }, 1),
    (e: unknown) => e instanceof EddyError && e.code === "INVALID_MAP_STATE_KEY" && e.domain === "user",
  );
  assert.equal(b.numKeys("m"), 0);
  s.put(1n, 1);
  s.put(true, 2);
  assert.equal(s.get(1n), 1);
});

test("reducing state: the reduce function sees copies, and results do not alias inputs", () => {
  const b = backend();
  // A reducer that mutates its first argument and may return its second.
  const s = b.getReducingState(
    new ReducingStateDescriptor<Rec>("r", (a, c) => {
      a.tags.push(...c.tags);
      return c.tags.length > 1 ? c : a;
    }),
  );
  at(b, "k");
  const first: Rec = { name: "first", tags: ["a"] };
  s.add(first);
  first.tags.push("mutated");
  const before = s.get()!;
  before.tags.push("mutated too");
  const second: Rec = { name: "second", tags: ["b", "c"] };
  s.add(second); // returns (a copy of) `second`
  second.tags.push("mutated");
  assert.deepEqual(s.get(), { name: "second", tags: ["b", "c"] });
  s.add({ name: "third", tags: ["d"] });
  assert.deepEqual(s.get(), { name: "second", tags: ["b", "c", "d"] });
});

test("aggregating state: the accumulator is never aliased by values, results or add()", () => {
  const b = backend();
  const s = b.getAggregatingState(new AggregatingStateDescriptor("g", collect));
  at(b, "k");
  s.add("a");
  const result = s.get()!;
  result.push("mutated"); // getResult returns the accumulator's own array
  assert.deepEqual(s.get(), ["a"]);
  s.add("b");
  assert.deepEqual(s.get(), ["a", "b"]);
  assert.deepEqual(b.getValueForKey("g", "k", kgOf("k")), ["a", "b"]);
  const [entry] = [...b.entries("g", kgOf("k"))];
  assert.deepEqual(entry, { key: "k", namespace: VOID_NAMESPACE, value: { items: ["a", "b"] } });

  const objects = b.getAggregatingState(
    new AggregatingStateDescriptor<Rec, { all: Rec[] }, number>("objs", {
      createAccumulator: () => ({ all: [] }),
      add: (v, acc) => {
        acc.all.push(v);
        return acc;
      },
      getResult: (acc) => acc.all.length,
    }),
  );
  const v: Rec = rec("x");
  objects.add(v);
  v.tags.push("mutated");
  const [stored] = [...b.entries("objs", kgOf("k"))];
  assert.deepEqual(stored!.value, { all: [rec("x")] });
});

test("aggregating state: an input not copied for a primitive accumulator is copied if add() keeps it", () => {
  const b = backend();
  const counts = b.getAggregatingState(
    new AggregatingStateDescriptor<Rec, number, number>("count", { createAccumulator: () => 0, add: (_v, n) => n + 1, getResult: (n) => n }),
  );
  at(b, "k");
  counts.add(rec("x"));
  counts.add(rec("y"));
  assert.equal(counts.get(), 2);
  // An accumulator that starts as a primitive and becomes an object holding the input.
  const kept = b.getAggregatingState(
    new AggregatingStateDescriptor<Rec, Rec | null, string>("kept", {
      createAccumulator: () => null,
      add: (v) => v,
      getResult: (acc) => acc?.tags.join(",") ?? "",
    }),
  );
  const v = rec("x");
  kept.add(v);
  v.tags.push("mutated");
  const [stored] = [...b.entries("kept", kgOf("k"))];
  assert.deepEqual(stored!.value, rec("x"));
});

test("a throwing user function leaves no empty entry behind", () => {
  const b = backend();
  const s = b.getReducingState(
    new ReducingStateDescriptor<number>("r", () => {
      throw new Error("boom");
    }),
  );
  at(b, "k");
  s.add(1);
  assert.throws(() => s.add(2), /boom/);
  assert.equal(s.get(), 1);
  const agg = b.getAggregatingState(
    new AggregatingStateDescriptor<number, number, number>("g", {
      createAccumulator: () => 0,
      add: () => {
        throw new Error("boom");
      },
      getResult: (a) => a,
    }),
  );
  assert.throws(() => agg.add(1), /boom/);
  assert.equal(b.numKeys("g"), 0);
});

test("clearing removes the entry, so cleared keys use no memory", () => {
  const b = backend();
  const s = b.getState(new ValueStateDescriptor<number>("v"));
  const l = b.getListState(new ListStateDescriptor<number>("l"));
  for (let i = 0; i < 100; i++) {
    at(b, i);
    s.update(i);
    l.add(i);
    s.setCurrentNamespace(1);
    s.update(i);
    s.setCurrentNamespace(VOID_NAMESPACE);
  }
  assert.equal(b.numKeys("v"), 100);
  for (let i = 0; i < 100; i++) {
    at(b, i);
    s.clear();
    assert.equal(b.numKeys("v"), 100 - i, "the namespace-1 value still holds the key");
    s.setCurrentNamespace(1);
    s.update(undefined as unknown as number); // update(undefined) clears
    s.setCurrentNamespace(VOID_NAMESPACE);
    l.clear();
  }
  assert.equal(b.numKeys("v"), 0);
  assert.equal(b.numKeys("l"), 0);
});

test("asking for an existing name with another kind or other options is an error", () => {
  const b = backend();
  const first = b.getState(new ValueStateDescriptor<number>("s"));
  assert.equal(b.getState(new ValueStateDescriptor<number>("s")), first);
  assert.throws(
    () => b.getListState(new ListStateDescriptor<number>("s")),
    (e: unknown) => e instanceof EddyError && e.code === "STATE_KIND_MISMATCH" && /'s' is a value state/.test(e.message),
  );
  assert.throws(
    () => b.getState(new ValueStateDescriptor<number>("s", { ttl: { ttlMs: 5 } })),
    (e: unknown) => e instanceof EddyError && e.code === "STATE_DESCRIPTOR_MISMATCH",
  );
  assert.deepEqual(b.stateNames(), ["s"]);
});

test("a descriptor asked for again gets its state's handle, also after more descriptors than the backend remembers", () => {
  const b = backend();
  const descriptors = Array.from({ length: 12 }, (_, i) => new ValueStateDescriptor<number>(`v${i}`));
  const maps = Array.from({ length: 3 }, (_, i) => new MapStateDescriptor<number, number>(`m${i}`));
  const handles = new Map<object, unknown>();
  for (let round = 0; round < 3; round++) {
    for (const d of descriptors) {
      const h = b.getState(d);
      if (round === 0) handles.set(d, h);
      else assert.equal(h, handles.get(d), d.name);
    }
    for (const d of maps) {
      const h = b.getMapState(d);
      if (round === 0) handles.set(d, h);
      else assert.equal(h, handles.get(d), d.name);
    }
  }
  // A second descriptor object with the same name shares the state; with other options it is refused.
  b.setCurrentKey("k", 0);
  b.getState(descriptors[3]!).update(7);
  assert.equal(b.getState(new ValueStateDescriptor<number>("v3")).value(), 7);
  assert.throws(
    () => b.getState(new ValueStateDescriptor<number>("v3", { copy: "none" })),
    (e: unknown) => e instanceof EddyError && e.code === "STATE_DESCRIPTOR_MISMATCH",
  );
  assert.equal(b.stateNames().length, 15);
});

test("descriptors validate names and TTL", () => {
  const bad = (f: () => unknown, re: RegExp): void =>
    assert.throws(f, (e: unknown) => e instanceof EddyError && e.code === "INVALID_STATE_DESCRIPTOR" && re.test(e.message));
  bad(() => new ValueStateDescriptor(""), /non-empty string/);
  bad(() => new ListStateDescriptor("x", { ttl: { ttlMs: 0 } }), /positive finite/);
  bad(() => new MapStateDescriptor("x", { ttl: { ttlMs: Number.POSITIVE_INFINITY } }), /positive finite/);
  bad(() => new ValueStateDescriptor("x", { ttl: { ttlMs: 1, updateType: "never" as "onReadAndWrite" } }), /updateType/);
  bad(() => new ReducingStateDescriptor("x", undefined as unknown as (a: number, b: number) => number), /reduce/);
  bad(() => new AggregatingStateDescriptor("x", {} as AggregateFunction<number, number, number>), /createAccumulator/);
  const d = new ValueStateDescriptor<number>("ok", { ttl: { ttlMs: 10 } });
  assert.deepEqual(d.ttl, {
    ttlMs: 10,
    updateType: "onCreateAndWrite",
    visibility: "neverReturnExpired",
    cleanupFullSnapshot: true,
    cleanupEntriesPerAccess: 2,
    cleanupEveryRecord: false,
    cleanupInBackground: true,
  });
  bad(() => new ValueStateDescriptor("x", { ttl: { ttlMs: 1, visibility: "sometimes" as "neverReturnExpired" } }), /visibility/);
  bad(() => new ValueStateDescriptor("x", { ttl: { ttlMs: 1, cleanup: { incremental: { entriesPerAccess: 0 } } } }), /entriesPerAccess/);
  bad(() => new ValueStateDescriptor("x", { ttl: { ttlMs: 1, cleanup: { fullSnapshot: "yes" as unknown as boolean } } }), /fullSnapshot/);
  assert.equal(d.kind, "value");
  assert.equal(d.copy, "deep");
});

test("setCurrentKey rejects a key group outside the range as an internal error", () => {
  const b = backend(10, 19);
  for (const kg of [9, 20, 10.5, Number.NaN]) {
    assert.throws(
      () => b.setCurrentKey("k", kg),
      (e: unknown) => e instanceof EddyError && e.code === "KEY_GROUP_OUT_OF_RANGE" && e.domain === "internal",
    );
  }
  const s = b.getState(new ValueStateDescriptor<number>("v"));
  assert.throws(() => s.value(), (e: unknown) => e instanceof EddyError && e.code === "NO_CURRENT_KEY");
});

test("entries(name, kg) yields exactly the keys of that key group", () => {
  const range = { start: 16, end: 31 };
  const b = backend(range.start, range.end);
  const s = b.getState(new ValueStateDescriptor<number>("v"));
  const m = b.getMapState(new MapStateDescriptor<string, number>("m"));
  const keys = Array.from({ length: 200 }, (_, i) => `key-${i}`);
  for (const k of keys) {
    at(b, k);
    s.update(k.length);
    m.put("a", 1);
  }
  m.setCurrentNamespace("w");
  m.put("b", 2);
  let seen = 0;
  for (let kg = range.start; kg <= range.end; kg++) {
    const expected = keys.filter((k) => kgOf(k, range.start, range.end) === kg).sort();
    const got = [...b.entries("v", kg)].map((e) => e.key as string).sort();
    assert.deepEqual(got, expected);
    seen += got.length;
    for (const e of b.entries("m", kg)) assert.ok(e.value instanceof Map);
  }
  assert.equal(seen, keys.length);
  const last = keys[keys.length - 1]!;
  const mEntries = [...b.entries("m", kgOf(last, range.start, range.end))].filter((e) => e.key === last);
  assert.deepEqual(
    mEntries.map((e) => [e.namespace, [...(e.value as Map<string, number>)]]),
    [
      [VOID_NAMESPACE, [["a", 1]]],
      ["w", [["b", 2]]],
    ],
  );
  assert.throws(() => [...b.entries("v", 15)], (e: unknown) => e instanceof EddyError && e.code === "KEY_GROUP_OUT_OF_RANGE");
  assert.throws(() => b.numKeys("nope"), (e: unknown) => e instanceof EddyError && e.code === "UNKNOWN_STATE");
});

test("measures setCurrentKey + value() + update() for numbers over 1000 keys", (t) => {
  const b = backend();
  const s = b.getState(new ValueStateDescriptor<number>("count"));
  const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
  const groups = keys.map((k) => kgOf(k));
  const step = (): void => {
    for (let i = 0; i < 1000; i++) {
      b.setCurrentKey(keys[i]!, groups[i]!);
      s.update((s.value() ?? 0) + 1);
    }
  };
  for (let r = 0; r < 200; r++) step(); // warm up
  const rounds = 2000;
  const start = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) step();
  const ns = Number(process.hrtime.bigint() - start) / (rounds * 1000);
  t.diagnostic(`setCurrentKey + value() + update(): ${ns.toFixed(1)} ns per record`);
  b.setCurrentKey(keys[0]!, groups[0]!);
  assert.equal(s.value(), rounds + 200);
  assert.ok(ns < 5_000);
});
