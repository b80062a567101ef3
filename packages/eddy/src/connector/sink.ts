/**
 * The sink contract: one writer per sink subtask. Exactly-once sinks add a committer (a later
 * issue); this is the writer side every sink has.
 */
import type { JobServices } from "../core/job-services.ts";

export interface SinkContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  /** The operator name (for errors and metrics). */
  readonly operatorName: string;
  readonly job: JobServices;
}

/** Never called concurrently. Call order: write*, flush(true) at the end of input, close (may be called twice). */
export interface SinkWriter<T> {
  /** hot path. `timestamp` is undefined for records without one. */
  write(value: T, timestamp: number | undefined): void;
  /** Makes everything written so far durable/visible; `endOfInput` on the final flush. */
  flush?(endOfInput: boolean): void;
  close?(): void;
}

export interface Sink<T> {
  createWriter(context: SinkContext): SinkWriter<T>;
}
