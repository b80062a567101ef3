/**
 * The job of bench/queryable.ts: a sequence keyed by `n mod keys` into a counter per key, in
 * value state made queryable as "counts". Sizes from environment variables (settings.ts).
 */
import { defineJob, ValueStateDescriptor, type KeyedProcessFunction } from "eddy";
import { setting } from "./settings.ts";

const COUNT = new ValueStateDescriptor<number>("count").setQueryable("counts");

export const counter = defineJob("bench-queryable", (env) => {
  const keys = setting("EDDY_BENCH_Q_KEYS", 100_000)();
  const count: KeyedProcessFunction<number, number, never> = {
    processElement(_n, ctx) {
      const state = ctx.getState(COUNT);
      state.update((state.value() ?? 0) + 1);
    },
  };
  env
    .fromSequence(1, setting("EDDY_BENCH_Q_RECORDS", 20_000_000)())
    .keyBy((n) => n % keys)
    .process(count)
    .uid("counter");
});

