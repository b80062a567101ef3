/**
 * Checkpoints and exactly-once recovery, end to end: a job fails at a random record, restarts
 * from its latest checkpoint, and its committed output equals the failure-free run's, record for
 * record (the oracle). Inline mode; seeds are printed on failure.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineJob, TumblingEventTimeWindows, ValueStateDescriptor, WatermarkStrategy, type KeyedProcessFunction } from "eddy";
import { committingCollectSink, runJob } from "eddy/testing";
import { prng } from "./fixtures.ts";

const RECORDS = 300_000;
const KEYS = 37;

interface Counted {
  readonly key: number;
  readonly count: number;
  readonly n: number;
}

/** The fault to inject: throw when the map sees record `atRecord` (once per fault id). */
interface Fault {
  readonly id: string;
  readonly atRecord: number;
}
const firedFaults = new Set<string>();

/** Counts records per key in keyed state and emits each record with the running count. */
const countPerKey: KeyedProcessFunction<number, number, Counted> = {
  processElement(n, ctx, out) {
    const state = ctx.getState(new ValueStateDescriptor<{ count: number }>("count"));
    const count = (state.value()?.count ?? 0) + 1;
    state.update({ count });
    out.collect({ key: ctx.getCurrentKey(), count, n });
  },
};

function countingJob(fault: Fault | undefined) {
  return defineJob("checkpointed-counting", (env) => {
    const counted = env
      .fromSequence(1, RECORDS)
      .map((n: number) => {
        if (fault !== undefined && n === fault.atRecord && !firedFaults.has(fault.id)) {
          firedFaults.add(fault.id);
          throw new Error(`injected fault at record ${n}`);
        }
        return n;
      })
      .keyBy((n) => n % KEYS)
      .process(countPerKey);
    counted.sinkTo(committingCollectSink<Counted>("counted"), "committed");
    // A window stage too: sums per key per 1000 "ms" of event time (the record number).
    counted
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Counted>().withTimestampAssigner((r) => r.n))
      .keyBy((r) => r.key)
      .window(TumblingEventTimeWindows.of(1_000))
      .reduce((a, b) => ({ key: a.key, count: a.count + b.count, n: Math.max(a.n, b.n) }))
      .sinkTo(committingCollectSink<Counted>("windows"), "committed-windows");
  });
}

const sortRows = (rows: readonly Counted[]): string[] => rows.map((r) => `${r.key}:${r.count}:${r.n}`).sort();

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "eddy-checkpoints-"));
}

test("failure-free oracle: every record counted once, per key counts 1..n", async () => {
  const dir = tempDir();
  try {
    const handle = runJob(countingJob(undefined), { checkpointing: { intervalMs: 10 }, checkpointDir: dir, jobId: "oracle" });
    await handle.done;
    const counted = handle.collected<Counted>("counted");
    assert.equal(counted.length, RECORDS);
    assert.equal(handle.restarts, 0);
    assert.ok(handle.checkpoints().some((c) => c.status === "completed"), "some checkpoint completed");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a job that fails at a random record recovers from its checkpoint: committed output equals the failure-free run", async () => {
  const oracleDir = tempDir();
  let expected: { counted: string[]; windows: string[] };
  try {
    const oracle = runJob(countingJob(undefined), { checkpointing: false, checkpointDir: oracleDir });
    await oracle.done;
    expected = { counted: sortRows(oracle.collected("counted")), windows: sortRows(oracle.collected("windows")) };
  } finally {
    rmSync(oracleDir, { recursive: true, force: true });
  }
  const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
  const random = prng(seed);
  const restoredFrom: (number | null)[] = [];
  for (let round = 0; round < 6; round++) {
    const atRecord = 1 + Math.floor(random() * RECORDS);
    const dir = tempDir();
    try {
      const handle = runJob(countingJob({ id: `${seed}-${round}`, atRecord }), {
        checkpointing: { intervalMs: 5 },
        checkpointDir: dir,
        jobId: "faulty",
        restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
      });
      await handle.done;
      const where = `seed ${seed}, round ${round}, fault at record ${atRecord}, restarts ${handle.restarts}`;
      assert.equal(handle.restarts, 1, where);
      assert.deepEqual(sortRows(handle.collected("counted")), expected.counted, where);
      assert.deepEqual(sortRows(handle.collected("windows")), expected.windows, where);
      restoredFrom.push(...handle.restoredFrom);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // Faults late in the run restore from a checkpoint (early ones may start over).
  assert.ok(restoredFrom.some((id) => id !== null), `seed ${seed}: no round restored from a checkpoint (${JSON.stringify(restoredFrom)})`);
});
