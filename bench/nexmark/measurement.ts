/** One query measured once (bench/nexmark-one.ts), as it travels to the driver in one JSON line. */
import type { OutputFold } from "../output-fold.ts";
import type { OutputComparison } from "./queries.ts";

export interface Measurement {
  readonly query: string;
  readonly events: number;
  readonly parallelism: number;
  readonly mode: "inline" | "threads";
  /** JobResult.durationMs: the whole job, worker start-up included. */
  readonly durationMs: number;
  /** JobResult.runningMs: from the moment every subtask was deployed. */
  readonly runningMs: number;
  /** User + system CPU of the whole process (all threads) from runJob to the job's end. */
  readonly cpuMs: number;
  /** The same over the same job with no events (run first): the start-up cost inside `cpuMs`. */
  readonly startupCpuMs: number;
  /** Peak resident set of this process after the job (before the loop runs): the job's peak. */
  readonly peakRssMb: number;
  /** Checkpoints the job completed (with --checkpoint-interval; 0 without). */
  readonly checkpoints: number;
  /** Per completed checkpoint: trigger to completion, the task thread's part (sync) and the writing (async), both maxima over subtasks, and MiB written. */
  readonly checkpointCosts?: readonly { readonly ms: number | undefined; readonly syncMs: number; readonly asyncMs: number; readonly mb: number }[];
  readonly eddy: OutputFold;
  /** What of `eddy` and `loop.fold` is to be compared at this parallelism. */
  readonly comparison: OutputComparison;
  /** Undefined when the query has no loop yet (or --no-loop). */
  readonly loop: { readonly ms: number; readonly fold: OutputFold } | undefined;
}
