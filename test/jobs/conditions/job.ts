/**
 * A job whose operator reports which module `#variant` resolved to where it runs (package.json
 * here maps it by the `eddy-test-variant` condition): on worker threads, the workers' resolution.
 */
import { defineJob } from "eddy";
import { collectSink } from "eddy/testing";
import variant from "#variant";

export default defineJob("conditions", (env) => {
  env.setParallelism(2);
  env
    .fromSequence(1, 8)
    .map((n) => `${variant}:${n}`)
    .sinkTo(collectSink("out"));
});
