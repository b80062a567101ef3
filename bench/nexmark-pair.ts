/**
 * A/B of two checkouts on one Nexmark query, measured in pairs: in each round the query runs in
 * both checkouts at the same time, one process per core, so both runs see the same machine.
 *
 * Why: this VM's speed moves by ±20 % from one minute to the next (other tenants), so runs of A
 * and B one after another differ by more than most changes do. Run together, both are slowed
 * alike (2026-12-04: the same checkout on both sides gave pairs of 0.96-1.07×, median 0.995, where
 * runs one after another spread over 0.7-1.5×; still, a busy host can push a single pair to
 * ±15 %: use the median of 5 or more). Sides swap every round, in case one core is the faster.
 * Each run is bench/nexmark-one.ts without its loop; the figure is events per CPU-second of the
 * process (all its threads). Before the timed rounds each side runs once with its hand-written
 * loop, and its output must equal the loop's.
 *
 *   node -C eddy-source --import tsx bench/nexmark-pair.ts --a ../wt-base --b . --query q5 \
 *     [--events 3000000] [--rounds 5] [-- <more nexmark-one.ts flags>]
 *
 * `--a` and `--b` are checkouts with their node_modules (a `git worktree` with links to this
 * checkout's node_modules will do). Needs two cores: with one, the pair only shares it.
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Measurement } from "./nexmark/measurement.ts";
import { foldsDiffer } from "./nexmark/report.ts";
import { median } from "./stats.ts";

const { values, positionals } = parseArgs({
  options: {
    a: { type: "string" },
    b: { type: "string" },
    query: { type: "string" },
    events: { type: "string", default: "3000000" },
    rounds: { type: "string", default: "5" },
  },
  allowPositionals: true,
});
if (values.a === undefined || values.b === undefined || values.query === undefined) {
  throw new Error("usage: bench/nexmark-pair.ts --a <checkout> --b <checkout> --query <q> [--events N] [--rounds N] [-- flags]");
}
const rounds = Number(values.rounds);
const events = Number(values.events);
if (!(Number.isInteger(rounds) && rounds > 0) || !(Number.isInteger(events) && events > 0)) throw new Error("--rounds and --events take positive integers");

interface Run {
  readonly perCpuSecond: number;
  /** Undefined when run without the loop. */
  readonly sameAsLoop: boolean | undefined;
}

/** The job's output against the hand-written loop's, as far as the query's comparison goes; undefined without a loop. */
function sameAsLoop(r: Measurement): boolean | undefined {
  return r.loop === undefined ? undefined : !foldsDiffer(r.comparison, r.eddy, r.loop.fold);
}

function runOne(checkout: string, withLoop: boolean): Promise<Run> {
  const args = ["-C", "eddy-source", "--import", "tsx", "bench/nexmark-one.ts", "--query", values.query!, "--events", String(events), "--json"];
  if (!withLoop) args.push("--no-loop");
  args.push(...positionals);
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: resolve(checkout), stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", fail);
    child.on("close", (code) => {
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0 || !last.startsWith("{")) return fail(new Error(`${checkout}: nexmark-one exited ${code}\n${err.slice(-2000)}`));
      const r = JSON.parse(last) as Measurement;
      done({ perCpuSecond: r.events / (r.cpuMs / 1000), sameAsLoop: withLoop ? sameAsLoop(r) : undefined });
    });
  });
}

const k = (n: number): string => `${(n / 1000).toFixed(0)} K`;
console.log(`${values.query}, ${events.toLocaleString("en")} events, ${rounds} pairs: A ${resolve(values.a)}, B ${resolve(values.b)}`);
console.log("| round | A events/CPU-s | B events/CPU-s | B ÷ A | first started |");
console.log("|---|---|---|---|---|");
// First, each side once with its hand-written loop, to check its output (not timed: a run that
// ends with a loop beside a run that does not shares the machine unevenly).
const checks = await Promise.all([runOne(values.a, true), runOne(values.b, true)]);
checks.forEach((run, i) => {
  if (run.sameAsLoop === false) throw new Error(`side ${i === 0 ? "A" : "B"}: output differs from the hand-written loop`);
});
const ratios: number[] = [];
for (let round = 0; round < rounds; round++) {
  const aFirst = round % 2 === 0;
  const started = aFirst ? [runOne(values.a, false), runOne(values.b, false)] : [runOne(values.b, false), runOne(values.a, false)];
  const [first, second] = await Promise.all(started);
  const [a, b] = aFirst ? [first!, second!] : [second!, first!];
  ratios.push(b.perCpuSecond / a.perCpuSecond);
  console.log(`| ${round + 1} | ${k(a.perCpuSecond)} | ${k(b.perCpuSecond)} | ${(b.perCpuSecond / a.perCpuSecond).toFixed(3)} | ${aFirst ? "A" : "B"} |`);
}
console.log(`median B ÷ A: ${median(ratios).toFixed(3)} (range ${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)})`);
