/** A job module that imports a module by a path computed at run time (worker-bundle.test.ts). */
import { defineJob } from "eddy";
import { collectSink } from "eddy/testing";

const HELPER = process.env.EDDY_TEST_HELPER ?? "./bundled.ts";
const helper = (await import(HELPER)) as typeof import("./bundled.ts");

export const computedImportJob = defineJob("computed-import", (env) => {
  const name = typeof helper.importMetaJob.name === "string" ? helper.importMetaJob.name : "?";
  env
    .fromSequence(0, 19)
    .rebalance()
    .map((n) => ({ n, helper: name }))
    .sinkTo(collectSink("out"));
});
