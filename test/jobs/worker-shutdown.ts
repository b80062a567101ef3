/**
 * Numbers from an endless paced source, summed per key (keyed state in every subtask, so each
 * writes a task file at every checkpoint), into a sink whose writers close slowly (1 s, longer than a checkpoint file takes, logged
 * as "close-start <subtask>" and "close-end <subtask>" to EDDY_SLOW_STORAGE_LOG): the job
 * test/worker-shutdown.test.ts cancels while its checkpoint files are being written.
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { defineJob, WatermarkStrategy, type Sink } from "eddy";
import { pacedNumbers } from "./paced-source.ts";

const slowClosingSink: Sink<number> = {
  createWriter(context) {
    const log = process.env.EDDY_SLOW_STORAGE_LOG!;
    return {
      write() {},
      async close() {
        appendFileSync(log, `close-start ${context.subtaskIndex}\n`);
        await sleep(1_000);
        appendFileSync(log, `close-end ${context.subtaskIndex}\n`);
      },
    };
  },
};

export default defineJob("worker-shutdown", (env) => {
  env
    .fromSource(pacedNumbers({ records: 1_000_000, splits: 2, idPrefix: "n", perPoll: 50, pauseMs: 5, endless: true }), WatermarkStrategy.noWatermarks<number>(), "numbers")
    .keyBy((n) => n % 10)
    .reduce((a, b) => a + b)
    .uid("sums")
    .sinkTo(slowClosingSink);
});
