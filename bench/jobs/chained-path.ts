/**
 * The job of the chained-path bench (bench/chained-path.ts): source → map → filter → keyBy →
 * rolling reduce → sink, inline. bench/field-representation.ts runs the same job as a process's
 * first job, so both build it here.
 */
import { defineJob, type JobDefinition, type Sink } from "eddy";

export interface KeyedRecord {
  readonly key: number;
}

/** The records both benches run through the job: `n % CHAINED_PATH_KEYS` keys, the sequence number as value. */
export interface ChainedPathRecord {
  key: number;
  value: number;
}

export const CHAINED_PATH_KEYS = 1000;

/** The job's filter (it drops every third record); the record-building functions stay per bench. */
export const keepChainedPathRecord = (r: ChainedPathRecord): boolean => r.value % 3 !== 0;

export function chainedPathJob<R extends KeyedRecord>(
  name: string,
  records: number,
  toRecord: (n: number) => R,
  keep: (r: R) => boolean,
  combine: (a: R, b: R) => R,
  sink: Sink<R>,
): JobDefinition {
  return defineJob(name, (env) => {
    env.fromSequence(0, records - 1).map(toRecord).filter(keep).keyBy((r) => r.key).reduce(combine).uid("reduce").sinkTo(sink);
  });
}
