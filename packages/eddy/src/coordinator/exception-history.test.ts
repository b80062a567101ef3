import assert from "node:assert/strict";
import { test } from "node:test";
import { EddyError } from "../core/errors.ts";
import { ExceptionHistory, MAX_EXCEPTIONS, MAX_MESSAGE_CHARS, MAX_STACK_CHARS } from "./exception-history.ts";

test("keeps the newest MAX_EXCEPTIONS failures, newest first, and counts every one", () => {
  const h = new ExceptionHistory();
  for (let i = 0; i < MAX_EXCEPTIONS + 5; i++) h.record(new Error(`failure ${i}`), 1_000 + i, i, true);
  assert.equal(h.total, MAX_EXCEPTIONS + 5);
  const kept = h.newestFirst();
  assert.equal(kept.length, MAX_EXCEPTIONS);
  assert.deepEqual([kept[0]!.message, kept[0]!.timeMs, kept[0]!.attempt], [`failure ${MAX_EXCEPTIONS + 4}`, 1_000 + MAX_EXCEPTIONS + 4, MAX_EXCEPTIONS + 4]);
  assert.equal(kept.at(-1)!.message, "failure 5");
});

test("cuts messages and stacks to their bounds and says so", () => {
  const h = new ExceptionHistory();
  const e = new Error("x".repeat(MAX_MESSAGE_CHARS * 2));
  e.stack = `Error: boom\n${"    at f (file:///a.ts:1:1)\n".repeat(MAX_STACK_CHARS / 10)}`;
  h.record(e, 0, 0, false);
  const [entry] = h.newestFirst();
  assert.equal(entry!.message.length, MAX_MESSAGE_CHARS);
  assert.equal(entry!.stack!.length, MAX_STACK_CHARS);
  assert.equal(entry!.stackTruncated, true);
  assert.equal(entry!.restarted, false);
});

test("an EddyError's code, operator and subtask; the innermost cause as the root cause", () => {
  const h = new ExceptionHistory();
  const inner = new TypeError("bad input");
  const e = new EddyError("USER_FUNCTION_FAILED", "user function failed", { cause: new Error("middle", { cause: inner }), operator: "Parse", subtask: 1, parallelism: 2 });
  h.record(e, 5, 2, true);
  h.record("a string thrown", 6, 3, false);
  const [plain, eddy] = h.newestFirst();
  assert.deepEqual([eddy!.code, eddy!.operator, eddy!.subtask, eddy!.rootCause], ["USER_FUNCTION_FAILED", "Parse", 1, "TypeError: bad input"]);
  assert.deepEqual([plain!.code, plain!.message, plain!.rootCause, plain!.stack, plain!.operator], [undefined, "a string thrown", undefined, undefined, undefined]);
});

test("a worker's error arrives without cause objects: the root cause is the last 'Caused by' line of its stack", () => {
  const h = new ExceptionHistory();
  const e = new Error("user function failed");
  e.stack = "Error: user function failed\n    at a (x.ts:1:1)\nCaused by: Error: middle\n    at b (y.ts:1:1)\nCaused by: RangeError: deep\n    at c (z.ts:1:1)";
  h.record(e, 0, 0, true);
  assert.equal(h.newestFirst()[0]!.rootCause, "RangeError: deep");
});
