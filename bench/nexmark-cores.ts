/**
 * What a second core gives real queries: every stateful Nexmark query at parallelism 1 (inline,
 * one thread: what a job gets by default at parallelism 1) and at parallelism 2 (two worker
 * threads), in alternated rounds (p1 first in even rounds, p2 first in odd ones), each run in a
 * fresh process (bench/nexmark-one.ts; its hand-written loop, which checks the output, in the first
 * round only). Prints per query the median
 * events/s at each parallelism and their ratio, the geometric mean of the ratios, and then the
 * machine's own two-core ceiling without Eddy (bench/machine-scaling.ts, run in the same session):
 * a ratio is only as good as what the machine gives a second thread.
 *
 *   npm run bench:nexmark-cores -- [--events 10000000] [--rounds 3] [--query q5,q7] [--checkpoint-interval 10s]
 *     [--scaling-records 20000000] [--two-processes] [--steady]
 *
 * q0 and q1 run last as references outside the mean: no keyBy, nothing crosses threads.
 *
 * `--two-processes` adds a third variant to each round: two parallelism-1 processes at once, each
 * with half the events (the second from id events/2), the query's own ceiling on this machine
 * with nothing shared and nothing exchanged (each has its own heap, JIT warm-up and GC threads,
 * as each worker at p2 has). Its rate is the events of both over the slower one's running time.
 * What it does not count: the work a real split adds (the join partners and windows that span the
 * two halves); what it does count: that the two share the machine's two cores with their V8
 * helper threads, caches and memory bandwidth.
 *
 * `--steady` measures every variant (p1, p2 and, with --two-processes, the pair) twice per round:
 * over the events and over a quarter of them (the same first ids), each in a fresh process, and
 * adds the steady-state rate, the events between the two runs over the time between them:
 * (N − N/4) / (T(N) − T(N/4)). Whatever both runs pay alike drops out: each isolate's JIT warm-up,
 * its heap growing from nothing, the first window's fill. A job that runs for hours runs at that
 * rate; a run of a second or two at p2 (two isolates warming up beside each other, without the
 * idle core that compiles and collects for p1) is dominated by the start. Flink's Nexmark runs
 * are 100 M events per query. bench/parallel-breakdown.ts measures steady CPU the same way.
 *
 * Rates count the whole job, worker start-up included ("job"), and from the moment every subtask
 * was deployed ("running", JobResult.runningMs); the ratio uses "running" (start-up is a fixed
 * cost that longer jobs amortise; bench/worker-start.ts measures it), and the job rate is printed
 * beside it, and "p1 cores": the process's CPU over the job's time at p1 (V8's GC and compiler
 * threads use the second core even with one worker). Each parallelism's output is checked
 * against the loop and across rounds as bench/nexmark.ts checks it.
 */
import { execFile } from "node:child_process";
import { availableParallelism, cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseBenchArgs, type BenchArgs } from "./nexmark/args.ts";
import { measureInChild } from "./nexmark/measure-child.ts";
import type { Measurement } from "./nexmark/measurement.ts";
import { benchQueryNamed } from "./nexmark/queries.ts";
import { reportQuery } from "./nexmark/report.ts";
import { geomean, median } from "./stats.ts";

/** The stateful queries the cores target is over (issue 30, target 1). */
const STATEFUL = ["q3", "q4", "q5", "q7", "q8", "q11", "q12", "q15", "q16", "q17", "q18", "q19", "q20"];
/**
 * References outside the mean: q0 (pass-through) and q1 (a map) have no keyBy, so nothing crosses
 * threads; each worker generates and handles its own half. Their ratio is what two workers give
 * Eddy's per-record path, its allocations and its garbage on this machine with no exchange at all.
 */
const REFERENCES = ["q0", "q1"];

const argv = process.argv.slice(2);
const twoAt = argv.indexOf("--two-processes");
const twoProcesses = twoAt >= 0;
if (twoProcesses) argv.splice(twoAt, 1);
const steadyAt = argv.indexOf("--steady");
const steady = steadyAt >= 0;
if (steady) argv.splice(steadyAt, 1);
const scalingAt = argv.indexOf("--scaling-records");
const scalingRecords = scalingAt < 0 ? 20_000_000 : Number(argv[scalingAt + 1]);
if (scalingAt >= 0) argv.splice(scalingAt, 2);
if (!Number.isSafeInteger(scalingRecords) || scalingRecords < 0) throw new RangeError("--scaling-records must be a non-negative integer (0: skip)");
const parsed = parseBenchArgs(argv.includes("--events") ? argv : [...argv, "--events", "10000000"]);
const args: BenchArgs = { ...parsed, rounds: argv.includes("--rounds") ? parsed.rounds : 3 };
const queries = args.query === "all" ? [...STATEFUL, ...REFERENCES] : args.query.split(",").map((q) => q.trim());
for (const q of queries) benchQueryNamed(q); // fail on a typo before running anything

const p1: Partial<BenchArgs> = { parallelism: 1, mode: "inline" };
const p2: Partial<BenchArgs> = { parallelism: 2, mode: "threads" };

console.log(
  `Nexmark, parallelism 2 ÷ 1: ${args.events.toLocaleString("en")} events, median of ${args.rounds} alternated rounds; checkpoints ${args.checkpointInterval === undefined ? "off" : `every ${args.checkpointInterval}, exactly-once`}; ` +
    `local aggregation ${args.localAggregation ? "on" : "off"}; ${availableParallelism()} cores (${cpus()[0]?.model ?? "unknown CPU"}), Node ${process.version}, ${new Date().toISOString().slice(0, 16)}, load ${loadavg()[0]!.toFixed(1)}\n`,
);
console.log(
  `${"query".padEnd(6)} ${"p1 running".padStart(12)} ${"p2 running".padStart(12)} ${"p2÷p1".padStart(7)}   ${"p1 job".padStart(11)} ${"p2 job".padStart(11)} ${"p2÷p1".padStart(7)}  ${"p1 cores".padStart(8)}  ${twoProcesses ? `${"2 procs".padStart(10)} ${"÷p1".padStart(6)}  ` : ""}` +
    `${steady ? `${"p1 steady".padStart(12)} ${"p2 steady".padStart(12)} ${"p2÷p1".padStart(7)}  ${twoProcesses ? `${"2p steady".padStart(10)} ${"÷p1".padStart(6)}  ` : ""}` : ""}output`,
);

const rate = (m: Measurement, running: boolean): number => m.events / ((running ? m.runningMs : m.durationMs) / 1000);
const fmt = (eps: number): string => `${(eps / 1e6).toFixed(2)} M/s`;

/** With --steady: the short run's events, a quarter of the run's. */
const shortEvents = Math.round(args.events / 4);
/**
 * Events per second between a run of `short` events and one of `long`: what both pay alike drops
 * out. NaN when the long run was not the longer (the runs are too short for the machine's noise):
 * the query's steady median (`strictMedian`) and the geometric mean are then NaN too.
 */
const steadyRate = (long: { events: number; runningMs: number }, short: { events: number; runningMs: number }): number =>
  long.runningMs > short.runningMs ? (long.events - short.events) / ((long.runningMs - short.runningMs) / 1000) : Number.NaN;

/** The median, or NaN if any of `xs` is (a plain sort would put a NaN anywhere). */
const strictMedian = (xs: readonly number[]): number => (xs.some(Number.isNaN) ? Number.NaN : median(xs));

/** Two p1 processes at once over the two halves of `events` events: the events of both, and the slower one's running time. */
async function twoProcessRun(query: string, events: number): Promise<{ events: number; runningMs: number }> {
  const half = Math.floor(events / 2);
  const [a, b] = await Promise.all([
    measureInChild(query, { ...args, events: half }, { ...p1, noLoop: true }),
    measureInChild(query, { ...args, events: events - half }, { ...p1, noLoop: true }, { NEXMARK_FIRST_EVENT_ID: String(half) }),
  ]);
  return { events, runningMs: Math.max(a.runningMs, b.runningMs) };
}

const ratios: number[] = [];
const twoRatios: number[] = [];
const steadyRatios: number[] = [];
const steadyTwoRatios: number[] = [];
const shortRatios: number[] = [];
let mismatches = 0;
const ratio = (x: number): string => `${x.toFixed(2)}×`;
for (const query of queries) {
  const ones: Measurement[] = [];
  const twos: Measurement[] = [];
  const pairs: { events: number; runningMs: number }[] = [];
  // With --steady: per round, each variant's steady rate against its own short run of that round.
  const steadyOnes: number[] = [];
  const steadyTwos: number[] = [];
  const steadyPairs: number[] = [];
  // The short runs' own running rates: the same measure as `ones`/`twos` over a quarter of the events.
  const shortOnes: number[] = [];
  const shortTwos: number[] = [];
  for (let r = 0; r < args.rounds; r++) {
    const order = r % 2 === 0 ? [p1, p2] : [p2, p1];
    for (const override of order) {
      // The hand-written loop runs in the first round only: it checks the output, it is not timed here.
      const long = await measureInChild(query, args, { ...override, noLoop: r > 0 });
      (override === p1 ? ones : twos).push(long);
      if (steady) {
        const short = await measureInChild(query, { ...args, events: shortEvents }, { ...override, noLoop: true });
        (override === p1 ? steadyOnes : steadyTwos).push(steadyRate(long, short));
        (override === p1 ? shortOnes : shortTwos).push(rate(short, true));
      }
    }
    if (twoProcesses) {
      const long = await twoProcessRun(query, args.events);
      pairs.push(long);
      if (steady) steadyPairs.push(steadyRate(long, await twoProcessRun(query, shortEvents)));
    }
  }
  // CPU of the whole process over the job's time at p1: above 1, V8's GC and compiler threads
  // already use the second core when one worker runs (the ceiling for p2 is then below 2).
  const p1Cores = median(ones.map((m) => m.cpuMs / m.durationMs));
  const [r1, r2, j1, j2] = [median(ones.map((m) => rate(m, true))), median(twos.map((m) => rate(m, true))), median(ones.map((m) => rate(m, false))), median(twos.map((m) => rate(m, false)))];
  const checks = [reportQuery(ones, false).outputCheck, reportQuery(twos, false).outputCheck];
  if (checks.some((c) => c.startsWith("MISMATCH"))) mismatches++;
  const output = checks[0] === checks[1] ? checks[0] : `p1 ${checks[0]}; p2 ${checks[1]}`;
  const pairRate = twoProcesses ? median(pairs.map((p) => p.events / (p.runningMs / 1000))) : 0;
  const [s1, s2, sPair] = steady ? [strictMedian(steadyOnes), strictMedian(steadyTwos), twoProcesses ? strictMedian(steadyPairs) : 0] : [0, 0, 0];
  if (!REFERENCES.includes(query)) {
    ratios.push(r2! / r1!);
    if (twoProcesses) twoRatios.push(pairRate / r1!);
    if (steady) steadyRatios.push(s2 / s1);
    if (steady) shortRatios.push(median(shortTwos) / median(shortOnes));
    if (steady && twoProcesses) steadyTwoRatios.push(sPair / s1);
  }
  const pairColumns = twoProcesses ? `${fmt(pairRate).padStart(10)} ${ratio(pairRate / r1!).padStart(6)}  ` : "";
  const steadyColumns = steady ? `${fmt(s1).padStart(12)} ${fmt(s2).padStart(12)} ${ratio(s2 / s1).padStart(7)}  ${twoProcesses ? `${fmt(sPair).padStart(10)} ${ratio(sPair / s1).padStart(6)}  ` : ""}` : "";
  console.log(
    `${query.padEnd(6)} ${fmt(r1!).padStart(12)} ${fmt(r2!).padStart(12)} ${ratio(r2! / r1!).padStart(7)}   ${fmt(j1!).padStart(11)} ${fmt(j2!).padStart(11)} ${ratio(j2! / j1!).padStart(7)}  ${p1Cores.toFixed(2).padStart(8)}  ${pairColumns}${steadyColumns}${output}`,
  );
}
const meanRatio = geomean(ratios);
if (ratios.length > 0) console.log(`\nGeometric mean of p2÷p1 (running): ${meanRatio.toFixed(2)}× over ${ratios.length} stateful queries (${REFERENCES.join(", ")}: references, not in it); slowest ${Math.min(...ratios).toFixed(2)}×; load now ${loadavg()[0]!.toFixed(1)}`);
if (twoRatios.length > 0) {
  const twoGeomean = geomean(twoRatios);
  console.log(`Geometric mean of two processes ÷ p1 (each process half the events, nothing exchanged): ${twoGeomean.toFixed(2)}×; p2 reaches ${((100 * meanRatio) / twoGeomean).toFixed(0)} % of it`);
}
if (steadyRatios.length > 0) {
  const steadyMean = geomean(steadyRatios);
  console.log(`Geometric mean of p2÷p1 (running) over the short runs alone (${shortEvents.toLocaleString("en")} events): ${geomean(shortRatios).toFixed(2)}×; slowest ${Math.min(...shortRatios).toFixed(2)}×`);
  console.log(`Geometric mean of p2÷p1 (steady state, runs of ${args.events.toLocaleString("en")} less runs of ${shortEvents.toLocaleString("en")} events): ${steadyMean.toFixed(2)}×; slowest ${Math.min(...steadyRatios).toFixed(2)}×`);
  if (steadyTwoRatios.length > 0) {
    const steadyTwo = geomean(steadyTwoRatios);
    console.log(`Geometric mean of two processes ÷ p1 (steady state): ${steadyTwo.toFixed(2)}×; p2 reaches ${((100 * steadyMean) / steadyTwo).toFixed(0)} % of it`);
  }
}

if (scalingRecords > 0) {
  console.log("\nThe machine's own ceiling, in the same session (bench/machine-scaling.ts):");
  const script = fileURLToPath(new URL("./machine-scaling.ts", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [...process.execArgv, script, String(scalingRecords), "3"], { maxBuffer: 1024 * 1024 });
  process.stdout.write(stdout);
}
if (mismatches > 0) {
  console.error(`${mismatches} quer${mismatches === 1 ? "y" : "ies"} produced other output than the hand-written loop`);
  process.exitCode = 1;
}
