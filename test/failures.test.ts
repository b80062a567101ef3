import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { defineJob, EddyError, WatermarkStrategy } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { eddyBin, userProject } from "./fixtures.ts";

async function failureOf(job: ReturnType<typeof defineJob>, parallelism = 1): Promise<EddyError> {
  const handle = runJob(job, { parallelism });
  const error = await handle.done.then(
    () => assert.fail("the job should have failed"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof EddyError, `expected an EddyError, got ${String(error)}`);
  return error;
}

test("a failing user function fails the job with the operator, subtask and cause", async () => {
  const error = await failureOf(
    defineJob("boom", (env) => {
      env
        .fromSequence(1, 100)
        .map((n) => {
          if (n === 42) throw new Error("no 42 allowed");
          return n;
        })
        .name("Reject42")
        .sinkTo(collectSink("out"));
    }),
  );
  assert.equal(error.domain, "user");
  assert.equal(error.operator, "Reject42");
  assert.equal(error.subtask, 0);
  assert.match(error.message, /Reject42/);
  assert.match(error.message, /subtask 0/);
  assert.match(error.message, /no 42 allowed/);
});

test("a failure in a downstream subtask names that subtask", async () => {
  const error = await failureOf(
    defineJob("boom-keyed", (env) => {
      env
        .fromSequence(0, 999)
        .keyBy((n) => n % 10)
        .process<number>({
          processElement(n) {
            if (n === 777) throw new TypeError("bad record");
          },
        })
        .name("Picky")
        .sinkTo(collectSink("out"));
    }),
    4,
  );
  assert.equal(error.operator, "Picky");
  assert.match(error.message, /TypeError: bad record/);
  assert.equal(typeof error.subtask, "number");
});

test("a reduce function failing mid-batch in a keyed subtask names the operator and that subtask", async () => {
  const error = await failureOf(
    defineJob("boom-reduce", (env) => {
      env
        .fromSequence(0, 9_999)
        .keyBy((n) => n % 10)
        .reduce((a, b) => {
          if (b === 7_777) throw new RangeError("no 7777");
          return a + b;
        })
        .name("Sums")
        .sinkTo(collectSink("out"));
    }),
    2,
  );
  assert.equal(error.operator, "Sums");
  assert.equal(typeof error.subtask, "number");
  assert.match(error.message, /Sums/);
  assert.match(error.message, /RangeError: no 7777/);
});

for (const [label, selector] of [
  ["undefined", () => undefined],
  ["null", () => null],
  ["an object", () => ({ id: 1 })],
  ["NaN", () => Number.NaN],
] as const) {
  test(`a key selector returning ${label} fails with a clear error naming the operator`, async () => {
    const error = await failureOf(
      defineJob("bad-key", (env) => {
        env
          .fromElements(1, 2, 3)
          .keyBy(selector as unknown as (n: number) => string)
          .reduce((a, b) => a + b)
          .name("Totals")
          .sinkTo(collectSink("out"));
      }),
    );
    assert.equal(error.code, "INVALID_KEY");
    assert.match(error.message, /Totals/);
    assert.match(error.message, /invalid key/);
  });

  test(`a key selector returning ${label} fails the same way when an operator that is not keyed follows keyBy`, async () => {
    const error = await failureOf(
      defineJob("bad-key-map", (env) => {
        env
          .fromElements(1, 2, 3)
          .keyBy(selector as unknown as (n: number) => string)
          .map((n) => n)
          .name("Pass")
          .sinkTo(collectSink("out"));
      }),
    );
    assert.equal(error.code, "INVALID_KEY");
    assert.match(error.message, /Pass/);
    assert.match(error.message, /invalid key/);
  });
}

for (const parallelism of [1, 3]) {
  test(`a custom partitioner returning a channel out of range fails with a clear error (parallelism ${parallelism})`, async () => {
    const error = await failureOf(
      defineJob("bad-partition", (env) => {
        env
          .fromElements(1, 2, 3)
          .partitionCustom((key: number, n) => (key === 2 ? n : 0), (v) => v)
          .map((n) => n)
          .name("After")
          .sinkTo(collectSink("out"));
      }),
      parallelism,
    );
    assert.equal(error.code, "INVALID_PARTITION");
    assert.match(error.message, /After/);
  });
}

for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, "1000"]) {
  test(`a timestamp assigner returning ${String(bad)} fails with a clear error`, async () => {
    const error = await failureOf(
      defineJob("bad-ts", (env) => {
        env
          .fromElements({ ts: 1 })
          .assignTimestampsAndWatermarks(
            WatermarkStrategy.forMonotonousTimestamps<{ ts: number }>().withTimestampAssigner(() => bad as number),
          )
          .name("Stamps")
          .sinkTo(collectSink("out"));
      }),
    );
    assert.equal(error.code, "INVALID_TIMESTAMP");
    assert.match(error.message, /Stamps/);
  });
}

test("timers on a non-keyed stream fail with a hint to use keyBy", async () => {
  const error = await failureOf(
    defineJob("no-keyed-timers", (env) => {
      env
        .fromElements(1)
        .process<number>({
          processElement(_v, ctx) {
            ctx.timerService().registerEventTimeTimer(10);
          },
        })
        .sinkTo(collectSink("out"));
    }),
  );
  assert.match(error.message, /keyBy/);
});

test("a function class with #private fields fails with a hint to use ordinary fields", async () => {
  class Counting {
    #seen = 0;
    processElement(v: number, _ctx: unknown, out: { collect(v: number): void }): void {
      this.#seen++;
      out.collect(v + this.#seen);
    }
  }
  const error = await failureOf(
    defineJob("private-fields", (env) => {
      env.fromElements(1).process<number>(new Counting()).sinkTo(collectSink("out"));
    }),
  );
  assert.match(error.message, /private member.*copied per subtask.*ordinary fields/);
});

test("a summed field that is not a number fails naming the field", async () => {
  const error = await failureOf(
    defineJob("bad-sum", (env) => {
      env
        .fromElements({ k: "a", n: 1 }, { k: "a", n: "2" as unknown as number })
        .keyBy((r) => r.k)
        .sum("n")
        .sinkTo(collectSink("out"));
    }),
  );
  assert.match(error.message, /field 'n'/);
});


test("the CLI exits non-zero with the job's error message, not a stack dump", () => {
  const dir = userProject();
  const job = join(dir, "failing-job.ts");
  writeFileSync(
    job,
    `import { defineJob } from "eddy";
export default defineJob("failing", (env) => {
  env.fromElements(1, 2, 3).map((n: number) => { if (n === 2) throw new Error("two is bad"); return n; }).name("Check").print();
});
`,
  );
  const run = spawnSync(process.execPath, [eddyBin, "run", job], { encoding: "utf8", cwd: dir });
  assert.equal(run.status, 1);
  assert.match(run.stderr, /\neddy: job 'failing' failed: user function failed in operator 'Check' \(subtask 0 of 1\): Error: two is bad\n$/);
  assert.doesNotMatch(run.stderr, /at .*packages\/eddy\//, "no stack trace of Eddy's (the user's frames: test/user-errors.test.ts)");
  assert.equal(run.stdout, "1\n", "records before the failure were printed");
});

test("the CLI explains a module without a job and unknown commands", () => {
  const dir = userProject();
  const notJob = join(dir, "not-a-job.ts");
  writeFileSync(notJob, "export const x = 1;\n");
  const run = spawnSync(process.execPath, [eddyBin, "run", notJob], { encoding: "utf8" });
  assert.equal(run.status, 1);
  assert.match(run.stderr, /does not export a job/);
  const unknown = spawnSync(process.execPath, [eddyBin, "frobnicate"], { encoding: "utf8" });
  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /unknown command 'frobnicate'/);
  const help = spawnSync(process.execPath, [eddyBin, "--help"], { encoding: "utf8" });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /eddy run <job.ts>/);
});

test("the CLI's usage errors say what is wrong in one line: a misspelled flag or command gets the closest one; --version; a missing job file; a duration syntax", () => {
  const dir = userProject();
  const job = join(dir, "job.ts");
  writeFileSync(job, `import { defineJob } from "eddy";\nexport default defineJob("j", (env) => { env.fromElements(1).print(); });\n`);
  const eddy = (...args: string[]) => spawnSync(process.execPath, [eddyBin, ...args], { encoding: "utf8", cwd: dir });
  const version = eddy("--version");
  assert.equal(version.status, 0, version.stderr);
  assert.equal(version.stdout, `eddy ${JSON.parse(readFileSync(resolve(import.meta.dirname, "../packages/eddy/package.json"), "utf8")).version}\n`);
  const flag = eddy("run", job, "--paralelism", "2");
  assert.equal(flag.status, 2);
  assert.equal(flag.stderr, "eddy: unknown option '--paralelism'; did you mean '--parallelism'? (see eddy --help)\n");
  const far = eddy("run", job, "--frobnicate");
  assert.equal(far.stderr, "eddy: unknown option '--frobnicate' (see eddy --help)\n", "no suggestion when nothing is close");
  const command = eddy("rnu", job);
  assert.equal(command.status, 2);
  assert.match(command.stderr, /^eddy: unknown command 'rnu'; did you mean 'run'\?/);
  const missing = eddy("run", "no-such-job.ts");
  assert.equal(missing.status, 2);
  assert.equal(missing.stderr, `eddy: job file 'no-such-job.ts' does not exist (looked for ${join(dir, "no-such-job.ts")})\n`);
  const badInterval = eddy("run", job, "--checkpoint-interval", "1x");
  assert.equal(badInterval.status, 2);
  assert.match(badInterval.stderr, /--checkpoint-interval needs a duration such as 500ms, 10s, 5min or 1h/);
  const noCheckpoint = eddy("run", job, "--from-latest-checkpoint", "--checkpoint-dir", join(dir, "checkpoints"), "--checkpoint-interval", "1s");
  assert.equal(noCheckpoint.status, 1);
  assert.equal(noCheckpoint.stderr, `eddy: --from-latest-checkpoint: no complete checkpoint in '${join(dir, "checkpoints", "j")}'\n`);
  for (const interval of ["1s", "250ms", "200"]) {
    const ok = eddy("run", job, "--checkpoint-interval", interval, "--no-control");
    assert.equal(ok.status, 0, `--checkpoint-interval ${interval}: ${ok.stderr}`);
    assert.equal(ok.stdout, "1\n");
  }
});

test("a job module that throws when imported: the CLI names the job file's line", () => {
  const dir = userProject();
  const job = join(dir, "throws.ts");
  writeFileSync(job, `import { defineJob } from "eddy";\n\nconst limit: number = Number("x");\nif (Number.isNaN(limit)) throw new Error("no limit configured");\nexport default defineJob("j", () => {});\n`);
  const run = spawnSync(process.execPath, [eddyBin, "run", job], { encoding: "utf8", cwd: dir });
  assert.equal(run.status, 1);
  assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
  assert.match(run.stderr, new RegExp(`cannot load job module '.*throws\\.ts': Error: no limit configured \\(at ${job.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:4:\\d+\\)`));
});

test("the CLI runs a job on worker threads, exits when it ends, and reports a worker's failure in one line", () => {
  const dir = userProject();
  const job = join(dir, "parallel-job.ts");
  writeFileSync(
    job,
    `import { defineJob } from "eddy";
export default defineJob("parallel", (env) => {
  env.fromSequence(1, 1000)
    .map((n: number) => { if (n === 900 && process.env.FAIL === "1") throw new Error("nine hundred"); return { key: n % 7, n }; })
    .name("Parse")
    .keyBy((r) => r.key)
    .sum("n")
    .print();
});
`,
  );
  const ok = spawnSync(process.execPath, [eddyBin, "run", job, "-p", "2", "--workers", "2", "--log-level", "info"], {
    encoding: "utf8",
    cwd: dir,
    timeout: 60_000,
  });
  assert.equal(ok.status, 0, ok.stderr);
  const lines = ok.stdout.trim().split("\n").map((l) => JSON.parse(l) as { key: number; n: number });
  assert.equal(lines.length, 1000);
  const finals = new Map<number, number>();
  for (const r of lines) finals.set(r.key, Math.max(finals.get(r.key) ?? 0, r.n));
  for (let k = 0; k < 7; k++) {
    let sum = 0;
    for (let n = 1; n <= 1000; n++) if (n % 7 === k) sum += n;
    assert.equal(finals.get(k), sum);
  }

  const failed = spawnSync(process.execPath, [eddyBin, "run", job, "-p", "2"], {
    encoding: "utf8",
    cwd: dir,
    timeout: 60_000,
    env: { ...process.env, FAIL: "1" },
  });
  assert.equal(failed.status, 1);
  assert.match(failed.stderr, /eddy: job 'parallel' failed: .*'Parse'.*nine hundred\n$/);
  assert.doesNotMatch(failed.stderr, /at .*packages\/eddy\//, "no stack trace of Eddy's");
});

/** Writes `source` as a job file in a user project; returns its path. */
function userJob(name: string, source: string): string {
  const file = join(userProject(), name);
  writeFileSync(file, source);
  return file;
}

/** A map that never returns once it reaches record 500 (`spinForever`'s loop is on line 4). */
const STUCK_JOB = `import { defineJob } from "eddy";
function spinForever(n: number): number {
  let x = n;
  for (;;) x = (x * 31 + 7) % 1_000_003;
}
export default defineJob("stuck", (env) => {
  env.fromSequence(1, 1_000).map((n: number) => (n === 500 ? spinForever(n) : n)).name("Spin").print();
});
`;

test("a user function that never returns: the watchdog fails the job naming the task and the user's line, at -p 1 and -p 2", () => {
  const job = userJob("stuck-job.ts", STUCK_JOB);
  for (const p of ["1", "2"]) {
    const started = Date.now();
    const run = spawnSync(process.execPath, [eddyBin, "run", job, "-p", p, "-D", "execution.watchdog.timeout=1s", "--no-control"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(run.status, 1, `-p ${p}: ${run.stderr}`);
    assert.match(run.stderr, /eddy: job 'stuck' failed: task 'Source: Sequence -> Spin -> Sink: Print' \(subtask 0\) has not returned from user code for 1 s/, `-p ${p}`);
    assert.match(run.stderr, /at spinForever \(file:\/\/.*stuck-job\.ts:4:\d+\)/, `-p ${p}: the stack names the user's line`);
    assert.ok(Date.now() - started < 30_000, `-p ${p}: ended in ${Date.now() - started} ms`);
  }
});

test("Ctrl-C ends a job whose user function never returns (-p 1 runs on a worker thread)", async () => {
  const job = userJob("stuck-job.ts", STUCK_JOB);
  const child = spawn(process.execPath, [eddyBin, "run", job], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let started: () => void = () => {};
  const running = new Promise<void>((r) => (started = r));
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
    if (stderr.includes("control API on")) started();
  });
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  // Interrupt once the job runs (the CLI says where its control API is, after it set up its signal
  // handlers: on a loaded machine a fixed wait interrupted it before), and is stuck soon after.
  await Promise.race([running, new Promise((r) => setTimeout(r, 30_000))]);
  await new Promise((r) => setTimeout(r, 1_000));
  child.kill("SIGINT");
  const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  const code = await exited;
  clearTimeout(killer);
  assert.equal(code, 130, stderr);
  assert.match(stderr, /SIGINT: cancelling job 'stuck'/);
  assert.match(stderr, /job 'stuck' cancelled \(SIGINT\)/);
});

test("process.exit in user code at -p 1 fails the job with a message, not a silent exit code", () => {
  const job = userJob(
    "exiting-job.ts",
    `import { defineJob } from "eddy";
export default defineJob("exiting", (env) => {
  env.fromSequence(1, 100).map((n: number) => { if (n === 5) process.exit(3); return n; }).print();
});
`,
  );
  const run = spawnSync(process.execPath, [eddyBin, "run", job, "--no-control"], { encoding: "utf8", timeout: 60_000 });
  assert.equal(run.status, 1, run.stderr);
  assert.match(run.stderr, /eddy: job 'exiting' failed: .*worker 0 exited unexpectedly with code 3 \(process\.exit\(\) in user code/);
});

const TIMER_JOB = `import { defineJob } from "eddy";
export default defineJob("timer", (env) => {
  env.fromSequence(1, Number(process.env.RECORDS)).map((n: number) => {
    if (n === 1) setTimeout(() => { throw new Error("late boom"); }, Number(process.env.DELAY_MS));
    if (n === 2 && process.env.REJECT === "1") void Promise.reject(new Error("rejected boom"));
    // Keeps a long run going for ≥ 150 ms, so its event loop turns while it runs.
    if (n % 100_000 === 0) { const t = Date.now(); while (Date.now() - t < 5); }
    return n;
  }).filter(() => false).print();
});
`;

test("an exception thrown from a user timer or a promise nobody awaits fails the job with one clear line, inline as on a worker", () => {
  const job = userJob("timer-job.ts", TIMER_JOB);
  const cases = [
    { args: [], env: { DELAY_MS: "0" }, expect: /eddy: job 'timer' failed: .*worker 0 crashed: Error: late boom/ },
    { args: ["--inline"], env: { DELAY_MS: "0" }, expect: /eddy: job 'timer' failed: an uncaught exception in user code outside the job's functions \(inline mode\): Error: late boom/ },
    { args: ["--inline"], env: { DELAY_MS: "60000", REJECT: "1" }, expect: /eddy: job 'timer' failed: an unhandled promise rejection in user code outside the job's functions \(inline mode\): Error: rejected boom/ },
  ];
  for (const c of cases) {
    // With the control API on: the job's registry entry must be gone afterwards, as after any failure.
    const home = mkdtempSync(join(tmpdir(), "eddy-home-"));
    const run = spawnSync(process.execPath, [eddyBin, "run", job, ...c.args], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, EDDY_HOME: home, RECORDS: "3000000", ...c.env },
    });
    assert.equal(run.status, 1, `${c.args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, c.expect);
    assert.doesNotMatch(run.stderr, /finished/, "not reported as finished");
    assert.match(run.stderr, /control API on http:\/\/127\.0\.0\.1/);
    assert.deepEqual(readdirSync(join(home, "jobs")), [], `${c.args.join(" ")}: the registry entry and token file are removed`);
  }
});

test("a user timer still pending when the job ends does not run after the summary: the CLI exits 0 with it", () => {
  const job = userJob("timer-job.ts", TIMER_JOB);
  for (const args of [[], ["--inline"]]) {
    const run = spawnSync(process.execPath, [eddyBin, "run", job, "--no-control", ...args], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, RECORDS: "10", DELAY_MS: "3000" },
    });
    assert.equal(run.status, 0, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, /job 'timer' finished/);
    assert.doesNotMatch(run.stderr, /late boom/);
  }
});

test("a worker that runs out of memory fails the job at once, saying so, without restarts", () => {
  const job = userJob(
    "hungry-job.ts",
    `import { defineJob } from "eddy";
const hoard: number[][] = [];
export default defineJob("hungry", (env) => {
  env.fromSequence(1, 100_000_000).map((n: number) => { hoard.push(new Array(1_000).fill(n)); return n; }).filter(() => false).print();
});
`,
  );
  const started = Date.now();
  const run = spawnSync(
    process.execPath,
    [eddyBin, "run", job, "--no-control", "--checkpoint-interval", "200", "--restart-strategy", "fixed-delay:3:100", "-D", "taskmanager.memory.task.heap.size=64m", "--log-level", "info"],
    { encoding: "utf8", timeout: 120_000, cwd: tmpdir() },
  );
  assert.equal(run.status, 1, run.stderr.slice(-2_000));
  assert.match(run.stderr, /eddy: job 'hungry' failed: worker 0 ran out of memory \(its heap limit of 64 MB/);
  assert.match(run.stderr, /not restarting: out of memory: a restart from the same checkpoint would run out again/);
  assert.doesNotMatch(run.stderr, /a task failed; restarting/);
  assert.ok(Date.now() - started < 60_000, `failed in ${Date.now() - started} ms`);
});

test("an error message of megabytes is truncated in the logs and the CLI's line", () => {
  const job = userJob(
    "loud-job.ts",
    `import { defineJob } from "eddy";
export default defineJob("loud", (env) => {
  env.fromSequence(1, 10).map((n: number) => { if (n === 3) throw new Error("x".repeat(10_000_000)); return n; }).print();
});
`,
  );
  for (const args of [[], ["--inline"]]) {
    const run = spawnSync(process.execPath, [eddyBin, "run", job, "--no-control", ...args], { encoding: "utf8", timeout: 60_000, maxBuffer: 64 * 2 ** 20 });
    assert.equal(run.status, 1);
    assert.ok(run.stderr.length < 64 * 1_024, `${args.join(" ")}: ${run.stderr.length} characters of stderr`);
    assert.match(run.stderr, /xxx… \([\d,]+ more characters\)/);
  }
});

test("inline, a heap nearing V8's limit is warned about before V8 aborts the process", () => {
  // V8's out-of-memory abort cannot be caught on the thread that runs out; the warning comes
  // while the event loop still turns (here: a job that grows its heap slowly).
  const job = userJob(
    "hoarding-inline-job.ts",
    `import { defineJob } from "eddy";
const hoard: number[][] = [];
export default defineJob("hoarding", (env) => {
  env.fromSequence(1, 100_000_000).map((n: number) => {
    hoard.push(new Array(100).fill(n));
    if (n % 200 === 0) { const t = Date.now(); while (Date.now() - t < 2); }
    return n;
  }).filter(() => false).print();
});
`,
  );
  const run = spawnSync(process.execPath, ["--max-old-space-size=96", eddyBin, "run", job, "--inline", "--no-control"], {
    encoding: "utf8",
    timeout: 120_000,
    cwd: tmpdir(),
  });
  assert.notEqual(run.status, 0, "the process ran out of memory");
  assert.match(run.stderr, /the heap holds \d+ MB of its \d+ MB limit: at the limit V8 aborts the process/);
  assert.ok(run.stderr.indexOf("the heap holds") < Math.max(0, run.stderr.indexOf("FATAL ERROR")) || !run.stderr.includes("FATAL ERROR"), "the warning comes first");
});

test("a failure the job recovers from is logged once, as a warning with its cause; 'failed' at error level only when it gives up", () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-once-"));
  const marker = join(dir, "fired");
  const job = userJob(
    "fails-once.ts",
    `import { writeFileSync } from "node:fs";
import { defineJob } from "eddy";
const once = (): boolean => { try { writeFileSync(${JSON.stringify(marker)}, "x", { flag: "wx" }); return true; } catch { return false; } };
export default defineJob("fails-once", (env) => {
  env.fromSequence(1, 200_000).map((n: number) => { if (n === 150_000 && once()) throw new Error("flaky lookup"); return n; }).name("Lookup").filter(() => false).print();
});
`,
  );
  const args = [eddyBin, "run", job, "-p", "2", "--no-control", "--no-progress", "--log-format", "json", "--checkpoint-interval", "20ms", "--checkpoint-dir", join(dir, "checkpoints"), "--restart-strategy", "fixed-delay:1:10"];
  const recovered = spawnSync(process.execPath, args, { encoding: "utf8", cwd: tmpdir() });
  assert.equal(recovered.status, 0, recovered.stderr);
  const logs = recovered.stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { level: string; msg: string; error?: string; operator?: string; subtask?: number; location?: string });
  assert.equal(logs.length, 1, recovered.stderr);
  assert.match(`${logs[0]!.level}: ${logs[0]!.msg}`, /^warn: a task failed; restarting from (checkpoint \d+|the beginning \(no checkpoint completed yet\))$/);
  assert.match(logs[0]!.error!, /user function failed in operator 'Lookup' \(subtask \d of 2\): Error: flaky lookup/);
  // Where the user's code threw (the map's line, 5), in that line only.
  assert.equal(logs[0]!.operator, "Lookup");
  assert.equal(typeof logs[0]!.subtask, "number");
  assert.equal(logs[0]!.location, `${job}:5:${logs[0]!.location!.split(":").at(-1)}`);
  assert.equal(recovered.stderr.split("\n").filter((l) => l.includes("fails-once.ts:5:")).length, 1, recovered.stderr);
  assert.match(recovered.stderr, /restarts: 1/);

  rmSync(marker);
  // No restart left: the same failure ends the job, said once at error level, then by the CLI's line.
  const gaveUp = spawnSync(process.execPath, [...args.slice(0, -1), "none"], { encoding: "utf8", cwd: tmpdir() });
  assert.equal(gaveUp.status, 1, gaveUp.stderr);
  const errors = gaveUp.stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { level: string; msg: string });
  assert.deepEqual(errors.map((l) => `${l.level}: ${l.msg}`), ["error: job failed; not restarting"], gaveUp.stderr);
  assert.match(gaveUp.stderr, /eddy: job 'fails-once' failed: user function failed in operator 'Lookup'.*flaky lookup\n$/);
});
