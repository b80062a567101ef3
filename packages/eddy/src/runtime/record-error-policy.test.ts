import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "../core/clock.ts";
import { DEAD_LETTERS, errorPolicySpec, type DeadLetter, type ErrorPolicy, type ErrorPolicyOptions } from "../core/error-policy.ts";
import { EddyError } from "../core/errors.ts";
import type { OutputTag } from "../core/output-tag.ts";
import { NO_TIMESTAMP } from "../core/time.ts";
import { CounterRegistry, type Output } from "./operator.ts";
import { recordErrorPolicy, SlidingWindowBound } from "./record-error-policy.ts";

function harness(policy: ErrorPolicy, options?: ErrorPolicyOptions) {
  const clock = new ManualClock(0);
  const counters = new CounterRegistry();
  const side: [string, unknown, number][] = [];
  const output: Output<unknown> = {
    collect: () => assert.fail("a policy emits nothing to the main output"),
    collectSide: <S>(tag: OutputTag<S>, value: S, timestamp: number) => void side.push([tag.id, value, timestamp]),
    emitWatermark: () => {},
    emitWatermarkStatus: () => {},
  };
  const errors = recordErrorPolicy(
    { operatorName: "parse", subtaskIndex: 1, parallelism: 2, errorPolicy: errorPolicySpec(policy, options), clock, counter: (name) => counters.counter("parse", name) },
    output,
  );
  return { clock, counters, side, errors };
}

test("fail throws what the operator threw before policies: USER_FUNCTION_FAILED, BAD_RECORD", () => {
  const { errors, counters } = harness("fail");
  assert.throws(() => errors.onRecordError(new Error("boom"), 1, 5), (e: unknown) => e instanceof EddyError && e.code === "USER_FUNCTION_FAILED" && /operator 'parse' \(subtask 1 of 2\): Error: boom/.test(e.message));
  assert.throws(() => errors.onBadRecord({ raw: "x", error: new Error("nope"), position: { line: 3 } }), (e: unknown) => e instanceof EddyError && e.code === "BAD_RECORD");
  assert.deepEqual(counters.snapshot(), {}, "fail has no counters");
});

test("skip counts and emits nothing", () => {
  const { errors, counters, side } = harness("skip");
  errors.onRecordError(new Error("boom"), 1, 5);
  errors.onBadRecord({ raw: "x", error: new Error("nope"), position: { line: 3 } });
  assert.deepEqual(counters.snapshot(), { "parse.numRecordsSkipped": 2 });
  assert.deepEqual(side, []);
});

test("dead-letter sends the record, the error, the operator and the position to DEAD_LETTERS, and counts", () => {
  const { errors, counters, side } = harness("dead-letter");
  errors.onRecordError(new Error("boom"), { n: 1 }, 5);
  errors.onRecordError(new EddyError("INVALID_KEY", "key selector of 'parse' returned an invalid key: undefined", { operator: "parse" }), 2, NO_TIMESTAMP);
  errors.onBadRecord({ raw: "x,y", error: new SyntaxError("bad row"), position: { file: "a.csv", line: 3 } });
  errors.onBadRecord({ raw: new Uint8Array([0xff, 0x00]), error: new Error("not utf-8"), position: { offset: 7 } });
  assert.deepEqual(counters.snapshot(), { "parse.numRecordsDeadLettered": 4 });
  assert.deepEqual(side.map(([tag]) => tag), [DEAD_LETTERS.id, DEAD_LETTERS.id, DEAD_LETTERS.id, DEAD_LETTERS.id]);
  assert.deepEqual(side.map(([, , ts]) => ts), [5, NO_TIMESTAMP, NO_TIMESTAMP, NO_TIMESTAMP]);
  const letters = side.map(([, v]) => v as DeadLetter);
  assert.deepEqual(letters[0], {
    operator: "parse",
    subtask: 1,
    error: { code: "USER_FUNCTION_FAILED", message: "user function failed in operator 'parse' (subtask 1 of 2): Error: boom" },
    value: { n: 1 },
    timestamp: 5,
  });
  assert.equal(letters[1]!.error.code, "INVALID_KEY");
  assert.equal("timestamp" in letters[1]!, false, "no timestamp when the record had none");
  assert.deepEqual(letters[2], {
    operator: "parse",
    subtask: 1,
    error: { code: "BAD_RECORD", message: "source 'parse' (subtask 1) could not read the record at file 'a.csv', line 3: SyntaxError: bad row" },
    raw: "x,y",
    rawEncoding: "text",
    position: { file: "a.csv", line: 3 },
  });
  assert.equal(letters[3]!.raw, "/wA=");
  assert.equal(letters[3]!.rawEncoding, "base64");
});

test("the bound fails at the record that would make more than maxPerMinute within a sliding minute", () => {
  const { errors, counters, side, clock } = harness("dead-letter", { maxPerMinute: 2 });
  errors.onRecordError(new Error("a"), 1, 0);
  clock.advance(30_000);
  errors.onRecordError(new Error("b"), 2, 0);
  clock.advance(30_000); // the first is exactly a minute old: out of the window
  errors.onRecordError(new Error("c"), 3, 0);
  clock.advance(29_999); // "b" at 30 000 and "c" at 60 000 are both within the minute before 89 999
  assert.throws(
    () => errors.onRecordError(new Error("d"), 4, 0),
    (e: unknown) => e instanceof EddyError && e.code === "ERROR_POLICY_BOUND_EXCEEDED" && e.operator === "parse" && /more than 2 records within a minute.*Error: d/.test(e.message),
  );
  assert.equal(side.length, 3, "the record over the bound is not dead-lettered");
  assert.deepEqual(counters.snapshot(), { "parse.numRecordsDeadLettered": 3 });
});

test("the bound applies to skip too", () => {
  const { errors } = harness("skip", { maxPerMinute: 1 });
  errors.onRecordError(new Error("a"), 1, 0);
  assert.throws(() => errors.onRecordError(new Error("b"), 2, 0), (e: unknown) => e instanceof EddyError && e.code === "ERROR_POLICY_BOUND_EXCEEDED");
});

test("SlidingWindowBound: more than max within any windowMs is refused, checked against a recomputation", () => {
  const max = 3;
  const windowMs = 100;
  const bound = new SlidingWindowBound(max, windowMs);
  const admitted: number[] = [];
  let t = 0;
  let state = 7;
  for (let i = 0; i < 2_000; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    t += state % 60;
    const expected = admitted.filter((a) => t - a < windowMs).length < max;
    assert.equal(bound.admit(t), expected, `event ${i} at ${t}`);
    if (expected) admitted.push(t);
  }
});

test("onError options are checked", () => {
  assert.throws(() => errorPolicySpec("retry" as ErrorPolicy), /onError needs "fail", "skip" or "dead-letter"/);
  assert.throws(() => errorPolicySpec("fail", { maxPerMinute: 3 }), /maxPerMinute bounds "skip" and "dead-letter"/);
  assert.throws(() => errorPolicySpec("skip", { maxPerMinute: 0 }), /maxPerMinute must be an integer/);
  assert.throws(() => errorPolicySpec("skip", { maxPerMinute: 1.5 }), /maxPerMinute must be an integer/);
  assert.deepEqual(errorPolicySpec("dead-letter", { maxPerMinute: 10 }), { policy: "dead-letter", maxPerMinute: 10 });
});
