/**
 * What checkpoints cost and how fast a job recovers, in one run (issue 6):
 *
 *   1. Nexmark q5 (parallelism 2, worker threads): events/s with checkpoints off, every 10 s and
 *      every 1 s — the ratio to "off" measured in the same run is the cost.
 *   2. A keyed counter job at 100 K and 1 M keys (a small record per key): the same three
 *      settings, with each setting's checkpoints (count, median duration, synchronous part,
 *      alignment, bytes).
 *   3. Recovery: the keyed job at 1 M keys fails once near its end; the time from the failure to
 *      the first record processed again after restoring the latest checkpoint, and its size.
 *
 *   node -C eddy-source --import tsx bench/checkpoints.ts [--events 10000000] [--records 10000000] [--rounds 3] [--only q5|state|recovery] [--keys 100000,1000000]
 *
 * Medians of `rounds` runs (recovery: of `rounds` failures). Checkpoints go to a temporary
 * directory, removed at the end.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runJob, type RunOptions } from "eddy/testing";
import { nexmarkQuery, QUERY_ENV } from "./jobs/nexmark.ts";
import { keyedState } from "./jobs/checkpoints.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "10000000" },
    records: { type: "string", default: "10000000" },
    rounds: { type: "string", default: "3" },
    only: { type: "string" },
    /** Comma-separated key counts of the keyed-state runs (default 100000,1000000). */
    keys: { type: "string", default: "100000,1000000" },
  },
});
const EVENTS = Number(values.events);
const RECORDS = Number(values.records);
const ROUNDS = Number(values.rounds);
const root = mkdtempSync(join(tmpdir(), "eddy-bench-checkpoints-"));

const k = (n: number): string => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${Math.round(n / 1e3)} K`);
const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

interface RunStats {
  readonly perSecond: number;
  readonly completed: number;
  readonly durationMs: number;
  readonly syncMs: number;
  readonly alignmentMs: number;
  readonly bytes: number;
}

let runId = 0;
/** One run: records (or events) per second of the running job, and its checkpoints' medians. */
async function measure(job: typeof keyedState, count: number, intervalMs: number | undefined): Promise<RunStats> {
  const options: RunOptions = {
    parallelism: 2,
    mode: "threads",
    checkpointing: intervalMs === undefined ? false : { intervalMs },
    checkpointDir: root,
    jobId: `run-${runId++}`,
  };
  const handle = runJob(job, options);
  const result = await handle.done;
  const done = handle.checkpoints().filter((c) => c.status === "completed");
  return {
    perSecond: (count * 1000) / result.runningMs,
    completed: done.length,
    durationMs: median(done.map((c) => c.durationMs ?? 0)),
    syncMs: median(done.map((c) => c.syncMs)),
    alignmentMs: median(done.map((c) => c.alignmentMs)),
    bytes: median(done.map((c) => c.bytes)),
  };
}

/** Runs the three settings round-robin (so load drifts hit them alike); medians per setting. */
async function compare(title: string, job: typeof keyedState, count: number, unit: string): Promise<void> {
  const settings: [string, number | undefined][] = [
    ["off", undefined],
    ["every 10 s", 10_000],
    ["every 1 s", 1_000],
  ];
  const runs = new Map<string, RunStats[]>(settings.map(([name]) => [name, []]));
  for (let r = 0; r < ROUNDS; r++) for (const [name, interval] of settings) runs.get(name)!.push(await measure(job, count, interval));
  const off = median(runs.get("off")!.map((s) => s.perSecond));
  console.log(`\n${title}\n`);
  console.log(`| checkpoints | ${unit}/s | ÷ off | completed per run | duration | sync part | alignment | size |`);
  console.log("|---|---|---|---|---|---|---|---|");
  for (const [name] of settings) {
    const s = runs.get(name)!;
    const rate = median(s.map((x) => x.perSecond));
    const any = s.some((x) => x.completed > 0);
    const cell = (f: (x: RunStats) => number, fmt: (n: number) => string): string => (any ? fmt(median(s.filter((x) => x.completed > 0).map(f))) : "—");
    console.log(
      `| ${name} | ${k(rate)} | ${(rate / off).toFixed(2)} | ${median(s.map((x) => x.completed))} | ${cell((x) => x.durationMs, (n) => `${Math.round(n)} ms`)} | ${cell((x) => x.syncMs, (n) => `${n.toFixed(1)} ms`)} | ${cell((x) => x.alignmentMs, (n) => `${n.toFixed(1)} ms`)} | ${cell((x) => x.bytes, mb)} |`,
    );
  }
}

/** The keyed job at 1 M keys fails near its end; time from the failure to the first record after the restore. */
async function recovery(): Promise<void> {
  const times: number[] = [];
  const sizes: number[] = [];
  const restoredFrom: (number | null)[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const markers = mkdtempSync(join(root, "markers-"));
    process.env.EDDY_BENCH_CHK_MARKERS = markers;
    process.env.EDDY_BENCH_CHK_FAULT_AT = String(Math.floor(RECORDS * 0.9));
    try {
      const handle = runJob(keyedState, {
        parallelism: 2,
        mode: "threads",
        checkpointing: { intervalMs: 2_000, retained: 100 },
        checkpointDir: root,
        jobId: `recovery-${r}`,
        restartStrategy: { type: "fixed-delay", attempts: 1, delayMs: 0 },
      });
      await handle.done;
      const failedAt = Number(readFileSync(join(markers, "fault"), "utf8"));
      const resumedAt = Number(readFileSync(join(markers, "first-after-restore"), "utf8"));
      times.push(resumedAt - failedAt);
      restoredFrom.push(...handle.restoredFrom);
      const restored = handle.restoredFrom[0];
      if (restored !== null && restored !== undefined) sizes.push(checkpointBytes(join(root, `recovery-${r}`, `chk-${restored}`)));
    } finally {
      delete process.env.EDDY_BENCH_CHK_FAULT_AT;
      delete process.env.EDDY_BENCH_CHK_MARKERS;
    }
  }
  console.log(`\nRecovery: keyed counter, ${k(Number(process.env.EDDY_BENCH_CHK_KEYS))} keys, parallelism 2, fault at 90 % of ${k(RECORDS)} records\n`);
  console.log("| from failure to first record after restore | restored checkpoint size | restored from |");
  console.log("|---|---|---|");
  console.log(`| ${Math.round(median(times))} ms (runs: ${times.map((t) => Math.round(t)).join(", ")}) | ${sizes.length === 0 ? "—" : mb(median(sizes))} | ${restoredFrom.map((id) => (id === null ? "start" : `chk-${id}`)).join(", ")} |`);
}

function checkpointBytes(dir: string): number {
  const manifest = readFileSync(join(dir, "_manifest"), "latin1");
  let total = 0;
  for (const m of manifest.matchAll(/"size":(\d+)/g)) total += Number(m[1]);
  return total;
}

try {
  console.log(`# Checkpoint benchmark — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${ROUNDS} rounds (medians)`);
  if (values.only === undefined || values.only === "q5") {
    process.env[QUERY_ENV] = "q5";
    process.env.NEXMARK_EVENTS = String(EVENTS);
    await compare(`Nexmark q5, ${k(EVENTS)} events, parallelism 2`, nexmarkQuery as typeof keyedState, EVENTS, "events");
  }
  if (values.only === undefined || values.only === "state") {
    process.env.EDDY_BENCH_CHK_RECORDS = String(RECORDS);
    for (const keys of values.keys.split(",").map(Number)) {
      process.env.EDDY_BENCH_CHK_KEYS = String(keys);
      await compare(`Keyed counter, ${k(keys)} keys, ${k(RECORDS)} records, parallelism 2`, keyedState, RECORDS, "records");
    }
  }
  if (values.only === undefined || values.only === "recovery") {
    process.env.EDDY_BENCH_CHK_RECORDS = String(RECORDS);
    process.env.EDDY_BENCH_CHK_KEYS = String(1_000_000);
    await recovery();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
