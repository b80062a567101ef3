/**
 * The Nexmark queries the bench knows: adding one is one entry in BENCH_QUERIES (the query's
 * builder from examples/nexmark, the digest of its result, and its hand-written loop if there is
 * one). Flink's figure comes from flink-per-core.ts by name.
 */
import type { DataStream, StreamExecutionEnvironment } from "eddy";
import { q0 } from "../../examples/nexmark/q0.ts";
import { q1 } from "../../examples/nexmark/q1.ts";
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
import * as digests from "./digests.ts";
import type { EventRange } from "./event-range.ts";
import { foldingSink } from "../folding-sink.ts";
import type { OutputFold } from "../output-fold.ts";
import { q0Loop, q14Loop, q1Loop, q21Loop, q22Loop, q2Loop } from "./stateless-loops.ts";
import { q11Loop, q3Loop, q5Loop, q7Loop, q8Loop } from "./stateful-loops.ts";

export interface BenchQuery {
  /** No state: the "within 3× of the loop" target applies. */
  readonly stateless: boolean;
  /** Builds the query on `env` with the bench's folding sink at its end. */
  readonly buildWithSink: (env: StreamExecutionEnvironment) => void;
  /** The same answer computed by hand over the same events; undefined: not written yet. */
  readonly handLoop: ((range: EventRange) => OutputFold) | undefined;
}

interface QuerySpec<T> {
  readonly stateless: boolean;
  readonly build: (env: StreamExecutionEnvironment) => DataStream<T>;
  readonly digest: (record: T) => number;
  readonly handLoop?: (range: EventRange) => OutputFold;
}

/** Hides the result type T once the sink and the digest are known to agree on it. */
function benchQuery<T>(spec: QuerySpec<T>): BenchQuery {
  return {
    stateless: spec.stateless,
    buildWithSink: (env) => void spec.build(env).sinkTo(foldingSink(spec.digest), "Sink: folding"),
    handLoop: spec.handLoop,
  };
}

/**
 * A digest for queries without a dedicated one (and without a hand-written loop yet): mixes every
 * top-level field (numbers by value, strings by length and two characters, anything else by its
 * type), so the sink reads each field, at a cost close to the dedicated digests.
 */
function digestFields(record: unknown): number {
  let h = 0x811c9dc5;
  for (const v of Object.values(record as Record<string, unknown>)) {
    let x: number;
    if (typeof v === "number") x = (v * 2654435761) | 0;
    else if (typeof v === "string") x = v.length * 31 + (v.charCodeAt(0) | 0) * 7 + (v.charCodeAt(v.length - 1) | 0);
    else x = v === null || v === undefined ? 1 : 2;
    h = Math.imul(h ^ x, 0x01000193);
  }
  return h >>> 0;
}

export const BENCH_QUERIES: Readonly<Record<string, BenchQuery>> = {
  q0: benchQuery({ stateless: true, build: q0, digest: digests.digestBidProjection, handLoop: q0Loop }),
  q1: benchQuery({ stateless: true, build: q1, digest: digests.digestBidProjection, handLoop: q1Loop }),
  q2: benchQuery({ stateless: true, build: q2, digest: digests.digestQ2, handLoop: q2Loop }),
  q3: benchQuery({ stateless: false, build: q3, digest: digests.digestQ3, handLoop: q3Loop }),
  q5: benchQuery({ stateless: false, build: q5, digest: digests.digestQ5, handLoop: q5Loop }),
  q7: benchQuery({ stateless: false, build: q7, digest: digests.digestQ7, handLoop: q7Loop }),
  q8: benchQuery({ stateless: false, build: q8, digest: digests.digestQ8, handLoop: q8Loop }),
  q11: benchQuery({ stateless: false, build: q11, digest: digests.digestQ11, handLoop: q11Loop }),
  q14: benchQuery({ stateless: true, build: q14, digest: digests.digestQ14, handLoop: q14Loop }),
  q21: benchQuery({ stateless: true, build: q21, digest: digests.digestQ21, handLoop: q21Loop }),
  q22: benchQuery({ stateless: true, build: q22, digest: digests.digestQ22, handLoop: q22Loop }),
  // No hand-written loops yet for these (the table prints "—").
  q4: benchQuery({ stateless: false, build: q4, digest: digestFields }),
  q12: benchQuery({ stateless: false, build: q12, digest: digestFields }),
  q15: benchQuery({ stateless: false, build: q15, digest: digestFields }),
  q16: benchQuery({ stateless: false, build: q16, digest: digestFields }),
  q17: benchQuery({ stateless: false, build: q17, digest: digestFields }),
  q18: benchQuery({ stateless: false, build: q18, digest: digestFields }),
  q19: benchQuery({ stateless: false, build: q19, digest: digestFields }),
  q20: benchQuery({ stateless: false, build: q20, digest: digestFields }),
};

/** The query named `name`; throws listing the known ones. */
export function benchQueryNamed(name: string): BenchQuery {
  const query = BENCH_QUERIES[name];
  if (query === undefined) throw new RangeError(`unknown Nexmark query '${name}'; known: ${Object.keys(BENCH_QUERIES).join(", ")}`);
  return query;
}
