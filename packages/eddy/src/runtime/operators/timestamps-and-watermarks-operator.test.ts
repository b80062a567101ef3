import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_WATERMARK } from "../../core/time.ts";
import { WatermarkStrategy, type WatermarkGenerator } from "../../core/watermark-strategy.ts";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import type { SplitAwareOperator } from "../operator.ts";
import { timestampsAndWatermarksOperator } from "./timestamps-and-watermarks-operator.ts";

interface Event {
  readonly split: string;
  readonly ts: number;
}

function harness(strategy: WatermarkStrategy<Event>) {
  const h = new OperatorTestHarness<Event, Event>(timestampsAndWatermarksOperator(strategy), undefined).open();
  return { h, op: h.operator as SplitAwareOperator<Event> };
}

/** A punctuated generator: watermark = timestamp - 1 after every event. */
const punctuated = WatermarkStrategy.forGenerator<Event>(
  (): WatermarkGenerator<Event> => ({
    onEvent: (_e, ts, out) => out.emitWatermark(ts - 1),
    onPeriodicEmit() {},
  }),
).withTimestampAssigner((e) => e.ts);

test("per split: the watermark is the minimum over the splits, each with its own generator", () => {
  const { h, op } = harness(punctuated);
  const a = op.openSplit("a");
  const b = op.openSplit("b");
  a({ split: "a", ts: 1000 }, Number.NaN);
  assert.deepEqual(h.watermarks(), [], "b has emitted nothing: it holds the watermark at the minimum");
  b({ split: "b", ts: 100 }, Number.NaN);
  assert.deepEqual(h.watermarks(), [99]);
  a({ split: "a", ts: 2000 }, Number.NaN);
  b({ split: "b", ts: 200 }, Number.NaN);
  assert.deepEqual(h.watermarks(), [99, 199], "a far ahead does not move the watermark past b");
  op.releaseSplit("b");
  assert.deepEqual(h.watermarks(), [99, 199, 1999], "b released: a alone");
  op.releaseSplit("b");
  assert.equal(h.records().length, 4, "every record is emitted with its timestamp");
  h.processWatermark(MAX_WATERMARK);
  assert.equal(h.watermarks().at(-1), MAX_WATERMARK);
});

test("the same records through the main output share one generator: the split behind is late", () => {
  const { h } = harness(punctuated);
  h.processElement({ split: "a", ts: 1000 });
  h.processElement({ split: "b", ts: 100 });
  assert.deepEqual(h.watermarks(), [999], "b's record at 100 is behind the watermark");
});

test("periodic generators emit per split every interval; a split without records for the idle timeout stops holding the watermark", () => {
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Event>(0)
    .withTimestampAssigner((e) => e.ts)
    .withIdleness(1000);
  const { h, op } = harness(strategy);
  const a = op.openSplit("a");
  const b = op.openSplit("b");
  a({ split: "a", ts: 500 }, Number.NaN);
  b({ split: "b", ts: 50 }, Number.NaN);
  h.advanceProcessingTime(200);
  assert.deepEqual(h.watermarks(), [49]);
  for (let t = 1; t <= 6; t++) {
    a({ split: "a", ts: 500 + 100 * t }, Number.NaN);
    h.advanceProcessingTime(200);
  }
  // From 1,000 ms on, b has had no record for the idle timeout: a alone defines the watermark.
  assert.deepEqual(h.watermarks(), [49, 899, 999, 1099]);
  assert.equal(h.output().some((e) => e.type === "status"), false, "a is active: the operator never went idle");
  b({ split: "b", ts: 60 }, Number.NaN);
  a({ split: "a", ts: 1200 }, Number.NaN);
  h.advanceProcessingTime(200);
  assert.deepEqual(h.watermarks(), [49, 899, 999, 1099], "b is active again and behind: the watermark waits for it (never regresses)");
  h.advanceProcessingTime(1200);
  assert.deepEqual(h.output().filter((e) => e.type === "status"), [{ type: "status", idle: true }], "no records at all: idle");
});

test("a split's generator that marks itself idle leaves the minimum; every split idle makes the operator idle", () => {
  const strategy = WatermarkStrategy.forGenerator<Event>(() => {
    let max = Number.NEGATIVE_INFINITY;
    return {
      onEvent(e, ts) {
        max = Math.max(max, ts);
      },
      onPeriodicEmit(out) {
        if (max === Number.NEGATIVE_INFINITY) out.markIdle();
        else out.emitWatermark(max - 1);
      },
    };
  }).withTimestampAssigner((e) => e.ts);
  const { h, op } = harness(strategy);
  const a = op.openSplit("a");
  op.openSplit("b");
  a({ split: "a", ts: 300 }, Number.NaN);
  h.advanceProcessingTime(200);
  assert.deepEqual(h.watermarks(), [299], "b has seen nothing and says it is idle");
  assert.deepEqual(h.output().filter((e) => e.type === "status"), [], "a is active");
  op.releaseSplit("a");
  h.advanceProcessingTime(200);
  assert.deepEqual(h.output().filter((e) => e.type === "status"), [{ type: "status", idle: true }], "only b is left, and it is idle");
  op.openSplit("c")({ split: "c", ts: 400 }, Number.NaN);
  assert.deepEqual(h.output().filter((e) => e.type === "status"), [{ type: "status", idle: true }, { type: "status", idle: false }], "a new split makes it active again");
});
