/**
 * Savepoints from the command line, end to end: `eddy run` serves its control API; `eddy list`
 * finds the job, `eddy savepoint` takes a savepoint while it runs, `eddy stop --savepoint --dir`
 * stops it with one and moves it; `eddy savepoint inspect` reads it; `eddy run --from-savepoint`
 * resumes it at another parallelism. The output the two-phase file sink committed over both runs
 * equals a run that never stopped, record for record.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { committedFiles } from "./jobs/checkpointed.ts";
// eddyBin from the fixtures, which also give its children the eddy-source condition (else they load a stale dist/).
import { eddyBin } from "./fixtures.ts";

const jobFile = resolve(import.meta.dirname, "jobs/checkpointed.ts");
const RECORDS = 1_600_000;

test("eddy savepoint / stop --savepoint --dir / savepoint inspect / run --from-savepoint at another parallelism", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-savepoint-cli-"));
  const env = { ...process.env, EDDY_CHK_RECORDS: String(RECORDS), EDDY_HOME: join(dir, "home") };
  const eddy = (...args: string[]) => spawnSync(process.execPath, [eddyBin, ...args], { encoding: "utf8", env });
  try {
    const oracleOut = join(dir, "oracle");
    const oracle = spawnSync(process.execPath, [eddyBin, "run", jobFile, "--inline", "--no-control"], { encoding: "utf8", env: { ...env, EDDY_CHK_OUT_DIR: oracleOut } });
    assert.equal(oracle.status, 0, oracle.stderr);
    const expected = committedFiles(oracleOut, "counted");
    assert.equal(expected.length, RECORDS);

    const out = join(dir, "out");
    const common = ["--checkpoint-interval", "60000", "--checkpoint-dir", join(dir, "checkpoints"), "--savepoint-dir", join(dir, "savepoints"), "--no-progress"];
    const child = spawn(process.execPath, [eddyBin, "run", jobFile, "-p", "2", "--job-id", "sp-cli", ...common], {
      // The map sleeps ~1 ms per 250 records and subtask: the job runs for seconds, so the commands below reach it while it runs.
      env: { ...env, EDDY_CHK_OUT_DIR: out, EDDY_CHK_THROTTLE: "250" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    // Wait for the control API to be announced.
    while (!/control API on http:\/\/127\.0\.0\.1:\d+/.test(stderr)) {
      assert.equal(child.exitCode, null, `eddy run ended early:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const listed = eddy("list", "--json");
    assert.equal(listed.status, 0, listed.stderr);
    const jobs = listed.stdout.trim().split("\n").map((l) => JSON.parse(l) as { id: string; name: string; status: string });
    assert.deepEqual(jobs.map((j) => [j.id, j.status]), [["sp-cli", "running"]]);

    const taken = eddy("savepoint", "sp-cli");
    assert.equal(taken.status, 0, taken.stderr);
    assert.match(taken.stdout.trim(), /savepoints\/savepoint-sp-cli-\d+-[0-9a-f]{6}$/);

    const moved = join(dir, "kept");
    const stopped = eddy("stop", "sp-cli", "--savepoint", "--dir", moved);
    assert.equal(stopped.status, 0, stopped.stderr);
    const savepoint = stopped.stdout.trim();
    assert.ok(savepoint.startsWith(moved), savepoint);
    assert.equal(await exited, 0, stderr);
    const partial = committedFiles(out, "counted").length;
    assert.ok(partial < RECORDS, `stopped part-way: ${partial} of ${RECORDS} committed`);
    assert.equal(eddy("list", "--json").stdout, "", "a stopped job is no longer listed");

    const inspected = eddy("savepoint", "inspect", savepoint, "--json");
    assert.equal(inspected.status, 0, inspected.stderr);
    const report = JSON.parse(inspected.stdout) as { operators: { uid: string }[] };
    assert.ok(report.operators.some((o) => o.uid === "count-per-key"), inspected.stdout.slice(0, 500));

    const resumed = spawnSync(process.execPath, [eddyBin, "run", jobFile, "-p", "1", "--job-id", "sp-cli-resumed", "--from-savepoint", savepoint, ...common], {
      encoding: "utf8",
      env: { ...env, EDDY_CHK_OUT_DIR: out },
    });
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.deepEqual(committedFiles(out, "counted"), expected, "committed counts over both runs");
    assert.deepEqual(committedFiles(out, "windows"), committedFiles(oracleOut, "windows"), "committed windows over both runs");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
