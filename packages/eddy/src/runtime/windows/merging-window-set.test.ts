/**
 * Which trigger calls a merging window operator makes, compared with Flink's MergingWindowSet and
 * WindowOperator: the new window of an element is never part of a merge (it has no state or
 * timers), so a window identical to, or inside, an existing session makes no merge at all, and an
 * extending one clears only the existing windows it absorbed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { EventTimeSessionWindows } from "./assigners.ts";
import { EventTimeTrigger, type OnMergeContext, type Trigger, type TriggerContext, type TriggerResult } from "./triggers.ts";
import { windowOperator } from "./window-operator.ts";
import type { TimeWindow } from "./windows.ts";

interface Ev {
  readonly key: string;
  readonly ts: number;
}

/** The default session trigger, logging every call the operator makes. */
function loggingTrigger(log: string[]): Trigger<Ev, TimeWindow> {
  const inner = EventTimeTrigger.create<Ev, TimeWindow>();
  return {
    onElement(e: Ev, t: number, w: TimeWindow, ctx: TriggerContext): TriggerResult {
      log.push(`onElement ${w}`);
      return inner.onElement(e, t, w, ctx);
    },
    onEventTime: (t, w, ctx) => inner.onEventTime(t, w, ctx),
    onProcessingTime: (t, w, ctx) => inner.onProcessingTime(t, w, ctx),
    canMerge: () => true,
    onMerge(w: TimeWindow, ctx: OnMergeContext): void {
      log.push(`onMerge ${w}`);
      inner.onMerge!(w, ctx);
    },
    clear(w: TimeWindow, ctx: TriggerContext): void {
      log.push(`clear ${w}`);
      inner.clear(w, ctx);
    },
  };
}

function sessionHarness(log: string[]) {
  const harness = new OperatorTestHarness<Ev, unknown>(
    windowOperator<Ev, TimeWindow>({
      assigner: EventTimeSessionWindows.withGap<Ev>(10),
      trigger: loggingTrigger(log),
      allowedLateness: 0,
      lateDataTag: undefined,
      contents: { kind: "list" },
      windowFunction: undefined,
    }),
    (e) => e.key,
  );
  return harness.open();
}

test("a session window identical to or inside an existing one makes no merge and no trigger calls but onElement (as Flink)", () => {
  const log: string[] = [];
  const harness = sessionHarness(log);
  harness.processElement({ key: "a", ts: 0 }, 0);
  harness.processElement({ key: "a", ts: 0 }, 0); // [0, 10) again: identical
  assert.deepEqual(log, ["onElement TimeWindow[0, 10)", "onElement TimeWindow[0, 10)"]);
  log.length = 0;
  harness.processElement({ key: "a", ts: 5 }, 5); // [5, 15) extends [0, 10)
  assert.deepEqual(log, ["onMerge TimeWindow[0, 15)", "clear TimeWindow[0, 10)", "onElement TimeWindow[0, 15)"], "the new window is not cleared");
  log.length = 0;
  harness.processElement({ key: "a", ts: 3 }, 3); // [3, 13) inside [0, 15)
  assert.deepEqual(log, ["onElement TimeWindow[0, 15)"]);
  log.length = 0;
  harness.processElement({ key: "a", ts: 22 }, 22); // a separate session
  harness.processElement({ key: "a", ts: 14 }, 14); // [14, 24) bridges [0, 15) and [22, 32)
  assert.deepEqual(log, [
    "onElement TimeWindow[22, 32)",
    "onMerge TimeWindow[0, 32)",
    "clear TimeWindow[0, 15)",
    "clear TimeWindow[22, 32)",
    "onElement TimeWindow[0, 32)",
  ]);
  log.length = 0;
  harness.processWatermark(100);
  assert.deepEqual(harness.records().map((r) => (r as Ev[]).map((e) => e.ts).sort((a, b) => a - b)), [[0, 0, 3, 5, 14, 22]]);
  assert.deepEqual(log, ["clear TimeWindow[0, 32)"]);
  const op = harness.operator as unknown as { stateSize(): { keys: number; timers: number } };
  assert.deepEqual(op.stateSize(), { keys: 0, timers: 0 });
});
