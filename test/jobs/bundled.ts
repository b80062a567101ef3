/**
 * Jobs for worker-bundle.test.ts: at run time on worker threads they use `import.meta`, read a file
 * next to their module, call an npm package (kept outside the bundle), and one of them fails.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { defineJob } from "eddy";
import { collectSink } from "eddy/testing";

export interface Seen {
  readonly n: number;
  readonly url: string;
  readonly dirname: string | undefined;
  readonly filename: string | undefined;
  readonly bytes: number;
  readonly sample: number;
}

export const importMetaJob = defineJob("bundle-import-meta", (env) => {
  env
    .fromSequence(0, 19)
    .rebalance()
    .map(
      (n): Seen => ({
        n,
        url: import.meta.url,
        dirname: import.meta.dirname,
        filename: import.meta.filename,
        bytes: readFileSync(new URL("./bundled.ts", import.meta.url)).length,
        sample: fc.sample(fc.integer({ min: n, max: n }), 1)[0]!,
      }),
    )
    .sinkTo(collectSink("out"));
});

export const failingJob = defineJob("bundle-failing", (env) => {
  env
    .fromSequence(0, 19)
    .rebalance()
    .map((n) => {
      if (n === 7) throw new Error("seven is not allowed");
      return n;
    })
    .sinkTo(collectSink("out"));
});
