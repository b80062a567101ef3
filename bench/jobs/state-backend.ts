/**
 * The job of bench/state-backend.ts: a sequence keyed by a skewed or uniform key into a counter
 * per key (value state) and a list of the last values per key (list state, kept at 4). Sizes from
 * environment variables (settings.ts): EDDY_BENCH_SB_RECORDS, EDDY_BENCH_SB_KEYS,
 * EDDY_BENCH_SB_SKEWED (1: 90 % of records on 1 % of the keys), EDDY_BENCH_SB_WRITE_EVERY (n: one record
 * in n writes its key's state, the others only read it; default 1, every record writes).
 */
import { defineJob, ListStateDescriptor, ValueStateDescriptor, type KeyedProcessFunction } from "eddy";
import { setting } from "./settings.ts";

const COUNT = new ValueStateDescriptor<number>("count");
const LAST = new ListStateDescriptor<number>("last");

export const stateBackendJob = defineJob("bench-state-backend", (env) => {
  const keys = setting("EDDY_BENCH_SB_KEYS", 1_000_000)();
  const skewed = setting("EDDY_BENCH_SB_SKEWED", 0)() === 1;
  const hot = Math.max(1, Math.floor(keys / 100));
  const writeEvery = setting("EDDY_BENCH_SB_WRITE_EVERY", 1)();
  const count: KeyedProcessFunction<number, number, never> = {
    processElement(n, ctx) {
      const state = ctx.getState(COUNT);
      if (writeEvery > 1 && n % writeEvery !== 0) {
        // A read-only record: both states read, nothing written.
        if ((state.value() ?? 0) < 0 || ctx.getListState(LAST).get().length > 4) throw new Error("impossible state");
        return;
      }
      state.update((state.value() ?? 0) + 1);
      const last = ctx.getListState(LAST);
      const values = [...last.get(), n];
      last.update(values.length > 4 ? values.slice(-4) : values);
    },
  };
  // A multiplicative hash spreads consecutive numbers over the keys.
  const spread = (n: number, range: number): number => (Math.imul(n, 2654435761) >>> 0) % range;
  env
    .fromSequence(1, setting("EDDY_BENCH_SB_RECORDS", 2_000_000)())
    .keyBy((n) => (skewed && n % 10 !== 0 ? spread(n, hot) : spread(n, keys)))
    .process(count)
    .uid("counter");
});
