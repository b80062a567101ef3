import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { ValueStateDescriptor } from "../../state/descriptors.ts";
import { heapStateBackend } from "../../state/heap-keyed-state-backend.ts";
import type { KeyedStateBackend } from "../../state/keyed-state-backend.ts";
import { TTL_BACKGROUND_CLEANUP_INTERVAL_MS } from "./keyed-state-and-timers.ts";
import { assignToKeyGroup } from "../../core/key-group.ts";
import type { Key } from "../../core/key.ts";

/** A keyed process function writing one TTL'd value per key; the harness's backend, to count keys. */
function harnessWith(background: boolean): { h: OperatorTestHarness<number, never>; backend: () => KeyedStateBackend } {
  let backend: KeyedStateBackend | undefined;
  const seen = new ValueStateDescriptor<number>("seen", { ttl: { ttlMs: 100, cleanup: { incremental: false, background } } });
  const h = OperatorTestHarness.forKeyedProcessFunction<number, number, never>(
    {
      processElement(n, ctx) {
        ctx.getState(seen).update(n);
      },
    },
    (n) => n,
    { stateBackend: (options) => (backend = heapStateBackend(options)) },
  );
  return { h, backend: () => backend! };
}

test("background TTL cleanup removes expired keys nobody touches again, between records, every interval of processing time", () => {
  const { h, backend } = harnessWith(true);
  for (let k = 0; k < 50; k++) h.processElement(k);
  assert.equal(backend().numKeys("seen"), 50);
  h.advanceProcessingTime(TTL_BACKGROUND_CLEANUP_INTERVAL_MS - 1);
  assert.equal(backend().numKeys("seen"), 50, "no step before the interval");
  h.advanceProcessingTime(1);
  assert.equal(backend().numKeys("seen"), 0, "expired and idle: removed by the background step");
  h.processElement(7);
  h.advanceProcessingTime(TTL_BACKGROUND_CLEANUP_INTERVAL_MS);
  assert.equal(backend().numKeys("seen"), 0, "the step repeats");
  h.close();
});

test("a TTL with background: false is not cleaned up in the background", () => {
  const { h, backend } = harnessWith(false);
  for (let k = 0; k < 50; k++) h.processElement(k);
  h.advanceProcessingTime(10 * TTL_BACKGROUND_CLEANUP_INTERVAL_MS);
  assert.equal(backend().numKeys("seen"), 50);
  h.close();
});

test("a string or composite key seen before keeps its key group; invalid keys and keys of other subtasks still fail after it", () => {
  // Two tables, so the heap backend keeps rows (key-rows.ts) and the record path takes a known
  // key's group from its row instead of validating and hashing the key again.
  const count = new ValueStateDescriptor<number>("count");
  const last = new ValueStateDescriptor<number>("last");
  const maxParallelism = 128;
  const run = (parallelism: number, subtaskIndex: number, inputs: unknown[]) => {
    const out: [unknown, number][] = [];
    const h = OperatorTestHarness.forKeyedProcessFunction<Key, { k: unknown; v: number }, [unknown, number]>(
      {
        processElement(r, ctx, collector) {
          const n = (ctx.getState(count).value() ?? 0) + 1;
          ctx.getState(count).update(n);
          ctx.getState(last).update(r.v);
          collector.collect([ctx.getCurrentKey(), n]);
        },
      },
      (r) => r.k as Key,
      { maxParallelism, parallelism, subtaskIndex },
    );
    const errors: string[] = [];
    for (const [i, k] of inputs.entries()) {
      try {
        h.processElement({ k, v: i });
      } catch (e) {
        errors.push((e as { code?: string }).code ?? String(e));
      }
    }
    for (const r of h.records()) out.push(r);
    h.close();
    return { out, errors };
  };
  const keys: unknown[] = [["Google", 20_000], "channel-7", ["Google", 20_000], ["Google", 20_001], "channel-7", ["Google", 20_000]];
  const { out, errors } = run(1, 0, keys);
  assert.deepEqual(errors, []);
  assert.deepEqual(out, [
    [["Google", 20_000], 1],
    ["channel-7", 1],
    [["Google", 20_000], 2],
    [["Google", 20_001], 1],
    ["channel-7", 2],
    [["Google", 20_000], 3],
  ]);
  // Invalid keys after valid ones of the same shape still fail, record by record.
  const invalid = run(1, 0, [["Google", 20_000], ["Google", Number.NaN], ["Google", 20_000], [{}, 1], null, ["Google", 20_000]]);
  assert.deepEqual(invalid.errors, ["INVALID_KEY", "INVALID_KEY", "INVALID_KEY"]);
  assert.deepEqual(invalid.out.map(([, n]) => n), [1, 2, 3]);
  // At parallelism 2, subtask 0: a key of subtask 1's key groups fails every time, also after a
  // key of its own was seen (a row is only ever made for a key in range).
  const own = ["Google", 20_000];
  const ownGroup = assignToKeyGroup(own as Key, maxParallelism);
  let foreign: string | undefined;
  for (let i = 0; foreign === undefined; i++) {
    if ((assignToKeyGroup(`c${i}`, maxParallelism) < maxParallelism / 2) !== ownGroup < maxParallelism / 2) foreign = `c${i}`;
  }
  const subtask = ownGroup < maxParallelism / 2 ? 0 : 1;
  const split = run(2, subtask, [own, foreign, own, foreign]);
  assert.deepEqual(split.errors, ["KEY_NOT_IN_SUBTASK", "KEY_NOT_IN_SUBTASK"]);
  assert.deepEqual(split.out, [
    [own, 1],
    [own, 2],
  ]);
});
