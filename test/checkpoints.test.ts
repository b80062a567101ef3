/**
 * Checkpoints and exactly-once recovery, end to end (the issue's kill-and-compare test): the job
 * of test/jobs/checkpointed.ts (source → keyed counting state → committed sink, and a keyed
 * window stage → committed sink) fails once at a random point — an exception while processing,
 * a worker thread that exits, an exception in a sink's snapshot or in its commit — restarts from
 * its latest checkpoint, and its committed output equals the failure-free run's, record for record.
 * In CI: 6 inline rounds, 12 on worker threads and 2 failures right after the final commit — the
 * issue's 20 runs — all at parallelism 2, and 5 more at parallelism 1, where the whole job is one
 * task (keyBy edges between single subtasks are chained). A second job (peerJoinJob) joins two
 * edges of one task, as Nexmark's auctions and bids, on worker threads: its per-key counts must
 * equal the records' own after a worker exit or an exception. Per-stage input counts are exact when the committed output is: the counting
 * stage emits each record once with its running count per key, and the window stage's sums are
 * those counts. The seed is printed on failure; EDDY_TEST_SEED replays a run, EDDY_CHK_ROUNDS runs
 * more rounds (`npm run soak:checkpoints`: 500), EDDY_CHK_HEAP_INCREMENTAL=1 runs them with the
 * heap backend's incremental checkpoints (`npm run soak:checkpoints-incremental`).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { basename, dirname } from "node:path";
import {
  SnapshotFile,
  LocalCheckpointStorage,
  readManifest,
  manifestFiles,
  planJob,
  silentLogger,
  SOURCE_SPLITS_STATE,
  decodeOperatorStates,
  operatorStateSection,
  type CheckpointStats,
} from "../packages/eddy/src/internal.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runJob, type RunOptions } from "eddy/testing";
import * as checkpointed from "./jobs/checkpointed.ts";
import type { Counted, Fault, FaultKind } from "./jobs/checkpointed.ts";
import type { StorageFault } from "./jobs/faulty-storage.ts";
import { prng } from "./fixtures.ts";


interface Output {
  readonly counted: string[];
  readonly windows: string[];
}

/**
 * EDDY_CHK_HEAP_INCREMENTAL=1 (`npm run soak:checkpoints-incremental`): every run on the heap
 * backend's incremental checkpoints, with chains of at most 3 deltas.
 */
const HEAP_INCREMENTAL: Record<string, string> =
  process.env.EDDY_CHK_HEAP_INCREMENTAL === "1" ? { "state.backend.heap.incremental": "true", "state.backend.heap.max-chain-length": "3" } : {};

async function run(
  options: RunOptions,
  fault: Fault | undefined,
): Promise<{ output: Output; restarts: number; restoredFrom: readonly (number | null)[]; checkpoints: CheckpointStats[]; warnings: string[] }> {
  process.env.EDDY_CHK_FAULT = fault === undefined ? "" : JSON.stringify(fault);
  // Warnings and errors (why a job restarted, which checkpoint failed), for assertion messages.
  const warnings: string[] = [];
  const note = (message: string, fields?: Record<string, unknown>): void => void warnings.push(`${message} ${JSON.stringify(fields ?? {})}`);
  try {
    const handle = runJob(checkpointed.countingJob, { logger: { debug: () => {}, info: () => {}, warn: note, error: note }, ...options, config: { ...HEAP_INCREMENTAL, ...options.config } });
    await handle.done;
    return {
      warnings,
      output: { counted: checkpointed.rowsOf(handle.collected("counted")), windows: checkpointed.rowsOf(handle.collected("windows")) },
      restarts: handle.restarts,
      restoredFrom: handle.restoredFrom,
      checkpoints: handle.checkpoints(),
    };
  } finally {
    delete process.env.EDDY_CHK_FAULT;
  }
}

let oracle: Output | undefined;
/** The failure-free output, computed once without checkpointing (inline, parallelism 1). */
async function failureFree(): Promise<Output> {
  oracle ??= (await run({ checkpointing: false, mode: "inline" }, undefined)).output;
  return oracle;
}

test("the failure-free run counts every record once (the oracle is sound)", async () => {
  const expected = await failureFree();
  assert.equal(expected.counted.length, checkpointed.RECORDS);
  // Per key, counts run 1..n without gaps.
  const perKey = new Map<string, number>();
  for (const row of expected.counted) {
    const key = row.split(":")[0]!;
    perKey.set(key, (perKey.get(key) ?? 0) + 1);
  }
  assert.equal(perKey.size, checkpointed.KEYS);
});

/**
 * Runs the job at `parallelism` (default 2) with checkpoints every 10 ms and `fault` injected
 * once, in a fresh directory; checks the fault fired, the job restarted once, and the committed output
 * equals the failure-free run. Returns the checkpoint the restart restored from.
 */
async function faultyRun(
  mode: "inline" | "threads",
  kind: FaultKind,
  atRecord: (dir: string) => number,
  where: string,
  parallelism = 2,
): Promise<number | null> {
  const expected = await failureFree();
  const dir = mkdtempSync(join(tmpdir(), "eddy-checkpoints-"));
  const fault: Fault = { kind, atRecord: atRecord(dir), marker: join(dir, "fault-fired") };
  const at = `${where}, ${mode}, parallelism ${parallelism}, fault '${kind}' at record ${fault.atRecord}`;
  try {
    const result = await run(
      {
        mode,
        parallelism,
        checkpointing: { intervalMs: 10 },
        checkpointDir: join(dir, "checkpoints"),
        jobId: "kill-and-compare",
        restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
      },
      fault,
    );
    assert.ok(existsSync(fault.marker), `${at}: the fault never fired`);
    assert.equal(result.restarts, 1, `${at}: ${result.warnings.join("\n")}`);
    assert.deepEqual(result.output.counted, expected.counted, `${at}: committed counts differ from the failure-free run`);
    assert.deepEqual(result.output.windows, expected.windows, `${at}: committed windows differ from the failure-free run`);
    return result.restoredFrom[0] ?? null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function killAndCompare(mode: "inline" | "threads", kinds: readonly FaultKind[], rounds: number, parallelism = 2): Promise<void> {
  const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
  const random = prng(seed);
  const restoredFrom: (number | null)[] = [];
  for (let round = 0; round < rounds; round++) {
    // Anywhere: early faults usually restart from scratch, later ones from a checkpoint; a fault
    // in the sink's commit near the end hits the final checkpoint's commit.
    // Round 0 fails late, so at least one round restores from a periodic checkpoint.
    const atRecord = round === 0 ? Math.floor(checkpointed.RECORDS * 0.98) : 1 + Math.floor(random() * checkpointed.RECORDS);
    restoredFrom.push(await faultyRun(mode, kinds[round % kinds.length]!, () => atRecord, `seed ${seed}, round ${round}`, parallelism));
  }
  // Faults late in the run restore from a checkpoint (early ones may start over).
  assert.ok(restoredFrom.some((id) => id !== null), `seed ${seed}: no round restored from a checkpoint (${JSON.stringify(restoredFrom)})`);
}

const rounds = Number(process.env.EDDY_CHK_ROUNDS ?? 0);

test("inline: a fault at a random point, recovery from the latest checkpoint, committed output equals the failure-free run", async () => {
  await killAndCompare("inline", ["process", "snapshot", "commit"], rounds || 6);
});

test("worker threads: a killed worker or a fault in any phase, recovery, committed output equals the failure-free run", async () => {
  await killAndCompare("threads", ["exit", "process", "snapshot", "commit"], rounds || 12);
});

test("parallelism 1 (every keyBy edge chained into the source's task): a fault at a random point, recovery, the failure-free output", async () => {
  const chains = planJob(checkpointed.countingJob, { parallelism: 1 }, silentLogger).plan.chains;
  assert.equal(chains.length, 1, `one task: ${chains.map((c) => c.name).join(" | ")}`);
  await killAndCompare("inline", ["process", "snapshot", "commit"], rounds || 3, 1);
  await killAndCompare("threads", ["exit", "process"], rounds || 2, 1);
});

test("worker threads: a join fed by two edges of one task (peers), a killed worker or an exception, recovery: every record counted once", async () => {
  // The join reads its two inputs as peers: of the batches arrived on both, the one pushed first,
  // and a watermark or barrier at one's head before the other's batch. Alignment must still take
  // each barrier on its own channel, in order: a record lost or counted twice changes the rows.
  const expected = checkpointed.expectedPeerJoin();
  const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
  const random = prng(seed);
  const kinds = ["exit", "process"] as const;
  let restored = 0;
  for (let round = 0; round < (rounds || 4); round++) {
    const dir = mkdtempSync(join(tmpdir(), "eddy-checkpoints-"));
    const atRecord = round === 0 ? Math.floor(checkpointed.RECORDS * 0.9) : 1 + Math.floor(random() * checkpointed.RECORDS);
    const fault: Fault = { kind: kinds[round % kinds.length]!, atRecord, marker: join(dir, "fault-fired") };
    const at = `seed ${seed}, round ${round}, fault '${fault.kind}' at record ${atRecord}`;
    process.env.EDDY_CHK_FAULT = JSON.stringify(fault);
    try {
      const handle = runJob(checkpointed.peerJoinJob, {
        mode: "threads",
        parallelism: 2,
        checkpointing: { intervalMs: 10 },
        checkpointDir: join(dir, "checkpoints"),
        jobId: "peer-join",
        restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
        logger: silentLogger,
        config: HEAP_INCREMENTAL,
      });
      await handle.done;
      assert.ok(existsSync(fault.marker), `${at}: the fault never fired`);
      assert.equal(handle.restarts, 1, at);
      if (handle.restoredFrom[0] !== null && handle.restoredFrom[0] !== undefined) restored++;
      assert.deepEqual(checkpointed.rowsOf(handle.collected("joined")), expected, `${at}: committed counts differ from the records' own`);
    } finally {
      delete process.env.EDDY_CHK_FAULT;
      rmSync(dir, { recursive: true, force: true });
    }
  }
  assert.ok(restored > 0, `seed ${seed}: no round restored from a checkpoint`);
});

test("a failure in the final commit (after every source finished) restores the final checkpoint and commits exactly once", async () => {
  for (const mode of ["inline", "threads"] as const) {
    // The sink sees the last record only after every source ended, so its first commit after it
    // is the final checkpoint's.
    const restoredFrom = await faultyRun(mode, "commit", () => checkpointed.RECORDS, "final commit");
    assert.notEqual(restoredFrom, null, `${mode}: restored from the final checkpoint`);
  }
});

test("event time after a restore: out-of-order input with late events gives the same windows and the same late events", async () => {
  const collect = async (options: RunOptions, fault: Fault | undefined) => {
    process.env.EDDY_CHK_FAULT = fault === undefined ? "" : JSON.stringify(fault);
    const warnings: string[] = [];
    const note = (message: string, fields?: Record<string, unknown>): void => void warnings.push(`${message} ${JSON.stringify(fields ?? {})}`);
    try {
      const handle = runJob(checkpointed.eventTimeJob, { logger: { debug: () => {}, info: () => {}, warn: note, error: note }, ...options });
      await handle.done;
      return {
        warnings,
        windows: handle.collected<checkpointed.WindowCount>("windows").map((w) => JSON.stringify(w)).sort(),
        late: handle.collected<checkpointed.Event>("late").map((e) => e.seq).sort((a, b) => a - b),
        restoredFrom: handle.restoredFrom,
      };
    } finally {
      delete process.env.EDDY_CHK_FAULT;
    }
  };
  const expected = await collect({ mode: "inline", parallelism: 2, checkpointing: false }, undefined);
  assert.ok(expected.late.length > 1_000, `the input has late events (${expected.late.length})`);
  for (const mode of ["inline", "threads"] as const) {
    const dir = mkdtempSync(join(tmpdir(), "eddy-event-time-"));
    try {
      const fault: Fault = { kind: "process", atRecord: Math.floor(checkpointed.EVENTS * 0.8), marker: join(dir, "fault-fired") };
      const result = await collect(
        { mode, parallelism: 2, checkpointing: { intervalMs: 10 }, checkpointDir: dir, jobId: "event-time", restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 } },
        fault,
      );
      assert.ok(existsSync(fault.marker), `${mode}: the fault fired`);
      const committedFirst = existsSync(`${fault.marker}.committed`);
      assert.notEqual(
        result.restoredFrom[0] ?? null,
        null,
        `${mode}: restored from a checkpoint (one had completed before the fault: ${committedFirst}); ${result.warnings.join("\n")}`,
      );
      assert.deepEqual(result.late, expected.late, `${mode}: the same events are late`);
      assert.deepEqual(result.windows, expected.windows, `${mode}: the same windows`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test("checkpoints complete while user functions are slow, not only once the input is read", async () => {
  // While a checkpoint is in flight, a task's slice ends after 8,192 records or ~5 ms, whichever
  // comes first; between slices the event loop runs the checkpoint's asynchronous steps (file
  // writes, acknowledgements, the manifest, the sink's commit), one turn at a time. Bounded by
  // records only, a slice of this job took ~160 ms.
  for (const mode of ["inline", "threads"] as const) {
    const dir = mkdtempSync(join(tmpdir(), "eddy-slow-"));
    try {
      const completed: number[] = [];
      const started = performance.now();
      const info = (message: string): void => {
        if (message === "checkpoint complete") completed.push(performance.now() - started);
      };
      const handle = runJob(checkpointed.slowJob, {
        mode,
        parallelism: 1,
        checkpointing: { intervalMs: 20 },
        checkpointDir: dir,
        jobId: "slow",
        logger: { debug: () => {}, info, warn: () => {}, error: () => {} },
      });
      await handle.done;
      const ms = performance.now() - started;
      const sums = handle.collected<number>("sums");
      assert.equal(sums.length, checkpointed.SLOW_RECORDS, `${mode}: every running sum is committed`);
      // Bounded by records only, a periodic checkpoint took as long as the rest of the input (~88 %
      // of the run); bounded by time while one is in flight, ~15-30 %.
      const durations = handle
        .checkpoints()
        .filter((c) => c.status === "completed")
        .map((c) => c.durationMs ?? Number.POSITIVE_INFINITY);
      assert.ok(
        Math.min(...durations) < ms * 0.5,
        `${mode}: periodic checkpoints took ${durations.map((d) => d.toFixed(0)).join(", ") || "none"} ms in a ${ms.toFixed(0)} ms run, completed at ${completed.map((t) => t.toFixed(0)).join(", ")} ms`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

/** Per source split, the first record the checkpoint's sources had not read yet. */
async function sourcePositions(checkpointDir: string): Promise<{ position: number; to: number }[]> {
  const location = { rootDir: dirname(dirname(checkpointDir)), jobId: basename(dirname(checkpointDir)) };
  const storage = new LocalCheckpointStorage(location);
  const id = Number(/chk-(\d+)$/.exec(checkpointDir)![1]);
  const manifest = readManifest(await storage.readManifest(id), checkpointDir);
  const out: { position: number; to: number }[] = [];
  for (const task of manifest.tasks) {
    for (const op of task.operators) {
      const state = op.operatorStates.find((o) => o.name === SOURCE_SPLITS_STATE);
      if (state === undefined || task.file === null) continue;
      const file = SnapshotFile.parse(await storage.readFile(id, task.file), { fileName: task.file.name });
      const splits = decodeOperatorStates(file.section(operatorStateSection(op.operatorId))!, op).get(SOURCE_SPLITS_STATE) as { position: number; to: number }[];
      out.push(...splits.map((sp) => ({ position: sp.position, to: sp.to })));
    }
  }
  return out;
}

test("at-least-once mode: after a failure nothing is lost, and only records after the restored checkpoint's positions repeat", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-at-least-once-"));
  try {
    process.env.EDDY_CHK_FAULT = JSON.stringify({ kind: "process", atRecord: Math.floor(checkpointed.RECORDS * 0.9), marker: join(dir, "fault-fired") });
    const handle = runJob(checkpointed.countingJob, {
      mode: "threads",
      parallelism: 2,
      checkpointing: { intervalMs: 10, mode: "at-least-once", retained: 1_000 },
      checkpointDir: dir,
      jobId: "at-least-once",
      restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 },
    });
    await handle.done;
    assert.equal(handle.restarts, 1);
    const ns = handle.collected<Counted>("counted").map((r) => r.n);
    const seen = new Set(ns);
    assert.equal(seen.size, checkpointed.RECORDS, "every record reached the committed output at least once");
    const restored = handle.restoredFrom[0];
    if (restored === null || restored === undefined) return; // started over: nothing to bound
    const positions = await sourcePositions(join(dir, "at-least-once", `chk-${restored}`));
    const replayed = (n: number): boolean => positions.some((p) => n >= p.position && n <= p.to);
    const counts = new Map<number, number>();
    for (const n of ns) counts.set(n, (counts.get(n) ?? 0) + 1);
    const early = [...counts].filter(([n, c]) => c > 1 && !replayed(n)).map(([n]) => n);
    assert.deepEqual(early.slice(0, 10), [], `records repeated although the restored checkpoint ${restored} had read past them`);
  } finally {
    delete process.env.EDDY_CHK_FAULT;
    delete process.env.EDDY_CHK_THROTTLE;
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Runs the checkpointed job on the faulty storage (test/jobs/faulty-storage.ts) with `fault`
 * (its marker is added): the fault must fire, and no checkpoint id may be written after its
 * discard was asked for.
 */
async function runWithStorageFault(
  fault: Omit<StorageFault, "marker">,
  options: Pick<RunOptions, "mode" | "checkpointing" | "jobId" | "restartStrategy">,
): ReturnType<typeof run> {
  const dir = mkdtempSync(join(tmpdir(), `eddy-${options.jobId}-`));
  const marker = join(dir, "fault-fired");
  process.env.EDDY_CHK_STORAGE_FAULT = JSON.stringify({ ...fault, marker });
  try {
    const result = await run(
      { parallelism: 2, ...options, checkpointDir: join(dir, "checkpoints"), checkpointStorage: { module: join(import.meta.dirname, "jobs/faulty-storage.ts") } },
      undefined,
    );
    assert.ok(existsSync(marker), `${options.jobId}: the storage fault fired`);
    const reused = existsSync(`${marker}.reused`) ? readFileSync(`${marker}.reused`, "utf8") : "";
    assert.equal(reused, "", `${options.jobId}: checkpoint ids written after their discard was asked for`);
    return result;
  } finally {
    delete process.env.EDDY_CHK_STORAGE_FAULT;
    rmSync(dir, { recursive: true, force: true });
  }
}

test("a storage failure while a task persists its snapshot, or while the manifest is committed, fails that checkpoint; the job recovers with the exact output", async () => {
  const expected = await failureFree();
  for (const op of ["writeFile", "commitManifest"] as const) {
    const result = await runWithStorageFault(
      { op, afterCalls: op === "writeFile" ? 3 : 1 },
      { mode: "threads", checkpointing: { intervalMs: 10 }, jobId: `storage-fault-${op}`, restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 } },
    );
    // tolerableFailures is 0: the failed checkpoint fails the job, which restarts once.
    assert.equal(result.restarts, 1, `${op}: ${result.warnings.join("\n")}`);
    assert.deepEqual(result.output.counted, expected.counted, `${op}: committed counts`);
    assert.deepEqual(result.output.windows, expected.windows, `${op}: committed windows`);
  }
});

test("a restart never issues the id of a checkpoint the failed attempt issued, even one with no directory and a discard still pending", async () => {
  // The first checkpoint fails in every task before any file exists, and its discard lands late:
  // an attempt that chose its first id from the directories alone would issue id 1 again and
  // have its files deleted under it.
  const expected = await failureFree();
  const result = await runWithStorageFault(
    { op: "writeFile", afterCalls: 0, wholeCheckpoint: true, discardDelayMs: 400 },
    { mode: "inline", checkpointing: { intervalMs: 10 }, jobId: "id-reuse", restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 } },
  );
  assert.equal(result.restarts, 1, result.warnings.join("\n"));
  assert.ok(result.checkpoints.length > 0 && result.checkpoints.every((c) => c.checkpointId > 1), JSON.stringify(result.checkpoints.map((c) => c.checkpointId)));
  assert.deepEqual(result.output.counted, expected.counted);
  assert.deepEqual(result.output.windows, expected.windows);
});

test("the final checkpoint waits for a periodic one still writing its manifest (whose retention would otherwise delete it)", async () => {
  const expected = await failureFree();
  const dir = mkdtempSync(join(tmpdir(), "eddy-final-waits-"));
  process.env.EDDY_CHK_MANIFEST_DELAY_MS = "300";
  try {
    const result = await run(
      {
        mode: "inline",
        parallelism: 2,
        checkpointing: { intervalMs: 10 },
        checkpointDir: join(dir, "checkpoints"),
        checkpointStorage: { module: join(import.meta.dirname, "jobs/faulty-storage.ts") },
        jobId: "final-waits",
        restartStrategy: { type: "none" },
      },
      undefined,
    );
    assert.equal(result.restarts, 0, result.warnings.join("\n"));
    assert.ok(result.checkpoints.some((c) => c.status === "completed"), "periodic checkpoints completed");
    // None was still in progress when the job ended (its manifest landing after the final one).
    const inProgress = result.checkpoints.filter((c) => c.status === "in-progress").map((c) => c.checkpointId);
    assert.deepEqual(inProgress, [], "checkpoints in progress after the job ended");
    // Every checkpoint left with a manifest has all its files (retention never deleted the
    // files of one whose manifest was still to come).
    const storage = new LocalCheckpointStorage({ rootDir: join(dir, "checkpoints"), jobId: "final-waits" });
    const left = await storage.listCheckpoints();
    assert.ok(left.length > 0);
    for (const id of left) {
      if (!(await storage.hasManifest(id))) continue;
      const manifest = readManifest(await storage.readManifest(id), `checkpoint ${id}`);
      for (const ref of manifestFiles(manifest)) await storage.readFile(id, ref);
    }
    assert.deepEqual(result.output.counted, expected.counted);
    assert.deepEqual(result.output.windows, expected.windows);
  } finally {
    delete process.env.EDDY_CHK_MANIFEST_DELAY_MS;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("with tolerable failures, a checkpoint that fails in storage is aborted and the job goes on, output exact", async () => {
  const expected = await failureFree();
  const result = await runWithStorageFault(
    { op: "writeFile", afterCalls: 3 },
    { mode: "threads", checkpointing: { intervalMs: 10, tolerableFailures: 5 }, jobId: "tolerated" },
  );
  assert.equal(result.restarts, 0, `the job went on: ${result.warnings.join("\n")}`);
  assert.ok(result.checkpoints.some((c) => c.status === "failed" && /injected storage fault/.test(c.failureReason ?? "")), JSON.stringify(result.checkpoints));
  assert.ok(result.checkpoints.some((c) => c.status === "completed"), "other checkpoints completed");
  assert.deepEqual(result.output.counted, expected.counted);
  assert.deepEqual(result.output.windows, expected.windows);
});

/**
 * Fails the checkpointed job once right after a sink committed (checkpoint n's output is then
 * visible), and damages a task file of every complete checkpoint before the restart runs: the
 * newest committed checkpoint cannot be read, and every other one is older or damaged too.
 */
async function recoverWithDamagedCheckpoints(allowRecoveryBehindCommitted: boolean): ReturnType<typeof run> {
  const dir = mkdtempSync(join(tmpdir(), "eddy-damaged-"));
  const checkpointDir = join(dir, "checkpoints");
  const fault: Fault = { kind: "commit", atRecord: checkpointed.RECORDS / 2, marker: join(dir, "fault-fired") };
  let stop = false;
  const damaging = (async () => {
    while (!existsSync(fault.marker) && !stop) await sleep(2);
    if (stop) return;
    const jobDir = join(checkpointDir, "damaged");
    for (const d of readdirSync(jobDir)) if (existsSync(join(jobDir, d, "_manifest"))) checkpointed.damageTaskFile(join(jobDir, d));
  })();
  try {
    return await run(
      {
        mode: "inline",
        parallelism: 2,
        // Long enough that no checkpoint completes between the fault and the damage.
        checkpointing: { intervalMs: 100, allowRecoveryBehindCommitted },
        checkpointDir,
        jobId: "damaged",
        // The restart waits until every checkpoint is damaged.
        restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 300 },
      },
      fault,
    );
  } finally {
    stop = true;
    await damaging;
    assert.ok(existsSync(fault.marker), "the fault fired");
    rmSync(dir, { recursive: true, force: true });
  }
}

test("recovery never goes behind committed output: the committed checkpoint damaged, the job fails naming the file instead of replaying an older one", async () => {
  await assert.rejects(recoverWithDamagedCheckpoints(false), (e: Error) => {
    assert.match(e.message, /cannot recover: checkpoint \d+, whose output sinks have committed, cannot be restored/);
    assert.match(e.message, /chk-\d+\/[^' ]+' checksum mismatch/, "names the damaged file");
    assert.match(e.message, /allow-behind-committed/, "says how to accept duplicates instead");
    return true;
  });
});

test("allowed by configuration, recovery goes behind committed output and says that output repeats", async () => {
  const result = await recoverWithDamagedCheckpoints(true);
  assert.equal(result.restarts, 1, result.warnings.join("\n"));
  assert.ok(result.warnings.some((w) => /going back further, as allowed .* two-phase sinks will repeat output/.test(w)), result.warnings.join("\n"));
  // Every checkpoint is damaged: the job starts over, and the committed part repeats.
  assert.deepEqual(result.restoredFrom, [null]);
  assert.ok(result.output.counted.length > checkpointed.RECORDS, `output repeats (${result.output.counted.length} rows)`);
});

test("an intermediate savepoint commits nothing (Flink's rule): a failure after it replays from the checkpoint before it, output exact", async () => {
  // No periodic checkpoint completes in this run: the savepoint is the only snapshot, and a
  // restart starts over. Had the savepoint committed, its output would be committed twice.
  const expected = await failureFree();
  const dir = mkdtempSync(join(tmpdir(), "eddy-savepoint-commit-"));
  const fault: Fault = { kind: "process", atRecord: checkpointed.RECORDS - 1_000, marker: join(dir, "fault-fired") };
  process.env.EDDY_CHK_FAULT = JSON.stringify(fault);
  // ~2.4 s in all (1 ms every 200 records): the savepoint completes long before the fault.
  process.env.EDDY_CHK_THROTTLE = "200";
  try {
    const handle = runJob(checkpointed.countingJob, {
      mode: "inline",
      parallelism: 2,
      checkpointing: { intervalMs: 3_600_000 },
      checkpointDir: join(dir, "checkpoints"),
      savepointDir: join(dir, "savepoints"),
      jobId: "savepoint-commit",
      restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 },
      logger: silentLogger,
    });
    while (handle.sourceRecords < checkpointed.RECORDS / 4) await sleep(2);
    const savepoint = await handle.savepoint();
    assert.ok(!existsSync(fault.marker), "the savepoint completed before the fault");
    assert.ok(savepoint.path.startsWith(join(dir, "savepoints")));
    await handle.done;
    assert.ok(existsSync(fault.marker), "the fault fired");
    assert.equal(handle.restarts, 1);
    assert.deepEqual(handle.restoredFrom, [null], "no checkpoint: started over");
    assert.deepEqual(checkpointed.rowsOf(handle.collected("counted")), expected.counted, "committed counts");
    assert.deepEqual(checkpointed.rowsOf(handle.collected("windows")), expected.windows, "committed windows");
  } finally {
    delete process.env.EDDY_CHK_FAULT;
    delete process.env.EDDY_CHK_THROTTLE;
    rmSync(dir, { recursive: true, force: true });
  }
});
