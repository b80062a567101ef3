/**
 * The Nexmark queries the bench knows: adding one is one entry in BENCH_QUERIES (the query's
 * builder from examples/nexmark, the digest of its result, its hand-written loop, and what of its
 * output can be compared where it depends on timing). Flink's figure comes from flink-per-core.ts
 * by name.
 */
import type { DataStream, Sink, StreamExecutionEnvironment } from "eddy";
import { q0 } from "../../examples/nexmark/q0.ts";
import { q1 } from "../../examples/nexmark/q1.ts";
import { q10, q10Sink } from "../../examples/nexmark/q10.ts";
import { q2 } from "../../examples/nexmark/q2.ts";
import { q3 } from "../../examples/nexmark/q3.ts";
import { q5 } from "../../examples/nexmark/q5.ts";
import { q7 } from "../../examples/nexmark/q7.ts";
import { q8 } from "../../examples/nexmark/q8.ts";
import { q11 } from "../../examples/nexmark/q11.ts";
import { q14 } from "../../examples/nexmark/q14.ts";
import { q21 } from "../../examples/nexmark/q21.ts";
import { q22 } from "../../examples/nexmark/q22.ts";
import { q4 } from "../../examples/nexmark/q4.ts";
import { q12 } from "../../examples/nexmark/q12.ts";
import { q15 } from "../../examples/nexmark/q15.ts";
import { q16 } from "../../examples/nexmark/q16.ts";
import { q17 } from "../../examples/nexmark/q17.ts";
import { q18 } from "../../examples/nexmark/q18.ts";
import { q19 } from "../../examples/nexmark/q19.ts";
import { q20 } from "../../examples/nexmark/q20.ts";
import { q9 } from "../../examples/nexmark/q9.ts";
import { q13 } from "../../examples/nexmark/q13.ts";
import * as digests from "./digests.ts";
import type { EventRange } from "./event-range.ts";
import { foldingSink } from "../folding-sink.ts";
import type { OutputFold } from "../output-fold.ts";
import { q0Loop, q10Loop, readQ10Files, q13Loop, q14Loop, q1Loop, q21Loop, q22Loop, q2Loop } from "./stateless-loops.ts";
import { q11Loop, q20Loop, q3Loop, q5Loop, q7Loop, q8Loop } from "./stateful-loops.ts";
import { q12Loop, q15Loop, q16Loop, q17Loop, q18Loop, q19Loop, q4Loop, q9Loop } from "./updating-loops.ts";

/** What the bench compares of a query's output between the job and the loop (and between rounds). */
export interface OutputComparison {
  /** The number of output records. */
  readonly count: boolean;
  /** The sum of the records' digests. */
  readonly checksum: boolean;
  /** Why not everything is compared; undefined when it is. */
  readonly note?: string;
}

export interface BenchQuery {
  /** No state: the "within 3× of the loop" target applies. */
  readonly stateless: boolean;
  /** Builds the query on `env` with the bench's folding sink at its end. */
  readonly buildWithSink: (env: StreamExecutionEnvironment) => void;
  /** What is compared at `parallelism`. */
  readonly comparison: (parallelism: number) => OutputComparison;
  /**
   * The same answer computed by hand over the same events, folded as the job's sink folds at
   * `parallelism`; undefined when the loop's output is files in `outputDir`, read by `readOutput`.
   */
  readonly handLoop: ((range: EventRange, parallelism: number, outputDir: string) => OutputFold | undefined) | undefined;
  /**
   * For a query whose real output is files (q10): the job writes them into the directory named by
   * OUTPUT_DIR_ENV and has no folding sink, and this folds them when the run is over, outside the
   * timed part, as it does the loop's. Flink's figures are for the same work: generator, map and
   * filesystem sink, no second sink digesting every record.
   */
  readonly readOutput?: (dir: string) => OutputFold;
}

/** The directory a query with `readOutput` writes into, set before the job is built (worker threads inherit it). */
export const OUTPUT_DIR_ENV = "EDDY_BENCH_OUTPUT_DIR";

/** `--sink` (bench/nexmark/args.ts), set before the job is built (worker threads inherit it): "discard" drops rows unread. */
export const SINK_ENV = "EDDY_BENCH_SINK";

/**
 * Where `--sink discard` puts each row: a field of an exported object, so that neither the job
 * nor the loop can have the row's allocation optimised away (a row that escapes nowhere may not
 * be built at all), while nothing reads the row's fields.
 */
export const discardedRow: { last: unknown } = { last: undefined };

/** The digest of `--sink discard`: keeps the row (see `discardedRow`), reads none of it. */
function discardUnread(row: unknown): number {
  discardedRow.last = row;
  return 0;
}

const DISCARDED = "--sink discard: rows kept unread, as Flink's blackhole sink does; only their count is compared";

/** A comparison and the digest that makes it: job sink and loop fold the same one. */
interface DigestComparison<T> extends OutputComparison {
  readonly digest: (record: T) => number;
}

interface QuerySpec<T> {
  readonly stateless: boolean;
  readonly build: (env: StreamExecutionEnvironment) => DataStream<T>;
  /** Digest of a whole record: count and checksum are compared, unless `comparison` says otherwise. */
  readonly digest: (record: T) => number;
  /** Less than the whole output, at some parallelism: for results that depend on timing. */
  readonly comparison?: (parallelism: number) => DigestComparison<T> | undefined;
  readonly handLoop?: (range: EventRange, digest: (record: T) => number) => OutputFold;
}

/** Hides the result type T once the sink, the loop and the digest are known to agree on it. */
function benchQuery<T>(spec: QuerySpec<T>): BenchQuery {
  const compare = (parallelism: number): DigestComparison<T> => {
    const digested = spec.comparison?.(parallelism) ?? { digest: spec.digest, count: true, checksum: true };
    if (process.env[SINK_ENV] !== "discard") return digested;
    return { digest: discardUnread, count: digested.count, checksum: false, note: digested.note === undefined ? DISCARDED : `${DISCARDED}; ${digested.note}` };
  };
  const { handLoop } = spec;
  return {
    stateless: spec.stateless,
    buildWithSink: (env) => {
      const sink: Sink<T> = { createWriter: (ctx) => foldingSink(compare(ctx.parallelism).digest).createWriter(ctx) };
      spec.build(env).sinkTo(sink, "Sink: folding");
    },
    comparison: compare,
    handLoop: handLoop === undefined ? undefined : (range, parallelism) => handLoop(range, compare(parallelism).digest),
  };
}

/**
 * At parallelism > 1 the rows of an updating query depend on the order in which the keyed
 * operator receives a key's records from the parallel source subtasks (which is timing): there,
 * compare only what `comparison` says.
 */
const whenInterleaved =
  <T>(comparison: DigestComparison<T>) =>
  (parallelism: number): DigestComparison<T> | undefined =>
    parallelism === 1 ? undefined : comparison;

/**
 * q10's output is its partitioned CSV files (FileSink), read back and folded after the run
 * (readQ10Files): the timed job is generator, map and file sink, as in Flink's q10.
 */
const Q10: BenchQuery = {
  stateless: true,
  buildWithSink: (env) => {
    const dir = process.env[OUTPUT_DIR_ENV];
    if (dir === undefined) throw new RangeError(`${OUTPUT_DIR_ENV} is not set`);
    q10(env).sinkTo(q10Sink(dir)).name("Sink: fs_sink");
  },
  comparison: () => ({ count: true, checksum: true }),
  handLoop: (range, _parallelism, dir) => {
    q10Loop(range, dir);
    return undefined;
  },
  readOutput: readQ10Files,
};

const UPDATE_VALUES = "at parallelism > 1, each row's group and bid count; the values depend on the interleaving";
const UPDATES_EMITTED = "at parallelism > 1, which updates are emitted depends on the interleaving";

export const BENCH_QUERIES: Readonly<Record<string, BenchQuery>> = {
  q0: benchQuery({ stateless: true, build: q0, digest: digests.digestBidProjection, handLoop: q0Loop }),
  q1: benchQuery({ stateless: true, build: q1, digest: digests.digestBidProjection, handLoop: q1Loop }),
  q2: benchQuery({ stateless: true, build: q2, digest: digests.digestQ2, handLoop: q2Loop }),
  q3: benchQuery({ stateless: false, build: q3, digest: digests.digestQ3, handLoop: q3Loop }),
  q4: benchQuery({
    stateless: false,
    build: q4,
    digest: digests.digestQ4Category,
    // Auctions closing at the same ms close in the order their timers were registered, which at
    // any parallelism depends on how the operator's two inputs (auctions, bids) interleave.
    comparison: () => ({
      digest: digests.digestQ4Category,
      count: true,
      checksum: true,
      note: "each row's category; the running averages depend on the order auctions close in",
    }),
    handLoop: q4Loop,
  }),
  q5: benchQuery({ stateless: false, build: q5, digest: digests.digestQ5, handLoop: q5Loop }),
  q7: benchQuery({ stateless: false, build: q7, digest: digests.digestQ7, handLoop: q7Loop }),
  q8: benchQuery({ stateless: false, build: q8, digest: digests.digestQ8, handLoop: q8Loop }),
  q9: benchQuery({ stateless: false, build: q9, digest: digests.digestQ9, handLoop: q9Loop }),
  q10: Q10,
  q11: benchQuery({ stateless: false, build: q11, digest: digests.digestQ11, handLoop: q11Loop }),
  q13: benchQuery({ stateless: true, build: (env) => q13(env), digest: digests.digestQ13, handLoop: q13Loop }),
  q12: benchQuery({
    stateless: false,
    build: q12,
    digest: digests.digestQ12Bids,
    // Processing-time windows: which window a bid falls into is timing at every parallelism.
    comparison: () => ({ digest: digests.digestQ12Bids, count: false, checksum: true, note: "bids per bidder only; the windows are processing time" }),
    handLoop: q12Loop,
  }),
  q14: benchQuery({ stateless: true, build: q14, digest: digests.digestQ14, handLoop: q14Loop }),
  q15: benchQuery({ stateless: false, build: q15, digest: digests.digestQ15, comparison: whenInterleaved({ digest: digests.digestQ15Update, count: true, checksum: true, note: UPDATE_VALUES }), handLoop: q15Loop }),
  q16: benchQuery({ stateless: false, build: q16, digest: digests.digestQ16, comparison: whenInterleaved({ digest: digests.digestQ16Update, count: true, checksum: true, note: UPDATE_VALUES }), handLoop: q16Loop }),
  q17: benchQuery({ stateless: false, build: q17, digest: digests.digestQ17, comparison: whenInterleaved({ digest: digests.digestQ17Update, count: true, checksum: true, note: UPDATE_VALUES }), handLoop: q17Loop }),
  q18: benchQuery({ stateless: false, build: q18, digest: digests.digestQ18, comparison: whenInterleaved({ digest: digests.digestQ18, count: false, checksum: false, note: UPDATES_EMITTED }), handLoop: q18Loop }),
  q19: benchQuery({ stateless: false, build: q19, digest: digests.digestQ19, comparison: whenInterleaved({ digest: digests.digestQ19, count: false, checksum: false, note: UPDATES_EMITTED }), handLoop: q19Loop }),
  q20: benchQuery({ stateless: false, build: q20, digest: digests.digestQ20, handLoop: q20Loop }),
  q21: benchQuery({ stateless: true, build: q21, digest: digests.digestQ21, handLoop: q21Loop }),
  q22: benchQuery({ stateless: true, build: q22, digest: digests.digestQ22, handLoop: q22Loop }),
};

/** The query named `name`; throws listing the known ones. */
export function benchQueryNamed(name: string): BenchQuery {
  const query = BENCH_QUERIES[name];
  if (query === undefined) throw new RangeError(`unknown Nexmark query '${name}'; known: ${Object.keys(BENCH_QUERIES).join(", ")}`);
  return query;
}
