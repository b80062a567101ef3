/**
 * What queryable state costs and gives (issue 8): a keyed counter (100 K keys, value state made
 * queryable) runs at full speed at parallelism 2 on worker threads, once without readers and once
 * with a client reading random keys as fast as it can (`concurrency` reads in flight, through
 * `eddy/query` over loopback). Reported: the job's records/s in both runs (the ratio is the cost
 * of serving), the client's lookups/s, and the median and p99 lookup latency.
 *
 *   node -C eddy-source --import tsx bench/queryable.ts [--records 20000000] [--keys 100000] [--concurrency 8] [--rounds 3]
 *
 * Medians of `rounds`, the two settings alternating so load drifts hit both alike.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runJob } from "eddy/testing";
import { createQueryClient } from "eddy/query";
import { startControlServer } from "../packages/eddy/src/control/control-server.ts";
import { silentLogger } from "../packages/eddy/src/core/logger.ts";
import { counter } from "./jobs/queryable.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    records: { type: "string", default: "20000000" },
    keys: { type: "string", default: "100000" },
    concurrency: { type: "string", default: "8" },
    rounds: { type: "string", default: "3" },
  },
});
const RECORDS = Number(values.records);
const KEYS = Number(values.keys);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
process.env.EDDY_BENCH_Q_RECORDS = String(RECORDS);
process.env.EDDY_BENCH_Q_KEYS = String(KEYS);

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

interface Run {
  readonly recordsPerSecond: number;
  readonly lookupsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

async function run(withReaders: boolean, home: string, id: string): Promise<Run> {
  const job = runJob(counter, { mode: "threads", parallelism: 2, jobId: id });
  const control = await startControlServer(job, { home, logger: silentLogger });
  const latencies: number[] = [];
  let lookups = 0;
  let readingMs = 0;
  try {
    if (withReaders) {
      const client = createQueryClient({ home });
      const start = performance.now();
      let stop = false;
      void job.done.finally(() => (stop = true)).catch(() => undefined);
      const reader = async (): Promise<void> => {
        while (!stop) {
          const key = Math.floor(Math.random() * KEYS);
          const t = performance.now();
          try {
            await client.get(id, "counts", key);
          } catch {
            // Not registered yet, or the job just ended.
            await new Promise((resolve) => setTimeout(resolve, 5));
            continue;
          }
          latencies.push(performance.now() - t);
          lookups++;
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, reader));
      readingMs = performance.now() - start;
      client.close();
    }
    const result = await job.done;
    return {
      recordsPerSecond: (RECORDS * 1000) / result.runningMs,
      lookupsPerSecond: readingMs === 0 ? 0 : (lookups * 1000) / readingMs,
      p50Ms: latencies.length === 0 ? Number.NaN : quantile(latencies, 0.5),
      p99Ms: latencies.length === 0 ? Number.NaN : quantile(latencies, 0.99),
    };
  } finally {
    await control.close();
  }
}

const home = mkdtempSync(join(tmpdir(), "eddy-bench-queryable-"));
try {
  const without: Run[] = [];
  const withReads: Run[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    without.push(await run(false, home, `q-off-${r}`));
    withReads.push(await run(true, home, `q-on-${r}`));
  }
  const off = median(without.map((x) => x.recordsPerSecond));
  const on = median(withReads.map((x) => x.recordsPerSecond));
  console.log(`# Queryable state benchmark — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${RECORDS.toLocaleString("en")} records, ${KEYS.toLocaleString("en")} keys, parallelism 2, ${CONCURRENCY} reads in flight, ${ROUNDS} rounds (medians)\n`);
  console.log("| readers | job records/s | ÷ without | lookups/s | p50 | p99 |");
  console.log("|---|---|---|---|---|---|");
  console.log(`| none | ${Math.round(off).toLocaleString("en")} | 1.00 | — | — | — |`);
  console.log(
    `| ${CONCURRENCY} in flight | ${Math.round(on).toLocaleString("en")} | ${(on / off).toFixed(2)} | ${Math.round(median(withReads.map((x) => x.lookupsPerSecond))).toLocaleString("en")} | ${median(withReads.map((x) => x.p50Ms)).toFixed(2)} ms | ${median(withReads.map((x) => x.p99Ms)).toFixed(2)} ms |`,
  );
} finally {
  rmSync(home, { recursive: true, force: true });
}
