/**
 * Windows that local (two-phase) aggregation applies to, for test/local-aggregation.test.ts: a
 * paced sequence with event time = the record number (two source subtasks at parallelism 2), keyed
 * by n % KEYS, into one of four windows. EDDY_LA_SHAPE picks the window, EDDY_LA_LOCAL=off turns
 * local aggregation off (the reference), EDDY_LA_PACE=n sleeps 1 ms every n records (so a run can
 * be stopped with a savepoint part-way).
 */
import {
  defineJob,
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type AggregateFunction,
  type Collector,
  type TimeWindow,
} from "eddy";
import { committingCollectSink } from "eddy/testing";

export const RECORDS = 20_000;
export const KEYS = 7;
export type Shape = "tumbling-aggregate" | "tumbling-reduce" | "sliding-aggregate" | "all-aggregate" | "session-aggregate";
export const SHAPES: readonly Shape[] = ["tumbling-aggregate", "tumbling-reduce", "sliding-aggregate", "all-aggregate", "session-aggregate"];
/** Sessions: event time jumps 500 ms every SESSION_RECORDS records, so each key's sessions (gap 100 ms) end there. */
export const SESSION_RECORDS = 3000;
export const SESSION_GAP = 100;
export const eventTime = (shape: Shape, n: number): number => (shape === "session-aggregate" ? n + Math.floor(n / SESSION_RECORDS) * 500 : n);

export interface Row {
  readonly key: number;
  readonly start: number;
  readonly end: number;
  readonly count: number;
  readonly sum: number;
}

interface Rec {
  readonly key: number;
  readonly count: number;
  readonly sum: number;
}

/** Count and sum; merge builds a new accumulator, add mutates its own (both allowed). */
export const countSum: AggregateFunction<Rec, { count: number; sum: number }, { count: number; sum: number }> = {
  createAccumulator: () => ({ count: 0, sum: 0 }),
  add: (r, acc) => {
    acc.count += r.count;
    acc.sum += r.sum;
    return acc;
  },
  getResult: (acc) => ({ ...acc }),
  merge: (a, b) => ({ count: a.count + b.count, sum: a.sum + b.sum }),
};

const sleeper = new Int32Array(new SharedArrayBuffer(4));

export default defineJob("local-aggregation", (env) => {
  const shape = (process.env["EDDY_LA_SHAPE"] ?? "tumbling-aggregate") as Shape;
  const local = process.env["EDDY_LA_LOCAL"] !== "off";
  const pace = Number(process.env["EDDY_LA_PACE"] ?? 0);
  const records = env
    .fromSequence(1, RECORDS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => eventTime(shape, n)))
    .map((n: number): Rec => {
      if (pace > 0 && n % pace === 0) Atomics.wait(sleeper, 0, 0, 1);
      return { key: n % KEYS, count: 1, sum: n };
    });
  const toRow = (key: number, w: TimeWindow, r: { count: number; sum: number }, out: Collector<Row>) =>
    out.collect({ key, start: w.start, end: w.end, count: r.count, sum: r.sum });
  const keyed = records.keyBy((r) => r.key);
  const out =
    shape === "tumbling-aggregate"
      ? keyed.window(TumblingEventTimeWindows.of<Rec>(1000)).localAggregation(local).aggregate(countSum, (key, w, [r], o: Collector<Row>) => toRow(key, w, r, o))
      : shape === "tumbling-reduce"
        ? keyed
            .window(TumblingEventTimeWindows.of<Rec>(1000))
            .localAggregation(local)
            // A reduce that does not keep the key: the keyed side must take it from the partial.
            .reduce((a, b) => ({ key: -1, count: a.count + b.count, sum: a.sum + b.sum }), (key, w, [r], o: Collector<Row>) => toRow(key, w, r, o))
        : shape === "session-aggregate"
          ? keyed.window(EventTimeSessionWindows.withGap<Rec>(SESSION_GAP)).localAggregation(local).aggregate(countSum, (key, w, [r], o: Collector<Row>) => toRow(key, w, r, o))
          : shape === "sliding-aggregate"
          ? keyed.window(SlidingEventTimeWindows.of<Rec>(1000, 250)).localAggregation(local).aggregate(countSum, (key, w, [r], o: Collector<Row>) => toRow(key, w, r, o))
          : records
              .windowAll(TumblingEventTimeWindows.of<Rec>(1000))
              .localAggregation(local)
              .aggregate(countSum, (_key, w, [r], o: Collector<Row>) => toRow(-1, w, r, o));
  // Two-phase: a run stopped with a savepoint shows what it committed, not windows fired after the
  // savepoint's barrier (the restored run fires those again).
  out.uid("windows").sinkTo(committingCollectSink("rows"));
});
