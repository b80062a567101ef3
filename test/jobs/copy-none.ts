/**
 * Jobs that count numbers per key (n % KEYS) in a `copy: "none"` value state and emit the count
 * after every number: one writes every change back, the other changes the stored object in place after the first write, which breaks
 * that option's promise (test/copy-none-check.test.ts).
 */
import { defineJob, ValueStateDescriptor, type KeyedProcessFunction } from "eddy";
import { collectSink } from "eddy/testing";

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
