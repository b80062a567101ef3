/**
 * Kill-and-compare into files: generated events → keyed event-time windows → FileSink at
 * parallelism 2 on worker threads, checkpoints every 20 ms, with a worker exit or an exception at
 * a random point, and a `kill -9` of `eddy run` resumed with `--from-checkpoint`: the committed
 * part files' records, sorted, equal the failure-free run's, and only committed part names are
 * visible. And the Parquet oracle: DuckDB's aggregate over the sink's Parquet output equals its
 * aggregate over the input, which the test writes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { defineJob, FileSink, FileSource, WatermarkStrategy } from "eddy";
import { runJob } from "eddy/testing";
import { allFiles, committedParts, committedRecords, fileSinkJob } from "./jobs/file-sink.ts";
import { latestCheckpoint } from "./jobs/checkpointed.ts";
import { EDDY_BIN, killWhenReady, withEnv } from "./fixtures.ts";

const eddyBin = EDDY_BIN;
const jobFile = resolve(import.meta.dirname, "jobs/file-sink.ts");
const EVENTS = 100_000;
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const PART = /^min=\d\d\/part-\d+-\d+\.ndjson$/;

/** The failure-free run's committed records, of `events` events. */
async function expected(dir: string, events = EVENTS): Promise<string[]> {
  const out = join(dir, `oracle-${events}`);
  await withEnv({ EDDY_FS_OUT_DIR: out, EDDY_FS_EVENTS: String(events), EDDY_FS_FAULT: "" }, () => runJob(fileSinkJob, { mode: "inline", checkpointing: false, logger: silent }).done);
  const oracle = committedRecords(out);
  // One sum per key and 500 ms window that holds some of its events.
  const windows = new Set<string>();
  for (let n = 1; n <= events; n++) windows.add(`${n % 20}:${Math.floor(n / 500)}`);
  assert.equal(oracle.length, windows.size);
  return oracle;
}

function assertOnlyCommittedVisible(out: string, label: string): void {
  const visible = committedParts(out);
  assert.ok(visible.length > 2, `${label}: several parts (${visible.length})`);
  for (const f of visible) assert.match(f, PART, `${label}: ${f} is a committed part name`);
  assert.equal(new Set(visible.map((f) => f.split("/").pop())).size, visible.length, `${label}: no part name used twice`);
}

test("worker threads, parallelism 2: a worker exit or an exception at a random point; the committed files equal the failure-free run's", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-file-sink-"));
  try {
    const want = await expected(dir);
    const seed = Number(process.env.EDDY_FS_SEED ?? Date.now() % 100_000);
    let state = seed;
    const random = (): number => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const kinds = ["exit", "process", "exit"] as const;
    for (let round = 0; round < kinds.length; round++) {
      const out = join(dir, `round-${round}`);
      const atRecord = round === 0 ? Math.floor(EVENTS * 0.9) : 1 + Math.floor(random() * EVENTS);
      const fault = { kind: kinds[round]!, atRecord, marker: join(dir, `fault-${round}`) };
      const label = `seed ${seed}, round ${round}, ${fault.kind} at ${atRecord}`;
      const handle = await withEnv({ EDDY_FS_OUT_DIR: out, EDDY_FS_EVENTS: String(EVENTS), EDDY_FS_FAULT: JSON.stringify(fault) }, async () => {
        const h = runJob(fileSinkJob, {
          mode: "threads",
          parallelism: 2,
          checkpointing: { intervalMs: 20 },
          checkpointDir: join(dir, "checkpoints"),
          jobId: `round-${round}`,
          restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
          logger: silent,
        });
        await h.done;
        return h;
      });
      assert.ok(handle.checkpoints().length > 0, `${label}: checkpoints completed`);
      assertOnlyCommittedVisible(out, label);
      assert.deepEqual(committedRecords(out), want, `${label}: committed records`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("eddy run killed with SIGKILL, resumed with --from-checkpoint: the committed files equal the failure-free run's", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-file-sink-kill-"));
  try {
    // Held back (EDDY_FS_RELEASE, ~5 s) until killed after some checkpoints completed: a busy
    // machine once let the whole input reach the final commit before the poll saw checkpoint 3.
    const events = 1_000_000;
    const want = await expected(dir, events);
    const out = join(dir, "out");
    const checkpoints = join(dir, "checkpoints");
    const release = join(dir, "release");
    const env = { ...process.env, EDDY_FS_OUT_DIR: out, EDDY_FS_EVENTS: String(events), EDDY_FS_FAULT: "", EDDY_FS_RELEASE: release };
    const args = ["run", jobFile, "-p", "2", "-D", "execution.checkpointing.interval=50ms", "--checkpoint-dir", checkpoints, "--job-id", "kill", "--no-progress"];
    const { killed, stderr } = await killWhenReady(args, env, () => {
      const latest = latestCheckpoint(join(checkpoints, "kill"));
      return latest !== undefined && Number(/chk-(\d+)$/.exec(latest)![1]) >= 3 && committedParts(out).length > 0;
    });
    assert.ok(killed, `the job finished before it could be killed; stderr:\n${stderr}`);
    const partial = committedRecords(out).length;
    assert.ok(partial > 0 && partial < want.length, `partial output before the kill: ${partial}`);
    assert.ok(allFiles(out).some((f) => f.split("/").pop()!.startsWith(".")), "the kill left in-progress files");

    const from = latestCheckpoint(join(checkpoints, "kill"))!;
    writeFileSync(release, "");
    const resumed = spawnSync(process.execPath, [eddyBin, ...args, "--from-checkpoint", from], { encoding: "utf8", env });
    assert.equal(resumed.status, 0, resumed.stderr);
    assertOnlyCommittedVisible(out, "after the resume");
    assert.deepEqual(committedRecords(out), want, "committed records over both runs");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("disk full: the job fails with FILE_SINK_IO_FAILED after its restarts; once space is freed, resumed with --from-latest-checkpoint, the committed files equal the failure-free run's", async () => {
  // A real full disk: a 2 MiB tmpfs, mounted in a mount namespace of the child (unshare -r -m:
  // no privileges needed where user namespaces are allowed), filled up by a ballast file once the
  // job has completed a checkpoint (the job runs slowly until then: EDDY_FS_RELEASE), and emptied
  // before the resume.
  const dir = mkdtempSync(join(tmpdir(), "eddy-file-sink-full-"));
  try {
    const events = 400_000;
    const want = await expected(dir, events);
    const out = join(dir, "out");
    const copy = join(dir, "copy");
    mkdirSync(out);
    mkdirSync(copy);
    const checkpoints = join(dir, "checkpoints");
    const args = ["run", jobFile, "-p", "2", "-D", "execution.checkpointing.interval=50ms", "-D", "restart-strategy.type=fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=2", "-D", "restart-strategy.fixed-delay.delay=10ms", "--checkpoint-dir", checkpoints, "--job-id", "full", "--no-progress"];
    const run = `"$NODE" "$EDDY" ${args.map((a) => `'${a}'`).join(" ")}`;
    const script = `set -u
mount -t tmpfs -o size=2m tmpfs "$OUT" || exit 90
${run} > "$DIR/run1.log" 2>&1 &
job=$!
i=0
until ls "$CHECKPOINTS"/full/chk-*/_manifest > /dev/null 2>&1 || [ $i -ge 6000 ]; do sleep 0.01; i=$((i + 1)); done
cat /dev/zero > "$OUT/ballast" 2> /dev/null
touch "$DIR/release"
wait $job; echo $? > "$DIR/rc1"
rm "$OUT/ballast"
EDDY_FS_RELEASE= ${run} --from-latest-checkpoint > "$DIR/run2.log" 2>&1; echo $? > "$DIR/rc2"
cp -a "$OUT/." "$COPY/"`;
    const env = { ...process.env, EDDY_FS_OUT_DIR: out, EDDY_FS_EVENTS: String(events), EDDY_FS_FAULT: "", EDDY_FS_RELEASE: join(dir, "release"), NODE: process.execPath, EDDY: eddyBin, OUT: out, DIR: dir, COPY: copy, CHECKPOINTS: checkpoints };
    const child = spawnSync("unshare", ["-r", "-m", "sh", "-c", script], { encoding: "utf8", env });
    assert.equal(child.status, 0, `could not run the job on a small tmpfs (unshare -r -m, mount -t tmpfs): status ${child.status}, ${child.error ?? child.stderr}`);
    const read = (f: string): string => readFileSync(join(dir, f), "utf8");
    const first = read("run1.log");
    assert.equal(read("rc1").trim(), "1", `the job failed once the disk was full:\n${first}`);
    // The task fails with the sink's error, or — when the full disk shows first as the sink's
    // snapshot failing to persist — the checkpoint it declines fails the job (no failed
    // checkpoint tolerated), naming the sink's error.
    assert.match(first, / code=FILE_SINK_IO_FAILED |file sink could not write [^\n]* code=CHECKPOINT_FAILURES/, first);
    assert.match(first, /no space left on the device/, first);
    assert.match(first, / restart=2 /, `the job restarted per its strategy (2 attempts) before failing:\n${first}`);
    assert.doesNotMatch(first, /on garbage collection/, "every file handle was closed, none left to the GC");
    const second = read("run2.log");
    assert.equal(read("rc2").trim(), "0", second);
    assert.match(second, /\[eddy\] resuming from .*chk-\d+\n/, second);
    assertOnlyCommittedVisible(copy, "after the resume");
    assert.deepEqual(committedRecords(copy), want, "committed records over both runs");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Generated orders for the Parquet oracle (deterministic). */
interface Order {
  readonly id: number;
  readonly customer: string;
  readonly amount: number;
  readonly ts: number;
}
const ORDERS = 20_000;
const orders = (): Order[] => Array.from({ length: ORDERS }, (_, id) => ({ id, customer: `c${(id * 7919) % 37}`, amount: ((id * 104729) % 10_000) / 100, ts: Date.UTC(2026, 11, 1) + id * 500 }));

/** Orders as Parquet into EDDY_FS_OUT_DIR, bucketed by `bucket`, 1,000 rows per row group. */
const parquetOrders = (bucket: (o: Order) => string) =>
  FileSink.parquet<Order>(process.env.EDDY_FS_OUT_DIR ?? "out/orders", {
    buckets: bucket,
    rowGroupSize: 1_000,
    columns: [
      { name: "id", type: "INT32" },
      { name: "customer", type: "STRING" },
      { name: "amount", type: "DOUBLE" },
      { name: "ts", type: "DOUBLE" },
    ],
  });

export const parquetJob = defineJob("file-sink-parquet", (env) => {
  env
    .fromCollection(orders())
    .setParallelism(1)
    .rebalance()
    .sinkTo(
      parquetOrders((o) => `dt=2026-12-01/h=${new Date(o.ts).getUTCHours()}`),
    );
});

test("Parquet oracle: DuckDB's aggregate over the committed Parquet files equals its aggregate over the input", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-file-sink-parquet-"));
  try {
    const input = join(dir, "orders.ndjson");
    writeFileSync(input, orders().map((o) => JSON.stringify(o)).join("\n") + "\n");
    const out = join(dir, "out");
    await withEnv({ EDDY_FS_OUT_DIR: out }, () =>
      runJob(parquetJob, { parallelism: 2, checkpointing: { intervalMs: 20 }, checkpointDir: join(dir, "checkpoints"), logger: silent }).done,
    );
    assert.ok(committedParts(out).every((f) => /^dt=2026-12-01\/h=\d+\/part-\d+-\d+\.parquet$/.test(f)), committedParts(out).join(", "));
    const { DuckDBInstance } = await import("@duckdb/node-api");
    const db = await DuckDBInstance.create(":memory:");
    const conn = await db.connect();
    const aggregate = async (from: string): Promise<unknown> =>
      (await conn.runAndReadAll(`select customer, count(*)::bigint as n, round(sum(amount), 2) as total, min(id)::bigint as first, max(id)::bigint as last from ${from} group by customer order by customer`)).getRowObjectsJson();
    const fromInput = await aggregate(`read_json_auto('${input}')`);
    const fromOutput = await aggregate(`read_parquet('${out}/**/*.parquet')`);
    assert.equal((fromInput as unknown[]).length, 37);
    assert.deepEqual(fromOutput, fromInput);
    conn.closeSync();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Parquet in, Parquet out: FileSource.parquet reads what DuckDB wrote, FileSink.parquet writes it again, bucketed. */
export const parquetRoundTripJob = defineJob("parquet-round-trip", (env) => {
  env
    .fromSource(FileSource.parquet<Order>(process.env.EDDY_PQ_IN ?? "in"), WatermarkStrategy.noWatermarks<Order>(), "orders")
    .filter((o) => o.amount >= 10)
    .name("amount >= 10")
    .sinkTo(
      parquetOrders((o) => `customer=${o.customer}`),
    );
});

test("Parquet to Parquet: files DuckDB wrote, read by FileSource, filtered, written by FileSink, give DuckDB the aggregate it computes from the input", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-parquet-round-trip-"));
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const db = await DuckDBInstance.create(":memory:");
  const conn = await db.connect();
  try {
    const input = join(dir, "in");
    mkdirSync(input);
    // Two files with several row groups each, so splits and row groups are both exercised.
    for (const [file, from] of [["a.parquet", 0], ["b.parquet", 10_000]] as const) {
      await conn.run(`COPY (SELECT CAST(i AS INTEGER) AS id, 'c' || (i % 37) AS customer, CAST((i * 7919) % 10000 AS DOUBLE) / 100 AS amount,
        CAST(1796112000000 + i * 500 AS DOUBLE) AS ts FROM range(${from}, ${from + 10_000}) t(i)) TO '${join(input, file)}' (FORMAT parquet, ROW_GROUP_SIZE 2048)`);
    }
    const out = join(dir, "out");
    await withEnv({ EDDY_PQ_IN: input, EDDY_FS_OUT_DIR: out }, () =>
      runJob(parquetRoundTripJob, { parallelism: 2, checkpointing: { intervalMs: 20 }, checkpointDir: join(dir, "checkpoints"), logger: silent }).done,
    );
    const aggregate = async (from: string): Promise<unknown> =>
      (await conn.runAndReadAll(`select customer, count(*)::bigint as n, round(sum(amount), 2) as total, min(id)::bigint as first, max(id)::bigint as last from ${from} group by customer order by customer`)).getRowObjectsJson();
    const fromInput = await aggregate(`(select * from read_parquet('${input}/*.parquet') where amount >= 10)`);
    const fromOutput = await aggregate(`read_parquet('${out}/*/*.parquet', hive_partitioning = false)`);
    assert.equal((fromInput as unknown[]).length, 37);
    assert.deepEqual(fromOutput, fromInput);
  } finally {
    conn.closeSync();
    db.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
});
