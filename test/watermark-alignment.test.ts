/**
 * Watermark alignment (WatermarkStrategy.withWatermarkAlignment, Flink's FLIP-182) end to end: two
 * source subtasks read lanes of event time at very different speeds (test/jobs/aligned-lanes.ts).
 * With alignment the fast subtask stops reading whenever its watermark is more than the drift
 * ahead of the slow one's, and reads on as the slow one catches up: no record is lost, and no fast
 * record runs further ahead than the drift plus one record's step. Without it the fast lane is done
 * while the slow one has barely begun. Inline (both subtasks on this thread: the records reach
 * their sinks in the order they were emitted) and on two worker threads (reports and answers cross
 * threads; the lead is read where the lanes meet downstream).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defineJob, WatermarkStrategy } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { alignedLanes, DRIFT_MS, lanes, LANES, leadsInOrder, splitAlignedLanes, splitUnalignedLanes, unalignedLanes, type LaneRecord } from "./jobs/aligned-lanes.ts";

const RECORDS = LANES.reduce((n, l) => n + l.records, 0);
const FAST_STEP_MS = LANES.find((l) => l.id === "fast")!.stepMs;

/** Sum of the sources' `numWatermarkAlignmentPauses` counters. */
function pauses(metrics: readonly { readonly counters: Readonly<Record<string, number>> }[]): number {
  let n = 0;
  for (const m of metrics) for (const [k, v] of Object.entries(m.counters)) if (k.endsWith("numWatermarkAlignmentPauses")) n += v;
  return n;
}

/** Every record of both lanes, once. */
function assertComplete(records: readonly LaneRecord[]): void {
  const expected = LANES.flatMap((l) => Array.from({ length: l.records }, (_, i) => `${l.id}@${l.stepMs * i}`));
  assert.deepEqual(records.map((r) => `${r.lane}@${r.ts}`).sort(), expected.sort());
}

test("inline: with alignment the fast subtask stays within the drift of the slow one, and every record arrives", async () => {
  lanes.reset(true);
  const handle = runJob(alignedLanes, { parallelism: 2, mode: "inline" });
  await handle.done;
  const records = handle.collected<LaneRecord>("records");
  assertComplete(records);
  // It paused (once per slow record, about) and never ran past the bound by more than one record
  // (inline, the records reach their chained sinks in the order the two subtasks emitted them).
  assert.ok(pauses(handle.metrics()) > 0, "the fast subtask was paused");
  const { settled } = leadsInOrder(records);
  assert.ok(settled <= DRIFT_MS + FAST_STEP_MS, `fast records ran ${settled} ms ahead of the slow lane (bound ${DRIFT_MS} + ${FAST_STEP_MS})`);
  assert.ok(settled >= DRIFT_MS / 2, `the fast lane used its drift (${settled} ms)`);
});

test("inline, with checkpoints every 20 ms: barriers pass a paused source, every checkpoint completes, every record arrives", async () => {
  lanes.reset(true);
  const checkpointDir = mkdtempSync(join(tmpdir(), "eddy-alignment-"));
  try {
    const handle = runJob(alignedLanes, { parallelism: 2, mode: "inline", checkpointing: { intervalMs: 20 }, checkpointDir });
    await handle.done;
    assertComplete(handle.collected<LaneRecord>("records"));
    assert.ok(pauses(handle.metrics()) > 0, "the fast subtask was paused");
    const stats = handle.checkpoints().filter((c) => !c.isSavepoint);
    assert.ok(stats.length >= 10, `${stats.length} checkpoints`);
    assert.deepEqual(stats.filter((c) => c.status !== "completed").map((c) => `${c.checkpointId}: ${c.status}`), []);
    // Measured in the reader: with checkpoints the collect sink takes records a checkpoint at a time.
    assert.ok(lanes.maxLeadSettled <= DRIFT_MS + FAST_STEP_MS, `fast records ran ${lanes.maxLeadSettled} ms ahead`);
    assert.ok(lanes.maxLeadSettled >= DRIFT_MS / 2, `the fast lane used its drift (${lanes.maxLeadSettled} ms)`);
  } finally {
    rmSync(checkpointDir, { recursive: true, force: true });
  }
});

test("inline, the control: without alignment the fast lane runs far ahead", async () => {
  lanes.reset(true);
  const handle = runJob(unalignedLanes, { parallelism: 2, mode: "inline" });
  await handle.done;
  const records = handle.collected<LaneRecord>("records");
  assertComplete(records);
  assert.equal(pauses(handle.metrics()), 0);
  const { all } = leadsInOrder(records);
  assert.ok(all > 5 * DRIFT_MS, `without alignment the fast lane led by ${all} ms`);
});

test("worker threads: reports and answers cross threads; the fast subtask is paused and every record arrives", async () => {
  lanes.reset(false);
  const handle = runJob(alignedLanes, { parallelism: 2, mode: "threads" });
  assert.equal(await handle.mode, "threads");
  await handle.done;
  assertComplete(handle.collected<LaneRecord>("records"));
  assert.ok(pauses(handle.metrics()) > 0, "the fast subtask was paused");
  // Downstream, fast records arrive at most about the drift ahead of the slow lane (batches in
  // flight add a little); without alignment they arrive up to the whole 2 s ahead.
  const { settled } = leadsInOrder(handle.collected<LaneRecord>("arrivals"));
  assert.ok(settled <= 2 * DRIFT_MS, `fast records arrived ${settled} ms ahead of the slow lane downstream (drift ${DRIFT_MS})`);
});

test("worker threads, the control: without alignment fast records arrive far ahead downstream", async () => {
  lanes.reset(false);
  const handle = runJob(unalignedLanes, { parallelism: 2, mode: "threads" });
  await handle.done;
  assertComplete(handle.collected<LaneRecord>("records"));
  const { settled } = leadsInOrder(handle.collected<LaneRecord>("arrivals"));
  // The fast lane is done before the slow lane's second record: nothing after it to measure, or far ahead.
  assert.ok(settled === Number.NEGATIVE_INFINITY || settled > 5 * DRIFT_MS, `without alignment the fast lane arrived ${settled} ms ahead`);
});

for (const mode of ["inline", "threads"] as const) {
  test(`per split (${mode}): one reader holds both lanes and pauses the fast split alone; it stays within the drift, and every record arrives`, async () => {
    const handle = runJob(splitAlignedLanes, { parallelism: 1, mode });
    assert.equal(await handle.mode, mode);
    await handle.done;
    const records = handle.collected<LaneRecord>("records");
    assertComplete(records);
    const { settled } = leadsInOrder(records);
    assert.ok(pauses(handle.metrics()) > 0, "the fast split was paused");
    // The split is paused after the poll whose record crossed the bound: one record of overshoot at most.
    assert.ok(settled <= DRIFT_MS + FAST_STEP_MS, `fast records ran ${settled} ms ahead of the slow lane (bound ${DRIFT_MS} + ${FAST_STEP_MS})`);
    assert.ok(settled >= DRIFT_MS / 2, `the fast lane used its drift (${settled} ms)`);
  });
}

test("per split, the control: without alignment the fast split runs far ahead on the same reader", async () => {
  const handle = runJob(splitUnalignedLanes, { parallelism: 1, mode: "inline" });
  await handle.done;
  const records = handle.collected<LaneRecord>("records");
  assertComplete(records);
  assert.ok(leadsInOrder(records).all > 5 * DRIFT_MS, `without alignment the fast lane led by ${leadsInOrder(records).all} ms`);
});

test("alignment is refused where there is no source to pause, and bad settings are refused", () => {
  const aligned = WatermarkStrategy.forMonotonousTimestamps<LaneRecord>().withWatermarkAlignment("g", 1000);
  assert.deepEqual(aligned.alignment, { group: "g", maxAllowedDriftMs: 1000, updateIntervalMs: 1000 });
  assert.throws(() => WatermarkStrategy.forMonotonousTimestamps().withWatermarkAlignment("", 1000), TypeError);
  assert.throws(() => WatermarkStrategy.forMonotonousTimestamps().withWatermarkAlignment("g", -1), RangeError);
  assert.throws(() => WatermarkStrategy.forMonotonousTimestamps().withWatermarkAlignment("g", 1000, 0), RangeError);
  // Kept by the strategy's other builders.
  assert.deepEqual(aligned.withIdleness(50).alignment, aligned.alignment);
});

test("assignTimestampsAndWatermarks refuses a strategy with alignment (there is no source to pause)", async () => {
  const job = defineJob("aligned-without-source", (env) => {
    env
      .fromElements<LaneRecord>({ lane: "a", ts: 1 })
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<LaneRecord>().withTimestampAssigner((r) => r.ts).withWatermarkAlignment("g", 1000))
      .sinkTo(collectSink<LaneRecord>("out"));
  });
  await assert.rejects(async () => runJob(job, { parallelism: 1 }).done, (e: unknown) => (e as { code?: string }).code === "WATERMARK_ALIGNMENT_WITHOUT_SOURCE");
});
