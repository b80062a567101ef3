/**
 * Error policies end to end (docs/error-policy.md): per function kind, skip and dead-letter drop
 * exactly the records the function throws on and count them; dead letters carry the record, the
 * error and the operator; the bound fails the job; worker threads behave as inline; and dead
 * letters are committed exactly once across a failure and a restore, like any other output.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DEAD_LETTERS, defineJob, EddyError, WatermarkStrategy, type DataStream, type DeadLetter, type ErrorPolicy, type StreamExecutionEnvironment } from "eddy";
import { collectSink, runJob, type RunOptions } from "eddy/testing";
import * as dl from "./jobs/dead-letters.ts";

const NUMBERS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const bad = (n: number): boolean => n % 3 === 0;

/** Runs `build(numbers)` with `policy` on the operator it returns; collects its output and dead letters. */
async function runWith<T>(
  policy: ErrorPolicy,
  build: (numbers: DataStream<number>, env: StreamExecutionEnvironment) => DataStream<T>,
  options: RunOptions = { mode: "inline" },
): Promise<{ out: T[]; dead: DeadLetter[]; counters: Record<string, number> }> {
  const job = defineJob("policy", (env) => {
    const op = build(env.fromCollection(NUMBERS), env).name("op").onError(policy);
    op.sinkTo(collectSink("out"));
    if (policy === "dead-letter") op.deadLetters().sinkTo(collectSink("dead"));
  });
  const handle = runJob(job, options);
  await handle.done;
  const counters: Record<string, number> = {};
  // The counters of the operator under test ("op"); the sinks count their records too.
  for (const m of handle.metrics()) for (const [k, v] of Object.entries(m.counters)) if (k.startsWith("op.")) counters[k] = (counters[k] ?? 0) + v;
  return { out: handle.collected<T>("out"), dead: handle.collected<DeadLetter>("dead"), counters };
}

const throwing = (n: number): void => {
  if (bad(n)) throw new Error(`bad ${n}`);
};

const kinds: Record<string, (s: DataStream<number>) => DataStream<number>> = {
  map: (s) => s.map((n) => (throwing(n), n * 10)),
  filter: (s) => s.filter((n) => (throwing(n), n % 2 === 0)),
  flatMap: (s) =>
    s.flatMap<number>((n, out) => {
      throwing(n);
      out.collect(n * 10);
    }),
  process: (s) =>
    s.process<number>({
      processElement(n, _ctx, out) {
        throwing(n);
        out.collect(n * 10);
      },
    }),
  "keyed process": (s) =>
    s.keyBy((n) => n % 2).process<number>({
      processElement(n, _ctx, out) {
        throwing(n);
        out.collect(n * 10);
      },
    }),
  "timestamp assigner": (s) =>
    s.assignTimestampsAndWatermarks(
      WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => {
        throwing(n);
        return n;
      }),
    ),
};
const expectedOf: Record<string, number[]> = {
  map: [10, 20, 40, 50, 70, 80, 100],
  filter: [2, 4, 8, 10],
  flatMap: [10, 20, 40, 50, 70, 80, 100],
  process: [10, 20, 40, 50, 70, 80, 100],
  "keyed process": [10, 20, 40, 50, 70, 80, 100],
  "timestamp assigner": [1, 2, 4, 5, 7, 8, 10],
};

for (const [kind, build] of Object.entries(kinds)) {
  test(`${kind}: fail (the default) fails the job with USER_FUNCTION_FAILED naming the operator`, async () => {
    await assert.rejects(runWith("fail", build), (e: unknown) => e instanceof EddyError && e.code === "USER_FUNCTION_FAILED" && e.operator === "op");
  });

  test(`${kind}: skip drops exactly the records the function throws on, and counts them`, async () => {
    const { out, dead, counters } = await runWith("skip", build);
    assert.deepEqual(out.sort((a, b) => a - b), expectedOf[kind]);
    assert.deepEqual(dead, []);
    assert.deepEqual(counters, { "op.numRecordsSkipped": 3 });
  });

  test(`${kind}: dead-letter sends each record thrown on, with the error and the operator, to deadLetters()`, async () => {
    const { out, dead, counters } = await runWith("dead-letter", build);
    assert.deepEqual(out.sort((a, b) => a - b), expectedOf[kind]);
    assert.deepEqual(counters, { "op.numRecordsDeadLettered": 3 });
    assert.deepEqual(
      dead.map((d) => [d.operator, d.subtask, d.value, d.error.code]),
      [3, 6, 9].map((n) => ["op", 0, n, "USER_FUNCTION_FAILED"]),
    );
    assert.match(dead[0]!.error.message, /user function failed in operator 'op' \(subtask 0 of \d+\): Error: bad 3/);
  });
}

test("flatMap: what the function emitted before it threw stays emitted (documented)", async () => {
  const { out, dead } = await runWith("dead-letter", (s) =>
    s.flatMap<number>((n, out) => {
      out.collect(n);
      throwing(n);
      out.collect(-n);
    }),
  );
  assert.deepEqual(out.filter((n) => bad(Math.abs(n))), [3, 6, 9], "the first output of the failing records was emitted, the second not");
  assert.equal(dead.length, 3);
});

test("a timestamp assigner returning a non-number: INVALID_TIMESTAMP goes to the policy, with the record", async () => {
  const { out, dead } = await runWith("dead-letter", (s) =>
    s.assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => (bad(n) ? Number.NaN : n))),
  );
  assert.deepEqual(out, [1, 2, 4, 5, 7, 8, 10]);
  assert.deepEqual(dead.map((d) => [d.value, d.error.code]), [3, 6, 9].map((n) => [n, "INVALID_TIMESTAMP"]));
});

test("dead letters carry the record's timestamp when it had one", async () => {
  const { dead } = await runWith("dead-letter", (s) =>
    s.assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n * 1000)).map((n) => (throwing(n), n)),
  );
  assert.deepEqual(dead.map((d) => d.timestamp), [3000, 6000, 9000]);
});

for (const parallelism of [1, 2]) {
  test(`keyed process, parallelism ${parallelism}: a key selector that throws or returns an invalid key goes to the keyed operator's policy`, async () => {
    // At parallelism 1 the keyBy edge is chained and the operator calls the selector; at 2 the
    // partitioner upstream calls it first and hands the record on.
    const build = (s: DataStream<number>) =>
      s
        .keyBy((n) => {
          if (n === 3) throw new Error("no key for 3");
          return n === 6 ? (undefined as unknown as number) : n % 2;
        })
        .process<number>({ processElement: (n, _ctx, out) => out.collect(n) });
    const { out, dead, counters } = await runWith("dead-letter", build, { mode: "inline", parallelism });
    assert.deepEqual(out.sort((a, b) => a - b), [1, 2, 4, 5, 7, 8, 9, 10]);
    assert.deepEqual(dead.map((d) => [d.value, d.error.code]).sort(), [[3, "USER_FUNCTION_FAILED"], [6, "INVALID_KEY"]]);
    assert.deepEqual(counters, { "op.numRecordsDeadLettered": 2 });
    // Under fail, the partitioner fails as before.
    await assert.rejects(runWith("fail", build, { mode: "inline", parallelism }), (e: unknown) => e instanceof EddyError && (e.code === "INVALID_KEY" || e.code === "USER_FUNCTION_FAILED" || e.code === "TASK_FAILED"));
  });
}

test("the bound: more than maxPerMinute dead letters fails the job with ERROR_POLICY_BOUND_EXCEEDED", async () => {
  const job = (max: number) =>
    defineJob("bounded", (env) => {
      const op = env
        .fromCollection(NUMBERS)
        .map((n) => (throwing(n), n))
        .name("op")
        .onError("dead-letter", { maxPerMinute: max });
      op.sinkTo(collectSink("out"));
      op.deadLetters().sinkTo(collectSink("dead"));
    });
  await assert.rejects(runJob(job(2), { mode: "inline" }).done, (e: unknown) => {
    assert.ok(e instanceof EddyError);
    assert.equal(e.code, "ERROR_POLICY_BOUND_EXCEEDED");
    assert.equal(e.operator, "op");
    assert.match(e.message, /operator 'op' \(subtask 0\) would dead-letter more than 2 records within a minute.*bad 9/);
    return true;
  });
  const ok = runJob(job(3), { mode: "inline" });
  await ok.done;
  assert.equal(ok.collected("dead").length, 3);
});

test("onError and deadLetters are refused where they do not apply, with INVALID_ERROR_POLICY", () => {
  const refused = (build: (env: StreamExecutionEnvironment) => void, pattern: RegExp) =>
    assert.throws(
      () => runJob(defineJob("refused", build), { mode: "inline" }),
      (e: unknown) => e instanceof EddyError && (e.code === "INVALID_ERROR_POLICY" || (e.cause instanceof EddyError && e.cause.code === "INVALID_ERROR_POLICY")) && pattern.test(e.message),
    );
  refused((env) => void env.fromCollection(NUMBERS).keyBy((n) => n).reduce((a, b) => a + b).onError("skip"), /onError\(\) applies to map, filter/);
  refused((env) => void env.fromCollection(NUMBERS).keyBy((n) => n).onError("skip"), /not to a partition of streams/);
  refused((env) => void env.fromCollection(NUMBERS).map((n) => n).deadLetters(), /call \.onError\("dead-letter"\) on it first/);
  refused((env) => void env.fromCollection(NUMBERS).map((n) => n).onError("skip").deadLetters(), /needs an operator whose error policy is "dead-letter"/);
});

test("dead letters nothing reads are counted, and the plan says so", async () => {
  const warnings: string[] = [];
  const job = defineJob("unread", (env) => {
    env.fromCollection(NUMBERS).map((n) => (throwing(n), n)).name("op").onError("dead-letter").sinkTo(collectSink("out"));
  });
  const handle = runJob(job, { mode: "inline", logger: { debug() {}, info() {}, warn: (m) => void warnings.push(m), error() {} } });
  await handle.done;
  assert.equal(handle.collected("out").length, 7);
  assert.ok(warnings.some((w) => /nothing reads its dead letters/.test(w)), warnings.join("\n"));
});

test("DEAD_LETTERS is an ordinary side output: getSideOutput(DEAD_LETTERS) is deadLetters()", async () => {
  const job = defineJob("tag", (env) => {
    const op = env.fromCollection(NUMBERS).map((n) => (throwing(n), n)).name("op").onError("dead-letter");
    op.getSideOutput(DEAD_LETTERS).map((d) => d.value as number).sinkTo(collectSink("dead"));
  });
  const handle = runJob(job, { mode: "inline" });
  await handle.done;
  assert.deepEqual(handle.collected("dead"), [3, 6, 9]);
});

// --- The job of test/jobs/dead-letters.ts: a source with bad lines, a throwing map, a key selector rejecting some keys ---

async function runDeadLetterJob(options: RunOptions, env: Record<string, string> = {}) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const handle = runJob(dl.deadLetterJob, options);
    await handle.done;
    const counters: Record<string, number> = {};
    for (const m of handle.metrics()) for (const [k, v] of Object.entries(m.counters)) counters[k] = (counters[k] ?? 0) + v;
    return { handle, out: handle.collected<string>("out").sort(), dead: dl.deadLetterRows(handle.collected<DeadLetter>("dead")), counters };
  } finally {
    for (const key of Object.keys(env)) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }
}

function expectedCounts(count = 40_000): { lines: number; parse: number; tag: number } {
  let lines = 0;
  let parse = 0;
  let tag = 0;
  for (let n = 1; n <= count; n++) {
    if (n % dl.BAD_LINE === 0) lines++;
    else if (n % dl.THROWS_ON === 0) parse++;
    else if (n % dl.NO_KEY === 0) tag++;
  }
  return { lines, parse, tag };
}

for (const mode of ["inline", "threads"] as const) {
  test(`${mode}: a source's bad lines, a map's and a key selector's failures are dead-lettered with positions and counted per operator`, async () => {
    const { out, dead, counters } = await runDeadLetterJob({ mode, parallelism: 2, metricsIntervalMs: 20 });
    assert.deepEqual(out, dl.expectedOutput(40_000));
    const expected = expectedCounts();
    const letters = dead.map((d) => JSON.parse(d) as DeadLetter);
    const of = (op: string) => letters.filter((d) => d.operator === op);
    assert.equal(of("lines").length, expected.lines);
    assert.equal(of("parse").length, expected.parse);
    assert.equal(of("tag").length, expected.tag);
    assert.equal(letters.length, expected.lines + expected.parse + expected.tag);
    const first = of("lines").find((d) => d.position?.line === dl.BAD_LINE)!;
    assert.deepEqual(
      { raw: first.raw, rawEncoding: first.rawEncoding, position: first.position, code: first.error.code, subtask: first.subtask },
      { raw: `#${dl.BAD_LINE}?`, rawEncoding: "text", position: { split: 0, line: dl.BAD_LINE }, code: "BAD_RECORD", subtask: 0 },
    );
    assert.ok(of("parse").every((d) => typeof d.value === "number" && (d.value as number) % dl.THROWS_ON === 0 && d.timestamp === d.value));
    assert.ok(of("tag").every((d) => d.error.code === "INVALID_KEY" && typeof d.value === "number"));
    assert.equal(counters["lines.numRecordsDeadLettered"], expected.lines);
    assert.equal(counters["parse.numRecordsDeadLettered"], expected.parse);
    assert.equal(counters["tag.numRecordsDeadLettered"], expected.tag);
  });
}

test("threads: skip counts per operator and drops, and the bound fails the job from a worker with its code", async () => {
  const { out, dead, counters } = await runDeadLetterJob({ mode: "threads", parallelism: 2, metricsIntervalMs: 20 }, { EDDY_DL_POLICY: "skip" });
  assert.deepEqual(out, dl.expectedOutput(40_000));
  assert.deepEqual(dead, []);
  const expected = expectedCounts();
  assert.equal(counters["lines.numRecordsSkipped"], expected.lines);
  assert.equal(counters["parse.numRecordsSkipped"], expected.parse);
  assert.equal(counters["tag.numRecordsSkipped"], expected.tag);
  await assert.rejects(runDeadLetterJob({ mode: "threads", parallelism: 2 }, { EDDY_DL_MAX: "5" }), (e: unknown) => {
    assert.ok(e instanceof EddyError);
    const code = e.code === "TASK_FAILED" && e.cause instanceof EddyError ? e.cause.code : e.code;
    assert.equal(code, "ERROR_POLICY_BOUND_EXCEEDED", e.message);
    return true;
  });
});

// --- Exactly once: dead letters are records of a side output, checkpointed and committed like the rest ---

for (const [mode, lines] of [["inline", 120_000], ["threads", 40_000]] as const) {
  test(`${mode}: with checkpoints and an injected failure, the committed dead letters and output equal the failure-free run's`, async () => {
    const count = { EDDY_DL_LINES: String(lines) };
    const oracle = await runDeadLetterJob({ mode: "inline", parallelism: 2, checkpointing: false }, count);
    assert.deepEqual(oracle.out, dl.expectedOutput(lines), "the failure-free output is the expected one");
    const expected = expectedCounts(lines);
    assert.equal(oracle.dead.length, expected.lines + expected.parse + expected.tag);
    const dir = mkdtempSync(join(tmpdir(), "eddy-dead-letters-"));
    const marker = join(dir, "fault-fired");
    try {
      const run = await runDeadLetterJob(
        {
          mode,
          parallelism: 2,
          checkpointing: { intervalMs: 10 },
          checkpointDir: join(dir, "checkpoints"),
          jobId: "dead-letters",
          restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
        },
        // After a checkpoint with dead letters completed (throttled, so the job is still running then).
        { ...count, EDDY_DL_FAULT: JSON.stringify({ marker, afterCommit: join(dir, "first-commit") }), EDDY_DL_THROTTLE: "100" },
      );
      assert.ok(existsSync(marker), "the fault fired");
      assert.equal(run.handle.restarts, 1);
      assert.ok(run.handle.restoredFrom.some((id) => id !== null), `restored from a checkpoint, not from the start: ${JSON.stringify(run.handle.restoredFrom)}`);
      assert.deepEqual(run.out, oracle.out, "committed output");
      assert.deepEqual(run.dead, oracle.dead, "committed dead letters");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
