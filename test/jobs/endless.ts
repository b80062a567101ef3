/**
 * A job that runs until it is stopped from outside, idle meanwhile (its source never has data and
 * looks again every 20 ms): for the control API tests (test/control-cli.test.ts).
 */
import { defineJob, staticSplitEnumerator, WatermarkStrategy, type Source } from "eddy";

const idleSource: Source<number, string> = {
  boundedness: "continuous",
  maxParallelism: 1,
  createEnumerator: (context) => staticSplitEnumerator(context, ["idle"]),
  createReader: () => ({
    pollNext: () => "nothing",
    isAvailable: () => new Promise((resolve) => setTimeout(resolve, 20)),
    addSplits() {},
    notifyNoMoreSplits() {},
    snapshotState: () => ["idle"],
  }),
};

export default defineJob("endless", (env) => {
  env.fromSource(idleSource, WatermarkStrategy.noWatermarks(), "Idle").print();
});
