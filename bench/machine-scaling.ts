/**
 * What a second core gives on this machine, without Eddy: the same fixed work done by one worker
 * thread, then split over two worker threads at once (one process, as Eddy's threaded mode), then
 * over two processes at once. Two loops: pure integer arithmetic (no memory traffic) and a keyed
 * count by hand (a record object and a Map update per record, the memory and GC traffic of
 * bench/parallel.ts's part (b) without any exchange). The ratios bound what any parallel runtime
 * can reach here; compare them with `npm run bench:parallel-breakdown`'s ceiling.
 *
 *   node -C eddy-source --import tsx bench/machine-scaling.ts [records=40000000] [rounds=5]
 *
 * "cores" is the process's CPU time over wall time while one worker thread runs (its start-up
 * included): V8's compiler and GC helper threads use the idle second core, so one worker can take
 * more than one core, which a second worker then has to share.
 */
import { spawn } from "node:child_process";
import { Worker } from "node:worker_threads";
import { median } from "./stats.ts";

type Loop = "arithmetic" | "keyed-count";

/** The work itself, as source text: run in a worker (eval) or a child process (`node -e`). */
function loopSource(loop: Loop, records: number): string {
  const body =
    loop === "arithmetic"
      ? `let acc = 0;
         for (let i = 0; i < ${records}; i++) {
           let h = i | 0;
           for (let r = 0; r < 16; r++) { h = Math.imul(h ^ (h >>> 16), 0x85ebca6b); h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) ^ r; }
           acc ^= h;
         }
         result = acc;`
      : `const counts = new Map();
         for (let i = 0; i < ${records}; i++) {
           const r = { key: i % 1000, value: 1 };
           const acc = counts.get(r.key);
           counts.set(r.key, acc === undefined ? { key: r.key, value: r.value } : { key: acc.key, value: acc.value + r.value });
         }
         result = counts.size;`;
  // `result` is sent back with the time, so no loop's work can be optimized away.
  return `let result; const t0 = performance.now(); ${body} const ms = performance.now() - t0;`;
}

/**
 * Runs the loop over `records / n` records in each of `n` worker threads of this process at once.
 * Returns the slowest thread's loop time (start-up excluded) and the cores the process used over
 * the whole run (CPU time of all its threads, the workers and V8's helpers, over wall time).
 */
async function inThreads(loop: Loop, records: number, n: number): Promise<{ ms: number; cores: number }> {
  const source = `const { parentPort } = require("node:worker_threads"); ${loopSource(loop, Math.floor(records / n))} parentPort.postMessage([ms, result]);`;
  const started = performance.now();
  const cpu = process.cpuUsage();
  const times = await Promise.all(
    Array.from({ length: n }, () => {
      const worker = new Worker(source, { eval: true });
      return new Promise<number>((resolve, reject) => {
        worker.once("message", ([ms]: [number, unknown]) => resolve(ms));
        worker.once("error", reject);
      }).finally(() => worker.terminate());
    }),
  );
  const used = process.cpuUsage(cpu);
  return { ms: Math.max(...times), cores: (used.user + used.system) / 1000 / (performance.now() - started) };
}

/** The same in `n` processes at once; returns the slowest process's loop time. */
async function inProcesses(loop: Loop, records: number, n: number): Promise<number> {
  const source = `${loopSource(loop, Math.floor(records / n))} process.stdout.write(JSON.stringify([ms, result]));`;
  const times = await Promise.all(
    Array.from({ length: n }, () => {
      const child = spawn(process.execPath, ["-e", source], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      return new Promise<number>((resolve, reject) => {
        child.once("error", reject);
        child.once("close", (code) => (code === 0 ? resolve((JSON.parse(out) as [number, unknown])[0]) : reject(new Error(`child exited with ${code}`))));
      });
    }),
  );
  return Math.max(...times);
}

const N = Number(process.argv[2] ?? 40_000_000);
const ROUNDS = Number(process.argv[3] ?? 5);
if (!(N >= 2 && ROUNDS >= 1)) throw new Error("usage: machine-scaling.ts [records ≥ 2] [rounds ≥ 1]");

console.log(`Work split over two cores, no Eddy: ${N.toLocaleString("en")} records per variant, median of ${ROUNDS} (ms of the slowest thread's or process's loop, start-up excluded)\n`);
console.log(`  ${"loop".padEnd(12)} 1 thread (cores)  2 threads (×)      1 process  2 processes (×)`);
for (const loop of ["arithmetic", "keyed-count"] as const) {
  const runs: Record<string, number[]> = { t1: [], cores: [], t2: [], p1: [], p2: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const one = await inThreads(loop, N, 1);
    runs.t1!.push(one.ms);
    runs.cores!.push(one.cores);
    runs.t2!.push((await inThreads(loop, N, 2)).ms);
    runs.p1!.push(await inProcesses(loop, N, 1));
    runs.p2!.push(await inProcesses(loop, N, 2));
  }
  const [t1, cores, t2, p1, p2] = (["t1", "cores", "t2", "p1", "p2"] as const).map((k) => median(runs[k]!));
  const cell = (ms: number) => `${ms.toFixed(0)} ms`.padStart(9);
  console.log(
    `  ${loop.padEnd(12)} ${cell(t1!)} (${cores!.toFixed(2)}) ${cell(t2!)} (${(t1! / t2!).toFixed(2)}×)   ${cell(p1!)} ${cell(p2!)} (${(p1! / p2!).toFixed(2)}×)`,
  );
}
