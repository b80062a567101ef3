import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { averages, type Average, type Reading } from "../src/pipeline.js";

/** Runs the pipeline over `readings` in this process and returns what it emitted. */
async function run(readings: Reading[]): Promise<Average[]> {
  const job = defineJob("pipeline-test", (env) => {
    averages(env.fromCollection(readings)).sinkTo(collectSink("out"));
  });
  // verifyCopyNone: fails the test if a state declared copy: "none" has a value changed in place.
  const handle = runJob(job, { mode: "inline", verifyCopyNone: true });
  await handle.done;
  return handle.collected<Average>("out");
}

test("averages each sensor over 10-second windows of event time", async () => {
  const out = await run([
    { sensor: "a", celsius: 20, ts: 1_000 },
    { sensor: "b", celsius: 30, ts: 2_000 },
    { sensor: "a", celsius: 22, ts: 9_999 },
    { sensor: "a", celsius: 25, ts: 10_000 }, // the next window: [10000, 20000)
  ]);
  const sorted = out.sort((x, y) => x.windowStart - y.windowStart || x.sensor.localeCompare(y.sensor));
  assert.deepEqual(sorted, [
    { sensor: "a", windowStart: 0, windowEnd: 10_000, celsius: 21, readings: 2 },
    { sensor: "b", windowStart: 0, windowEnd: 10_000, celsius: 30, readings: 1 },
    { sensor: "a", windowStart: 10_000, windowEnd: 20_000, celsius: 25, readings: 1 },
  ]);
});

test("readings arriving out of order count in the window of their event time", async () => {
  const readings: Reading[] = [];
  for (let i = 0; i < 40; i++) readings.push({ sensor: i % 2 === 0 ? "a" : "b", celsius: i, ts: i * 500 });
  // Each sensor's readings two by two in reverse order: 1 s out of order, within the 2 s bound.
  const shuffled = readings.map((_, i) => readings[i ^ 2]!);
  const key = (a: Average) => `${a.sensor}@${a.windowStart}`;
  const inOrder = (await run(readings)).sort((x, y) => key(x).localeCompare(key(y)));
  assert.equal(inOrder.length, 4); // two sensors, two windows: [0, 10000) and [10000, 20000)
  assert.deepEqual(inOrder[0], { sensor: "a", windowStart: 0, windowEnd: 10_000, celsius: 9, readings: 10 });
  assert.deepEqual((await run(shuffled)).sort((x, y) => key(x).localeCompare(key(y))), inOrder);
});
