/**
 * The disk state backend in running jobs (issue 29), with `-D state.backend=disk` and a cache of 8
 * keys per subtask, so most state accesses go to the LMDB store and back.
 *
 * - Kill-and-compare on worker threads and inline, with the job of test/jobs/disk-keyed.ts (1,000
 *   keys revisited all through the run; value, list and window state), with incremental
 *   checkpoints and one retained checkpoint: a fault at a random point after checkpoint 2
 *   completed (a worker thread ended as a kill would, or an exception while processing), recovery
 *   from the latest checkpoint — a delta whose chain lists shared files of checkpoints retention
 *   deleted — committed output equal to the failure-free run (heap, inline, no checkpoints).
 *   The timers (each key's windows, and its end-of-input timer) come back from the chains'
 *   `timers` sections: a base's, then the deltas' for the keys whose timers changed.
 *   EDDY_DISK_ROUNDS sets the rounds (default 3), EDDY_TEST_SEED the seed.
 * - The same with local recovery (`state.backend.disk.local-recovery`): every keyed subtask must
 *   come back by rolling its own store back (the log says so), with the failure-free output
 *   (EDDY_DISK_ROUNDS rounds too, default 2: threads with a thread exit, inline with an exception).
 * - The same kill-and-compare with the heap backend's incremental checkpoints
 *   (`state.backend.heap.incremental`, chains of at most 10 or 3 deltas): recovery from a chain of
 *   the heap backend's deltas gives the failure-free output.
 * - Shared files under retention: after many incremental checkpoints with 2 retained, the shared
 *   directory holds exactly the files the retained checkpoints' chains list, each intact; a
 *   damaged shared file makes recovery skip the checkpoints that list it, naming the file.
 * - An incremental checkpoint of either backend whose chain lists a delta restores into the heap
 *   backend at parallelism 3 and into the disk backend at 1: the failure-free totals.
 * - A restore that skips deleted intermediate checkpoints: the newest checkpoint's chain lists
 *   deltas of checkpoints whose directories are gone (deleted by hand here, as retention or an
 *   operator would): the restore reads their shared files, never their directories, and the job
 *   resumed from it (disk backend, incremental checkpoints) ends with the failure-free output.
 * - A full disk while LMDB writes (a child process under a file size limit, test/jobs/full-disk.ts):
 *   the task fails with STATE_STORE_FULL naming the store, the job restarts from its last
 *   checkpoint (rebuilding the store) per its restart strategy, and ends with that error when the
 *   strategy gives up: no crash, no endless loop.
 * - Savepoints are backend-neutral, with the job of test/jobs/checkpointed.ts (a keyed counter, a
 *   keyed window reduce, a two-phase file sink): stopped with a savepoint on the heap backend at parallelism 2,
 *   resumed on the disk backend at parallelism 4 and stopped with a savepoint again, resumed on
 *   the heap backend at parallelism 1 to the end: what the three runs committed equals the
 *   failure-free run, record for record.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineJob, ValueStateDescriptor, type KeyedProcessFunction } from "eddy";
import { collectSink, runJob, type RunOptions } from "eddy/testing";
import { openSavepoint } from "eddy/savepoint";
import { LocalCheckpointStorage, manifestSharedFiles, readManifest, sharedFileCheckpointId } from "../packages/eddy/src/internal.ts";
import * as checkpointed from "./jobs/checkpointed.ts";
import { committedFiles, type Fault } from "./jobs/checkpointed.ts";
import * as diskKeyed from "./jobs/disk-keyed.ts";
import { prng } from "./fixtures.ts";

const disk = (dir: string, cacheSize = 8): Record<string, string> => ({
  "state.backend": "disk",
  "state.backend.disk.dir": dir,
  "state.backend.disk.cache-size": String(cacheSize),
});

/** Runs the job writing committed output into `outDir`; with `stopAt`, stops it with a savepoint once the source read that many records. */
async function runInto(outDir: string, options: RunOptions, fault?: Fault, stopAt?: number): Promise<{ savepoint: string | undefined; restarts: number; warnings: string[] }> {
  process.env.EDDY_CHK_OUT_DIR = outDir;
  process.env.EDDY_CHK_FAULT = fault === undefined ? "" : JSON.stringify(fault);
  // Slow enough to stop part-way on any machine: 1 ms every 100 records.
  process.env.EDDY_CHK_THROTTLE = stopAt === undefined ? "" : "100";
  const warnings: string[] = [];
  const note = (message: string, fields?: Record<string, unknown>): void => void warnings.push(`${message} ${JSON.stringify(fields ?? {})}`);
  try {
    const job = runJob(checkpointed.countingJob, { logger: { debug: () => {}, info: () => {}, warn: note, error: note }, metricsIntervalMs: 10, ...options });
    let savepoint: string | undefined;
    if (stopAt !== undefined) {
      const deadline = Date.now() + 120_000;
      while (job.sourceRecords < stopAt) {
        assert.equal(job.status(), "running", `the job ended before reading ${stopAt} records: ${warnings.join("\n")}`);
        assert.ok(Date.now() < deadline, `the source read only ${job.sourceRecords} records in 120 s`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      savepoint = (await job.stop({ savepoint: true }))!.path;
    }
    await job.done;
    return { savepoint, restarts: job.restarts, warnings };
  } finally {
    delete process.env.EDDY_CHK_OUT_DIR;
    delete process.env.EDDY_CHK_FAULT;
    delete process.env.EDDY_CHK_THROTTLE;
  }
}

let oracle: { counted: string[]; windows: string[] } | undefined;
async function failureFree(root: string): Promise<{ counted: string[]; windows: string[] }> {
  if (oracle === undefined) {
    const out = join(root, "oracle");
    await runInto(out, { mode: "inline", checkpointing: false });
    oracle = { counted: committedFiles(out, "counted"), windows: committedFiles(out, "windows") };
    assert.equal(oracle.counted.length, checkpointed.RECORDS);
  }
  return oracle;
}

/** The disk-keyed job's committed output, in a canonical order. */
async function runDiskKeyed(options: RunOptions, fault?: { kind: "process" | "exit" | "none"; atRecord: number; marker: string; checkpoints: string; afterCheckpoint?: number }) {
  process.env.EDDY_DK_FAULT = fault === undefined ? "" : JSON.stringify(fault);
  const warnings: string[] = [];
  const infos: string[] = [];
  const note = (message: string, fields?: Record<string, unknown>): void => void warnings.push(`${message} ${JSON.stringify(fields ?? {})}`);
  const info = (message: string, fields?: Record<string, unknown>): void => void infos.push(`${message} ${JSON.stringify(fields ?? {})}`);
  try {
    const job = runJob(diskKeyed.diskKeyedJob, { logger: { debug: () => {}, info, warn: note, error: note }, ...options });
    await job.done;
    return {
      totals: job.collected<diskKeyed.Total>("totals").map((t) => JSON.stringify(t)).sort(),
      windows: job.collected<diskKeyed.WindowSum>("windows").map((w) => JSON.stringify(w)).sort(),
      restarts: job.restarts,
      restoredFrom: job.restoredFrom,
      sourceRecords: job.sourceRecords,
      warnings,
      infos,
    };
  } finally {
    delete process.env.EDDY_DK_FAULT;
  }
}

/** The share of the input in which a round's fault record is drawn (see the first test's rounds). */
const FAULT_SPAN = 0.75;

/**
 * One kill-and-compare round of the disk-keyed job at parallelism 2 with incremental checkpoints
 * (one retained: when checkpoint n completes, n - 1 goes, and the shared files only it listed): a
 * fault of `kind` at the first record from `atRecord` on after checkpoint 2 completed, one restart,
 * committed output equal to `expected`. On the disk backend with a cache of 8 under `dir`, with
 * `config` on top; on the heap backend when `config` says `state.backend: heap`.
 */
async function faultRound(
  dir: string,
  at: string,
  expected: { totals: string[]; windows: string[] },
  mode: "threads" | "inline",
  kind: "process" | "exit",
  atRecord: number,
  config: Record<string, string>,
): Promise<Awaited<ReturnType<typeof runDiskKeyed>>> {
  const fault = { kind, atRecord, marker: join(dir, "fault"), checkpoints: join(dir, "checkpoints", "disk-kill"), afterCheckpoint: 2 };
  const result = await runDiskKeyed(
    {
      mode,
      parallelism: 2,
      // Little in flight, so barriers are not seconds behind the source (with the default 16 K
      // records per channel, checkpoint 2 could complete after the last record, and a late fault never fire).
      channelCapacityRecords: 2_048,
      batchRecords: 256,
      checkpointing: { intervalMs: 10, retained: 1 },
      checkpointDir: join(dir, "checkpoints"),
      jobId: "disk-kill",
      restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
      config: { ...(config["state.backend"] === "heap" ? {} : disk(join(dir, "state"))), ...config },
    },
    fault,
  );
  assert.ok(existsSync(fault.marker), `${at}: the fault never fired`);
  assert.equal(result.restarts, 1, `${at}: ${result.warnings.join("\n")}`);
  if (config["state.backend.disk.local-recovery"] === "true") {
    // Kept across the attempts (the restores say so), removed once the job finished: nothing left to restart.
    assert.ok(!existsSync(join(dir, "state", "disk-keyed")), `${at}: the job's local stores outlived it`);
  } else if (config["state.backend"] !== "heap") assert.ok(existsSync(join(dir, "state", "disk-keyed", "LOCK")), `${at}: the job ran on the disk backend`);
  assert.deepEqual(result.totals, expected.totals, `${at}: committed totals differ from the failure-free run`);
  assert.deepEqual(result.windows, expected.windows, `${at}: committed windows differ from the failure-free run`);
  return result;
}

/** The kill-and-compare rounds' backends: the disk backend with a cache of 8, and the heap backend with incremental checkpoints. */
const KILL_BACKENDS: Record<string, (chain: string) => Record<string, string>> = {
  "disk backend on worker threads and inline (1,000 keys, a cache of 8)": (chain) => ({ "state.backend.disk.max-chain-length": chain }),
  "the heap backend with incremental checkpoints (state.backend.heap.incremental), on worker threads and inline": (chain) => ({
    "state.backend": "heap",
    "state.backend.heap.incremental": "true",
    "state.backend.heap.max-chain-length": chain,
  }),
};

for (const [name, backend] of Object.entries(KILL_BACKENDS)) {
test(`${name}: a fault at a random point, recovery from the latest checkpoint, committed output equals the failure-free run`, async () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-kill-"));
  try {
    const expected = await runDiskKeyed({ mode: "inline", checkpointing: false });
    assert.equal(expected.totals.length, diskKeyed.KEYS);
    const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
    const random = prng(seed);
    const rounds = Number(process.env.EDDY_DISK_ROUNDS ?? 3);
    for (let round = 0; round < rounds; round++) {
      // Anywhere in the first 75 %, after a checkpoint completed (the job waits for one). Later,
      // a loaded machine may complete checkpoint 2 only after the last record, and the fault
      // never fires (seen once in CI at 88.6 %, inline, with local recovery).
      const atRecord = round === 0 ? Math.floor(diskKeyed.RECORDS * 0.5) : 1 + Math.floor(random() * diskKeyed.RECORDS * FAULT_SPAN);
      // Worker threads: a thread ended as a kill would, or an exception; inline (the restarted
      // subtask's predecessor is never torn down by a thread exit): an exception.
      const [mode, kind] = (
        [
          ["threads", "exit"],
          ["threads", "process"],
          ["inline", "process"],
        ] as const
      )[round % 3]!;
      const at = `seed ${seed}, round ${round}, ${mode}, fault '${kind}' at record ${atRecord}`;
      // Chains of up to 10 or 3 deltas: restores from a long chain, or from a recent base.
      const result = await faultRound(join(root, `round-${round}`), at, expected, mode, kind, atRecord, backend(round % 2 === 0 ? "10" : "3"));
      // Checkpoint 1 is a base and was deleted once 2 completed: a restore of 2 or later reads a
      // chain listing its file and deltas (the rescale tests below check that deltas are listed).
      assert.ok(result.restoredFrom[0] != null && result.restoredFrom[0] >= 2, `${at}: restored from checkpoint ${String(result.restoredFrom[0])}, one of those from checkpoint 2 on`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
}

test("local recovery on worker threads and inline: after a fault, each subtask rolls its own store back to the checkpoint instead of rebuilding it; committed output equals the failure-free run", async () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-local-"));
  try {
    const expected = await runDiskKeyed({ mode: "inline", checkpointing: false });
    const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
    const random = prng(seed);
    const rounds = Number(process.env.EDDY_DISK_ROUNDS ?? 2);
    for (let round = 0; round < rounds; round++) {
      const [mode, kind] = ([["threads", "exit"], ["inline", "process"], ["threads", "process"]] as const)[round % 3]!;
      const atRecord = 1 + Math.floor(random() * diskKeyed.RECORDS * FAULT_SPAN);
      const at = `seed ${seed}, ${mode}, fault '${kind}' at record ${atRecord}`;
      const config = { "state.backend.disk.local-recovery": "true", "state.backend.disk.max-chain-length": "3" };
      const result = await faultRound(join(root, `round-${round}`), at, expected, mode, kind, atRecord, config);
      const local = result.infos.filter((m) => m.startsWith("keyed state restored from the local store"));
      const rebuilt = result.infos.filter((m) => m.startsWith("keyed state restored from the checkpoint's files"));
      // Every keyed subtask (the job's keyed operators at parallelism 2) came back from its own store.
      assert.ok(local.length >= 2 && rebuilt.length === 0, `${at}: local ${local.length}, rebuilt: ${rebuilt.join("; ")}`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a savepoint of the heap backend resumes on the disk backend at another parallelism, and the disk backend's savepoint back on the heap backend: the failure-free output", async () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-savepoints-"));
  try {
    const expected = await failureFree(root);
    const out = join(root, "out");
    const common = { checkpointing: { intervalMs: 60_000 }, checkpointDir: join(root, "checkpoints"), savepointDir: join(root, "savepoints") } satisfies RunOptions;
    const first = await runInto(out, { ...common, mode: "threads", parallelism: 2, jobId: "heap-1" }, undefined, checkpointed.RECORDS / 4);
    const second = await runInto(
      out,
      // A cache of 1 key: the keys restored and counted (~5 per subtask) go to the store and back, and the savepoint reads them from it.
      { ...common, mode: "threads", parallelism: 4, jobId: "disk-2", config: disk(join(root, "state"), 1), fromSavepoint: first.savepoint! },
      undefined,
      checkpointed.RECORDS / 2,
    );
    assert.ok(existsSync(join(root, "state", "checkpointed-counting", "LOCK")), "the second run ran on the disk backend");
    await runInto(out, { ...common, mode: "inline", parallelism: 1, jobId: "heap-3", fromSavepoint: second.savepoint! });
    assert.deepEqual(committedFiles(out, "counted"), expected.counted, "committed counts over the three runs");
    assert.deepEqual(committedFiles(out, "windows"), expected.windows, "committed windows over the three runs");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("env.setStateBackend chooses the backend in the job; -D state.backend wins over it; a bad choice is refused by name", async () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-env-"));
  try {
    const job = (name: string, dir: string) =>
      defineJob(name, (env) => {
        env.setStateBackend("disk", { dir, cacheSize: 3 });
        const sums: KeyedProcessFunction<number, number, [number, number]> = {
          processElement(n, ctx, out) {
            const state = ctx.getState(new ValueStateDescriptor<number>("sum"));
            const sum = (state.value() ?? 0) + n;
            state.update(sum);
            if (n > 990) out.collect([n % 10, sum]);
          },
        };
        env.fromSequence(1, 1_000).keyBy((n) => n % 10).process(sums).sinkTo(collectSink("sums"));
      });
    const expected = Array.from({ length: 10 }, (_, k) => {
      let sum = 0;
      for (let n = 1; n <= 1_000; n++) if (n % 10 === k) sum += n;
      return [k, sum];
    }).sort((a, b) => a[0]! - b[0]!);
    const onDisk = runJob(job("env-disk", join(root, "a")), { mode: "inline" });
    await onDisk.done;
    assert.deepEqual(onDisk.collected<[number, number]>("sums").sort((a, b) => a[0] - b[0]), expected);
    assert.ok(existsSync(join(root, "a", "env-disk", "LOCK")), "the job's own choice, the disk backend, ran");
    assert.equal(onDisk.configuration()["state.backend"], "disk");
    const overridden = runJob(job("env-heap", join(root, "b")), { mode: "inline", config: { "state.backend": "heap" } });
    await overridden.done;
    assert.deepEqual(overridden.collected<[number, number]>("sums").sort((a, b) => a[0] - b[0]), expected);
    assert.equal(existsSync(join(root, "b")), false, "-D state.backend=heap won");
    const bad = defineJob("bad-backend", (env) => void env.setStateBackend("rocksdb" as "heap"));
    await assert.rejects(async () => runJob(bad, { mode: "inline" }).done, /INVALID_STATE_BACKEND|unknown state backend "rocksdb"/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/** The shared files the complete checkpoints in `jobDir` list, and the files its shared directory holds. */
async function sharedFilesOf(jobDir: string, storage: LocalCheckpointStorage): Promise<{ listed: Set<string>; present: string[]; complete: number[] }> {
  const listed = new Set<string>();
  const complete: number[] = [];
  for (const id of await storage.listCheckpoints()) {
    if (!(await storage.hasManifest(id))) continue;
    complete.push(id);
    for (const ref of manifestSharedFiles(readManifest(await storage.readManifest(id), `checkpoint ${id}`))) {
      listed.add(ref.name);
      await storage.openSharedFile(ref); // present, of its size and SHA-256
    }
  }
  const present = existsSync(join(jobDir, "shared")) ? readdirSync(join(jobDir, "shared")).sort() : [];
  return { listed, present, complete };
}

test("incremental checkpoints under retention: the shared directory holds exactly what the retained checkpoints list; a damaged shared file is named and its checkpoints skipped", async () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-shared-"));
  try {
    const checkpointDir = join(root, "checkpoints");
    const jobDir = join(checkpointDir, "disk-shared");
    const storage = new LocalCheckpointStorage({ rootDir: checkpointDir, jobId: "disk-shared" });
    const options = {
      mode: "threads",
      parallelism: 2,
      checkpointing: { intervalMs: 10, retained: 2 },
      checkpointDir,
      jobId: "disk-shared",
      config: { ...disk(join(root, "state")), "state.backend.disk.max-chain-length": "1" },
    } satisfies RunOptions;
    // Slow until checkpoint 4 completed: the first chain (a base and a delta) is replaced.
    const result = await runDiskKeyed(options, { kind: "none", atRecord: 0, marker: join(root, "unused"), checkpoints: jobDir, afterCheckpoint: 4 });
    assert.equal(result.totals.length, diskKeyed.KEYS);
    // Retention runs after each checkpoint completes, in the background: wait for it to settle.
    const deadline = Date.now() + 60_000;
    let files = await sharedFilesOf(jobDir, storage);
    while (files.complete.length > 2 || files.present.length !== files.listed.size) {
      assert.ok(Date.now() < deadline, `retention did not settle: complete ${files.complete.join(",")}; listed ${[...files.listed].join(",")}; present ${files.present.join(",")}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      files = await sharedFilesOf(jobDir, storage);
    }
    assert.ok(files.complete.at(-1)! >= 4, `enough checkpoints for bases to be replaced (the last is ${String(files.complete.at(-1))}): ${result.warnings.join("\n")}`);
    assert.ok(files.listed.size > 0, "the retained keyed checkpoint lists shared files");
    // Checkpoint 1 was a base (nothing to chain on); no retained chain lists it any more: deleted.
    assert.deepEqual(files.present.filter((name) => /-base-1-/.test(name)), [], "the first base was deleted once no retained checkpoint listed it");
    // No file leaked, none deleted early: the directory is exactly what the retained chains list.
    assert.deepEqual(files.present, [...files.listed].sort());
    // Damage a shared file of the newest checkpoint with keyed state: restoring it fails, naming the file.
    let newest: number | undefined;
    for (const id of files.complete) if (manifestSharedFiles(readManifest(await storage.readManifest(id), `checkpoint ${id}`)).length > 0) newest = id;
    assert.ok(newest !== undefined);
    // The savepoint reader reads an incremental checkpoint's keyed state through its chains.
    const reader = await openSavepoint(join(jobDir, `chk-${newest}`));
    assert.equal([...reader.keyedState("totals", "total")].length, diskKeyed.KEYS, "every key's total, read through the chains");
    const victim = manifestSharedFiles(readManifest(await storage.readManifest(newest), "newest"))[0]!;
    const path = join(jobDir, "shared", victim.name);
    const bytes = readFileSync(path);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x10;
    writeFileSync(path, bytes);
    await assert.rejects(
      runDiskKeyed({ ...options, jobId: "disk-shared-restore", fromCheckpoint: join(jobDir, `chk-${newest}`) }),
      (e: unknown) => e instanceof Error && "code" in e && e.code === "CHECKPOINT_CORRUPT" && e.message.includes(victim.name),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

for (const from of ["disk", "heap"] as const) {
test(`an incremental checkpoint of the ${from} backend restores into the heap backend at another parallelism, and into the disk backend: the failure-free totals`, async () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-inc-rescale-"));
  const backend = from === "disk" ? disk(join(root, "state")) : { "state.backend.heap.incremental": "true" };
  try {
    const expected = await runDiskKeyed({ mode: "inline", checkpointing: false });
    const checkpointDir = join(root, "checkpoints");
    const jobDir = join(checkpointDir, "disk-inc");
    const storage = new LocalCheckpointStorage({ rootDir: checkpointDir, jobId: "disk-inc" });
    // Slow until checkpoint 3: the checkpoints kept hold chains of a base and deltas.
    await runDiskKeyed(
      { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 10, retained: 3 }, checkpointDir, jobId: "disk-inc", config: backend },
      { kind: "none", atRecord: 0, marker: join(root, "unused"), checkpoints: jobDir, afterCheckpoint: 3 },
    );
    let chosen: number | undefined;
    for (const id of await storage.listCheckpoints()) {
      if (!(await storage.hasManifest(id))) continue;
      const shared = manifestSharedFiles(readManifest(await storage.readManifest(id), `checkpoint ${id}`));
      if (shared.some((f) => /-delta-/.test(f.name))) chosen = id;
    }
    assert.ok(chosen !== undefined, "a retained checkpoint lists a delta");
    const from = join(jobDir, `chk-${chosen}`);
    // The totals are emitted at the end of input from the restored state: all of them, equal to the failure-free run's.
    const heap = await runDiskKeyed({ mode: "inline", parallelism: 3, checkpointing: false, fromCheckpoint: from });
    assert.deepEqual(heap.totals, expected.totals, `checkpoint ${chosen} into the heap backend at parallelism 3`);
    const diskAgain = await runDiskKeyed({ mode: "threads", parallelism: 1, checkpointing: false, fromCheckpoint: from, config: disk(join(root, "state-2")) });
    assert.deepEqual(diskAgain.totals, expected.totals, `checkpoint ${chosen} into the disk backend at parallelism 1`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
}

test("a restore that skips deleted intermediate checkpoints: their directories gone, the newest chain's shared files restore the failure-free output", async () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-skip-"));
  try {
    const expected = await runDiskKeyed({ mode: "inline", checkpointing: false });
    const checkpointDir = join(root, "checkpoints");
    const jobDir = join(checkpointDir, "disk-skip");
    const storage = new LocalCheckpointStorage({ rootDir: checkpointDir, jobId: "disk-skip" });
    // Long chains (up to 10 deltas), all checkpoints kept until the end: slow until checkpoint 5.
    await runDiskKeyed(
      { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 10, retained: 100 }, checkpointDir, jobId: "disk-skip", config: disk(join(root, "state")) },
      { kind: "none", atRecord: 0, marker: join(root, "unused"), checkpoints: jobDir, afterCheckpoint: 5 },
    );
    // The first checkpoint whose chain holds a delta of an intermediate checkpoint (its base is an
    // early one: restoring without the deltas would lose most of the totals).
    let chosen: { id: number; intermediate: number[] } | undefined;
    for (const id of await storage.listCheckpoints()) {
      if (chosen !== undefined) break;
      if (!(await storage.hasManifest(id))) continue;
      const ids = manifestSharedFiles(readManifest(await storage.readManifest(id), `checkpoint ${id}`)).map((f) => sharedFileCheckpointId(f.name)!);
      const intermediate = [...new Set(ids)].filter((c) => c < id && ids.some((i) => i < c));
      if (intermediate.length >= 1) chosen = { id, intermediate };
    }
    assert.ok(chosen !== undefined, "a checkpoint whose chain spans intermediate checkpoints");
    // Delete every other checkpoint's directory: the chain's base and intermediate checkpoints included.
    let deleted = 0;
    for (const name of readdirSync(jobDir)) {
      if (/^chk-\d+$/.test(name) && name !== `chk-${chosen.id}`) {
        rmSync(join(jobDir, name), { recursive: true, force: true });
        deleted++;
      }
    }
    for (const c of chosen.intermediate) assert.ok(!existsSync(join(jobDir, `chk-${c}`)), `checkpoint ${c} (in the chain of ${chosen.id}) deleted`);
    assert.ok(deleted >= 2, `intermediate checkpoints deleted (${deleted})`);
    const at = `checkpoint ${chosen.id} over deleted ${chosen.intermediate.join(", ")}`;
    // Resumed on the disk backend at another parallelism, with incremental checkpoints, to the end.
    const resumed = await runDiskKeyed({
      mode: "threads",
      parallelism: 3,
      checkpointing: { intervalMs: 10 },
      checkpointDir,
      jobId: "disk-skip-resumed",
      fromCheckpoint: join(jobDir, `chk-${chosen.id}`),
      config: disk(join(root, "state-resumed")),
    });
    // Restored, not rerun from the start (which would give the same totals): the source resumed part-way.
    assert.ok(resumed.sourceRecords < diskKeyed.RECORDS, `${at}: the source read ${resumed.sourceRecords} records, all of them: not resumed from the checkpoint`);
    assert.deepEqual(resumed.totals, expected.totals, `${at}: totals`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a full disk while LMDB writes: STATE_STORE_FULL, restarts from the last checkpoint, and the job ends with that error once the restart strategy gives up", () => {
  const root = mkdtempSync(join(tmpdir(), "eddy-disk-full-"));
  try {
    const script = new URL("./jobs/full-disk.ts", import.meta.url).pathname;
    // 65,536 blocks: the store file (LMDB grows it in steps) fails long before a checkpoint file would.
    const child = spawnSync("sh", ["-c", `ulimit -f 65536 && exec "${process.execPath}" -C eddy-source --import tsx "$0" "$1"`, script, root], { encoding: "utf8", timeout: 300_000 });
    assert.equal(child.status, 0, `the child failed: ${child.stderr}`);
    const result = JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { outcome: { code?: string; message: string }; restarts: number; restoredFrom: (number | null)[]; warnings: string[] };
    const seen = `${JSON.stringify(result.outcome)}\n${result.warnings.join("\n")}`;
    assert.equal(result.outcome.code, "STATE_STORE_FULL", seen);
    assert.match(result.outcome.message, /no room to write the disk state store in \S*full-disk.*refused with EFBIG/, seen);
    assert.equal(result.restarts, 2, seen);
    assert.equal(result.restoredFrom.length, 2, seen);
    for (const from of result.restoredFrom) assert.ok(typeof from === "number" && from >= 1, `each restart restored a checkpoint: ${JSON.stringify(result.restoredFrom)}\n${seen}`);
    assert.ok(result.warnings.some((w) => /restarting from checkpoint \d+/.test(w)), seen);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
