/**
 * Jobs that count numbers per key (n % KEYS) in a `copy: "none"` value state and emit the count
 * after every number: one writes every change back, the other changes the stored object in place after the first write, which breaks
 * that option's promise (test/copy-none-check.test.ts).
 */
import { defineJob, TumblingEventTimeWindows, ValueStateDescriptor, WatermarkStrategy, type KeyedProcessFunction, type ProcessWindowFunction, type TimeWindow } from "eddy";
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

/**
 * A process window function over 100 ms tumbling windows of the numbers (event time n ms), keyed
 * by n % KEYS, that counts its firings per key in `globalState()` and keeps its window's sum in
 * `windowState()`, both `copy: "none"`. `mistake`: where it changes a value in place instead of
 * writing it back — the global count (found at the key's next firing) or the window's sum (found
 * at the end of the input: nothing reads it again).
 */
export function windowedJob(mistake: "none" | "global" | "window") {
  const firings = new ValueStateDescriptor<{ n: number }>("firings", { copy: "none" });
  const sum = new ValueStateDescriptor<{ total: number }>("window-sum", { copy: "none" });
  const fn: ProcessWindowFunction<number, { key: number; firings: number; total: number }, number, TimeWindow> = {
    process(key, ctx, elements, out) {
      const count = ctx.globalState().getState(firings);
      const c = count.value() ?? { n: 0 };
      if (mistake === "global" && c.n > 0) c.n++;
      else count.update({ n: c.n + 1 });
      const total = { total: elements.reduce((a, b) => a + b, 0) };
      ctx.windowState().getState(sum).update(total);
      if (mistake === "window") total.total = -1;
      out.collect({ key, firings: count.value()!.n, total: ctx.windowState().getState(sum).value()!.total });
    },
  };
  return defineJob(`copy-none-windows-${mistake}`, (env) => {
    env
      .fromSequence(1, NUMBERS)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
      .keyBy((n) => n % KEYS)
      .window(TumblingEventTimeWindows.of(100))
      .process(fn)
      .sinkTo(collectSink("windows"));
  });
}
