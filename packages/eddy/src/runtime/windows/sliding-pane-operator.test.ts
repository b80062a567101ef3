/**
 * Pane state and timers of the sliding pane operator: without allowed lateness a pane has no
 * cleanup timer (the last window containing it deletes it when it fires); with allowed lateness
 * each pane keeps one. Either way nothing is left once the watermark passes every window.
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

for (const [lateness, timers] of [[0, 3], [5, 6]] as const) {
  test(`with allowed lateness ${lateness}: ${timers} timers for 3 panes of a key (a fire timer each, and with lateness a cleanup timer each), every window once, nothing left`, () => {
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
