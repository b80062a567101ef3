/**
 * Nexmark on Eddy (issue 5), beside the floor and the anchor measured or quoted in the same run:
 * per query, Eddy's events/s (wall) and events/s per core (CPU time of the whole process, all
 * threads, as the Nexmark harness counts it), peak memory, a hand-written JavaScript loop
 * computing the same answer over the same generated events, and Flink 2.x's published per-core
 * figure (bench/nexmark/flink-per-core.ts).
 *
 *   npm run bench:nexmark -- --query q5 --events 10000000 --parallelism 2
 *   npm run bench:nexmark -- --query all --events 1000000 --parallelism 2 --rounds 3 [--json]
 *
 * Flags: --query all | qN | qN,qM (default all); --events N (default 1,000,000); --parallelism P
 * (default 1); --mode inline | threads (default: inline at parallelism 1, threads above);
 * --rounds R (default 1: figures are medians over R runs); --checkpoint-interval D (exactly-once
 * checkpoints every D during each job, e.g. 10s; default off); --json (one JSON object per line per
 * query, fields in bench/nexmark/report.ts); --no-loop; --metrics on | off (default on: per-record
 * metrics, the `metrics.enabled` key); --state-backend heap | disk (default heap) and
 * --disk-cache-size N (keys the disk backend caches per state; its default when absent);
 * --heap-incremental (the heap backend's incremental checkpoints, `state.backend.heap.incremental`);
 * --local-aggregation on | off (default on: the `pipeline.local-aggregation` key); --seconds S (run
 * each query over as many events as its job processes in about S seconds, from a probe run over
 * --events without the loop: long enough for checkpoints to complete during the run, as in Flink's
 * published runs; the row's events column says how many); --sink digest | discard (default digest:
 * the sink folds a digest of every row, checked against the loop's; discard: the job's sink and
 * the loop keep each row without reading it, as the blackhole sink of Flink's Nexmark runs does,
 * and only the rows' count is compared).
 *
 * Every round of every query runs in a child process of its own (bench/nexmark-one.ts), so the peak
 * RSS is that query's: the job's worker threads and the coordinator, measured before its loop runs.
 * The child first runs the same job over no events, whose CPU is reported as the start-up cost
 * (building the workers' bundle of the job's code, worker threads starting from it, cold JIT);
 * "ex start-up" subtracts it, which is closer to the steady state a long Flink run reports. Job and
 * loop must produce the same output records (count and checksum, bench/output-fold.ts), or the row
 * says MISMATCH and the bench exits with status 1. Where the output depends on timing (q12's
 * processing-time windows, q4's running averages, q15-q19's updates at parallelism > 1), only the
 * part that does not is compared, and the row says so (bench/nexmark/queries.ts).
 */
import { availableParallelism, cpus } from "node:os";
import { parseBenchArgs } from "./nexmark/args.ts";
import type { Measurement } from "./nexmark/measurement.ts";
import { measureInChild } from "./nexmark/measure-child.ts";
import { BENCH_QUERIES, benchQueryNamed } from "./nexmark/queries.ts";
import { reportQuery, type QueryReport } from "./nexmark/report.ts";
import { TABLE_HEADER, tableRow } from "./nexmark/table.ts";
import { median } from "./stats.ts";

const args = parseBenchArgs(process.argv.slice(2));
const queries = args.query === "all" ? Object.keys(BENCH_QUERIES) : args.query.split(",").map((q) => q.trim());
for (const q of queries) benchQueryNamed(q); // fail on a typo before running anything

/** One round of `query` in a fresh process, over `events` events. */
const measure = (query: string, events: number): Promise<Measurement> => measureInChild(query, args, { events });

/** The events of `query`'s rounds: --events, or with --seconds what a probe run says fills them. */
async function eventsFor(query: string): Promise<number> {
  if (args.seconds === undefined) return args.events;
  const probe = await measureInChild(query, args, { noLoop: true });
  const perSecond = (probe.events * 1000) / probe.runningMs;
  return Math.max(args.events, Math.round((perSecond * args.seconds) / 100_000) * 100_000);
}

if (!args.json) {
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  console.log(
    `Nexmark on Eddy: ${args.seconds === undefined ? `${args.events.toLocaleString("en")} events` : `~${args.seconds} s of events per query (probe: ${args.events.toLocaleString("en")})`}, parallelism ${args.parallelism} (${args.mode === "threads" ? "worker threads" : "inline, one thread"}), ` +
      `median of ${args.rounds}; ${args.stateBackend} state backend${args.diskCacheSize === undefined ? "" : ` (cache ${args.diskCacheSize} keys)`}${args.heapIncremental ? " (incremental checkpoints)" : ""}; checkpoints ${args.checkpointInterval === undefined ? "off" : `every ${args.checkpointInterval}, exactly-once`}; sink: ${args.sink === "digest" ? "digest of every row (checked against the loop's)" : "rows discarded unread (only their count checked)"}; ${availableParallelism()} cores (${cpu}), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`,
  );
  console.log("Per core: events / CPU-seconds of the whole process; loop: one thread. ✓/✗: issue 5's targets (≥ 3× Flink V2 per core; stateless: loop ≤ 3× Eddy per core).\n");
  console.log(TABLE_HEADER);
}

let mismatches = 0;
/** Checkpoints completed per query, the median over its rounds (with --checkpoint-interval). */
const checkpointsCompleted: string[] = [];
for (const query of queries) {
  const rounds: Measurement[] = [];
  const events = await eventsFor(query);
  for (let r = 0; r < args.rounds; r++) rounds.push(await measure(query, events));
  checkpointsCompleted.push(`${query} ${median(rounds.map((m) => m.checkpoints))}${args.seconds === undefined ? "" : ` (${(events / 1e6).toFixed(1)} M events)`}`);
  const report: QueryReport = reportQuery(rounds, benchQueryNamed(query).stateless);
  if (report.outputCheck.startsWith("MISMATCH")) mismatches++;
  console.log(args.json ? JSON.stringify(report) : tableRow(report));
}
if ((args.checkpointInterval !== undefined || args.seconds !== undefined) && !args.json) console.log(`\nCheckpoints completed during the job (median): ${checkpointsCompleted.join(", ")}`);
if (mismatches > 0) {
  console.error(`${mismatches} quer${mismatches === 1 ? "y" : "ies"} produced other output than the hand-written loop`);
  process.exitCode = 1;
}
