/**
 * Metrics end to end (docs/metrics.md): a finished job's `GET /metrics`, parsed by a strict
 * parser of Prometheus's text format, against counts known from the job's input
 * (test/jobs/metrics.ts) — records in/out per operator and subtask, late records dropped,
 * completed checkpoints, the user's metrics with their labels — inline and on worker threads at
 * parallelism 2; and the endpoint's security (token required, 404 without a stack trace).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runJob } from "eddy/testing";
import { assignToKeyGroup, computeOperatorIndexForKeyGroup, silentLogger, startControlServer } from "../packages/eddy/src/internal.ts";
import { eventTime, KEYS, LATE_NUMBERS, metricsJob, RECORDS } from "./jobs/metrics.ts";

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/**
 * Prometheus's text format 0.0.4, strictly: every sample belongs to a family declared by a TYPE
 * line before it (a summary's `_sum`/`_count` included), a family's lines are contiguous and
 * declared once, names and label names are valid, label values use only the three escapes, each
 * series appears once, values are Go floats (NaN, +Inf, -Inf). Throws on anything else.
 */
function parsePrometheus(text: string): Sample[] {
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
  assert.ok(text.endsWith("\n"), "ends with a newline");
  const types = new Map<string, string>();
  const closed = new Set<string>();
  const series = new Set<string>();
  let current: string | undefined;
  const samples: Sample[] = [];
  for (const line of text.slice(0, -1).split("\n")) {
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      assert.ok(m !== null, `comment line: ${line}`);
      const [, kind, name, rest] = m;
      assert.match(name!, NAME);
      if (kind === "TYPE") {
        assert.ok(!types.has(name!), `TYPE of ${name} declared twice`);
        assert.ok(["counter", "gauge", "summary", "histogram", "untyped"].includes(rest!), `type ${rest}`);
        types.set(name!, rest!);
        if (current !== undefined && current !== name) closed.add(current);
        current = name;
      } else {
        assert.doesNotMatch(rest!.replace(/\\[\\n]/g, ""), /\\/, `HELP escapes: ${line}`);
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m !== null, `sample line: ${line}`);
    const [, name, , labelText, valueText] = m;
    const family = types.has(name!) ? name! : name!.replace(/_(sum|count)$/, "");
    assert.ok(types.has(family), `${name} has a TYPE line before it`);
    assert.ok(family === name || types.get(family) === "summary", `${name}: only a summary has _sum/_count samples`);
    assert.equal(family, current, `${name}: the samples of a family are together`);
    assert.ok(!closed.has(family));
    const labels: Record<string, string> = {};
    let rest = labelText ?? "";
    while (rest.length > 0) {
      const l = /^([^=]+)="((?:[^"\\]|\\[\\"n])*)"(,|$)/.exec(rest);
      assert.ok(l !== null, `labels of: ${line}`);
      assert.match(l[1]!, LABEL);
      assert.ok(!(l[1]! in labels), `label ${l[1]} twice`);
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
      rest = rest.slice(l[0].length);
    }
    assert.match(valueText!, /^(NaN|[+-]Inf|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$/, `value of ${line}`);
    const value = valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : Number(valueText);
    const id = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    assert.ok(!series.has(id), `series twice: ${line}`);
    series.add(id);
    samples.push({ name: name!, labels, value });
  }
  return samples;
}

test("the strict parser refuses what Prometheus refuses", () => {
  const ok = '# HELP a x\n# TYPE a counter\na{job="j"} 1\n';
  assert.equal(parsePrometheus(ok).length, 1);
  for (const bad of [
    'a{job="j"} 1\n', // no TYPE
    '# TYPE a counter\na{job="j"} 1\na{job="j"} 2\n', // the same series twice
    '# TYPE a counter\na{job="j\\x"} 1\n', // a bad escape
    '# TYPE a counter\na{job="j"} one\n', // not a number
    '# TYPE a counter\n# TYPE b gauge\nb 1\na 1\n', // a family split
    '# TYPE a counter\na{job="j"} 1', // no final newline
  ]) {
    assert.throws(() => parsePrometheus(bad), Error, bad);
  }
});

/** What `GET <path>` on the control server answers. */
function get(url: string, path: string, token: string | undefined): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, type: String(res.headers["content-type"]), body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** The value of the one sample named `name` whose labels include `labels`. */
function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string>): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.equal(found.length, 1, `one ${name} ${JSON.stringify(labels)}, found ${found.length}`);
  return found[0]!.value;
}

/** Runs the job to its end, serves its control API, and returns its parsed `/metrics`. */
async function finishedJobMetrics(mode: "inline" | "threads"): Promise<{ samples: Sample[]; completedCheckpoints: number }> {
  const home = mkdtempSync(join(tmpdir(), "eddy-metrics-"));
  const checkpointDir = join(home, "checkpoints");
  try {
    const handle = runJob(metricsJob, { mode, parallelism: 2, workers: 2, checkpointing: { intervalMs: 10 }, checkpointDir, jobId: `metrics-${mode}` });
    await handle.done;
    assert.equal(await handle.mode, mode);
    const server = await startControlServer(handle, { home, logger: silentLogger });
    try {
      const token = readFileSync(server.tokenFile, "utf8");
      const answer = await get(server.url, "/metrics", token);
      assert.equal(answer.status, 200);
      assert.equal(answer.type, "text/plain; version=0.0.4; charset=utf-8");
      // Security: no token, a wrong token, and an unknown path.
      assert.equal((await get(server.url, "/metrics", undefined)).status, 401);
      assert.equal((await get(server.url, "/metrics", "0".repeat(64))).status, 401);
      const missing = await get(server.url, "/metricz", token);
      assert.equal(missing.status, 404);
      assert.equal(JSON.parse(missing.body).error.code, "NOT_FOUND");
      assert.doesNotMatch(missing.body, /\bat .*\.ts:\d+/, "no stack trace");
      return { samples: parsePrometheus(answer.body), completedCheckpoints: handle.checkpoints().filter((c) => c.status === "completed").length };
    } finally {
      await server.close();
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

for (const mode of ["inline", "threads"] as const) {
  test(`/metrics of a finished job (${mode}, parallelism 2) has the known counts per operator and subtask`, async () => {
    const { samples, completedCheckpoints } = await finishedJobMetrics(mode);
    const job = "metrics-known";
    const op = (operator: string, subtask: number) => ({ job, operator, subtask: String(subtask) });

    // The source chain runs at parallelism 1: every number passes it.
    const evens = Array.from({ length: RECORDS }, (_, i) => i + 1).filter((n) => n % 2 === 0 || LATE_NUMBERS.includes(n));
    assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Numbers", 0)), 0);
    assert.equal(valueOf(samples, "eddy_operator_numRecordsOut", op("Numbers", 0)), RECORDS);
    assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Numbers: Timestamps/Watermarks", 0)), RECORDS);
    // The source's standard gauges (FLIP-33): its reader's backlog, read off at the end, and the
    // time since it last emitted (the input ended: some time ago, to the report interval).
    assert.equal(valueOf(samples, "eddy_operator_pendingRecords", op("Numbers", 0)), 0);
    assert.ok(valueOf(samples, "eddy_operator_sourceIdleTime", op("Numbers", 0)) >= 0);
    assert.equal(samples.filter((s) => s.name === "eddy_operator_sourceIdleTime").length, 1, "sources only");
    assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Tag", 0)), RECORDS);
    assert.equal(valueOf(samples, "eddy_operator_numRecordsOut", op("Tag", 0)), RECORDS);
    assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Evens", 0)), RECORDS);
    assert.equal(valueOf(samples, "eddy_operator_numRecordsOut", op("Evens", 0)), evens.length);
    assert.equal(samples.filter((s) => s.labels.operator === "Evens").every((s) => s.labels.subtask === "0"), true, "no subtask 1 of a parallelism-1 operator");

    // Keyed operators at parallelism 2: each subtask gets the keys of its key groups.
    const subtaskOf = (n: number): number => computeOperatorIndexForKeyGroup(128, 2, assignToKeyGroup(`k${n % KEYS}`, 128));
    for (const subtask of [0, 1]) {
      const mine = evens.filter((n) => subtaskOf(n) === subtask);
      const late = mine.filter((n) => LATE_NUMBERS.includes(n));
      const windows = new Set(mine.filter((n) => !late.includes(n)).map((n) => `${n % KEYS}|${Math.floor(eventTime(n) / 1000)}`));
      assert.ok(mine.length > 0, `subtask ${subtask} has keys`);
      assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Sums", subtask)), mine.length, `Sums[${subtask}] in`);
      assert.equal(valueOf(samples, "eddy_operator_numLateRecordsDropped", op("Sums", subtask)), late.length, `Sums[${subtask}] late`);
      assert.equal(valueOf(samples, "eddy_operator_numRecordsOut", op("Sums", subtask)), windows.size, `Sums[${subtask}] out`);
      assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Sums sink", subtask)), windows.size);
      assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Tally", subtask)), mine.length, `Tally[${subtask}] in`);
      assert.equal(valueOf(samples, "eddy_operator_numRecordsOut", op("Tally", subtask)), mine.length);
      assert.equal(valueOf(samples, "eddy_operator_numRecordsIn", op("Tally sink", subtask)), mine.length);
      assert.equal(valueOf(samples, "eddy_operator_numRecordsWritten", op("Tally sink", subtask)), mine.length);
      // Every watermark reached the end: the final one is +Inf.
      assert.equal(valueOf(samples, "eddy_operator_currentInputWatermark", op("Sums", subtask)), Infinity);

      // The user's metrics, with the subtask's labels.
      assert.equal(valueOf(samples, "eddy_user_tallied", op("Tally", subtask)), mine.length);
      assert.equal(valueOf(samples, "eddy_user_tallyRate_total", op("Tally", subtask)), mine.length);
      assert.ok(valueOf(samples, "eddy_user_tallyRate", op("Tally", subtask)) >= 0);
      assert.equal(valueOf(samples, "eddy_user_tallyValues_count", op("Tally", subtask)), mine.length);
      assert.equal(valueOf(samples, "eddy_user_tallyValues_sum", op("Tally", subtask)), mine.reduce((a, b) => a + b, 0));
      assert.equal(valueOf(samples, "eddy_user_tallyValues", { ...op("Tally", subtask), quantile: "1" }), Math.max(...mine));
      assert.equal(valueOf(samples, "eddy_user_lastN", op("Tally", subtask)), mine.at(-1));
    }
    assert.equal(LATE_NUMBERS.length, [0, 1].reduce((n, s) => n + valueOf(samples, "eddy_operator_numLateRecordsDropped", op("Sums", s)), 0));

    // Task scope: per subtask, with the busy/idle/backpressured split measured.
    // (The job ran for about a second: a rate is the count over the time since its task started.)
    const busy = samples.filter((s) => s.name === "eddy_task_busyTimeMsPerSecond");
    assert.deepEqual(new Set(busy.map((s) => s.labels.subtask)), new Set(["0", "1"]));
    assert.ok(busy.some((s) => s.value > 0), "some task was busy");
    for (const s of busy) {
      const idle = valueOf(samples, "eddy_task_idleTimeMsPerSecond", s.labels);
      const backPressured = valueOf(samples, "eddy_task_backPressuredTimeMsPerSecond", s.labels);
      assert.ok(s.value >= 0 && idle >= 0 && backPressured >= 0);
      assert.ok(Math.abs(s.value + idle + backPressured - 1_000) < 1, `busy ${s.value} + idle ${idle} + backpressured ${backPressured} is a second`);
    }
    assert.ok(valueOf(samples, "eddy_operator_numRecordsInPerSecond", op("Tally", 0)) > 0);

    // Job scope.
    assert.ok(completedCheckpoints > 0, "the job completed a checkpoint while it ran");
    assert.equal(valueOf(samples, "eddy_job_numberOfCompletedCheckpoints", { job }), completedCheckpoints);
    assert.equal(valueOf(samples, "eddy_job_numberOfFailedCheckpoints", { job }), 0);
    assert.ok(valueOf(samples, "eddy_job_lastCheckpointDuration", { job }) >= 0);
    assert.equal(valueOf(samples, "eddy_job_numRestarts", { job }), 0);
  });
}
