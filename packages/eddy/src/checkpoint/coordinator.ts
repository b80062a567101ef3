/**
 * CheckpointCoordinator: one per job, on the coordinating thread. Decides when to trigger
 * checkpoints, collects the tasks' acknowledgements, has the manifest written, and tells tasks
 * when a checkpoint is complete (Flink's CheckpointCoordinator and CheckpointFailureManager). A
 * pure state machine: every input takes `now` and returns the commands the caller performs; it
 * holds no timers and does no I/O.
 *
 * Life of a checkpoint:  trigger ─▶ acking ─(all tasks acked)─▶ committing ─(manifestCommitted)─▶
 * completed. From acking or committing it may instead end as failed (timeout, decline, manifest
 * failure, the job failed) or subsumed (a newer one completed).
 * Every trigger ends in exactly one of completed / failed / subsumed; an ended one is forgotten,
 * so later messages about it are ignored (and counted in `ignoredMessages`).
 *
 * Rules:
 * - Periodic: a checkpoint is due `intervalMs` after the previous checkpoint trigger (the first
 *   `intervalMs` after construction; a missed period does not cause a burst), and is held back
 *   while `minPauseMs` has not passed since the last checkpoint or savepoint ended (completed or
 *   failed) and while `maxConcurrent` are in progress; it is triggered at the first `tick` after.
 * - Manual (`triggerNow`, checkpoints and savepoints): skips the interval and the pause — the user
 *   asked — but not `maxConcurrent`, which bounds storage and alignment load.
 * - Checkpoints go on after some tasks have finished (Flink's FLIP-147): a finished task still
 *   acknowledges every checkpoint triggered after it finished, with what it holds (the executor
 *   does that; it is not this machine's concern). Once every task has finished, no checkpoint
 *   is triggered any more (the job's final checkpoint is checkpoint-lifecycle.ts's).
 * - A checkpoint in progress `timeoutMs` after its trigger fails at the next `tick`.
 * - When checkpoint or savepoint m completes, older ones in progress are aborted as subsumed (not
 *   failures), so notify-complete is only ever issued for increasing ids.
 * - Failures (timeout, decline, manifest failure) of checkpoints count; a completed checkpoint
 *   resets the count; more than `tolerableFailures` consecutive ones fail the job. Savepoints
 *   neither count nor reset: a failed manual savepoint is the user's to see, not a job failure.
 * - Retention: completed checkpoints (not savepoints, which the user owns) beyond the newest
 *   `retained` are discarded, right after a newer one is notified complete.
 * - After fail-job the coordinator is stopped: everything in progress is aborted and no input
 *   produces commands any more.
 *
 * Commands are returned in the order they must be performed. `now` must not decrease; a smaller
 * value is treated as the largest seen (a clock step back does not re-open a timeout).
 *
 * Cost: O(in-progress checkpoints) per input; stats keep the last STATS_HISTORY checkpoints, each
 * with one entry per acknowledging subtask.
 */
import { EddyError } from "../core/errors.ts";
import type { CheckpointConfig } from "./checkpoint-config.ts";

/** What a task reports when its snapshot for a checkpoint is persisted. */
export interface TaskAck {
  /** Opaque handles to the persisted state; written into the manifest by the I/O layer. */
  readonly state: unknown;
  readonly syncMs: number;
  readonly asyncMs: number;
  readonly alignmentMs: number;
  readonly bytes: number;
  /** Bytes of each operator's state in the snapshot (by operator id; what `bytes` is made of, before the file's framing). */
  readonly operatorBytes?: Readonly<Record<string, number>>;
}

export type CoordinatorCommand =
  /** Inject barrier `checkpointId` at every source. */
  | { readonly type: "trigger"; readonly checkpointId: number; readonly timestampMs: number; readonly isSavepoint: boolean }
  /** Every task acknowledged: write the manifest, then call manifestCommitted or manifestFailed. */
  | {
      readonly type: "commit-manifest";
      readonly checkpointId: number;
      readonly isSavepoint: boolean;
      readonly acks: ReadonlyMap<string, TaskAck>;
    }
  /** The manifest is committed: tasks may act on completion (sinks commit). Ids increase. */
  | { readonly type: "notify-complete"; readonly checkpointId: number }
  /**
   * Tasks drop the checkpoint; the I/O layer deletes its directory, also if a manifest for it was
   * written meanwhile (after an ordering race, a late manifestCommitted is ignored).
   */
  | { readonly type: "abort"; readonly checkpointId: number; readonly reason: string }
  /** Delete a completed checkpoint that retention no longer keeps. */
  | { readonly type: "discard"; readonly checkpointId: number }
  /** Too many consecutive checkpoint failures: fail the job (the restart strategy decides next). */
  | { readonly type: "fail-job"; readonly reason: string; readonly error: EddyError };

export type CheckpointStatus = "in-progress" | "completed" | "failed" | "subsumed";

export interface CheckpointStats {
  readonly checkpointId: number;
  readonly isSavepoint: boolean;
  readonly triggerTimeMs: number;
  readonly status: CheckpointStatus;
  /** From trigger to the end; undefined while in progress. */
  readonly durationMs: number | undefined;
  readonly acknowledgedTasks: number;
  readonly totalTasks: number;
  /** Maxima over the acknowledgements so far. */
  readonly syncMs: number;
  readonly asyncMs: number;
  readonly alignmentMs: number;
  /** Sum over the acknowledgements so far. */
  readonly bytes: number;
  readonly failureReason: string | undefined;
  /** One per acknowledgement so far, in the order they came: what each subtask reported. */
  readonly subtasks: readonly SubtaskCheckpointStats[];
}

/** The statistics of `ack`, taken from `taskId` at `now`. */
export function subtaskStats(taskId: string, ack: TaskAck, now: number): SubtaskCheckpointStats {
  return { taskId, ackTimeMs: now, syncMs: ack.syncMs, asyncMs: ack.asyncMs, alignmentMs: ack.alignmentMs, bytes: ack.bytes, operatorBytes: ack.operatorBytes ?? {} };
}

/** What one subtask reported for a checkpoint (Flink's SubtaskCheckpointStatistics). */
export interface SubtaskCheckpointStats {
  /** `<chain index>.<subtask>` (taskIdOf). */
  readonly taskId: string;
  /** When the coordinator took the acknowledgement. */
  readonly ackTimeMs: number;
  readonly syncMs: number;
  readonly asyncMs: number;
  readonly alignmentMs: number;
  readonly bytes: number;
  /** Bytes of each operator's state (by operator id); empty when the task reported none. */
  readonly operatorBytes: Readonly<Record<string, number>>;
}

/** Checkpoints (savepoints included) that ended so far, however many `stats()` still lists. */
export interface CheckpointCounts {
  readonly completed: number;
  readonly failed: number;
}

export type TriggerOutcome =
  | { readonly ok: true; readonly checkpointId: number; readonly commands: CoordinatorCommand[] }
  | { readonly ok: false; readonly reason: string };

export interface CoordinatorOptions {
  /** Ids of every subtask that must acknowledge a checkpoint. Non-empty, unique. */
  readonly tasks: readonly string[];
  /** 1 for a fresh job, or the restored checkpoint's id + 1. */
  readonly firstCheckpointId: number;
  readonly now: number;
}

/** How many ended checkpoints `stats()` remembers. */
export const STATS_HISTORY = 100;

type MutableStats = { -readonly [K in keyof CheckpointStats]: CheckpointStats[K] } & { readonly subtasks: SubtaskCheckpointStats[] };

interface PendingCheckpoint {
  readonly id: number;
  readonly isSavepoint: boolean;
  readonly triggerTimeMs: number;
  readonly acks: Map<string, TaskAck>;
  /** Set once every task acked and commit-manifest was issued; no ack or decline is taken after. */
  committing: boolean;
  readonly stats: MutableStats;
}

export class CheckpointCoordinator {
  readonly config: CheckpointConfig;
  readonly #tasks: ReadonlySet<string>;
  #nextId: number;
  /** In progress, by id; insertion order is id order. */
  readonly #pending = new Map<number, PendingCheckpoint>();
  /** Trigger time of the last checkpoint (not savepoint); the periodic schedule counts from it. */
  #lastCheckpointTriggerMs: number;
  /** When the last checkpoint or savepoint completed or failed; undefined before any did. */
  #lastEndMs: number | undefined = undefined;
  #lastNow: number;
  #failures = 0;
  /** Completed checkpoints not yet discarded, ascending; at most `retained`. */
  readonly #retainedIds: number[] = [];
  #latestNotified = Number.NEGATIVE_INFINITY;
  readonly #finishedTasks = new Set<string>();
  #stopped = false;
  #ignored = 0;
  readonly #counts = { completed: 0, failed: 0 };
  /** Stats by id in trigger order: every one in progress and the last STATS_HISTORY ended ones. */
  readonly #history = new Map<number, MutableStats>();

  constructor(config: CheckpointConfig, options: CoordinatorOptions) {
    const tasks = new Set(options.tasks);
    if (tasks.size === 0 || tasks.size !== options.tasks.length) {
      throw new EddyError("INTERNAL", `the tasks to acknowledge must be non-empty and unique, got [${options.tasks.join(", ")}]`);
    }
    if (!Number.isInteger(options.firstCheckpointId) || options.firstCheckpointId < 1) {
      throw new EddyError("INTERNAL", `'firstCheckpointId' must be an integer >= 1, got ${options.firstCheckpointId}`);
    }
    this.config = config;
    this.#tasks = tasks;
    this.#nextId = options.firstCheckpointId;
    this.#lastCheckpointTriggerMs = options.now;
    this.#lastNow = options.now;
  }

  /** The newest completed checkpoint (not savepoint): what recovery restores. */
  get latestCompleted(): number | undefined {
    return this.#retainedIds.at(-1);
  }

  get inProgress(): number {
    return this.#pending.size;
  }

  get consecutiveFailures(): number {
    return this.#failures;
  }

  /** Acks, declines and manifest results for unknown, ended or already acknowledged checkpoints. */
  get ignoredMessages(): number {
    return this.#ignored;
  }

  /** True after fail-job: no input produces commands any more. */
  get isStopped(): boolean {
    return this.#stopped;
  }

  /** Times out what is overdue, then triggers a periodic checkpoint if one is due and allowed. */
  tick(now: number): CoordinatorCommand[] {
    now = this.#advance(now);
    const commands: CoordinatorCommand[] = [];
    for (const p of this.#pending.values()) {
      if (this.#stopped) break;
      if (now - p.triggerTimeMs >= this.config.timeoutMs) {
        this.#fail(p, `expired ${this.config.timeoutMs} ms after its trigger`, true, now, commands);
      }
    }
    if (this.#periodicDue(now) && this.#rejection() === undefined) this.#trigger(false, now, commands);
    return commands;
  }

  /** A manual checkpoint or savepoint, now, or the reason it cannot be taken. */
  triggerNow(now: number, options: { readonly isSavepoint: boolean }): TriggerOutcome {
    now = this.#advance(now);
    const reason = this.#rejection();
    if (reason !== undefined) return { ok: false, reason };
    const commands: CoordinatorCommand[] = [];
    const checkpointId = this.#trigger(options.isSavepoint, now, commands);
    return { ok: true, checkpointId, commands };
  }

  acknowledge(checkpointId: number, taskId: string, ack: TaskAck, now: number): CoordinatorCommand[] {
    now = this.#advance(now);
    const p = this.#pending.get(checkpointId);
    if (p === undefined || p.committing || !this.#tasks.has(taskId) || p.acks.has(taskId)) return this.#ignore();
    p.acks.set(taskId, ack);
    const s = p.stats;
    s.acknowledgedTasks = p.acks.size;
    s.syncMs = Math.max(s.syncMs, ack.syncMs);
    s.asyncMs = Math.max(s.asyncMs, ack.asyncMs);
    s.alignmentMs = Math.max(s.alignmentMs, ack.alignmentMs);
    s.bytes += ack.bytes;
    s.subtasks.push(subtaskStats(taskId, ack, now));
    if (p.acks.size < this.#tasks.size) return [];
    p.committing = true;
    return [{ type: "commit-manifest", checkpointId, isSavepoint: p.isSavepoint, acks: p.acks }];
  }

  decline(checkpointId: number, taskId: string, reason: string, now: number): CoordinatorCommand[] {
    now = this.#advance(now);
    const p = this.#pending.get(checkpointId);
    if (p === undefined || p.committing || !this.#tasks.has(taskId)) return this.#ignore();
    const commands: CoordinatorCommand[] = [];
    this.#fail(p, `declined by task '${taskId}': ${reason}`, true, now, commands);
    return commands;
  }

  manifestCommitted(checkpointId: number, now: number): CoordinatorCommand[] {
    now = this.#advance(now);
    const p = this.#pending.get(checkpointId);
    if (p === undefined || !p.committing) return this.#ignore();
    const commands: CoordinatorCommand[] = [];
    const kind = p.isSavepoint ? "savepoint" : "checkpoint";
    for (const older of this.#pending.values()) {
      if (older.id >= checkpointId) break;
      this.#end(older, "subsumed", `subsumed by ${kind} ${checkpointId}`, now);
      commands.push({ type: "abort", checkpointId: older.id, reason: `subsumed by ${kind} ${checkpointId}` });
    }
    this.#end(p, "completed", undefined, now);
    if (!(checkpointId > this.#latestNotified)) {
      throw new EddyError("CHECKPOINT_PROTOCOL_VIOLATION", `completion of ${checkpointId} after ${this.#latestNotified}`);
    }
    this.#latestNotified = checkpointId;
    commands.push({ type: "notify-complete", checkpointId });
    if (!p.isSavepoint) {
      this.#failures = 0;
      this.#retainedIds.push(checkpointId);
      while (this.#retainedIds.length > this.config.retained) commands.push({ type: "discard", checkpointId: this.#retainedIds.shift()! });
    }
    return commands;
  }

  manifestFailed(checkpointId: number, reason: string, now: number): CoordinatorCommand[] {
    now = this.#advance(now);
    const p = this.#pending.get(checkpointId);
    if (p === undefined || !p.committing) return this.#ignore();
    const commands: CoordinatorCommand[] = [];
    this.#fail(p, `manifest failed: ${reason}`, true, now, commands);
    return commands;
  }

  /**
   * `taskId` finished (end of input). It still acknowledges the checkpoints in progress and later
   * ones (see the file comment); once every task has finished, none is triggered any more.
   */
  taskFinished(taskId: string, now: number): CoordinatorCommand[] {
    this.#advance(now);
    if (this.#tasks.has(taskId)) this.#finishedTasks.add(taskId);
    return [];
  }

  /** Completed and failed checkpoints so far (subsumed ones are neither). */
  counts(): CheckpointCounts {
    return { ...this.#counts };
  }

  /** Every checkpoint in progress and the last STATS_HISTORY ended ones, in trigger order. */
  stats(): CheckpointStats[] {
    return [...this.#history.values()].map((s) => Object.freeze({ ...s, subtasks: Object.freeze([...s.subtasks]) }));
  }

  #advance(now: number): number {
    if (this.#stopped) return this.#lastNow;
    if (now > this.#lastNow) this.#lastNow = now;
    return this.#lastNow;
  }

  #periodicDue(now: number): boolean {
    return (
      now - this.#lastCheckpointTriggerMs >= this.config.intervalMs &&
      (this.#lastEndMs === undefined || now - this.#lastEndMs >= this.config.minPauseMs)
    );
  }

  /** Why no checkpoint may be triggered now, or undefined. */
  #rejection(): string | undefined {
    if (this.#stopped) return "the job has failed";
    if (this.#finishedTasks.size === this.#tasks.size) return "every task has finished";
    if (this.#pending.size >= this.config.maxConcurrent) {
      return `${this.#pending.size} checkpoint(s) in progress, the most allowed (maxConcurrent ${this.config.maxConcurrent})`;
    }
    return undefined;
  }

  #trigger(isSavepoint: boolean, now: number, commands: CoordinatorCommand[]): number {
    const id = this.#nextId++;
    const stats: MutableStats = {
      checkpointId: id,
      isSavepoint,
      triggerTimeMs: now,
      status: "in-progress",
      durationMs: undefined,
      acknowledgedTasks: 0,
      totalTasks: this.#tasks.size,
      syncMs: 0,
      asyncMs: 0,
      alignmentMs: 0,
      bytes: 0,
      failureReason: undefined,
      subtasks: [],
    };
    this.#pending.set(id, { id, isSavepoint, triggerTimeMs: now, acks: new Map(), committing: false, stats });
    this.#history.set(id, stats);
    if (!isSavepoint) this.#lastCheckpointTriggerMs = now;
    commands.push({ type: "trigger", checkpointId: id, timestampMs: now, isSavepoint });
    return id;
  }

  /** Fails `p`: abort it, and fail the job if `counts` and the failure budget is spent. */
  #fail(p: PendingCheckpoint, reason: string, counts: boolean, now: number, commands: CoordinatorCommand[]): void {
    this.#end(p, "failed", reason, now);
    commands.push({ type: "abort", checkpointId: p.id, reason });
    if (!counts || p.isSavepoint) return;
    this.#failures++;
    if (this.#failures <= this.config.tolerableFailures) return;
    const message = `${this.#failures} consecutive checkpoints failed (tolerable: ${this.config.tolerableFailures}); the last: ${reason}`;
    this.#stopped = true;
    for (const other of this.#pending.values()) {
      this.#end(other, "failed", "the job failed", now);
      commands.push({ type: "abort", checkpointId: other.id, reason: "the job failed" });
    }
    const error = new EddyError("TOO_MANY_CHECKPOINT_FAILURES", message);
    commands.push({ type: "fail-job", reason: message, error });
  }

  #end(p: PendingCheckpoint, status: Exclude<CheckpointStatus, "in-progress">, reason: string | undefined, now: number): void {
    this.#pending.delete(p.id);
    p.stats.status = status;
    p.stats.durationMs = now - p.triggerTimeMs;
    p.stats.failureReason = reason;
    if (status !== "subsumed") this.#lastEndMs = now;
    if (status === "completed") this.#counts.completed++;
    else if (status === "failed") this.#counts.failed++;
    let ended = this.#history.size - this.#pending.size;
    for (const [id, s] of this.#history) {
      if (ended <= STATS_HISTORY) break;
      if (s.status !== "in-progress") {
        this.#history.delete(id);
        ended--;
      }
    }
  }

  #ignore(): CoordinatorCommand[] {
    if (!this.#stopped) this.#ignored++;
    return [];
  }
}
