/**
 * A job that shows how often its watermark generator's `onPeriodicEmit` runs: the generator emits
 * watermark k at its k-th call, and each record reports the watermark its operator has seen. The
 * job sets an auto-watermark interval of 1 s; the source takes ~40 × 15 ms, so a run that counts
 * many calls got a shorter interval from its configuration (test/watermark-interval.test.ts).
 */
import { defineJob, WatermarkStrategy } from "eddy";
import { collectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";

export const JOB_INTERVAL_MS = 1_000;
export const RECORDS = 40;

export default defineJob("watermark-interval", (env) => {
  env.setAutoWatermarkInterval(JOB_INTERVAL_MS);
  const countingCalls = WatermarkStrategy.forGenerator<number>(() => {
    let calls = 0;
    return {
      onEvent() {},
      onPeriodicEmit(output) {
        output.emitWatermark(++calls);
      },
    };
  });
  env
    .fromSource(pacedNumbers({ records: RECORDS, splits: 1, idPrefix: "paced", perPoll: 1, pauseMs: 15 }), countingCalls, "paced")
    .process<number>({
      processElement(_n, ctx, out) {
        out.collect(ctx.timerService().currentWatermark());
      },
    })
    .sinkTo(collectSink("watermarks"));
});
