import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runJob } from "eddy/testing";
import job from "./jobs/worker-shutdown.ts";

test("a cancelled job's worker threads finish the checkpoint files they are writing before they are terminated", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-worker-shutdown-"));
  const log = join(dir, "writes.log");
  process.env.EDDY_SLOW_STORAGE_LOG = log;
  process.env.EDDY_SLOW_STORAGE_MS = "400";
  try {
    const handle = runJob(job, {
      mode: "threads",
      parallelism: 2,
      checkpointing: { intervalMs: 100 },
      checkpointDir: join(dir, "checkpoints"),
      checkpointStorage: { module: join(import.meta.dirname, "jobs/slow-storage.ts") },
    });
    // Cancel while a task file is being written (each takes 400 ms).
    const deadline = Date.now() + 30_000;
    while (!(existsSync(log) && readFileSync(log, "utf8").includes("start "))) {
      assert.ok(Date.now() < deadline, "no checkpoint write started within 30 s");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    handle.cancel();
    await assert.rejects(handle.done, (e: unknown) => (e as { code?: string }).code === "JOB_CANCELLED");
    const lines = readFileSync(log, "utf8").trim().split("\n");
    const started = lines.filter((l) => l.startsWith("start ")).map((l) => l.slice(6));
    const ended = new Set(lines.filter((l) => l.startsWith("end ")).map((l) => l.slice(4)));
    assert.ok(started.length > 0);
    assert.deepEqual(started.filter((w) => !ended.has(w)), [], `writes cut short by the workers' termination (log:\n${lines.join("\n")})`);
  } finally {
    delete process.env.EDDY_SLOW_STORAGE_LOG;
    delete process.env.EDDY_SLOW_STORAGE_MS;
    rmSync(dir, { recursive: true, force: true });
  }
});
