/**
 * What starting a threaded job costs: a job over no events at parallelism 2 (two worker threads),
 * its wall time and the CPU time of the whole process, with workers starting from the bundle of
 * the job's code (the default, see packages/eddy/src/executor/worker-bundle.ts) and through the
 * TypeScript loader (EDDY_WORKER_LOADER=tsx), alternated in one process. The first bundled start
 * also builds the bundle; it is reported on its own.
 *
 *   node -C eddy-source --import tsx bench/worker-start.ts [rounds=7] [query=q5]
 *
 * Reports medians over `rounds` starts of each kind.
 */
import { runJob } from "eddy/testing";
import { WORKER_LOADER_ENV } from "../packages/eddy/src/executor/worker-bundle.ts";
import { nexmarkQuery, QUERY_ENV } from "./jobs/nexmark.ts";
import { median } from "./stats.ts";

const ROUNDS = Number(process.argv[2] ?? 7);
process.env[QUERY_ENV] = process.argv[3] ?? "q5";
process.env.NEXMARK_EVENTS = "0";

async function start(loader: "bundle" | "tsx"): Promise<{ wallMs: number; cpuMs: number }> {
  if (loader === "tsx") process.env[WORKER_LOADER_ENV] = "tsx";
  else delete process.env[WORKER_LOADER_ENV];
  const cpu = process.cpuUsage();
  const t = performance.now();
  const handle = runJob(nexmarkQuery, { parallelism: 2, mode: "threads" });
  if ((await handle.mode) !== "threads") throw new Error("the job did not run on threads");
  await handle.done;
  const used = process.cpuUsage(cpu);
  return { wallMs: performance.now() - t, cpuMs: (used.user + used.system) / 1000 };
}


const first = await start("bundle");
const runs = { bundle: [] as { wallMs: number; cpuMs: number }[], tsx: [] as { wallMs: number; cpuMs: number }[] };
for (let r = 0; r < ROUNDS; r++) {
  runs.tsx.push(await start("tsx"));
  runs.bundle.push(await start("bundle"));
}
const line = (name: string, wallMs: number, cpuMs: number): string =>
  `${name.padEnd(44)} ${wallMs.toFixed(0).padStart(6)} ms wall ${cpuMs.toFixed(0).padStart(6)} ms CPU`;
console.log(`starting a threaded job (${process.env[QUERY_ENV]}, no events, 2 workers), median of ${ROUNDS}`);
console.log(line("first start (builds the bundle)", first.wallMs, first.cpuMs));
for (const [name, xs] of Object.entries(runs)) {
  console.log(line(name === "tsx" ? "workers through the TypeScript loader" : "workers from the bundle (built)", median(xs.map((x) => x.wallMs)), median(xs.map((x) => x.cpuMs))));
}
