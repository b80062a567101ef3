/**
 * The value cursor (reads and writes by key, for operators that own their state) against the
 * current-key handle as the oracle: the same values, the same stored entries, and snapshots that
 * hold the state of their moment while the cursor goes on writing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { ManualClock } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import { assignToKeyGroup } from "../core/key-group.ts";
import type { Key } from "../core/key.ts";
import { ValueStateDescriptor } from "./descriptors.ts";
import { HeapKeyedStateBackend } from "./heap-keyed-state-backend.ts";
import type { HeapKeyedStateSnapshot } from "./heap-snapshot.ts";

const MAX_PARALLELISM = 16;
const descriptor = new ValueStateDescriptor<{ v: number }>("acc", { copy: "none" });
/** Keys that look alike but differ (1 and "1"), and composite ones. */
const KEYS: readonly Key[] = [1, "1", 2, "b", ["b", 1], ["b", "1"], 3.5, 10n];

function newBackend(): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ keyGroupRange: { start: 0, end: MAX_PARALLELISM - 1 }, clock: new ManualClock(0) });
}

const kg = (key: Key): number => assignToKeyGroup(key, MAX_PARALLELISM);

/** Every stored (key, value) of the state, in a stable order. */
function contents(b: HeapKeyedStateBackend): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (let g = 0; g < MAX_PARALLELISM; g++) {
    for (const e of b.entries(descriptor.name, g)) out.push([JSON.stringify(e.key, (_, v) => (typeof v === "bigint" ? `${v}n` : v)), e.value]);
  }
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function roundTrip(snapshot: HeapKeyedStateSnapshot): HeapKeyedStateBackend {
  const restored = newBackend();
  const states = JSON.parse(JSON.stringify(snapshot.states));
  for (let g = 0; g < MAX_PARALLELISM; g++) {
    const out = new ByteWriter();
    snapshot.writeKeyGroup(g, out);
    restored.restoreKeyGroup(g, new ByteReader(out.finish()), states);
  }
  restored.getState(descriptor);
  return restored;
}

/** A write of `value` (undefined: clear) for KEYS[key], through the cursor or through the handle. */
const opArb = fc.record({
  key: fc.integer({ min: 0, max: KEYS.length - 1 }),
  value: fc.option(fc.integer({ min: 0, max: 99 }), { nil: undefined }),
  viaCursor: fc.boolean(),
  snapshot: fc.boolean(),
});

test("the cursor reads and writes what the current-key handle sees, and never moves the current key", () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 120 }), (ops) => {
      const b = newBackend();
      const cursor = b.getVoidValueCursor(descriptor);
      const handle = b.getState(descriptor);
      const model = new Map<number, number>();
      // The handles' current key stays where the last handle write put it, so the cursor also
      // writes keys the handles have just read (and cached) as current.
      let current: Key = "current";
      b.setCurrentKey(current, kg(current));
      for (const op of ops) {
        const key = KEYS[op.key]!;
        const expected = model.get(op.key);
        if (op.viaCursor) {
          assert.deepEqual(cursor.seek(key, kg(key)), expected === undefined ? undefined : { v: expected });
          cursor.set(op.value === undefined ? undefined : { v: op.value });
          assert.deepEqual(b.getCurrentKey(), current);
          const own = model.get(KEYS.indexOf(current));
          assert.deepEqual(handle.value(), current === key ? (op.value === undefined ? undefined : { v: op.value }) : own === undefined ? undefined : { v: own });
        } else {
          current = key;
          b.setCurrentKey(key, kg(key));
          assert.deepEqual(handle.value(), expected === undefined ? undefined : { v: expected });
          if (op.value === undefined) handle.clear();
          else handle.update({ v: op.value });
        }
        if (op.value === undefined) model.delete(op.key);
        else model.set(op.key, op.value);
        // A cleared key leaves no entry behind, whichever path cleared it.
        assert.equal(b.numKeys(descriptor.name), model.size);
      }
      for (const [i, v] of model) {
        const key = KEYS[i]!;
        b.setCurrentKey(key, kg(key));
        assert.deepEqual(handle.value(), { v });
      }
    }),
    { numRuns: 200 },
  );
});

test("a snapshot taken between cursor writes holds the state of its moment; restored, it is equal", () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 80 }), fc.array(opArb, { maxLength: 80 }), (before, after) => {
      const b = newBackend();
      const cursor = b.getVoidValueCursor(descriptor);
      const write = (op: { key: number; value: number | undefined }): void => {
        const key = KEYS[op.key]!;
        const old = cursor.seek(key, kg(key));
        // copy "none" allows the owner to mutate a stored value in place: the snapshot must not see it.
        if (old !== undefined) old.v = -1;
        cursor.set(op.value === undefined ? undefined : { v: op.value });
      };
      for (const op of before) write(op);
      const expected = contents(b);
      const snapshot = b.snapshot();
      for (const op of after) write(op);
      const live = contents(b);
      assert.deepEqual(contents(roundTrip(snapshot)), expected);
      snapshot.release();
      assert.deepEqual(contents(b), live);
    }),
    { numRuns: 150 },
  );
});

test("a cursor is refused for states with TTL or copied values, and rejects key groups outside the range", () => {
  const b = newBackend();
  assert.throws(() => b.getVoidValueCursor(new ValueStateDescriptor<number>("deep")), { code: "STATE_CURSOR_UNSUPPORTED" });
  assert.throws(() => b.getVoidValueCursor(new ValueStateDescriptor<number>("ttl", { copy: "none", ttl: { ttlMs: 10 } })), {
    code: "STATE_CURSOR_UNSUPPORTED",
  });
  const cursor = b.getVoidValueCursor(descriptor);
  for (const bad of [-1, MAX_PARALLELISM, 1.5]) {
    assert.throws(
      () => cursor.seek("k", bad),
      (e: unknown) => e instanceof EddyError && e.code === "KEY_GROUP_OUT_OF_RANGE" && e.domain === "internal",
    );
  }
});
