/**
 * What per-record metrics cost (issue 28: at most 2 % of Nexmark q5's throughput at parallelism
 * 2): rounds of `bench/nexmark.ts` with `--metrics on` and `--metrics off`, alternated (on, off,
 * on, off, …) so that drift in the machine's load hits both alike, each round a fresh process.
 * Prints, per figure (events/s wall-clock, per core, per core without start-up), the median of
 * the per-round ratios on ÷ off (paired) and the ratio of the two sides' medians.
 *
 *   node -C eddy-source --import tsx bench/metrics-cost.ts [rounds=8] [events=3000000] [query=q5] [parallelism=2]
 */
import { execFileSync } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { median } from "./stats.ts";

const [rounds, events, query, parallelism] = [Number(process.argv[2] ?? 8), Number(process.argv[3] ?? 3_000_000), process.argv[4] ?? "q5", Number(process.argv[5] ?? 2)];
const NEXMARK = fileURLToPath(new URL("./nexmark.ts", import.meta.url));
const FIGURES = ["eventsPerSecond", "eventsPerSecondPerCore", "eventsPerSecondPerCoreExStartup"] as const;
type Report = Record<(typeof FIGURES)[number], number>;

function run(metrics: "on" | "off"): Report {
  const args = [...process.execArgv, NEXMARK, "--query", query, "--events", String(events), "--parallelism", String(parallelism), "--rounds", "1", "--json", "--no-loop", "--metrics", metrics];
  const lines = execFileSync(process.execPath, args, { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 }).trim().split("\n");
  return JSON.parse(lines.at(-1)!) as Report;
}

const pairs: { on: Report; off: Report }[] = [];
for (let r = 0; r < rounds; r++) {
  const on = run("on");
  const off = run("off");
  pairs.push({ on, off });
  console.log(`round ${r + 1}: on ${Math.round(on.eventsPerSecond)} ev/s, off ${Math.round(off.eventsPerSecond)} ev/s (load ${loadavg()[0]!.toFixed(2)})`);
}
console.log(`\nNexmark ${query}, ${events.toLocaleString("en")} events, parallelism ${parallelism}, ${rounds} alternated rounds; on ÷ off (1.000: no cost):`);
for (const f of FIGURES) {
  const paired = median(pairs.map((p) => p.on[f] / p.off[f]));
  const sides = median(pairs.map((p) => p.on[f])) / median(pairs.map((p) => p.off[f]));
  console.log(`  ${f}: paired median ${paired.toFixed(4)}, medians' ratio ${sides.toFixed(4)} (on ${Math.round(median(pairs.map((p) => p.on[f])))}, off ${Math.round(median(pairs.map((p) => p.off[f])))})`);
}
