/**
 * One attempt at running a job's tasks, whatever runs them: every subtask on the calling thread
 * (InlineAttempt) or on worker threads (ThreadedAttempt). The job handle (local-job.ts) and the
 * supervisor that restarts failed attempts (attempt-supervisor.ts) use this interface only; which
 * kind runs is decided once, in startJob. Names: docs/design/architecture.md, "Names".
 */
import type { ThreadProfile } from "./thread-profile.ts";
import type { EddyError } from "../core/errors.ts";
import type { QueryableLocations } from "../queryable/queryable-serving.ts";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import type { CheckpointTargets } from "./checkpoint-runner.ts";
import type { TaskManagerGateway } from "../executor/gateway.ts";
import type { SourceCoordinators } from "./source-coordinators.ts";
import type { ExecutionMode } from "./control.ts";

export interface JobResult {
  readonly jobName: string;
  readonly durationMs: number;
  /**
   * Time from the moment every subtask was deployed and the sources started to the end: the
   * duration without starting worker threads (which import the job module). Equal to
   * durationMs inline.
   */
  readonly runningMs: number;
  /** Records read by source subtasks. */
  readonly sourceRecords: number;
  /** Per-subtask counters at the end of the job. */
  readonly metrics: readonly SubtaskMetrics[];
}

/** Call order: any of the methods at any time; `done` settles once. `cancel`, `stop` and `fail` may be called twice. */
export interface ExecutionAttempt {
  readonly mode: ExecutionMode;
  /** Settles when the job ends: its result, or the EddyError that ended it. */
  readonly done: Promise<JobResult>;
  /** Resolves once every task is deployed: checkpoints may be triggered from then on. */
  readonly running: Promise<void>;
  /** Where the job's queryable states are served. */
  readonly queryable: QueryableLocations;
  /** Records read by source subtasks so far. */
  readonly sourceRecords: number;
  /** The latest per-subtask counters. */
  metrics(): SubtaskMetrics[];
  /** Ends the job at once (JOB_CANCELLED). */
  cancel(): void;
  /** Ends the job once each task has acted on the commands sent before (stop-with-savepoint). */
  stop(): void;
  /** Fails the job from outside (e.g. too many failed checkpoints). */
  fail(error: EddyError): void;
  /** Where the checkpoint runner's commands go. */
  checkpointTargets(): CheckpointTargets;
  /** Threads only: a CPU profile of worker thread `thread` (0-based) for `seconds` (thread-profile.ts). */
  profileThread?(thread: number, seconds: number): Promise<ThreadProfile>;
  /** Inline only: resolves the next time every task waits for time or data (tests with a manual clock). */
  whenIdle?(): Promise<void>;
}

/**
 * Where the checkpoint runner's commands go, for either mode: each command is one gateway call
 * on every task manager of the job (written once: issue 24's "one gateway pair"); enumerators are
 * snapshotted here, on the coordinating thread, just before a barrier is injected.
 */
export function broadcastCheckpointTargets(options: {
  /** The job's task managers; none once the execution has ended (later commands are dropped). */
  readonly taskManagers: () => readonly TaskManagerGateway[];
  readonly sources: SourceCoordinators;
  /** Ends the job once every task manager acted on the calls before (the execution's `stop`). */
  readonly stop: () => void;
  readonly expedite?: <T>(work: Promise<T>) => Promise<T>;
}): CheckpointTargets {
  const { taskManagers, sources } = options;
  return {
    trigger: (barrier, stop) => {
      for (const tm of taskManagers()) tm.triggerCheckpoint(barrier, stop);
    },
    resumeSources: () => {
      for (const tm of taskManagers()) tm.resumeSources();
    },
    stop: () => options.stop(),
    notifyComplete: (checkpointId) => {
      for (const tm of taskManagers()) tm.notifyCheckpointComplete(checkpointId);
    },
    abort: (checkpointId) => {
      for (const tm of taskManagers()) tm.notifyCheckpointAborted(checkpointId);
    },
    finalCheckpoint: (barrier) => {
      for (const tm of taskManagers()) tm.triggerFinalCheckpoint(barrier);
    },
    snapshotEnumerators: (checkpointId) => sources.snapshot(checkpointId),
    ...(options.expedite === undefined ? {} : { expedite: options.expedite }),
  };
}
