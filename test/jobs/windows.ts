/**
 * Window jobs for the parallel tests: exported at top level so worker threads can rebuild them.
 * Input is generated deterministically; disorder stays within the watermark bound, so results do
 * not depend on how subtasks interleave.
 */
import {
  defineJob,
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type AggregateFunction,
  type Collector,
} from "eddy";
import { collectSink } from "eddy/testing";
import { prng } from "../fixtures.ts";

export interface Click {
  readonly user: string;
  readonly page: number;
  readonly ts: number;
}

export interface View {
  readonly user: string;
  readonly ad: number;
  readonly ts: number;
}

/** `n` records, `step` ms apart on average, locally shuffled by < `disorder` ms. */
export function generate<T extends { ts: number }>(n: number, seed: number, step: number, disorder: number, make: (i: number, rnd: () => number, ts: number) => T): T[] {
  const rnd = prng(seed);
  const out: { r: T; arrival: number }[] = [];
  for (let i = 0; i < n; i++) {
    const ts = 1_700_000_000_000 + i * step + Math.floor(rnd() * step);
    out.push({ r: make(i, rnd, ts), arrival: ts + rnd() * disorder });
  }
  return out.sort((a, b) => a.arrival - b.arrival).map((x) => x.r);
}

export const BOUND = 500;

/** One window result of this job (kind: which window function emitted it). */
export interface WindowCount {
  readonly kind: string;
  readonly user: string;
  readonly start: number;
  readonly n: number;
}
export const CLICKS = generate<Click>(6_000, 11, 10, BOUND, (_i, rnd, ts) => ({ user: `u${Math.floor(rnd() * 40)}`, page: Math.floor(rnd() * 9), ts }));
export const VIEWS = generate<View>(3_000, 12, 20, BOUND, (_i, rnd, ts) => ({ user: `u${Math.floor(rnd() * 40)}`, ad: Math.floor(rnd() * 5), ts }));

const countPages: AggregateFunction<Click, number, number> = {
  createAccumulator: () => 0,
  add: (_c, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

export const windowsJob = defineJob("windows-parallel", (env) => {
  const clicks = env
    .fromCollection(CLICKS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<Click>(BOUND).withTimestampAssigner((c) => c.ts));
  const views = env
    .fromCollection(VIEWS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<View>(BOUND).withTimestampAssigner((v) => v.ts));
  const byUser = clicks.keyBy((c) => c.user);
  byUser
    .window(TumblingEventTimeWindows.of(1000))
    .aggregate(countPages, (user, w, [n], out: Collector<WindowCount>) => out.collect({ kind: "tumbling", user, start: w.start, n }))
    .uid("tumbling")
    .sinkTo(collectSink("out"));
  byUser
    .window(SlidingEventTimeWindows.of(3000, 1000))
    .reduce((a, b) => (a.page >= b.page ? a : b), (user, w, [c], out: Collector<WindowCount>) => out.collect({ kind: "sliding", user, start: w.start, n: c.page }))
    .uid("sliding")
    .sinkTo(collectSink("out"));
  byUser
    .window(EventTimeSessionWindows.withGap(250))
    .process<WindowCount>({ process: (user, ctx, cs, out) => out.collect({ kind: "session", user, start: ctx.window.start, n: cs.length }) })
    .uid("sessions")
    .sinkTo(collectSink("out"));
  clicks
    .join(views)
    .where((c) => c.user)
    .equalTo((v) => v.user)
    .window(TumblingEventTimeWindows.of(2000))
    .apply((c, v) => ({ kind: "join", user: c.user, start: c.ts, n: v.ts }))
    .uid("join")
    .sinkTo(collectSink("out"));
});
