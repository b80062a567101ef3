/** Runs one round of one query in a fresh process (bench/nexmark-one.ts) and reads its measurement. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { BenchArgs } from "./args.ts";
import type { Measurement } from "./measurement.ts";

const ONE = fileURLToPath(new URL("../nexmark-one.ts", import.meta.url));
const run = promisify(execFile);

/**
 * `args` as nexmark-one.ts's flags for `query`; `override` replaces some of them (e.g. the state
 * backend); `env` adds environment variables (e.g. NEXMARK_FIRST_EVENT_ID).
 */
export async function measureInChild(query: string, args: BenchArgs, override: Partial<BenchArgs> = {}, env: Record<string, string> = {}): Promise<Measurement> {
  const a = { ...args, ...override };
  const childArgs = ["--query", query, "--events", String(a.events), "--parallelism", String(a.parallelism), "--mode", a.mode];
  if (a.noLoop) childArgs.push("--no-loop");
  if (a.checkpointInterval !== undefined) childArgs.push("--checkpoint-interval", a.checkpointInterval);
  if (!a.metrics) childArgs.push("--metrics", "off");
  if (!a.localAggregation) childArgs.push("--local-aggregation", "off");
  if (a.sink !== "digest") childArgs.push("--sink", a.sink);
  if (a.stateBackend !== "heap") childArgs.push("--state-backend", a.stateBackend);
  if (a.diskCacheSize !== undefined && a.stateBackend === "disk") childArgs.push("--disk-cache-size", String(a.diskCacheSize));
  if (a.diskCacheBytes !== undefined && a.stateBackend === "disk") childArgs.push("--disk-cache-bytes", a.diskCacheBytes);
  if (a.diskLocalRecovery && a.stateBackend === "disk") childArgs.push("--disk-local-recovery");
  if (a.heapIncremental && a.stateBackend === "heap") childArgs.push("--heap-incremental");
  if (a.sourceYieldRounds !== undefined) childArgs.push("--source-yield-rounds", String(a.sourceYieldRounds));
  // This process's node flags, so the TypeScript loader and the eddy-source condition too.
  const { stdout, stderr } = await run(process.execPath, [...process.execArgv, ONE, ...childArgs], { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ...env } });
  if (stderr.length > 0) process.stderr.write(stderr);
  const line = stdout.trim().split("\n").at(-1);
  if (line === undefined) throw new Error(`${query}: the measuring process printed nothing`);
  return JSON.parse(line) as Measurement;
}
