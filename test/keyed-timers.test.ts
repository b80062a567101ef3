import assert from "node:assert/strict";
import { test } from "node:test";
import {
  defineJob,
  MapStateDescriptor,
  OutputTag,
  ValueStateDescriptor,
  WatermarkStrategy,
  type KeyedProcessFunction,
} from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { outOfOrderEvents, punctuated, sortBy, type Event } from "./fixtures.ts";

const WINDOW_MS = 10_000;
const DISORDER_MS = 3_000;

interface WindowCount {
  readonly user: string;
  readonly windowStart: number;
  readonly count: number;
  readonly total: number;
  /** The watermark when the result was emitted (must have passed the window end). */
  readonly emittedAtWatermark: number;
}

/**
 * Tumbling event-time windows built by hand from keyed MapState and event-time timers: the
 * classic KeyedProcessFunction. Late events (window already fired) go to a side output.
 */
const late = new OutputTag<Event>("late");
function windowCounter(): KeyedProcessFunction<string, Event, WindowCount> {
  const windows = new MapStateDescriptor<number, { count: number; total: number }>("windows");
  return {
    processElement(e, ctx, out) {
      const start = e.ts - (e.ts % WINDOW_MS);
      const end = start + WINDOW_MS - 1;
      if (end <= ctx.timerService().currentWatermark()) {
        ctx.output(late, e);
        return;
      }
      const state = ctx.getMapState(windows);
      const acc = state.get(start) ?? { count: 0, total: 0 };
      acc.count++;
      acc.total += e.amount;
      state.put(start, acc);
      ctx.timerService().registerEventTimeTimer(end);
      void out;
    },
    onTimer(timestamp, ctx, out) {
      const start = timestamp - WINDOW_MS + 1;
      const state = ctx.getMapState(windows);
      const acc = state.get(start);
      assert.ok(acc !== undefined, "a timer fires only for a window that has state");
      out.collect({
        user: ctx.getCurrentKey(),
        windowStart: start,
        count: acc.count,
        total: acc.total,
        emittedAtWatermark: ctx.timerService().currentWatermark(),
      });
      state.remove(start);
    },
  };
}


function reference(events: readonly Event[]): Omit<WindowCount, "emittedAtWatermark">[] {
  const acc = new Map<string, { user: string; windowStart: number; count: number; total: number }>();
  for (const e of events) {
    const windowStart = e.ts - (e.ts % WINDOW_MS);
    const k = `${e.user}/${windowStart}`;
    const a = acc.get(k) ?? { user: e.user, windowStart, count: 0, total: 0 };
    a.count++;
    a.total += e.amount;
    acc.set(k, a);
  }
  return [...acc.values()];
}

for (const parallelism of [1, 3]) {
  test(`event-time timers over out-of-order input match a direct computation (parallelism ${parallelism})`, async () => {
    const events = outOfOrderEvents(5000, 17, 37, DISORDER_MS, parallelism);
    const handle = runJob(
      defineJob("windows-by-hand", (env) => {
        env.setParallelism(parallelism);
        const counted = env
          .fromCollection(events)
          .assignTimestampsAndWatermarks(punctuated<Event>(DISORDER_MS))
          .keyBy((e) => e.user)
          .process(windowCounter())
          .uid("window-counter");
        counted.sinkTo(collectSink("windows"));
        counted.getSideOutput(late).sinkTo(collectSink("late"));
      }),
    );
    await handle.done;
    const got = handle.collected<WindowCount>("windows");
    assert.equal(handle.collected("late").length, 0, "disorder is within the bound: nothing is late");
    const key = (w: { user: string; windowStart: number }) => `${w.user}/${String(w.windowStart).padStart(16, "0")}`;
    assert.deepEqual(
      sortBy(got.map(({ emittedAtWatermark: _, ...w }) => w), key),
      sortBy(reference(events), key),
    );
    // Fired mid-stream by watermarks (not all at the end), and never before the window ended.
    for (const w of got) assert.ok(w.emittedAtWatermark >= w.windowStart + WINDOW_MS - 1);
    assert.ok(got.filter((w) => w.emittedAtWatermark !== Infinity).length > got.length / 2);
    // Per key, windows fire in timestamp order.
    const byUser = new Map<string, number[]>();
    for (const w of got) byUser.set(w.user, [...(byUser.get(w.user) ?? []), w.windowStart]);
    for (const starts of byUser.values()) assert.deepEqual(starts, [...starts].sort((a, b) => a - b));
  });
}

test("late records reach the function with their timestamp, and it decides", async () => {
  const events: Event[] = [
    { user: "a", ts: 1000, amount: 1 },
    { user: "a", ts: 25_000, amount: 2 }, // moves the watermark past window [0, 10000)
    { user: "a", ts: 2000, amount: 3 }, // late
  ];
  const handle = runJob(
    defineJob("late", (env) => {
      const counted = env
        .fromCollection(events)
        .assignTimestampsAndWatermarks(punctuated<Event>(0))
        .keyBy((e) => e.user)
        .process(windowCounter());
      counted.sinkTo(collectSink("windows"));
      counted.getSideOutput(late).sinkTo(collectSink("late"));
    }),
  );
  await handle.done;
  assert.deepEqual(handle.collected("late"), [{ user: "a", ts: 2000, amount: 3 }]);
  assert.deepEqual(
    handle.collected<WindowCount>("windows").map((w) => [w.windowStart, w.count, w.total]),
    [
      [0, 1, 1],
      [20_000, 1, 2],
    ],
  );
});

test("timers are deduplicated per key and timestamp, and fire in timestamp order", async () => {
  const fired: string[] = [];
  const handle = runJob(
    defineJob("dedup", (env) => {
      env
        .fromElements("b", "a", "b", "a", "c")
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<string>().withTimestampAssigner(() => 5))
        .keyBy((k) => k)
        .process<string>({
          processElement(k, ctx) {
            // The same timer three times, plus one that is deleted again.
            ctx.timerService().registerEventTimeTimer(k === "a" ? 300 : 200);
            ctx.timerService().registerEventTimeTimer(k === "a" ? 300 : 200);
            ctx.timerService().registerEventTimeTimer(100);
            ctx.timerService().registerEventTimeTimer(999);
            ctx.timerService().deleteEventTimeTimer(999);
          },
          onTimer(ts, ctx, out) {
            fired.push(`${ctx.getCurrentKey()}@${ts}`);
            out.collect(`${ctx.getCurrentKey()}@${ts}`);
          },
        })
        .sinkTo(collectSink("fired"));
    }),
  );
  await handle.done;
  assert.equal(fired.length, 6);
  assert.deepEqual(fired.map((f) => Number(f.split("@")[1])), [100, 100, 100, 200, 200, 300]);
  assert.deepEqual(new Set(fired), new Set(["a@100", "b@100", "c@100", "b@200", "c@200", "a@300"]));
});

test("keyed state of different keys is isolated, and timer output carries the timer timestamp", async () => {
  const handle = runJob(
    defineJob("isolation", (env) => {
      env
        .fromElements({ k: "x", v: 1 }, { k: "y", v: 10 }, { k: "x", v: 2 }, { k: "y", v: 20 })
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<{ k: string; v: number }>().withTimestampAssigner((e) => e.v))
        .keyBy((e) => e.k)
        .process<string>({
          processElement(e, ctx) {
            const sum = ctx.getState(new ValueStateDescriptor<number>("sum"));
            sum.update((sum.value() ?? 0) + e.v);
            ctx.timerService().registerEventTimeTimer(1000);
          },
          onTimer(ts, ctx, out) {
            out.collect(`${ctx.getCurrentKey()}=${ctx.getState(new ValueStateDescriptor<number>("sum")).value()} @${ctx.timestamp()} (${ts})`);
          },
        })
        .sinkTo(collectSink("sums"));
    }),
  );
  await handle.done;
  assert.deepEqual(handle.collected<string>("sums").sort(), ["x=3 @1000 (1000)", "y=30 @1000 (1000)"]);
});
