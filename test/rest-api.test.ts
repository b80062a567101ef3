/**
 * The REST API end to end (docs/rest-api.md): a real job on worker threads at parallelism 2 with
 * checkpoints, which fails once and recovers (test/jobs/rest-observed.ts), queried over HTTP with
 * its token while it runs and after it finished; each endpoint's answer checked field by field
 * against what is known of the job: its graph and partitioners, the records its operators passed,
 * the checkpoints on disk, the failure it recovered from, its configuration. Then the refusals:
 * 401 without the token, 404 for unknown paths and ids, 400 for bad parameters, never a stack.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runJob } from "eddy/testing";
import { silentLogger, startControlServer } from "../packages/eddy/src/internal.ts";
import { eddyBin } from "./fixtures.ts";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { REST_FAIL_AT, REST_RECORDS, restJob } from "./jobs/rest-observed.ts";

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function get(url: string, path: string, token: string | undefined): Promise<{ status: number; type: string; text: string; body: Json }> {
  const res = await fetch(new URL(path, url), { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, type: String(res.headers.get("content-type")), text, body: JSON.parse(text) };
}

/** Sum over subtasks of one operator's field in `GET /v1/job/vertices/<vertex>`. */
function total(vertex: Json, operatorId: string, field: string): number {
  let sum = 0;
  for (const s of vertex.subtasks) {
    assert.equal(s.reported, true, `subtask ${s.subtask} of vertex ${vertex.id} reported`);
    const op = s.operators.find((o: Json) => o.id === operatorId);
    assert.ok(op !== undefined, `operator ${operatorId} in vertex ${vertex.id}`);
    assert.equal(typeof op[field], "number", `${operatorId}.${field}`);
    sum += op[field];
  }
  return sum;
}

const VERTICES = [
  { id: "0", name: "Numbers -> Numbers: Timestamps/Watermarks", operators: ["numbers", "numbers-watermarks"] },
  { id: "1", name: "Copy", operators: ["copy"] },
  { id: "2", name: "Fail once -> Out -> Odd sink", operators: ["fail-once", "Out", "Odd sink"] },
  { id: "3", name: "Every -> Every sink", operators: ["every", "Every sink"] },
];

test("the REST API of a job that failed once and recovered (threads, parallelism 2, checkpoints) answers every endpoint with the documented shapes and known values", async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-rest-"));
  const checkpointDir = join(home, "checkpoints");
  const jobId = "rest-observed";
  process.env.EDDY_REST_MARKER = join(home, "fault-fired");
  try {
    const handle = runJob(restJob, {
      mode: "threads",
      parallelism: 2,
      workers: 2,
      checkpointing: { intervalMs: 50 },
      checkpointDir,
      jobId,
      // A restart delay long enough for the polling below to see the job restarting on a loaded machine.
      restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 1_000 },
    });
    const server = await startControlServer(handle, { home, logger: silentLogger });
    try {
      const token = readFileSync(server.tokenFile, "utf8");
      // While it runs: the overview, polled, sees it running, then restarting for the restart's delay.
      const states = new Set<string>();
      let maxPending = -1;
      let running: Json;
      while (handle.status() === "running") {
        const answer = await get(server.url, "/v1/job", token);
        assert.equal(answer.status, 200);
        states.add(answer.body.state);
        if (answer.body.state === "running") running = answer.body;
        // The source's backlog gauge (its reader's pendingRecords), while it runs.
        for (const s of (await get(server.url, "/v1/job/vertices/0", token)).body.subtasks ?? []) {
          const pending = s.operators?.find((o: Json) => o.id === "numbers")?.gauges?.pendingRecords;
          if (typeof pending === "number") maxPending = Math.max(maxPending, pending);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await handle.done;
      assert.ok(states.has("running") && states.has("restarting"), `states seen while it ran: ${[...states].join(", ")}`);
      assert.equal(running.endedAtMs, null, "no end while running");
      assert.ok(maxPending > 0 && maxPending <= REST_RECORDS, `the source's pendingRecords while it ran: ${maxPending}`);

      // GET /v1/job
      const overview = (await get(server.url, "/v1/job", token)).body;
      assert.deepEqual(
        [overview.id, overview.name, overview.status, overview.state, overview.pid, overview.startedAtMs, overview.parallelism, overview.vertices, overview.operators, overview.subtasks, overview.restarts],
        [jobId, "rest-observed", "finished", "finished", process.pid, handle.startedAtMs, 2, 4, 8, 8, 1],
      );
      assert.ok(overview.endedAtMs >= overview.startedAtMs);
      assert.equal(overview.durationMs, overview.endedAtMs - overview.startedAtMs);
      assert.equal(overview.checkpoints.completed, handle.checkpointCounts()!.completed);
      assert.ok(overview.checkpoints.completed >= 1);
      // Throughput: the sources' and sinks' one-minute meters, summed over subtasks.
      assert.ok(overview.throughput.recordsInPerSecond > 0 && overview.throughput.recordsOutPerSecond > 0, JSON.stringify(overview.throughput));

      // eddy list (a process of its own, through the registry): the state, rates, restarts and last checkpoint.
      const listed = await promisify(execFile)(process.execPath, [eddyBin, "list"], { env: { ...process.env, EDDY_HOME: home }, encoding: "utf8" });
      const row = listed.stdout.split("\n").find((l) => l.startsWith(`${jobId} `));
      assert.match(row ?? "", /^rest-observed +rest-observed +finished +[\d.,]+( [KM])? +[\d.,]+( [KM])? +1 +[\d.]+ (ms|s) ago +\d+ +\d{4}-/, listed.stdout);

      // GET /v1/job/vertices: the known graph.
      const graph = (await get(server.url, "/v1/job/vertices", token)).body;
      assert.equal(graph.id, jobId);
      assert.deepEqual(
        graph.vertices.map((v: Json) => ({ id: v.id, name: v.name, operators: v.operators.map((o: Json) => o.uid ?? o.name) })),
        VERTICES,
      );
      for (const v of graph.vertices) {
        assert.equal(v.parallelism, 2);
        assert.equal(v.maxParallelism, 128);
        for (const o of v.operators) assert.deepEqual(Object.keys(o).sort(), ["id", "maxParallelism", "metricName", "name", "parallelism", "uid"]);
      }
      const edges = graph.edges.map((e: Json) => `${e.fromOperator} -${e.partitioner}${e.chained ? " chained" : ""}${e.sideOutput === null ? "" : ` side ${e.sideOutput}`}-> ${e.toOperator} (${e.from}→${e.to})`);
      assert.deepEqual(edges.sort(), [
        "copy -hash-> fail-once (1→2)",
        "every -forward chained-> every-sink-12 (3→3)",
        "fail-once -forward chained side odd-> odd-sink-9 (2→2)",
        "fail-once -forward chained-> out-7 (2→2)",
        "numbers -forward chained-> numbers-watermarks (0→0)",
        "numbers-watermarks -broadcast-> every (0→3)",
        "numbers-watermarks -rebalance-> copy (0→1)",
      ]);

      // GET /v1/job/vertices/:id — records of the last attempt: what the source emitted since the
      // restore passed every edge once (twice over the broadcast edge), the odd half to the side.
      const vertex = async (id: string) => (await get(server.url, `/v1/job/vertices/${id}`, token)).body;
      const [source, copy, failOnce, every] = await Promise.all(["0", "1", "2", "3"].map(vertex));
      const emitted = total(source, "numbers", "numRecordsOut");
      // From the restored checkpoint on; all of them if none had completed before the failure.
      const restored = handle.restoredFrom[0];
      assert.ok(restored !== undefined);
      if (restored === null) assert.equal(emitted, REST_RECORDS);
      else assert.ok(emitted > 0 && emitted < REST_RECORDS, `the last attempt emitted the records after checkpoint ${restored}: ${emitted}`);
      assert.equal(total(source, "numbers-watermarks", "numRecordsIn"), emitted);
      assert.equal(total(copy, "copy", "numRecordsIn"), emitted);
      assert.equal(total(copy, "copy", "numRecordsOut"), emitted);
      assert.equal(total(failOnce, "fail-once", "numRecordsIn"), emitted);
      assert.equal(total(failOnce, "out-7", "numRecordsIn"), emitted);
      assert.equal(total(every, "every", "numRecordsIn"), 2 * emitted, "broadcast: each record to both subtasks");
      const oddIn = total(failOnce, "odd-sink-9", "numRecordsIn");
      assert.ok(Math.abs(oddIn - emitted / 2) <= 1, `odd half to the side output: ${oddIn} of ${emitted}`);
      // The metric stateSize: bytes in the newest completed checkpoint, the source's only.
      for (const s of source.subtasks) assert.ok(s.operators.find((o: Json) => o.id === "numbers").stateSizeBytes > 0, JSON.stringify(s.operators));
      for (const s of copy.subtasks) assert.equal(s.operators[0].stateSizeBytes, 0, "Copy holds no state");
      assert.equal(copy.subtasks.length, 2);
      for (const s of copy.subtasks) {
        for (const f of ["busyTimeMsPerSecond", "idleTimeMsPerSecond", "backPressuredTimeMsPerSecond", "numBytesIn", "numBytesOut"]) assert.equal(typeof s[f], "number", f);
        assert.equal(s.operators[0].currentInputWatermark, "end", "the input ended");
        assert.equal(typeof s.operators[0].numRecordsInPerSecond, "number");
      }
      // The same counts as the metrics registry holds.
      const snapshot = handle.metricsSnapshot();
      assert.equal(emitted, snapshot.tasks.filter((t) => t.task === VERTICES[0]!.name).reduce((n, t) => n + t.operators[0]!.numRecordsOut, 0));

      // GET /v1/job/watermarks: every input ended; sources have no input watermark.
      const watermarks = (await get(server.url, "/v1/job/watermarks", token)).body;
      assert.deepEqual(watermarks.vertices.map((v: Json) => [v.id, v.lowInputWatermark, v.subtasks.map((s: Json) => s.inputWatermark)]), [
        ["0", null, [null, null]],
        ["1", "end", ["end", "end"]],
        ["2", "end", ["end", "end"]],
        ["3", "end", ["end", "end"]],
      ]);
      assert.deepEqual(watermarks.vertices[0].subtasks.map((s: Json) => s.outputWatermark), ["end", "end"]);

      // GET /v1/job/backpressure
      const backpressure = (await get(server.url, "/v1/job/backpressure", token)).body;
      assert.match(backpressure.judgedBy, /backPressuredTimeMsPerSecond/);
      assert.deepEqual(backpressure.vertices.map((v: Json) => v.id), ["0", "1", "2", "3"]);
      for (const v of backpressure.vertices) {
        assert.equal(v.subtasks.length, 2);
        for (const s of v.subtasks) {
          assert.ok(s.backPressuredRatio >= 0 && s.backPressuredRatio <= 1);
          assert.equal(s.level, s.backPressuredRatio <= 0.1 ? "ok" : s.backPressuredRatio <= 0.5 ? "low" : "high");
        }
      }

      // GET /v1/job/checkpoints: the retained checkpoints on disk are the newest completed ones.
      const checkpoints = (await get(server.url, "/v1/job/checkpoints?limit=100", token)).body;
      assert.equal(checkpoints.enabled, true);
      assert.deepEqual(checkpoints.counts, { completed: overview.checkpoints.completed, failed: overview.checkpoints.failed, inProgress: 0 });
      const onDisk = readdirSync(join(checkpointDir, jobId))
        .filter((d) => /^chk-\d+$/.test(d) && existsSync(join(checkpointDir, jobId, d, "_manifest")))
        .map((d) => Number(d.slice(4)))
        .sort((a, b) => b - a);
      assert.ok(onDisk.length >= 1, "checkpoints on disk");
      // The newest completed ones, the job's final checkpoint first (taken once every task
      // finished), are the ones retention keeps on disk.
      const completed = checkpoints.history.filter((c: Json) => c.status === "completed" && !c.isSavepoint).map((c: Json) => c.id);
      assert.deepEqual(completed.slice(0, onDisk.length), onDisk, "the newest completed checkpoints are the ones on disk");
      assert.equal(checkpoints.latest.completed.id, onDisk[0]);
      assert.equal(checkpoints.history[0].id, onDisk[0], "the final checkpoint is the newest");
      assert.deepEqual(overview.checkpoints.lastCompleted, checkpoints.latest.completed);
      const ids = checkpoints.history.map((c: Json) => c.id);
      assert.deepEqual(ids, [...ids].sort((a: number, b: number) => b - a), "newest first");
      assert.equal((await get(server.url, "/v1/job/checkpoints?limit=2", token)).body.history.length, 2);

      // GET /v1/job/checkpoints/:id of the final checkpoint: every subtask of every vertex acknowledged it once.
      const detail = (await get(server.url, `/v1/job/checkpoints/${onDisk[0]}`, token)).body;
      assert.equal(detail.id, onDisk[0]);
      assert.equal(detail.status, "completed");
      assert.deepEqual(detail.subtasks.map((s: Json) => `${s.vertex}.${s.subtask}`).sort(), ["0.0", "0.1", "1.0", "1.1", "2.0", "2.1", "3.0", "3.1"]);
      assert.equal(detail.subtasks.reduce((n: number, s: Json) => n + s.sizeBytes, 0), detail.sizeBytes);
      assert.ok(detail.sizeBytes > 0, "the source's split state has bytes");
      // State size per operator: the source's splits are its only state; the file adds its framing.
      for (const s of detail.subtasks) {
        const sizes = Object.entries(s.operatorSizeBytes as Record<string, number>);
        if (s.vertex === "0") assert.ok((s.operatorSizeBytes.numbers as number) > 0, JSON.stringify(s));
        assert.ok(sizes.every(([id, n]) => n >= 0 && (n === 0 || id === "numbers")), `only the source holds state: ${JSON.stringify(s)}`);
        assert.ok(sizes.reduce((n, [, b]) => n + b, 0) <= s.sizeBytes, JSON.stringify(s));
      }
      for (const s of detail.subtasks) {
        assert.ok(s.endToEndMs >= 0 && s.endToEndMs <= detail.durationMs, "acknowledged between trigger and completion");
        assert.ok(s.syncMs <= detail.syncMs && s.asyncMs <= detail.asyncMs && s.alignmentMs <= detail.alignmentMs, "the summary holds the maxima");
      }

      // GET /v1/job/exceptions: the failure it recovered from.
      const exceptions = (await get(server.url, "/v1/job/exceptions", token)).body;
      assert.equal(exceptions.total, 1);
      assert.equal(exceptions.truncated, false);
      assert.equal(exceptions.history.length, 1);
      const root = exceptions.rootException;
      assert.deepEqual(root, exceptions.history[0]);
      assert.equal(root.code, "USER_FUNCTION_FAILED");
      assert.equal(root.operator, "Fail once");
      assert.ok(root.subtask === 0 || root.subtask === 1);
      assert.match(root.message, new RegExp(`injected REST fault at record ${REST_FAIL_AT}`));
      assert.equal(root.rootCause, `Error: injected REST fault at record ${REST_FAIL_AT}`);
      assert.equal(root.restarted, true);
      assert.equal(root.attempt, 0);
      assert.match(root.location, /rest-observed\.ts:\d+:\d+$/);
      assert.match(root.stack, /rest-observed\.ts/);
      assert.ok(root.timeMs >= handle.startedAtMs && root.timeMs <= overview.endedAtMs);

      // GET /v1/job/config: the effective keys, never the token.
      const config = await get(server.url, "/v1/job/config", token);
      const entries = new Map(config.body.entries.map((e: Json) => [e.key, e.value]));
      assert.equal(entries.get("execution.checkpointing.interval"), "50ms");
      assert.equal(entries.get("execution.checkpointing.mode"), "EXACTLY_ONCE");
      assert.equal(entries.get("restart-strategy.type"), "fixed-delay");
      assert.equal(entries.get("restart-strategy.fixed-delay.delay"), "1000ms");
      assert.equal(entries.get("state.checkpoints.dir"), join(checkpointDir, jobId));
      assert.equal(entries.get("parallelism.default"), "2");
      assert.ok(!config.text.includes(token), "the token is not configuration");

      // Refusals: JSON errors, never a stack.
      const refusals: [string, string | undefined, number, string][] = [
        ["/v1/job/vertices", undefined, 401, "UNAUTHORIZED"],
        ["/v1/job/exceptions", "0".repeat(64), 401, "UNAUTHORIZED"],
        ["/v1/job/verticez", token, 404, "NOT_FOUND"],
        ["/v1/job/vertices/9", token, 404, "UNKNOWN_VERTEX"],
        ["/v1/job/vertices/1/x", token, 404, "NOT_FOUND"],
        ["/v1/job/checkpoints/999999", token, 404, "UNKNOWN_CHECKPOINT"],
        ["/v1/job/checkpoints/abc", token, 400, "BAD_REQUEST"],
        ["/v1/job/checkpoints/-1", token, 400, "BAD_REQUEST"],
        ["/v1/job/checkpoints?limit=0", token, 400, "BAD_REQUEST"],
        ["/v1/job/checkpoints?limit=101", token, 400, "BAD_REQUEST"],
        ["/v1/job/checkpoints?limit=1&limit=2", token, 400, "BAD_REQUEST"],
        ["/v1/job/exceptions?limit=x", token, 400, "BAD_REQUEST"],
        ["/v1/job/watermarks?subtask=1", token, 400, "BAD_REQUEST"],
        ["/v1/job/vertices/%E0%A4%A", token, 400, "BAD_REQUEST"],
      ];
      for (const [path, auth, status, code] of refusals) {
        const answer = await get(server.url, path, auth);
        assert.equal(answer.status, status, path);
        assert.equal(answer.type, "application/json; charset=utf-8", path);
        assert.equal(answer.body.error.code, code, path);
        assert.doesNotMatch(answer.text, /\bat .*\.ts:\d+/, `no stack trace: ${path}`);
      }
    } finally {
      await server.close();
    }
  } finally {
    delete process.env.EDDY_REST_MARKER;
    rmSync(home, { recursive: true, force: true });
  }
});
