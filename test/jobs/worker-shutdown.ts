/**
 * Numbers from an endless paced source, summed per key (keyed state in every subtask, so each
 * writes a task file at every checkpoint): the job test/worker-shutdown.test.ts cancels while its
 * checkpoint files are being written.
 */
import { defineJob, WatermarkStrategy } from "eddy";
import { collectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";

export default defineJob("worker-shutdown", (env) => {
  env
    .fromSource(pacedNumbers({ records: 1_000_000, splits: 2, idPrefix: "n", perPoll: 50, pauseMs: 5, endless: true }), WatermarkStrategy.noWatermarks<number>(), "numbers")
    .keyBy((n) => n % 10)
    .reduce((a, b) => a + b)
    .uid("sums")
    .sinkTo(collectSink("sums"));
});
