import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { ValueStateDescriptor } from "../../state/descriptors.ts";
import { heapStateBackend } from "../../state/heap-keyed-state-backend.ts";
import type { KeyedStateBackend } from "../../state/keyed-state-backend.ts";
import { TTL_BACKGROUND_CLEANUP_INTERVAL_MS } from "./keyed-state-and-timers.ts";

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
