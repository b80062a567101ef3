/** Deterministic test data and process helpers shared by the job-level tests. */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { WatermarkStrategy } from "eddy";
import { SOURCE_CONDITION_IN_OPTIONS, SOURCE_CONDITION_OPTION } from "./source-condition.ts";

// Child processes (`eddy run` of the CLI tests, scripts they start) must run this checkout's
// sources as this process does. `npm test` passes the condition in NODE_OPTIONS, which children
// inherit; a test file run by hand with `node -C eddy-source` has it only in its own argv, so
// without this its children would load the build in dist/ (stale after an edit) and pass or
// fail for the wrong code.
if (!(process.env.NODE_OPTIONS ?? "").match(SOURCE_CONDITION_IN_OPTIONS)) {
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} ${SOURCE_CONDITION_OPTION}`.trim();
}

/** The `eddy` command of this checkout. */
export const EDDY_BIN = resolve(import.meta.dirname, "../packages/eddy/bin/eddy.js");

/**
 * Runs `eddy <args>` and kills it with SIGKILL (a whole-process crash) as soon as `ready()` holds,
 * polled every 20 ms. `killed` is false when the process ended first.
 */
export async function killWhenReady(args: readonly string[], env: NodeJS.ProcessEnv, ready: () => boolean): Promise<{ killed: boolean; stderr: string }> {
  const child = spawn(process.execPath, [EDDY_BIN, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((r) => child.on("exit", r));
  let killed = false;
  for (;;) {
    await new Promise((r) => setTimeout(r, 20));
    if (child.exitCode !== null) break;
    if (ready()) {
      child.kill("SIGKILL");
      killed = true;
      break;
    }
  }
  await exited;
  return { killed, stderr };
}

/** Sets the job's environment (read when each thread builds the job) for one run. */
export async function withEnv<R>(vars: Record<string, string>, fn: () => Promise<R>): Promise<R> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence on every machine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Event {
  readonly user: string;
  readonly ts: number;
  readonly amount: number;
}

/**
 * `n` events over `users` users with timestamps i*stepMs plus jitter in [0, maxDisorderMs), then
 * locally shuffled, so no event arrives more than maxDisorderMs after a later-stamped one.
 */
export function outOfOrderEvents(n: number, users: number, stepMs: number, maxDisorderMs: number, seed = 7): Event[] {
  const rnd = prng(seed);
  const events: Event[] = [];
  for (let i = 0; i < n; i++) {
    events.push({
      user: `u${Math.floor(rnd() * users)}`,
      ts: 1_700_000_000_000 + i * stepMs + Math.floor(rnd() * maxDisorderMs),
      amount: Math.floor(rnd() * 1000),
    });
  }
  // Sorting by a noisy key keeps every event within maxDisorderMs of its place in time.
  const noisy = events.map((e) => ({ e, k: e.ts + rnd() * maxDisorderMs }));
  noisy.sort((a, b) => a.k - b.k);
  return noisy.map((x) => x.e);
}

export function sortBy<T>(values: readonly T[], key: (v: T) => string): T[] {
  return [...values].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/**
 * Watermarks after every record (punctuated): max timestamp - bound - 1, like
 * forBoundedOutOfOrderness but emitted per record, so tests can replay exactly what an operator saw.
 */
export function punctuated<T extends { readonly ts: number }>(boundMs: number): WatermarkStrategy<T> {
  return WatermarkStrategy.forGenerator<T>(() => {
    let max = Number.NEGATIVE_INFINITY;
    return {
      onEvent(_e, ts, output) {
        max = Math.max(max, ts);
        output.emitWatermark(max - boundMs - 1);
      },
      onPeriodicEmit() {},
    };
  }).withTimestampAssigner((e) => e.ts);
}

/** Sum of every operator's `numLateRecordsDropped` counter in a job's metrics. */
export function lateRecordsDropped(metrics: readonly { readonly counters: Readonly<Record<string, number>> }[]): number {
  let n = 0;
  for (const m of metrics) for (const [k, v] of Object.entries(m.counters)) if (k.endsWith("numLateRecordsDropped")) n += v;
  return n;
}

/** The `eddy` command, for CLI tests: `spawnSync(process.execPath, [eddyBin, "run", job])`. */
export const eddyBin = resolve(import.meta.dirname, "../packages/eddy/bin/eddy.js");

/** A project directory outside the workspace with eddy installed, as a user would have it. */
export function userProject(): string {
  const dir = mkdtempSync(join(tmpdir(), "eddy-cli-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(resolve(import.meta.dirname, "../packages/eddy"), join(dir, "node_modules", "eddy"), "dir");
  return dir;
}
