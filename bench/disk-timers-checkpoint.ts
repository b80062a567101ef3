/**
 * What timers cost in an incremental checkpoint of a windowed job on the disk state backend
 * (issue 29: timers stay on the heap and are written whole in every checkpoint, in the task
 * files; keyed state goes into shared base/delta files). A job: a sequence with event time n,
 * keyed by a hash of n over `--keys` keys, tumbling event-time windows so long that every key has
 * one live window (one event-time timer per key) all through the run, a sum per window; the disk
 * backend with incremental checkpoints every `--interval` ms, inline, parallelism 1. After the
 * run every retained checkpoint is measured: the bytes of its task files (the timers, and the
 * source's position) against the bytes of the shared file it wrote (a delta: the keys changed
 * since the previous checkpoint; a base: all of them).
 *
 *   node -C eddy-source --import tsx bench/disk-timers-checkpoint.ts [--keys 200000] [--records 3000000] [--interval 200]
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { sharedFileCheckpointId } from "../packages/eddy/src/internal.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({ options: { keys: { type: "string", default: "200000" }, records: { type: "string", default: "3000000" }, interval: { type: "string", default: "200" } } });
const KEYS = Number(values.keys);
const RECORDS = Number(values.records);
const root = mkdtempSync(join(tmpdir(), "eddy-bench-timers-"));

const job = defineJob("timers-bench", (env) => {
  env
    .fromSequence(1, RECORDS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
    .keyBy((n: number) => (Math.imul(n, 0x9e3779b1) >>> 0) % KEYS)
    .window(TumblingEventTimeWindows.of(RECORDS * 10))
    .reduce((a: number, b: number) => a + b)
    .uid("sums")
    .sinkTo(collectSink<number>("sums"));
});

try {
  const started = performance.now();
  const run = runJob(job, {
    mode: "inline",
    checkpointing: { intervalMs: Number(values.interval), retained: 1_000 },
    checkpointDir: join(root, "checkpoints"),
    jobId: "timers",
    config: { "state.backend": "disk", "state.backend.disk.dir": join(root, "state"), "state.backend.disk.max-chain-length": "1000" },
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  await run.done;
  const ms = performance.now() - started;
  const jobDir = join(root, "checkpoints", "timers");
  const shared = readdirSync(join(jobDir, "shared"));
  const rows: { id: number; task: number; keyed: number; kind: string }[] = [];
  for (const name of readdirSync(jobDir)) {
    const m = /^chk-(\d+)$/.exec(name);
    if (m === null) continue;
    const id = Number(m[1]);
    const files = readdirSync(join(jobDir, name)).filter((f) => f !== "_manifest");
    const task = files.reduce((sum, f) => sum + statSync(join(jobDir, name, f)).size, 0);
    const mine = shared.filter((f) => sharedFileCheckpointId(f) === id);
    const keyed = mine.reduce((sum, f) => sum + statSync(join(jobDir, "shared", f)).size, 0);
    rows.push({ id, task, keyed, kind: mine.some((f) => f.includes("-base-")) ? "base" : "delta" });
  }
  rows.sort((a, b) => a.id - b.id);
  // Deltas while windows were live (after the end of input the windows fired: nothing left).
  const deltas = rows.filter((r) => r.kind === "delta" && r.keyed > 0);
  const kb = (n: number): string => `${(n / 1024).toFixed(0)} KiB`;
  console.log(`${KEYS.toLocaleString("en")} keys (one live window timer each), ${RECORDS.toLocaleString("en")} records in ${(ms / 1000).toFixed(1)} s, checkpoints every ${values.interval} ms: ${rows.length} (${deltas.length} deltas); load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}; ${new Date().toISOString()}`);
  console.log("\n| checkpoint | kind | task files (timers) | shared file (keyed state) | timers ÷ keyed |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.id} | ${r.kind} | ${kb(r.task)} | ${kb(r.keyed)} | ${(r.task / Math.max(1, r.keyed)).toFixed(2)} |`);
  const t = median(deltas.map((r) => r.task));
  const k = median(deltas.map((r) => r.keyed));
  console.log(`\nDeltas, medians: task files ${kb(t)}, shared delta ${kb(k)}: the timers are ${((100 * t) / (t + k)).toFixed(0)} % of an incremental checkpoint's bytes (${(t / KEYS).toFixed(1)} B per timer).`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
