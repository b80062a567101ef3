/**
 * `state.verify-copy-none` end to end: a job that changes a `copy: "none"` value in place without
 * writing it back fails with STATE_MUTATED_IN_PLACE, inline and on worker threads, by the run
 * option or the configuration key; the same job written correctly runs and counts right.
 * (The check itself: packages/eddy/src/runtime/operators/copy-none-check.test.ts.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runJob } from "eddy/testing";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { changedInPlace, changedNeverReadAgain, KEYS, NUMBERS, windowedJob, writtenBack } from "./jobs/copy-none.ts";

/** [key, its highest count], by key: a count per record, so the highest is the key's total. */
function highestCounts(counts: readonly { key: number; n: number }[]): [number, number][] {
  const highest = new Map<number, number>();
  for (const { key, n } of counts) highest.set(key, Math.max(n, highest.get(key) ?? 0));
  return [...highest].sort((a, b) => a[0] - b[0]);
}

for (const [mode, parallelism] of [["inline", 1], ["threads", 2]] as const) {
  test(`a value changed in place fails the job with STATE_MUTATED_IN_PLACE (${mode}, parallelism ${parallelism})`, async () => {
    for (const check of [{ verifyCopyNone: true }, { config: { "state.verify-copy-none": "true" } }]) {
      const handle = runJob(changedInPlace, { mode, parallelism, ...check });
      await assert.rejects(handle.done, (e: Error & { code?: string }) => {
        assert.equal(e.code, "STATE_MUTATED_IN_PLACE", e.message);
        assert.match(e.message, /state 'counter' \(copy: "none"\), key [012]: .*changed in place and not written back/);
        return true;
      });
    }
  });

  test(`with the check on, a job that writes its changes back counts right (${mode}, parallelism ${parallelism})`, async () => {
    const handle = runJob(writtenBack, { mode, parallelism, verifyCopyNone: true });
    await handle.done;
    assert.deepEqual(highestCounts(handle.collected("counts")), Array.from({ length: KEYS }, (_, k) => [k, NUMBERS / KEYS]));
  });
}

test("a change never read again fails the job at a checkpoint (or at the end of the input)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-copy-none-"));
  try {
    const handle = runJob(changedNeverReadAgain, { mode: "threads", parallelism: 2, verifyCopyNone: true, checkpointing: { intervalMs: 50 }, checkpointDir: dir });
    await assert.rejects(handle.done, (e: Error & { code?: string }) => {
      assert.equal(e.code, "STATE_MUTATED_IN_PLACE", e.message);
      assert.match(e.message, /key 1: .*\(found (at a checkpoint|at the end of the input);/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("process window functions: global and per-window copy: \"none\" state are checked too", async () => {
  const clean = runJob(windowedJob("none"), { mode: "inline", verifyCopyNone: true });
  await clean.done;
  const rows = clean.collected<{ key: number; firings: number; total: number }>("windows");
  // One row per key and window, with the window's sum and the key's firings so far.
  const expected = new Map<string, number>();
  for (let n = 1; n <= NUMBERS; n++) expected.set(`${n % KEYS}@${Math.floor(n / 100)}`, (expected.get(`${n % KEYS}@${Math.floor(n / 100)}`) ?? 0) + n);
  assert.equal(rows.length, expected.size);
  assert.deepEqual(rows.map((r) => r.total).sort((a, b) => a - b), [...expected.values()].sort((a, b) => a - b));
  for (let key = 0; key < KEYS; key++) {
    const firings = rows.filter((r) => r.key === key).map((r) => r.firings);
    assert.deepEqual(firings, firings.map((_, i) => i + 1), `key ${key} counts its firings`);
  }
  const global = runJob(windowedJob("global"), { mode: "inline", verifyCopyNone: true });
  await assert.rejects(global.done, (e: Error & { code?: string }) => {
    assert.equal(e.code, "STATE_MUTATED_IN_PLACE", e.message);
    assert.match(e.message, /state 'firings' \(copy: "none"\), key [012]: .*found at the next access/);
    return true;
  });
  const window = runJob(windowedJob("window"), { mode: "inline", verifyCopyNone: true });
  await assert.rejects(window.done, (e: Error & { code?: string }) => {
    assert.equal(e.code, "STATE_MUTATED_IN_PLACE", e.message);
    assert.match(e.message, /state 'window-sum' \(copy: "none"\), key [012] in window .*found at the next access/);
    return true;
  });
});

test("without the check, the in-place job runs to the end: the heap backend keeps the change (what the check is for)", async () => {
  const handle = runJob(changedInPlace, { mode: "inline", parallelism: 1 });
  await handle.done;
  assert.deepEqual(highestCounts(handle.collected("counts")), Array.from({ length: KEYS }, (_, k) => [k, NUMBERS / KEYS]));
});
