/**
 * Golden savepoints: the savepoints under test/fixtures/savepoints/<version>/ were written by
 * earlier versions of Eddy (test/fixtures/savepoints/generate.ts, the job of
 * test/jobs/golden.ts). This version must restore every one of them: the output of a restored
 * run — the savepoint's own output, which its two-phase sinks commit again, and what follows —
 * equals a run that never stopped, record for record; also at another parallelism. A savepoint
 * of a format version from the future is refused, saying which.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EddyError } from "eddy";
import { runJob, type RunOptions } from "eddy/testing";
import golden, { RECORDS } from "./jobs/golden.ts";
import { encodeSnapshotFile, SnapshotFile } from "../packages/eddy/src/internal.ts";

const FIXTURES = join(import.meta.dirname, "fixtures", "savepoints");

interface Output {
  readonly features: string[];
  readonly windows: string[];
  readonly tallies: { subtask: number; total: number; union: readonly string[] }[];
}

async function run(options: RunOptions): Promise<Output> {
  const job = runJob(golden, { mode: "inline", restartStrategy: { type: "none" }, ...options });
  await job.done;
  const sorted = (name: string) => job.collected<unknown>(name).map((v) => JSON.stringify(v)).sort();
  return { features: sorted("features"), windows: sorted("windows"), tallies: job.collected("tallies") };
}

const oracle = await run({ checkpointing: false });
assert.equal(oracle.tallies.length, RECORDS, "the oracle run reads every record");

const savepoints = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((v) => v.isDirectory())
  .flatMap((v) => readdirSync(join(FIXTURES, v.name)).map((name) => ({ version: v.name, name, path: join(FIXTURES, v.name, name) })));

test("golden savepoints are there to restore", () => {
  assert.ok(savepoints.some((s) => s.version === "v1" && s.name === "mid"), JSON.stringify(savepoints));
});

for (const sp of savepoints) {
  for (const parallelism of [2, 1, 3]) {
    test(`golden savepoint ${sp.version}/${sp.name} restores at parallelism ${parallelism} with the output of an uninterrupted run`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "eddy-golden-"));
      try {
        const out = await run({
          parallelism,
          checkpointing: { intervalMs: 3_600_000 },
          checkpointDir: join(dir, "checkpoints"),
          jobId: "golden-restored",
          fromSavepoint: sp.path,
        });
        assert.deepEqual(out.features, oracle.features, "keyed state of every kind, timers");
        assert.deepEqual(out.windows, oracle.windows, "window contents");
        // Operator list state: the final totals of all subtasks add up to every record number.
        const last = new Map<number, (typeof out.tallies)[number]>();
        for (const t of out.tallies) last.set(t.subtask, t);
        assert.equal([...last.values()].reduce((a, t) => a + t.total, 0), (RECORDS * (RECORDS + 1)) / 2);
        // Union list state: each subtask's last tally (after the restore) holds the markers of both
        // subtasks that wrote the savepoint.
        for (const t of last.values()) for (const m of ["subtask-0", "subtask-1"]) assert.ok(t.union.includes(m), `${m} in ${t.union}`);
        if (parallelism === 2) {
          const totals = (ts: typeof out.tallies) => ts.map((t) => `${t.subtask}:${t.total}`).sort();
          assert.deepEqual(totals(out.tallies), totals(oracle.tallies), "at the same parallelism each subtask gets its own list state back");
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
}

test("a savepoint of a future format version is refused, naming the versions", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-golden-future-"));
  try {
    const copy = join(dir, "future");
    cpSync(join(FIXTURES, "v1", "mid"), copy, { recursive: true });
    const manifestPath = join(copy, "_manifest");
    const meta = SnapshotFile.parse(new Uint8Array(readFileSync(manifestPath)), { fileName: manifestPath, expectKind: "manifest" }).meta as Record<string, unknown>;
    writeFileSync(manifestPath, encodeSnapshotFile("manifest", { ...meta, version: 2 }, []));
    await assert.rejects(run({ checkpointing: { intervalMs: 3_600_000 }, checkpointDir: join(dir, "checkpoints"), fromSavepoint: copy }), (e: unknown) => {
      assert.ok(e instanceof EddyError);
      assert.equal(e.code, "CHECKPOINT_UNSUPPORTED_VERSION");
      assert.match(e.message, /manifest version 2 \(this Eddy reads 1\)/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a corrupt savepoint is refused before anything runs, naming the file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-golden-corrupt-"));
  try {
    const copy = join(dir, "corrupt");
    cpSync(join(FIXTURES, "v1", "mid"), copy, { recursive: true });
    const file = join(copy, "task-0-0.snap");
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x10;
    writeFileSync(file, bytes);
    await assert.rejects(run({ checkpointing: { intervalMs: 3_600_000 }, checkpointDir: join(dir, "checkpoints"), fromSavepoint: copy }), (e: unknown) => {
      assert.ok(e instanceof EddyError);
      assert.equal(e.code, "CHECKPOINT_CORRUPT");
      assert.match(e.message, /task-0-0\.snap' checksum mismatch/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
