/**
 * A keyed job on the heap backend and on the disk backend (issue 29): a counter and a short list
 * per key (bench/jobs/state-backend.ts), inline at parallelism 1, with checkpoints every second.
 * Three settings of the disk backend: a cache holding every key, a cache of 10 % of the keys with
 * uniform keys (most accesses miss: LMDB reads and write-backs), and the same small cache with a
 * skewed workload (90 % of records on 1 % of the keys). And a read-mostly workload (one record in 10
 * writes, the others only read their key's state) with uniform keys and the small cache: there the
 * disk backend's misses load keys it need not write back (the dirty flag).
 *
 *   node -C eddy-source --import tsx bench/state-backend.ts [--records 2000000] [--keys 200000] [--rounds 3]
 *
 * Reports the median records/s of `rounds`, each run's ratio to the heap backend measured in the
 * same round (uniform and skewed keys each have their heap baseline), and the longest synchronous
 * part of a checkpoint of each variant (the task's pause at a barrier).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runJob } from "eddy/testing";
import { silentLogger } from "../packages/eddy/src/core/logger.ts";
import { stateBackendJob } from "./jobs/state-backend.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    records: { type: "string", default: "2000000" },
    keys: { type: "string", default: "200000" },
    rounds: { type: "string", default: "3" },
  },
});
const RECORDS = Number(values.records);
const KEYS = Number(values.keys);
const ROUNDS = Number(values.rounds);
process.env.EDDY_BENCH_SB_RECORDS = String(RECORDS);
process.env.EDDY_BENCH_SB_KEYS = String(KEYS);

interface Variant {
  readonly name: string;
  readonly skewed: boolean;
  /** One record in `writeEvery` writes (1: every record). */
  readonly writeEvery: number;
  /** undefined: the heap backend. */
  readonly cacheSize: number | undefined;
}
const VARIANTS: Variant[] = [
  { name: "heap, uniform keys", skewed: false, writeEvery: 1, cacheSize: undefined },
  { name: "disk, cache = all keys, uniform", skewed: false, writeEvery: 1, cacheSize: KEYS },
  { name: "disk, cache = 10 % of keys, uniform", skewed: false, writeEvery: 1, cacheSize: KEYS / 10 },
  { name: "heap, skewed keys", skewed: true, writeEvery: 1, cacheSize: undefined },
  { name: "disk, cache = 10 % of keys, skewed", skewed: true, writeEvery: 1, cacheSize: KEYS / 10 },
  { name: "heap, uniform, read-mostly", skewed: false, writeEvery: 10, cacheSize: undefined },
  { name: "disk, cache = 10 %, uniform, read-mostly", skewed: false, writeEvery: 10, cacheSize: KEYS / 10 },
];
/** The heap variant each disk variant is compared with: same keys, same writes. */
const baselineOf = (v: Variant): string => `${v.skewed}/${v.writeEvery}`;

const home = mkdtempSync(join(tmpdir(), "eddy-bench-sb-"));
const rates = new Map<string, number[]>(VARIANTS.map((v) => [v.name, []]));
const ratios = new Map<string, number[]>(VARIANTS.map((v) => [v.name, []]));
const syncMs = new Map<string, number>(VARIANTS.map((v) => [v.name, 0]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    const baseline = new Map<string, number>();
    for (const v of VARIANTS) {
      process.env.EDDY_BENCH_SB_SKEWED = v.skewed ? "1" : "0";
      process.env.EDDY_BENCH_SB_WRITE_EVERY = String(v.writeEvery);
      const config: Record<string, string> =
        v.cacheSize === undefined ? {} : { "state.backend": "disk", "state.backend.disk.dir": join(home, "state"), "state.backend.disk.cache-size": String(v.cacheSize) };
      const start = performance.now();
      const job = runJob(stateBackendJob, {
        mode: "inline",
        logger: silentLogger,
        checkpointing: { intervalMs: 1_000 },
        checkpointDir: join(home, "checkpoints"),
        jobId: `sb-${round}-${v.name.replace(/[^a-z0-9]+/g, "-")}`,
        config,
      });
      await job.done;
      for (const c of job.checkpoints()) syncMs.set(v.name, Math.max(syncMs.get(v.name)!, c.syncMs ?? 0));
      const rate = RECORDS / ((performance.now() - start) / 1_000);
      if (v.cacheSize === undefined) baseline.set(baselineOf(v), rate);
      rates.get(v.name)!.push(rate);
      ratios.get(v.name)!.push(rate / baseline.get(baselineOf(v))!);
      rmSync(join(home, "checkpoints"), { recursive: true, force: true });
    }
  }
} finally {
  rmSync(home, { recursive: true, force: true });
}
console.log(`${RECORDS} records, ${KEYS} keys, ${ROUNDS} rounds: median records/s (ratio to the heap backend of the same round), longest synchronous checkpoint part`);
for (const v of VARIANTS) {
  console.log(`${v.name.padEnd(40)} ${Math.round(median(rates.get(v.name)!)).toLocaleString("en")}  (${median(ratios.get(v.name)!).toFixed(2)})  sync ≤ ${syncMs.get(v.name)!.toFixed(1)} ms`);
}
