/**
 * Trigger timers compared with Flink's: the count of pending timers after each step is what
 * Flink's ContinuousEventTimeTrigger (1.13.6+, FLINK-20443) and WindowOperator leave behind.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { EventTimeSessionWindows, TumblingEventTimeWindows, type WindowAssigner } from "./assigners.ts";
import { ContinuousEventTimeTrigger } from "./triggers.ts";
import { windowOperator } from "./window-operator.ts";
import type { TimeWindow } from "./windows.ts";

interface Ev {
  readonly key: string;
  readonly ts: number;
}

function continuousHarness(assigner: WindowAssigner<Ev, TimeWindow>, intervalMs: number, allowedLateness: number) {
  const harness = new OperatorTestHarness<Ev, unknown>(
    windowOperator<Ev, TimeWindow>({
      assigner,
      trigger: ContinuousEventTimeTrigger.of<Ev, TimeWindow>(intervalMs),
      allowedLateness,
      lateDataTag: undefined,
      contents: { kind: "list" },
      windowFunction: (_key, window, input, out) => out.collect(`${window.end}:${input.length}`),
    }),
    (e) => e.key,
  ).open();
  const timers = () => (harness.operator as unknown as { stateSize(): { timers: number } }).stateSize().timers;
  const fired = () => harness.records() as string[];
  return { harness, timers, fired };
}

test("ContinuousEventTimeTrigger never fires past the window's end, even within the allowed lateness (as Flink)", () => {
  const { harness, timers, fired } = continuousHarness(TumblingEventTimeWindows.of<Ev>(100), 30, 50);
  harness.processElement({ key: "a", ts: 10 }, 10);
  assert.equal(timers(), 3, "end 99, first firing 30, cleanup 149");
  harness.processWatermark(98);
  // Fired at 30, 60, 90; the next firing is min(120, 99): the end timer.
  assert.deepEqual(fired(), ["100:1", "100:1", "100:1"]);
  assert.equal(timers(), 2, "99 and the cleanup timer 149");
  harness.processWatermark(148);
  assert.deepEqual(fired(), ["100:1", "100:1", "100:1", "100:1"], "one firing at the end, none at 120");
  harness.processWatermark(149);
  assert.equal(timers(), 0);
});

test("ContinuousEventTimeTrigger: clear leaves the window-end timer and onMerge registers only the next firing (as Flink)", () => {
  const { harness, timers, fired } = continuousHarness(EventTimeSessionWindows.withGap<Ev>(100), 30, 10);
  harness.processElement({ key: "a", ts: 0 }, 0);
  assert.equal(timers(), 3, "[0, 100): end 99, firing 30, cleanup 109");
  harness.processElement({ key: "a", ts: 50 }, 50);
  // Merged into [0, 150): onMerge moves the next firing (30) to [0, 150) and registers it there;
  // the moved state is gone from [0, 100), so clearing [0, 100) deletes no timer, and the
  // operator deletes only its cleanup timer (109). Flink leaves the same two timers of [0, 100),
  // 30 and its end 99: they fire later, find no window, and do nothing. onElement on [0, 150)
  // adds its end 149; its cleanup timer is 159.
  assert.equal(timers(), 5, "[0, 100): 30, 99; [0, 150): 30, 149, 159");
  harness.processWatermark(100);
  assert.deepEqual(fired(), ["150:2", "150:2", "150:2"], "at 30, 60 and 90; the stale timers of [0, 100) fire nothing");
  harness.processWatermark(200);
  assert.deepEqual(fired(), ["150:2", "150:2", "150:2", "150:2", "150:2"], "at 120 and at the end, 149");
  assert.equal(timers(), 0);
});
