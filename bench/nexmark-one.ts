/**
 * One Nexmark query, measured once, in a process of its own so that its peak memory is its own:
 * the Eddy job (with the folding sink) and then the hand-written loop over the same events.
 * Prints one JSON line (bench/nexmark/measurement.ts). Started by bench/nexmark.ts per query and
 * round; by hand:
 *
 *   node -C eddy-source --import tsx bench/nexmark-one.ts --query q5 --events 1000000 --parallelism 2 [--metrics off] [--checkpoint-interval 10s]
 *     [--state-backend disk [--disk-cache-size N] [--disk-cache-bytes SIZE] [--disk-local-recovery]] [--heap-incremental] [--local-aggregation off] [--sink discard]
 *     [--source-yield-rounds N]
 *
 * (add --cpu-prof after `node` to profile the job; workers write their own profiles.)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runJob, type JobResult, type RunOptions } from "eddy/testing";
import { parseBenchArgs } from "./nexmark/args.ts";
import { eventRangeFromSettings } from "./nexmark/event-range.ts";
import { FOLD_COLLECT_NAME } from "./folding-sink.ts";
import type { Measurement } from "./nexmark/measurement.ts";
import { mergeFolds, type OutputFold } from "./output-fold.ts";
import { benchQueryNamed, OUTPUT_DIR_ENV, SINK_ENV } from "./nexmark/queries.ts";
import { nexmarkQuery, QUERY_ENV } from "./jobs/nexmark.ts";

const args = parseBenchArgs(process.argv.slice(2));
const query = benchQueryNamed(args.query);
// Read by the job when it is built, here and on every worker thread.
process.env[QUERY_ENV] = args.query;
process.env[SINK_ENV] = args.sink;

/** With --checkpoint-interval: exactly-once checkpoints into a directory removed at exit. */
function checkpointOptions(): RunOptions {
  if (args.checkpointInterval === undefined) return {};
  const checkpointDir = mkdtempSync(join(tmpdir(), "eddy-nexmark-bench-chk-"));
  process.once("exit", () => rmSync(checkpointDir, { recursive: true, force: true }));
  return { checkpointDir, config: { "execution.checkpointing.interval": args.checkpointInterval, "execution.checkpointing.mode": "exactly-once" } };
}
const checkpointing = checkpointOptions();

/** With --state-backend disk: the disk backend, its store in a directory removed at exit. */
function stateBackendConfig(): Record<string, string> {
  if (args.stateBackend === "heap") return args.heapIncremental ? { "state.backend.heap.incremental": "true" } : {};
  const dir = mkdtempSync(join(tmpdir(), "eddy-nexmark-bench-state-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return {
    "state.backend": "disk",
    "state.backend.disk.dir": dir,
    ...(args.diskCacheSize === undefined ? {} : { "state.backend.disk.cache-size": String(args.diskCacheSize) }),
    ...(args.diskCacheBytes === undefined ? {} : { "state.backend.disk.cache-bytes": args.diskCacheBytes }),
    ...(args.diskLocalRecovery ? { "state.backend.disk.local-recovery": "true" } : {}),
  };
}
const scheduling: Record<string, string> = args.sourceYieldRounds === undefined ? {} : { "taskmanager.scheduling.source-yield-rounds": String(args.sourceYieldRounds) };
const runOptions: RunOptions = { ...checkpointing, config: { ...checkpointing.config, ...stateBackendConfig(), ...scheduling } };

/** For a query whose output is files: a directory each for the job and the loop, removed at exit. */
function outputDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "eddy-nexmark-bench-out-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
const jobOutput = query.readOutput === undefined ? undefined : outputDir();
if (jobOutput !== undefined) process.env[OUTPUT_DIR_ENV] = jobOutput;

/** Runs the job over `events` events; CPU of the whole process (every thread) while it ran. */
async function measureJob(events: number): Promise<{ cpuMs: number; result: JobResult; fold: OutputFold; checkpoints: ReturnType<ReturnType<typeof runJob>["checkpoints"]>; maxRssKb: number }> {
  process.env.NEXMARK_EVENTS = String(events);
  const cpuBefore = process.cpuUsage();
  const handle = runJob(nexmarkQuery, { parallelism: args.parallelism, mode: args.mode, metricsEnabled: args.metrics, localAggregation: args.localAggregation, ...runOptions, jobId: `${args.query}-${events}` });
  const result = await handle.done;
  const cpu = process.cpuUsage(cpuBefore);
  // Before reading back a query's output files, which is not the job's memory.
  const maxRssKb = process.resourceUsage().maxRSS;
  const fold = jobOutput !== undefined ? query.readOutput!(jobOutput) : mergeFolds(handle.collected<OutputFold>(FOLD_COLLECT_NAME));
  return { cpuMs: (cpu.user + cpu.system) / 1000, result, fold, checkpoints: handle.checkpoints(), maxRssKb };
}

// The same job over no events first: what starting it costs (building the workers' bundle of the
// job's code, worker threads starting from it, JIT of the engine), which a long steady-state run
// amortises. The measured job then finds the bundle built.
const empty = await measureJob(0);
const job = await measureJob(args.events);
const peakRssMb = job.maxRssKb / 1024;
const round = (x: number) => Math.round(x * 10) / 10;

let loop: Measurement["loop"];
if (query.handLoop !== undefined && !args.noLoop) {
  const range = eventRangeFromSettings();
  const dir = query.readOutput === undefined ? "" : outputDir();
  const started = performance.now();
  const folded = query.handLoop(range, args.parallelism, dir);
  const ms = performance.now() - started;
  loop = { ms, fold: folded ?? query.readOutput!(dir) };
}

const measurement: Measurement = {
  query: args.query,
  events: args.events,
  parallelism: args.parallelism,
  mode: args.mode,
  durationMs: job.result.durationMs,
  runningMs: job.result.runningMs,
  cpuMs: job.cpuMs,
  startupCpuMs: empty.cpuMs,
  peakRssMb,
  checkpoints: job.checkpoints.length,
  checkpointCosts: job.checkpoints.map((c) => ({ ms: c.durationMs, syncMs: round(c.syncMs), asyncMs: round(c.asyncMs), mb: round(c.bytes / 1048576) })),
  eddy: job.fold,
  comparison: query.comparison(args.parallelism),
  loop,
};
console.log(JSON.stringify(measurement));
