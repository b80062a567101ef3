/**
 * The async I/O operator through OperatorTestHarness.forAsyncFunction: requests are promises the
 * test settles by hand, processing time (timeouts, retry delays) is the harness's ManualClock.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEAD_LETTERS } from "../../core/error-policy.ts";
import { EddyError } from "../../core/errors.ts";
import { OperatorTestHarness, type HarnessEvent } from "../../testing/operator-harness.ts";
import type { AsyncFunction, AsyncIoOptions } from "../async-function.ts";
import { ASYNC_RETRIES, ASYNC_TIMEOUTS, ASYNC_WAIT_STATE } from "./async-wait-operator.ts";
import { asyncWaitSettings } from "../async-function.ts";
import { AsyncDataStream } from "../../api/async-data-stream.ts";
import { StreamExecutionEnvironment } from "../../api/environment.ts";

/** A request the test settles: `resolve(results)` or `reject(error)`. */
interface Request<IN, OUT> {
  readonly value: IN;
  resolve(results: Iterable<OUT>): void;
  reject(error: unknown): void;
}

/** An async function whose requests wait for the test; `requests` in call order. */
function manual<IN, OUT = string>(): { fn: (value: IN) => Promise<Iterable<OUT>>; requests: Request<IN, OUT>[]; pending(value: IN): Request<IN, OUT> } {
  const requests: Request<IN, OUT>[] = [];
  const settled = new Set<Request<IN, OUT>>();
  return {
    requests,
    fn: (value) =>
      new Promise<Iterable<OUT>>((resolve, reject) => {
        const r: Request<IN, OUT> = {
          value,
          resolve: (x) => (settled.add(r), resolve(x)),
          reject: (e) => (settled.add(r), reject(e)),
        };
        requests.push(r);
      }),
    /** The latest unsettled request for `value`. */
    pending(value) {
      const r = requests.filter((q) => q.value === value && !settled.has(q)).at(-1);
      assert.ok(r !== undefined, `no pending request for ${String(value)}`);
      return r;
    },
  };
}

const harness = <IN, OUT>(
  fn: ((v: IN) => PromiseLike<Iterable<OUT>>) | AsyncFunction<IN, OUT>,
  options: AsyncIoOptions<OUT> & { ordered: boolean },
  errorPolicy?: "skip" | "dead-letter",
): OperatorTestHarness<IN, OUT> => OperatorTestHarness.forAsyncFunction(fn, options, { operatorName: "enrich", ...(errorPolicy === undefined ? {} : { errorPolicy }) });

const events = <T>(h: OperatorTestHarness<never, T>): (T | string)[] =>
  h.output().flatMap((e: HarnessEvent<T>): (T | string)[] => (e.type === "record" ? [e.value] : e.type === "watermark" ? [`wm:${e.watermark}`] : []));

test("ordered: results leave in input order, with the input record's timestamp, whatever order requests complete in", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: true, timeoutMs: Infinity });
  h.processElement(1, 100).processElement(2, 200).processElement(3, 300);
  m.pending(3).resolve(["3a", "3b"]);
  m.pending(2).resolve(new Set(["2"]));
  await h.runMail();
  assert.deepEqual(h.records(), [], "1 holds back 2 and 3");
  m.pending(1).resolve([]);
  await h.settled();
  assert.deepEqual(h.output(), [
    { type: "record", value: "2", timestamp: 200 },
    { type: "record", value: "3a", timestamp: 300 },
    { type: "record", value: "3b", timestamp: 300 },
  ]);
});

test("ordered: a watermark leaves after the records before it and before the records after it", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: true, timeoutMs: Infinity });
  h.processWatermark(5);
  assert.deepEqual(events(h), ["wm:5"], "nothing in flight: the watermark goes at once");
  h.processElement(1, 10).processWatermark(10).processElement(2, 20);
  m.pending(2).resolve(["2"]);
  await h.runMail();
  assert.deepEqual(events(h), ["wm:5"]);
  m.pending(1).resolve(["1"]);
  await h.settled();
  assert.deepEqual(events(h), ["wm:5", "1", "wm:10", "2"]);
});

test("unordered: results leave as requests complete, but never overtake a watermark, and a watermark waits for every record before it", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: false, timeoutMs: Infinity });
  h.processElement(1, 1).processElement(2, 2).processWatermark(2).processElement(3, 3).processElement(4, 4).processWatermark(4).processElement(5, 5);
  m.pending(2).resolve(["2"]);
  m.pending(4).resolve(["4"]);
  m.pending(5).resolve(["5"]);
  await h.runMail();
  assert.deepEqual(events(h), ["2"], "2 is in the first segment; 4 and 5 wait behind watermarks 2 and 4");
  m.pending(1).resolve(["1"]);
  await h.runMail();
  assert.deepEqual(events(h), ["2", "1", "wm:2", "4"], "the first segment is done: its watermark, then what completed in the next");
  m.pending(3).resolve(["3"]);
  await h.settled();
  assert.deepEqual(events(h), ["2", "1", "wm:2", "4", "3", "wm:4", "5"]);
});

test("capacity: with `capacity` elements queued the operator holds back its input and sends no more requests until one leaves", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: true, timeoutMs: Infinity, capacity: 2 });
  h.processElement(1).processElement(2);
  assert.equal(h.blocked, false);
  // The rest of an input batch still arrives; it waits, and the task takes no more input.
  h.processElement(3).processWatermark(7).processElement(4);
  assert.equal(h.blocked, true);
  assert.equal(m.requests.length, 2, "at most `capacity` requests in flight");
  m.pending(2).resolve(["2"]);
  await h.runMail();
  assert.equal(m.requests.length, 2, "2 completed but 1 holds it in the ordered queue: no room yet");
  assert.equal(h.blocked, true);
  m.pending(1).resolve(["1"]);
  await h.runMail();
  assert.deepEqual(m.requests.map((r) => r.value), [1, 2, 3], "3 and the watermark took the two free slots; 4 still waits");
  assert.equal(h.blocked, true);
  m.pending(3).resolve(["3"]);
  await h.runMail();
  assert.deepEqual(m.requests.map((r) => r.value), [1, 2, 3, 4]);
  assert.equal(h.blocked, false, "nothing waits any more: input flows again");
  m.pending(4).resolve(["4"]);
  await h.settled();
  assert.deepEqual(events(h), ["1", "2", "3", "wm:7", "4"]);
});

test("timeout: the function's timeout(value) gives the results, and a late answer is ignored", async () => {
  const m = manual<number>();
  const fn: AsyncFunction<number, string> = { asyncInvoke: m.fn, timeout: (v) => [`fallback-${v}`] };
  const h = harness(fn, { ordered: true, timeoutMs: 100 });
  h.processElement(1, 1);
  h.advanceProcessingTime(50).processElement(2, 2);
  h.advanceProcessingTime(49);
  assert.deepEqual(h.records(), []);
  h.advanceProcessingTime(1); // 1's deadline
  assert.deepEqual(h.records(), ["fallback-1"]);
  m.pending(1).resolve(["late"]);
  m.pending(2).resolve(["2"]);
  await h.settled();
  assert.deepEqual(h.records(), ["fallback-1", "2"]);
  assert.equal(h.counters()[`enrich.${ASYNC_TIMEOUTS}`], 1);
});

test("a record's timeout starts when its request is sent, not while it waits for room", async () => {
  const m = manual<number>();
  const fn: AsyncFunction<number, string> = { asyncInvoke: m.fn, timeout: (v) => [`timeout-${v}`] };
  const h = harness(fn, { ordered: true, timeoutMs: 100, capacity: 1 });
  h.processElement(1).processElement(2);
  h.advanceProcessingTime(90);
  m.pending(1).resolve(["1"]);
  await h.runMail();
  assert.equal(m.requests.length, 2, "2 is sent at 90");
  h.advanceProcessingTime(99);
  assert.deepEqual(h.records(), ["1"], "2 has not timed out at 189");
  h.advanceProcessingTime(1);
  assert.deepEqual(h.records(), ["1", "timeout-2"]);
});

test("timeout without a handler fails the job with ASYNC_IO_TIMEOUT naming the operator; under skip the record is dropped and counted", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: true, timeoutMs: 100 });
  h.processElement(1);
  assert.throws(
    () => h.advanceProcessingTime(100),
    (e: unknown) => e instanceof EddyError && e.code === "ASYNC_IO_TIMEOUT" && e.operator === "enrich" && /'enrich' \(subtask 0\).*within 100 ms/.test(e.message),
  );

  const m2 = manual<number>();
  const skipping = harness(m2.fn, { ordered: true, timeoutMs: 100 }, "skip");
  skipping.processElement(1).processElement(2);
  m2.pending(2).resolve(["2"]);
  await skipping.runMail();
  skipping.advanceProcessingTime(100);
  await skipping.settled();
  assert.deepEqual(skipping.records(), ["2"]);
  assert.equal(skipping.counters()["enrich.numRecordsSkipped"], 1);
});

test("a request that fails (without retries) fails the job with ASYNC_IO_FAILED naming the operator and the cause; dead-letter sends the record aside", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: false, timeoutMs: Infinity });
  h.processElement(1);
  m.pending(1).reject(new Error("HTTP 500"));
  await assert.rejects(h.settled(), (e: unknown) => e instanceof EddyError && e.code === "ASYNC_IO_FAILED" && e.operator === "enrich" && /HTTP 500/.test(e.message));

  const m2 = manual<number>();
  const dead = harness(m2.fn, { ordered: true, timeoutMs: Infinity }, "dead-letter");
  dead.processElement(1, 10).processElement(2, 20);
  m2.pending(1).reject(new Error("HTTP 500"));
  m2.pending(2).resolve(["2"]);
  await dead.settled();
  assert.deepEqual(dead.records(), ["2"]);
  const letters = dead.sideOutput(DEAD_LETTERS);
  assert.equal(letters.length, 1);
  assert.equal(letters[0]!.value.value, 1);
  assert.equal(letters[0]!.value.error.code, "ASYNC_IO_FAILED");
  assert.match(letters[0]!.value.error.message, /HTTP 500/);
});

test("a function that throws, returns no promise or resolves with something that is not a list fails clearly", async () => {
  const thrower = harness<number, string>(() => {
    throw new Error("boom");
  }, { ordered: true, timeoutMs: Infinity });
  thrower.processElement(1);
  await assert.rejects(thrower.settled(), (e: unknown) => e instanceof EddyError && e.code === "ASYNC_IO_FAILED" && /Error: boom/.test(e.message));
  const noPromise = harness<number, string>((() => ["x"]) as never, { ordered: true, timeoutMs: Infinity, retry: { maxAttempts: 5, backoff: "fixed", delayMs: 1 } });
  noPromise.processElement(1);
  await assert.rejects(noPromise.settled(), (e: unknown) => e instanceof EddyError && /attempt 1 of 5: TypeError: asyncInvoke must return a promise of results, got array/.test(e.message));
  const notAList = harness<number, string>(async () => "abc" as never, { ordered: true, timeoutMs: Infinity });
  notAList.processElement(1);
  await assert.rejects(notAList.settled(), /must resolve with an array or iterable of results, got string/);
});

test("fixed-delay retry: a failed request is sent again after the delay, up to maxAttempts, and its success is emitted in place", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: true, timeoutMs: Infinity, retry: { maxAttempts: 3, backoff: "fixed", delayMs: 30 } });
  h.processElement(1, 1).processElement(2, 2);
  m.pending(1).reject(new Error("HTTP 500"));
  m.pending(2).resolve(["2"]);
  await h.runMail();
  h.advanceProcessingTime(29);
  assert.equal(m.requests.length, 2, "no retry before the delay");
  h.advanceProcessingTime(1);
  assert.equal(m.requests.length, 3);
  m.pending(1).reject(new Error("HTTP 500"));
  await h.runMail();
  h.advanceProcessingTime(30);
  assert.equal(m.requests.length, 4);
  m.pending(1).resolve(["1"]);
  await h.settled();
  assert.deepEqual(h.records(), ["1", "2"]);
  assert.equal(h.counters()[`enrich.${ASYNC_RETRIES}`], 2);
});

test("exponential retry: delays grow by the multiplier up to maxDelayMs; after the last attempt the record fails", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: true, timeoutMs: Infinity, retry: { maxAttempts: 5, backoff: "exponential", delayMs: 10, multiplier: 3, maxDelayMs: 50 } });
  h.processElement(1);
  const sentAt: number[] = [h.clock.now()];
  for (let attempt = 1; attempt < 5; attempt++) {
    m.pending(1).reject(new Error(`fail ${attempt}`));
    await h.runMail();
    const before = m.requests.length;
    while (m.requests.length === before) h.advanceProcessingTime(1);
    sentAt.push(h.clock.now());
  }
  assert.deepEqual(sentAt.slice(1).map((t, i) => t - sentAt[i]!), [10, 30, 50, 50]);
  m.pending(1).reject(new Error("fail 5"));
  await assert.rejects(h.settled(), /failed on attempt 5 of 5: Error: fail 5/);
});

test("retry predicates: ifError decides which errors are retried; ifResult retries a result, and the last attempt's result is emitted as it is", async () => {
  const m = manual<number>();
  const h = harness(m.fn, {
    ordered: true,
    timeoutMs: Infinity,
    retry: { maxAttempts: 2, backoff: "fixed", delayMs: 5, ifResult: (r) => r.length === 0, ifError: (e) => e instanceof Error && e.message !== "HTTP 400" },
  });
  h.processElement(1);
  m.pending(1).resolve([]);
  await h.runMail();
  h.advanceProcessingTime(5);
  assert.equal(m.requests.length, 2, "an empty result is retried");
  m.pending(1).resolve([]);
  await h.settled();
  assert.deepEqual(h.records(), [], "the last attempt's (empty) result is the answer");

  h.processElement(2);
  m.pending(2).reject(new Error("HTTP 400"));
  await assert.rejects(h.settled(), /attempt 1 of 2: Error: HTTP 400/);
  assert.equal(m.requests.length, 3, "a 400 is not retried");
});

test("a retry predicate that throws fails the job with USER_FUNCTION_FAILED naming the operator", async () => {
  const m = manual<number>();
  const h = harness(m.fn, {
    ordered: true,
    timeoutMs: Infinity,
    retry: {
      maxAttempts: 2,
      backoff: "fixed",
      delayMs: 5,
      ifError: () => {
        throw new Error("predicate bug");
      },
    },
  });
  h.processElement(1);
  m.pending(1).reject(new Error("HTTP 500"));
  await assert.rejects(h.settled(), (e: unknown) => e instanceof EddyError && e.code === "USER_FUNCTION_FAILED" && e.operator === "enrich" && /predicate bug/.test(e.message));
});

test("the timeout covers every attempt: a retry waiting for its delay is cancelled and the timeout handler answers", async () => {
  const m = manual<number>();
  const fn: AsyncFunction<number, string> = { asyncInvoke: m.fn, timeout: () => ["gave up"] };
  const h = harness(fn, { ordered: true, timeoutMs: 100, retry: { maxAttempts: 10, backoff: "fixed", delayMs: 60 } });
  h.processElement(1);
  m.pending(1).reject(new Error("HTTP 500"));
  await h.runMail();
  h.advanceProcessingTime(60);
  m.pending(1).reject(new Error("HTTP 500"));
  await h.runMail();
  h.advanceProcessingTime(40); // deadline at 100, before the retry at 120
  h.advanceProcessingTime(100);
  await h.settled();
  assert.equal(m.requests.length, 2);
  assert.deepEqual(h.records(), ["gave up"]);
});

test("a snapshot holds every element not yet emitted, in queue order; the restored operator sends those requests again", async () => {
  for (const ordered of [true, false]) {
    const m = manual<number>();
    const h = harness(m.fn, { ordered, timeoutMs: Infinity, capacity: 3 });
    h.processElement(1, 10).processElement(2, 20).processWatermark(20).processElement(3, 30).processElement(4, 40);
    m.pending(2).resolve(["2"]); // ordered: complete but held back by 1; unordered: emitted
    await h.runMail();
    const snapshot = await h.snapshot(1);
    // The failed task's late answer goes nowhere the restored operator sees.
    m.pending(1).resolve(["1 from before"]);

    const again = manual<number>();
    const restored = OperatorTestHarness.forAsyncFunction(
      async (v: number) => {
        again.requests.push({ value: v, resolve() {}, reject() {} });
        return [`${v}`];
      },
      { ordered, timeoutMs: Infinity, capacity: 3 },
      { restore: snapshot },
    );
    restored.endInput();
    await restored.settled();
    const resent = again.requests.map((r) => r.value);
    const expectedResent = ordered ? [1, 2, 3, 4] : [1, 3, 4];
    assert.deepEqual(resent, expectedResent, `${ordered ? "ordered" : "unordered"}: in flight, held back and waiting records are sent again`);
    assert.deepEqual(
      restored.output().flatMap((e) => (e.type === "record" ? [`${e.value}@${e.timestamp}`] : e.type === "watermark" ? [`wm:${e.watermark}`] : [])),
      ordered ? ["1@10", "2@20", "wm:20", "3@30", "4@40"] : ["1@10", "wm:20", "3@30", "4@40"],
    );
    assert.equal(snapshot.meta.operatorStates.find((s) => s.name === ASYNC_WAIT_STATE)?.count, ordered ? 5 : 4);
  }
});

test("a restored element of an unknown version or shape is refused, naming the operator", async () => {
  for (const [values, code, message] of [
    [[{ v: 2, kind: "record", value: 1, timestamp: 0 }], "CHECKPOINT_UNSUPPORTED", /has version 2; this Eddy reads version 1/],
    [[{ v: 1, kind: "record", value: 1 }], "CHECKPOINT_CORRUPT", /neither a record/],
  ] as const) {
    // A checkpoint whose async I/O state was written by something else.
    const writer = new OperatorTestHarness<never, never>((ctx) => {
      ctx.checkpointing!.registerOperatorState(ASYNC_WAIT_STATE, "split", () => values);
      return { processElement() {}, processWatermark() {} };
    }, undefined);
    const snapshot = await writer.snapshot(1);
    const h = OperatorTestHarness.forAsyncFunction(async (v: number) => [v], { ordered: true, timeoutMs: Infinity }, { restore: snapshot, operatorName: "enrich" });
    assert.throws(() => h.open(), (e: unknown) => e instanceof EddyError && e.code === code && e.operator === "enrich" && message.test(e.message));
  }
});

test("end of input: the operator holds back the end of its task until every request has answered", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: false, timeoutMs: Infinity });
  h.processElement(1).processElement(2).processWatermark(Number.POSITIVE_INFINITY).endInput();
  assert.equal(h.blocked, true);
  m.pending(2).resolve(["2"]);
  await h.runMail();
  assert.equal(h.blocked, true);
  m.pending(1).resolve(["1"]);
  await h.settled();
  assert.equal(h.blocked, false);
  assert.deepEqual(events(h), ["2", "1", "wm:Infinity"]);
});

test("close() cancels the deadline timer and calls the function's close(); an answer after close is ignored", async () => {
  const m = manual<number>();
  let closed = 0;
  const h = harness<number, string>({ asyncInvoke: m.fn, close: () => void closed++ }, { ordered: true, timeoutMs: 100 });
  h.processElement(1);
  assert.equal(h.clock.pendingCount, 1, "one timer for the deadline");
  h.close();
  assert.equal(h.clock.pendingCount, 0);
  assert.equal(closed, 1);
  m.pending(1).resolve(["late"]);
  await h.runMail();
  assert.deepEqual(h.records(), []);
});

test("watermark status passes through at once, ahead of the records in flight (as in Flink)", async () => {
  const m = manual<number>();
  const h = harness(m.fn, { ordered: true, timeoutMs: Infinity });
  h.processElement(1).processWatermark(3).processWatermarkStatus(true);
  assert.deepEqual(h.output(), [{ type: "status", idle: true }]);
  m.pending(1).resolve(["1"]);
  await h.settled();
  assert.deepEqual(events(h), ["1", "wm:3"]);
});

test("function objects are copied per subtask: open() and close() run on the copy", async () => {
  const fn = {
    prefix: "",
    open(this: { prefix: string }) {
      this.prefix = "opened-";
    },
    async asyncInvoke(this: { prefix: string }, v: number) {
      return [`${this.prefix}${v}`];
    },
  };
  const h = harness<number, string>(fn, { ordered: true, timeoutMs: Infinity });
  h.processElement(1);
  await h.settled();
  assert.deepEqual(h.records(), ["opened-1"]);
  assert.equal(fn.prefix, "", "the user's object is not touched");
});

test("options are validated with INVALID_ASYNC_IO_OPTIONS and a message naming the option", () => {
  const bad: [unknown, RegExp][] = [
    [{}, /timeoutMs must be a number > 0/],
    [{ timeoutMs: 0 }, /timeoutMs must be a number > 0/],
    [{ timeoutMs: 10, capacity: 0 }, /capacity must be an integer ≥ 1/],
    [{ timeoutMs: 10, capcity: 5 }, /unknown option 'capcity'/],
    [{ timeoutMs: 10, retry: { maxAttempts: 0, backoff: "fixed", delayMs: 1 } }, /maxAttempts must be an integer ≥ 1/],
    [{ timeoutMs: 10, retry: { maxAttempts: 2, backoff: "linear", delayMs: 1 } }, /backoff must be "fixed" or "exponential"/],
    [{ timeoutMs: 10, retry: { maxAttempts: 2, backoff: "exponential", delayMs: 10 } }, /maxDelayMs must be a finite number ≥ delayMs/],
    [{ timeoutMs: 10, retry: { maxAttempts: 2, backoff: "fixed", delayMs: 1, multiplier: 2 } }, /apply to backoff "exponential" only/],
    [{ timeoutMs: 10, retry: { maxAttempts: 2, backoff: "fixed", delayMs: -1 } }, /delayMs must be a finite number ≥ 0/],
  ];
  for (const [options, message] of bad) {
    assert.throws(
      () => asyncWaitSettings(options as AsyncIoOptions<unknown>, true, "orderedWait"),
      (e: unknown) => e instanceof EddyError && e.code === "INVALID_ASYNC_IO_OPTIONS" && message.test(e.message),
      JSON.stringify(options),
    );
  }
  const env = new StreamExecutionEnvironment();
  const stream = env.fromElements(1, 2);
  assert.throws(() => AsyncDataStream.orderedWait(stream, { timeout: () => [] } as never, { timeoutMs: 10 }), /needs a function \(value\) => Promise<results> or an object with asyncInvoke/);
  assert.throws(() => AsyncDataStream.unorderedWait(stream, { asyncInvoke: async () => [], timeout: 5 } as never, { timeoutMs: 10 }), /'timeout' must be a function/);
});
