/**
 * The sink contract: one writer per sink subtask. Exactly-once sinks are two-phase (Flink's
 * TwoPhaseCommittingSink): at each checkpoint barrier the writer hands over what it wrote since
 * the previous barrier as committables (pre-commit); they are stored in the checkpoint, and the
 * committer commits them once the checkpoint is complete — again after a restore from that
 * checkpoint, so commits must be idempotent. At the end of input the writer's last committables
 * are committed when the job finishes.
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
  /**
   * Two-phase sinks: what was written since the previous call, as committables (e.g. a
   * transaction id, or the staged records). Called at every checkpoint barrier and once at the
   * end of input. Committables must be encodable by the value codec (plain data).
   */
  prepareCommit?(): readonly unknown[];
  close?(): void;
}

/** Commits the committables of complete checkpoints. */
export interface Committer<C> {
  /**
   * Makes `committables` visible. Called once a checkpoint that holds them is complete, and again
   * after a restore from it: committing the same committable twice must have no further effect.
   */
  commit(committables: readonly C[]): void;
}

export interface Sink<T> {
  createWriter(context: SinkContext): SinkWriter<T>;
  /** Two-phase sinks: the committer of one sink subtask (writer side: `prepareCommit`). */
  createCommitter?(context: SinkContext): Committer<unknown>;
}
