import assert from "node:assert/strict";
import { test } from "node:test";
import { runJob } from "eddy/testing";
import job, { RECORDS } from "./jobs/watermark-interval.ts";

/** The calls of the periodic generator that records saw: the highest watermark a record reported. */
async function periodicCalls(mode: "inline" | "threads", config: Record<string, string>): Promise<number> {
  const handle = runJob(job, { mode, parallelism: 1, config });
  await handle.done;
  const seen = handle.collected<number>("watermarks");
  assert.equal(seen.length, RECORDS);
  return Math.max(0, ...seen.filter((w) => Number.isFinite(w)));
}

for (const mode of ["inline", "threads"] as const) {
  test(`pipeline.auto-watermark-interval reaches the watermark generators (${mode}) and wins over the job's setting`, async () => {
    // ~600 ms of input: at 20 ms the generator is asked dozens of times, at the job's 1 s at most once or twice.
    const configured = await periodicCalls(mode, { "pipeline.auto-watermark-interval": "20ms" });
    const own = await periodicCalls(mode, {});
    assert.ok(configured >= 5, `${mode}: ${configured} periodic emits at 20 ms over ~600 ms`);
    assert.ok(own <= 2, `${mode}: ${own} periodic emits at the job's 1 s`);
  });
}
