/**
 * Windowed analytics over a click stream: views per page every minute, a sliding "trending" view,
 * and user sessions, with late clicks kept on a side output instead of silently lost.
 *
 *   npx eddy run examples/page-views.ts -p 2
 *
 * Clicks are generated deterministically (see `clickAt`) with event times that arrive up to 3 s
 * out of order, and about 1 in 500 arrives much later (a phone that was offline). The watermark
 * allows 3 s of disorder; windows accept 30 s of allowed lateness, so moderately late clicks
 * update their window (it fires again with the corrected count) and only very late ones go to the
 * "late-clicks" side output.
 */
import {
  defineJob,
  EventTimeSessionWindows,
  OutputTag,
  SlidingEventTimeWindows,
  Time,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type AggregateFunction,
  type Collector,
} from "eddy";

export interface Click {
  readonly id: number;
  readonly user: string;
  readonly page: string;
  /** Event time (ms). */
  readonly ts: number;
}

export const START_MS = Date.UTC(2026, 0, 1);
const PAGES = ["/", "/pricing", "/docs", "/blog", "/signup", "/login", "/docs/windows", "/docs/state"];

/** Click number `i`: 20 clicks per second, arriving up to 3 s early/late; 1 in 500 arrives 2 min late. */
export function clickAt(i: number): Click {
  const h = Math.imul(i ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  const late = h % 500 === 7 ? 120_000 : 0;
  return {
    id: i,
    user: `user-${(h >>> 8) % 300}`,
    page: PAGES[(h >>> 16) % PAGES.length]!,
    ts: START_MS + i * 50 - ((h >>> 4) % 3_000) - late,
  };
}

export const lateClicks = new OutputTag<Click>("late-clicks");

/** What the job prints, one kind per window function (and the late clicks' side output). */
export interface PageViews {
  readonly kind: "views";
  readonly page: string;
  readonly minute: string;
  readonly views: number;
}
export interface Trending {
  readonly kind: "trending";
  readonly page: string;
  readonly until: string;
  readonly views: number;
}
export interface UserSession {
  readonly kind: "session";
  readonly user: string;
  readonly start: string;
  readonly minutes: number;
  readonly clicks: number;
}

/** Counts elements: one number per window, never a buffer of clicks. */
export const countClicks: AggregateFunction<Click, number, number> = {
  createAccumulator: () => 0,
  add: (_click, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

export function pageViewsJob(clicks: number) {
  return defineJob("page-views", (env) => {
    const stream = env
      .fromSequence(0, clicks - 1)
      .map(clickAt)
      .name("clicks")
      .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<Click>(3_000).withTimestampAssigner((c) => c.ts));

    const perMinute = stream
      .keyBy((c) => c.page)
      .window(TumblingEventTimeWindows.of(Time.minutes(1)))
      .allowedLateness(Time.seconds(30))
      .sideOutputLateData(lateClicks)
      .aggregate(countClicks, (page, window, [views], out: Collector<PageViews>) => out.collect({ kind: "views", page, minute: new Date(window.start).toISOString(), views }))
      .uid("views-per-minute");
    perMinute.print();
    perMinute.getSideOutput(lateClicks).map((c) => ({ kind: "late", id: c.id, page: c.page, ts: new Date(c.ts).toISOString() })).print();

    stream
      .keyBy((c) => c.page)
      .window(SlidingEventTimeWindows.of(Time.minutes(5), Time.minutes(1)))
      .aggregate(countClicks, (page, window, [views], out: Collector<Trending>) => out.collect({ kind: "trending", page, until: new Date(window.end).toISOString(), views }))
      .uid("trending")
      .print();

    stream
      .keyBy((c) => c.user)
      .window(EventTimeSessionWindows.withGap(Time.minutes(2)))
      .aggregate(countClicks, (user, window, [clicks], out: Collector<UserSession>) =>
        out.collect({ kind: "session", user, start: new Date(window.start).toISOString(), minutes: (window.end - window.start) / 60_000, clicks }),
      )
      .uid("sessions")
      .print();
  });
}

/** 20 minutes of clicks. */
export default pageViewsJob(24_000);
