/**
 * The job of the live status line test (test/cli-output.test.ts): numbers 1..PROGRESS_RECORDS as
 * event time in ms, paced so the job runs for about four seconds, counted per key in 100 ms
 * tumbling windows, printed. Its sinks see watermarks, so the line has a watermark lag to show.
 */
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy } from "eddy";
import { pacedNumbers } from "./paced-source.ts";

export const PROGRESS_RECORDS = 4_000;

export default defineJob("progress", (env) => {
  env
    .fromSource(pacedNumbers({ records: PROGRESS_RECORDS, splits: 2, idPrefix: "progress", perPoll: 10, pauseMs: 10 }), WatermarkStrategy.forMonotonousTimestamps<number>(), "Numbers")
    .keyBy((n) => n % 2)
    .window(TumblingEventTimeWindows.of(100))
    .aggregate({ createAccumulator: () => 0, add: (_n: number, acc: number) => acc + 1, getResult: (acc: number) => acc, merge: (a: number, b: number) => a + b })
    .name("Count")
    .uid("count")
    .print();
});
