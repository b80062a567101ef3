import assert from "node:assert/strict";
import { test } from "node:test";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import { JobMetricsRegistry, type JobMetricsSource } from "./job-metrics.ts";

/** A job of one task whose reports the test sets; `now` is the coordinator's clock. */
function job(): { source: JobMetricsSource; report: (r: Partial<SubtaskMetrics>) => void; registry: JobMetricsRegistry; at: (ms: number) => void } {
  let current: SubtaskMetrics = {
    task: "Source -> Map",
    vertex: "0",
    subtask: 0,
    state: "running",
    recordsIn: 0,
    recordsOut: 0,
    bytesIn: 0,
    bytesOut: 0,
    backpressuredMs: 0,
    watermark: Number.NEGATIVE_INFINITY,
    counters: {},
    busyMs: 0,
    elapsedMs: 0,
    operators: [],
  } as SubtaskMetrics;
  let now = 1_000_000;
  const source: JobMetricsSource = {
    jobName: "j",
    metrics: () => [current],
    restarts: 0,
    checkpointCounts: () => undefined,
    lastCompletedCheckpoint: () => undefined,
  };
  return {
    source,
    report: (r) => (current = { ...current, ...r }),
    registry: new JobMetricsRegistry(source, () => now),
    at: (ms) => (now = 1_000_000 + ms),
  };
}

test("busy, backpressured and idle time are shares of the task's own time: they add up to 1000 ms per second", () => {
  const j = job();
  j.registry.sample();
  // The task's reports lag: over 10 s of the coordinator's clock it reported 8 s of its time,
  // half of it busy and a quarter backpressured.
  for (let s = 1; s <= 10; s++) {
    j.at(s * 1_000);
    j.report({ elapsedMs: s * 800, busyMs: s * 400, backpressuredMs: s * 200 });
    j.registry.sample();
  }
  const [t] = j.registry.snapshot().tasks;
  assert.equal(Math.round(t!.busyTimeMsPerSecond), 500);
  assert.equal(Math.round(t!.backPressuredTimeMsPerSecond), 250);
  assert.equal(Math.round(t!.idleTimeMsPerSecond), 250);
});

test("a task that ended (its time stops) shows shares within 0..1000, never more idle time than there is", () => {
  const j = job();
  j.registry.sample();
  for (let s = 1; s <= 5; s++) {
    j.at(s * 1_000);
    j.report({ elapsedMs: s * 1_000, busyMs: s * 900, backpressuredMs: 0 });
    j.registry.sample();
  }
  for (let s = 6; s <= 20; s++) {
    j.at(s * 1_000);
    j.registry.sample();
  }
  const [t] = j.registry.snapshot().tasks;
  for (const v of [t!.busyTimeMsPerSecond, t!.backPressuredTimeMsPerSecond, t!.idleTimeMsPerSecond]) assert.ok(v >= 0 && v <= 1_000, `${v}`);
  assert.ok(Math.abs(t!.busyTimeMsPerSecond + t!.backPressuredTimeMsPerSecond + t!.idleTimeMsPerSecond - 1_000) < 1e-6);
});

test("with per-record metrics off (busy time not measured) busy and idle time are NaN, not made up", () => {
  const j = job();
  j.report({ busyMs: Number.NaN });
  j.registry.sample();
  j.at(5_000);
  j.report({ elapsedMs: 5_000, busyMs: Number.NaN, backpressuredMs: 100 });
  const [t] = j.registry.snapshot().tasks;
  assert.ok(Number.isNaN(t!.busyTimeMsPerSecond));
  assert.ok(Number.isNaN(t!.idleTimeMsPerSecond));
});

test("stateSize: each operator subtask's bytes in the newest completed checkpoint; 0 for an operator without state; NaN before a checkpoint", () => {
  const operator = (name: string, operatorId: string) => ({ name, operatorId, recordsIn: 0, recordsOut: 0, inputWatermark: 0, outputWatermark: 0, gauges: {}, counters: {}, user: [] });
  const reports: SubtaskMetrics[] = [0, 1].map(
    (subtask) =>
      ({ task: "Window -> Sink", vertex: "1", subtask, state: "running", recordsIn: 0, recordsOut: 0, bytesIn: 0, bytesOut: 0, backpressuredMs: 0, watermark: 0, counters: {}, busyMs: 0, elapsedMs: 1, operators: [operator("Window", "win"), operator("Sink", "sink")] }) as SubtaskMetrics,
  );
  let last: ReturnType<JobMetricsSource["lastCompletedCheckpoint"]>;
  const registry = new JobMetricsRegistry(
    { jobName: "j", metrics: () => reports, restarts: 0, checkpointCounts: () => ({ completed: 1, failed: 0, inProgress: 0 }), lastCompletedCheckpoint: () => last },
    () => 0,
  );
  const sizes = () => registry.snapshot().tasks.map((t) => t.operators.map((o) => o.stateSize));
  assert.deepEqual(sizes(), [[Number.NaN, Number.NaN], [Number.NaN, Number.NaN]]);
  const ack = (taskId: string, operatorBytes: Record<string, number>) => ({ taskId, ackTimeMs: 0, syncMs: 0, asyncMs: 0, alignmentMs: 0, bytes: 0, operatorBytes });
  // Two chains: the window's task ("1.<subtask>") and a source's ("0.<subtask>") that also acknowledged.
  last = {
    checkpointId: 3, isSavepoint: false, triggerTimeMs: 0, status: "completed", durationMs: 1, acknowledgedTasks: 4, totalTasks: 4, syncMs: 0, asyncMs: 0, alignmentMs: 0, bytes: 0, failureReason: undefined,
    subtasks: [ack("0.0", { src: 5 }), ack("1.0", { win: 1_200 }), ack("0.1", { src: 6 }), ack("1.1", { win: 800 })],
  };
  assert.deepEqual(sizes(), [[1_200, 0], [800, 0]]);
});
