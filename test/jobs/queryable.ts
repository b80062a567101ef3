/**
 * The job of the queryable state tests (test/queryable-state.test.ts): record numbers 1..RECORDS
 * from SPLITS paced splits, keyed by `n % KEYS`:
 * - "counts": a process function counting records per key in value state made queryable with
 *   `setQueryable`; it keeps { count, check } and updates both fields in place (copy "none"), so a
 *   torn read would show count !== check;
 * - "latest": `asQueryableState`, the latest record number of each key.
 * With EDDY_Q_HOLD=1 the source holds after its last record instead of ending, so the job keeps
 * serving its final state until stopped. With EDDY_Q_FAULT_AT=n (and EDDY_Q_MARKER, a file that
 * does not exist yet) the counter throws once at record n.
 */
import { writeFileSync } from "node:fs";
import { defineJob, ValueStateDescriptor, WatermarkStrategy, type KeyedProcessFunction } from "eddy";
import { pacedNumbers } from "./paced-source.ts";

export const RECORDS = Number(process.env.EDDY_Q_RECORDS ?? 40_000);
export const KEYS = 37;
export const SPLITS = 4;

export interface Counter {
  count: number;
  /** Always equal to count between two records. */
  check: number;
}

export const COUNTS = new ValueStateDescriptor<Counter>("count", { copy: "none" }).setQueryable("counts");

export default defineJob("queryable", (env) => {
  env.enableCheckpointing(200);
  const faultAt = Number(process.env.EDDY_Q_FAULT_AT ?? 0);
  const marker = process.env.EDDY_Q_MARKER;
  const counting: KeyedProcessFunction<number, number, never> = {
    processElement(n, ctx) {
      const state = ctx.getState(COUNTS);
      let c = state.value();
      if (c === undefined) state.update((c = { count: 0, check: 0 }));
      // In place, field by field: a read in between would be torn.
      c.count++;
      if (n === faultAt && marker !== undefined) {
        try {
          writeFileSync(marker, "fired", { flag: "wx" });
          throw new Error(`injected fault at record ${n}`);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        }
      }
      c.check++;
    },
  };
  const keyed = env
    .fromSource(
      pacedNumbers({ records: RECORDS, splits: SPLITS, idPrefix: "q", perPoll: Number(process.env.EDDY_Q_PER_MS ?? 20), pauseMs: 1, endless: process.env.EDDY_Q_HOLD === "1" }),
      WatermarkStrategy.noWatermarks<number>(), "numbers")
    .uid("numbers")
    .keyBy((n) => n % KEYS);
  keyed.process(counting).uid("counter");
  keyed.asQueryableState("latest").uid("latest");
});
