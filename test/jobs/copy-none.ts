/**
 * Jobs that count numbers per key (n % KEYS) in a `copy: "none"` value state and emit the count
 * after every number: one writes every change back, the other changes the stored object in place after the first write, which breaks
 * that option's promise (test/copy-none-check.test.ts).
 */
import { defineJob, ValueStateDescriptor, WatermarkStrategy, type KeyedProcessFunction } from "eddy";
import { collectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";

export const KEYS = 3;
export const NUMBERS = 3_000;

const counter = new ValueStateDescriptor<{ key: number; n: number }>("counter", { copy: "none" });

function countingJob(name: string, inPlace: boolean) {
  const count: KeyedProcessFunction<number, number, { key: number; n: number }> = {
    processElement(n, ctx, out) {
      const state = ctx.getState(counter);
      const c = state.value();
      if (c === undefined) {
        state.update({ key: n % KEYS, n: 1 });
      } else {
        c.n++;
        if (!inPlace) state.update(c);
      }
      out.collect({ ...state.value()! });
    },
  };
  return defineJob(name, (env) => {
    env
      .fromSequence(1, NUMBERS)
      .keyBy((n) => n % KEYS)
      .process(count)
      .sinkTo(collectSink("counts"));
  });
}

export const writtenBack = countingJob("copy-none-written-back", false);
export const changedInPlace = countingJob("copy-none-in-place", true);

/**
 * Key 1's value is changed in place right after its write and never read again, so only a
 * checkpoint (the source is paced: ~0.5 s) or the end of the input can find it.
 */
export const changedNeverReadAgain = defineJob("copy-none-never-read-again", (env) => {
  const changeOnce: KeyedProcessFunction<number, number, number> = {
    processElement(n, ctx, out) {
      if (n === 1) {
        const v = { key: 1, n: 1 };
        ctx.getState(counter).update(v);
        v.n = 2;
      }
      out.collect(n);
    },
  };
  env
    .fromSource(pacedNumbers({ records: 200, splits: 1, idPrefix: "paced", perPoll: 2, pauseMs: 5 }), WatermarkStrategy.noWatermarks<number>(), "paced")
    .keyBy((n) => n)
    .process(changeOnce)
    .sinkTo(collectSink("numbers"));
});
