/**
 * What savepoints cost (issue 7), on the keyed counter of bench/checkpoints.ts at 1 M keys
 * (~100 bytes of state per key), parallelism 2 on worker threads:
 *
 *   1. a savepoint taken while the job runs: time from the request to the complete savepoint
 *      directory, and its size;
 *   2. stop with a savepoint: time from the request to the job's end;
 *   3. restore from that savepoint at parallelism 2 (as it was written), 1 and 4 (rescaled):
 *      time from the start of the job to its first record processed, state loaded.
 *
 *   node -C eddy-source --import tsx bench/savepoints.ts [--keys 1000000] [--rounds 3]
 *
 * Medians of `rounds`. Everything is written to a temporary directory, removed at the end.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runJob, type RunOptions } from "eddy/testing";
import { keyedState } from "./jobs/checkpoints.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({ options: { keys: { type: "string", default: "1000000" }, rounds: { type: "string", default: "3" } } });
const KEYS = Number(values.keys);
const ROUNDS = Number(values.rounds);
const root = mkdtempSync(join(tmpdir(), "eddy-bench-savepoints-"));

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const ms = (xs: readonly number[]): string => `${Math.round(median(xs))} ms (${xs.map(Math.round).join(", ")})`;

const base = (jobId: string, parallelism: number): RunOptions => ({
  parallelism,
  mode: parallelism === 1 ? "inline" : "threads",
  metricsIntervalMs: 50,
  checkpointing: { intervalMs: 3_600_000, timeoutMs: 600_000 },
  checkpointDir: join(root, "checkpoints"),
  savepointDir: join(root, "savepoints"),
  jobId,
});

const savepointMs: number[] = [];
const savepointBytes: number[] = [];
const stopMs: number[] = [];
const restoreMs = new Map<number, number[]>([[2, []], [1, []], [4, []]]);
process.env.EDDY_BENCH_CHK_KEYS = String(KEYS);
// Long enough that the job is still running when stopped: every key is seen after KEYS records.
process.env.EDDY_BENCH_CHK_RECORDS = String(KEYS * 200);
try {
  for (let r = 0; r < ROUNDS; r++) {
    const job = runJob(keyedState, base(`sp-${r}`, 2));
    while (job.sourceRecords < KEYS * 1.5) await new Promise((resolve) => setTimeout(resolve, 20));
    let t = performance.now();
    const taken = await job.savepoint();
    savepointMs.push(performance.now() - t);
    savepointBytes.push(taken.bytes);
    t = performance.now();
    const stopped = await job.stop({ savepoint: true });
    await job.done;
    stopMs.push(performance.now() - t);
    for (const parallelism of restoreMs.keys()) {
      const markers = mkdtempSync(join(root, "markers-"));
      process.env.EDDY_BENCH_CHK_MARKERS = markers;
      process.env.EDDY_BENCH_CHK_RUN = "restore";
      const startedAt = Date.now();
      const restored = runJob(keyedState, { ...base(`restore-${r}-${parallelism}`, parallelism), fromSavepoint: stopped!.path });
      const first = join(markers, "first-record-restore");
      for (;;) {
        try {
          restoreMs.get(parallelism)!.push(Number(readFileSync(first, "utf8")) - startedAt);
          break;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
      restored.cancel();
      await restored.done.catch(() => undefined);
      delete process.env.EDDY_BENCH_CHK_MARKERS;
      delete process.env.EDDY_BENCH_CHK_RUN;
    }
  }
  console.log(`# Savepoint benchmark — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, keyed counter at ${KEYS.toLocaleString("en")} keys, parallelism 2, ${ROUNDS} rounds (medians)\n`);
  console.log("| what | time | size |");
  console.log("|---|---|---|");
  console.log(`| savepoint while running | ${ms(savepointMs)} | ${mb(median(savepointBytes))} |`);
  console.log(`| stop with a savepoint | ${ms(stopMs)} | |`);
  for (const [parallelism, times] of restoreMs) {
    console.log(`| restore at parallelism ${parallelism}${parallelism === 2 ? " (as written)" : " (rescaled)"}: start to first record | ${ms(times)} | |`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
