/**
 * Issue 33: connections to a job's control API need no token, and each holds one of the job's
 * file descriptors. `eddy run` with checkpoints runs under `ulimit -n 256` while this process
 * keeps more idle connections than that open to its control API; the connection cap keeps the
 * API's share bounded, so the job's checkpoints go on completing (without it they fail with
 * EMFILE and the job restarts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { latestCheckpoint } from "./jobs/checkpointed.ts";
// eddyBin from the fixtures, which also give its children the eddy-source condition (else they load a stale dist/).
import { eddyBin } from "./fixtures.ts";

const jobFile = resolve(import.meta.dirname, "jobs/endless.ts");
/** The job's RLIMIT_NOFILE (soft and hard: Node raises its soft limit to the hard one). */
const FD_LIMIT = 256;
/** Idle connections kept open at once, well past FD_LIMIT. */
const FLOOD_CONNECTIONS = 400;
const FLOOD_MS = 3_000;
/** A closed flood connection is opened again after this long (keeps the flood up without spinning). */
const REOPEN_MS = 100;
const CHECKPOINT_INTERVAL_MS = 100;

const checkpointNumber = (dir: string | undefined): number => (dir === undefined ? 0 : Number(/chk-(\d+)$/.exec(dir)![1]));

/**
 * Keeps `connections` connections to `url` open, each sending nothing, until stopped; counts those
 * the server closed within 500 ms of opening without a byte of answer (refused).
 */
function flood(url: string, connections: number): { stop(): void; readonly refused: number } {
  const { hostname, port } = new URL(url);
  const open = new Set<Socket>();
  let stopped = false;
  let refused = 0;
  const openOne = (): void => {
    if (stopped) return;
    const socket = connect(Number(port), hostname);
    const openedAt = performance.now();
    let answered = false;
    open.add(socket);
    socket.on("data", () => (answered = true));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      open.delete(socket);
      if (!answered && performance.now() - openedAt < 500) refused++;
      if (!stopped) setTimeout(openOne, REOPEN_MS);
    });
  };
  for (let i = 0; i < connections; i++) openOne();
  return {
    stop() {
      stopped = true;
      for (const socket of open) socket.destroy();
    },
    get refused() {
      return refused;
    },
  };
}

test(`a job under ulimit -n ${FD_LIMIT} whose control API is flooded with ${FLOOD_CONNECTIONS} idle connections completes its checkpoints`, { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-flood-"));
  const checkpoints = join(dir, "checkpoints");
  const child = spawn(
    "bash",
    ["-c", `ulimit -n ${FD_LIMIT} && exec "$0" "$@"`, process.execPath, eddyBin, "run", jobFile, "--checkpoint-dir", checkpoints, "--checkpoint-interval", String(CHECKPOINT_INTERVAL_MS), "--job-id", "flooded", "--no-progress"],
    { env: { ...process.env, EDDY_HOME: join(dir, "home") }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  try {
    let api: RegExpExecArray | null = null;
    while ((api = /control API on (\S+), token in (\S+)\n/.exec(stderr)) === null) {
      assert.equal(child.exitCode, null, `eddy run ended before serving its control API:\n${stderr}`);
      await delay(20);
    }
    const [, url, tokenFile] = api;
    const jobDir = join(checkpoints, "flooded");
    while (latestCheckpoint(jobDir) === undefined) {
      assert.equal(child.exitCode, null, `eddy run ended before its first checkpoint:\n${stderr}`);
      await delay(20);
    }

    const before = checkpointNumber(latestCheckpoint(jobDir));
    const connections = flood(url!, FLOOD_CONNECTIONS);
    await delay(FLOOD_MS);
    connections.stop();
    const during = checkpointNumber(latestCheckpoint(jobDir)) - before;

    assert.equal(child.exitCode, null, `the job ended during the flood:\n${stderr}`);
    assert.doesNotMatch(stderr, /EMFILE|checkpoint failed|restarting/, "no checkpoint failed for want of descriptors");
    assert.ok(during >= 5, `${during} checkpoints completed during ${FLOOD_MS} ms of flood (one every ${CHECKPOINT_INTERVAL_MS} ms)`);
    assert.ok(connections.refused > 0, "the flood went past the connection cap");

    // The flood's connections are gone: the API answers again (once the server has seen them close).
    const token = readFileSync(tokenFile!, "utf8");
    let cancelled: number | undefined;
    for (let attempt = 0; attempt < 50 && cancelled !== 202; attempt++) {
      if (attempt > 0) await delay(50);
      cancelled = await fetch(`${url}/v1/job/cancel`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: "{}" }).then(
        (res) => res.status,
        () => undefined,
      );
    }
    assert.equal(cancelled, 202);
    assert.equal(await exited, 0, stderr);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
