/**
 * An incremental checkpoint written before the timers moved into the shared files (issue 29's
 * follow-up) still restores: test/fixtures/incremental-v1/disk-v1/chk-2 is checkpoint 2 of the
 * job of test/jobs/disk-keyed.ts (50 keys, 60,000 records; event-time windows and an
 * end-of-input timer per key) on the disk backend at parallelism 1, written by Eddy at 47adc73:
 * its chains (a base and a delta per keyed operator) are of kinds `keyed-base`/`keyed-delta`
 * (version 1: state only) and its timers are in the task files' key-group sections. Resumed from
 * it — into the disk backend at parallelism 1 and into the heap backend at parallelism 2 — the
 * job commits the failure-free output, which needs the restored timers (the totals are emitted
 * by them, the windows fire by them).
 *
 * The fixture was made with that commit's code by running the job with `EDDY_DK_KEYS=50
 * EDDY_DK_RECORDS=60000`, incremental checkpoints every 10 ms, slowed until checkpoint 4 (the
 * `none` fault of the job), and keeping chk-2 and the shared files its manifest lists.
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { RunOptions } from "eddy/testing";
import type { Total, WindowSum } from "./jobs/disk-keyed.ts";
import { SnapshotFile } from "../packages/eddy/src/internal.ts";

process.env.EDDY_DK_KEYS = "50";
process.env.EDDY_DK_RECORDS = "60000";
const diskKeyed = await import("./jobs/disk-keyed.ts");
const { runJob } = await import("eddy/testing");

const FIXTURE = join(import.meta.dirname, "fixtures", "incremental-v1");
const root = mkdtempSync(join(tmpdir(), "eddy-incremental-v1-"));
after(() => rmSync(root, { recursive: true, force: true }));

async function run(options: RunOptions): Promise<{ totals: string[]; windows: string[]; sourceRecords: number }> {
  const job = runJob(diskKeyed.diskKeyedJob, { logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }, ...options });
  await job.done;
  return {
    totals: job.collected<Total>("totals").map((t) => JSON.stringify(t)).sort(),
    windows: job.collected<WindowSum>("windows").map((w) => JSON.stringify(w)).sort(),
    sourceRecords: job.sourceRecords,
  };
}

test("an incremental checkpoint of version 1 (timers in the task files) restores into the disk and the heap backend: the failure-free output", async () => {
  assert.equal(diskKeyed.KEYS, 50);
  // What the fixture is: version 1 chains, timers in the task files.
  const shared = readdirSync(join(FIXTURE, "disk-v1", "shared"));
  for (const name of shared) {
    const file = SnapshotFile.parse(readFileSync(join(FIXTURE, "disk-v1", "shared", name)), { fileName: name });
    assert.equal(file.kind, name.includes("-base-") ? "keyed-base" : "keyed-delta", name);
    assert.ok(file.sections.every((s) => s.name === "keyed"), `${name}: state sections only`);
  }
  const taskSections = readdirSync(join(FIXTURE, "disk-v1", "chk-2"))
    .filter((f) => f.endsWith(".snap"))
    .flatMap((f) => SnapshotFile.parse(readFileSync(join(FIXTURE, "disk-v1", "chk-2", f)), { fileName: f }).sections.filter((s) => s.name.endsWith("/keyed")));
  assert.ok(taskSections.length > 0, "the task files hold key-group sections (the timers)");

  const expected = await run({ mode: "inline", checkpointing: false });
  assert.equal(expected.totals.length, 50);
  // A copy: a run never writes next to a fixture.
  cpSync(FIXTURE, join(root, "checkpoints"), { recursive: true });
  const from = join(root, "checkpoints", "disk-v1", "chk-2");
  const disk = await run({
    mode: "inline",
    parallelism: 1,
    checkpointing: false,
    fromCheckpoint: from,
    config: { "state.backend": "disk", "state.backend.disk.dir": join(root, "state"), "state.backend.disk.cache-size": "8" },
  });
  assert.ok(disk.sourceRecords < diskKeyed.RECORDS, `resumed part-way (the source read ${disk.sourceRecords} of ${diskKeyed.RECORDS})`);
  assert.deepEqual(disk.totals, expected.totals, "disk backend: totals");
  // Windows that fired before the checkpoint were emitted by the run that wrote it: the rest here.
  const firedAfter = expected.windows.filter((w) => disk.windows.includes(w));
  assert.deepEqual(disk.windows, firedAfter, "disk backend: every window emitted is a failure-free one");
  assert.ok(disk.windows.length > 0, "windows fired after the restore");
  const heap = await run({ mode: "inline", parallelism: 2, checkpointing: false, fromCheckpoint: from });
  assert.deepEqual(heap.totals, expected.totals, "heap backend at parallelism 2: totals");
  assert.deepEqual(heap.windows, disk.windows, "heap backend at parallelism 2: windows");
});
