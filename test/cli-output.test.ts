/**
 * What `eddy run` writes: records alone on stdout, and a final summary on stderr with records in
 * and out per sink, late records dropped, checkpoints and restarts. The terminal behaviour of the
 * status line is drawn on a terminal only: its erasing is tested as a unit
 * (packages/eddy/src/control/status-line.test.ts), its text too (progress.test.ts), and here once
 * on a real pseudo-terminal (script(1)); the other tests have stdout and stderr on pipes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { eddyBin, userProject } from "./fixtures.ts";
import { PROGRESS_RECORDS } from "./jobs/progress.ts";


// Six readings; the watermark follows each one, so the readings stamped 100 and 200 (after 1500)
// and 1600 (after 5200) arrive after their one-second window has fired and are dropped as late. Two sinks: every reading printed
// (5 of 6 pass the filter), and the per-window counts (windows [0,1000), [1000,2000), [5000,6000)).
const JOB = `import { defineJob, TumblingEventTimeWindows, WatermarkStrategy, type Collector, type TimeWindow } from "eddy";

interface Reading { id: number; ts: number }
const readings: Reading[] = [
  { id: 1, ts: 500 }, { id: 2, ts: 1500 }, { id: 3, ts: 100 }, { id: 4, ts: 5200 }, { id: 5, ts: 200 }, { id: 6, ts: 1600 },
];
const punctuated = WatermarkStrategy.forGenerator<Reading>(() => ({
  onEvent(_r, ts, output) { output.emitWatermark(ts - 1); },
  onPeriodicEmit() {},
})).withTimestampAssigner((r) => r.ts);

export default defineJob("two-sinks", (env) => {
  const stamped = env.fromCollection(readings).assignTimestampsAndWatermarks(punctuated);
  stamped.filter((r) => r.id !== 6).print().name("readings");
  stamped
    .keyBy(() => "all")
    .window(TumblingEventTimeWindows.of(1000))
    .process({
      process: (_k: string, ctx: { window: TimeWindow }, rs: Reading[], out: Collector<string>) => out.collect(ctx.window.start + ":" + rs.length),
    })
    .print()
    .name("window counts");
});
`;

test("eddy run keeps stdout to the records and ends with records per sink, late records, checkpoints and restarts", () => {
  const dir = userProject();
  const job = join(dir, "two-sinks.ts");
  writeFileSync(job, JOB);
  const run = spawnSync(process.execPath, [eddyBin, "run", job, "--no-control"], { encoding: "utf8", cwd: dir, timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  // stdout: only the records, one JSON line each, no escape sequences or progress.
  const lines = run.stdout.split("\n").filter((l) => l !== "");
  assert.deepEqual(
    lines.filter((l) => l.startsWith("{")).sort(),
    ['{"id":1,"ts":500}', '{"id":2,"ts":1500}', '{"id":3,"ts":100}', '{"id":4,"ts":5200}', '{"id":5,"ts":200}'],
  );
  assert.deepEqual(lines.filter((l) => !l.startsWith("{")).sort(), ['"0:1"', '"1000:1"', '"5000:1"']);
  assert.doesNotMatch(run.stdout + run.stderr, /\r|\x1b/, "no terminal control characters when not on a terminal");
  // stderr: the summary, one fact per line.
  assert.match(run.stderr, /^\[eddy\] job 'two-sinks' finished in \d+ ms$/m);
  assert.match(run.stderr, /^\[eddy\] {3}records read by sources: 6 \([\d,]+ records\/s\)$/m);
  assert.match(run.stderr, /^\[eddy\] {3}records into sink 'readings': 5$/m);
  assert.match(run.stderr, /^\[eddy\] {3}records into sink 'window counts': 3$/m);
  assert.match(run.stderr, /^\[eddy\] {3}late records dropped: 3$/m);
  assert.match(run.stderr, /^\[eddy\] {3}checkpoints: 0 completed, 0 failed; restarts: 0$/m);
});

test("two sinks of the same name (two unnamed print()) get a summary line each, the second as 'Sink: Print (2)'", () => {
  const dir = userProject();
  const job = join(dir, "same-names.ts");
  writeFileSync(
    job,
    `import { defineJob } from "eddy";
export default defineJob("same-names", (env) => {
  const numbers = env.fromSequence(1, 10);
  numbers.filter((n) => n <= 3).print();
  numbers.filter((n) => n > 3).map((n) => -n).print();
});
`,
  );
  const run = spawnSync(process.execPath, [eddyBin, "run", job, "-p", "2", "--no-control", "--no-progress"], { encoding: "utf8", cwd: dir, timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.split("\n").filter((l) => l !== "").length, 10);
  const sinks = run.stderr.split("\n").filter((l) => l.includes("records into sink"));
  assert.deepEqual(sinks, ["[eddy]   records into sink 'Sink: Print': 3", "[eddy]   records into sink 'Sink: Print (2)': 7"], run.stderr);
});

/** What the status line writes before each redraw (status-line.ts): carriage return, erase the line. */
const ERASE_LINE = "\r\x1b[2K";

test("on a terminal, eddy run draws one live status line about once a second: rates, watermark lag, backpressure, the last checkpoint, restarts", () => {
  // A real pseudo-terminal: script(1) from util-linux runs eddy run with its stdout and stderr on one.
  const job = join(import.meta.dirname, "jobs", "progress.ts");
  const command = [process.execPath, eddyBin, "run", job, "-p", "2", "--no-control", "--checkpoint-interval", "300ms", "--checkpoint-dir", join(userProject(), "checkpoints")]
    .map((a) => `'${a}'`)
    .join(" ");
  // 400 columns: the whole line fits (the line is cut to the terminal's width, tested as a unit).
  const run = spawnSync("script", ["-qfec", `stty cols 400; ${command}`, "/dev/null"], { encoding: "utf8", timeout: 120_000 });
  assert.equal(run.error, undefined, "script(1) from util-linux is needed for this test (apt-get install util-linux)");
  assert.equal(run.status, 0, run.stdout + run.stderr);
  // Each redraw starts with the erase sequence; what follows it up to the next control character is the line.
  const drawn = run.stdout
    .split(ERASE_LINE)
    .slice(1)
    .map((s) => s.split(/[\r\n\x1b]/)[0]!)
    .filter((s) => s.startsWith("[eddy] progress "));
  assert.ok(drawn.length >= 2, `at least two status lines over the job's ~4 s:\n${JSON.stringify(run.stdout.slice(0, 2_000))}`);
  for (const line of drawn) assert.match(line, /^\[eddy\] progress (running|restarting|stopping|finished) \S+( \S+)? \| in \S+( \S+)? \| out \S+( \S+)? \| watermark lag \S+( \S+)? \| backpressure (–|ok|low|high)/, line);
  const last = drawn.at(-1)!;
  assert.match(last, /\| in [\d.,]+( [KM])?\/s \| out [\d.,]+( [KM])?\/s \|/, `rates once two samples exist: ${last}`);
  // (The job's event time is its numbers as ms since 1970: the lag to the wall clock is decades.)
  assert.match(last, /\| watermark lag ([\d.]+ (ms|s)|\d+m\d\ds|\d+h\d\dm) \|/, `a sink saw a watermark: ${last}`);
  assert.match(last, /\| checkpoint \d+ \S+ (ms|s) ago \([\d.]+ (ms|s), [\d.]+ (B|KiB|MiB)\) \| restarts 0$/, last);
  // The summary comes after the line was erased for good, and the records are all there.
  assert.match(run.stdout, /job 'progress' finished in \d+ ms/);
  // A record follows an erased status line on the same terminal line: the erase ends a line here.
  const counts = run.stdout.replaceAll(ERASE_LINE, "\n").split(/[\r\n]+/).filter((l) => /^\d+$/.test(l));
  assert.equal(counts.reduce((sum, c) => sum + Number(c), 0), PROGRESS_RECORDS, "every window's count printed on a line of its own");
});
