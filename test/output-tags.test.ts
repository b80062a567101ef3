/**
 * A null or undefined OutputTag is a validation error naming the call that got it: when the job is
 * built (getSideOutput, sideOutputLateData, the interval join's late-data outputs), or, for
 * ctx.output in a running function, a user error; never a TypeError from inside the engine.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, EddyError, OutputTag, TumblingEventTimeWindows, WatermarkStrategy, type TimeWindow } from "eddy";
import { OperatorTestHarness, runJob } from "eddy/testing";
import { windowOperator } from "../packages/eddy/src/internal.ts";

const isTagError = (call: string, domain: "config" | "user") => (e: unknown) =>
  e instanceof EddyError && e.code === "INVALID_OUTPUT_TAG" && e.domain === domain && e.message.includes(call);

for (const missing of [null, undefined]) {
  const tag = missing as unknown as OutputTag<number>;

  test(`building with a ${String(missing)} OutputTag fails naming the call`, () => {
    const build = (f: Parameters<typeof defineJob>[1]) => () => runJob(defineJob("bad-tag", f));
    const events = (env: Parameters<Parameters<typeof defineJob>[1]>[0]) =>
      env.fromElements(1, 2, 3).assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n));
    assert.throws(build((env) => void events(env).map((n) => n).getSideOutput(tag)), isTagError("getSideOutput", "config"));
    assert.throws(
      build((env) => void events(env).keyBy((n) => n % 2).window(TumblingEventTimeWindows.of<number>(10)).sideOutputLateData(tag)),
      isTagError("sideOutputLateData", "config"),
    );
    const keyed = (env: Parameters<Parameters<typeof defineJob>[1]>[0]) => events(env).keyBy((n) => n % 2);
    assert.throws(build((env) => void keyed(env).intervalJoin(keyed(env)).between(-1, 1).sideOutputLeftLateData(tag)), isTagError("sideOutputLeftLateData", "config"));
    assert.throws(build((env) => void keyed(env).intervalJoin(keyed(env)).between(-1, 1).sideOutputRightLateData(tag)), isTagError("sideOutputRightLateData", "config"));
  });

  test(`ctx.output with a ${String(missing)} OutputTag fails the function with a user error naming ctx.output`, () => {
    const plain = OperatorTestHarness.forProcessFunction<number, number>({ processElement: (_n, ctx) => ctx.output(tag, 1) }).open();
    assert.throws(() => plain.processElement(1, 1), isTagError("ctx.output", "user"));
    const keyed = OperatorTestHarness.forKeyedProcessFunction<number, number, number>({ processElement: (_n, ctx) => ctx.output(tag, 1) }, (n) => n).open();
    assert.throws(() => keyed.processElement(1, 1), isTagError("ctx.output", "user"));
    const window = new OperatorTestHarness<number, unknown>(
      windowOperator<number, TimeWindow>({
        assigner: TumblingEventTimeWindows.of<number>(10),
        trigger: TumblingEventTimeWindows.of<number>(10).defaultTrigger(),
        allowedLateness: 0,
        lateDataTag: undefined,
        contents: { kind: "list" },
        windowFunction: { process: (_k, ctx, _es) => ctx.output(tag, 1) },
      }),
      (n) => n,
    ).open();
    window.processElement(1, 1);
    assert.throws(() => window.processWatermark(100), isTagError("ctx.output", "user"));
  });
}
