/**
 * `eddy list / savepoint / stop / cancel / query` as separate processes against a control server:
 * one run in this process with a fake job (and, for query, a state server with a fake backend),
 * and one started by `eddy run`. EDDY_HOME is a temporary directory, so nothing here touches ~/.eddy.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  silentLogger,
  type ControlledJob,
  type SavepointResult,
  type StopOptions,
  listJobs,
  startControlServer,
  startStateServer,
  mapKeyOf,
  type MapKey,
  fakeQueryableJob,
  mapStateBackend,
} from "../packages/eddy/src/internal.ts";
// eddyBin from the fixtures, which also give its children the eddy-source condition (else they load a stale dist/).
import { eddyBin } from "./fixtures.ts";

const QUERY_TOKEN = "c".repeat(64);

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `eddy <args>` without blocking this process's event loop (the server answers from it). */
function eddy(home: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [eddyBin, ...args], { env: { ...process.env, EDDY_HOME: home }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** A job whose savepoints are real directories under `dir`, so the CLI can move them. */
function fakeJob(dir: string) {
  const calls = { stops: [] as StopOptions[], cancels: 0 };
  let taken = 0;
  const savepoint = async (): Promise<SavepointResult> => {
    const path = join(dir, `savepoint-${++taken}`);
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, "_metadata"), "{}");
    return { path, checkpointId: taken, bytes: 2 };
  };
  const job: ControlledJob = {
    id: "ctl-job",
    name: "Controlled",
    startedAtMs: Date.UTC(2024, 0, 2, 3, 4, 5),
    status: () => "running",
    savepoint,
    async stop(options) {
      calls.stops.push(options);
      return options.savepoint ? savepoint() : undefined;
    },
    cancel: () => void calls.cancels++,
  };
  return { job, calls };
}

test("eddy list, savepoint, stop and cancel talk to a job's control server; --dir moves the savepoint; usage errors exit 2", { timeout: 30_000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-control-cli-"));
  const { job, calls } = fakeJob(join(home, "job-savepoints"));
  const server = await startControlServer(job, { home, logger: silentLogger });
  try {
    // At most MAX_IN_FLIGHT (4) commands that call the server at a time.
    const [json, table, moved, stopped] = await Promise.all([
      eddy(home, "list", "--json"),
      eddy(home, "list"),
      eddy(home, "savepoint", "ctl-job", "--dir", join(home, "kept")),
      eddy(home, "stop", "ctl-job", "--savepoint", "--drain"),
    ]);
    assert.equal(json.status, 0, json.stderr);
    const lines = json.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 1);
    assert.deepEqual([lines[0]!.id, lines[0]!.name, lines[0]!.status, lines[0]!.pid], ["ctl-job", "Controlled", "running", process.pid]);
    assert.equal(table.status, 0, table.stderr);
    assert.match(table.stdout, /^ID +NAME +STATUS +IN\/S +OUT\/S +RESTARTS +LAST CHECKPOINT +PID +STARTED\n/);
    // A job the REST API does not observe answers its status only: the rest is "-".
    assert.match(table.stdout, new RegExp(`\\nctl-job +Controlled +running +- +- +- +- +${process.pid} +2024-01-02T03:04:05.000Z\\n$`));

    assert.equal(stopped.status, 0, stopped.stderr);
    assert.match(stopped.stdout, /^\/.*job-savepoints\/savepoint-\d\n$/, "the savepoint's path in the job's directory");
    assert.deepEqual(calls.stops, [{ savepoint: true, drain: true }]);
    assert.equal(moved.status, 0, moved.stderr);
    const movedPath = moved.stdout.trim();
    assert.match(movedPath, /kept\/savepoint-\d$/);
    assert.ok(existsSync(join(movedPath, "_metadata")), "the moved savepoint is complete");
    assert.equal(existsSync(join(home, "job-savepoints", movedPath.split("/").pop()!)), false, "and gone from the job's directory");

    const [cancelled, drainAlone, unknown, inspect] = await Promise.all([
      eddy(home, "cancel", "ctl-job"),
      eddy(home, "stop", "ctl-job", "--drain"),
      eddy(home, "cancel", "no-such-job"),
      eddy(home, "savepoint", "inspect", "some/dir"),
    ]);
    assert.equal(cancelled.status, 0, cancelled.stderr);
    assert.equal(calls.cancels, 1);
    assert.equal(drainAlone.status, 2);
    assert.match(drainAlone.stderr, /^eddy: --drain needs --savepoint/);
    assert.equal(unknown.status, 1);
    assert.equal(unknown.stderr, "eddy: no running job with id 'no-such-job'; running: ctl-job\n");
    // `savepoint inspect` reads a directory, never a job: a missing one is an error (exit 1).
    assert.equal(inspect.status, 1);
    assert.match(inspect.stderr, /^eddy: .*some\/dir/);
    assert.deepEqual(calls.stops.length, 1, "a usage error calls nothing");
  } finally {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
});

test("eddy run serves the control API until the job ends: registered while running, cancelled by eddy cancel, its registry entry removed", { timeout: 30_000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-control-run-"));
  const child = spawn(process.execPath, [eddyBin, "run", resolve(import.meta.dirname, "jobs/endless.ts"), "--inline"], {
    env: { ...process.env, EDDY_HOME: home },
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    let stderr = "";
    const started = new Promise<void>((resolve, reject) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (/web UI on http:\/\/127\.0\.0\.1:\d+\/ /.test(stderr)) resolve();
      });
      child.on("exit", () => reject(new Error(`eddy run ended before serving its control API:\n${stderr}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    await started;
    assert.match(stderr, new RegExp(`\\[eddy\\] job 'endless' \\(id endless\\) control API on \\S+, token in ${join(home, "jobs")}/endless\\.\\d+\\.token`));

    const listed = await listJobs(home);
    assert.deepEqual(
      listed.map((j) => [j.id, j.name, j.status, j.pid]),
      [["endless", "endless", "running", child.pid]],
    );
    // The UI's address, and `eddy ui` (the only running job, or named): a one-time login link.
    const ui = /\[eddy\] web UI on (http:\/\/127\.0\.0\.1:\d+)\/ \(log in with: eddy ui endless\)\n/.exec(stderr);
    assert.ok(ui !== null, stderr);
    const [byDefault, named, unknown] = await Promise.all([eddy(home, "ui"), eddy(home, "ui", "endless"), eddy(home, "ui", "nope")]);
    for (const run of [byDefault, named]) {
      assert.equal(run.status, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`^${ui[1]}/ui/login\\?nonce=[A-Za-z0-9_-]{43}\n$`));
      assert.match(run.stderr, /works? once|logs in once/);
    }
    assert.notEqual(byDefault.stdout, named.stdout, "a new nonce each time");
    const login = await fetch(named.stdout.trim(), { redirect: "manual" });
    assert.equal(login.status, 303);
    assert.match(login.headers.get("set-cookie") ?? "", /HttpOnly; SameSite=Strict/);
    assert.equal((await fetch(named.stdout.trim(), { redirect: "manual" })).status, 403, "once only");
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /no running job with id 'nope'; running: endless/);
    assert.equal((await eddy(home, "ui", "a", "b")).status, 2);
    const cancelled = await eddy(home, "cancel", "endless");
    assert.equal(cancelled.status, 0, cancelled.stderr);
    assert.equal(await exited, 0, "cancelled on purpose: not a failure");
    assert.match(stderr, /\[eddy\] job 'endless' cancelled\n/);
    assert.deepEqual(readdirSync(join(home, "jobs")), [], "registry entry and token file removed");
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(home, { recursive: true, force: true });
  }
});

test("Ctrl-C (SIGINT) cancels eddy run's job, removes its registry entry and exits 130", { timeout: 30_000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-control-sigint-"));
  const child = spawn(process.execPath, [eddyBin, "run", resolve(import.meta.dirname, "jobs/endless.ts"), "--inline"], {
    env: { ...process.env, EDDY_HOME: home },
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    let stderr = "";
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (/control API on /.test(stderr)) resolve();
      }),
    );
    child.kill("SIGINT");
    assert.equal(await exited, 130, stderr);
    assert.match(stderr, /SIGINT: cancelling job 'endless'/);
    assert.deepEqual(readdirSync(join(home, "jobs")), [], "registry entry and token file removed");
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(home, { recursive: true, force: true });
  }
});

test("eddy query prints a value as JSON, 'absent' for a missing key, {found, value} with --json, and clear errors", { timeout: 30_000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-query-cli-"));
  const values = new Map<MapKey, unknown>([["alice", 5], [42, { n: 7n, at: new Date(0) }], [mapKeyOf(["a", 1]), "pair"]]);
  const state = await startStateServer({ token: QUERY_TOKEN, logger: silentLogger, backend: mapStateBackend({ counts: values }) });
  const job = fakeQueryableJob({
    id: "q-job",
    token: QUERY_TOKEN,
    states: () => [{ name: "counts", operatorId: "c", operatorName: "Count", maxParallelism: 128, parallelism: 1, generation: 1, servers: [state.url] }],
  });
  const control = await startControlServer(job, { home, logger: silentLogger });
  try {
    // At most MAX_IN_FLIGHT (4) commands that call the control API at a time (an unknown job and
    // a usage error do not call it).
    const [alice, number, pair, quoted, unknownJob, missing] = await Promise.all([
      eddy(home, "query", "q-job", "counts", "alice"),
      eddy(home, "query", "q-job", "counts", "42"),
      eddy(home, "query", "q-job", "counts", '["a",1]'),
      eddy(home, "query", "q-job", "counts", '"42"'),
      eddy(home, "query", "other-job", "counts", "alice"),
      eddy(home, "query", "q-job", "counts"),
    ]);
    assert.deepEqual([alice.status, alice.stdout], [0, "5\n"], alice.stderr);
    assert.deepEqual([number.status, number.stdout], [0, '{"n":{"$bigint":"7"},"at":{"$date":0}}\n'], number.stderr);
    assert.deepEqual([pair.status, pair.stdout], [0, '"pair"\n'], pair.stderr);
    assert.deepEqual([quoted.status, quoted.stdout], [0, "absent\n"], "the string '42' is not the number 42");

    const [json, absentJson, unknownState, badKey] = await Promise.all([
      eddy(home, "query", "q-job", "counts", "alice", "--json"),
      eddy(home, "query", "q-job", "counts", "nobody", "--json"),
      eddy(home, "query", "q-job", "nope", "alice"),
      eddy(home, "query", "q-job", "counts", "true"),
    ]);
    assert.deepEqual([json.status, json.stdout], [0, '{"found":true,"value":5}\n'], json.stderr);
    assert.deepEqual([absentJson.status, absentJson.stdout], [0, '{"found":false}\n'], absentJson.stderr);
    assert.equal(unknownState.status, 1);
    assert.match(unknownState.stderr, /^eddy: no queryable state 'nope' in this job \(it has: counts\)\n$/);
    assert.equal(badKey.status, 1);
    assert.match(badKey.stderr, /quote it as JSON/);
    assert.equal(unknownJob.status, 1);
    assert.match(unknownJob.stderr, /no running job with id 'other-job'; running: q-job/);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /needs all three/);
  } finally {
    await control.close();
    await state.close();
    rmSync(home, { recursive: true, force: true });
  }
});
