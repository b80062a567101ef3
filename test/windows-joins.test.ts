/**
 * Window joins and co-groups against a nested-loop oracle; windows on idle inputs; processing-time
 * windows; and window results identical inline and at parallelism 4 on worker threads.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ContinuousProcessingTimeTrigger,
  defineJob,
  ProcessingTimeSessionWindows,
  SlidingProcessingTimeWindows,
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
  WatermarkStrategy,
  type Source,
  type SourceReader,
  type Collector,
} from "eddy";
import { collectSink, ManualClock, runJob } from "eddy/testing";
import * as jobs from "./jobs/windows.ts";

const windowOf = (ts: number, size: number): number => ts - (ts % size);

test("window join and co-group equal a nested loop per key and window", async () => {
  const job = defineJob("join-oracle", (env) => {
    env.setParallelism(2);
    const clicks = env
      .fromCollection(jobs.CLICKS)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<jobs.Click>(jobs.BOUND).withTimestampAssigner((c) => c.ts));
    const views = env
      .fromCollection(jobs.VIEWS)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<jobs.View>(jobs.BOUND).withTimestampAssigner((v) => v.ts));
    clicks
      .join(views)
      .where((c) => c.user)
      .equalTo((v) => v.user)
      .window(TumblingEventTimeWindows.of(2000))
      .apply((c, v) => `${c.user}|${c.ts}|${v.ts}`)
      .sinkTo(collectSink("join"));
    clicks
      .coGroup(views)
      .where((c) => c.user)
      .equalTo((v) => v.user)
      .window(TumblingEventTimeWindows.of(2000))
      .apply((cs, vs, out: Collector<string>) => {
        // A full outer join: every click with its views, or alone; views without clicks alone.
        if (cs.length === 0) for (const v of vs) out.collect(`-|${v.user}|${v.ts}`);
        for (const c of cs) {
          if (vs.length === 0) out.collect(`${c.user}|${c.ts}|-`);
          for (const v of vs) out.collect(`${c.user}|${c.ts}|${v.ts}`);
        }
      })
      .sinkTo(collectSink("outer"));
  });
  const handle = runJob(job);
  await handle.done;
  const inner: string[] = [];
  const outer: string[] = [];
  const viewsByWindow = new Map<string, jobs.View[]>();
  for (const v of jobs.VIEWS) {
    const id = `${v.user}|${windowOf(v.ts, 2000)}`;
    viewsByWindow.set(id, [...(viewsByWindow.get(id) ?? []), v]);
  }
  const clickWindows = new Set<string>();
  for (const c of jobs.CLICKS) {
    const id = `${c.user}|${windowOf(c.ts, 2000)}`;
    clickWindows.add(id);
    const vs = viewsByWindow.get(id) ?? [];
    if (vs.length === 0) outer.push(`${c.user}|${c.ts}|-`);
    for (const v of vs) {
      inner.push(`${c.user}|${c.ts}|${v.ts}`);
      outer.push(`${c.user}|${c.ts}|${v.ts}`);
    }
  }
  for (const [id, vs] of viewsByWindow) if (!clickWindows.has(id)) for (const v of vs) outer.push(`-|${v.user}|${v.ts}`);
  assert.ok(inner.length > 1000);
  assert.deepEqual([...handle.collected<string>("join")].sort(), inner.sort());
  assert.deepEqual([...handle.collected<string>("outer")].sort(), outer.sort());
});

test("windows give identical results inline and at parallelism 4 on worker threads", async () => {
  const inline = runJob(jobs.windowsJob, { parallelism: 1, mode: "inline" });
  await inline.done;
  const threaded = runJob(jobs.windowsJob, { parallelism: 4, mode: "threads" });
  await threaded.done;
  const key = (o: object) => JSON.stringify(o);
  const a = inline.collected<object>("out").map(key).sort();
  const b = threaded.collected<object>("out").map(key).sort();
  assert.ok(a.length > 1000);
  assert.deepEqual(b, a);
});

/** A source that emits `values` and then, unless `endAfter`, stays open without data. */
function pausingSource<T>(values: readonly T[], endAfter: boolean): Source<T, { splitId: string }> {
  return {
    boundedness: "bounded",
    createEnumerator: (ctx) => ({
      addReader: (subtask) => {
        ctx.assignSplits(subtask, [{ splitId: `s${subtask}` }]);
        ctx.signalNoMoreSplits(subtask);
      },
    }),
    createReader: () => {
      let i = 0;
      let hasSplit = false;
      const reader: SourceReader<T, { splitId: string }> = {
        pollNext(out) {
          if (!hasSplit) return "nothing";
          if (i < values.length) {
            out.collect(values[i++]!);
            return "more";
          }
          return endAfter ? "end" : "nothing";
        },
        // Data comes only once the split is assigned; after that the source stays quiet.
        isAvailable: () => (hasSplit && i === 0 ? Promise.resolve() : new Promise<void>(() => {})),
        addSplits: () => void (hasSplit = true),
        notifyNoMoreSplits: () => {},
        snapshotState: () => [],
      };
      return reader;
    },
  };
}

test("a keyed window over two inputs fires while one input is idle (withIdleness)", async () => {
  const clock = new ManualClock(0);
  const active = Array.from({ length: 50 }, (_, i) => ({ key: "k", ts: i * 100 }));
  const job = defineJob("idle-input", (env) => {
    const strategy = WatermarkStrategy.forMonotonousTimestamps<{ key: string; ts: number }>()
      .withTimestampAssigner((e) => e.ts)
      .withIdleness(1_000);
    const busy = env.fromSource(pausingSource(active, false), strategy, "busy").setParallelism(1);
    const quiet = env.fromSource(pausingSource<{ key: string; ts: number }>([], false), strategy, "quiet").setParallelism(1);
    busy
      .union(quiet)
      .keyBy((e) => e.key)
      .window(TumblingEventTimeWindows.of(1000))
      .apply<{ end: number; n: number }>((_k, w, es, out) => out.collect({ end: w.end, n: es.length }))
      .sinkTo(collectSink("out"));
  });
  const handle = runJob(job, { clock, mode: "inline" });
  await handle.whenIdle();
  // The quiet input holds the watermark back: nothing has fired.
  assert.deepEqual(handle.collected("out"), []);
  clock.advance(200); // periodic watermarks
  await handle.whenIdle();
  assert.deepEqual(handle.collected("out"), []);
  clock.advance(1_500); // past the idle timeout: the quiet input no longer holds event time back
  await handle.whenIdle();
  clock.advance(200);
  await handle.whenIdle();
  const fired = handle.collected<{ end: number; n: number }>("out");
  assert.deepEqual(fired.slice(0, 4), [
    { end: 1000, n: 10 },
    { end: 2000, n: 10 },
    { end: 3000, n: 10 },
    { end: 4000, n: 10 },
  ]);
  handle.cancel();
  await handle.done.catch(() => undefined);
});

test("processing-time windows fire on the clock", async () => {
  const clock = new ManualClock(10_000);
  const job = defineJob("processing-time-windows", (env) => {
    env
      .fromSource(pausingSource(["a", "b", "a"], false), WatermarkStrategy.noWatermarks<string>(), "words")
      .keyBy((w) => w)
      .window(TumblingProcessingTimeWindows.of(1000))
      .apply<{ key: string; end: number; n: number }>((key, w, es, out) => out.collect({ key, end: w.end, n: es.length }))
      .sinkTo(collectSink("out"));
  });
  const handle = runJob(job, { clock, mode: "inline" });
  await handle.whenIdle();
  assert.deepEqual(handle.collected("out"), []);
  clock.advance(1_000);
  await handle.whenIdle();
  assert.deepEqual(
    handle.collected<{ key: string }>("out").sort((x, y) => x.key.localeCompare(y.key)),
    [
      { key: "a", end: 11_000, n: 2 },
      { key: "b", end: 11_000, n: 1 },
    ],
  );
  handle.cancel();
  await handle.done.catch(() => undefined);
});

test("a continuous processing-time trigger fires every interval while the window is open", async () => {
  const clock = new ManualClock(0);
  const job = defineJob("continuous-processing-time", (env) => {
    env
      .fromSource(pausingSource(["x", "x", "x"], false), WatermarkStrategy.noWatermarks<string>(), "words")
      .keyBy((w) => w)
      .window(TumblingProcessingTimeWindows.of(10_000))
      .trigger(ContinuousProcessingTimeTrigger.of(1_000))
      .apply<{ key: string; end: number; n: number }>((key, w, es, out) => out.collect({ key, end: w.end, n: es.length }))
      .sinkTo(collectSink("out"));
  });
  const handle = runJob(job, { clock, mode: "inline" });
  await handle.whenIdle();
  for (let i = 0; i < 3; i++) {
    clock.advance(1_000);
    await handle.whenIdle();
  }
  assert.deepEqual(handle.collected("out"), [
    { key: "x", end: 10_000, n: 3 },
    { key: "x", end: 10_000, n: 3 },
    { key: "x", end: 10_000, n: 3 },
  ]);
  handle.cancel();
  await handle.done.catch(() => undefined);
});

/** Emits each value once the clock reaches its time. */
function clockedSource<T>(clock: ManualClock, items: readonly (readonly [number, T])[]): Source<T, { splitId: string }> {
  return {
    boundedness: "bounded",
    maxParallelism: 1,
    createEnumerator: (ctx) => ({
      addReader: (subtask) => {
        ctx.assignSplits(subtask, [{ splitId: "clocked" }]);
        ctx.signalNoMoreSplits(subtask);
      },
    }),
    createReader: () => {
      let i = 0;
      let hasSplit = false;
      return {
        pollNext(out) {
          if (!hasSplit) return "nothing";
          while (i < items.length && items[i]![0] <= clock.now()) out.collect(items[i++]![1]);
          return "nothing";
        },
        isAvailable: () =>
          new Promise<void>((resolve) => {
            const next = items[i];
            if (next !== undefined) clock.schedule(next[0], () => resolve());
          }),
        addSplits: () => void (hasSplit = true),
        notifyNoMoreSplits: () => {},
        snapshotState: () => [],
      };
    },
  };
}

test("processing-time sliding and session windows assign by arrival time and merge sessions", async () => {
  const clock = new ManualClock(0);
  const items = [0, 300, 900, 2500].map((t) => [t, "a"] as const);
  const job = defineJob("processing-time-sliding-sessions", (env) => {
    const keyed = env.fromSource(clockedSource(clock, items), WatermarkStrategy.noWatermarks<string>(), "clicks").keyBy((w) => w);
    keyed
      .window(SlidingProcessingTimeWindows.of(2000, 1000))
      .apply<string>((_k, w, es, out) => out.collect(`${w.start}-${w.end}:${es.length}`))
      .sinkTo(collectSink("sliding"));
    keyed
      .window(ProcessingTimeSessionWindows.withGap(500))
      .apply<string>((_k, w, es, out) => out.collect(`${w.start}-${w.end}:${es.length}`))
      .sinkTo(collectSink("sessions"));
  });
  const handle = runJob(job, { clock, mode: "inline" });
  for (let t = 0; t <= 5000; t += 100) {
    clock.advanceTo(t);
    await handle.whenIdle();
  }
  assert.deepEqual([...handle.collected<string>("sliding")].sort(), ["-1000-1000:3", "0-2000:3", "1000-3000:1", "2000-4000:1"].sort());
  assert.deepEqual([...handle.collected<string>("sessions")].sort(), ["0-800:2", "2500-3000:1", "900-1400:1"].sort());
  handle.cancel();
  await handle.done.catch(() => undefined);
});
