/**
 * The REST API's answers for states a real job reaches only slowly or by luck, served over HTTP
 * by the real control server from a job whose observations are made up: a long checkpoint
 * history and many failures with huge stacks (the answers stay within their bounds), every
 * backpressure level at Flink's thresholds, watermarks not yet seen. test/rest-api.test.ts runs a
 * real job.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defineJob } from "../api/define-job.ts";
import { STATS_HISTORY, type CheckpointStats } from "../checkpoint/coordinator.ts";
import type { ObservedJob } from "../coordinator/control.ts";
import { ExceptionHistory, MAX_EXCEPTIONS, MAX_STACK_CHARS } from "../coordinator/exception-history.ts";
import type { JobMetricsSnapshot, TaskMetricsSnapshot } from "../coordinator/job-metrics.ts";
import { silentLogger } from "../core/logger.ts";
import { MAX_WATERMARK, MIN_WATERMARK } from "../core/time.ts";
import { planJob } from "../executor/job-ref.ts";
import { startControlServer } from "./control-server.ts";
import { liveVerticesView, vertexDetailView } from "./rest-views.ts";

const job = defineJob("rest-fake", (env) => {
  env.fromElements(1, 2, 3).name("Numbers").rebalance().map((n) => n).name("Copy").setParallelism(4);
});
const { plan } = planJob(job, { parallelism: 1 }, silentLogger);

function checkpoint(id: number): CheckpointStats {
  const subtasks = Array.from({ length: 5 }, (_, s) => ({ taskId: `${s === 0 ? 0 : 1}.${s === 0 ? 0 : s - 1}`, ackTimeMs: 1_000 * id + s, syncMs: 1, asyncMs: 2, alignmentMs: 3, bytes: 10, operatorBytes: { copy: 10 } }));
  return {
    checkpointId: id,
    isSavepoint: id % 10 === 0,
    triggerTimeMs: 1_000 * id,
    status: id % 7 === 0 ? "failed" : "completed",
    durationMs: 50,
    acknowledgedTasks: 5,
    totalTasks: 5,
    syncMs: 1,
    asyncMs: 2,
    alignmentMs: 3,
    bytes: 50,
    failureReason: id % 7 === 0 ? "x".repeat(200) : undefined,
    subtasks,
  };
}

/** Copy's four subtasks backpressured 100, 101, 500 and 501 ms per second; the source not yet reported. */
function metrics(): JobMetricsSnapshot {
  const task = (subtask: number, backPressured: number, watermark: number): TaskMetricsSnapshot => ({
    task: "Copy",
    vertex: "1",
    subtask,
    busyTimeMsPerSecond: 10,
    idleTimeMsPerSecond: 1_000 - 10 - backPressured,
    backPressuredTimeMsPerSecond: backPressured,
    numBytesIn: 0,
    numBytesOut: 0,
    operators: [
      {
        operator: "Copy",
        numRecordsIn: subtask,
        numRecordsOut: subtask,
        numRecordsInPerSecond: Number.NaN,
        numRecordsOutPerSecond: 1,
        currentInputWatermark: watermark,
        currentOutputWatermark: watermark,
        stateSize: Number.NaN,
        gauges: {},
        watermarkLag: Number.NaN,
        counters: {},
        user: [],
      },
    ],
  });
  return {
    job: "rest-fake",
    numRestarts: 0,
    checkpoints: undefined,
    tasks: [task(0, 100, MIN_WATERMARK), task(1, 101, 5), task(2, 500, 7), task(3, 501, MAX_WATERMARK)],
  };
}

const failures = new ExceptionHistory();
for (let i = 0; i < MAX_EXCEPTIONS * 2; i++) {
  const e = new Error(`failure ${i}`);
  e.stack = `Error: failure ${i}\n${"    at f (file:///a.ts:1:1)\n".repeat(MAX_STACK_CHARS)}`;
  failures.record(e, i, i, true);
}

const observed: ObservedJob = {
  id: "rest-fake",
  name: "rest-fake",
  startedAtMs: 0,
  endedAtMs: undefined,
  plan,
  restarts: MAX_EXCEPTIONS * 2,
  status: () => "running",
  state: () => "running",
  savepoint: () => Promise.reject(new Error("not here")),
  stop: () => Promise.reject(new Error("not here")),
  cancel: () => undefined,
  metricsSnapshot: metrics,
  checkpointCounts: () => ({ completed: 5_000, failed: 700 }),
  checkpointHistory: () => Array.from({ length: STATS_HISTORY }, (_, i) => checkpoint(5_000 + i)),
  exceptions: () => ({ total: failures.total, newestFirst: failures.newestFirst() }),
  configuration: () => ({ "metrics.enabled": "true" }),
};

/** Serves `job`'s control API while `fn` runs, with a `get` that sends the token. */
async function withServer(fn: (get: (path: string) => Promise<{ status: number; text: string; body: any }>) => Promise<void>, job: ObservedJob = observed): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "eddy-rest-fake-"));
  const server = await startControlServer(job, { home, logger: silentLogger });
  try {
    const token = readFileSync(server.tokenFile, "utf8");
    await fn(async (path) => {
      const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } });
      const text = await res.text();
      return { status: res.status, text, body: JSON.parse(text) };
    });
  } finally {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
}

test("a job with thousands of checkpoints answers a bounded history: newest first, at most `limit` (default 20, at most STATS_HISTORY)", async () => {
  await withServer(async (get) => {
    const byDefault = await get("/v1/job/checkpoints");
    assert.equal(byDefault.status, 200);
    assert.deepEqual(byDefault.body.counts, { completed: 5_000, failed: 700, inProgress: 0 });
    assert.equal(byDefault.body.kept, STATS_HISTORY);
    assert.deepEqual(byDefault.body.history.map((c: any) => c.id), Array.from({ length: 20 }, (_, i) => 5_000 + STATS_HISTORY - 1 - i));
    assert.ok(byDefault.text.length < 10_000, `default answer: ${byDefault.text.length} bytes`);
    const all = await get(`/v1/job/checkpoints?limit=${STATS_HISTORY}`);
    assert.equal(all.body.history.length, STATS_HISTORY);
    assert.ok(all.text.length < 64 * 1024, `the whole history: ${all.text.length} bytes`);
    assert.deepEqual([all.body.latest.completed.id, all.body.latest.savepoint.id, all.body.latest.failed.id], [5_099, 5_090, 5_096]);
    const detail = await get("/v1/job/checkpoints/5050");
    assert.deepEqual(detail.body.subtasks.map((s: any) => [s.vertex, s.subtask, s.endToEndMs]), [["0", 0, 0], ["1", 0, 1], ["1", 1, 2], ["1", 2, 3], ["1", 3, 4]]);
    assert.equal((await get("/v1/job/checkpoints/4999")).status, 404, "older than the history kept");
  });
});

test("a job that failed many times answers the newest MAX_EXCEPTIONS failures with stacks cut to MAX_STACK_CHARS", async () => {
  await withServer(async (get) => {
    const answer = await get("/v1/job/exceptions");
    assert.equal(answer.body.total, MAX_EXCEPTIONS * 2);
    assert.equal(answer.body.truncated, true);
    assert.equal(answer.body.history.length, MAX_EXCEPTIONS);
    assert.equal(answer.body.rootException.message, `failure ${MAX_EXCEPTIONS * 2 - 1}`, "the newest first");
    for (const e of answer.body.history) {
      assert.equal(e.stack.length, MAX_STACK_CHARS);
      assert.equal(e.stackTruncated, true);
    }
    assert.ok(answer.text.length < MAX_EXCEPTIONS * (MAX_STACK_CHARS + 4_096) * 1.2, `${answer.text.length} bytes`);
    assert.equal((await get("/v1/job/exceptions?limit=3")).body.history.length, 3);
    assert.equal((await get(`/v1/job/exceptions?limit=${MAX_EXCEPTIONS + 1}`)).status, 400);
  });
});

test("backpressure levels at Flink's thresholds (ok ≤ 0.1 < low ≤ 0.5 < high); a subtask not reported is unknown; a vertex is its worst subtask", async () => {
  await withServer(async (get) => {
    const { vertices } = (await get("/v1/job/backpressure")).body;
    assert.deepEqual(
      vertices.map((v: any) => [v.name, v.level, v.subtasks.map((s: any) => [s.level, s.backPressuredRatio])]),
      [
        ["Numbers", "unknown", [["unknown", null]]],
        ["Copy", "high", [["ok", 0.1], ["low", 0.101], ["low", 0.5], ["high", 0.501]]],
      ],
    );
  });
});

test("watermarks: a number, 'none' before the first, 'end' after the input ended, null when not reported; the vertex's low watermark", async () => {
  await withServer(async (get) => {
    const { vertices } = (await get("/v1/job/watermarks")).body;
    assert.deepEqual(vertices.map((v: any) => [v.lowInputWatermark, v.subtasks.map((s: any) => s.inputWatermark)]), [
      [null, [null]],
      ["none", ["none", 5, 7, "end"]],
    ]);
    const copy = (await get("/v1/job/vertices/1")).body;
    assert.deepEqual(copy.subtasks.map((s: any) => [s.subtask, s.reported, s.operators[0].numRecordsIn, s.operators[0].numRecordsInPerSecond]), [
      [0, true, 0, null],
      [1, true, 1, null],
      [2, true, 2, null],
      [3, true, 3, null],
    ]);
    const source = (await get("/v1/job/vertices/0")).body;
    assert.deepEqual(source.subtasks.map((s: any) => [s.reported, s.busyTimeMsPerSecond, s.operators[0].numRecordsOut]), [[false, null, null]]);
  });
});

test("two tasks of one name (two unnamed maps) each get their own subtasks' metrics: matched by their vertex ids", () => {
  const twins = defineJob("twins", (env) => {
    env.fromElements(1).name("A").rebalance().map((n) => n).setParallelism(2);
    env.fromElements(2).name("B").rebalance().map((n) => n).setParallelism(2);
  });
  const twinPlan = planJob(twins, { parallelism: 1 }, silentLogger).plan;
  const maps = twinPlan.chains.filter((c) => c.parallelism === 2);
  assert.equal(maps.length, 2);
  assert.equal(maps[0]!.name, maps[1]!.name, "one name");
  const task = (chainIndex: number, subtask: number, records: number): TaskMetricsSnapshot => ({
    ...metrics().tasks[0]!,
    task: maps[chainIndex]!.name,
    vertex: String(maps[chainIndex]!.index),
    subtask,
    operators: [{ ...metrics().tasks[0]!.operators[0]!, operator: maps[chainIndex]!.nodes[0]!.metricName, numRecordsIn: records }],
  });
  const snapshot: JobMetricsSnapshot = { ...metrics(), tasks: [task(0, 0, 10), task(0, 1, 11), task(1, 0, 20), task(1, 1, 21)] };
  assert.deepEqual(
    maps.map((chain) => vertexDetailView(chain, snapshot).subtasks.map((s) => s.operators[0]!.numRecordsIn)),
    [
      [10, 11],
      [20, 21],
    ],
  );
});

test("a job without checkpointing: checkpoints disabled, zero counts, an empty history; every checkpoint id unknown", async () => {
  const plain: ObservedJob = { ...observed, id: "rest-plain", checkpointCounts: () => undefined, checkpointHistory: () => [] };
  await withServer(async (get) => {
    assert.deepEqual((await get("/v1/job/checkpoints")).body, {
      enabled: false,
      counts: { completed: 0, failed: 0, inProgress: 0 },
      latest: { completed: null, savepoint: null, failed: null },
      kept: 0,
      history: [],
    });
    assert.equal((await get("/v1/job")).body.checkpoints, null);
    assert.equal((await get("/v1/job/checkpoints/1")).status, 404);
  }, plain);
});

test("the web UI's live stream (GET /v1/job/events): an update at once, with each vertex's sums over its subtasks, its worst shares and lowest watermarks", async () => {
  assert.deepEqual(liveVerticesView(plan, metrics()), [
    {
      id: "0", name: "Numbers", parallelism: 1, numRecordsIn: null, numRecordsOut: null, numRecordsInPerSecond: null, numRecordsOutPerSecond: null,
      busyRatio: null, backPressuredRatio: null, idleRatio: null, backpressureLevel: "unknown", inputWatermark: null, outputWatermark: null,
    },
    {
      // In and out: 0 + 1 + 2 + 3; in per second not measured (NaN) anywhere; out 1 per subtask.
      id: "1", name: "Copy", parallelism: 4, numRecordsIn: 6, numRecordsOut: 6, numRecordsInPerSecond: null, numRecordsOutPerSecond: 4,
      busyRatio: 0.01, backPressuredRatio: 0.501, idleRatio: 0.89, backpressureLevel: "high", inputWatermark: "none", outputWatermark: "none",
    },
  ]);
  const home = mkdtempSync(join(tmpdir(), "eddy-rest-events-"));
  const server = await startControlServer(observed, { home, logger: silentLogger });
  const abort = new AbortController();
  try {
    const token = readFileSync(server.tokenFile, "utf8");
    const res = await fetch(`${server.url}/v1/job/events`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
    assert.match(res.headers.get("content-security-policy") ?? "", /^default-src 'self'/);
    const reader = res.body!.getReader();
    let text = "";
    while (!/\n\nevent: update\ndata: [^\n]*\n\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    const update = JSON.parse(/event: update\ndata: ([^\n]*)\n\n/.exec(text)![1]!);
    assert.ok(text.startsWith("retry: 2000\n\n"));
    assert.deepEqual(update.vertices, liveVerticesView(plan, metrics()));
    assert.equal(update.overview.id, "rest-fake");
    assert.equal(update.checkpoints.history.length, 10);
    assert.equal(update.checkpoints.counts.completed, 5_000);
    assert.equal(update.exceptions, MAX_EXCEPTIONS * 2);
  } finally {
    abort.abort();
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
});
