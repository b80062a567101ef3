/**
 * Which trigger calls a merging window operator makes, compared with Flink's MergingWindowSet and
 * WindowOperator: the new window of an element is never part of a merge (it has no state or
 * timers), so a window identical to, or inside, an existing session makes no merge at all, and an
 * extending one clears only the existing windows it absorbed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import type { SerializedOperatorSnapshot } from "../../testing/index.ts";
import { EventTimeSessionWindows, type WindowAssigner } from "./assigners.ts";
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
  return harnessWith(EventTimeSessionWindows.withGap<Ev>(10), log, 0);
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

/** The session assigner without its `mergesIntersecting` mark: the set merges through `mergeWindows` (Flink's sort-and-sweep). */
function bySweep(gap: number): WindowAssigner<Ev, TimeWindow> {
  const sessions = EventTimeSessionWindows.withGap<Ev>(gap);
  return {
    description: sessions.description,
    isEventTime: true,
    assignWindows: (e, t, c) => sessions.assignWindows(e, t, c),
    defaultTrigger: () => sessions.defaultTrigger(),
    mergeWindows: (windows, merge) => sessions.mergeWindows!(windows, merge),
    namespaceOf: (w) => sessions.namespaceOf(w),
    windowOf: (ns) => sessions.windowOf(ns),
  };
}

function harnessWith(assigner: WindowAssigner<Ev, TimeWindow>, log: string[], allowedLateness = 15, restore?: SerializedOperatorSnapshot) {
  return new OperatorTestHarness<Ev, unknown>(
    windowOperator<Ev, TimeWindow>({
      assigner,
      trigger: loggingTrigger(log),
      allowedLateness,
      lateDataTag: undefined,
      contents: { kind: "list" },
      windowFunction: undefined,
    }),
    (e) => e.key,
    restore === undefined ? {} : { restore },
  ).open();
}

/** Random session traffic for 3 keys: bursts, gaps, elements that bridge sessions, late ones; a watermark every 8 elements. */
function sessionSteps(seed: number, n: number): ({ ev: Ev } | { watermark: number })[] {
  let s = seed;
  const rnd = (): number => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const out: ({ ev: Ev } | { watermark: number })[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += rnd() < 0.15 ? 25 : Math.floor(rnd() * 6);
    out.push({ ev: { key: `k${Math.floor(rnd() * 3)}`, ts: Math.max(0, t - Math.floor(rnd() * 30)) } });
    if (i % 8 === 7) out.push({ watermark: t - 20 });
  }
  out.push({ watermark: t + 1_000 });
  return out;
}

function run(h: OperatorTestHarness<Ev, unknown>, steps: readonly ({ ev: Ev } | { watermark: number })[]): void {
  for (const st of steps) {
    if ("ev" in st) h.processElement(st.ev, st.ev.ts);
    else h.processWatermark(st.watermark);
  }
}

test("sessions merged by one scan (mergesIntersecting) make the same windows and trigger calls as Flink's sort-and-sweep", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const steps = sessionSteps(seed, 400);
    const fastLog: string[] = [];
    const sweepLog: string[] = [];
    const fast = harnessWith(EventTimeSessionWindows.withGap<Ev>(10), fastLog);
    const sweep = harnessWith(bySweep(10), sweepLog);
    run(fast, steps);
    run(sweep, steps);
    assert.ok(fastLog.filter((l) => l.startsWith("onMerge")).length > 20, `seed ${seed}: the traffic merges sessions`);
    assert.deepEqual(fastLog, sweepLog, `seed ${seed}: trigger calls`);
    assert.deepEqual(fast.output(), sweep.output(), `seed ${seed}: output`);
  }
});

test("a snapshot taken mid-session while the operator goes on (the set changes in place) restores the sessions as they were at the snapshot", async () => {
  for (const seed of [7, 8, 9]) {
    const steps = sessionSteps(seed, 300);
    const cut = 120 + seed * 10;
    const original = harnessWith(EventTimeSessionWindows.withGap<Ev>(10), []);
    run(original, steps.slice(0, cut));
    const pending = original.snapshot(); // captured now, written while the original goes on
    original.clearOutput();
    run(original, steps.slice(cut));
    const restored = harnessWith(EventTimeSessionWindows.withGap<Ev>(10), [], 15, await pending);
    run(restored, steps.slice(cut));
    assert.deepEqual(restored.output(), original.output(), `seed ${seed}`);
  }
});
