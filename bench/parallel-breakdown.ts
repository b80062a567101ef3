/**
 * Where the CPU of part (b) at parallelism 2 goes (bench/parallel.ts measures its speed-up; this
 * says why it is what it is). The keyed count runs with its keys routed three ways
 * (bench/jobs/parallel.ts `routedKeyedCount`): no record crossing between the two workers, every
 * record crossing, and about half (the bench's own keys); beside it, parallelism 1 and the
 * ceiling (two independent one-worker jobs of half the records each, at once).
 *
 *   node -C eddy-source --import tsx bench/parallel-breakdown.ts [records=10000000] [rounds=5] [workRounds=0]
 *
 * With workRounds > 0, the keyed stage also does that many rounds of integer mixing per record
 * (part (b2) of bench/parallel.ts, 50 rounds there).
 *
 * Wall time on this 2-vCPU VM moves by ±25 % between minutes; CPU time per record moves much less,
 * so that is what the table compares. Each variant runs at `records` and at a twentieth of it,
 * alternated round by round; the difference is the steady-state cost per record, without worker
 * start-up and module loading (fixed per job). CPU comes from the kernel per thread
 * (/proc/self/task, Linux only): the job's worker threads, and V8's shared platform threads
 * (concurrent compilation and GC helpers), which run on the same two cores.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { FOLD_COLLECT_NAME } from "./folding-sink.ts";
import { mergeFolds, type OutputFold } from "./output-fold.ts";
import { runJob, type JobResult, type RunOptions } from "eddy/testing";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 10_000_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const WORK_ROUNDS = Number(process.argv[4] ?? 0);
const SMALL = Math.floor(N / 20);
process.env.EDDY_BENCH_KEYS = "1000";
process.env.EDDY_BENCH_WORK_ROUNDS = String(WORK_ROUNDS);

const jobs = await import("./jobs/parallel.ts");

if (!existsSync("/proc/self/task")) {
  console.error("bench/parallel-breakdown.ts reads per-thread CPU from /proc/self/task (Linux only)");
  process.exit(2);
}

/** CPU ms per thread id of this process, from the kernel's counters (clock ticks of 10 ms). */
function threadTimes(): Map<string, number> {
  const times = new Map<string, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      times.set(tid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return times;
}

interface Sample {
  readonly runningMs: number;
  /** CPU of the job's worker threads (all of the process's CPU but the main and platform threads). */
  readonly workerMs: number;
  /** CPU of threads that outlive the job: V8's platform threads (compilers, GC helpers), libuv's pool. */
  readonly platformMs: number;
  /** Bytes encoded onto channels between workers. */
  readonly bytesOut: number;
}

async function measure(records: number, run: () => Promise<JobResult>[]): Promise<Sample> {
  process.env.EDDY_BENCH_RECORDS = String(records);
  const before = threadTimes();
  const cpu0 = process.cpuUsage();
  const results = await Promise.all(run());
  const cpu = process.cpuUsage(cpu0);
  const after = threadTimes();
  let platformMs = 0;
  let mainMs = 0;
  for (const [tid, ms] of after) {
    const prior = before.get(tid);
    if (prior === undefined) continue;
    if (tid === String(process.pid)) mainMs = ms - prior;
    else platformMs += ms - prior;
  }
  const totalMs = (cpu.user + cpu.system) / 1000;
  return {
    runningMs: Math.max(...results.map((r) => r.runningMs)),
    workerMs: totalMs - mainMs - platformMs,
    platformMs,
    bytesOut: results.reduce((sum, r) => sum + r.metrics.reduce((s, m) => s + m.bytesOut, 0), 0),
  };
}

async function one(job: Parameters<typeof runJob>[0], options: RunOptions, records: number): Promise<JobResult> {
  const handle = runJob(job, options);
  const result = await handle.done;
  const counted = mergeFolds(handle.collected<OutputFold>(FOLD_COLLECT_NAME)).count;
  if (counted !== records) throw new Error(`sink counted ${counted} records, expected ${records}`);
  return result;
}

const P2: RunOptions = { mode: "threads", parallelism: 2, workers: 2 };
const P1: RunOptions = { mode: "threads", parallelism: 1, workers: 1 };
const routed = (routing: string) => (records: number) => {
  process.env.EDDY_BENCH_ROUTING = routing;
  return [one(jobs.routedKeyedCount, P2, records)];
};
const keyedJob = WORK_ROUNDS > 0 ? jobs.keyedWork : jobs.keyedCount;
const variants: Record<string, (records: number) => Promise<JobResult>[]> = {
  "parallelism 1": (records) => [one(keyedJob, P1, records)],
  "ceiling: 2 jobs of half": (records) => {
    process.env.EDDY_BENCH_RECORDS = String(records / 2);
    return [one(keyedJob, P1, records / 2), one(keyedJob, P1, records / 2)];
  },
  "parallelism 2, none cross": routed("local"),
  "parallelism 2, half cross (b)": routed("natural"),
  "parallelism 2, all cross": routed("remote"),
};

const samples = new Map<string, { full: Sample[]; small: Sample[] }>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(variants)) {
    const entry = samples.get(name) ?? { full: [], small: [] };
    samples.set(name, entry);
    entry.small.push(await measure(SMALL, () => run(SMALL)));
    entry.full.push(await measure(N, () => run(N)));
  }
}

const fmt = (x: number, digits = 0) => x.toFixed(digits).padStart(7);
if (N < 10_000_000) {
  console.log("(fewer than 10 M records: the kernel counts CPU in 10 ms ticks and warm-up is most of a run, so the per-record figures mean little)\n");
}
console.log(`Eddy parallel breakdown: keyed count${WORK_ROUNDS > 0 ? ` with ${WORK_ROUNDS} rounds of work per record` : ""}, ${N.toLocaleString("en")} records (and ${SMALL.toLocaleString("en")}), 1,000 keys, ${availableParallelism()} cores, median of ${ROUNDS}\n`);
console.log(`  ${"variant".padEnd(31)} running  worker CPU  platform CPU   steady ns/record: workers  platform  encoded B/record`);
const steady = new Map<string, number>();
for (const [name, { full, small }] of samples) {
  const m = (xs: Sample[], f: (s: Sample) => number) => median(xs.map(f));
  const workerNs = ((m(full, (s) => s.workerMs) - m(small, (s) => s.workerMs)) * 1e6) / (N - SMALL);
  const platformNs = ((m(full, (s) => s.platformMs) - m(small, (s) => s.platformMs)) * 1e6) / (N - SMALL);
  steady.set(name, workerNs + platformNs);
  console.log(
    `  ${name.padEnd(31)} ${fmt(m(full, (s) => s.runningMs))} ms ${fmt(m(full, (s) => s.workerMs))} ms ${fmt(m(full, (s) => s.platformMs))} ms ${fmt(workerNs, 1)}       ${fmt(platformNs, 1)}   ${fmt(m(full, (s) => s.bytesOut) / N, 1)}`,
  );
}
// The decomposition below assumes the placement it measures: no bytes between workers when every
// key is owned by the keyed subtask of the source subtask's index, ~20 bytes a record when none is.
const noneBytes = median(samples.get("parallelism 2, none cross")!.full.map((s) => s.bytesOut)) / N;
if (noneBytes > 1) throw new Error(`"none cross" encoded ${noneBytes.toFixed(1)} B/record: subtasks i of the source and the keyed count no longer share a worker`);
const p1 = steady.get("parallelism 1")!;
const none = steady.get("parallelism 2, none cross")!;
const all = steady.get("parallelism 2, all cross")!;
const half = steady.get("parallelism 2, half cross (b)")!;
const running = (name: string) => median(samples.get(name)!.full.map((s) => s.runningMs));
// The ceiling bounds what any exchange could reach here; "none cross" bounds any exchange that must route.
const speedUps = [
  ["parallelism 2 (half cross)", "parallelism 2, half cross (b)"],
  ["no record crossing", "parallelism 2, none cross"],
  ["two independent jobs", "ceiling: 2 jobs of half"],
]
  .map(([label, name]) => `${label} ${(running("parallelism 1") / running(name!)).toFixed(2)}×`)
  .join(", ");
const signed = (x: number) => `${x >= 0 ? "+" : "-"}${Math.abs(x).toFixed(1)}`;
console.log(`
  steady CPU per record, all threads: parallelism 1 ${p1.toFixed(1)} ns; parallelism 2 ${half.toFixed(1)} ns (${(half / p1).toFixed(2)}×)
  - two workers, no record crossing: ${signed(none - p1)} ns per record (the unchained keyBy edge, routing, two tasks per worker)
  - a record crossing between workers: ${signed(all - none)} ns (encode, ring, decode, more garbage)
  with both cores fully used and nothing else, parallelism 2 could reach ${((2 * p1) / half).toFixed(2)}× of parallelism 1 at this cost per record
  measured, wall time over parallelism 1's: ${speedUps}`);
