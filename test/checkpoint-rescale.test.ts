/**
 * Restoring a checkpoint at another parallelism (the groundwork of savepoint rescaling, issue
 * 7): a job at parallelism 2 fails and stays down; the same job resumes from its latest
 * checkpoint at parallelism 1 and at 4. Keyed state is found per key group in whichever old
 * subtask's file held it, source splits are dealt to the new subtasks, and the output its
 * two-phase file sink committed over both runs equals the failure-free run, record for record.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runJob } from "eddy/testing";
import * as checkpointed from "./jobs/checkpointed.ts";
import { committedFiles, latestCheckpoint } from "./jobs/checkpointed.ts";




async function runInto(outDir: string, options: Parameters<typeof runJob>[1], fault?: checkpointed.Fault): Promise<void> {
  process.env.EDDY_CHK_OUT_DIR = outDir;
  process.env.EDDY_CHK_FAULT = fault === undefined ? "" : JSON.stringify(fault);
  try {
    await runJob(checkpointed.countingJob, options).done;
  } finally {
    delete process.env.EDDY_CHK_OUT_DIR;
    delete process.env.EDDY_CHK_FAULT;
  }
}

test("a checkpoint taken at parallelism 2 restores at parallelism 1 and 4 with the failure-free output", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-rescale-"));
  try {
    const oracleOut = join(dir, "oracle");
    await runInto(oracleOut, { mode: "inline", checkpointing: false });
    const expected = { counted: committedFiles(oracleOut, "counted"), windows: committedFiles(oracleOut, "windows") };
    assert.equal(expected.counted.length, checkpointed.RECORDS);

    let keyedCheckpoint = "";
    for (const parallelism of [1, 4]) {
      const out = join(dir, `out-${parallelism}`);
      const checkpoints = join(dir, `checkpoints-${parallelism}`);
      const fault: checkpointed.Fault = { kind: "process", atRecord: Math.floor(checkpointed.RECORDS * 0.9), marker: join(dir, `fault-${parallelism}`) };
      // Fails once and stays down (no restarts).
      await assert.rejects(
        runInto(out, { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 10 }, checkpointDir: checkpoints, jobId: "rescale", restartStrategy: { type: "none" } }, fault),
        /injected fault/,
      );
      const from = latestCheckpoint(join(checkpoints, "rescale"));
      assert.ok(from !== undefined, "a checkpoint completed before the failure");
      keyedCheckpoint = from;
      await runInto(out, {
        mode: parallelism === 1 ? "inline" : "threads",
        parallelism,
        // Keeps the checkpoint restored from (the last check below uses it again).
        checkpointing: { intervalMs: 10, retained: 1_000 },
        checkpointDir: checkpoints,
        jobId: "rescale",
        fromCheckpoint: from,
      });
      assert.deepEqual(committedFiles(out, "counted"), expected.counted, `counts, 2 → ${parallelism}`);
      assert.deepEqual(committedFiles(out, "windows"), expected.windows, `windows, 2 → ${parallelism}`);
    }

    // Keyed state is stored per key group: another number of key groups is refused, by name.
    await assert.rejects(
      runInto(join(dir, "out-mismatch"), {
        mode: "inline",
        parallelism: 1,
        maxParallelism: 64,
        checkpointing: { intervalMs: 10 },
        checkpointDir: join(dir, "checkpoints-mismatch"),
        jobId: "rescale",
        fromCheckpoint: keyedCheckpoint,
      }),
      /MAX_PARALLELISM_MISMATCH|max parallelism 128 .* runs with max parallelism 64/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
