/**
 * Queryable state (issue 8) against a running job: the job of test/jobs/queryable.ts runs at
 * parallelism 2 on worker threads, with its control API; a client (`eddy/query`) reads counts
 * for keys held by both workers while it runs, after a failure and restore, and after a rescale
 * through a savepoint. Reads are checked against a recomputation: within a run they never go
 * back, never exceed the key's total, and never show a half-updated value; once every record is
 * processed they equal the totals.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EddyError } from "eddy";
import { runJob, type JobHandle, type RunOptions } from "eddy/testing";
import { createQueryClient } from "eddy/query";
import queryable, { KEYS, RECORDS, type Counter } from "./jobs/queryable.ts";
import {
  startControlServer,
  silentLogger,
  assignToKeyGroup,
  computeOperatorIndexForKeyGroup,
} from "../packages/eddy/src/internal.ts";

/** Each key's number of records. */
const totals = Array.from({ length: KEYS }, (_, key) => Math.floor((RECORDS - key) / KEYS) + (key === 0 ? 0 : 1));
const keys = Array.from({ length: KEYS }, (_, k) => k);

async function withJob<T>(home: string, options: RunOptions, env: Record<string, string>, body: (job: JobHandle) => Promise<T>): Promise<T> {
  Object.assign(process.env, env);
  const job = runJob(queryable, { mode: "threads", parallelism: 2, metricsIntervalMs: 20, ...options });
  const control = await startControlServer(job, { home, logger: silentLogger });
  try {
    return await body(job);
  } finally {
    await control.close();
    for (const k of Object.keys(env)) delete process.env[k];
  }
}

/** Reads every key until `done()`; checks each read against the recomputation; returns the last values. */
async function readWhile(client: ReturnType<typeof createQueryClient>, jobId: string, done: (last: readonly (number | undefined)[]) => boolean): Promise<{ reads: number; last: (number | undefined)[] }> {
  const last: (number | undefined)[] = new Array(KEYS).fill(undefined);
  let reads = 0;
  for (;;) {
    const finished = done(last);
    let values: (Counter | undefined)[];
    try {
      values = await client.getMany<Counter>(jobId, "counts", keys);
    } catch (e) {
      // Between a failure and the restarted job serving again, reads fail with a retryable error:
      // the server is gone (UNREACHABLE), not serving, or not registered again yet.
      if (e instanceof EddyError && ["NOT_SERVING", "NOT_READY", "UNKNOWN_STATE", "STATE_SERVER_UNREACHABLE"].includes(e.code)) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      throw e;
    }
    reads += values.length;
    values.forEach((v, key) => {
      if (v === undefined) return;
      assert.equal(v.count, v.check, `key ${key}: a torn read ${JSON.stringify(v)}`);
      assert.ok(v.count <= totals[key]!, `key ${key}: ${v.count} > total ${totals[key]}`);
      last[key] = v.count;
    });
    if (finished) return { reads, last };
  }
}

test("a client reads counts from both workers while the job runs; reads are never torn and end at the totals", { timeout: 120_000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-query-"));
  const client = createQueryClient({ home });
  try {
    await withJob(home, { checkpointDir: join(home, "checkpoints"), jobId: "q-live" }, { EDDY_Q_HOLD: "1" }, async (job) => {
      // Monotonic per key within the run.
      const seen: number[] = new Array(KEYS).fill(0);
      let rounds = 0;
      while (job.sourceRecords < RECORDS) {
        const values = await client.getMany<Counter>("q-live", "counts", keys).catch((e: unknown) => {
          if (e instanceof EddyError && (e.code === "UNKNOWN_STATE" || e.code === "NOT_READY")) return undefined; // not registered yet
          throw e;
        });
        if (values === undefined) continue;
        rounds++;
        values.forEach((v, key) => {
          if (v === undefined) return;
          assert.equal(v.count, v.check, `torn read of key ${key}`);
          assert.ok(v.count >= seen[key]!, `key ${key} went back from ${seen[key]} to ${v.count}`);
          assert.ok(v.count <= totals[key]!);
          seen[key] = v.count;
        });
      }
      assert.ok(rounds > 3, `read while running (${rounds} rounds)`);
      // Both workers serve: the location lists a server per subtask, and keys of both are read.
      const [location] = job.queryableStates().filter((l) => l.name === "counts");
      assert.equal(location?.servers.filter((s) => s !== undefined).length, 2);
      const owners = new Set(keys.map((k) => computeOperatorIndexForKeyGroup(location!.maxParallelism, 2, assignToKeyGroup(k, location!.maxParallelism))));
      assert.deepEqual([...owners].sort(), [0, 1]);
      // Everything read (the source holds at its end): every count reaches its total.
      for (;;) {
        const values = await client.getMany<Counter>("q-live", "counts", keys);
        if (values.every((v, key) => v?.count === totals[key])) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // asQueryableState: the latest record number of each key.
      const latest = await client.getMany<number>("q-live", "latest", keys);
      latest.forEach((n, key) => assert.equal(n! % KEYS, key, `latest of key ${key}`));
      assert.equal(await client.get("q-live", "counts", 10_000), undefined, "a key never seen is absent, not an error");
      await assert.rejects(client.get("q-live", "no-such-state", 1), (e: unknown) => e instanceof EddyError && e.code === "UNKNOWN_STATE");
      await assert.rejects(client.get("no-such-job", "counts", 1), (e: unknown) => e instanceof EddyError && e.code === "UNKNOWN_JOB");
      job.cancel();
      await job.done.catch(() => undefined);
    });
  } finally {
    client.close();
    rmSync(home, { recursive: true, force: true });
  }
});

test("reads go on after a failure and restore (never torn, even from the function that threw), and after a rescale through a savepoint", { timeout: 180_000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-query-restore-"));
  const client = createQueryClient({ home });
  try {
    const checkpointDir = join(home, "checkpoints");
    let savepoint = "";
    await withJob(
      home,
      { checkpointDir, savepointDir: join(home, "savepoints"), jobId: "q-restore", restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 50 } },
      { EDDY_Q_HOLD: "1", EDDY_Q_FAULT_AT: String(RECORDS / 2), EDDY_Q_MARKER: join(home, "fault") },
      async (job) => {
        const { last } = await readWhile(client, "q-restore", (last) => job.restarts > 0 && last.every((v, k) => v === totals[k]));
        assert.equal(job.restarts, 1, "the job failed once and restarted");
        assert.deepEqual(last, totals, "after the restore, counts reach the totals exactly once each");
        savepoint = (await job.stop({ savepoint: true }))!.path;
        await job.done;
      },
    );
    // Rescaled to 3 through the savepoint: the client finds the new servers and reads the same totals.
    await withJob(home, { parallelism: 3, checkpointDir, jobId: "q-restore", fromSavepoint: savepoint }, { EDDY_Q_HOLD: "1" }, async (job) => {
      const { last } = await readWhile(client, "q-restore", (last) => last.every((v, k) => v === totals[k]));
      assert.deepEqual(last, totals);
      assert.equal(job.queryableStates().find((l) => l.name === "counts")?.servers.length, 3);
      job.cancel();
      await job.done.catch(() => undefined);
    });
  } finally {
    client.close();
    rmSync(home, { recursive: true, force: true });
  }
});
