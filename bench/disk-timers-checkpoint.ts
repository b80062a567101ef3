/**
 * What timers cost in an incremental checkpoint of a windowed job on the disk state backend
 * (issue 29). The job: a sequence with event time n; its first `--keys` records give every key
 * one record (so every key has one live window, one event-time timer, all through the run), the
 * rest go to a fixed `--changed` fraction of the keys (default 1 %), so no delta can hold more
 * than that fraction of the keys; windows so long that none fires before the end of input, a sum
 * per window; the disk backend with incremental checkpoints every `--interval` ms, inline,
 * parallelism 1. `--windows tumbling`: a record into a live window changes no timer;
 * `--windows session` (the default): every record merges its key's session and moves its timer
 * (a deletion and a registration), so the changed keys' timers change too.
 *
 * After the run every retained checkpoint is measured: the bytes of its task files, of the
 * shared file it wrote (a base, every 11 checkpoints: every key; a delta: what changed since the
 * previous checkpoint),
 * and, within those, the timers (the task files' key-group sections before issue 29's timers in
 * the deltas, the shared file's `timers` sections after).
 *
 *   node -C eddy-source --import tsx bench/disk-timers-checkpoint.ts [--keys 200000] [--records 3000000] [--interval 200] [--changed 0.01] [--windows session|tumbling]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { defineJob, EventTimeSessionWindows, TumblingEventTimeWindows, WatermarkStrategy } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { SnapshotFile, sharedFileCheckpointId } from "../packages/eddy/src/internal.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    keys: { type: "string", default: "200000" },
    records: { type: "string", default: "3000000" },
    interval: { type: "string", default: "200" },
    changed: { type: "string", default: "0.01" },
    windows: { type: "string", default: "session" },
  },
});
const KEYS = Number(values.keys);
const RECORDS = Number(values.records);
const HOT = Math.max(1, Math.round(KEYS * Number(values.changed)));
const SESSION = values.windows === "session";
if (!SESSION && values.windows !== "tumbling") throw new Error(`--windows session or tumbling, not ${values.windows}`);
const root = mkdtempSync(join(tmpdir(), "eddy-bench-timers-"));

/** Records 1..KEYS: one per key; then a hash of n over the first HOT keys. */
const keyOf = (n: number): number => (n <= KEYS ? n - 1 : (Math.imul(n, 0x9e3779b1) >>> 0) % HOT);

const job = defineJob("timers-bench", (env) => {
  env
    .fromSequence(1, RECORDS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
    .keyBy(keyOf)
    .window(SESSION ? EventTimeSessionWindows.withGap<number>(RECORDS * 10) : TumblingEventTimeWindows.of(RECORDS * 10))
    .reduce((a: number, b: number) => a + b)
    .uid("sums")
    .sinkTo(collectSink<number>("sums"));
});

/** Bytes of the sections of `file` whose name ends with `suffix`. */
function sectionBytes(path: string, suffix: string): number {
  const file = SnapshotFile.parse(readFileSync(path), { fileName: path.slice(path.lastIndexOf("/") + 1) });
  return file.sections.filter((s) => s.name.endsWith(suffix)).reduce((n, s) => n + s.length, 0);
}

try {
  const started = performance.now();
  const run = runJob(job, {
    mode: "inline",
    checkpointing: { intervalMs: Number(values.interval), retained: 1_000 },
    checkpointDir: join(root, "checkpoints"),
    jobId: "timers",
    // Chains of 10 (the default): a base every 11 checkpoints, the full size to compare a delta with.
    config: { "state.backend": "disk", "state.backend.disk.dir": join(root, "state"), "state.backend.disk.max-chain-length": "10" },
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  await run.done;
  const ms = performance.now() - started;
  const jobDir = join(root, "checkpoints", "timers");
  const shared = readdirSync(join(jobDir, "shared"));
  const rows: { id: number; task: number; keyed: number; timers: number; kind: string }[] = [];
  for (const name of readdirSync(jobDir)) {
    const m = /^chk-(\d+)$/.exec(name);
    if (m === null) continue;
    const id = Number(m[1]);
    const files = readdirSync(join(jobDir, name)).filter((f) => f !== "_manifest");
    const task = files.reduce((sum, f) => sum + statSync(join(jobDir, name, f)).size, 0);
    const mine = shared.filter((f) => sharedFileCheckpointId(f) === id);
    const keyed = mine.reduce((sum, f) => sum + statSync(join(jobDir, "shared", f)).size, 0);
    // Timers: the task files' key-group sections (`<operator>/keyed`: an empty state part and the timers), or the shared file's `timers` sections.
    const timers = files.reduce((sum, f) => sum + sectionBytes(join(jobDir, name, f), "/keyed"), 0) + mine.reduce((sum, f) => sum + sectionBytes(join(jobDir, "shared", f), "timers"), 0);
    rows.push({ id, task, keyed, timers, kind: mine.some((f) => f.includes("-base-")) ? "base" : "delta" });
  }
  rows.sort((a, b) => a.id - b.id);
  // Deltas once every key had its window: after the first base of (nearly) every key's state and timers.
  const full = rows.filter((r) => r.kind === "base").reduce((max, r) => Math.max(max, r.task + r.keyed), 0);
  const steady = rows.find((r) => r.kind === "base" && r.task + r.keyed >= full * 0.9)!.id;
  const deltas = rows.filter((r) => r.kind === "delta" && r.id > steady);
  const kb = (n: number): string => `${(n / 1024).toFixed(0)} KiB`;
  console.log(
    `${KEYS.toLocaleString("en")} keys (one live ${values.windows} window timer each), then ${HOT.toLocaleString("en")} keys (${(100 * HOT / KEYS).toFixed(1)} %) get the rest of the ${RECORDS.toLocaleString("en")} records; ${(ms / 1000).toFixed(1)} s, checkpoints every ${values.interval} ms: ${rows.length} (${deltas.length} deltas measured); load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}; ${new Date().toISOString()}`,
  );
  console.log("\n| checkpoint | kind | task files | shared file | of which timers | checkpoint ÷ largest base |");
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.id} | ${r.kind} | ${kb(r.task)} | ${kb(r.keyed)} | ${kb(r.timers)} | ${((100 * (r.task + r.keyed)) / Math.max(1, full)).toFixed(1)} % |`);
  const t = median(deltas.map((r) => r.task + r.keyed));
  const tm = median(deltas.map((r) => r.timers));
  console.log(`\nDeltas, medians: an incremental checkpoint ${kb(t)} (${((100 * t) / Math.max(1, full)).toFixed(1)} % of the largest base, ${kb(full)}), of which timers ${kb(tm)}.`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
