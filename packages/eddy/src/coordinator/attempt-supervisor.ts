/**
 * A job run with checkpointing, as a supervisor of its execution attempts: each attempt runs the
 * job (inline or on worker threads) with a checkpoint runner beside it; when an attempt fails, the restart strategy decides whether and
 * when the next attempt starts, from the newest checkpoint whose files all verify
 * (docs/design/checkpoint-protocol.md, "Recovery").
 *
 * Invariants (exactly-once end to end):
 * - A snapshot the user named (`--from-checkpoint`, `--from-savepoint`) is restored exactly: a
 *   damaged or missing file fails its loading (which verifies every file it reads) and the run,
 *   never restarted from an older checkpoint in its place (checkpoint/recovery.ts).
 * - Recovery never restores a checkpoint older than the newest one whose completion sinks were
 *   notified of (their transactions are committed; replaying from before them duplicates output),
 *   unless `allowRecoveryBehindCommitted`; it fails the job instead, naming the damaged file.
 * - Recovery only restores checkpoints this run wrote (ids from its first attempt on), or the
 *   snapshot it started from: a previous process's checkpoints in the same directory belong to
 *   another lineage.
 */
import { basename, resolve as resolvePath } from "node:path";
import { describeCause, EddyError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import { failureFields } from "../core/user-frames.ts";
import type { CheckpointConfig } from "../checkpoint/checkpoint-config.ts";
import { STATS_HISTORY, type CheckpointCounts, type CheckpointStats, type TaskAck } from "../checkpoint/coordinator.ts";
import type { RestartStrategy, RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import { findLatestRestorable, readManifestIn, snapshotDirectoryReader, removeInterruptedSnapshotDirectories, type CheckpointStorage } from "../checkpoint/storage.ts";
import { normalizeStorageRef, openCheckpointStorage, type CheckpointStorageRef } from "../executor/checkpoint-storage-ref.ts";
import type { Plan } from "../graph/plan.ts";
import { CheckpointRestore } from "../executor/checkpoint-restore.ts";
import type { JobMasterGateway } from "../executor/gateway.ts";
import { manifestFiles } from "../checkpoint/format/manifest.ts";
import { manifestSharedFiles } from "../checkpoint/shared-state-registry.ts";
import { readManifest } from "../checkpoint/format/manifest-reader.ts";
import { CheckpointRunner, isSavepointNameOf, type CheckpointTargets } from "./checkpoint-runner.ts";
import type { InlineOptions } from "./inline-attempt.ts";
import type { ExecutionAttempt, JobResult } from "./execution-attempt.ts";
import type { JobRef } from "../executor/job-ref.ts";
import type { ExecutionMode } from "./control.ts";
import { taskIdOf } from "../executor/task-executor.ts";
import type { CheckpointLocation, RestoreSource } from "../executor/thread-protocol.ts";
import type { SavepointResult } from "./control.ts";
import type { SourceStop } from "../runtime/stream-task.ts";
import type { ThreadedCheckpointing } from "./threaded-attempt.ts";
import { RecoveryTracker, resolveRecovery, restartability } from "../checkpoint/recovery.ts";

/**
 * What an ended attempt's checkpoints add to the job's history and counts. A checkpoint still in
 * progress when its attempt ended is failed in both: Flink aborts the pending checkpoints at a
 * failover and counts them in numberOfFailedCheckpoints. `all`: the attempt's statistics with
 * its final checkpoint (the history lists it); `counted`: those the counts cover (not the final
 * checkpoint, which is never counted); `counts`: the attempt's own counts.
 */
export function endedAttemptCheckpoints(
  all: readonly CheckpointStats[],
  counted: readonly CheckpointStats[],
  counts: CheckpointCounts,
): { history: CheckpointStats[]; counts: CheckpointCounts } {
  const history = all.map((st) => (st.status === "in-progress" ? { ...st, status: "failed" as const, failureReason: "its attempt ended" } : st));
  const cutShort = counted.filter((st) => st.status === "in-progress").length;
  return { history, counts: { completed: counts.completed, failed: counts.failed + cutShort } };
}

export const DEFAULT_RESTART_STRATEGY: RestartStrategyConfig = { type: "fixed-delay", attempts: 3, delayMs: 1_000 };


export interface AttemptSupervisorOptions {
  readonly plan: Plan;
  readonly config: CheckpointConfig;
  /** Where this run writes its checkpoints. */
  readonly location: CheckpointLocation;
  /** Where savepoints go unless a request names another directory (resolved). */
  readonly savepointDir: string;
  /** The storage module (default: the local directory). */
  readonly storageRef: CheckpointStorageRef | undefined;
  readonly strategy: RestartStrategy;
  /** The savepoint or checkpoint to start from instead of empty state (restorePointOf). */
  readonly restore: RestoreSource | undefined;
  /** Drop restored state that no operator of the job takes back, instead of refusing to start. */
  readonly allowNonRestoredState: boolean;
  readonly logger: Logger;
  /** The job's module reference for worker threads; undefined: run inline. */
  readonly ref: Promise<JobRef | undefined>;
  readonly runInline: (checkpoints: InlineOptions["checkpoints"]) => ExecutionAttempt;
  readonly runThreaded: (ref: JobRef, checkpointing: ThreadedCheckpointing) => ExecutionAttempt;
  readonly isCancelled: () => boolean;
  /** Hears every failure that ended an attempt, and whether the job restarts after it. */
  readonly onFailure?: (e: unknown, restarting: boolean) => void;
}

export class AttemptSupervisor {
  readonly done: Promise<JobResult>;
  readonly mode: Promise<ExecutionMode>;
  /** Per restart, the checkpoint id it restored from (null: none was complete; started over). */
  readonly restoredFrom: (number | null)[] = [];
  readonly #o: AttemptSupervisorOptions;
  #storage!: CheckpointStorage;
  #runner: CheckpointRunner | undefined;
  /** Counts and the last completed checkpoint of the attempts before the current one. */
  #earlierCounts: CheckpointCounts = { completed: 0, failed: 0 };
  #earlierLastCompleted: CheckpointStats | undefined;
  /** Statistics of the attempts before the current one, oldest first; at most STATS_HISTORY. */
  #earlierStats: CheckpointStats[] = [];
  /** Between a failure the job restarts after and the start of the next attempt. */
  #restarting = false;
  /** Whether an attempt has deployed its tasks and not ended (savepoints can be taken). */
  #running = false;
  /** The highest checkpoint id any attempt issued: a later attempt never reuses one (see #attempt). */
  #lastIssuedId = 0;
  /** This run's first checkpoint id and newest committed one: where recovery may go (checkpoint/recovery.ts). */
  readonly #recovery: RecoveryTracker;

  constructor(options: AttemptSupervisorOptions) {
    this.#o = options;
    this.#recovery = new RecoveryTracker(options.config.allowRecoveryBehindCommitted);
    this.mode = options.ref.then((ref) => (ref === undefined ? "inline" : "threads"));
    this.mode.catch(() => undefined);
    this.done = this.#run();
  }

  /** Statistics of the checkpoints of the current attempt. */
  stats(): CheckpointStats[] {
    return this.#runner?.stats() ?? [];
  }

  /**
   * Statistics of the newest STATS_HISTORY checkpoints of every attempt so far, the final
   * checkpoint included, oldest first. A checkpoint still in progress when its attempt ended is
   * listed as failed.
   */
  history(): CheckpointStats[] {
    const all = [...this.#earlierStats, ...(this.#runner?.allStats() ?? [])];
    return all.length > STATS_HISTORY ? all.slice(-STATS_HISTORY) : all;
  }

  /** Whether the job is between a failure and the attempt that restarts it. */
  get restarting(): boolean {
    return this.#restarting;
  }

  /** Completed and failed checkpoints of every attempt so far (numberOfCompletedCheckpoints, …). */
  counts(): CheckpointCounts {
    const current = this.#runner?.counts() ?? { completed: 0, failed: 0 };
    return { completed: this.#earlierCounts.completed + current.completed, failed: this.#earlierCounts.failed + current.failed };
  }

  /** The newest completed checkpoint of any attempt (lastCheckpointDuration, lastCheckpointSize). */
  lastCompleted(): CheckpointStats | undefined {
    const stats = this.#runner?.stats() ?? [];
    for (let i = stats.length - 1; i >= 0; i--) if (stats[i]!.status === "completed") return stats[i];
    return this.#earlierLastCompleted;
  }

  /** A savepoint of the current attempt (see CheckpointRunner.triggerSavepoint). */
  savepoint(dir: string, stop?: SourceStop): Promise<SavepointResult> {
    const runner = this.#runner;
    if (runner === undefined || !this.#running) {
      return Promise.reject(new EddyError("JOB_NOT_RUNNING", `job '${this.#o.plan.jobName}' is not running (yet): no savepoint`));
    }
    return runner.triggerSavepoint(dir, stop);
  }

  async #run(): Promise<JobResult> {
    const { logger, plan, strategy } = this.#o;
    const ref = await this.#o.ref;
    this.#storage = await openCheckpointStorage(this.#o.storageRef, this.#o.location);
    await this.#removeInterruptedSavepoints();
    let restore = this.#o.restore;
    if (restore !== undefined) checkEveryStateRestored(restore, plan, this.#o.allowNonRestoredState, logger);
    // Until the job completes a checkpoint of its own, a restart goes back to where it started.
    const initial = restore;
    for (;;) {
      try {
        return await this.#attempt(ref, restore);
      } catch (e) {
        const worth = restartability({
          code: e instanceof EddyError ? e.code : undefined,
          domain: e instanceof EddyError ? e.domain : undefined,
          cancelled: this.#o.isCancelled(),
          // A damaged file of a named snapshot fails its loading, which names the file (issue 33).
          restoringNamedSnapshot: restore?.dir !== undefined,
        });
        // The message, the operator and subtask, the user's file:line:column and the stack, in
        // the one line that reports this failure (issue 32).
        const failure = failureFields(e);
        if (!worth.restartable) {
          // A cancellation is no failure to list.
          if (!(this.#o.isCancelled() || (e instanceof EddyError && e.code === "JOB_CANCELLED"))) this.#o.onFailure?.(e, false);
          if (worth.report) logger.error(`job failed; not restarting: ${worth.reason}`, { job: plan.jobName, ...failure });
          throw e;
        }
        const decision = strategy.onFailure(Date.now());
        this.#o.onFailure?.(e, decision.restart);
        if (!decision.restart) {
          logger.error("job failed; not restarting", { job: plan.jobName, reason: decision.reason, ...failure });
          throw e;
        }
        logger.debug("restarting after a delay", { job: plan.jobName, delayMs: decision.delayMs });
        this.#restarting = true;
        await new Promise((resolve) => setTimeout(resolve, decision.delayMs));
        try {
          restore = await this.#recoveryPoint(initial);
        } catch (noRecovery) {
          this.#restarting = false;
          this.#o.onFailure?.(noRecovery, false);
          throw noRecovery;
        }
        this.restoredFrom.push(restore?.manifest.checkpointId ?? null);
        // Once, as a warning with its cause: the job goes on (issue 32).
        const from =
          restore === undefined ? "the beginning (no checkpoint completed yet)"
          : restore.dir === undefined ? `checkpoint ${restore.manifest.checkpointId}`
          : `the ${restore.manifest.isSavepoint ? "savepoint" : "checkpoint"} it started from (${restore.dir})`;
        logger.warn(`a task failed; restarting from ${from}`, { job: plan.jobName, restart: this.restoredFrom.length, delayMs: decision.delayMs, ...failure });
      }
    }
  }

  /** One run of the job, with a checkpoint runner beside it. */
  async #attempt(ref: JobRef | undefined, restore: RestoreSource | undefined): Promise<JobResult> {
    const { plan, config, logger } = this.#o;
    // Ids are never reused within a run, as Flink's CheckpointIDCounter: a failed attempt can
    // leave work behind on an id it issued — a discard of an aborted checkpoint still running, an
    // inline task still persisting — and an id may have no directory yet when the next attempt
    // lists them. The listing covers ids of earlier processes (a resume after kill -9).
    const firstCheckpointId = Math.max(this.#lastIssuedId, ...(await this.#storage.listCheckpoints())) + 1;
    this.#recovery.attemptStarted(firstCheckpointId);
    let targets: CheckpointTargets | undefined;
    let fail: (e: EddyError) => void = () => {};
    const runner = new CheckpointRunner({
      config,
      storage: this.#storage,
      plan,
      jobId: this.#o.location.jobId,
      taskIds: plan.chains.flatMap((c) => Array.from({ length: c.parallelism }, (_, s) => taskIdOf(c, s))),
      firstCheckpointId,
      generation: this.restoredFrom.length,
      logger,
      targets: {
        trigger: (b, stop) => targets?.trigger(b, stop),
        resumeSources: () => targets?.resumeSources(),
        stop: () => targets?.stop(),
        notifyComplete: (id) => {
          // Counted before the tasks hear of it: a sink may commit as soon as they do.
          this.#recovery.completionNotified(id);
          targets?.notifyComplete(id);
        },
        abort: (id) => targets?.abort(id),
        finalCheckpoint: (b) => targets?.finalCheckpoint(b),
        snapshotEnumerators: (id) => targets?.snapshotEnumerators(id) ?? {},
        expedite: (work) => targets?.expedite?.(work) ?? work,
      },
      onFailJob: (e) => fail(e),
    });
    const earlier = this.#runner;
    if (earlier !== undefined) {
      this.#earlierLastCompleted = this.lastCompleted();
      const ended = endedAttemptCheckpoints(earlier.allStats(), earlier.stats(), earlier.counts());
      this.#earlierStats = [...this.#earlierStats, ...ended.history].slice(-STATS_HISTORY);
      this.#earlierCounts = { completed: this.#earlierCounts.completed + ended.counts.completed, failed: this.#earlierCounts.failed + ended.counts.failed };
    }
    this.#runner = runner;
    this.#restarting = false;
    const enumeratorState = restore === undefined ? undefined : (operatorId: string) => restore.manifest.enumerators[operatorId];
    // What tasks report about checkpoints (that part of the gateway), wherever they run.
    const reports: Pick<JobMasterGateway, "acknowledgeCheckpoint" | "declineCheckpoint" | "taskFinished"> = {
      acknowledgeCheckpoint: (taskId: string, id: number, ack: TaskAck) => runner.acknowledge(taskId, id, ack),
      declineCheckpoint: (taskId: string, id: number, reason: string) => runner.decline(taskId, id, reason),
      taskFinished: (taskId: string) => runner.taskFinished(taskId),
    };
    // The two modes differ in where restored state is loaded (here, or by each worker); from then
    // on an attempt sees one ExecutionAttempt.
    let execution: ExecutionAttempt;
    if (ref === undefined) {
      const dir = restore?.dir;
      const restored =
        restore === undefined
          ? undefined
          : await CheckpointRestore.load(dir === undefined ? this.#storage : snapshotDirectoryReader(dir), restore.manifest, plan, () => true);
      execution = this.#o.runInline({
        participation: {
          mode: config.mode,
          storage: this.#storage,
          restoreFor: (node, subtask) => restored?.restoreFor(node, subtask),
          allowNonRestoredState: this.#o.allowNonRestoredState,
          ...reports,
        },
        enumeratorState,
      });
    } else {
      execution = this.#o.runThreaded(ref, {
        workers: {
          mode: config.mode,
          storage: this.#o.location,
          storageRef: normalizeStorageRef(this.#o.storageRef),
          restore,
          allowNonRestoredState: this.#o.allowNonRestoredState,
        },
        ...reports,
        enumeratorState,
      });
    }
    const attempt = execution;
    fail = (e) => attempt.fail(e);
    targets = execution.checkpointTargets();
    if (this.#o.isCancelled()) execution.cancel();
    let ended = false;
    void execution.running.then(() => {
      // An attempt that failed while deploying has ended already: nothing to start.
      if (ended) return;
      this.#running = true;
      runner.start();
    });
    try {
      return await execution.done;
    } finally {
      ended = true;
      this.#running = false;
      runner.stop();
      this.#lastIssuedId = Math.max(this.#lastIssuedId, runner.lastCheckpointId);
    }
  }

  /**
   * Where the next attempt starts (checkpoint/recovery.ts): the newest checkpoint of this run that
   * verifies and is not older than the newest committed one; without one, the snapshot the run
   * started from (or nothing) while no commit was notified. Otherwise it fails
   * (RECOVERY_BEHIND_COMMITTED), or with `allowRecoveryBehindCommitted` goes back further and says
   * that output will repeat.
   */
  async #recoveryPoint(initial: RestoreSource | undefined): Promise<RestoreSource | undefined> {
    const { logger, plan } = this.#o;
    const skipped: string[] = [];
    const point = await resolveRecovery(this.#recovery.plan(), (atLeast) =>
      findLatestRestorable(this.#storage, {
        verifyFiles: (m) => manifestFiles(readManifest(m, "checkpoint manifest")),
        verifySharedFiles: (m) => manifestSharedFiles(readManifest(m, "checkpoint manifest")),
        atLeast,
        log: (message, incomplete) => {
          skipped.push(message);
          // A checkpoint the failure interrupted has no manifest: normal, not worth a warning.
          if (incomplete) logger.debug(message);
          else logger.warn(message);
        },
      }),
    );
    const committed = this.#recovery.committedId;
    const why = () =>
      `checkpoint ${committed}, whose output sinks have committed, cannot be restored` +
      (skipped.length > 0 ? ` (${skipped.join("; ")})` : " (it is gone)") +
      `: an older checkpoint would commit the output after it a second time`;
    if (point.kind === "refuse") {
      throw new EddyError(
        "RECOVERY_BEHIND_COMMITTED",
        `job '${plan.jobName}' cannot recover: ${why()}. Restore the damaged checkpoint, or set ` +
          `execution.checkpointing.recovery.allow-behind-committed=true to accept duplicated output`,
      );
    }
    if (point.behindCommitted) {
      logger.warn(`${why()}; going back further, as allowed (execution.checkpointing.recovery.allow-behind-committed): two-phase sinks will repeat output`, {
        job: plan.jobName,
      });
    }
    if (point.kind === "start") return initial;
    const found = point.checkpoint;
    return { manifest: readManifest(found.manifest, this.#storage.checkpointDir(found.checkpointId)), dir: undefined };
  }

  /**
   * A process killed while it wrote a savepoint leaves the savepoint's temporary directory behind
   * (writeSnapshotDirectory); this job's are removed when it starts, each logged. Only this job's:
   * another job may be writing a savepoint into the same directory now. Only in `savepointDir`:
   * a request may name another directory, but nothing remembers which. Not removing them is no
   * reason to fail the job, so a failure is logged.
   */
  async #removeInterruptedSavepoints(): Promise<void> {
    const { logger, plan, savepointDir, location } = this.#o;
    try {
      await removeInterruptedSnapshotDirectories(
        savepointDir,
        (name) => isSavepointNameOf(location.jobId, name),
        (path) => logger.info("removed the temporary directory of an interrupted savepoint", { job: plan.jobName, path }),
      );
    } catch (e) {
      logger.warn("could not remove the temporary directories of interrupted savepoints", { job: plan.jobName, dir: savepointDir, error: describeCause(e) });
    }
  }
}

/**
 * The snapshot a run starts from: a checkpoint directory (`<root>/<jobId>/chk-<n>`) or a
 * savepoint directory (any name: savepoints are relocatable). Its manifest is read and
 * validated now (the plan needs the max parallelism it records); its files are verified when
 * loaded.
 */
export function restorePointOf(from: { readonly checkpoint?: string | undefined; readonly savepoint?: string | undefined }): RestoreSource | undefined {
  if (from.checkpoint !== undefined && from.savepoint !== undefined) {
    throw new EddyError("INVALID_RESTORE", "give fromSavepoint or fromCheckpoint, not both");
  }
  if (from.checkpoint !== undefined) {
    const path = resolvePath(from.checkpoint);
    if (!/^chk-(0|[1-9][0-9]*)$/.test(basename(path))) {
      throw new EddyError("INVALID_CHECKPOINT_PATH", `'${from.checkpoint}' is not a checkpoint directory (expected <root>/<jobId>/chk-<n>)`);
    }
    return { manifest: readManifest(readManifestIn(path, `checkpoint '${path}'`), path), dir: path };
  }
  if (from.savepoint === undefined) return undefined;
  const path = resolvePath(from.savepoint);
  const manifest = readManifest(readManifestIn(path, `savepoint '${path}'`), path);
  if (!manifest.isSavepoint) {
    throw new EddyError("NOT_A_SAVEPOINT", `'${from.savepoint}' holds checkpoint ${manifest.checkpointId}, not a savepoint: restore it with --from-checkpoint`);
  }
  return { manifest, dir: path };
}

/**
 * Refuses to start when the snapshot has state for an operator (by uid) the job no longer has —
 * unless `allow`, which drops that state and says what was dropped.
 */
function checkEveryStateRestored(restore: RestoreSource, plan: Plan, allow: boolean, logger: Logger): void {
  const uids = new Set(plan.nodes.map((n) => n.operatorId));
  const orphans = new Map<string, string[]>();
  for (const task of restore.manifest.tasks) {
    for (const op of task.operators) {
      if (uids.has(op.operatorId)) continue;
      const states = [...(op.keyed?.states.map((s) => s.name) ?? []), ...op.operatorStates.map((s) => s.name)];
      if (op.keyed !== undefined && states.length === 0) states.push("timers");
      if (states.length === 0) continue;
      const list = orphans.get(op.operatorId) ?? [];
      for (const s of states) if (!list.includes(s)) list.push(s);
      orphans.set(op.operatorId, list);
    }
  }
  if (orphans.size === 0) return;
  const names = new Map(restore.manifest.tasks.flatMap((t) => t.operators.map((o) => [o.operatorId, o.operatorName] as const)));
  const what = [...orphans].map(([uid, states]) => `'${names.get(uid)}' (uid '${uid}': ${states.join(", ")})`).join("; ");
  const from = `${restore.manifest.isSavepoint ? "savepoint" : "checkpoint"} ${restore.manifest.checkpointId}`;
  if (!allow) {
    throw new EddyError(
      "NON_RESTORED_STATE",
      `${from} has state for operators the job no longer has: ${what}. Give the operators their old uid, or pass --allow-non-restored-state to drop that state`,
    );
  }
  logger.warn(`dropping state the job no longer has (allow-non-restored-state): ${what}`, { job: plan.jobName, from });
}
