/**
 * What `eddy run` prints when a user function throws (issue 32): one line, naming the operator,
 * the subtask of its parallelism and the user's file:line:column, its stack cut to the user's
 * frames (whole with --verbose); the same inline, on one worker and on several, whose frames come
 * from a bundle's source map.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { eddyBin, userProject } from "./fixtures.ts";

interface FailureLine {
  readonly level: string;
  readonly msg: string;
  readonly error: string;
  readonly operator?: string;
  readonly subtask?: number;
  readonly parallelism?: number;
  readonly location?: string;
  readonly stack?: string;
}

/** Frames of Eddy's own sources (the package is linked into the user's project from packages/eddy). */
const EDDY_FRAME = /\bat .*packages\/eddy\/(src|bin)\//;

/** Writes `source` as `name` in a new user project and runs `eddy run` on it; the job must fail. */
function failingRun(name: string, source: string, args: readonly string[]): { stderr: string; lines: FailureLine[] } {
  const dir = userProject();
  const job = join(dir, name);
  writeFileSync(job, source);
  const run = spawnSync(process.execPath, [eddyBin, "run", job, "--no-control", "--no-progress", "--log-format", "json", ...args], { encoding: "utf8", cwd: dir, timeout: 120_000 });
  assert.equal(run.status, 1, `${args.join(" ")}: ${run.stderr}`);
  const lines = run.stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as FailureLine);
  return { stderr: run.stderr, lines };
}

/** The one stderr line that names `at`, which must be the failure's log line. */
function onlyLineNaming(stderr: string, lines: readonly FailureLine[], at: string): FailureLine {
  const naming = stderr.split("\n").filter((l) => l.includes(at));
  assert.equal(naming.length, 1, `one line names ${at}:\n${stderr}`);
  const line = lines.find((l) => l.location !== undefined);
  assert.ok(line !== undefined && naming[0]!.startsWith("{"), stderr);
  return line;
}

// `r.missing.field` is on line 6 (at column 23, the `.field` read of undefined).
const MAP_JOB = `import { defineJob } from "eddy";
interface Reading { n: number; missing?: { field: number } }
export default defineJob("readings", (env) => {
  env.fromSequence(1, 100).map((n: number): Reading => ({ n })).map((r: Reading) => {
    if (r.n < 60) return r.n;
    return r.missing!.field;
  }).name("Fields").print();
});
`;
const MAP_AT = "map-job.ts:6:";

for (const [label, args, parallelism] of [
  ["inline", ["--inline"], 1],
  ["on one worker (-p 1)", ["-p", "1"], 1],
  ["on worker threads (-p 2)", ["-p", "2"], 2],
  ["on worker threads, with checkpoints and --restart-strategy none", ["-p", "2", "--checkpoint-interval", "1s", "--restart-strategy", "none"], 2],
] as const) {
  test(`a map throwing a TypeError ${label}: one line names the operator, the subtask of ${parallelism} and the job file's line, with the user's frames only`, () => {
    const { stderr, lines } = failingRun("map-job.ts", MAP_JOB, args);
    const line = onlyLineNaming(stderr, lines, MAP_AT);
    assert.equal(line.level, "error");
    assert.match(line.msg, /^job failed/);
    assert.equal(line.operator, "Fields");
    assert.equal(line.parallelism, parallelism);
    assert.ok(typeof line.subtask === "number" && line.subtask < parallelism, `subtask ${line.subtask}`);
    assert.match(line.error, new RegExp(`operator 'Fields' \\(subtask ${line.subtask} of ${parallelism}\\): TypeError: Cannot read properties of undefined \\(reading 'field'\\)`));
    assert.match(line.location!, /^\/.*map-job\.ts:6:\d+$/);
    assert.match(line.stack!, /^TypeError: Cannot read properties of undefined \(reading 'field'\)\n {4}at .*map-job\.ts:6:\d+\)?$/);
    assert.doesNotMatch(stderr, EDDY_FRAME, "no frames of Eddy's sources");
    assert.equal(lines.filter((l) => l.level === "error").length, 1, stderr);
    assert.match(stderr, /\neddy: job 'readings' failed: user function failed in operator 'Fields' \(subtask \d of \d\): TypeError: Cannot read properties of undefined \(reading 'field'\)\n$/);
  });
}

for (const args of [["-p", "2"], ["--inline"]]) {
  test(`with --verbose (${args.join(" ")}) the failure's line carries the whole stack, Eddy's frames too`, () => {
    const { stderr, lines } = failingRun("map-job.ts", MAP_JOB, [...args, "--verbose"]);
    const line = onlyLineNaming(stderr, lines, MAP_AT);
    assert.match(line.stack!, /^EddyError: user function failed in operator 'Fields'/);
    assert.match(line.stack!, EDDY_FRAME);
    assert.match(line.stack!, /\nCaused by: TypeError: Cannot read properties of undefined \(reading 'field'\)\n {4}at .*map-job\.ts:6:\d+/);
  });
}

test("a KeyedProcessFunction's processElement and a window function that throw are located the same way on worker threads", () => {
  const process = failingRun(
    "process-job.ts",
    `import { defineJob, type KeyedProcessFunction } from "eddy";
class Flag implements KeyedProcessFunction<number, number, string> {
  processElement(n: number): void {
    if (n === 77) (null as unknown as { flag(): void }).flag();
  }
}
export default defineJob("flags", (env) => {
  env.fromSequence(1, 200).keyBy((n) => n % 4).process(new Flag()).name("Flagger").print();
});
`,
    ["-p", "2"],
  );
  const line = onlyLineNaming(process.stderr, process.lines, "process-job.ts:4:");
  assert.equal(line.operator, "Flagger");
  assert.match(line.error, /operator 'Flagger' \(subtask \d of 2\): TypeError/);
  assert.match(line.stack!, /at Flag\.processElement \(.*process-job\.ts:4:\d+\)/);
  assert.doesNotMatch(process.stderr, EDDY_FRAME);

  const window = failingRun(
    "window-job.ts",
    `import { defineJob, TumblingEventTimeWindows, WatermarkStrategy, type Collector } from "eddy";
const largest = (values: number[]): number => {
  if (values.length > 3) throw new RangeError("too many in one window: " + values.length);
  return Math.max(...values);
};
export default defineJob("windows", (env) => {
  env.fromSequence(1, 100)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n * 1_000))
    .keyBy((n) => n % 2)
    .window(TumblingEventTimeWindows.of(10_000))
    .process<number>({ process: (_k: number, _ctx: unknown, values: number[], out: Collector<number>) => out.collect(largest(values)) })
    .name("Largest")
    .print();
});
`,
    ["-p", "2"],
  );
  const at = onlyLineNaming(window.stderr, window.lines, "window-job.ts:3:");
  assert.equal(at.operator, "Largest");
  assert.match(at.error, /operator 'Largest' \(subtask \d of 2\): RangeError: too many in one window/);
  assert.match(at.stack!, /at largest \(.*window-job\.ts:3:\d+\)\n {4}at .*window-job\.ts:11:\d+/, "the user's frames, the calling one too");
  assert.doesNotMatch(window.stderr, EDDY_FRAME);
});

test("by default (--log-format text) the failure is one line for people: level, message, the fields as key=value, the user's frames indented below", () => {
  const dir = userProject();
  const job = join(dir, "map-job.ts");
  writeFileSync(job, MAP_JOB);
  const run = spawnSync(process.execPath, [eddyBin, "run", job, "--no-control", "--no-progress", "-p", "2"], { encoding: "utf8", cwd: dir, timeout: 120_000 });
  assert.equal(run.status, 1, run.stderr);
  const lines = run.stderr.split("\n");
  assert.equal(lines.filter((l) => l.startsWith("{")).length, 0, `no JSON lines:\n${run.stderr}`);
  const at = lines.findIndex((l) => / ERROR job failed/.test(l));
  assert.ok(at >= 0, run.stderr);
  const line = lines[at]!;
  assert.match(line, /^\d\d:\d\d:\d\d\.\d{3}Z ERROR job failed job=readings /);
  assert.match(line, / operator=Fields /);
  assert.match(line, / parallelism=2( |$)/);
  assert.match(line, / location=\/\S*map-job\.ts:6:\d+( |$)/);
  assert.match(line, / error="user function failed in operator 'Fields' \(subtask \d of 2\): TypeError: Cannot read properties of undefined \(reading 'field'\)"/);
  // The stack on the lines below, indented, the user's frame only.
  assert.equal(lines[at + 1], "    TypeError: Cannot read properties of undefined (reading 'field')");
  assert.match(lines[at + 2]!, /^ {4}at .*map-job\.ts:6:\d+\)?$/);
  assert.doesNotMatch(run.stderr, EDDY_FRAME);
});

test("--log-format refuses a format it does not know", () => {
  const dir = userProject();
  const job = join(dir, "map-job.ts");
  writeFileSync(job, MAP_JOB);
  const run = spawnSync(process.execPath, [eddyBin, "run", job, "--no-control", "--log-format", "yaml"], { encoding: "utf8", cwd: dir, timeout: 60_000 });
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, /unknown log format 'yaml' \(text, json\)/);
});
