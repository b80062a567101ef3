import { test } from "node:test";
import assert from "node:assert/strict";
import { TumblingEventTimeWindows, TumblingProcessingTimeWindows } from "./assigners.ts";

const noClock = { currentProcessingTime: (): number => assert.fail("event time reads no clock") };

test("a tumbling assigner gives each element its window, reusing the assignment within one window", () => {
  const assigner = TumblingEventTimeWindows.of(10, 3);
  const first = assigner.assignWindows("x", 3, noClock);
  assert.deepEqual(first.map((w) => [w.start, w.end]), [[3, 13]]);
  assert.equal(assigner.assignWindows("y", 12, noClock), first, "same window: the same frozen assignment");
  assert.equal(Object.isFrozen(first), true);
  const next = assigner.assignWindows("z", 13, noClock);
  assert.deepEqual(next.map((w) => [w.start, w.end]), [[13, 23]]);
  assert.deepEqual(first.map((w) => [w.start, w.end]), [[3, 13]], "an earlier assignment never changes");
  assert.deepEqual(assigner.assignWindows("w", -8, noClock).map((w) => [w.start, w.end]), [[-17, -7]]);
  assert.deepEqual(assigner.assignWindows("v", 5, noClock).map((w) => [w.start, w.end]), [[3, 13]], "back to an earlier window");
});

test("a tumbling processing-time assigner reads the clock per element", () => {
  let now = 995;
  const assigner = TumblingProcessingTimeWindows.of(1000);
  const clock = { currentProcessingTime: (): number => now };
  assert.deepEqual(assigner.assignWindows("a", Number.NaN, clock).map((w) => w.start), [0]);
  now = 1000;
  assert.deepEqual(assigner.assignWindows("a", Number.NaN, clock).map((w) => w.start), [1000]);
});
