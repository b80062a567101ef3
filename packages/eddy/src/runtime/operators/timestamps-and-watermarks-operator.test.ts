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

/** A source's link to watermark alignment, recording what the operator tells it. */
function fakeAlignment(splitsPausable = false) {
  const reports: [group: string, watermark: number, drift: number][] = [];
  let driftGauge: (() => number) | undefined;
  const paused: boolean[] = [];
  const splitCalls: [pause: string[], resume: string[]][] = [];
  let listener: ((maxAllowed: number) => void) | undefined;
  return {
    reports,
    paused,
    splitCalls,
    answer: (maxAllowed: number) => listener!(maxAllowed),
    drift: () => driftGauge!(),
    port: {
      setDriftGauge: (g: () => number) => void (driftGauge = g),
      report: (group: string, watermark: number, drift: number) => void reports.push([group, watermark, drift]),
      onMaxAllowedWatermark: (l: (maxAllowed: number) => void) => void (listener = l),
      setPaused: (p: boolean) => void paused.push(p),
      splitsPausable,
      pauseOrResumeSplits: (pause: readonly string[], resume: readonly string[]) => {
        if (!splitsPausable) throw new Error("the reader cannot pause splits");
        splitCalls.push([[...pause], [...resume]]);
      },
    },
  };
}

test("watermark alignment: reports every interval from the first watermark on, pauses past the coordinator's bound, resumes below it, reports MAX at the end", () => {
  const a = fakeAlignment();
  const h = new OperatorTestHarness<Event, Event>(timestampsAndWatermarksOperator(punctuated.withWatermarkAlignment("g", 100, 50)), undefined, { sourceAlignment: a.port }).open();
  h.advanceProcessingTime(50);
  assert.deepEqual(a.reports, [], "nothing to report before the first watermark (it holds nobody back)");
  h.processElement({ split: "a", ts: 10 });
  h.advanceProcessingTime(50);
  assert.deepEqual(a.reports, [["g", 9, 100]]);
  const drift = a.drift;
  assert.equal(drift(), 0, "no answer yet: no drift to tell");
  a.answer(5);
  assert.deepEqual(a.paused, [true], "watermark 9 is past the bound 5");
  assert.equal(drift(), 9 - (5 - 100), "ahead of the group's slowest (-95) by 104 ms");
  a.answer(9);
  assert.deepEqual(a.paused, [true, false], "at the bound it may read");
  h.processElement({ split: "a", ts: 20 });
  assert.deepEqual(a.paused, [true, false, true], "a watermark past the last bound pauses at once");
  assert.equal(h.counters()["operator-under-test.numWatermarkAlignmentPauses"], 2);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(a.paused, [true, false, true, false], "the input ended: nothing to hold back");
  assert.deepEqual(a.reports.at(-1), ["g", MAX_WATERMARK, 100], "and the group hears at once that it holds nobody back");
  const reports = a.reports.length;
  h.advanceProcessingTime(500);
  assert.equal(a.reports.length, reports, "no reports after the end");
});

test("watermark alignment: the MAX watermark at the end of the input does not pause the source", () => {
  const a = fakeAlignment();
  const h = new OperatorTestHarness<Event, Event>(timestampsAndWatermarksOperator(punctuated.withWatermarkAlignment("g", 100, 50)), undefined, { sourceAlignment: a.port }).open();
  h.processElement({ split: "a", ts: 10 });
  a.answer(1000);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(a.paused, [], "never paused, not even for a moment");
  assert.deepEqual(a.reports, [["g", MAX_WATERMARK, 100]]);
  assert.equal(h.counters()["operator-under-test.numWatermarkAlignmentPauses"] ?? 0, 0);
});

test("watermark alignment: a source paused by alignment is not marked idle; an idle one reports MAX and is not paused", () => {
  const a = fakeAlignment();
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Event>(0)
    .withTimestampAssigner((e) => e.ts)
    .withIdleness(300)
    .withWatermarkAlignment("g", 100, 50);
  const h = new OperatorTestHarness<Event, Event>(timestampsAndWatermarksOperator(strategy), undefined, { sourceAlignment: a.port }).open();
  h.processElement({ split: "a", ts: 1000 });
  h.advanceProcessingTime(200); // periodic emission: watermark 999
  a.answer(500);
  assert.deepEqual(a.paused, [true]);
  h.advanceProcessingTime(1000);
  assert.ok(!h.output().some((e) => e.type === "status"), "paused for 1 s without being marked idle");
  a.answer(2000);
  assert.deepEqual(a.paused, [true, false]);
  h.advanceProcessingTime(400);
  assert.ok(h.output().some((e) => e.type === "status" && e.idle), "reading again and without records: idle after the timeout");
  h.advanceProcessingTime(50);
  assert.equal(a.reports.at(-1)?.[1], MAX_WATERMARK, "idle: reports MAX, holding nobody back");
  a.answer(0);
  assert.deepEqual(a.paused, [true, false], "an idle source is not paused");
});

test("watermark alignment per split: a split past the bound is paused while the slow one reads on; resumed at the bound; released ones forgotten; not marked idle while paused", () => {
  const a = fakeAlignment(true);
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Event>(0)
    .withTimestampAssigner((e) => e.ts)
    .withIdleness(300)
    .withWatermarkAlignment("g", 100, 50);
  const h = new OperatorTestHarness<Event, Event>(timestampsAndWatermarksOperator(strategy), undefined, { sourceAlignment: a.port }).open();
  const op = h.operator as SplitAwareOperator<Event>;
  const fast = op.openSplit("fast");
  const slow = op.openSplit("slow");
  const third = op.openSplit("third");
  fast({ split: "fast", ts: 1000 }, Number.NaN);
  slow({ split: "slow", ts: 100 }, Number.NaN);
  third({ split: "third", ts: 900 }, Number.NaN);
  h.advanceProcessingTime(200); // periodic emission: splits at 999, 99 and 899; the source at 99
  a.answer(500);
  assert.deepEqual(a.splitCalls, [[["fast", "third"], []]], "the splits past 500 are paused");
  assert.deepEqual(a.paused, [], "the source itself is not (its watermark, 99, is the slow split's)");
  slow({ split: "slow", ts: 450 }, Number.NaN); // within 500: it stays unpaused at the next periodic check
  h.advanceProcessingTime(200);
  a.answer(950);
  assert.deepEqual(a.splitCalls.at(-1), [[], ["third"]], "third (899) is within 950 again; fast (999) is not");
  h.advanceProcessingTime(1000);
  assert.ok(!h.output().some((e) => e.type === "status"), "the paused split is not marked idle, nor is the source");
  op.releaseSplit("fast");
  a.answer(2000);
  assert.deepEqual(a.splitCalls.length, 2, "the released split is not resumed: the reader no longer has it");
  // fast and third, then the source as a whole: once slow and third went idle its watermark was fast's 999, past 950.
  assert.equal(h.counters()["operator-under-test.numWatermarkAlignmentPauses"], 3);
});

test("watermark alignment with a reader that cannot pause splits: the source is paused as a whole once all its splits are ahead", () => {
  const a = fakeAlignment(false);
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Event>(0).withTimestampAssigner((e) => e.ts).withWatermarkAlignment("g", 100, 50);
  const h = new OperatorTestHarness<Event, Event>(timestampsAndWatermarksOperator(strategy), undefined, { sourceAlignment: a.port }).open();
  const op = h.operator as SplitAwareOperator<Event>;
  op.openSplit("fast")({ split: "fast", ts: 1000 }, Number.NaN);
  op.openSplit("slow")({ split: "slow", ts: 100 }, Number.NaN);
  h.advanceProcessingTime(200);
  a.answer(500);
  assert.deepEqual(a.paused, [], "the slow split (99) is within the bound");
  a.answer(50);
  assert.deepEqual(a.paused, [true], "both splits past 50");
  assert.deepEqual(a.splitCalls, []);
});

test("watermark alignment without a source to pause (not fed by one) is refused when the operator is built", () => {
  assert.throws(
    () => new OperatorTestHarness<Event, Event>(timestampsAndWatermarksOperator(punctuated.withWatermarkAlignment("g", 100)), undefined),
    (e: unknown) => (e as { code?: string }).code === "WATERMARK_ALIGNMENT_WITHOUT_SOURCE",
  );
});
