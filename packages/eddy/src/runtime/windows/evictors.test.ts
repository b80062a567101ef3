import { test } from "node:test";
import assert from "node:assert/strict";
import { NO_TIMESTAMP } from "../../core/time.ts";
import { TimeEvictor, type EvictorContext, type TimestampedValue } from "./evictors.ts";
import { GlobalWindow } from "./windows.ts";

const ctx: EvictorContext = { currentProcessingTime: () => 0, currentWatermark: () => Number.NEGATIVE_INFINITY };
const at = (timestamp: number, value = timestamp): TimestampedValue<number> => ({ value, timestamp });

test("TimeEvictor keeps the elements within its span of the newest timestamp, before or after the function", () => {
  const elements = [at(100), at(400), at(250), at(300)];
  const before = TimeEvictor.of<number, GlobalWindow>(150).evictBefore!(elements, GlobalWindow.INSTANCE, ctx);
  // Newest 400, cut-off 250: Flink evicts timestamps ≤ cut-off, in any order.
  assert.deepEqual(before.map((e) => e.timestamp), [400, 300]);
  const after = TimeEvictor.of<number, GlobalWindow>(150, true);
  assert.equal(after.evictBefore, undefined);
  assert.deepEqual(after.evictAfter!(elements, GlobalWindow.INSTANCE, ctx).map((e) => e.timestamp), [400, 300]);
});

test("TimeEvictor evicts nothing from elements without timestamps (processing time), as Flink", () => {
  const elements = [at(NO_TIMESTAMP, 1), at(NO_TIMESTAMP, 2), at(NO_TIMESTAMP, 3)];
  const kept = TimeEvictor.of<number, GlobalWindow>(10).evictBefore!(elements, GlobalWindow.INSTANCE, ctx);
  assert.deepEqual(kept.map((e) => e.value), [1, 2, 3]);
  assert.deepEqual(TimeEvictor.of<number, GlobalWindow>(10).evictBefore!([], GlobalWindow.INSTANCE, ctx), []);
});
