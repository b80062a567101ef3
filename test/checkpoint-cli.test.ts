/**
 * Whole-process crash: `eddy run` with checkpoints is killed with SIGKILL mid-run, then resumed
 * with `--from-checkpoint` from the newest complete checkpoint; the output its two-phase file
 * sink committed over both runs equals the failure-free run, record for record. Before that
 * resume, one round resumes from the same checkpoint with a task file damaged: the run must fail
 * naming the file and commit nothing, never fall back to an older checkpoint (whose replay would
 * commit the newest one's output again; issue 33), whether the checkpoint is named
 * (`--from-checkpoint`) or found (`--from-latest-checkpoint`, which then resumes the job).
 * Then the same crash on the disk backend with local recovery and a cache of one key (so keys are
 * written to the store, and must be rolled back, all the time): resumed with `--from-checkpoint`,
 * each of the four keyed subtasks rolls its own store back (the log says so), and the committed
 * output equals the failure-free run; it does not when the store's before-images are not kept.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { committedFiles, damageTaskFile, latestCheckpoint } from "./jobs/checkpointed.ts";
import { EDDY_BIN, killWhenReady } from "./fixtures.ts";

const eddyBin = EDDY_BIN;
const jobFile = resolve(import.meta.dirname, "jobs/checkpointed.ts");
/** Long enough (a few seconds) to be killed mid-run after some checkpoints completed. */
const RECORDS = 1_600_000;




/**
 * The failure-free output (inline, no checkpoints), then `eddy run` of the job with `extra`
 * arguments killed with SIGKILL once two checkpoints completed and some output is committed.
 */
async function killedMidRun(dir: string, extra: readonly string[]) {
  const env = { ...process.env, EDDY_CHK_RECORDS: String(RECORDS) };
  // The oracle: the same job without failures (inline, no checkpoints), into its own directory.
  const oracleOut = join(dir, "oracle");
  const oracle = spawnSync(process.execPath, [eddyBin, "run", jobFile, "--inline"], {
    encoding: "utf8",
    env: { ...env, EDDY_CHK_OUT_DIR: oracleOut },
  });
  assert.equal(oracle.status, 0, oracle.stderr);
  const expected = { counted: committedFiles(oracleOut, "counted"), windows: committedFiles(oracleOut, "windows") };
  assert.equal(expected.counted.length, RECORDS);

  const out = join(dir, "out");
  const checkpoints = join(dir, "checkpoints");
  // The interval as a configuration key (-D), the rest as flags: both paths of the CLI.
  const args = ["run", jobFile, "-p", "2", "-D", "execution.checkpointing.interval=50ms", "--checkpoint-dir", checkpoints, "--job-id", "crash", "--no-progress", ...extra];
  // Kill it once two checkpoints have completed and some output is committed.
  const { killed, stderr } = await killWhenReady(args, { ...env, EDDY_CHK_OUT_DIR: out }, () => {
    const latest = latestCheckpoint(join(checkpoints, "crash"));
    return latest !== undefined && Number(/chk-(\d+)$/.exec(latest)![1]) >= 2 && committedFiles(out, "counted").length > 0;
  });
  assert.ok(killed, `the job finished before it could be killed; stderr:\n${stderr}`);
  const partial = committedFiles(out, "counted").length;
  assert.ok(partial > 0 && partial < RECORDS, `partial output before the crash: ${partial}`);
  const from = latestCheckpoint(join(checkpoints, "crash"))!;
  const rerun = (...more: string[]) => spawnSync(process.execPath, [eddyBin, ...args, ...more], { encoding: "utf8", env: { ...env, EDDY_CHK_OUT_DIR: out } });
  return { expected, out, from, partial, rerun };
}

test("eddy run killed with SIGKILL, resumed with --from-checkpoint: committed output equals the failure-free run", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-crash-"));
  try {
    const { expected, out, from, partial, rerun } = await killedMidRun(dir, []);
    const damaged = damageTaskFile(from);
    const refused = rerun("--from-checkpoint", from);
    assert.equal(refused.status, 1, `a damaged checkpoint named by the user fails the run:\n${refused.stderr}`);
    assert.ok(refused.stderr.includes(damaged.file), `the error names the damaged file:\n${refused.stderr}`);
    assert.doesNotMatch(refused.stderr, /skipping checkpoint|restoring/, "no fallback to another checkpoint");
    assert.equal(committedFiles(out, "counted").length, partial, "nothing committed by the refused run");
    // --from-latest-checkpoint finds the same checkpoint, and refuses it too (no fallback).
    const refusedLatest = rerun("--from-latest-checkpoint");
    assert.equal(refusedLatest.status, 1, refusedLatest.stderr);
    assert.ok(refusedLatest.stderr.includes(damaged.file), `the error names the damaged file:\n${refusedLatest.stderr}`);
    assert.doesNotMatch(refusedLatest.stderr, /skipping checkpoint|restoring/, "no fallback to another checkpoint");
    assert.equal(committedFiles(out, "counted").length, partial, "nothing committed by the refused run");
    damaged.repair();

    // Resumed by --from-latest-checkpoint (not spelling out chk-<n>): the newest complete one.
    const resumed = rerun("--from-latest-checkpoint");
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.ok(resumed.stderr.includes(`[eddy] resuming from ${from}\n`), resumed.stderr);
    assert.match(resumed.stderr, /checkpoints: \d+ completed/);
    assert.deepEqual(committedFiles(out, "counted"), expected.counted, "committed counts over both runs");
    assert.deepEqual(committedFiles(out, "windows"), expected.windows, "committed windows over both runs");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the disk backend with local recovery: eddy run killed with SIGKILL, resumed with --from-checkpoint, rolls each subtask's store back; committed output equals the failure-free run", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-crash-local-"));
  try {
    const disk = ["-D", "state.backend=disk", "-D", `state.backend.disk.dir=${join(dir, "state")}`, "-D", "state.backend.disk.cache-size=1", "-D", "state.backend.disk.local-recovery=true"];
    const { expected, out, from, rerun } = await killedMidRun(dir, disk);
    const resumed = rerun("--from-checkpoint", from, "--log-level", "info");
    assert.equal(resumed.status, 0, resumed.stderr);
    // Each keyed subtask (two keyed operators at parallelism 2) came back from its own store.
    const local = resumed.stderr.split("\n").filter((line) => line.includes("keyed state restored from the local store"));
    assert.equal(local.length, 4, resumed.stderr);
    assert.doesNotMatch(resumed.stderr, /keyed state restored from the checkpoint's files/);
    assert.deepEqual(committedFiles(out, "counted"), expected.counted, "committed counts over both runs");
    assert.deepEqual(committedFiles(out, "windows"), expected.windows, "committed windows over both runs");
    // The resumed run finished: its stores went with it (a killed process leaves them; that is what the resume used).
    assert.match(resumed.stderr, /removed the job's local state stores: it ended/);
    assert.deepEqual(readdirSync(join(dir, "state")), [], "no store outlives the job");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
