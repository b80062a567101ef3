/**
 * Windows against an oracle that computes the same windows directly from the whole input.
 *
 * Without late data (disorder within the watermark bound) every element counts and each window
 * fires once, so the oracle groups by key and window and applies the function. With late data the
 * oracle replays the watermark the operator sees (a punctuated generator: after each element,
 * watermark = max timestamp - bound - 1) and decides per element which windows are still open,
 * exactly as the lateness rules say; it runs on one subtask so the order is deterministic.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ContinuousEventTimeTrigger,
  CountTrigger,
  DeltaEvictor,
  defineJob,
  EventTimeSessionWindows,
  GlobalWindows,
  OutputTag,
  PurgingTrigger,
  SlidingEventTimeWindows,
  Time,
  TimeEvictor,
  TimeWindow,
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
  WatermarkStrategy,
  WindowStagger,
  ValueStateDescriptor,
  type AggregateFunction,
  type ProcessWindowFunction,
  type Trigger,
  type WindowAssigner,
  type Collector,
} from "eddy";
import { collectSink, OperatorTestHarness, runJob } from "eddy/testing";
import { windowOperator, slidingPaneOperator } from "../packages/eddy/src/internal.ts";
import { lateRecordsDropped, prng, punctuated } from "./fixtures.ts";

interface Ev {
  readonly key: string;
  readonly ts: number;
  readonly v: number;
}

interface Out {
  readonly key: string;
  readonly start: number;
  readonly end: number;
  readonly result: number;
}

/** Events over `keys` keys, timestamps advancing `step` ms on average, each delayed by < `disorder`. */
function events(n: number, keys: number, step: number, disorder: number, seed: number): Ev[] {
  const rnd = prng(seed);
  const out: { e: Ev; arrival: number }[] = [];
  for (let i = 0; i < n; i++) {
    const ts = 1_000_000 + i * step + Math.floor(rnd() * step);
    out.push({ e: { key: `k${Math.floor(rnd() * keys)}`, ts, v: 1 + Math.floor(rnd() * 100) }, arrival: ts + rnd() * disorder });
  }
  out.sort((a, b) => a.arrival - b.arrival);
  return out.map((x) => x.e);
}

const sumReduce = (a: Ev, b: Ev): Ev => ({ key: a.key, ts: Math.max(a.ts, b.ts), v: a.v + b.v });
const sumAggregate: AggregateFunction<Ev, { sum: number }, number> = {
  createAccumulator: () => ({ sum: 0 }),
  add: (e, acc) => ({ sum: acc.sum + e.v }),
  getResult: (acc) => acc.sum,
  merge: (a, b) => ({ sum: a.sum + b.sum }),
};

type Fn = "reduce" | "aggregate" | "process" | "apply";

/** The job: events → timestamps (bound) → keyBy → window → sum of v per window, as Out records. */
function windowJob(input: Ev[], assigner: () => WindowAssigner<Ev, TimeWindow>, fn: Fn, bound: number, parallelism = 1) {
  return defineJob(`windows-${fn}`, (env) => {
    env.setParallelism(parallelism);
    const windowed = env
      .fromCollection(input)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<Ev>(bound).withTimestampAssigner((e) => e.ts))
      .keyBy((e) => e.key)
      .window(assigner());
    const toOut = (key: string, w: TimeWindow, result: number): Out => ({ key, start: w.start, end: w.end, result });
    const pwf: ProcessWindowFunction<Ev, Out, string, TimeWindow> = {
      process: (key, ctx, elements, out) => out.collect(toOut(key, ctx.window, elements.reduce((s, e) => s + e.v, 0))),
    };
    const stream =
      fn === "reduce"
        ? windowed.reduce(sumReduce, (key, w, [r]: [Ev], out: Collector<Out>) => out.collect(toOut(key, w, r.v)))
        : fn === "aggregate"
          ? windowed.aggregate(sumAggregate, {
              process: (key: string, ctx: { window: TimeWindow }, results: number[], out: Collector<Out>) =>
                out.collect(toOut(key, ctx.window, results[0]!)),
            })
          : fn === "process"
            ? windowed.process(pwf)
            : windowed.apply<Out>((key, w, elements, out) => out.collect(toOut(key, w, elements.reduce((s, e) => s + e.v, 0))));
    stream.sinkTo(collectSink("out"));
  });
}

/** Session windows of one key from its timestamps and per-element gaps. */
function sessions(elements: { ts: number; gap: number; v: number }[]): { start: number; end: number; sum: number }[] {
  const sorted = [...elements].sort((a, b) => a.ts - b.ts);
  const out: { start: number; end: number; sum: number }[] = [];
  for (const e of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && e.ts <= last.end) {
      last.end = Math.max(last.end, e.ts + e.gap);
      last.sum += e.v;
    } else {
      out.push({ start: e.ts, end: e.ts + e.gap, sum: e.v });
    }
  }
  return out;
}

/** The oracle without late data: every element in every window the assigner gives it. */
function oracle(input: Ev[], kind: "tumbling" | "sliding" | "session", size: number, slide: number): Out[] {
  const out = new Map<string, Out>();
  if (kind === "session") {
    const byKey = new Map<string, { ts: number; gap: number; v: number }[]>();
    for (const e of input) byKey.set(e.key, [...(byKey.get(e.key) ?? []), { ts: e.ts, gap: size, v: e.v }]);
    const result: Out[] = [];
    for (const [key, es] of byKey) for (const s of sessions(es)) result.push({ key, start: s.start, end: s.end, result: s.sum });
    return result;
  }
  const step = kind === "tumbling" ? size : slide;
  for (const e of input) {
    const last = e.ts - (e.ts % step);
    for (let start = last; start > e.ts - size; start -= step) {
      const id = `${e.key}|${start}`;
      const prev = out.get(id);
      out.set(id, { key: e.key, start, end: start + size, result: (prev?.result ?? 0) + e.v });
    }
  }
  return [...out.values()];
}

const sorted = (xs: Out[]): string[] => xs.map((x) => `${x.key}|${x.start}|${x.end}|${x.result}`).sort();

const ASSIGNERS = {
  tumbling: { make: () => TumblingEventTimeWindows.of<Ev>(Time.seconds(1)), size: 1000, slide: 1000 },
  sliding: { make: () => SlidingEventTimeWindows.of<Ev>(Time.seconds(2), Time.milliseconds(500)), size: 2000, slide: 500 },
  session: { make: () => EventTimeSessionWindows.withGap<Ev>(300), size: 300, slide: 0 },
} as const;

for (const [kind, a] of Object.entries(ASSIGNERS) as [keyof typeof ASSIGNERS, (typeof ASSIGNERS)[keyof typeof ASSIGNERS]][]) {
  for (const fn of ["reduce", "aggregate", "process", "apply"] as const) {
    test(`${kind} windows with ${fn} equal the oracle over out-of-order input (inline, parallelism 1 and 3)`, async () => {
      const input = events(3000, 7, kind === "session" ? 60 : 20, 400, kind.length * 31 + fn.length);
      const expected = sorted(oracle(input, kind, a.size, a.slide));
      for (const parallelism of [1, 3]) {
        const handle = runJob(windowJob(input, a.make, fn, 400, parallelism));
        const result = await handle.done;
        assert.deepEqual(sorted(handle.collected<Out>("out")), expected, `parallelism ${parallelism}`);
        assert.equal(lateRecordsDropped(result.metrics), 0, "nothing is late");
      }
    });
  }
}


interface LateOracle {
  /** Final result per window, and how many times each window fired. */
  finals: Map<string, number>;
  firings: Map<string, number>;
  late: Ev[];
}

/** Replays the lateness rules for fixed-size windows (tumbling when slide = size). */
function lateOracle(input: Ev[], size: number, slide: number, bound: number, lateness: number): LateOracle {
  let watermark = -Infinity;
  let max = -Infinity;
  const contents = new Map<string, number>();
  const firings = new Map<string, number>();
  const fired = new Set<string>();
  const late: Ev[] = [];
  const windowsOf = (ts: number): number[] => {
    const out: number[] = [];
    for (let start = ts - (ts % slide); start > ts - size; start -= slide) out.push(start);
    return out;
  };
  const fire = (id: string): void => void firings.set(id, (firings.get(id) ?? 0) + 1);
  for (const e of input) {
    let added = false;
    for (const start of windowsOf(e.ts)) {
      const maxTs = start + size - 1;
      if (maxTs + lateness <= watermark) continue; // window gone
      added = true;
      const id = `${e.key}|${start}`;
      contents.set(id, (contents.get(id) ?? 0) + e.v);
      if (maxTs <= watermark) {
        // Late but allowed: the trigger fires for it, and registers no end-of-window timer.
        fire(id);
        fired.add(id);
      }
    }
    if (!added && e.ts + lateness <= watermark) late.push(e);
    max = Math.max(max, e.ts);
    const next = max - bound - 1;
    if (next > watermark) {
      // Windows whose end the watermark passes fire now (once).
      for (const id of contents.keys()) {
        const start = Number(id.split("|")[1]);
        if (!fired.has(id) && start + size - 1 <= next) {
          fired.add(id);
          fire(id);
        }
      }
      watermark = next;
    }
  }
  for (const id of contents.keys()) if (!fired.has(id)) fire(id); // the final MAX watermark
  return { finals: contents, firings, late };
}

/** Without merge, sliding windows use the general window operator instead of panes. */
const { merge: _merge, ...sumAggregateNoMerge } = sumAggregate;

for (const lateness of [0, 700]) {
  for (const withTag of [false, true]) {
    for (const [path, slide] of [["panes", 500], ["general", 500], ["general", 1000]] as const) {
    test(`late data (${slide === 1000 ? "tumbling" : "sliding"}, allowed lateness ${lateness} ms, ${withTag ? "late side output" : "dropped and counted"}, ${path} operator) follows the lateness rules`, async () => {
      const input = events(2000, 5, 20, 1500 + 3 * lateness, 99 + lateness);
      const bound = 200;
      const lateTag = new OutputTag<Ev>("late");
      const job = defineJob("late-windows", (env) => {
        const windowed = env
          .fromCollection(input)
          .assignTimestampsAndWatermarks(punctuated<Ev>(bound))
          .keyBy((e) => e.key)
          .window(slide === 1000 ? TumblingEventTimeWindows.of<Ev>(1000) : SlidingEventTimeWindows.of<Ev>(1000, slide))
          .allowedLateness(lateness);
        if (withTag) windowed.sideOutputLateData(lateTag);
        const out = windowed.aggregate(path === "panes" ? sumAggregate : sumAggregateNoMerge, (key, w, [sum], o: Collector<Out>) =>
          o.collect({ key, start: w.start, end: w.end, result: sum }),
        );
        out.sinkTo(collectSink("out"));
        out.getSideOutput(lateTag).sinkTo(collectSink("late"));
      });
      const handle = runJob(job);
      const result = await handle.done;
      const expected = lateOracle(input, 1000, slide, bound, lateness);
      assert.ok(expected.late.length > 20, `the input has late records (${expected.late.length})`);
      const outs = handle.collected<Out>("out");
      const finals = new Map<string, number>();
      const firings = new Map<string, number>();
      for (const o of outs) {
        const id = `${o.key}|${o.start}`;
        finals.set(id, o.result); // the last firing wins
        firings.set(id, (firings.get(id) ?? 0) + 1);
      }
      assert.deepEqual(finals, expected.finals);
      assert.deepEqual(firings, expected.firings);
      const dropped = lateRecordsDropped(result.metrics);
      if (withTag) {
        assert.deepEqual(handle.collected<Ev>("late"), expected.late);
        assert.equal(dropped, 0);
      } else {
        assert.equal(handle.collected("late").length, 0);
        assert.equal(dropped, expected.late.length);
      }
      assert.ok(handle.plan.nodes.some((n) => n.name.includes("panes") === (path === "panes") && n.name.startsWith("Window")));
    });
    }
  }
}

for (const fn of ["aggregate", "reduce"] as const) {
  test(`${fn === "aggregate" ? "an AggregateFunction whose merge" : "a ReduceFunction that"} reuses its second argument (Flink allows it) gives the sliding windows a pure one gives, late firings included`, async () => {
    // Flink's AggregateFunction.merge "may reuse any of the given accumulators as the target for
    // the merge", and a ReduceFunction's second argument is, in Flink's windows, the element: stored
    // panes and the pane sweep's partial merges must never be handed over as either.
    const reusesSecond: AggregateFunction<Ev, { sum: number }, number> = {
      ...sumAggregate,
      add: (e, acc) => {
        acc.sum += e.v;
        return acc;
      },
      merge: (a, b) => {
        b.sum += a.sum;
        return b;
      },
    };
    const reduceIntoSecond = (a: Ev, b: Ev): Ev => {
      (b as { v: number }).v += a.v;
      return b;
    };
    const input = events(2000, 4, 20, 3300, 1234);
    const bound = 200;
    const lateness = 600;
    const job = defineJob("merge-reuses-second", (env) => {
      const windowed = env
        .fromCollection(input.map((e) => ({ ...e })))
        .assignTimestampsAndWatermarks(punctuated<Ev>(bound))
        .keyBy((e) => e.key)
        .window(SlidingEventTimeWindows.of<Ev>(1000, 250))
        .allowedLateness(lateness);
      const out =
        fn === "aggregate"
          ? windowed.aggregate(reusesSecond, (key, w, [sum], o: Collector<Out>) => o.collect({ key, start: w.start, end: w.end, result: sum }))
          : windowed.reduce(reduceIntoSecond, (key, w, [r]: [Ev], o: Collector<Out>) => o.collect({ key, start: w.start, end: w.end, result: r.v }));
      out.sinkTo(collectSink("out"));
    });
    const handle = runJob(job);
    await handle.done;
    assert.ok(handle.plan.nodes.some((n) => n.name.includes("panes")), "the pane operator ran");
    const expected = lateOracle(input, 1000, 250, bound, lateness);
    assert.ok(expected.late.length > 0 && [...expected.firings.values()].some((n) => n > 1), "the input has late records and windows that fire again");
    const finals = new Map<string, number>();
    const firings = new Map<string, number>();
    for (const o of handle.collected<Out>("out")) {
      const id = `${o.key}|${o.start}`;
      finals.set(id, o.result);
      firings.set(id, (firings.get(id) ?? 0) + 1);
    }
    assert.deepEqual(finals, expected.finals);
    assert.deepEqual(firings, expected.firings);
  });
}

test("a session that bridges three sessions merges them all, contents and all", async () => {
  // Key a: sessions [0,10), [12,22), [24,34); then an element at 9 with a gap of 25 ([9,34))
  // touches all three and merges them into [0,34).
  const input = [
    { key: "a", ts: 0, v: 1, gap: 10 },
    { key: "a", ts: 12, v: 2, gap: 10 },
    { key: "a", ts: 24, v: 4, gap: 10 },
    { key: "b", ts: 5, v: 100, gap: 10 },
    { key: "a", ts: 9, v: 8, gap: 25 },
    { key: "a", ts: 60, v: 16, gap: 10 },
  ];
  const job = defineJob("bridging-sessions", (env) => {
    env
      .fromCollection(input)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<(typeof input)[number]>(100).withTimestampAssigner((e) => e.ts))
      .keyBy((e) => e.key)
      .window(EventTimeSessionWindows.withDynamicGap<(typeof input)[number]>((e) => e.gap))
      .reduce(
        (x, y) => ({ ...x, v: x.v + y.v }),
        (key, w, [r], out: Collector<Out>) => out.collect({ key, start: w.start, end: w.end, result: r.v }),
      )
      .sinkTo(collectSink("out"));
  });
  const handle = runJob(job);
  await handle.done;
  assert.deepEqual(sorted(handle.collected<Out>("out")), sorted([
    { key: "a", start: 0, end: 34, result: 15 },
    { key: "a", start: 60, end: 70, result: 16 },
    { key: "b", start: 5, end: 15, result: 100 },
  ]));
});

test("count windows: tumbling fires every n elements; sliding keeps the last n every s", async () => {
  const input = Array.from({ length: 20 }, (_, i) => ({ key: i % 2 === 0 ? "even" : "odd", v: i }));
  const job = defineJob("count-windows", (env) => {
    const keyed = env.fromCollection(input).keyBy((e) => e.key);
    keyed.countWindow(3).apply<{ key: string; vs: number[] }>((key, _w, es, out) => out.collect({ key, vs: es.map((e) => e.v) })).sinkTo(collectSink("tumbling"));
    keyed.countWindow(4, 2).apply<{ key: string; vs: number[] }>((key, _w, es, out) => out.collect({ key, vs: es.map((e) => e.v) })).sinkTo(collectSink("sliding"));
  });
  const handle = runJob(job);
  await handle.done;
  const evens = input.filter((e) => e.key === "even").map((e) => e.v);
  const tumbling = handle.collected<{ key: string; vs: number[] }>("tumbling").filter((o) => o.key === "even");
  assert.deepEqual(tumbling.map((o) => o.vs), [evens.slice(0, 3), evens.slice(3, 6), evens.slice(6, 9)]);
  const sliding = handle.collected<{ key: string; vs: number[] }>("sliding").filter((o) => o.key === "even");
  // Fires at 2, 4, 6, 8, 10 elements, each time with the last (up to) 4.
  assert.deepEqual(
    sliding.map((o) => o.vs),
    [2, 4, 6, 8, 10].map((n) => evens.slice(Math.max(0, n - 4), n)),
  );
});

test("triggers: continuous event-time firing, purging, and a custom trigger", async () => {
  const input = Array.from({ length: 100 }, (_, i) => ({ key: "k", ts: i * 100, v: 1 })); // 0..9900 ms
  const custom: Trigger<{ key: string; ts: number; v: number }, TimeWindow> = {
    onElement: (e) => (e.ts % 1000 === 900 ? "FIRE" : "CONTINUE"),
    onEventTime: () => "CONTINUE",
    onProcessingTime: () => "CONTINUE",
    clear: () => {},
  };
  const job = defineJob("triggers", (env) => {
    const keyed = env
      .fromCollection(input)
      .assignTimestampsAndWatermarks(punctuated<(typeof input)[number]>(0))
      .keyBy((e) => e.key);
    const count = (name: string) => (key: string, w: TimeWindow, es: unknown[], out: { collect(o: unknown): void }) =>
      out.collect({ name, key, end: w.end, n: es.length });
    keyed.window(TumblingEventTimeWindows.of(5000)).trigger(ContinuousEventTimeTrigger.of(1000)).apply(count("continuous")).sinkTo(collectSink("continuous"));
    keyed.window(TumblingEventTimeWindows.of(5000)).trigger(PurgingTrigger.of(CountTrigger.of(10))).apply(count("purging")).sinkTo(collectSink("purging"));
    keyed.window(TumblingEventTimeWindows.of(5000)).trigger(custom).apply(count("custom")).sinkTo(collectSink("custom"));
  });
  const handle = runJob(job);
  await handle.done;
  const ns = (name: string) => handle.collected<{ end: number; n: number }>(name).map((o) => `${o.end}:${o.n}`);
  // Every 1000 ms of event time within each 5 s window, then at its end. The watermark (ts - 1 after
  // each element) passes T when the element at T + 100 has arrived, so a firing at T sees the
  // elements up to T + 100.
  assert.deepEqual(ns("continuous"), ["5000:12", "5000:22", "5000:32", "5000:42", "5000:50", "10000:12", "10000:22", "10000:32", "10000:42", "10000:50"]);
  assert.deepEqual(ns("purging"), ["5000:10", "5000:10", "5000:10", "5000:10", "5000:10", "10000:10", "10000:10", "10000:10", "10000:10", "10000:10"]);
  // Fires at ts 900, 1900, ... with everything so far in the window (no purge).
  assert.deepEqual(ns("custom"), ["5000:10", "5000:20", "5000:30", "5000:40", "5000:50", "10000:10", "10000:20", "10000:30", "10000:40", "10000:50"]);
});

test("evictors: time evictor keeps the newest span, delta evictor drops far-off values", async () => {
  const input = Array.from({ length: 10 }, (_, i) => ({ key: "k", ts: i * 100, v: i * i }));
  const job = defineJob("evictors", (env) => {
    const keyed = env
      .fromCollection(input)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<(typeof input)[number]>().withTimestampAssigner((e) => e.ts))
      .keyBy((e) => e.key);
    keyed
      .window(TumblingEventTimeWindows.of(1000))
      .evictor(TimeEvictor.of(250))
      .apply<number[]>((_k, _w, es, out) => out.collect(es.map((e) => e.ts)))
      .sinkTo(collectSink("time"));
    keyed
      .window(TumblingEventTimeWindows.of(1000))
      .evictor(DeltaEvictor.of<(typeof input)[number], TimeWindow>(30, (a, b) => Math.abs(a.v - b.v)))
      .reduce((a, b) => ({ ...a, v: a.v + b.v }))
      .sinkTo(collectSink("delta"));
  });
  const handle = runJob(job);
  await handle.done;
  assert.deepEqual(handle.collected("time"), [[700, 800, 900]]);
  // Last value 81: keep |v - 81| < 30 → 64 and 81.
  assert.deepEqual(handle.collected<{ v: number }>("delta").map((r) => r.v), [64 + 81]);
});

test("window state returns to zero once the watermark passes every window (no leak)", () => {
  const harness = new OperatorTestHarness<Ev, unknown>(
    windowOperator<Ev, TimeWindow>({
      assigner: EventTimeSessionWindows.withGap<Ev>(50),
      trigger: EventTimeSessionWindows.withGap<Ev>(50).defaultTrigger(),
      allowedLateness: 100,
      lateDataTag: undefined,
      contents: { kind: "aggregate", aggregate: sumAggregate as AggregateFunction<Ev, unknown, unknown> },
      windowFunction: undefined,
    }),
    (e) => e.key,
  );
  const op = harness.operator as unknown as { stateSize(): { keys: number; timers: number } };
  const rnd = prng(5);
  for (let i = 0; i < 500; i++) harness.processElement({ key: `k${i % 13}`, ts: i * 10 + Math.floor(rnd() * 30), v: 1 }, i * 10);
  assert.ok(op.stateSize().keys > 0 && op.stateSize().timers > 0);
  harness.processWatermark(4000);
  const mid = op.stateSize();
  harness.processWatermark(10_000);
  assert.deepEqual(op.stateSize(), { keys: 0, timers: 0 }, `before: ${JSON.stringify(mid)}`);
  assert.ok(harness.records().length > 13);
});

test("pane-evaluated sliding windows also return to zero state (no leak)", () => {
  const harness = new OperatorTestHarness<Ev, unknown>(
    slidingPaneOperator<Ev>({
      size: 600,
      slide: 100,
      offset: 0,
      description: "SlidingEventTimeWindows(600, 100)",
      allowedLateness: 250,
      lateDataTag: undefined,
      panes: { create: (e) => e.v, add: (acc, e) => (acc as number) + e.v, merge: (a, b) => (a as number) + (b as number), result: (a) => a },
      windowFunction: undefined,
    }),
    (e) => e.key,
  );
  const op = harness.operator as unknown as { stateSize(): { keys: number; timers: number } };
  for (let i = 0; i < 500; i++) harness.processElement({ key: `k${i % 13}`, ts: i * 10, v: 1 }, i * 10);
  assert.ok(op.stateSize().keys > 0 && op.stateSize().timers > 0);
  harness.processWatermark(10_000);
  assert.deepEqual(op.stateSize(), { keys: 0, timers: 0 });
  // 13 keys; every window of 600 ms with contents fires once.
  assert.equal(harness.records().reduce((s: number, r) => s + (r as number), 0), 500 * 6);
});

test("GlobalWindows never fire without a trigger; a count trigger makes them fire", async () => {
  const job = defineJob("global", (env) => {
    const keyed = env.fromSequence(1, 10).keyBy(() => "all");
    keyed.window(GlobalWindows.create()).apply<number>((_k, _w, es, out) => out.collect(es.length)).sinkTo(collectSink("never"));
    keyed.window(GlobalWindows.create<number>()).trigger(CountTrigger.of(5)).apply<number>((_k, _w, es, out) => out.collect(es.length)).sinkTo(collectSink("count"));
  });
  const handle = runJob(job);
  await handle.done;
  assert.deepEqual(handle.collected("never"), []);
  assert.deepEqual(handle.collected("count"), [5, 10]);
});

test("windowAll evaluates the whole stream on one subtask", async () => {
  const job = defineJob("window-all", (env) => {
    env.setParallelism(3);
    env
      .fromSequence(0, 999)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
      .windowAll(TumblingEventTimeWindows.of(100))
      .reduce((a, b) => a + b)
      .sinkTo(collectSink("out"));
  });
  const handle = runJob(job);
  await handle.done;
  const expected = Array.from({ length: 10 }, (_, w) => Array.from({ length: 100 }, (_, i) => w * 100 + i).reduce((a, b) => a + b, 0));
  assert.deepEqual([...handle.collected<number>("out")].sort((a, b) => a - b), expected);
  assert.equal(handle.plan.nodes.find((n) => n.name.startsWith("WindowAll"))?.parallelism, 1);
});

/** Replays the lateness rules for event-time sessions: merging, firing, refiring, cleanup. */
function lateSessionOracle(input: Ev[], gap: number, bound: number, lateness: number): { firings: string[]; late: Ev[] } {
  interface Session {
    start: number;
    end: number;
    sum: number;
    /** An end-of-window timer is pending. */
    pending: boolean;
  }
  const byKey = new Map<string, Session[]>();
  const firings: string[] = [];
  const late: Ev[] = [];
  let watermark = -Infinity;
  let max = -Infinity;
  const fire = (key: string, s: Session) => firings.push(`${key}|${s.start}|${s.end}|${s.sum}`);
  for (const e of input) {
    const sessions = byKey.get(e.key) ?? [];
    // Merge the new window [ts, ts + gap) with every session it (transitively) overlaps.
    let start = e.ts;
    let end = e.ts + gap;
    let sum = 0;
    let merged = false;
    let changed = true;
    let rest = sessions;
    while (changed) {
      changed = false;
      const keep: Session[] = [];
      for (const s of rest) {
        if (s.start <= end && s.end >= start) {
          start = Math.min(start, s.start);
          end = Math.max(end, s.end);
          sum += s.sum;
          merged = true;
          changed = true;
        } else keep.push(s);
      }
      rest = keep;
    }
    if (!merged && end - 1 + lateness <= watermark) {
      if (e.ts + lateness <= watermark) late.push(e);
      continue;
    }
    const session: Session = { start, end, sum: sum + e.v, pending: end - 1 > watermark };
    rest.push(session);
    byKey.set(e.key, rest);
    if (end - 1 <= watermark) fire(e.key, session); // late within lateness: fires at once
    max = Math.max(max, e.ts);
    const next = max - bound - 1;
    if (next > watermark) {
      watermark = next;
      for (const [key, ss] of byKey) {
        for (const s of [...ss].sort((a, b) => a.end - b.end)) {
          if (s.pending && s.end - 1 <= watermark) {
            s.pending = false;
            fire(key, s);
          }
        }
        byKey.set(key, ss.filter((s) => s.end - 1 + lateness > watermark));
      }
    }
  }
  for (const [key, ss] of byKey) for (const s of ss) if (s.pending) fire(key, s);
  return { firings, late };
}

for (const lateness of [0, 500]) {
  test(`late data in session windows (allowed lateness ${lateness} ms) follows the lateness rules`, async () => {
    const input = events(1500, 4, 40, 1200 + 2 * lateness, 7 + lateness);
    const bound = 150;
    const gap = 120;
    const lateTag = new OutputTag<Ev>("late");
    const job = defineJob("late-sessions", (env) => {
      const out = env
        .fromCollection(input)
        .assignTimestampsAndWatermarks(punctuated<Ev>(bound))
        .keyBy((e) => e.key)
        .window(EventTimeSessionWindows.withGap<Ev>(gap))
        .allowedLateness(lateness)
        .sideOutputLateData(lateTag)
        .aggregate(sumAggregate, (key, w, [sum], o: Collector<string>) => o.collect(`${key}|${w.start}|${w.end}|${sum}`));
      out.sinkTo(collectSink("out"));
      out.getSideOutput(lateTag).sinkTo(collectSink("late"));
    });
    const handle = runJob(job);
    await handle.done;
    const expected = lateSessionOracle(input, gap, bound, lateness);
    assert.ok(expected.late.length > 10, `late records: ${expected.late.length}`);
    assert.deepEqual([...handle.collected<string>("out")].sort(), [...expected.firings].sort());
    assert.deepEqual(handle.collected<Ev>("late"), expected.late);
  });
}

test("a ProcessWindowFunction keeps per-window state (cleared with the window) and global keyed state", async () => {
  const input = Array.from({ length: 8 }, (_, i) => ({ key: "k", ts: i * 250, v: 1 })); // two 1 s windows, 4 each
  const job = defineJob("window-state", (env) => {
    env
      .fromCollection(input)
      .assignTimestampsAndWatermarks(punctuated<(typeof input)[number]>(0))
      .keyBy((e) => e.key)
      .window(TumblingEventTimeWindows.of(1000))
      .trigger(CountTrigger.of(2))
      .process<string>({
        process(_key, ctx, elements, out) {
          const perWindow = ctx.windowState().getState(new ValueStateDescriptor<number>("firings"));
          const total = ctx.globalState().getState(new ValueStateDescriptor<number>("total"));
          perWindow.update((perWindow.value() ?? 0) + 1);
          total.update((total.value() ?? 0) + 1);
          out.collect(`${ctx.window.start}: n=${elements.length} window-firing=${perWindow.value()} total=${total.value()}`);
        },
        clear(ctx) {
          ctx.windowState().getState(new ValueStateDescriptor<number>("firings")).clear();
        },
      })
      .sinkTo(collectSink("out"));
  });
  const handle = runJob(job);
  await handle.done;
  assert.deepEqual(handle.collected("out"), [
    "0: n=2 window-firing=1 total=1",
    "0: n=4 window-firing=2 total=2",
    "1000: n=2 window-firing=1 total=3",
    "1000: n=4 window-firing=2 total=4",
  ]);
});

test("configuration errors are reported when the job is built", () => {
  const build = (f: (keyed: ReturnType<typeof keyedEvents>) => void) => () =>
    runJob(defineJob("bad-window", (env) => f(keyedEvents(env))));
  const keyedEvents = (env: Parameters<Parameters<typeof defineJob>[1]>[0]) => env.fromElements<Ev>({ key: "a", ts: 1, v: 1 }).keyBy((e) => e.key);
  const { merge: _m, ...noMerge } = sumAggregate;
  assert.throws(build((k) => k.window(EventTimeSessionWindows.withGap(10)).aggregate(noMerge)), /needs merge/);
  assert.throws(build((k) => k.window(SlidingEventTimeWindows.of(100, 200, 250))), /window offset must be in \(-slide, slide\)/);
  assert.throws(build((k) => k.window(TumblingEventTimeWindows.of(0))), /window size must be/);
  assert.throws(build((k) => k.countWindow(0)), /countWindow needs a size/);
});

test("every window function form gets an iterable: one element after reduce/aggregate, all of them in apply/process (as Flink)", async () => {
  const input = Array.from({ length: 6 }, (_, i) => ({ key: i % 2 === 0 ? "even" : "odd", ts: i * 100, v: i }));
  type In = (typeof input)[number];
  const job = defineJob("window-function-iterables", (env) => {
    const keyed = env
      .fromCollection(input)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<In>().withTimestampAssigner((e) => e.ts))
      .keyBy((e) => e.key);
    const sum = (name: string) => (key: string, w: TimeWindow, values: Iterable<number>, out: { collect(o: string): void }) => {
      let total = 0;
      let n = 0;
      for (const v of values) {
        total += v;
        n++;
      }
      out.collect(`${name} ${key} ${w.end} n=${n} sum=${total}`);
    };
    const tumbling = () => keyed.window(TumblingEventTimeWindows.of<In>(1000));
    tumbling().reduce((a, b) => ({ ...a, v: a.v + b.v }), (k, w, rs, out) => sum("reduce")(k, w, [...rs].map((r) => r.v), out)).sinkTo(collectSink("reduce"));
    tumbling().aggregate({ createAccumulator: () => 0, add: (e: In, acc: number) => acc + e.v, getResult: (acc: number) => acc }, sum("aggregate")).sinkTo(collectSink("aggregate"));
    tumbling().apply((k, w, es, out) => sum("apply")(k, w, es.map((e) => e.v), out)).sinkTo(collectSink("apply"));
    // Sliding by reduce runs on the pane operator.
    keyed.window(SlidingEventTimeWindows.of<In>(1000, 500)).aggregate({ createAccumulator: () => 0, add: (e: In, acc: number) => acc + e.v, getResult: (acc: number) => acc, merge: (a: number, b: number) => a + b }, sum("panes")).sinkTo(collectSink("panes"));
  });
  const handle = runJob(job);
  await handle.done;
  const sorted = (name: string) => handle.collected<string>(name).sort();
  assert.deepEqual(sorted("reduce"), ["reduce even 1000 n=1 sum=6", "reduce odd 1000 n=1 sum=9"]);
  assert.deepEqual(sorted("aggregate"), ["aggregate even 1000 n=1 sum=6", "aggregate odd 1000 n=1 sum=9"]);
  assert.deepEqual(sorted("apply"), ["apply even 1000 n=3 sum=6", "apply odd 1000 n=3 sum=9"]);
  assert.deepEqual(sorted("panes"), ["panes even 1000 n=1 sum=6", "panes even 500 n=1 sum=6", "panes odd 1000 n=1 sum=9", "panes odd 1500 n=1 sum=5", "panes odd 500 n=1 sum=4"]);
});

test("GlobalWindows.createWithEndOfStreamTrigger fires each key's window once, when the input ends", async () => {
  const job = defineJob("global-end-of-stream", (env) => {
    env
      .fromSequence(1, 10)
      .keyBy((n) => (n % 2 === 0 ? "even" : "odd"))
      .window(GlobalWindows.createWithEndOfStreamTrigger<number>())
      .reduce((a, b) => a + b, (key, _w, [sum], out: Collector<string>) => out.collect(`${key}=${sum}`))
      .sinkTo(collectSink("sums"));
  });
  const handle = runJob(job);
  await handle.done;
  assert.deepEqual(handle.collected<string>("sums").sort(), ["even=30", "odd=25"]);
});

test("sliding windows with gaps (slide > size) count only the elements inside a window", async () => {
  const input = Array.from({ length: 20 }, (_, i) => ({ key: "k", ts: i * 50, v: 1 })); // 0..950 ms
  const job = defineJob("sliding-gaps", (env) => {
    env
      .fromCollection(input)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<(typeof input)[number]>().withTimestampAssigner((e) => e.ts))
      .keyBy((e) => e.key)
      .window(SlidingEventTimeWindows.of(100, 300))
      .apply<string>((_k, w, es, out) => out.collect(`${w.start}:${es.map((e) => e.ts).join(",")}`))
      .sinkTo(collectSink("gaps"));
  });
  const handle = runJob(job);
  const result = await handle.done;
  assert.deepEqual(handle.collected<string>("gaps"), ["0:0,50", "300:300,350", "600:600,650", "900:900,950"]);
  assert.equal(lateRecordsDropped(result.metrics), 0, "elements in a gap are not late");
});

test("a staggered processing-time window operator draws its stagger from its first element", () => {
  const assigner = TumblingProcessingTimeWindows.of<Ev>(1000, 0, WindowStagger.NATURAL);
  const harness = new OperatorTestHarness<Ev, unknown>(
    windowOperator<Ev, TimeWindow>({
      assigner,
      trigger: assigner.defaultTrigger(),
      allowedLateness: 0,
      lateDataTag: undefined,
      contents: { kind: "list" },
      windowFunction: (_k, w, es, out) => out.collect(`${w.start}-${w.end}:${es.length}`),
    }),
    (e) => e.key,
  ).open();
  harness.setProcessingTime(1234);
  harness.processElement({ key: "a", ts: 0, v: 1 });
  harness.processElement({ key: "b", ts: 0, v: 1 });
  harness.setProcessingTime(2232);
  assert.deepEqual(harness.records(), []);
  harness.setProcessingTime(2233);
  assert.deepEqual(harness.records(), ["1234-2234:1", "1234-2234:1"]);
});
