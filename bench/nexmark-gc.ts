/**
 * Where a Nexmark query's GC goes at parallelism 1 and 2: one run of bench/nexmark-one.ts per
 * parallelism (p1 inline, p2 on two worker threads) under `node --trace-gc-nvp`, and per isolate of
 * the job (p1: the main thread; p2: the two workers) what V8 reports for its scavenges and
 * mark-compacts:
 *
 *   allocated    MB allocated (the sum of each scavenge's `allocated`)
 *   survived     MB copied out of the young generation (`new_space_survived`): what scavenges
 *                cost, more than what they free
 *   scav. own    ms of scavenging on the isolate's own thread (`pause`)
 *   scav. helper ms of scavenging on V8's helper threads (`background.scavenge.parallel`): at
 *                p1 they have the second core to themselves; at p2 Eddy switches the parallel
 *                scavenger off (taskmanager.gc.parallel-scavenge), so this is 0
 *   marking      ms of concurrent marking on helper threads (`background.mark`), and the
 *                mark-compacts' own pauses
 *
 * beside the run's own running time and CPU (nexmark-one's JSON). One run each: the figures move
 * with the machine's load like any other; compare p1 and p2 of the same invocation.
 *
 *   node -C eddy-source --import tsx bench/nexmark-gc.ts --query q18 [--events 2000000]
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseBenchArgs } from "./nexmark/args.ts";

const argv = process.argv.slice(2);
// The flags of bench/nexmark-one.ts; only --query and --events are used here.
const { query, events } = parseBenchArgs(argv.includes("--events") ? argv : [...argv, "--events", "3000000"]);
const one = fileURLToPath(new URL("./nexmark-one.ts", import.meta.url));

interface IsolateGc {
  scavenges: number;
  allocatedMb: number;
  survivedMb: number;
  scavengeOwnMs: number;
  scavengeHelperMs: number;
  markCompacts: number;
  markCompactOwnMs: number;
  markingHelperMs: number;
}

/** `--trace-gc-nvp` lines ("[pid:isolate] N ms: key=value …") summed per isolate. */
function gcByIsolate(output: string): Map<string, IsolateGc> {
  const isolates = new Map<string, IsolateGc>();
  for (const line of output.split("\n")) {
    const m = /^\[(\d+:0x[0-9a-f]+)\]\s+\d+ ms: (.*)$/.exec(line);
    if (m === null || !m[2]!.includes(" gc=")) continue;
    const fields = new Map<string, number | string>();
    for (const pair of m[2]!.split(" ")) {
      const eq = pair.indexOf("=");
      if (eq < 0) continue;
      const value = pair.slice(eq + 1);
      fields.set(pair.slice(0, eq), Number.isNaN(Number(value)) ? value : Number(value));
    }
    const num = (key: string): number => (typeof fields.get(key) === "number" ? (fields.get(key) as number) : 0);
    let gc = isolates.get(m[1]!);
    if (gc === undefined) {
      gc = { scavenges: 0, allocatedMb: 0, survivedMb: 0, scavengeOwnMs: 0, scavengeHelperMs: 0, markCompacts: 0, markCompactOwnMs: 0, markingHelperMs: 0 };
      isolates.set(m[1]!, gc);
    }
    if (fields.get("gc") === "s") {
      gc.scavenges++;
      gc.allocatedMb += num("allocated") / 1e6;
      gc.survivedMb += num("new_space_survived") / 1e6;
      gc.scavengeOwnMs += num("pause");
      gc.scavengeHelperMs += num("background.scavenge.parallel");
    } else {
      gc.markCompacts++;
      gc.markCompactOwnMs += num("pause");
      gc.markingHelperMs += num("background.mark");
    }
  }
  return isolates;
}

const fmt = (n: number, digits = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

console.log(`${query}, ${events.toLocaleString("en-US")} events, one run per parallelism, --trace-gc-nvp, ${new Date().toISOString().slice(0, 16)}`);
console.log("");
console.log("run  isolate            running   CPU      scav.  allocated  survived  scav. own  scav. helper  mark-compacts  their pauses  marking (helpers)");
for (const parallelism of [1, 2]) {
  const run = spawnSync(
    process.execPath,
    ["--trace-gc-nvp", "-C", "eddy-source", "--import", "tsx", one, "--query", query, "--events", String(events), "--parallelism", String(parallelism), "--mode", parallelism === 1 ? "inline" : "threads", "--no-loop"],
    { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 },
  );
  if (run.status !== 0) throw new Error(`${query} at parallelism ${parallelism} failed:\n${run.stderr}`);
  const result = JSON.parse(run.stdout.trim().split("\n").filter((l) => l.startsWith("{")).pop()!) as { runningMs: number; cpuMs: number };
  // The job's isolates allocate the most: p1 its one thread, p2 its two workers (the main thread
  // and the TypeScript loader's thread allocate little).
  const isolates = [...gcByIsolate(run.stdout + run.stderr)].sort((a, b) => b[1].allocatedMb - a[1].allocatedMb).slice(0, parallelism);
  const total: IsolateGc = { scavenges: 0, allocatedMb: 0, survivedMb: 0, scavengeOwnMs: 0, scavengeHelperMs: 0, markCompacts: 0, markCompactOwnMs: 0, markingHelperMs: 0 };
  for (const [, gc] of isolates) for (const key of Object.keys(total) as (keyof IsolateGc)[]) total[key] += gc[key];
  const named: [string, IsolateGc][] = isolates.map(([, gc], i) => [parallelism === 1 ? "the job's thread" : `worker ${i + 1}`, gc]);
  const rows: [string, IsolateGc][] = parallelism === 1 ? named : [...named, ["both workers", total]];
  rows.forEach(([name, gc], i) => {
    const head = i === 0 ? `p${parallelism}   ` : "     ";
    const timing = i === 0 ? `${fmt(result.runningMs).padStart(7)} ms ${fmt(result.cpuMs).padStart(6)} ms` : " ".repeat(19);
    console.log(
      `${head}${name.padEnd(16)} ${timing} ${String(gc.scavenges).padStart(5)} ${fmt(gc.allocatedMb).padStart(7)} MB ${fmt(gc.survivedMb).padStart(6)} MB ${fmt(gc.scavengeOwnMs).padStart(7)} ms ${fmt(gc.scavengeHelperMs).padStart(9)} ms ${String(gc.markCompacts).padStart(14)} ${fmt(gc.markCompactOwnMs).padStart(10)} ms ${fmt(gc.markingHelperMs).padStart(12)} ms`,
    );
  });
}
console.log("");
console.log("CPU: the whole process's, every thread, start-up included (nexmark-one's cpuMs).");
