/**
 * The job of the pane savepoints (test/fixtures/pane-savepoints/): sliding windows evaluated by
 * the pane operator (runtime/windows/sliding-pane-operator.ts), one with local aggregation and no
 * allowed lateness (panes deleted by their last firing), one with allowed lateness (a cleanup
 * timer per pane, namespaced by the pane's start). The source is the golden job's
 * (test/jobs/golden.ts): record numbers 1..RECORDS as event time, from SPLITS splits; with
 * EDDY_GOLDEN_HOLD=h it emits only numbers ≤ h of each split and then waits.
 *
 * v1/ was written when panes were stored under their start (state `window-panes`); every later
 * version must restore it with the output of a run that never stopped
 * (test/savepoint-panes.test.ts). Change this job only together with a new fixture directory.
 */
import { defineJob, SlidingEventTimeWindows, WatermarkStrategy, type AggregateFunction } from "eddy";
import { committingCollectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";

export const RECORDS = 2_000;
export const SPLITS = 4;
export const KEYS = 7;

export interface PaneWindow {
  readonly key: number;
  readonly start: number;
  readonly end: number;
  readonly sum: number;
  readonly count: number;
}

const sumAndCount: AggregateFunction<number, { sum: number; count: number }, { sum: number; count: number }> = {
  createAccumulator: () => ({ sum: 0, count: 0 }),
  add: (n, acc) => ({ sum: acc.sum + n, count: acc.count + 1 }),
  getResult: (acc) => acc,
  merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
};

export default defineJob("golden-panes", (env) => {
  env.setParallelism(2);
  env.setMaxParallelism(8);
  const hold = Number(process.env.EDDY_GOLDEN_HOLD ?? Number.POSITIVE_INFINITY);
  const keyed = env
    .fromSource(pacedNumbers({ records: RECORDS, splits: SPLITS, idPrefix: "panes", perPoll: 100, pauseMs: 0, holdAt: hold }), WatermarkStrategy.forMonotonousTimestamps<number>(), "pane numbers")
    .uid("source")
    .keyBy((n) => n % KEYS);
  keyed
    .window(SlidingEventTimeWindows.of<number>(300, 100))
    .aggregate(sumAndCount, (key, w, [acc], out: { collect(r: PaneWindow): void }) => out.collect({ key, start: w.start, end: w.end, ...acc }))
    .uid("sliding")
    .sinkTo(committingCollectSink("sliding"))
    .uid("sliding-sink");
  keyed
    .window(SlidingEventTimeWindows.of<number>(200, 50))
    .allowedLateness(100)
    .reduce((a, b) => a + b, (key, w, [sum], out: { collect(r: PaneWindow): void }) => out.collect({ key, start: w.start, end: w.end, sum, count: -1 }))
    .uid("sliding-late")
    .sinkTo(committingCollectSink("sliding-late"))
    .uid("sliding-late-sink");
});
