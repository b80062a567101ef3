/**
 * Pane state and timers of the sliding pane operator: without allowed lateness a pane has no
 * cleanup timer (the last window containing it deletes it when it fires); with allowed lateness
 * each pane keeps one. A pane whose first window to fire holds the pane before it registers no
 * fire timer (the earlier pane's firings reach it). Either way nothing is left once the
 * watermark passes every window.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { slidingPaneOperator } from "./sliding-pane-operator.ts";

interface Ev {
  readonly key: string;
  readonly ts: number;
}

function harness(allowedLateness: number) {
  return new OperatorTestHarness<Ev, unknown>(
    slidingPaneOperator<Ev>({
      size: 30,
      slide: 10,
      offset: 0,
      description: "SlidingEventTimeWindows(30, 10)",
      allowedLateness,
      lateDataTag: undefined,
      panes: { create: () => 1, add: (n) => (n as number) + 1, merge: (a, b) => (a as number) + (b as number), result: (n) => n },
      windowFunction: (key, w, [n], out) => out.collect(`${String(key)} ${w.start}-${w.end}: ${String(n)}`),
    }),
    (e) => e.key,
  ).open();
}

const sizeOf = (h: OperatorTestHarness<Ev, unknown>) => (h.operator as unknown as { stateSize(): { keys: number; timers: number } }).stateSize();

for (const [lateness, timers] of [[0, 1], [5, 4]] as const) {
  test(`with allowed lateness ${lateness}: ${timers} timers for 3 consecutive panes of a key (one fire timer: each later pane is in a window of the one before it; with lateness a cleanup timer each), every window once, nothing left`, () => {
    const h = harness(lateness);
    for (const ts of [1, 11, 12, 25]) h.processElement({ key: "a", ts }, ts);
    assert.deepEqual(sizeOf(h), { keys: 1, timers });
    h.processWatermark(29); // windows ending at 9, 19 and 29 (inclusive) have fired
    assert.deepEqual(h.records(), ["a -20-10: 1", "a -10-20: 3", "a 0-30: 4"]);
    h.processWatermark(1_000);
    assert.deepEqual(h.records().slice(3), ["a 10-40: 3", "a 20-50: 1"]);
    assert.deepEqual(sizeOf(h), { keys: 0, timers: 0 });
  });
}

test("a pane after a gap registers its own fire timer; a pane whose first unfired window is its last registers one too", () => {
  const h = harness(0);
  // Panes 0 and 40: no window holds both (size 30), so each has a timer.
  for (const ts of [1, 41]) h.processElement({ key: "a", ts }, ts);
  assert.deepEqual(sizeOf(h), { keys: 1, timers: 2 });
  h.processWatermark(1_000);
  assert.deepEqual(h.records(), ["a -20-10: 1", "a -10-20: 1", "a 0-30: 1", "a 20-50: 1", "a 30-60: 1", "a 40-70: 1"]);
  assert.deepEqual(sizeOf(h), { keys: 0, timers: 0 });
  // With allowed lateness: pane 10 created once the watermark passed its first two windows
  // (ends 19 and 29) fires them at once; its last window (end 39) is not in pane 0's reach.
  const late = harness(100);
  late.processElement({ key: "b", ts: 1 }, 1);
  late.processWatermark(30);
  late.processElement({ key: "b", ts: 15 }, 15);
  late.processWatermark(1_000);
  assert.deepEqual(late.records(), ["b -20-10: 1", "b -10-20: 1", "b 0-30: 1", "b -10-20: 2", "b 0-30: 2", "b 10-40: 1"]);
});

