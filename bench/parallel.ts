/**
 * Parallel execution on worker threads, measured beside a hand-written loop and inline execution
 * in the same run:
 *
 *   (a) records/s through one keyBy exchange between two threads (source on one worker, keyed
 *       sink on the other), vs. the same job inline (one thread, no encoding);
 *   (b) a keyed count over N records with 1,000 hot keys at parallelism 1 and 2 (one and two
 *       workers): the speed-up from the second core;
 *   (c) per-record latency p50/p99 through a two-stage keyed pipeline at 10 % of (b)'s peak rate.
 *
 *   node --import tsx bench/parallel.ts [records=10000000] [rounds=3]
 *
 * Job times include starting the worker threads; "startup" is a one-record job's time, reported
 * so the steady-state rate can be read off. Medians of `rounds` runs.
 */
import { availableParallelism } from "node:os";
import { runJob, type RunOptions } from "eddy/testing";

const N = Number(process.argv[2] ?? 10_000_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const KEYS = 1000;
process.env.EDDY_BENCH_KEYS = String(KEYS);

const jobs = await import("./jobs/parallel.ts");

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number): string => `${(n / 1e6).toFixed(2)} M/s`;

async function timeJob(job: Parameters<typeof runJob>[0], records: number, options: RunOptions): Promise<number> {
  process.env.EDDY_BENCH_RECORDS = String(records);
  const started = performance.now();
  const handle = runJob(job, options);
  await handle.done;
  const ms = performance.now() - started;
  const counted = handle.collected<number>("count").reduce((a, b) => a + b, 0);
  if (counted !== records) throw new Error(`sink counted ${counted} records, expected ${records}`);
  return ms;
}

async function rate(label: string, job: Parameters<typeof runJob>[0], options: RunOptions): Promise<{ rate: number; startup: number }> {
  const times: number[] = [];
  const startups: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    startups.push(await timeJob(job, 1, options));
    times.push(await timeJob(job, N, options));
  }
  const ms = median(times);
  const startup = median(startups);
  const result = { rate: (N * 1000) / ms, startup };
  console.log(
    `  ${label.padEnd(34)} ${fmt(result.rate).padStart(10)}   (${ms.toFixed(0)} ms; startup ${startup.toFixed(0)} ms; steady ${fmt((N * 1000) / Math.max(1, ms - startup))})`,
  );
  return result;
}

/** The floor: the same keyed count as a plain loop over a Map. */
function handLoop(): number {
  const times: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const started = performance.now();
    const counts = new Map<number, { key: number; value: number }>();
    let emitted = 0;
    for (let n = 0; n < N; n++) {
      const rec = { key: n % KEYS, value: 1 };
      const prev = counts.get(rec.key);
      const next = { key: rec.key, value: (prev?.value ?? 0) + rec.value };
      counts.set(rec.key, next);
      emitted++;
    }
    if (emitted !== N) throw new Error("loop lost records");
    times.push(performance.now() - started);
  }
  const r = (N * 1000) / median(times);
  console.log(`  ${"hand-written loop".padEnd(34)} ${fmt(r).padStart(10)}`);
  return r;
}

console.log(`Eddy parallel bench: ${N.toLocaleString("en")} records, ${KEYS} keys, ${availableParallelism()} cores, median of ${ROUNDS}\n`);

console.log("(a) one keyBy exchange between two threads");
const exInline = await rate("inline (one thread)", jobs.exchange, { mode: "inline", parallelism: 1 });
const exThreads = await rate("two threads (source | keyed sink)", jobs.exchange, { mode: "threads", workers: 2, placement: "spread", parallelism: 1 });
console.log(`  ratio threads/inline: ${(exThreads.rate / exInline.rate).toFixed(2)}\n`);

console.log("(b) keyed count, 1,000 hot keys");
const loop = handLoop();
const kInline = await rate("inline, parallelism 1", jobs.keyedCount, { mode: "inline", parallelism: 1 });
const k1 = await rate("threads, parallelism 1 (1 worker)", jobs.keyedCount, { mode: "threads", parallelism: 1, workers: 1 });
const k2 = await rate("threads, parallelism 2 (2 workers)", jobs.keyedCount, { mode: "threads", parallelism: 2, workers: 2 });
console.log(`  speed-up 1 → 2 workers: ${(k2.rate / k1.rate).toFixed(2)}× (steady state ${(((N * 1000) / (N * 1000 / k2.rate - k2.startup)) / ((N * 1000) / (N * 1000 / k1.rate - k1.startup))).toFixed(2)}×)`);
console.log(`  parallelism 2 vs inline: ${(k2.rate / kInline.rate).toFixed(2)}×; loop / parallelism 2: ${(loop / k2.rate).toFixed(2)}×\n`);

console.log("(c) latency through two keyed stages at 10 % of peak");
const peak = Math.max(k2.rate, k1.rate);
const target = Math.round(peak / 10);
process.env.EDDY_BENCH_RATE = String(target);
process.env.EDDY_BENCH_DURATION_MS = "5000";
const { BUCKET_MS } = jobs;
for (const [label, options] of [
  ["inline", { mode: "inline", parallelism: 1 }],
  ["threads, parallelism 2", { mode: "threads", parallelism: 2, workers: 2 }],
] as const) {
  const handle = runJob(jobs.latency, options);
  await handle.done;
  const merged: number[] = [];
  for (const h of handle.collected<number[]>("latency")) h.forEach((c, i) => (merged[i] = (merged[i] ?? 0) + c));
  const total = merged.reduce((a, b) => a + (b ?? 0), 0);
  const pct = (p: number): number => {
    let seen = 0;
    for (let i = 0; i < merged.length; i++) {
      seen += merged[i] ?? 0;
      if (seen >= total * p) return (i + 1) * BUCKET_MS;
    }
    return Infinity;
  };
  console.log(
    `  ${label.padEnd(24)} ${target.toLocaleString("en")} rec/s, ${total.toLocaleString("en")} records: p50 ${pct(0.5).toFixed(2)} ms, p99 ${pct(0.99).toFixed(2)} ms, max ${pct(1).toFixed(2)} ms`,
  );
}
