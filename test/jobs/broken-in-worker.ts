/** A job module whose top level throws on worker threads (e.g. a missing resource there). */
import { isMainThread } from "node:worker_threads";
import { defineJob } from "eddy";
import { collectSink } from "eddy/testing";

if (!isMainThread) throw new Error("the configuration file is not readable from worker threads");

export const brokenInWorker = defineJob("broken-in-worker", (env) => {
  env.fromSequence(1, 100).keyBy((n) => n % 3).sum().sinkTo(collectSink("out"));
});
