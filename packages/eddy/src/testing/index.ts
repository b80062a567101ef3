/**
 * `eddy/testing`: run jobs in-process and test operators in isolation.
 * May import every layer; nothing imports it except tests.
 */
export { collectSink } from "./collect-sink.ts";
export { committingCollectSink, twoPhaseTestSink, type StagedTransaction } from "./committing-sink.ts";
export { runJob, type JobHandle } from "./run-job.ts";
export { OperatorTestHarness, TwoInputOperatorTestHarness, type HarnessEvent, type HarnessOptions } from "./operator-harness.ts";
export { readerOutputOf } from "../connector/source.ts";
export { sourceReaderContext } from "./source-reader-context.ts";
export type { SerializedOperatorSnapshot } from "../runtime/checkpointing.ts";
export { ManualClock } from "../core/clock.ts";
export type { ExecutionMode, RunOptions } from "../coordinator/local-job.ts";
export type { JobResult } from "../coordinator/inline-attempt.ts";
export type { JobMetricsSnapshot, OperatorMetricsSnapshot, TaskMetricsSnapshot } from "../coordinator/job-metrics.ts";
