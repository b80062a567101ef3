/**
 * Snapshots of the heap backend: what a snapshot holds is exactly the state when it was taken,
 * whatever the task (or user code) does afterwards; serialized per key group and restored, it
 * gives back the same state, TTL metadata included.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
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
  type AggregateFunction,
} from "./descriptors.ts";
import { HeapKeyedStateBackend } from "./heap-keyed-state-backend.ts";
import { VOID_NAMESPACE } from "./state-table.ts";
import type { HeapKeyedStateSnapshot } from "./heap-snapshot.ts";

const MAX_PARALLELISM = 16;

interface Counter {
  n: number;
  tags: string[];
}

/** Mutates its accumulator in place, as AggregateFunction allows. */
const counting: AggregateFunction<string, Counter, number> = {
  createAccumulator: () => ({ n: 0, tags: [] }),
  add: (tag, acc) => {
    acc.n++;
    acc.tags.push(tag);
    return acc;
  },
  getResult: (acc) => acc.n,
};

const descriptors = {
  value: new ValueStateDescriptor<{ v: number }>("value"),
  list: new ListStateDescriptor<number>("list"),
  map: new MapStateDescriptor<string, number>("map"),
  reducing: new ReducingStateDescriptor<number>("reducing", (a, b) => a + b),
  aggregating: new AggregatingStateDescriptor("aggregating", counting),
  // copy "none": the backend must still keep the snapshot frozen when `add` mutates in place.
  aggregatingNoCopy: new AggregatingStateDescriptor("aggregating-no-copy", counting, { copy: "none" }),
  ttlList: new ListStateDescriptor<number>("ttl-list", { ttl: { ttlMs: 1_000 } }),
  ttlMap: new MapStateDescriptor<string, number>("ttl-map", { ttl: { ttlMs: 1_000 } }),
  // Value-like state is captured by value (state-table.ts): with TTL refreshed by reads, and with
  // namespace cells (windows) beside the VOID cell.
  ttlValue: new ValueStateDescriptor<number>("ttl-value", { ttl: { ttlMs: 1_000, updateType: "onReadAndWrite" } }),
  windowed: new ReducingStateDescriptor<number>("windowed", (a, b) => a + b),
};

function newBackend(clock: ManualClock, start = 0, end = MAX_PARALLELISM - 1): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ keyGroupRange: { start, end }, clock });
}

function at(b: HeapKeyedStateBackend, key: Key): void {
  b.setCurrentKey(key, assignToKeyGroup(key, MAX_PARALLELISM));
}

type Op = { key: number; kind: number; arg: number };

/** Applies one random operation to every kind of state of `key`. */
function apply(b: HeapKeyedStateBackend, clock: ManualClock, { key, kind, arg }: Op): void {
  at(b, `k${key}`);
  switch (kind) {
    case 0:
      b.getState(descriptors.value).update({ v: arg });
      break;
    case 1:
      b.getState(descriptors.value).clear();
      break;
    case 2:
      b.getListState(descriptors.list).add(arg);
      break;
    case 3:
      b.getMapState(descriptors.map).put(`m${arg % 3}`, arg);
      break;
    case 4:
      b.getMapState(descriptors.map).remove(`m${arg % 3}`);
      break;
    case 5:
      b.getReducingState(descriptors.reducing).add(arg);
      break;
    case 6:
      b.getAggregatingState(descriptors.aggregating).add(`t${arg}`);
      b.getAggregatingState(descriptors.aggregatingNoCopy).add(`t${arg}`);
      break;
    case 7:
      b.getListState(descriptors.ttlList).add(arg);
      b.getMapState(descriptors.ttlMap).put(`m${arg % 2}`, arg);
      break;
    case 8:
      clock.advance(arg * 50);
      // Reads drop what expired (in place, on the live state only), and refresh a value's TTL.
      b.getListState(descriptors.ttlList).get();
      b.getMapState(descriptors.ttlMap).isEmpty();
      b.getState(descriptors.ttlValue).value();
      break;
    case 9:
      b.getState(descriptors.ttlValue).update(arg);
      break;
    case 10:
    case 11: {
      // A namespace cell (a window) and the VOID cell of the same key; clearing one or the other.
      const windowed = b.getReducingState(descriptors.windowed);
      windowed.setCurrentNamespace(arg % 3 === 0 ? VOID_NAMESPACE : `w${arg % 3}`);
      if (kind === 10) windowed.add(arg);
      else windowed.clear();
      windowed.setCurrentNamespace(VOID_NAMESPACE);
      break;
    }
    default:
      b.getListState(descriptors.list).clear();
  }
}

/** Every visible (state, key group, key, namespace, value) as a canonical sorted list. */
function contents(b: HeapKeyedStateBackend): string[] {
  const out: string[] = [];
  for (const name of b.stateNames()) {
    for (let kg = b.keyGroupRange.start; kg <= b.keyGroupRange.end; kg++) {
      for (const { key, namespace, value } of b.entries(name, kg)) {
        out.push(JSON.stringify([name, kg, key, namespace, value instanceof Map ? [...value] : value]));
      }
    }
  }
  return out.sort();
}

/** Restores `snapshot` into a new backend; `written`: bytes of key groups written (and given back) earlier. */
function roundTrip(
  snapshot: HeapKeyedStateSnapshot,
  clock: ManualClock,
  start = 0,
  end = MAX_PARALLELISM - 1,
  written: ReadonlyMap<number, ArrayBuffer> = new Map(),
): HeapKeyedStateBackend {
  const restored = newBackend(clock, start, end);
  const states = JSON.parse(JSON.stringify(snapshot.states));
  for (let kg = start; kg <= end; kg++) {
    restored.restoreKeyGroup(kg, new ByteReader(written.get(kg) ?? writeGroup(snapshot, kg)), states);
  }
  return restored;
}

function writeGroup(snapshot: HeapKeyedStateSnapshot, kg: number): ArrayBuffer {
  const out = new ByteWriter();
  snapshot.writeKeyGroup(kg, out);
  return out.finish();
}

function registerAll(b: HeapKeyedStateBackend): void {
  b.getState(descriptors.value);
  b.getListState(descriptors.list);
  b.getMapState(descriptors.map);
  b.getReducingState(descriptors.reducing);
  b.getAggregatingState(descriptors.aggregating);
  b.getAggregatingState(descriptors.aggregatingNoCopy);
  b.getListState(descriptors.ttlList);
  b.getMapState(descriptors.ttlMap);
  b.getState(descriptors.ttlValue);
  b.getReducingState(descriptors.windowed);
}

const opArb = fc.record({ key: fc.integer({ min: 0, max: 40 }), kind: fc.integer({ min: 0, max: 12 }), arg: fc.integer({ min: 0, max: 30 }) });

test("a snapshot holds the state as it was when taken, whatever happens after; restored, it is equal", () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 150 }), fc.array(opArb, { maxLength: 150 }), (before, after) => {
      const clock = new ManualClock(0);
      const live = newBackend(clock);
      for (const op of before) apply(live, clock, op);
      registerAll(live);
      const expected = contents(live);
      const snapshot = live.snapshot();
      for (const op of after) apply(live, clock, op);
      const afterContents = contents(live);
      // The snapshot was taken at the time of `expected`; the restore reads it back at the same time.
      const restored = roundTrip(snapshot, clockAtSnapshot(before));
      registerAll(restored);
      assert.deepEqual(contents(restored), expected);
      snapshot.release();
      // The live state is untouched by the snapshot and its release.
      assert.deepEqual(contents(live), afterContents);
    }),
    { numRuns: 150 },
  );
});

/** A clock at the time the `before` operations left the clock (entries() filters by it). */
function clockAtSnapshot(before: readonly Op[]): ManualClock {
  let t = 0;
  for (const op of before) if (op.kind === 8) t += op.arg * 50;
  return new ManualClock(t);
}

test("a snapshot is immune to in-place mutation of copy-none accumulators and to live writes after release", () => {
  const clock = new ManualClock(0);
  const b = newBackend(clock);
  at(b, "a");
  b.getAggregatingState(descriptors.aggregatingNoCopy).add("x");
  const snapshot = b.snapshot();
  at(b, "a");
  b.getAggregatingState(descriptors.aggregatingNoCopy).add("y");
  b.getAggregatingState(descriptors.aggregatingNoCopy).add("z");
  const restored = roundTrip(snapshot, clock);
  snapshot.release();
  at(restored, "a");
  assert.equal(restored.getAggregatingState(descriptors.aggregatingNoCopy).get(), 1);
  at(b, "a");
  assert.equal(b.getAggregatingState(descriptors.aggregatingNoCopy).get(), 3);
});

test("accumulate folds into the current (key, namespace) in place, says when it created the cell, and snapshots do not see later folds", () => {
  const clock = new ManualClock(0);
  const b = newBackend(clock);
  const sums = new ValueStateDescriptor<{ n: number }>("sums", { copy: "none" });
  const fold = { create: (v: number) => ({ n: v }), add: (acc: { n: number }, v: number) => ((acc.n += v), acc) };
  const state = b.getState(sums);
  at(b, "a");
  state.setCurrentNamespace(10);
  assert.equal(state.accumulate(1, fold), true, "created");
  assert.equal(state.accumulate(2, fold), false, "folded");
  state.setCurrentNamespace(20);
  assert.equal(state.accumulate(5, fold), true, "another namespace is another cell");
  assert.equal(state.accumulate(0, { create: () => undefined as unknown as { n: number }, add: fold.add }), false, "exists: add");
  at(b, "b");
  assert.equal(state.accumulate(0, { create: () => undefined as unknown as { n: number }, add: fold.add }), false, "create gave nothing: nothing stored");
  assert.equal(state.holdsValue(), false);
  const snapshot = b.snapshot();
  at(b, "a");
  state.setCurrentNamespace(10);
  state.accumulate(100, fold); // mutates the accumulator in place, after the snapshot
  assert.deepEqual(state.value(), { n: 103 });
  const restored = roundTrip(snapshot, clock);
  snapshot.release();
  at(restored, "a");
  const r = restored.getState(sums);
  r.setCurrentNamespace(10);
  assert.deepEqual(r.value(), { n: 3 });
  r.setCurrentNamespace(20);
  assert.deepEqual(r.value(), { n: 5 });
  at(b, "x");
  assert.throws(() => b.getState(new ValueStateDescriptor<{ n: number }>("deep")).accumulate(1, fold), /copy: "none"/);
});

test("valuesInRange gives the current key's values in step namespaces of a range, in namespace order, whatever the order the cells were made in", () => {
  const STEP = 2_000;
  const BASE = 1_700_000_000_000; // epoch-ms pane starts, as the sliding pane operator has them
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.integer({ min: -5, max: 60 }), { maxLength: 40 }), // pane indexes, in the order made
      fc.array(fc.integer({ min: -5, max: 60 }), { maxLength: 10 }), // panes cleared afterwards
      fc.integer({ min: -8, max: 62 }),
      fc.integer({ min: 0, max: 70 }),
      (made, cleared, first, count) => {
        const b = newBackend(new ManualClock(0));
        const state = b.getState(new ValueStateDescriptor<number>("panes", { copy: "none" }));
        at(b, "k");
        for (const i of made) {
          state.setCurrentNamespace(BASE + i * STEP);
          state.update(i);
        }
        state.setCurrentNamespace("fire"); // a namespace of another kind is never in a range
        state.update(-1);
        state.setCurrentNamespace(BASE + 3 * STEP + 1); // nor a number off the step grid
        state.update(-2);
        for (const i of cleared) {
          state.setCurrentNamespace(BASE + i * STEP);
          state.clear();
        }
        at(b, "other"); // another key's cells are not the current key's
        state.setCurrentNamespace(BASE + first * STEP);
        state.update(999);
        at(b, "k");
        state.setCurrentNamespace(7);
        const from = BASE + first * STEP;
        const to = from + count * STEP;
        const namespaces = [0.5, 0.5]; // scratch: what is past n is left as it was
        const values: number[] = [];
        const n = state.valuesInRange(from, to, STEP, namespaces, values);
        const live = made.filter((i) => !cleared.includes(i) && i >= first && i <= first + count).sort((x, y) => x - y);
        assert.deepEqual(namespaces.slice(0, n), live.map((i) => BASE + i * STEP));
        assert.deepEqual(values.slice(0, n), live);
        assert.equal(state.getCurrentNamespace(), 7, "the current namespace is left as it was");
      },
    ),
    { numRuns: 300 },
  );
});

test("valuesInRange as the sliding pane operator uses it: panes made in time order, each range whole, older panes cleared as their last window fires", () => {
  const STEP = 1_000;
  const BASE = 1_700_000_000_000;
  const PANES = 5; // a window of five panes
  for (const ahead of [0, 3, 70]) {
    // `ahead`: panes made beyond the window (windows waiting for a watermark): a key with more than twice a window's panes.
    const b = newBackend(new ManualClock(0));
    const state = b.getState(new ValueStateDescriptor<number>("panes", { copy: "none" }));
    at(b, "k");
    const make = (i: number): void => {
      state.setCurrentNamespace(BASE + i * STEP);
      state.update(i);
    };
    for (let i = 0; i < PANES + ahead; i++) make(i);
    for (let first = 0; first < 40; first++) {
      const namespaces: number[] = [];
      const values: number[] = [];
      const n = state.valuesInRange(BASE + first * STEP, BASE + (first + PANES - 1) * STEP, STEP, namespaces, values);
      assert.deepEqual(values.slice(0, n), Array.from({ length: PANES }, (_, i) => first + i), `ahead ${ahead}, window from pane ${first}`);
      state.setCurrentNamespace(BASE + first * STEP); // the window's first pane is in no later window
      state.clear();
      make(first + PANES + ahead);
    }
  }
});

test("overlapping snapshots each hold the state of their own moment, whatever the order of releases of groups and snapshots", () => {
  // Steps: an operation, taking a snapshot, writing one key group of a live snapshot and giving
  // it back (as a checkpoint does, group by group), or releasing one of the live snapshots.
  const stepArb = fc.oneof(
    { weight: 8, arbitrary: opArb.map((op) => ({ op })) },
    { weight: 1, arbitrary: fc.constant({ take: true as const }) },
    { weight: 3, arbitrary: fc.record({ of: fc.nat(5), group: fc.nat(MAX_PARALLELISM - 1) }) },
    { weight: 1, arbitrary: fc.nat(5).map((release) => ({ release })) },
  );
  fc.assert(
    fc.property(fc.array(stepArb, { minLength: 40, maxLength: 250 }), (steps) => {
      const clock = new ManualClock(0);
      const live = newBackend(clock);
      registerAll(live);
      const held: { snapshot: HeapKeyedStateSnapshot; expected: string[]; time: number; written: Map<number, ArrayBuffer> }[] = [];
      const check = ({ snapshot, expected, time, written }: (typeof held)[number]): void => {
        const restored = roundTrip(snapshot, new ManualClock(time), 0, MAX_PARALLELISM - 1, written);
        registerAll(restored);
        assert.deepEqual(contents(restored), expected);
      };
      for (const step of steps) {
        if ("op" in step) apply(live, clock, step.op);
        else if ("take" in step) held.push({ snapshot: live.snapshot(), expected: contents(live), time: clock.now(), written: new Map() });
        else if ("group" in step) {
          const h = held[step.of % Math.max(1, held.length)];
          if (h === undefined || h.written.has(step.group)) continue;
          h.written.set(step.group, writeGroup(h.snapshot, step.group));
          h.snapshot.releaseKeyGroup(step.group);
        } else if (held.length > 0) {
          const [released] = held.splice(step.release % held.length, 1);
          check(released!);
          released!.snapshot.release();
        }
      }
      for (const h of held) check(h);
      const before = contents(live);
      for (const h of held) h.snapshot.release();
      assert.deepEqual(contents(live), before);
    }),
    { numRuns: 150 },
  );
});

test("a key written after a released snapshot is in the next one", () => {
  const clock = new ManualClock(0);
  const b = newBackend(clock);
  const value = b.getState(descriptors.value);
  for (let i = 0; i < 1_000; i++) {
    at(b, i);
    value.update({ v: i });
  }
  const snapshot = b.snapshot();
  at(b, 1);
  value.update({ v: -1 });
  snapshot.release();
  const second = b.snapshot();
  // The key written after the first snapshot is visible in the second one.
  const restored = roundTrip(second, clock);
  second.release();
  at(restored, 1);
  assert.deepEqual(restored.getState(descriptors.value).value(), { v: -1 });
  at(restored, 2);
  assert.deepEqual(restored.getState(descriptors.value).value(), { v: 2 });
});

test("int keys that share a slot of the entry cache keep every write made while snapshots hold them", () => {
  const valueNoCopy = new ValueStateDescriptor<{ v: number }>("value-no-copy", { copy: "none" });
  // 1, 4097 and -4095 share a slot of the table's entry cache (state-table.ts); a write under a
  // live snapshot replaces the key's entry by a private copy, which the cache must follow.
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.record({ key: fc.constantFrom(1, 4097, -4095, 2), v: fc.integer() }), fc.constant("snapshot" as const)), {
        maxLength: 60,
      }),
      (steps) => {
        const clock = new ManualClock(0);
        const b = newBackend(clock);
        // copy "none": a write under a live snapshot copies the entry (copy-on-write).
        const value = b.getState(valueNoCopy);
        const model = new Map<number, number>();
        const held: { snapshot: HeapKeyedStateSnapshot; expected: Map<number, number> }[] = [];
        for (const step of steps) {
          if (step === "snapshot") {
            held.push({ snapshot: b.snapshot(), expected: new Map(model) });
            continue;
          }
          at(b, step.key);
          assert.deepEqual(value.value(), model.has(step.key) ? { v: model.get(step.key) } : undefined);
          value.update({ v: step.v });
          model.set(step.key, step.v);
        }
        for (const [key, v] of model) {
          at(b, key);
          assert.deepEqual(value.value(), { v });
        }
        for (const { snapshot, expected } of held) {
          const restored = roundTrip(snapshot, clock);
          snapshot.release();
          const restoredValue = restored.getState(valueNoCopy);
          for (const key of [1, 4097, -4095, 2]) {
            at(restored, key);
            assert.deepEqual(restoredValue.value(), expected.has(key) ? { v: expected.get(key) } : undefined);
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});

test("string and composite keys keep every write of every state while their key rows are dropped and made again, with snapshots holding them", () => {
  const valueNoCopy = new ValueStateDescriptor<{ v: number }>("value-no-copy", { copy: "none" });
  const map = new MapStateDescriptor<number, number>("map");
  // Three rows at most for nine keys (["c0", -0] is ["c0", 0]): rows are dropped (key-rows.ts, MAX_ROWS) every few records.
  const keys: Key[] = ["key-0", "key-1", "key-2", ["c0", 0], ["c1", 1], ["c0", 2], ["c0", -0], "alone", [0, 0]];
  const idOf = (key: Key): string => JSON.stringify(key);
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.record({ key: fc.nat({ max: keys.length - 1 }), v: fc.integer(), clear: fc.boolean() }),
          fc.constant("snapshot" as const),
        ),
        { maxLength: 80 },
      ),
      (steps) => {
        const clock = new ManualClock(0);
        const b = new HeapKeyedStateBackend({ keyGroupRange: { start: 0, end: MAX_PARALLELISM - 1 }, clock }, 3);
        const value = b.getState(valueNoCopy);
        const bands = b.getMapState(map);
        const model = new Map<string, number>();
        const held: { snapshot: HeapKeyedStateSnapshot; expected: Map<string, number> }[] = [];
        for (const step of steps) {
          if (step === "snapshot") {
            held.push({ snapshot: b.snapshot(), expected: new Map(model) });
            continue;
          }
          const key = keys[step.key]!;
          const id = idOf(key);
          // A fresh array per record, as key selectors return them: rows compare composite keys by value.
          b.setCurrentKey(typeof key === "string" ? key : [...(key as readonly Key[])], assignToKeyGroup(key, MAX_PARALLELISM));
          const before = model.get(id);
          assert.deepEqual(value.value(), before === undefined ? undefined : { v: before }, `value of ${id}`);
          assert.equal(bands.get(1), before, `map entry of ${id}`);
          if (step.clear) {
            value.clear();
            bands.clear();
            model.delete(id);
          } else {
            value.update({ v: step.v });
            bands.put(1, step.v);
            model.set(id, step.v);
          }
        }
        for (const { snapshot, expected } of held) {
          const restored = roundTrip(snapshot, clock);
          snapshot.release();
          const restoredValue = restored.getState(valueNoCopy);
          const restoredMap = restored.getMapState(map);
          for (const key of keys) {
            at(restored, key);
            const v = expected.get(idOf(key));
            assert.deepEqual(restoredValue.value(), v === undefined ? undefined : { v });
            assert.equal(restoredMap.get(1), v);
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});

test("restoring a key group into a backend of another range keeps only that range; a changed kind is refused", () => {
  const clock = new ManualClock(0);
  const b = newBackend(clock);
  const value = b.getState(descriptors.value);
  for (let i = 0; i < 200; i++) {
    at(b, i);
    value.update({ v: i });
  }
  const snapshot = b.snapshot();
  // Rescaled: the upper half of the key groups goes to another subtask.
  const upper = roundTrip(snapshot, clock, 8, 15);
  const expectedUpper = contents(b).filter((row) => (JSON.parse(row) as unknown[])[1]! as number >= 8);
  upper.getState(descriptors.value);
  assert.deepEqual(contents(upper), expectedUpper);
  const renamedKind = new ListStateDescriptor<number>("value");
  assert.throws(() => upper.getListState(renamedKind), /STATE_KIND_MISMATCH|value state/);
  snapshot.release();
});

test("the synchronous part of a snapshot does not grow with the number of keys (1 M keys)", () => {
  const clock = new ManualClock(0);
  const b = new HeapKeyedStateBackend({ keyGroupRange: { start: 0, end: 127 }, clock });
  const value = b.getState(new ValueStateDescriptor<{ count: number }>("count"));
  for (let i = 0; i < 1_000_000; i++) {
    b.setCurrentKey(i, assignToKeyGroup(i, 128));
    value.update({ count: i });
  }
  const times: number[] = [];
  for (let round = 0; round < 5; round++) {
    const t0 = performance.now();
    const snapshot = b.snapshot();
    times.push(performance.now() - t0);
    // Touch a few keys so some groups are copied, then release.
    for (let i = 0; i < 10; i++) {
      b.setCurrentKey(i, assignToKeyGroup(i, 128));
      value.update({ count: -i });
    }
    snapshot.release();
  }
  times.sort((x, y) => x - y);
  assert.ok(times[2]! < 5, `median synchronous snapshot time ${times[2]!.toFixed(2)} ms at 1 M keys`);
});

test("a snapshot holds windowed (namespaced) reducing and aggregating cells as they were while later adds update them", () => {
  const clock = new ManualClock(0);
  const b = newBackend(clock);
  const reducing = b.getReducingState(descriptors.reducing);
  const counter = b.getAggregatingState(descriptors.aggregatingNoCopy);
  at(b, "a");
  for (const ns of [10, 20]) {
    reducing.setCurrentNamespace(ns);
    counter.setCurrentNamespace(ns);
    reducing.add(ns);
    counter.add(`w${ns}`);
  }
  const snapshot = b.snapshot();
  // Adds to existing cells of the same key (each read returns the cell that is then written).
  at(b, "a");
  for (const ns of [10, 20, 10]) {
    reducing.setCurrentNamespace(ns);
    counter.setCurrentNamespace(ns);
    reducing.add(1);
    counter.add("later");
  }
  const restored = roundTrip(snapshot, clock);
  snapshot.release();
  at(restored, "a");
  const restoredReducing = restored.getReducingState(descriptors.reducing);
  const restoredCounter = restored.getAggregatingState(descriptors.aggregatingNoCopy);
  for (const ns of [10, 20]) {
    restoredReducing.setCurrentNamespace(ns);
    restoredCounter.setCurrentNamespace(ns);
    assert.equal(restoredReducing.get(), ns);
    assert.equal(restoredCounter.get(), 1);
  }
  at(b, "a");
  reducing.setCurrentNamespace(10);
  counter.setCurrentNamespace(10);
  assert.equal(reducing.get(), 12);
  assert.equal(counter.get(), 3);
});
