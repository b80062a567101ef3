/**
 * What a running job offers to whoever controls it: the job handle in TypeScript, and the local
 * control API that `eddy list / savepoint / stop / cancel` talk to (control-server.ts).
 */

import type { CheckpointCounts, CheckpointStats } from "../checkpoint/coordinator.ts";
import type { Plan } from "../graph/plan.ts";
import type { JobException } from "./exception-history.ts";
import type { JobMetricsSnapshot } from "./job-metrics.ts";
import type { ThreadProfile } from "./thread-profile.ts";

/** Where a job's tasks run: on the calling thread, or on worker threads. */
export type ExecutionMode = "inline" | "threads";

/** Where a job is in its life. */
export type JobStatus = "running" | "stopping" | "finished" | "stopped" | "failed" | "cancelled";

/** A savepoint written by the job. */
export interface SavepointResult {
  /** The savepoint's directory (absolute); self-contained and relocatable. */
  readonly path: string;
  /** The checkpoint id the savepoint took in the job's id sequence. */
  readonly checkpointId: number;
  /** Bytes of every file of the savepoint. */
  readonly bytes: number;
}

export interface SavepointOptions {
  /** Root under which the savepoint directory is created (default: the job's `state.savepoints.dir`). */
  readonly dir?: string;
}

export interface StopOptions extends SavepointOptions {
  /** Take a final savepoint before stopping (the state then resumes with `--from-savepoint`). */
  readonly savepoint: boolean;
  /** First advance event time to the end, so every window and event-time timer fires. */
  readonly drain?: boolean;
}

/** The operations of the control API, implemented by a running job. */
export interface ControlledJob {
  /** The job's id (its checkpoint directory name; unique among running jobs of a machine). */
  readonly id: string;
  readonly name: string;
  readonly startedAtMs: number;
  status(): JobStatus;
  /** Takes a savepoint while the job goes on; resolves when its manifest is written. */
  savepoint(options?: SavepointOptions): Promise<SavepointResult>;
  /**
   * Stops the job: with `savepoint`, sources stop after the savepoint barrier, the savepoint is
   * completed, sinks commit it, and the job ends as "stopped". Resolves with the savepoint.
   */
  stop(options: StopOptions): Promise<SavepointResult | undefined>;
  /** Ends the job at once, without a savepoint. */
  cancel(): void;
  /** The job's metrics (coordinator/job-metrics.ts), for `GET /metrics`; absent: that endpoint answers 404. */
  metricsSnapshot?(): JobMetricsSnapshot;
}

/** Where a job is in its life, as the REST API says it: a running job between attempts is "restarting". */
export type JobState = JobStatus | "restarting";

/**
 * What a job shows to the read endpoints of the REST API (control/rest-api.ts), beyond
 * ControlledJob: its plan, metrics, checkpoint history, failures and configuration. Every method
 * answers from memory the coordinator keeps anyway (bounded), never by asking the tasks.
 */
export interface ObservedJob extends ControlledJob {
  readonly plan: Plan;
  state(): JobState;
  readonly restarts: number;
  metricsSnapshot(): JobMetricsSnapshot;
  /** Undefined without checkpointing. */
  checkpointCounts(): CheckpointCounts | undefined;
  /** The newest checkpoints of every attempt (at most STATS_HISTORY), oldest first. */
  checkpointHistory(): CheckpointStats[];
  /** Failures that ended an attempt, newest first (at most MAX_EXCEPTIONS), and how many there were. */
  exceptions(): { readonly total: number; readonly newestFirst: readonly JobException[] };
  /** The effective configuration keys and values (effective-config.ts). */
  configuration(): Readonly<Record<string, string>>;
  /** When the job ended (wall-clock ms); undefined while it runs. */
  readonly endedAtMs: number | undefined;
  /** A CPU profile of worker thread `thread` for `seconds` (1..MAX_PROFILE_SECONDS), one at a time; PROFILE_NOT_AVAILABLE inline. */
  profileCpu?(thread: number, seconds: number): Promise<ThreadProfile>;
}

export function isObservedJob(job: ControlledJob): job is ObservedJob {
  const o = job as Partial<ObservedJob>;
  return o.plan !== undefined && typeof o.state === "function" && typeof o.checkpointHistory === "function" && typeof o.exceptions === "function";
}
