/**
 * Savepoints and rescaling (issue 7), modelled on Flink's RescalingITCase: the job of
 * test/jobs/rescalable.ts runs, is stopped with a savepoint part-way, and resumes from it at
 * another parallelism — 1 → 2 → 4 → 3 → 1, with max parallelism 13 and 128. What every run
 * committed, put together, must equal a failure-free run: every key's count, every timer fired
 * exactly once (on the subtask its key group maps to), every record read exactly once (the
 * operator list state that sums them is divided, never duplicated), and the union list state
 * given whole to every subtask.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineJob } from "eddy";
import { collectSink, runJob, type RunOptions } from "eddy/testing";
import rescalable, { BUCKET, KEYS, RECORDS, type Markers, type Tally, type TimerFired } from "./jobs/rescalable.ts";
import { assignToKeyGroup, computeOperatorIndexForKeyGroup } from "../packages/eddy/src/internal.ts";
import { openSavepoint } from "eddy/savepoint";

interface RunOutput {
  readonly timers: TimerFired[];
  readonly tallies: Tally[];
  readonly markers: Markers[];
  readonly sourceRecords: number;
  readonly savepoint: string | undefined;
}

/**
 * Runs the job; with `stopAfter`, stops it with a savepoint once its sources read that many
 * records (the job is paced, so it is still running then).
 */
async function run(options: RunOptions, env: Record<string, string>, stopAfter?: number): Promise<RunOutput> {
  Object.assign(process.env, env);
  try {
    const job = runJob(rescalable, options);
    let savepoint: string | undefined;
    if (stopAfter !== undefined) {
      while (job.sourceRecords < stopAfter) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (job.status() !== "running") break;
      }
      const result = await job.stop({ savepoint: true });
      savepoint = result?.path;
      assert.ok(savepoint !== undefined, "stop with a savepoint returns its path");
    }
    await job.done;
    assert.equal(job.status(), stopAfter === undefined ? "finished" : "stopped");
    return {
      timers: job.collected<TimerFired>("timers"),
      tallies: job.collected<Tally>("tallies"),
      markers: job.collected<Markers>("markers"),
      sourceRecords: job.sourceRecords,
      savepoint,
    };
  } finally {
    for (const k of Object.keys(env)) delete process.env[k];
  }
}

/** What a failure-free run commits: per key, one timer per bucket its records fall in, with the final count. */
function expectedTimers(): Map<string, number> {
  const counts = new Map<number, number>();
  const buckets = new Map<number, Set<number>>();
  for (let n = 1; n <= RECORDS; n++) {
    const key = n % KEYS;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    let b = buckets.get(key);
    if (b === undefined) buckets.set(key, (b = new Set()));
    b.add(Math.ceil(n / BUCKET) * BUCKET);
  }
  const out = new Map<string, number>();
  for (const [key, set] of buckets) for (const ts of set) out.set(`${key}@${ts}`, counts.get(key)!);
  return out;
}

for (const maxParallelism of [13, 128]) {
  test(`rescale chain 1 → 2 → 4 → 3 → 1 through savepoints, max parallelism ${maxParallelism}`, { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "eddy-savepoints-"));
    try {
      const chain = [1, 2, 4, 3, 1];
      const stopEvery = Math.floor(RECORDS / 8);
      let from: string | undefined;
      const timers: TimerFired[] = [];
      const markerRuns: Markers[][] = [];
      let lastTallies: Tally[] = [];
      let read = 0;
      for (let i = 0; i < chain.length; i++) {
        const parallelism = chain[i]!;
        const last = i === chain.length - 1;
        const out = await run(
          {
            mode: parallelism === 1 ? "inline" : "threads",
            parallelism,
            // The last run restores into a job without checkpointing, as Flink allows (issue 32):
            // no periodic checkpoints, the final one commits its sinks.
            checkpointing: last ? false : { intervalMs: 60_000 },
            // sourceRecords of a threaded run comes with the workers' metrics.
            metricsIntervalMs: 10,
            checkpointDir: join(dir, "checkpoints"),
            savepointDir: join(dir, "savepoints"),
            jobId: `rescalable-${i}`,
            ...(from === undefined ? {} : { fromSavepoint: from }),
          },
          { EDDY_SP_MAX_PARALLELISM: String(maxParallelism), EDDY_SP_RUN: `run${i}` },
          last ? undefined : stopEvery,
        );
        read += out.sourceRecords;
        timers.push(...out.timers);
        markerRuns.push(out.markers.filter((m) => m.marker.endsWith(`-run${i}`)));
        // A restored two-phase sink commits the savepoint's transactions again (idempotently in a
        // real sink; the test sink keeps no memory across runs): keep each run's own output.
        const own = out.tallies.filter((t) => t.run === `run${i}`);
        if (own.length > 0) lastTallies = own;
        if (!last) {
          // Savepoints are relocatable: resume from a copy in another directory.
          const moved = join(dir, `moved-${i}`);
          cpSync(out.savepoint!, moved, { recursive: true });
          from = moved;
        }
        // Each run's tasks place each key on the subtask its key group maps to.
        for (const t of out.timers) {
          const owner = computeOperatorIndexForKeyGroup(maxParallelism, parallelism, assignToKeyGroup(t.key, maxParallelism));
          assert.equal(t.subtask, owner, `key ${t.key} fired on subtask ${t.subtask} of ${parallelism}, its key group belongs to ${owner}`);
        }
      }
      // Every record read exactly once over all runs.
      assert.equal(read, RECORDS, "records read over all runs");
      // Every timer fired exactly once, after every record of its key was counted.
      const fired = new Map<string, number>();
      for (const t of timers) {
        const id = `${t.key}@${t.timestamp}`;
        assert.ok(!fired.has(id), `timer ${id} fired twice`);
        fired.set(id, t.count);
      }
      assert.deepEqual(fired, expectedTimers());
      // The operator list state holding the sums was divided among subtasks, never duplicated:
      // the last tally of each final subtask adds up to the sum of every record number.
      const finalBySubtask = new Map<number, number>();
      for (const t of lastTallies) finalBySubtask.set(t.subtask, t.total);
      assert.equal([...finalBySubtask.values()].reduce((a, b) => a + b, 0), (RECORDS * (RECORDS + 1)) / 2);
      // Union list state: every subtask of a run restored the markers of every subtask of all runs before.
      const seen: string[] = [];
      for (let i = 0; i < markerRuns.length; i++) {
        const runMarkers = markerRuns[i]!;
        for (const m of runMarkers) assert.deepEqual(m.restored, [...seen].sort(), `run ${i}: ${m.marker} restored the union of all earlier markers`);
        seen.push(...runMarkers.map((m) => m.marker));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("stop with a savepoint and drain: event time ends first, so every timer fires before the savepoint, which holds none", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-drain-"));
  try {
    const job = runJob(rescalable, {
      mode: "threads",
      parallelism: 2,
      metricsIntervalMs: 10,
      checkpointing: { intervalMs: 60_000 },
      checkpointDir: join(dir, "checkpoints"),
      savepointDir: join(dir, "savepoints"),
      jobId: "drained",
    });
    while (job.sourceRecords < RECORDS / 4) await new Promise((resolve) => setTimeout(resolve, 10));
    const savepoint = await job.stop({ savepoint: true, drain: true });
    await job.done;
    assert.equal(job.status(), "stopped");
    const read = job.sourceRecords;
    assert.ok(read < RECORDS, "stopped part-way");
    // Every key with records got its timers fired, with the count of every record read.
    const timers = job.collected<TimerFired>("timers");
    const counts = new Map<number, number>();
    for (const t of timers) counts.set(t.key, Math.max(counts.get(t.key) ?? 0, t.count));
    assert.equal([...counts.values()].reduce((a, b) => a + b, 0), read, "the last timer of each key saw all its records");
    const reader = await openSavepoint(savepoint!.path);
    assert.deepEqual([...reader.timers("counter")], [], "no timer left in the savepoint");
    assert.equal([...reader.keyedState("counter", "count")].reduce((n, e) => n + (e.value as number), 0), read, "the counts are in it");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a savepoint taken while the job goes on; the job then finishes normally", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-savepoint-"));
  try {
    const job = runJob(rescalable, {
      mode: "inline",
      checkpointing: { intervalMs: 60_000 },
      checkpointDir: join(dir, "checkpoints"),
      jobId: "on",
    });
    while (job.sourceRecords < RECORDS / 4) await new Promise((resolve) => setTimeout(resolve, 10));
    const savepoint = await job.savepoint({ dir: join(dir, "mine") });
    assert.ok(savepoint.path.startsWith(join(dir, "mine")), savepoint.path);
    assert.ok(savepoint.bytes > 0);
    await job.done;
    assert.equal(job.status(), "finished");
    assert.equal(job.sourceRecords, RECORDS, "the job read everything: a savepoint does not stop it");
    const reader = await openSavepoint(savepoint.path);
    assert.equal(reader.manifest.isSavepoint, true);
    const counted = [...reader.keyedState("counter", "count")].reduce((n, e) => n + (e.value as number), 0);
    assert.ok(counted > 0 && counted < RECORDS, `the savepoint holds the counts when it was taken (${counted})`);
    await assert.rejects(job.savepoint(), /is finished: no savepoint/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("savepoints need checkpointing, and the exactly-once mode", async () => {
  const off = runJob(rescalable, { mode: "inline", checkpointing: false });
  await assert.rejects(off.savepoint(), /runs without checkpointing/);
  off.cancel();
  await assert.rejects(off.done, /cancelled/);
  const dir = mkdtempSync(join(tmpdir(), "eddy-savepoint-alo-"));
  try {
    const alo = runJob(rescalable, { mode: "inline", checkpointing: { intervalMs: 60_000, mode: "at-least-once" }, checkpointDir: dir });
    while (alo.sourceRecords === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await assert.rejects(alo.savepoint(), /at-least-once/);
    alo.cancel();
    await assert.rejects(alo.done, /cancelled/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("restoring above the savepoint's max parallelism, or with another max parallelism, is refused clearly; an unset one is kept", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-savepoint-maxp-"));
  try {
    process.env.EDDY_SP_MAX_PARALLELISM = "13";
    const job = runJob(rescalable, { mode: "inline", checkpointing: { intervalMs: 60_000 }, checkpointDir: join(dir, "checkpoints"), savepointDir: dir, jobId: "maxp" });
    while (job.sourceRecords < RECORDS / 8) await new Promise((resolve) => setTimeout(resolve, 10));
    const savepoint = (await job.stop({ savepoint: true }))!.path;
    await job.done;
    const restore = (options: RunOptions) =>
      runJob(rescalable, { mode: "inline", checkpointing: { intervalMs: 60_000 }, checkpointDir: join(dir, "checkpoints"), restartStrategy: { type: "none" }, fromSavepoint: savepoint, ...options });
    assert.throws(() => restore({ parallelism: 14 }), /parallelism 14 exceeds maxParallelism 13/);
    process.env.EDDY_SP_MAX_PARALLELISM = "16";
    await assert.rejects(restore({ parallelism: 2 }).done, /uid 'counter'\) has keyed state for max parallelism 13.*runs with max parallelism 16/);
    // A job that does not set its max parallelism keeps the savepoint's (the default at
    // parallelism 3 would be 128, where the state cannot go).
    process.env.EDDY_SP_MAX_PARALLELISM = "unset";
    const resumed = restore({ parallelism: 3, mode: "threads" });
    assert.equal(resumed.plan.nodes.find((n) => n.operatorId === "counter")!.maxParallelism, 13);
    await resumed.done;
    assert.equal(job.sourceRecords + resumed.sourceRecords, RECORDS, "every record read once over both runs");
  } finally {
    delete process.env.EDDY_SP_MAX_PARALLELISM;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a job's start removes the temporary directories of its savepoints a crash left behind, and nothing else", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-savepoint-tmp-"));
  try {
    const savepoints = join(dir, "savepoints");
    mkdirSync(savepoints);
    // What a kill during `writeSnapshotDirectory` leaves: `_<savepoint name>.<uuid>.tmp`, half written.
    const leftovers = [`_savepoint-tidy-7-0a1b2c.${randomUUID()}.tmp`, `_savepoint-tidy-12-ffffff.${randomUUID()}.tmp`];
    for (const name of leftovers) {
      mkdirSync(join(savepoints, name));
      writeFileSync(join(savepoints, name, "task-0-0.snap"), "half");
    }
    const outside = join(dir, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "precious"), "");
    const kept = [
      "savepoint-tidy-7-0a1b2c", // a complete savepoint
      `_savepoint-tidy-extra-7-0a1b2c.${randomUUID()}.tmp`, // another job's (job id "tidy-extra")
      `_savepoint-other-7-0a1b2c.${randomUUID()}.tmp`,
      "_savepoint-tidy-7-0a1b2c.tmp", // not a name Eddy gives
      `_savepoint-tidy-7-0a1b2c.${randomUUID()}.tmp.bak`,
      `_savepoint-tidy-7-0A1B2C.${randomUUID()}.tmp`,
    ];
    for (const name of kept) mkdirSync(join(savepoints, name));
    const file = `_savepoint-tidy-8-0a1b2c.${randomUUID()}.tmp`; // a file of the right name: not what Eddy left
    writeFileSync(join(savepoints, file), "");
    const link = `_savepoint-tidy-9-0a1b2c.${randomUUID()}.tmp`; // never followed
    symlinkSync(outside, join(savepoints, link));

    const logged: { message: string; fields: unknown }[] = [];
    const log = (message: string, fields?: unknown): void => void logged.push({ message, fields });
    const tidy = defineJob("tidy", (env) => env.fromSequence(1, 10).uid("numbers").sinkTo(collectSink("out")));
    const job = runJob(tidy, {
      mode: "inline",
      checkpointing: { intervalMs: 60_000 },
      checkpointDir: join(dir, "checkpoints"),
      savepointDir: savepoints,
      jobId: "tidy",
      logger: { debug: log, info: log, warn: log, error: log },
    });
    await job.done;
    assert.deepEqual(readdirSync(savepoints).sort(), [...kept, file, link].sort());
    assert.deepEqual(readdirSync(outside), ["precious"]);
    const removed = logged.filter((l) => /temporary directory of an interrupted savepoint/.test(l.message)).map((l) => (l.fields as { path: string }).path);
    assert.deepEqual(removed.sort(), leftovers.map((name) => join(savepoints, name)).sort());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
