import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, WatermarkStrategy, type Source } from "eddy";
import { collectSink, ManualClock, OperatorTestHarness, runJob } from "eddy/testing";

/** A continuous source fed by the test: records are pushed in, `end()` finishes it. */
function feedSource<T>(): { source: Source<T, string>; push(...values: T[]): void; end(): void } {
  const queue: T[] = [];
  let ended = false;
  let notify: (() => void) | undefined;
  const wake = () => {
    notify?.();
    notify = undefined;
  };
  return {
    push(...values) {
      queue.push(...values);
      wake();
    },
    end() {
      ended = true;
      wake();
    },
    source: {
      boundedness: "continuous",
      maxParallelism: 1,
      createEnumerator: (ctx) => ({ addReader: (i) => ctx.signalNoMoreSplits(i) }),
      createReader: () => ({
        pollNext(output) {
          for (let n = 0; n < 100 && queue.length > 0; n++) output.collect(queue.shift()!);
          if (queue.length > 0) return "more";
          return ended ? "end" : "nothing";
        },
        isAvailable: () => new Promise<void>((resolve) => (notify = resolve)),
        addSplits() {},
        notifyNoMoreSplits() {},
        snapshotState: () => [],
      }),
    },
  };
}

test("processing-time timers fire through the injected clock, deduplicated, a passed time on the next advance", async () => {
  const clock = new ManualClock(1000);
  const feed = feedSource<string>();
  const handle = runJob(
    defineJob("proc-time", (env) => {
      env
        .fromSource(feed.source, WatermarkStrategy.noWatermarks<string>(), "feed")
        .keyBy((k) => k)
        .process<string>({
          processElement(k, ctx) {
            const now = ctx.timerService().currentProcessingTime();
            ctx.timerService().registerProcessingTimeTimer(now + 500);
            ctx.timerService().registerProcessingTimeTimer(now + 500); // duplicate
            if (k === "past") ctx.timerService().registerProcessingTimeTimer(now - 10);
          },
          onTimer(ts, ctx, out) {
            out.collect(`${ctx.getCurrentKey()}@${ts}:${ctx.timeDomain()}:${ctx.timestamp()}`);
          },
        })
        .sinkTo(collectSink("fired"));
    }),
    { clock },
  );
  feed.push("a", "b");
  await handle.whenIdle();
  assert.deepEqual(handle.collected("fired"), [], "nothing fires before time advances");
  clock.advance(499);
  await handle.whenIdle();
  assert.deepEqual(handle.collected("fired"), []);
  clock.advance(1);
  await handle.whenIdle();
  assert.deepEqual(handle.collected<string>("fired").sort(), ["a@1500:processing-time:undefined", "b@1500:processing-time:undefined"]);
  feed.push("past");
  await handle.whenIdle();
  clock.advance(0);
  await handle.whenIdle();
  assert.ok(handle.collected<string>("fired").includes("past@1490:processing-time:undefined"));
  feed.end();
  await handle.done;
});

test("an idle input stops holding back the watermark of a two-input operator", async () => {
  const clock = new ManualClock(0);
  const busy = feedSource<number>();
  const quiet = feedSource<number>();
  const handle = runJob(
    defineJob("idleness", (env) => {
      env.setAutoWatermarkInterval(100);
      const strategy = WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n).withIdleness(1000);
      const a = env.fromSource(busy.source, strategy, "busy");
      const b = env.fromSource(quiet.source, strategy, "quiet");
      a.union(b)
        .process<number>({
          processElement(_n, ctx, out) {
            out.collect(ctx.timerService().currentWatermark());
          },
        })
        .sinkTo(collectSink("watermarks"));
    }),
    { clock },
  );
  quiet.push(5);
  busy.push(10, 20, 30);
  await handle.whenIdle();
  clock.advance(100); // periodic emit: busy → 29, quiet → 4
  await handle.whenIdle();
  busy.push(40);
  await handle.whenIdle();
  assert.equal(handle.collected<number>("watermarks").at(-1), 4, "the quiet input holds the watermark back");
  clock.advance(1000); // quiet has been silent for 1 s: idle
  await handle.whenIdle();
  busy.push(50);
  await handle.whenIdle();
  assert.equal(handle.collected<number>("watermarks").at(-1), 39, "once idle, only the busy input counts");
  busy.end();
  quiet.end();
  await handle.done;
});

test("the operator harness shows records, watermarks, timers and side outputs of one function", () => {
  const h = OperatorTestHarness.forKeyedProcessFunction<string, { k: string; v: number }, string>(
    {
      processElement(e, ctx, out) {
        out.collect(`${e.k}:${e.v}`);
        ctx.timerService().registerEventTimeTimer(100);
        ctx.timerService().registerProcessingTimeTimer(50);
      },
      onTimer(ts, ctx, out) {
        out.collect(`timer ${ctx.getCurrentKey()} ${ctx.timeDomain()} ${ts}`);
      },
    },
    (e) => e.k,
  );
  h.processElement({ k: "a", v: 1 }, 10).processElement({ k: "b", v: 2 }, 20);
  h.advanceProcessingTime(50);
  h.processWatermark(99);
  h.processWatermark(100);
  assert.deepEqual(h.output(), [
    { type: "record", value: "a:1", timestamp: 10 },
    { type: "record", value: "b:2", timestamp: 20 },
    { type: "record", value: "timer a processing-time 50", timestamp: undefined },
    { type: "record", value: "timer b processing-time 50", timestamp: undefined },
    { type: "watermark", watermark: 99 },
    { type: "record", value: "timer a event-time 100", timestamp: 100 },
    { type: "record", value: "timer b event-time 100", timestamp: 100 },
    { type: "watermark", watermark: 100 },
  ]);
  h.close();
});

test("a punctuated watermark follows the record that caused it", async () => {
  const handle = runJob(
    defineJob("punctuated", (env) => {
      env
        .fromElements(1, 2, 3)
        .assignTimestampsAndWatermarks(
          WatermarkStrategy.forGenerator<number>(() => ({
            onEvent: (_n, ts, out) => out.emitWatermark(ts),
            onPeriodicEmit() {},
          })).withTimestampAssigner((n) => n * 10),
        )
        .process<string>({
          processElement(n, ctx, out) {
            out.collect(`record ${n} seen at watermark ${ctx.timerService().currentWatermark()}`);
          },
        })
        .sinkTo(collectSink("out"));
    }),
    { clock: new ManualClock(0) },
  );
  await handle.done;
  assert.deepEqual(handle.collected("out"), [
    "record 1 seen at watermark -Infinity",
    "record 2 seen at watermark 10",
    "record 3 seen at watermark 20",
  ]);
});
