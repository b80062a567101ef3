/**
 * Nexmark's stateful queries on the heap and on the disk state backend, in the same run (issue 29:
 * the disk backend at least 50 % of the heap backend's events/s; Flink's ForSt with a cache
 * reaches 75-120 % of its local backend). Each round runs a query on the heap backend, then on the
 * disk backend, each in a fresh process (bench/nexmark-one.ts, no hand-written loop), so load
 * drift hits both alike; figures are medians of the rounds, events per CPU-second of the process.
 * Both must produce the same output (count and checksum, as far as the query's comparison goes: see
 * bench/nexmark/queries.ts) or the row says MISMATCH.
 *
 *   node -C eddy-source --import tsx bench/nexmark-state-backends.ts [--query q3,q5] [--events 2000000]
 *     [--rounds 3] [--parallelism 1] [--disk-cache-size N] [--disk-cache-bytes SIZE] [--disk-local-recovery] [--checkpoint-interval 10s]
 */
import { availableParallelism } from "node:os";
import { parseBenchArgs } from "./nexmark/args.ts";
import { measureInChild } from "./nexmark/measure-child.ts";
import type { Measurement } from "./nexmark/measurement.ts";
import { BENCH_QUERIES, benchQueryNamed } from "./nexmark/queries.ts";
import { foldsDiffer } from "./nexmark/report.ts";
import { rate } from "./nexmark/table.ts";
import { geomean, median } from "./stats.ts";

const argv = process.argv.slice(2);
const args = parseBenchArgs(argv.includes("--disk-cache-size") || argv.includes("--disk-cache-bytes") || argv.includes("--disk-local-recovery") ? [...argv, "--state-backend", "disk"] : argv);
const stateful = Object.keys(BENCH_QUERIES).filter((q) => !benchQueryNamed(q).stateless);
const queries = args.query === "all" ? stateful : args.query.split(",").map((q) => q.trim());
for (const q of queries) benchQueryNamed(q);

console.log(
  `Nexmark, heap vs disk state backend: ${args.events.toLocaleString("en")} events, parallelism ${args.parallelism} (${args.mode}), median of ${args.rounds}, ` +
    `disk cache ${args.diskCacheSize ?? "default"} keys, ${args.diskCacheBytes ?? "default"} bytes per subtask; checkpoints ${args.checkpointInterval ?? "off"}; ${availableParallelism()} cores, ${new Date().toISOString()}\n`,
);
console.log("| query | heap events/s/core | disk events/s/core | disk ÷ heap | peak RSS heap / disk | output |");
console.log("|---|---|---|---|---|---|");
const perCore = (m: Measurement): number => (m.events * 1000) / m.cpuMs;
let mismatches = 0;
const ratios: number[] = [];
for (const query of queries) {
  const heap: Measurement[] = [];
  const disk: Measurement[] = [];
  for (let r = 0; r < args.rounds; r++) {
    heap.push(await measureInChild(query, args, { stateBackend: "heap", noLoop: true }));
    disk.push(await measureInChild(query, args, { stateBackend: "disk", noLoop: true }));
  }
  // What the query's output comparison covers (q12's processing-time windows: only part of it).
  const { comparison } = heap[0]!;
  const same = heap.every((h, i) => !foldsDiffer(comparison, h.eddy, disk[i]!.eddy));
  if (!same) mismatches++;
  const h = median(heap.map(perCore));
  const d = median(disk.map(perCore));
  ratios.push(d / h);
  const rss = (ms: Measurement[]): number => Math.max(...ms.map((m) => m.peakRssMb));
  console.log(`| ${query} | ${rate(h)} | ${rate(d)} | ${(d / h).toFixed(2)}× ${d / h >= 0.5 ? "✓" : "✗"} | ${rss(heap).toFixed(0)} / ${rss(disk).toFixed(0)} MB | ${same ? `${heap[0]!.eddy.count.toLocaleString("en")} ✓${comparison.note === undefined ? "" : ` (${comparison.note})`}` : "MISMATCH"} |`);
}
console.log(`\nGeometric mean disk ÷ heap: ${geomean(ratios).toFixed(2)}× over ${ratios.length} queries (issue 29: ≥ 0.5× on every query).`);
if (mismatches > 0) {
  console.error(`${mismatches} quer${mismatches === 1 ? "y" : "ies"} produced other output on the disk backend than on the heap backend`);
  process.exitCode = 1;
}
