import assert from "node:assert/strict";
import { test } from "node:test";
import type { OneInputOperator } from "./operator.ts";
import { OutputTag } from "../core/output-tag.ts";
import { chainedTarget, createOutput, RoutingOutput, type OutputTarget } from "./outputs.ts";

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

/** A target that records what it receives, tagged with its name. */
function target(name: string, calls: string[]): OutputTarget {
  return {
    collect: (value, timestamp) => void calls.push(`${name}:${String(value)}@${timestamp}`),
    collectSide: () => assert.fail("a target's collectSide is never called by an output"),
    emitWatermark: (watermark) => void calls.push(`${name}:wm:${watermark}`),
    emitWatermarkStatus: (idle) => void calls.push(`${name}:idle:${idle}`),
  };
}

test("an output with several targets sends records to every main target in order, side records by tag, and watermarks to all", () => {
  const late = new OutputTag<string>("late");
  for (const mains of [0, 1, 2, 8, 9]) {
    const calls: string[] = [];
    const main = Array.from({ length: mains }, (_, i) => target(`m${i}`, calls));
    const output = createOutput(main, new Map([[late.id, [target("late", calls)]]]));
    // Up to 8 main targets the output's collect is compiled; more use RoutingOutput's loop.
    assert.equal(output instanceof RoutingOutput, mains > 8, `${mains} main targets`);
    output.collect("r", 1);
    output.collectSide(late, "x", 2);
    output.emitWatermark(3);
    output.emitWatermarkStatus(true);
    const names = main.map((_, i) => `m${i}`);
    assert.deepEqual(calls, [
      ...names.map((n) => `${n}:r@1`),
      "late:x@2",
      ...[...names, "late"].map((n) => `${n}:wm:3`),
      ...[...names, "late"].map((n) => `${n}:idle:true`),
    ]);
  }
  // One main target and no side outputs: the target itself.
  const only = target("only", []);
  assert.equal(createOutput([only], new Map()), only);
});

test("each compiled output has code of its own", () => {
  const calls: string[] = [];
  const a = createOutput([target("a", calls), target("b", calls)], new Map());
  const b = createOutput([target("c", calls), target("d", calls)], new Map());
  assert.notEqual(a.collect.toString(), b.collect.toString());
});
