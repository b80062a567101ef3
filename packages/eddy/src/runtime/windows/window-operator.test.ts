/**
 * The window operator's per-element shortcut (non-merging windows): a window whose contents exist
 * already keeps its cleanup timer, and under the built-in EventTimeTrigger its end timer, so the
 * operator registers neither again and does not call that trigger. Any other trigger (a subclass
 * of EventTimeTrigger included) sees every element, and a purged window registers its cleanup
 * timer again with its next element.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { TumblingEventTimeWindows } from "./assigners.ts";
import { EventTimeTrigger, type Trigger, type TriggerContext, type TriggerResult } from "./triggers.ts";
import { windowOperator } from "./window-operator.ts";
import type { TimeWindow, Window } from "./windows.ts";

interface Ev {
  readonly key: string;
  readonly ts: number;
}

function harness(trigger: Trigger<Ev, TimeWindow>, allowedLateness = 0) {
  return new OperatorTestHarness<Ev, unknown>(
    windowOperator<Ev, TimeWindow>({
      assigner: TumblingEventTimeWindows.of<Ev>(10),
      trigger,
      allowedLateness,
      lateDataTag: undefined,
      contents: { kind: "reduce", reduce: (a, b) => ({ key: a.key, ts: a.ts + b.ts }) },
      windowFunction: undefined,
    }),
    (e) => e.key,
  ).open();
}

const sizeOf = (h: OperatorTestHarness<Ev, unknown>) => (h.operator as unknown as { stateSize(): { keys: number; timers: number } }).stateSize();

test("a subclass of EventTimeTrigger sees every element (only the built-in trigger is skipped for windows with contents)", () => {
  let calls = 0;
  class Counting extends EventTimeTrigger {
    override onElement(e: unknown, t: number, w: Window, ctx: TriggerContext): TriggerResult {
      calls++;
      return super.onElement(e, t, w, ctx);
    }
  }
  const h = harness(new Counting() as unknown as Trigger<Ev, TimeWindow>);
  for (const ts of [1, 2, 3, 12, 13]) h.processElement({ key: "a", ts }, ts);
  assert.equal(calls, 5);
  h.processWatermark(100);
  assert.deepEqual(h.records(), [{ key: "a", ts: 6 }, { key: "a", ts: 25 }]);
  assert.deepEqual(sizeOf(h), { keys: 0, timers: 0 });
});

test("the built-in EventTimeTrigger still fires again for a late element within the allowed lateness", () => {
  const h = harness(EventTimeTrigger.create<Ev, TimeWindow>(), 20);
  h.processElement({ key: "a", ts: 1 }, 1);
  h.processElement({ key: "a", ts: 2 }, 2);
  assert.deepEqual(sizeOf(h), { keys: 1, timers: 2 }, "the end timer and the cleanup timer, once each");
  h.processWatermark(15);
  h.processElement({ key: "a", ts: 3 }, 3); // the window has contents, but its end has passed: fires
  assert.deepEqual(h.records(), [{ key: "a", ts: 3 }, { key: "a", ts: 6 }]);
  h.processWatermark(100);
  assert.deepEqual(sizeOf(h), { keys: 0, timers: 0 });
});

test("a window purged by its trigger registers its cleanup timer again with its next element", () => {
  // Fires and purges on every element; registers no timer of its own.
  const purging: Trigger<Ev, TimeWindow> = {
    onElement: () => "FIRE_AND_PURGE",
    onEventTime: () => "CONTINUE",
    onProcessingTime: () => "CONTINUE",
    clear: () => {},
  };
  const h = harness(purging, 5);
  h.processElement({ key: "a", ts: 1 }, 1);
  h.processElement({ key: "a", ts: 2 }, 2);
  assert.deepEqual(sizeOf(h), { keys: 0, timers: 1 }, "purged contents, one cleanup timer");
  h.processWatermark(14); // the cleanup time (9 + 5)
  assert.deepEqual(sizeOf(h), { keys: 0, timers: 0 });
  h.processElement({ key: "a", ts: 21 }, 21);
  h.processElement({ key: "a", ts: 22 }, 22);
  assert.deepEqual(sizeOf(h), { keys: 0, timers: 1 });
  assert.deepEqual(h.records(), [1, 2, 21, 22].map((ts) => ({ key: "a", ts })));
});
