/** A job module that uses import.meta.resolve, which a worker bundle cannot keep (worker-bundle.test.ts). */
import { defineJob } from "eddy";
import { collectSink } from "eddy/testing";

export const NEIGHBOUR = import.meta.resolve("./bundled.ts");

export const unbundlableJob = defineJob("unbundlable", (env) => {
  env
    .fromSequence(0, 19)
    .rebalance()
    .map((n) => ({ n, neighbour: NEIGHBOUR }))
    .sinkTo(collectSink("out"));
});
