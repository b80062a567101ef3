/**
 * A job run with checkpointing: each attempt runs the job (inline or on worker threads) with a
 * checkpoint runner beside it; when an attempt fails, the restart strategy decides whether and
 * when the next attempt starts, from the newest checkpoint whose files all verify (DESIGN §7).
 */
import { basename, dirname, resolve as resolvePath } from "node:path";
import { EddyError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { CheckpointConfig } from "../checkpoint/checkpoint-config.ts";
import type { CheckpointStats, TaskAck } from "../checkpoint/coordinator.ts";
import type { RestartStrategy, RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import { findLatestRestorable, LocalCheckpointStorage, type CheckpointStorage } from "../checkpoint/storage.ts";
import { normalizeStorageRef, openCheckpointStorage, type CheckpointStorageRef } from "./checkpoint-storage-ref.ts";
import type { Plan } from "../graph/plan.ts";
import { asManifest, CheckpointRestore, manifestFiles, type CheckpointManifest } from "./checkpoint-restore.ts";
import { CheckpointRunner, type CheckpointTargets } from "./checkpoint-runner.ts";
import type { InlineExecution, InlineOptions, JobResult } from "./inline-executor.ts";
import type { JobRef } from "./job-ref.ts";
import type { ExecutionMode } from "./local-job.ts";
import { taskIdOf } from "./task-executor.ts";
import type { CheckpointLocation } from "./thread-protocol.ts";
import type { ThreadedCheckpointing, ThreadedExecution } from "./threaded-execution.ts";

export const DEFAULT_RESTART_STRATEGY: RestartStrategyConfig = { type: "fixed-delay", attempts: 3, delayMs: 1_000 };

/** A complete checkpoint to restore: where it is and its manifest. */
interface RestorePoint {
  readonly location: CheckpointLocation;
  readonly manifest: CheckpointManifest;
  /** In this job's own storage (else a local directory given by --from-checkpoint). */
  readonly inJobStorage: boolean;
}

export interface RecoveringJobOptions {
  readonly plan: Plan;
  readonly config: CheckpointConfig;
  /** Where this run writes its checkpoints. */
  readonly location: CheckpointLocation;
  /** The storage module (default: the local directory). */
  readonly storageRef: CheckpointStorageRef | undefined;
  readonly strategy: RestartStrategy;
  /** A `chk-<n>` directory to start from instead of empty state. */
  readonly fromCheckpoint: string | undefined;
  readonly logger: Logger;
  /** The job's module reference for worker threads; undefined: run inline. */
  readonly ref: Promise<JobRef | undefined>;
  readonly runInline: (checkpoints: InlineOptions["checkpoints"]) => InlineExecution;
  readonly runThreaded: (ref: JobRef, checkpointing: ThreadedCheckpointing) => ThreadedExecution;
  readonly isCancelled: () => boolean;
}

export class RecoveringJob {
  readonly done: Promise<JobResult>;
  readonly mode: Promise<ExecutionMode>;
  /** Per restart, the checkpoint id it restored from (null: none was complete; started over). */
  readonly restoredFrom: (number | null)[] = [];
  readonly #o: RecoveringJobOptions;
  #storage!: CheckpointStorage;
  #runner: CheckpointRunner | undefined;

  constructor(options: RecoveringJobOptions) {
    this.#o = options;
    this.mode = options.ref.then((ref) => (ref === undefined ? "inline" : "threads"));
    this.mode.catch(() => undefined);
    this.done = this.#run();
  }

  /** Statistics of the checkpoints of the current attempt. */
  stats(): CheckpointStats[] {
    return this.#runner?.stats() ?? [];
  }

  async #run(): Promise<JobResult> {
    const { logger, plan, strategy } = this.#o;
    const ref = await this.#o.ref;
    this.#storage = await openCheckpointStorage(this.#o.storageRef, this.#o.location);
    let restore = this.#o.fromCheckpoint === undefined ? undefined : await restorePointOf(this.#o.fromCheckpoint);
    for (;;) {
      try {
        return await this.#attempt(ref, restore);
      } catch (e) {
        if (this.#o.isCancelled() || (e instanceof EddyError && (e.code === "JOB_CANCELLED" || e.domain === "config"))) throw e;
        const decision = strategy.onFailure(Date.now());
        if (!decision.restart) {
          logger.error("job failed; not restarting", { job: plan.jobName, reason: decision.reason });
          throw e;
        }
        logger.warn("job failed; restarting from the latest checkpoint", {
          job: plan.jobName,
          error: e instanceof Error ? e.message : String(e),
          delayMs: decision.delayMs,
          restart: this.restoredFrom.length + 1,
        });
        await new Promise((resolve) => setTimeout(resolve, decision.delayMs));
        restore = await this.#latest();
        this.restoredFrom.push(restore?.manifest.checkpointId ?? null);
        if (restore === undefined) logger.warn("no complete checkpoint yet; restarting from the beginning", { job: plan.jobName });
        else logger.info("restoring", { job: plan.jobName, checkpoint: restore.manifest.checkpointId });
      }
    }
  }

  /** One run of the job, with a checkpoint runner beside it. */
  async #attempt(ref: JobRef | undefined, restore: RestorePoint | undefined): Promise<JobResult> {
    const { plan, config, logger } = this.#o;
    const firstCheckpointId = Math.max(0, ...(await this.#storage.listCheckpoints())) + 1;
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
        trigger: (b) => targets?.trigger(b),
        notifyComplete: (id) => targets?.notifyComplete(id),
        abort: (id) => targets?.abort(id),
        finalCheckpoint: (b) => targets?.finalCheckpoint(b),
        snapshotEnumerators: (id) => targets?.snapshotEnumerators(id) ?? {},
        expedite: (work) => targets?.expedite?.(work) ?? work,
      },
      onFailJob: (e) => fail(e),
    });
    this.#runner = runner;
    const enumeratorState = restore === undefined ? undefined : (operatorId: string) => restore.manifest.enumerators[operatorId];
    // What tasks report, wherever they run.
    const reports = {
      acknowledge: (taskId: string, id: number, ack: TaskAck) => runner.acknowledge(taskId, id, ack),
      decline: (taskId: string, id: number, reason: string) => runner.decline(taskId, id, reason),
      finished: (taskId: string) => runner.taskFinished(taskId),
    };
    let execution: InlineExecution | ThreadedExecution;
    let running: Promise<void>;
    if (ref === undefined) {
      const restored =
        restore === undefined
          ? undefined
          : await CheckpointRestore.load(restore.inJobStorage ? this.#storage : new LocalCheckpointStorage(restore.location), restore.manifest, plan, () => true);
      const inline = this.#o.runInline({
        participation: {
          mode: config.mode,
          storage: this.#storage,
          restoreFor: (node, subtask) => restored?.restoreFor(node, subtask),
          ...reports,
        },
        enumeratorState,
      });
      execution = inline;
      running = Promise.resolve();
      fail = (e) => inline.fail(e);
    } else {
      const threaded = this.#o.runThreaded(ref, {
        workers: { mode: config.mode, storage: this.#o.location, storageRef: normalizeStorageRef(this.#o.storageRef), restore },
        ...reports,
        enumeratorState,
      });
      execution = threaded;
      running = threaded.running;
      fail = (e) => threaded.fail(e);
    }
    targets = execution.checkpointTargets();
    if (this.#o.isCancelled()) execution.cancel();
    void running.then(() => runner.start());
    try {
      return await execution.done;
    } finally {
      runner.stop();
    }
  }

  async #latest(): Promise<RestorePoint | undefined> {
    const found = await findLatestRestorable(this.#storage, {
      verifyFiles: (m) => manifestFiles(asManifest(m, "checkpoint manifest")),
      log: (message) => this.#o.logger.warn(message),
    });
    if (found === undefined) return undefined;
    return { location: this.#o.location, manifest: asManifest(found.manifest, this.#storage.checkpointDir(found.checkpointId)), inJobStorage: true };
  }
}

/** The checkpoint in directory `dir` (`<root>/<jobId>/chk-<n>`); its files are verified when loaded. */
async function restorePointOf(dir: string): Promise<RestorePoint> {
  const path = resolvePath(dir);
  const match = /^chk-(0|[1-9][0-9]*)$/.exec(basename(path));
  if (match === null) {
    throw new EddyError("INVALID_CHECKPOINT_PATH", `'${dir}' is not a checkpoint directory (expected <root>/<jobId>/chk-<n>)`, { domain: "config" });
  }
  const jobDir = dirname(path);
  const location = { rootDir: dirname(jobDir), jobId: basename(jobDir) };
  const manifest = asManifest(await new LocalCheckpointStorage(location).readManifest(Number(match[1])), path);
  return { location, manifest, inJobStorage: false };
}
