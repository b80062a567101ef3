import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, ValueStateDescriptor } from "../../state/descriptors.ts";
import { diskStateBackend } from "../../state/disk-keyed-state-backend.ts";
import type { KeyedProcessContext } from "../functions.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

interface Rec {
  readonly key: string;
  readonly step: (ctx: KeyedProcessContext<string>) => void;
}

/** A keyed process function that runs each record's own step: the steps are the test. */
function harness(options: { verifyCopyNone?: boolean } = {}) {
  return OperatorTestHarness.forKeyedProcessFunction<string, Rec, never>({ processElement: (r, ctx) => r.step(ctx) }, (r) => r.key, options);
}

const counter = new ValueStateDescriptor<{ n: number }>("counter", { copy: "none" });

/** A step that writes { n: 1 } to the state and then changes that object in place to { n: 2 }. */
function writeThenChange(state: ValueStateDescriptor<{ n: number }>): Rec["step"] {
  return (ctx) => {
    const v = { n: 1 };
    ctx.getState(state).update(v);
    v.n = 2;
  };
}

/** Asserts `run` fails with STATE_MUTATED_IN_PLACE naming the state and the key, found as `found` says. */
function assertMutated(run: () => unknown, state: string, key: string, found: RegExp): void {
  assert.throws(run, (e: unknown) => {
    const err = (e as { cause?: unknown }).cause ?? e;
    assert.equal((err as { code?: string }).code, "STATE_MUTATED_IN_PLACE", String(e));
    const message = (err as Error).message;
    assert.match(message, new RegExp(`state '${state}'`));
    assert.match(message, new RegExp(`key "${key}"`));
    assert.match(message, found);
    return true;
  });
}

test("a value changed in place after update() fails at the next access of its key, naming the state and the key", () => {
  const h = harness();
  // Changed after the write: the heap backend would see it, the disk backend would not.
  h.processElement({ key: "a", step: writeThenChange(counter) });
  // Another key is not affected.
  h.processElement({ key: "b", step: (ctx) => assert.equal(ctx.getState(counter).value(), undefined) });
  assertMutated(() => h.processElement({ key: "a", step: (ctx) => ctx.getState(counter).value() }), "counter", "a", /next access/);
});

test("a value read and changed in place without a write fails; read, changed and written back does not", () => {
  const h = harness();
  for (let i = 0; i < 5; i++) {
    h.processElement({
      key: "a",
      step: (ctx) => {
        const state = ctx.getState(counter);
        const v = state.value() ?? { n: 0 };
        v.n++;
        state.update(v);
      },
    });
  }
  h.processElement({ key: "a", step: (ctx) => assert.deepEqual(ctx.getState(counter).value(), { n: 5 }) });
  // Read, changed, replaced by another object: no backend keeps the change, so it is fine.
  h.processElement({
    key: "a",
    step: (ctx) => {
      const state = ctx.getState(counter);
      const v = state.value()!;
      v.n = 100;
      state.update({ n: 6 });
    },
  });
  h.processElement({ key: "a", step: (ctx) => void ctx.getState(counter).value()!.n++ });
  assertMutated(() => h.processElement({ key: "a", step: (ctx) => ctx.getState(counter).value() }), "counter", "a", /next access/);
});

test("a change never read again fails at the next checkpoint and at the end of the input", async () => {
  const make = () => {
    const h = harness();
    h.processElement({ key: "k", step: (ctx) => void ctx.getState(counter).update({ n: 1 }) });
    h.processElement({ key: "k", step: (ctx) => void ctx.getState(counter).value()!.n++ });
    return h;
  };
  await assert.rejects(
    async () => make().snapshot(),
    (e: Error) => /STATE_MUTATED_IN_PLACE|changed in place/.test(`${(e as { code?: string }).code} ${e.message}`) && /at a checkpoint/.test(e.message),
  );
  assertMutated(() => make().endInput(), "counter", "k", /end of the input/);
  // A clean run snapshots and ends without complaint.
  const clean = harness();
  clean.processElement({ key: "k", step: (ctx) => void ctx.getState(counter).update({ n: 1 }) });
  await clean.snapshot();
  clean.endInput();
  clean.close();
});

test("list state: the list handed out, and elements added, are checked; adding after a get() is fine", () => {
  const list = new ListStateDescriptor<{ id: number }>("pending", { copy: "none" });
  const h = harness();
  h.processElement({
    key: "a",
    step: (ctx) => {
      const state = ctx.getListState(list);
      state.add({ id: 1 });
      state.get();
      state.add({ id: 2 }); // may extend the very array get() handed out: allowed
      state.addAll([{ id: 3 }]);
      assert.deepEqual(state.get().map((e) => e.id), [1, 2, 3]);
    },
  });
  h.processElement({ key: "a", step: (ctx) => void ctx.getListState(list).get().push({ id: 4 }) });
  assertMutated(() => h.processElement({ key: "a", step: (ctx) => ctx.getListState(list).add({ id: 5 }) }), "pending", "a", /next access/);

  const h2 = harness();
  h2.processElement({
    key: "b",
    step: (ctx) => {
      const e = { id: 1 };
      ctx.getListState(list).add(e);
      e.id = 9;
    },
  });
  assertMutated(() => h2.processElement({ key: "b", step: (ctx) => ctx.getListState(list).get() }), "pending", "b", /next access/);
  // update() replaces the list: the changed array it was built from is not the state's any more.
  const h3 = harness();
  h3.processElement({
    key: "c",
    step: (ctx) => {
      const state = ctx.getListState(list);
      state.add({ id: 1 });
      const all = state.get();
      all.push({ id: 2 });
      state.update(all);
    },
  });
  h3.processElement({ key: "c", step: (ctx) => assert.deepEqual(ctx.getListState(list).get(), [{ id: 1 }, { id: 2 }]) });
  h3.endInput();
});

test("map state: values put, got or iterated are checked per map key", () => {
  const map = new MapStateDescriptor<number, { total: number }>("by-minute", { copy: "none" });
  const h = harness();
  h.processElement({
    key: "a",
    step: (ctx) => {
      const state = ctx.getMapState(map);
      const v = { total: 1 };
      state.put(1, v);
      state.put(2, { total: 2 });
      v.total = 10;
      assert.equal(state.get(2)!.total, 2, "another map key is not checked by this get");
    },
  });
  assertMutated(() => h.processElement({ key: "a", step: (ctx) => ctx.getMapState(map).get(1) }), "by-minute", "a", /next access/);

  const h2 = harness();
  h2.processElement({ key: "a", step: (ctx) => ctx.getMapState(map).putAll([[1, { total: 1 }], [2, { total: 2 }]]) });
  h2.processElement({
    key: "a",
    step: (ctx) => {
      for (const v of ctx.getMapState(map).values()) if (v.total === 2) v.total = 20;
    },
  });
  assertMutated(() => h2.processElement({ key: "a", step: (ctx) => [...ctx.getMapState(map).entries()] }), "by-minute", "a", /next access/);
  // remove() forgets the value it held.
  const h3 = harness();
  h3.processElement({
    key: "a",
    step: (ctx) => {
      const state = ctx.getMapState(map);
      const v = { total: 1 };
      state.put(1, v);
      state.remove(1);
      v.total = 5;
    },
  });
  h3.endInput();
});

test("reducing state: a reduce function may change the accumulator in place; user code may not", () => {
  const sum = new ReducingStateDescriptor<{ s: number }>(
    "sum",
    (acc, v) => {
      acc.s += v.s;
      return acc;
    },
    { copy: "none" },
  );
  const h = harness();
  for (let i = 1; i <= 3; i++) h.processElement({ key: "a", step: (ctx) => ctx.getReducingState(sum).add({ s: i }) });
  h.processElement({ key: "a", step: (ctx) => assert.equal(ctx.getReducingState(sum).get()!.s, 6) });
  h.processElement({ key: "a", step: (ctx) => void (ctx.getReducingState(sum).get()!.s = 0) });
  assertMutated(() => h.processElement({ key: "a", step: (ctx) => ctx.getReducingState(sum).add({ s: 1 }) }), "sum", "a", /next access/);
});

test("states that copy are not checked, and with the check off a change in place goes through (the heap backend keeps it)", () => {
  const copied = new ValueStateDescriptor<{ n: number }>("copied");
  const h = harness();
  h.processElement({ key: "a", step: writeThenChange(copied) });
  h.processElement({ key: "a", step: (ctx) => assert.deepEqual(ctx.getState(copied).value(), { n: 1 }) });
  h.endInput();

  const off = harness({ verifyCopyNone: false });
  off.processElement({ key: "a", step: writeThenChange(counter) });
  off.processElement({ key: "a", step: (ctx) => assert.deepEqual(ctx.getState(counter).value(), { n: 2 }) });
  off.endInput();
});

test("on the disk backend, where the change would be lost, the same mistake fails the same way", () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-copy-none-"));
  try {
    const h = OperatorTestHarness.forKeyedProcessFunction<string, Rec, never>({ processElement: (r, ctx) => r.step(ctx) }, (r) => r.key, {
      stateBackend: diskStateBackend({ dir, cacheSize: 1 }),
    });
    h.processElement({ key: "a", step: (ctx) => void ctx.getState(counter).update({ n: 1 }) });
    h.processElement({ key: "a", step: (ctx) => void ctx.getState(counter).value()!.n++ });
    assertMutated(() => h.processElement({ key: "a", step: (ctx) => ctx.getState(counter).value() }), "counter", "a", /next access/);
    h.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("with the check on, a descriptor that does not match its state's is refused as without it", () => {
  const h = harness();
  h.processElement({ key: "a", step: (ctx) => void ctx.getState(counter).update({ n: 1 }) });
  const withTtl = new ValueStateDescriptor<{ n: number }>("counter", { copy: "none", ttl: { ttlMs: 1_000 } });
  assert.throws(
    () => h.processElement({ key: "a", step: (ctx) => ctx.getState(withTtl).value() }),
    (e: unknown) => ((e as { cause?: { code?: string } }).cause?.code ?? (e as { code?: string }).code) === "STATE_DESCRIPTOR_MISMATCH",
  );
});
