/**
 * Pane savepoints: test/fixtures/pane-savepoints/<version>/ hold savepoints of the pane job
 * (test/jobs/golden-panes.ts: sliding windows on the pane operator, with and without allowed
 * lateness) written by earlier versions of Eddy (test/fixtures/savepoints/generate.ts v<N>
 * panes). v1 stored each pane under its start (state `window-panes`); this version keeps panes
 * under their number (`window-pane-numbers`) and moves restored ones over when the operator
 * starts. A restored run's output equals a run that never stopped, record for record, at the
 * savepoint's parallelism and at others; what it snapshots then holds no pane under its start.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runJob, type RunOptions } from "eddy/testing";
import { openSavepoint } from "eddy/savepoint";
import goldenPanes from "./jobs/golden-panes.ts";

const FIXTURES = join(import.meta.dirname, "fixtures", "pane-savepoints");
const OUTPUTS = ["sliding", "sliding-late"] as const;

async function run(options: RunOptions): Promise<Record<(typeof OUTPUTS)[number], string[]>> {
  const job = runJob(goldenPanes, { mode: "inline", restartStrategy: { type: "none" }, ...options });
  await job.done;
  const sorted = (name: string) => job.collected<unknown>(name).map((v) => JSON.stringify(v)).sort();
  return { sliding: sorted("sliding"), "sliding-late": sorted("sliding-late") };
}

const oracle = await run({ checkpointing: false });

const savepoints = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((v) => v.isDirectory())
  .flatMap((v) => readdirSync(join(FIXTURES, v.name)).map((name) => ({ version: v.name, name, path: join(FIXTURES, v.name, name) })));

test("the v1 pane savepoint holds panes under their start, and cleanup timers", async () => {
  assert.ok(oracle.sliding.length > 100 && oracle["sliding-late"].length > 100, "the oracle run fires windows");
  const v1 = savepoints.find((s) => s.version === "v1" && s.name === "mid");
  assert.ok(v1 !== undefined, JSON.stringify(savepoints));
  const reader = await openSavepoint(v1.path);
  for (const uid of OUTPUTS) {
    const cells = [...reader.keyedState(uid, "window-panes")];
    assert.ok(cells.length > 50, `${uid}: ${cells.length} panes`);
    // Pane starts: multiples of the slide (100 and 50), not pane numbers.
    assert.ok(cells.some((c) => typeof c.namespace === "number" && c.namespace >= 500), `${uid}: pane starts`);
  }
  assert.ok([...reader.timers("sliding-late")].some((t) => t.namespace !== "fire"), "cleanup timers namespaced by pane start");
});

/** Where a restore puts its state: the heap backend, or the disk backend (its store in the run's directory). */
const BACKENDS = { heap: () => ({}), disk: (dir: string) => ({ "state.backend": "disk", "state.backend.disk.dir": join(dir, "state") }) };

for (const sp of savepoints) {
  for (const [parallelism, backend] of [[2, "heap"], [1, "heap"], [3, "heap"], [2, "disk"]] as const) {
    test(`pane savepoint ${sp.version}/${sp.name} restores at parallelism ${parallelism} on the ${backend} backend with the output of an uninterrupted run`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "eddy-pane-savepoint-"));
      try {
        const out = await run({ parallelism, config: BACKENDS[backend](dir), checkpointing: { intervalMs: 3_600_000 }, checkpointDir: join(dir, "checkpoints"), jobId: "panes-restored", fromSavepoint: sp.path });
        for (const name of OUTPUTS) assert.deepEqual(out[name], oracle[name], name);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
}

test("a job restored from v1 snapshots its panes under their numbers, and restores from that with the same output", async () => {
  const v1 = savepoints.find((s) => s.version === "v1" && s.name === "mid")!;
  const dir = mkdtempSync(join(tmpdir(), "eddy-pane-savepoint-"));
  process.env.EDDY_GOLDEN_HOLD = "1600";
  try {
    const options: RunOptions = { mode: "inline", restartStrategy: { type: "none" }, checkpointing: { intervalMs: 3_600_000 }, checkpointDir: join(dir, "checkpoints"), savepointDir: dir, jobId: "panes-again" };
    const job = runJob(goldenPanes, { ...options, fromSavepoint: v1.path });
    // v1 read 1..1250 (splits 0 and 1, half of 2); up to the hold: 1251..1500 and 1501..1600.
    const deadline = Date.now() + 30_000;
    while (job.sourceRecords < 350 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(job.sourceRecords, 350);
    const savepoint = await job.stop({ savepoint: true });
    await job.done;
    const reader = await openSavepoint(savepoint!.path);
    for (const uid of OUTPUTS) {
      const numbered = [...reader.keyedState(uid, "window-pane-numbers")];
      assert.ok(numbered.length > 20, `${uid}: ${numbered.length} panes`);
      const states = reader.operators().find((o) => o.uid === uid)!.keyedStates.map((s) => s.name);
      const legacy = states.includes("window-panes") ? [...reader.keyedState(uid, "window-panes")] : [];
      assert.deepEqual(legacy, [], `${uid}: no pane under its start`);
    }
    delete process.env.EDDY_GOLDEN_HOLD;
    const out = await run({ ...options, jobId: "panes-again-restored", fromSavepoint: savepoint!.path });
    for (const name of OUTPUTS) assert.deepEqual(out[name], oracle[name], name);
  } finally {
    delete process.env.EDDY_GOLDEN_HOLD;
    rmSync(dir, { recursive: true, force: true });
  }
});
