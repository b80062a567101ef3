/**
 * Function factories (issue 31): every API that takes a function object also takes a factory
 * `() => new MyFunction()`, called once per subtask and once per restart attempt, so classes with
 * `#private` fields and constructor logic work — inline and on worker threads.
 */
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defineJob, EddyError, functionFactory, TumblingEventTimeWindows, WatermarkStrategy, type Collector, type ProcessWindowFunction, type TimeWindow } from "eddy";
import { collectSink, OperatorTestHarness, runJob } from "eddy/testing";
import * as jobs from "./jobs/factories.ts";

const OPS = ["process", "keyedProcess", "coProcess", "keyedCoProcess", "intervalJoin", "windowProcess"];

for (const mode of ["inline", "threads"] as const) {
  test(`${mode}, parallelism 2: each subtask of every function-object API gets its own instance from the factory (#private fields work)`, async () => {
    jobs.constructions.clear();
    const handle = runJob(jobs.allFactories, { parallelism: 2, mode });
    assert.equal(await handle.mode, mode);
    await handle.done;
    const out = handle.collected<jobs.Tag>("out");
    for (const op of OPS) {
      const tags = out.filter((t) => t.op === op);
      assert.ok(tags.length > 0, `${op} emitted`);
      const instanceOfSubtask = new Map<number, Set<string>>();
      for (const t of tags) instanceOfSubtask.set(t.subtask, (instanceOfSubtask.get(t.subtask) ?? new Set()).add(t.instance));
      assert.deepEqual([...instanceOfSubtask.keys()].sort(), [0, 1], `${op}: both subtasks ran`);
      const instances = [...instanceOfSubtask.values()].map((s) => [...s]);
      assert.ok(instances.every((s) => s.length === 1), `${op}: one instance per subtask, got ${JSON.stringify(instances)}`);
      assert.notEqual(instances[0]![0], instances[1]![0], `${op}: the subtasks do not share an instance`);
      if (mode === "inline") assert.equal(jobs.constructions.get(op), 2, `${op}: the factory ran once per subtask`);
    }
  });
}

test("the factory runs again for every restart attempt", async () => {
  jobs.constructions.clear();
  const handle = runJob(jobs.failsOnce, {
    parallelism: 2,
    mode: "inline",
    checkpointing: { intervalMs: 5 },
    checkpointDir: await mkdtemp(join(tmpdir(), "eddy-factories-")),
    restartStrategy: { type: "fixed-delay", attempts: 1, delayMs: 0 },
  });
  await handle.done;
  assert.equal(handle.restarts, 1);
  assert.equal(jobs.constructions.get("failsOnce"), 4, "2 subtasks × 2 attempts");
});

test("a function with parameters where a function object is expected is refused when the job is built, naming what is expected", () => {
  const build = (f: (env: Parameters<Parameters<typeof defineJob>[1]>[0]) => void) => () => runJob(defineJob("bad", f), { mode: "inline" });
  assert.throws(
    build((env) => {
      env.fromSequence(0, 1).process(((n: number) => n) as never);
    }),
    (e: unknown) => e instanceof EddyError && e.code === "INVALID_FUNCTION_FACTORY" && /processElement\(\).*factory \(\) => object.*1 parameter/.test(e.message),
  );
  assert.throws(
    build((env) => {
      env.fromSequence(0, 1).process({} as never);
    }),
    (e: unknown) => e instanceof EddyError && e.code === "INVALID_FUNCTION_FACTORY" && /processElement\(\)/.test(e.message),
  );
});

test("a factory that returns no function object fails with INVALID_FUNCTION_FACTORY naming the operator and subtask", () => {
  assert.throws(
    () => OperatorTestHarness.forProcessFunction<number, number>(functionFactory(() => ({}) as never), { operatorName: "Broken" }).open(),
    (e: unknown) => e instanceof EddyError && e.code === "INVALID_FUNCTION_FACTORY" && e.domain === "user" && /processElement\(\).*operator 'Broken', subtask 0/.test(e.message),
  );
});

test("window reduce/aggregate: a window function without parameters is ambiguous and refused; functionFactory(...) makes it a factory", async () => {
  class Last implements ProcessWindowFunction<number, string, number, TimeWindow> {
    readonly #prefix: string;
    constructor() {
      this.#prefix = "w";
    }
    process(key: number, ctx: { window: TimeWindow }, elements: number[], out: Collector<string>): void {
      out.collect(`${this.#prefix}${key}@${ctx.window.start}=${elements[0]}`);
    }
  }
  const job = (windowFn: unknown) =>
    defineJob("window-factory", (env) => {
      env
        .fromSequence(0, 9)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
        .keyBy((n) => n % 2)
        .window(TumblingEventTimeWindows.of(5))
        .reduce((a, b) => a + b, windowFn as never)
        .sinkTo(collectSink("out"));
    });
  assert.throws(
    () => runJob(job(() => new Last()), { mode: "inline" }),
    (e: unknown) => e instanceof EddyError && e.code === "INVALID_FUNCTION_FACTORY" && /functionFactory\(\(\) => new MyWindowFunction\(\)\)/.test(e.message),
  );
  const handle = runJob(job(functionFactory(() => new Last())), { mode: "inline" });
  await handle.done;
  assert.deepEqual(handle.collected<string>("out").sort(), ["w0@0=6", "w0@5=14", "w1@0=4", "w1@5=21"]);
});
