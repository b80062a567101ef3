/**
 * Jobs measured by bench/parallel.ts. They are exported at a module's top level so worker threads
 * can rebuild them (docs/design/architecture.md, "A job is a module"); sizes come from environment
 * variables, which worker threads inherit, so the bench driver can set them per run.
 */
import { foldingSink } from "../folding-sink.ts";
import { setting } from "./settings.ts";
import { defineJob, WatermarkStrategy, type Sink, type Source, type SourceReader } from "eddy";
import { assignToKeyGroup, defaultMaxParallelism, operatorIndexOfKeyGroup } from "../../packages/eddy/src/core/key-group.ts";

const RECORDS = setting("EDDY_BENCH_RECORDS", 10_000_000);
const KEYS = setting("EDDY_BENCH_KEYS", 1_000);
const RATE = setting("EDDY_BENCH_RATE", 100_000);
const DURATION_MS = setting("EDDY_BENCH_DURATION_MS", 5_000);
/** Rounds of integer mixing the keyed stage of `keyedWork` does per record (~3.7 ns each here). */
const WORK_ROUNDS = setting("EDDY_BENCH_WORK_ROUNDS", 50);
/** Records emitted in the first WARMUP_MS are not measured (JIT and thread warm-up). */
const WARMUP_MS = setting("EDDY_BENCH_WARMUP_MS", 1_000);

interface Rec {
  key: number;
  value: number;
}

/** Counts what it receives; the driver checks the count against the source (no variant can skip work). */
const countingSink = <T>() => foldingSink<T>(() => 0);

/** (a) Records through one keyBy exchange: source (1 subtask) → keyed sink (1 subtask). */
export const exchange = defineJob("bench-exchange", (env) => {
  const keys = KEYS();
  env
    .fromSequence(0, RECORDS() - 1)
    .setParallelism(1)
    .map((n): Rec => ({ key: n % keys, value: n }))
    .keyBy((r) => r.key)
    .sinkTo(countingSink())
    .setParallelism(1);
});

/** (b) A keyed count: every record updates its key's count; the updates go to a counting sink. */
export const keyedCount = defineJob("bench-keyed-count", (env) => {
  const keys = KEYS();
  env
    .fromSequence(0, RECORDS() - 1)
    .map((n): Rec => ({ key: n % keys, value: 1 }))
    .keyBy((r) => r.key)
    .sum("value")
    .sinkTo(countingSink());
});

/** `rounds` rounds of a 32-bit mix (murmur3's finalizer) over `x`: CPU work that allocates nothing. */
export function mix(x: number, rounds: number): number {
  let h = x | 0;
  for (let i = 0; i < rounds; i++) {
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) ^ i;
  }
  return (h ^ (h >>> 16)) >>> 0;
}

/** The keyed count's reduce with `rounds` rounds of mixing per record (see `keyedWork`). */
function countWithWork(rounds: number): (acc: Rec, r: Rec) => Rec {
  return (acc, r) => ({ key: acc.key, value: acc.value + r.value + (mix(acc.value, rounds) === 2 ** 32 ? 1 : 0) });
}

/**
 * (b) with user work in the keyed stage: the count's reduce function also mixes the record
 * WORK_ROUNDS times, the ~0.1-0.3 µs per record of a keyed stage that does more than add. Same
 * records, keys, exchange and output as (b). The mix's result decides nothing (it is never
 * 2^32), but the JIT cannot know that, so the work is done.
 */
export const keyedWork = defineJob("bench-keyed-work", (env) => {
  const keys = KEYS();
  const rounds = WORK_ROUNDS();
  env
    .fromSequence(0, RECORDS() - 1)
    .map((n): Rec => ({ key: n % keys, value: 1 }))
    .keyBy((r) => r.key)
    .reduce(countWithWork(rounds))
    .sinkTo(countingSink());
});

/**
 * The keyed count of (b) at parallelism 2 with its keys chosen per source subtask
 * (bench/parallel-breakdown.ts): EDDY_BENCH_ROUTING "local" gives each source subtask keys that
 * the keyed subtask of the same index owns (no record crosses between workers when subtasks i
 * share a worker), "remote" keys that the other one owns (every record crosses), "natural"
 * `n % keys` as in (b) (about half cross). Same record shape and key count in all three. With
 * EDDY_BENCH_WORK_ROUNDS set, the keyed stage is that of `keyedWork`.
 */
export const routedKeyedCount = defineJob("bench-routed-keyed-count", (env) => {
  const records = RECORDS();
  const keys = KEYS();
  const routing = process.env.EDDY_BENCH_ROUTING ?? "natural";
  // fromSequence gives source subtask i the i-th half of the range (connector/collection-source.ts).
  const half = Math.floor(records / 2);
  const maxParallelism = defaultMaxParallelism(2);
  const owned: number[][] = [[], []];
  for (let k = 0; k < keys; k++) owned[operatorIndexOfKeyGroup(maxParallelism, 2, assignToKeyGroup(k, maxParallelism))]!.push(k);
  const [first, second] = routing === "remote" ? [owned[1]!, owned[0]!] : [owned[0]!, owned[1]!];
  const keyOf = routing === "natural" ? (n: number) => n % keys : (n: number) => (n < half ? first[n % first.length]! : second[n % second.length]!);
  const rounds = setting("EDDY_BENCH_WORK_ROUNDS", 0)();
  const keyed = env
    .fromSequence(0, records - 1)
    .map((n): Rec => ({ key: keyOf(n), value: 1 }))
    .keyBy((r) => r.key);
  // With work rounds, the keyed stage of `keyedWork`; without, the count of (b).
  (rounds > 0 ? keyed.reduce(countWithWork(rounds)) : keyed.sum("value")).sinkTo(countingSink());
});

interface Timed {
  key: number;
  seq: number;
  /** performance.timeOrigin + performance.now() when the source emitted it (ms, comparable across threads). */
  emittedAt: number;
  /** Emitted after the warm-up: measured. */
  warm: boolean;
}

const now = (): number => performance.timeOrigin + performance.now();

/** Emits RATE records/s in total (split over its subtasks) for WARMUP_MS + DURATION_MS. */
function pacedSource(): Source<Timed, { splitId: string }> {
  const [RATE_, DURATION_, KEYS_, WARMUP_] = [RATE(), DURATION_MS(), KEYS(), WARMUP_MS()];
  return {
    boundedness: "bounded",
    createEnumerator: (ctx) => ({
      addReader: (subtask) => {
        ctx.assignSplits(subtask, [{ splitId: `paced-${subtask}` }]);
        ctx.signalNoMoreSplits(subtask);
      },
    }),
    createReader: (ctx) => {
      const rate = RATE_ / ctx.parallelism;
      const total = Math.floor((rate * (DURATION_ + WARMUP_)) / 1000);
      const warmAfter = Math.floor((rate * WARMUP_) / 1000);
      let started = -1;
      let emitted = 0;
      let hasSplit = false;
      const reader: SourceReader<Timed, { splitId: string }> = {
        pollNext(out) {
          if (!hasSplit) return "nothing";
          const t = now();
          if (started < 0) started = t;
          const due = Math.min(total, Math.floor(((t - started) * rate) / 1000) + 1);
          for (let i = 0; emitted < due && i < 256; i++, emitted++) {
            out.collect({ key: (emitted * ctx.parallelism + ctx.subtaskIndex) % KEYS_, seq: emitted, emittedAt: now(), warm: emitted >= warmAfter });
          }
          if (emitted >= total) return "end";
          return emitted < due ? "more" : "nothing";
        },
        isAvailable: () => new Promise((resolve) => setTimeout(resolve, hasSplit ? 1000 / rate : 1)),
        addSplits: () => void (hasSplit = true),
        notifyNoMoreSplits: () => {},
        snapshotState: () => [],
      };
      return reader;
    },
  };
}

/** Latency histogram in 10 µs buckets up to 1 s; the last bucket holds everything slower. */
export const BUCKET_MS = 0.01;
export const BUCKETS = 100_000;

function latencySink(): Sink<Timed> {
  return {
    createWriter: (ctx) => {
      const histogram = new Uint32Array(BUCKETS);
      let coldMax = 0;
      return {
        write(r) {
          const latency = now() - r.emittedAt;
          if (r.warm) histogram[Math.min(BUCKETS - 1, Math.floor(latency / BUCKET_MS))]!++;
          else coldMax = Math.max(coldMax, latency);
        },
        flush(end) {
          if (end) ctx.job.collect("latency", { histogram: Array.from(histogram), coldMax });
        },
      };
    },
  };
}

/** (c) Two keyed stages at a fixed rate; the sink measures each record's time since the source. */
export const latency = defineJob("bench-latency", (env) => {
  const keys = KEYS();
  env
    .fromSource(pacedSource(), WatermarkStrategy.noWatermarks<Timed>(), "paced")
    .keyBy((r) => r.key)
    .map((r) => ({ ...r, key: (r.key * 7) % keys }))
    .keyBy((r) => r.key)
    .sinkTo(latencySink());
});
