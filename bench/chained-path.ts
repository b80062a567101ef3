/**
 * Micro-benchmark of the chained per-record path, inline (one thread):
 *
 *   source → map → filter → keyBy → rolling reduce → discarding sink
 *
 * beside baselines computing the same result in the same run: a hand-written loop (the floor of
 * JavaScript here) and Node object-mode streams (a peer). Every variant folds its output into a
 * checksum, and the checksums must agree, so no variant can skip work.
 *
 *   node -C eddy-source --import tsx bench/chained-path.ts [records=5000000] [rounds=5]
 *
 * Reports the median of `rounds` runs per variant and the ratios to the hand-written loop.
 */
import { Readable, Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Sink } from "eddy";
import { runJob } from "eddy/testing";
import { CHAINED_PATH_KEYS as KEYS, chainedPathJob, keepChainedPathRecord as keep, type ChainedPathRecord as Rec } from "./jobs/chained-path.ts";
import { median, timeVariants } from "./stats.ts";

const N = Number(process.argv[2] ?? 5_000_000);
const ROUNDS = Number(process.argv[3] ?? 5);

const toRecord = (n: number): Rec => ({ key: n % KEYS, value: n });
const combine = (a: Rec, b: Rec): Rec => ({ key: a.key, value: a.value + b.value });
/** Order-independent fold of the emitted records. */
const fold = (sum: number, r: Rec): number => (sum + r.value * (r.key + 1)) % 1_000_000_007;

function handWritten(): number {
  const acc = new Map<number, Rec>();
  let checksum = 0;
  for (let n = 0; n < N; n++) {
    const r = toRecord(n);
    if (!keep(r)) continue;
    const prev = acc.get(r.key);
    const next = prev === undefined ? r : combine(prev, r);
    acc.set(r.key, next);
    checksum = fold(checksum, next);
  }
  return checksum;
}

/** The Eddy job; `metricsEnabled: false` drops the per-record counters (docs/metrics.md), to see what they cost. */
async function eddy(metricsEnabled = true): Promise<number> {
  let checksum = 0;
  const discard: Sink<Rec> = {
    createWriter: () => ({
      write(r) {
        checksum = fold(checksum, r);
      },
    }),
  };
  const handle = runJob(chainedPathJob("bench-chained-path", N, toRecord, keep, combine, discard), { metricsEnabled });
  await handle.done;
  return checksum;
}

async function nodeStreams(): Promise<number> {
  let checksum = 0;
  const acc = new Map<number, Rec>();
  async function* numbers() {
    // Batches of 1024 per chunk keep the generator from dominating.
    for (let n = 0; n < N; n += 1024) {
      const end = Math.min(N, n + 1024);
      for (let i = n; i < end; i++) yield i;
    }
  }
  await pipeline(
    Readable.from(numbers()),
    new Transform({ objectMode: true, transform: (n: number, _e, cb) => cb(null, toRecord(n)) }),
    new Transform({ objectMode: true, transform: (r: Rec, _e, cb) => (keep(r) ? cb(null, r) : cb()) }),
    new Transform({
      objectMode: true,
      transform(r: Rec, _e, cb) {
        const prev = acc.get(r.key);
        const next = prev === undefined ? r : combine(prev, r);
        acc.set(r.key, next);
        cb(null, next);
      },
    }),
    new Writable({
      objectMode: true,
      write(r: Rec, _e, cb) {
        checksum = fold(checksum, r);
        cb();
      },
    }),
  );
  return checksum;
}

const variants: [string, () => number | Promise<number>][] = [
  ["hand-written loop", handWritten],
  ["eddy (inline, chained)", () => eddy()],
  ["eddy, metrics off", () => eddy(false)],
  ["node object-mode streams", nodeStreams],
];
const times = await timeVariants(variants, ROUNDS);
const base = median(times.get("hand-written loop")!);
process.stdout.write(`records: ${N.toLocaleString("en")}, keys: ${KEYS}, rounds: ${ROUNDS} (median)\n`);
for (const [name] of variants) {
  const ms = median(times.get(name)!);
  const rate = (N / ms) * 1000;
  process.stdout.write(
    `${name.padEnd(28)} ${ms.toFixed(0).padStart(7)} ms  ${(rate / 1e6).toFixed(2).padStart(6)} M rec/s  ${(ms / base).toFixed(2)}× the loop\n`,
  );
}
