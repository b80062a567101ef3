/**
 * Jobs for test/reinterpret-keyed.test.ts (their own module: worker threads import it). The job's
 * parallelism comes from the run options.
 */
import { defineJob, reinterpretAsKeyedStream, type KeyedProcessFunction, type RuntimeContext } from "eddy";
import { collectSink } from "eddy/testing";

export const RECORDS = 2_000;
export const KEYS = 37;

export interface Summed {
  readonly key: number;
  readonly value: number;
  readonly subtask: number;
}

/** Rolling sum per key that tags each result with its subtask. */
function sumWithSubtask(): KeyedProcessFunction<number, { key: number; value: number }, Summed> & { subtask: number; sums: Map<number, number> } {
  return {
    subtask: -1,
    sums: new Map(),
    open(ctx: RuntimeContext) {
      this.subtask = ctx.subtaskIndex;
    },
    processElement(r, _ctx, out) {
      const sum = (this.sums.get(r.key) ?? 0) + r.value;
      this.sums.set(r.key, sum);
      out.collect({ key: r.key, value: sum, subtask: this.subtask });
    },
  };
}

/** keyBy, a record-wise map that keeps the key, then keyed again without a second shuffle. */
export const partitioned = defineJob("reinterpret-partitioned", (env) => {
  const mapped = env
    .fromSequence(0, RECORDS - 1)
    .keyBy((n) => n % KEYS)
    .map((n) => ({ key: n % KEYS, value: n % 5 }));
  const keyed = reinterpretAsKeyedStream(mapped, (r) => r.key);
  keyed.process(sumWithSubtask()).uid("sum-process").sinkTo(collectSink("process"));
  keyed.sum("value").uid("sum-rolling").sinkTo(collectSink("rolling"));
});

/** A source's subtasks read ranges of numbers: not partitioned by the number as a key. */
export const notPartitioned = defineJob("reinterpret-not-partitioned", (env) => {
  reinterpretAsKeyedStream(env.fromSequence(0, RECORDS - 1).map((n) => ({ key: n, value: 1 })), (r) => r.key)
    .process(sumWithSubtask())
    .sinkTo(collectSink("out"));
});

/** The same, through the rolling reduce's own key path. */
export const notPartitionedRolling = defineJob("reinterpret-not-partitioned-rolling", (env) => {
  reinterpretAsKeyedStream(env.fromSequence(0, RECORDS - 1).map((n) => ({ key: n, value: 1 })), (r) => r.key)
    .sum("value")
    .sinkTo(collectSink("out"));
});
