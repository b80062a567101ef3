/**
 * Checkpoints and exactly-once recovery, end to end (the kill-and-compare test): the job
 * of test/jobs/checkpointed.ts (source → keyed counting state → committed sink, and a keyed
 * window stage → committed sink) fails once at a random point — an exception while processing,
 * a worker thread that exits, an exception in a sink's snapshot or in its commit — restarts from
 * its latest checkpoint, and its committed output equals the failure-free run's, record for record.
 * The seed is printed on failure; EDDY_TEST_SEED replays a run, EDDY_CHK_ROUNDS runs more rounds.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runJob, type RunOptions } from "eddy/testing";
import * as checkpointed from "./jobs/checkpointed.ts";
import type { Counted, Fault, FaultKind } from "./jobs/checkpointed.ts";
import { prng } from "./fixtures.ts";

const sortRows = (rows: readonly Counted[]): string[] => rows.map((r) => `${r.key}:${r.count}:${r.n}`).sort();

interface Output {
  readonly counted: string[];
  readonly windows: string[];
}

async function run(options: RunOptions, fault: Fault | undefined): Promise<{ output: Output; restarts: number; restoredFrom: readonly (number | null)[] }> {
  process.env.EDDY_CHK_FAULT = fault === undefined ? "" : JSON.stringify(fault);
  try {
    const handle = runJob(checkpointed.countingJob, options);
    await handle.done;
    return {
      output: { counted: sortRows(handle.collected("counted")), windows: sortRows(handle.collected("windows")) },
      restarts: handle.restarts,
      restoredFrom: handle.restoredFrom,
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

async function killAndCompare(mode: "inline" | "threads", kinds: readonly FaultKind[], rounds: number): Promise<void> {
  const expected = await failureFree();
  const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
  const random = prng(seed);
  const restoredFrom: (number | null)[] = [];
  for (let round = 0; round < rounds; round++) {
    const dir = mkdtempSync(join(tmpdir(), "eddy-checkpoints-"));
    const kind = kinds[round % kinds.length]!;
    // Anywhere in the first 95 %: early faults usually restart from scratch, later ones from a checkpoint.
    const fault: Fault = { kind, atRecord: 1 + Math.floor(random() * checkpointed.RECORDS * 0.95), marker: join(dir, "fault-fired") };
    const where = `seed ${seed}, round ${round}, ${mode}, fault '${kind}' at record ${fault.atRecord}`;
    try {
      const result = await run(
        {
          mode,
          parallelism: 2,
          checkpointing: { intervalMs: 10 },
          checkpointDir: join(dir, "checkpoints"),
          jobId: "kill-and-compare",
          restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
        },
        fault,
      );
      assert.ok(existsSync(fault.marker), `${where}: the fault never fired`);
      assert.equal(result.restarts, 1, where);
      assert.deepEqual(result.output.counted, expected.counted, `${where}: committed counts differ from the failure-free run`);
      assert.deepEqual(result.output.windows, expected.windows, `${where}: committed windows differ from the failure-free run`);
      restoredFrom.push(...result.restoredFrom);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // Faults late in the run restore from a checkpoint (early ones may start over).
  assert.ok(restoredFrom.some((id) => id !== null), `seed ${seed}: no round restored from a checkpoint (${JSON.stringify(restoredFrom)})`);
}

const rounds = Number(process.env.EDDY_CHK_ROUNDS ?? 0);

test("inline: a fault at a random point, recovery from the latest checkpoint, committed output equals the failure-free run", async () => {
  await killAndCompare("inline", ["process", "snapshot", "commit"], rounds || 6);
});

test("worker threads: a killed worker or a fault in any phase, recovery, committed output equals the failure-free run", async () => {
  await killAndCompare("threads", ["exit", "process", "snapshot", "commit"], rounds || 8);
});
