import assert from "node:assert/strict";
import { test } from "node:test";
import type { OneInputOperator } from "./operator.ts";
import { chainedTarget } from "./outputs.ts";

/** An operator that records every call it gets, tagged with its name. */
function recording(name: string, calls: string[], withStatus = true): OneInputOperator<unknown> {
  const operator: OneInputOperator<unknown> = {
    processElement(value, timestamp) {
      // Called as a method: `this` is the operator, as the task's own calls have it.
      assert.equal(this, operator);
      calls.push(`${name}:record:${String(value)}@${timestamp}`);
    },
    processWatermark(watermark) {
      calls.push(`${name}:watermark:${watermark}`);
    },
    ...(withStatus ? { processWatermarkStatus: (idle: boolean) => void calls.push(`${name}:idle:${idle}`) } : {}),
  };
  return operator;
}

test("a chained target forwards records, watermarks and statuses to its operator", () => {
  const calls: string[] = [];
  const a = chainedTarget(recording("a", calls));
  const b = chainedTarget(recording("b", calls, false));
  a.collect(1, 10);
  b.collect("x", Number.NaN);
  a.emitWatermark(5);
  b.emitWatermark(6);
  a.emitWatermarkStatus(true);
  b.emitWatermarkStatus(true); // b has no processWatermarkStatus: nothing to call, no error
  assert.deepEqual(calls, ["a:record:1@10", "b:record:x@NaN", "a:watermark:5", "b:watermark:6", "a:idle:true"]);
});

test("each chained edge has code of its own (private call feedback, so V8 can inline the next operator)", () => {
  const calls: string[] = [];
  const a = chainedTarget(recording("a", calls));
  const b = chainedTarget(recording("b", calls));
  // Distinct functions from distinct sources: a shared class would give both edges one call site.
  assert.notEqual(a.collect, b.collect);
  assert.notEqual(a.collect.toString(), b.collect.toString());
});
