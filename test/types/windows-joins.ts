/**
 * Type tests of windows, window joins, co-groups and interval joins: window functions in every form
 * (function, ProcessWindowFunction object, class, factory) infer or check their output type.
 * Every `@ts-expect-error` must fail without its directive.
 */
import {
  defineJob,
  EventTimeSessionWindows,
  functionFactory,
  OutputTag,
  TumblingEventTimeWindows,
  type AggregateFunction,
  type Collector,
  type ProcessWindowContext,
  type ProcessWindowFunction,
  type TimeWindow,
} from "eddy";
import { expectRecords, expectType } from "./expect-type.ts";

interface Click {
  user: string;
  page: string;
  ts: number;
}
interface View {
  user: string;
  ad: number;
  ts: number;
}
interface PerUser {
  user: string;
  end: number;
  n: number;
}

const countClicks: AggregateFunction<Click, number, number> = {
  createAccumulator: () => 0,
  add: (_c, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

class CountPerUser implements ProcessWindowFunction<Click, PerUser, string, TimeWindow> {
  process(user: string, ctx: ProcessWindowContext<TimeWindow>, clicks: Click[], out: Collector<PerUser>): void {
    out.collect({ user, end: ctx.window.end, n: clicks.length });
  }
}

export default defineJob("type-tests: windows and joins", (env) => {
  const clicks = env.fromElements<Click>({ user: "u", page: "/", ts: 0 });
  const views = env.fromElements<View>({ user: "u", ad: 1, ts: 0 });
  const windowed = clicks.keyBy((c) => c.user).window(TumblingEventTimeWindows.of(1000));

  // reduce without a window function keeps the record type; the reduce must return it.
  expectRecords<Click>()(windowed.reduce((a, b) => (a.ts > b.ts ? a : b)));
  // @ts-expect-error a reduce returns the record type, not a number
  windowed.reduce((a, b) => a.ts + b.ts);

  // aggregate infers its result from the AggregateFunction.
  expectRecords<number>()(windowed.aggregate(countClicks));
  // … and with a window function (function form), from its annotated collector.
  const perUser = windowed.aggregate(countClicks, (user, w, [n], out: Collector<PerUser>) => out.collect({ user, end: w.end, n }));
  expectRecords<PerUser>()(perUser);
  // @ts-expect-error a window result has only its fields
  perUser.map((r) => r.page);
  // @ts-expect-error collecting the wrong type into a typed collector
  windowed.aggregate(countClicks, (user, _w, [n], out: Collector<PerUser>) => out.collect({ user, n }));
  // @ts-expect-error without an output type the window function's collector takes nothing (never, not unknown)
  windowed.aggregate(countClicks, (user, w, [n], out) => out.collect({ user, end: w.end, n }));
  windowed.aggregate(countClicks, (_user, _w, [n], out: Collector<string>) => {
    // @ts-expect-error the pre-aggregated value is the AggregateFunction's result (a number)
    const s: string = n;
    out.collect(s);
  });
  // reduce with a window function: the input is the reduced record.
  expectRecords<string>()(windowed.reduce((a, b) => (a.ts > b.ts ? a : b), (user, _w, [c], out: Collector<string>) => out.collect(`${user}:${c.page}`)));

  // apply (function form): the key, window and elements are typed.
  const applied = windowed.apply<PerUser>((user, w, cs, out) => {
    expectType<string>()(user);
    expectType<TimeWindow>()(w);
    expectType<Click[]>()(cs);
    out.collect({ user, end: w.end, n: cs.length });
  });
  expectRecords<PerUser>()(applied);
  // @ts-expect-error without an output type, apply's collector takes nothing
  windowed.apply((user, _w, _cs, out) => out.collect(user));

  // process: a ProcessWindowFunction object (annotated or with a type argument), a class, a factory.
  expectRecords<PerUser>()(windowed.process({ process: (user, ctx, cs, out: Collector<PerUser>) => out.collect({ user, end: ctx.window.end, n: cs.length }) }));
  expectRecords<number>()(windowed.process<number>({ process: (_user, _ctx, cs, out) => out.collect(cs.length) }));
  expectRecords<PerUser>()(windowed.process(new CountPerUser()));
  expectRecords<PerUser>()(windowed.process(() => new CountPerUser()));
  expectRecords<PerUser>()(windowed.aggregate(countClicks, functionFactory(() => ({ process: (user: string, ctx: ProcessWindowContext<TimeWindow>, [n]: number[], out: Collector<PerUser>) => out.collect({ user, end: ctx.window.end, n: n ?? 0 }) }))));
  // @ts-expect-error (issue 32) a process({...}) without an output type no longer yields unknown records
  windowed.process({ process: (user, _ctx, _cs, out) => out.collect(user) });
  // @ts-expect-error a ProcessWindowFunction of another input type
  views.keyBy((v) => v.user).window(TumblingEventTimeWindows.of(1000)).process(new CountPerUser());

  // Late data goes to a side output of the record type.
  const late = new OutputTag<Click>("late");
  const lateViews = new OutputTag<View>("late-views");
  expectRecords<Click>()(windowed.sideOutputLateData(late).aggregate(countClicks).getSideOutput(late));
  // @ts-expect-error late clicks need a tag of clicks
  windowed.sideOutputLateData(lateViews);

  // windowAll is keyed by nothing; its functions see the same types.
  expectRecords<number>()(clicks.windowAll(EventTimeSessionWindows.withGap(100)).aggregate(countClicks));

  // Window join: the output is the pair function's result.
  const joined = clicks
    .join(views)
    .where((c) => c.user)
    .equalTo((v) => v.user)
    .window(TumblingEventTimeWindows.of(1000))
    .apply((c, v) => ({ user: c.user, page: c.page, ad: v.ad }));
  expectRecords<{ user: string; page: string; ad: number }>()(joined);
  // @ts-expect-error the right side of the join is a View
  clicks.join(views).where((c) => c.user).equalTo((v) => v.user).window(TumblingEventTimeWindows.of(1000)).apply((_c, v) => v.page);
  // @ts-expect-error both sides are keyed by the same key type
  clicks.join(views).where((c) => c.user).equalTo((v) => v.ad);
  expectRecords<string>()(
    clicks.join(views).where((c) => c.user).equalTo((v) => v.user).window(TumblingEventTimeWindows.of(1000)).flatApply((c, v, out: Collector<string>) => out.collect(c.page + v.ad)),
  );

  // coGroup: lists of both sides, output from the collector.
  const cogrouped = clicks
    .coGroup(views)
    .where((c) => c.user)
    .equalTo((v) => v.user)
    .window(TumblingEventTimeWindows.of(1000))
    .apply((cs, vs, out: Collector<[number, number]>) => out.collect([cs.length, vs.length]));
  expectRecords<[number, number]>()(cogrouped);
  // @ts-expect-error without an output type, a co-group's collector takes nothing
  clicks.coGroup(views).where((c) => c.user).equalTo((v) => v.user).window(TumblingEventTimeWindows.of(1000)).apply((cs, _vs, out) => out.collect(cs.length));

  // Interval join: ProcessJoinFunction with the left, right and output types.
  const byUser = views.keyBy((v) => v.user);
  const interval = clicks
    .keyBy((c) => c.user)
    .intervalJoin(byUser)
    .between(-1000, 1000)
    .process({ processElement: (c, v, ctx, out: Collector<string>) => out.collect(`${c.page}:${v.ad}@${ctx.timestamp()}`) });
  expectRecords<string>()(interval);
  clicks
    .keyBy((c) => c.user)
    .intervalJoin(byUser)
    .between(0, 10)
    .process<string>({
      // @ts-expect-error the right record is a View, which has no page
      processElement: (_c, v, _ctx, out) => out.collect(v.page),
    });
  // @ts-expect-error both sides of an interval join are keyed by the same key type
  clicks.keyBy((c) => c.ts).intervalJoin(byUser);
});
