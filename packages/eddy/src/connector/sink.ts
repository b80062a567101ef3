/**
 * The sink contract: one writer per sink subtask. Exactly-once sinks are two-phase (Flink's
 * TwoPhaseCommittingSink): at each checkpoint barrier the writer hands over what it wrote since
 * the previous barrier as committables (pre-commit); they are stored in the checkpoint, and the
 * committer commits them once the checkpoint is complete — again after a restore from that
 * checkpoint, so commits must be idempotent. At the end of input the writer's last committables
 * are committed when the job finishes.
 *
 * Asynchronous (docs/connectors/sinks.md): every Node client returns promises, and so may the
 * writer and the committer. The task loop never awaits: a write that returns a promise holds back
 * the task's input until it settles (backpressure, no unbounded buffering); a flush at the end of
 * input holds back the task's end; committables given as a promise hold back the checkpoint's
 * acknowledgement; a commit runs beside the task (it goes on reading) and is retried with backoff.
 * A rejection fails the task, and the job restarts per its strategy.
 */
import type { JobServices } from "../core/job-services.ts";

export interface SinkContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  /** The operator name (for errors and metrics). */
  readonly operatorName: string;
  readonly job: JobServices;
  /**
   * What writers of this sink recorded with `snapshotState` in the checkpoint the job restores
   * from, divided among the new subtasks (round-robin when the parallelism changed); undefined on
   * a fresh start.
   */
  readonly restoredState?: readonly unknown[] | undefined;
  /**
   * The id of the checkpoint the job restores from (Flink's InitContext.getRestoredCheckpointId),
   * the same for every subtask, also one that received no writer state at a rescale; undefined
   * on a fresh start. Two-phase sinks name what they open after a restore by it, so that the
   * names cannot collide with those the restored committables hold (e.g. Kafka transactional ids).
   */
  readonly restoredCheckpointId?: number | undefined;
  /**
   * A record the sink's service refused for its own values (a constraint violation, a value of
   * the wrong type), which no retry can fix: handed to the sink's error policy (`.onError` on
   * what `sinkTo` returns; docs/error-policy.md). Under `fail` (the default) it throws the error
   * that fails the task, and the writer rejects with it; under `skip` and `dead-letter` it
   * returns, the record is counted (and dead-lettered) on the task thread, and the writer goes on
   * without it. `value` is what to show of the record (e.g. the row as the sink would have
   * written it). May be called from any callback of the writer.
   */
  reportBadRecord(value: unknown, cause: unknown): void;
}

/**
 * Never called concurrently: a call is made only once the promise of a previous write or flush
 * has settled. Call order: write*, with prepareCommit and snapshotState at each checkpoint
 * barrier; flush(true) at the end of input; close (may be called twice).
 */
export interface SinkWriter<T> {
  /**
   * The hot path. `timestamp` is undefined for records without one. Return nothing when the writer
   * took the record and can take more; return a promise when it took the record but can take no
   * more until the promise resolves (its buffer is full, too many requests in flight): the task
   * reads no input until then. A rejection fails the task.
   */
  write(value: T, timestamp: number | undefined): void | PromiseLike<void>;
  /**
   * Makes everything written so far durable/visible; `endOfInput` on the final flush, which the
   * task waits for before it ends.
   */
  flush?(endOfInput: boolean): void | PromiseLike<void>;
  /**
   * Two-phase sinks: what was written since the previous call, as committables (e.g. a
   * transaction id, a file to rename, the staged records). Called at every checkpoint barrier and
   * once at the end of input, synchronously: what is written after the call belongs to the next
   * checkpoint. The committables may come later, as a promise (once the writes they cover are
   * durable); the checkpoint is acknowledged only after it resolves, and a rejection declines it.
   * Committables must be encodable by the value codec (plain data). `checkpointId` is the id of
   * the checkpoint whose barrier this is (undefined at the end of input of a job without
   * checkpointing); a write-ahead sink names its committables by it.
   */
  prepareCommit?(checkpointId?: number): readonly unknown[] | PromiseLike<readonly unknown[]>;
  /**
   * State the writer keeps across checkpoints (requests buffered or in flight, an in-progress file
   * and its length), called at every barrier after `prepareCommit`; a restored writer finds it in
   * `SinkContext.restoredState`. Plain data, as for committables.
   */
  snapshotState?(checkpointId: number): readonly unknown[] | PromiseLike<readonly unknown[]>;
  /**
   * Releases resources. The task does not wait for a promise it returns (a rejection is logged):
   * what must be durable is made so by flush or prepareCommit.
   */
  close?(): void | PromiseLike<void>;
}

/** Commits the committables of complete checkpoints. */
export interface Committer<C> {
  /**
   * Makes `committables` visible. Called once a checkpoint that holds them is complete, and again
   * after a restore from it: committing the same committable twice must have no further effect.
   * Calls do not overlap: the next waits for the promise of the previous one. A rejection is
   * retried (Sink.commitRetry); the committables stay pending in the checkpoints until a commit
   * succeeds.
   */
  commit(committables: readonly C[]): void | PromiseLike<void>;
  /**
   * Releases the committer's resources (its clients) when its task closes, after the writer's
   * close. The task does not wait for a promise it returns (a rejection is logged). A commit may
   * still be running when the task failed; it may then fail.
   */
  close?(): void | PromiseLike<void>;
}

/** How a failed commit is retried: `attempts` in all, waiting `initialBackoffMs`, doubling up to `maxBackoffMs`. */
export interface CommitRetry {
  readonly attempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
}

/** 5 attempts over about 1.5 s (100, 200, 400, 800 ms between them). */
export const DEFAULT_COMMIT_RETRY: CommitRetry = { attempts: 5, initialBackoffMs: 100, maxBackoffMs: 10_000 };

export interface Sink<T> {
  createWriter(context: SinkContext): SinkWriter<T>;
  /** Two-phase sinks: the committer of one sink subtask (writer side: `prepareCommit`). */
  createCommitter?(context: SinkContext): Committer<unknown>;
  /** How a failed commit is retried before the task fails (default DEFAULT_COMMIT_RETRY). */
  readonly commitRetry?: CommitRetry;
  /**
   * Two-phase sinks: the subtask that owns a committable (e.g. the writer subtask that made it).
   * Absent, committables restored at another parallelism are dealt round robin. Present, every
   * subtask's committer receives, after a restore, exactly the restored committables whose owner
   * modulo the parallelism is its index, in checkpoint order: all of one owner's committables go
   * to one committer (a write-ahead sink must write one owner's committables in order).
   */
  readonly committableOwner?: (committable: unknown) => number;
}
