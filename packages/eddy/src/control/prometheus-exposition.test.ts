import assert from "node:assert/strict";
import { test } from "node:test";
import type { JobMetricsSnapshot, TaskMetricsSnapshot } from "../coordinator/job-metrics.ts";
import { prometheusExposition } from "./prometheus-exposition.ts";

test("two tasks of one name (two unnamed maps) are two series: task_id, the vertex id, tells them apart as Flink's task_id does", () => {
  const task = (vertex: string, numRecordsIn: number): TaskMetricsSnapshot => ({
    task: "Map -> Sink: Print",
    vertex,
    subtask: 0,
    busyTimeMsPerSecond: 1,
    idleTimeMsPerSecond: 999,
    backPressuredTimeMsPerSecond: 0,
    numBytesIn: 0,
    numBytesOut: 0,
    operators: [
      {
        operator: vertex === "1" ? "Map" : "Map (2)",
        numRecordsIn,
        numRecordsOut: numRecordsIn,
        numRecordsInPerSecond: 0,
        numRecordsOutPerSecond: 0,
        currentInputWatermark: 0,
        currentOutputWatermark: 0,
        watermarkLag: Number.NaN,
        stateSize: Number.NaN,
        gauges: {},
        counters: {},
        user: [],
      },
    ],
  });
  const m: JobMetricsSnapshot = { job: "twins", numRestarts: 0, checkpoints: undefined, tasks: [task("1", 10), task("2", 20)] };
  const lines = prometheusExposition(m).split("\n");
  const busy = lines.filter((l) => l.startsWith("eddy_task_busyTimeMsPerSecond{"));
  assert.deepEqual(busy, [
    'eddy_task_busyTimeMsPerSecond{job="twins",task="Map -> Sink: Print",task_id="1",subtask="0"} 1',
    'eddy_task_busyTimeMsPerSecond{job="twins",task="Map -> Sink: Print",task_id="2",subtask="0"} 1',
  ]);
  const series = lines.filter((l) => l.startsWith("eddy_") && !l.startsWith("#")).map((l) => l.slice(0, l.lastIndexOf(" ")));
  assert.equal(new Set(series).size, series.length, "no series twice");
});
