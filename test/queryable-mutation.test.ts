/**
 * Queryable state and user code that mutates state objects in place (issue 8): a property test.
 * For random record sequences, a process function keeps per key an object { items, sum } and
 * changes it step by step — in place on the stored object (copy "none": the user promised not
 * to, and breaks the promise anyway), or on the copy it read and then update()s (copy "deep") —
 * while clients read every key concurrently through the state server. Every read must satisfy
 * sum === Σ items and hold only records of that key: a value the state held between two
 * records, never a torn one. Reads run between slices on the task thread, and the value is
 * encoded before the next record.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { defineJob, ValueStateDescriptor, WatermarkStrategy, type KeyedProcessFunction } from "eddy";
import { runJob } from "eddy/testing";
import { createQueryClient } from "eddy/query";
import { EddyError } from "eddy";
import { startControlServer, silentLogger } from "../packages/eddy/src/internal.ts";
import { pacedNumbers } from "./jobs/paced-source.ts";

const KEYS = 5;

interface Basket {
  items: number[];
  sum: number;
}

function basketJob(values: readonly number[], copy: "none" | "deep") {
  const baskets = new ValueStateDescriptor<Basket>("basket", { copy }).setQueryable("baskets");
  const fill: KeyedProcessFunction<number, number, never> = {
    processElement(n, ctx) {
      const state = ctx.getState(baskets);
      let basket = state.value();
      if (basket === undefined) state.update((basket = { items: [], sum: 0 }));
      // Step by step: between these lines the object is inconsistent.
      basket.items.push(n);
      for (let i = 0; i < 50; i++) basket.sum += n / 50;
      basket.sum = Math.round(basket.sum);
      if (copy === "deep") {
        state.update(basket);
        // Mutating after update() must not change what the state holds.
        basket.items.push(-1);
        basket.sum = Number.NaN;
      }
    },
  };
  return defineJob("baskets", (env) => {
    // Three values per poll with a pause between polls, so reads fall between records; then the
    // source holds (the job keeps serving its final state until cancelled).
    env
      .fromSource(pacedNumbers({ records: values.length, splits: 1, idPrefix: "values", perPoll: 3, pauseMs: 1, endless: true }), WatermarkStrategy.noWatermarks<number>(), "values")
      .map((i: number) => values[i - 1]!)
      .keyBy((n) => n % KEYS)
      .process(fill)
      .uid("fill");
  });
}

test("reads of state mutated in place while being queried are never torn (property)", { timeout: 240_000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-query-mutation-"));
  let run = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 1_000 }), { minLength: 50, maxLength: 400 }), fc.constantFrom("none" as const, "deep" as const), async (values, copy) => {
        const jobId = `baskets-${run++}`;
        const job = runJob(basketJob(values, copy), { mode: "inline", jobId });
        const control = await startControlServer(job, { home, logger: silentLogger });
        const client = createQueryClient({ home });
        // What each key holds once every value is in: the reads end when they see it.
        const expected = Array.from({ length: KEYS }, (_, key) => values.filter((v) => v % KEYS === key));
        let complete = false;
        let reads = 0;
        const reader = async (): Promise<void> => {
          while (!complete) {
            let baskets: (Basket | undefined)[];
            try {
              baskets = await client.getMany<Basket>(jobId, "baskets", [0, 1, 2, 3, 4]);
            } catch (e) {
              if (e instanceof EddyError && ["UNKNOWN_STATE", "NOT_READY", "NOT_SERVING", "STATE_SERVER_UNREACHABLE"].includes(e.code)) {
                await new Promise((resolve) => setTimeout(resolve, 2));
                continue;
              }
              throw e;
            }
            baskets.forEach((b, key) => {
              if (b === undefined) return;
              reads++;
              assert.equal(b.sum, b.items.reduce((a, x) => a + x, 0), `torn read of key ${key}: ${JSON.stringify(b)}`);
              assert.deepEqual(b.items, expected[key]!.slice(0, b.items.length), `key ${key} holds a prefix of its records`);
            });
            complete ||= baskets.every((b, key) => (b?.items.length ?? 0) === expected[key]!.length);
          }
        };
        try {
          await Promise.all([reader(), reader(), reader()]);
        } finally {
          client.close();
          job.cancel();
          await job.done.catch(() => undefined);
          await control.close();
        }
        assert.ok(reads > 0, "some reads happened while the job ran");
      }),
      { numRuns: 12 },
    );
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
