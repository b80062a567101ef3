/**
 * Async user functions fail with USER_FUNCTION_ASYNC pointing to async I/O, instead of emitting
 * promises (`{}` across threads), keeping every record (a promise is truthy) or losing records
 * collected after an await: refused when the job is built if the function is `async`, and when a
 * record is processed if a plain function returns a promise or collects after it returned.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, EddyError, type Collector } from "eddy";
import { collectSink, runJob } from "eddy/testing";

const isAsyncError = (domain: "config" | "user", what: RegExp) => (e: unknown) =>
  e instanceof EddyError && e.code === "USER_FUNCTION_ASYNC" && e.domain === domain && what.test(e.message) && /AsyncDataStream/.test(e.message);

type Env = Parameters<Parameters<typeof defineJob>[1]>[0];
const numbers = (env: Env) => env.fromElements(1, 2, 3);

test("an async map, filter, flatMap or process function is refused when the job is built", () => {
  const build = (f: (env: Env) => void) => () => runJob(defineJob("async-build", f));
  assert.throws(build((env) => void numbers(env).map(async (n) => n + 1)), isAsyncError("config", /^map was given an async function/));
  const asyncFilter = (async (n: number) => n > 1) as unknown as (n: number) => boolean; // what JavaScript callers can pass
  assert.throws(build((env) => void numbers(env).filter(asyncFilter)), isAsyncError("config", /^filter/));
  assert.throws(build((env) => void numbers(env).flatMap<number>(async (n, out) => out.collect(n))), isAsyncError("config", /^flatMap/));
  assert.throws(
    build((env) => void numbers(env).process({ async processElement(n: number, _ctx: unknown, out: Collector<number>) { out.collect(n); } })),
    isAsyncError("config", /processElement/),
  );
  assert.throws(
    build((env) => void numbers(env).keyBy((n) => n).process({ processElement() {}, async onTimer() {} })),
    isAsyncError("config", /onTimer/),
  );
});

test("a plain function that returns a promise fails the job naming the operator (no unhandled rejection)", async () => {
  const run = async (f: (env: Env) => void) => {
    const handle = runJob(defineJob("async-run", f));
    await assert.rejects(handle.done, isAsyncError("user", /in operator '.+' \(subtask 0\) returned a promise/));
  };
  await run((env) => numbers(env).map((n) => Promise.resolve(n)).sinkTo(collectSink("map")));
  // A rejected promise is marked handled: only the job's error is reported.
  await run((env) => numbers(env).map(() => Promise.reject(new Error("boom"))).sinkTo(collectSink("map-rejected")));
  await run((env) => numbers(env).filter((n) => Promise.resolve(n > 5) as unknown as boolean).sinkTo(collectSink("filter")));
  await run((env) => numbers(env).flatMap<number>((n, out) => Promise.resolve().then(() => out.collect(n))).sinkTo(collectSink("flatMap")));
  await run((env) => numbers(env).keyBy((n) => n).process({ processElement: () => Promise.resolve() as unknown as void }).sinkTo(collectSink("keyed")));
});

/**
 * The late collect reaches the task through its mailbox, so the task must still be running: the
 * job is long enough to yield to the event loop (a bounded job that ends within one turn of the
 * event loop ends before the callback runs; see synchronous-user-call.ts).
 */
test("out.collect after the function returned fails the job instead of losing the record", async () => {
  const handle = runJob(
    defineJob("collect-after-return", (env) => {
      env
        .fromSequence(1, 300_000)
        .flatMap((n: number, out: Collector<number>) => {
          if (n === 1) queueMicrotask(() => out.collect(n));
          else out.collect(n);
        })
        .sinkTo(collectSink("late"));
    }),
  );
  await assert.rejects(handle.done, isAsyncError("user", /flatMap .* called out\.collect after it returned; the record was dropped/));
});

test("filter still keeps records for truthy non-boolean results", async () => {
  const handle = runJob(defineJob("truthy-filter", (env) => void numbers(env).filter((n) => (n % 2) as unknown as boolean).sinkTo(collectSink("odd"))));
  await handle.done;
  assert.deepEqual(handle.collected<number>("odd").sort(), [1, 3]);
});
