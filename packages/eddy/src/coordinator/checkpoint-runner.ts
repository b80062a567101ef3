/**
 * The I/O around the pure checkpoint lifecycle (checkpoint/checkpoint-lifecycle.ts, which owns the
 * coordinator of checkpoint/coordinator.ts): a timer ticks it, its commands reach the tasks
 * (trigger, notify, abort, final checkpoint, resume, stop), the storage (manifest, savepoint
 * directory, discard, retention) and the callers of triggerSavepoint, and what comes back — the
 * tasks' acknowledgements, a written manifest or savepoint, a command that threw — goes into it
 * as an input. One per job run, on the coordinating thread.
 */
import type { CheckpointBarrier } from "../core/elements.ts";
import { describeCause, EddyError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { CheckpointCounts, CheckpointStats, TaskAck } from "../checkpoint/coordinator.ts";
import { CheckpointLifecycle, type LifecycleCommand } from "../checkpoint/checkpoint-lifecycle.ts";
import type { CheckpointConfig } from "../checkpoint/checkpoint-config.ts";
import { randomBytes } from "node:crypto";
import { retain, writeSnapshotDirectory, type CheckpointStorage } from "../checkpoint/storage.ts";
import { SharedStateRetention } from "../checkpoint/shared-state-registry.ts";
import type { Plan } from "../graph/plan.ts";
import { MANIFEST_FORMAT, MANIFEST_VERSION, type CheckpointManifest, type ManifestOperator } from "../checkpoint/format/manifest.ts";
import type { TaskSnapshotHandle } from "../checkpoint/format/task-snapshot.ts";
import type { SourceStop } from "../runtime/stream-task.ts";
import type { SavepointResult } from "./control.ts";

/** Where the runner's commands go: the executors running the job's tasks. */
export interface CheckpointTargets {
  /**
   * Injects `barrier` at every source task (after the enumerators were snapshotted); with
   * `stop`, sources read nothing after it (stop with a savepoint).
   */
  trigger(barrier: CheckpointBarrier, stop?: SourceStop): void;
  /** A stop-with-savepoint failed: sources read again. */
  resumeSources(): void;
  /** The job stopped with a savepoint: every executor ends once the messages sent before are acted on. */
  stop(): void;
  notifyComplete(checkpointId: number): void;
  abort(checkpointId: number): void;
  /** Every task has finished: take the final checkpoint (each task snapshots and acknowledges). */
  finalCheckpoint(barrier: CheckpointBarrier): void;
  /** Split enumerator state per source operator id, taken just before a trigger. */
  snapshotEnumerators(checkpointId: number): Record<string, unknown>;
  /** Speeds up the runner's own I/O when it shares a thread with tasks (inline mode). */
  expedite?<T>(work: Promise<T>): Promise<T>;
}

export interface CheckpointRunnerOptions {
  readonly config: CheckpointConfig;
  readonly storage: CheckpointStorage;
  readonly plan: Plan;
  readonly jobId: string;
  /** Every task that must acknowledge (taskIdOf). */
  readonly taskIds: readonly string[];
  readonly firstCheckpointId: number;
  /** The run attempt (0, then +1 per restart), recorded in every manifest. */
  readonly generation: number;
  readonly logger: Logger;
  readonly targets: CheckpointTargets;
  /**
   * The checkpoints cannot go on (too many failed in a row, the final checkpoint or a stop with
   * drain failed, the tasks could not be told of a completion): the job fails with this error.
   */
  readonly onFailJob: (error: EddyError) => void;
}

/** Where an outstanding savepoint goes, and who waits for it (the lifecycle keeps the rest). */
interface SavepointRequest {
  /** Directory the savepoint directory is created in. */
  readonly dir: string;
  readonly resolve: (result: SavepointResult) => void;
  readonly reject: (error: EddyError) => void;
}

/** The directory name of savepoint `checkpointId` of job `jobId`: unique, and says whose it is. */
function savepointName(jobId: string, checkpointId: number): string {
  return `${savepointNamePrefix(jobId)}${checkpointId}-${randomBytes(3).toString("hex")}`;
}

/** Job ids are up to 128 characters; names keep the first 60. */
const savepointNamePrefix = (jobId: string): string => `savepoint-${jobId.slice(0, 60)}-`;

/**
 * Whether `name` is a name `savepointName` gives job `jobId`, whatever its checkpoint id and
 * random part. Another job's never is (within the 60 characters kept): what follows the prefix is
 * `<id>-<6 hex>`, with one dash, and the id of a job whose names share the prefix adds more.
 */
export function isSavepointNameOf(jobId: string, name: string): boolean {
  const prefix = savepointNamePrefix(jobId);
  return name.startsWith(prefix) && /^(0|[1-9][0-9]*)-[0-9a-f]{6}$/.test(name.slice(prefix.length));
}

export class CheckpointRunner {
  readonly #o: CheckpointRunnerOptions;
  readonly #lifecycle: CheckpointLifecycle<SavepointResult>;
  /** Split enumerator state and trigger time per checkpoint in progress, for its manifest. */
  readonly #enumerators = new Map<number, Record<string, unknown>>();
  readonly #triggeredAt = new Map<number, number>();
  readonly #savepoints = new Map<number, SavepointRequest>();
  /** Reference counts of the shared files of incremental checkpoints, and the retention that deletes them. */
  readonly #shared: SharedStateRetention;
  /** Manifests committed and not yet retained around (the retention registers their shared files). */
  readonly #committed = new Map<number, CheckpointManifest>();
  #nextRequestId = 1;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: CheckpointRunnerOptions) {
    this.#o = options;
    this.#lifecycle = new CheckpointLifecycle(options.config, {
      jobName: options.plan.jobName,
      tasks: options.taskIds,
      firstCheckpointId: options.firstCheckpointId,
      now: Date.now(),
    });
    this.#shared = new SharedStateRetention(options.storage, {
      onDeleteFailed: (name, e) => options.logger.warn("could not delete a shared checkpoint file", { file: name, error: describeCause(e) }),
    });
  }

  /** The shared files' reference counts (tests). */
  get sharedState(): SharedStateRetention {
    return this.#shared;
  }

  start(): void {
    if (this.#lifecycle.phase === "stopped") return;
    const period = Math.max(5, Math.min(100, Math.floor(this.#o.config.intervalMs / 4)));
    this.#timer = setInterval(() => this.#run(this.#lifecycle.tick(Date.now())), period);
    this.#timer.unref();
  }

  /** Stops ticking; outstanding savepoints are rejected, later acknowledgements ignored. Idempotent. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#run(this.#lifecycle.stop());
  }

  /**
   * Takes a savepoint into a new directory under `dir` (always aligned; the barrier is the
   * checkpoint barrier with `isSavepoint`: docs/design/savepoints.md, "How a savepoint is taken").
   * Waits while other checkpoints occupy every slot (maxConcurrent). With `stop`, sources read
   * nothing after the barrier, and when the savepoint is complete (and sinks committed it) the job
   * ends.
   */
  triggerSavepoint(dir: string, stop?: SourceStop): Promise<SavepointResult> {
    return new Promise((resolve, reject) => {
      const requestId = this.#nextRequestId++;
      this.#savepoints.set(requestId, { dir, resolve, reject });
      this.#run(this.#lifecycle.requestSavepoint(requestId, { stop }, Date.now()));
    });
  }

  acknowledge(taskId: string, checkpointId: number, ack: TaskAck): void {
    this.#run(this.#lifecycle.acknowledge(checkpointId, taskId, ack, Date.now()));
  }

  decline(taskId: string, checkpointId: number, reason: string): void {
    this.#run(this.#lifecycle.decline(checkpointId, taskId, reason, Date.now()));
  }

  taskFinished(taskId: string): void {
    this.#run(this.#lifecycle.taskFinished(taskId, Date.now()));
  }

  counts(): CheckpointCounts {
    return this.#lifecycle.counts();
  }

  stats(): CheckpointStats[] {
    return this.#lifecycle.stats();
  }

  /** stats() and the final checkpoint's (CheckpointLifecycle.allStats). */
  allStats(): CheckpointStats[] {
    return this.#lifecycle.allStats();
  }

  /** The highest checkpoint id this runner issued (a trigger, a savepoint or the final one). */
  get lastCheckpointId(): number {
    return this.#lifecycle.lastCheckpointId;
  }

  /** Performs `commands` in order; one that throws goes back into the lifecycle, which fails what it was for. */
  #run(commands: readonly LifecycleCommand<SavepointResult>[]): void {
    for (const command of commands) {
      try {
        this.#execute(command);
      } catch (e) {
        const cause = describeCause(e);
        this.#o.logger.error("checkpoint command failed", { command: command.type, error: cause });
        this.#run(this.#lifecycle.commandFailed(command, cause, Date.now()));
      }
    }
  }

  #execute(command: LifecycleCommand<SavepointResult>): void {
    const { logger, storage, targets } = this.#o;
    switch (command.type) {
      case "trigger":
      case "trigger-final": {
        const { checkpointId, timestampMs } = command;
        this.#enumerators.set(checkpointId, targets.snapshotEnumerators(checkpointId));
        this.#triggeredAt.set(checkpointId, timestampMs);
        if (command.type === "trigger-final") targets.finalCheckpoint({ kind: "barrier", checkpointId, timestampMs, isSavepoint: false });
        else targets.trigger({ kind: "barrier", checkpointId, timestampMs, isSavepoint: command.isSavepoint }, command.stop);
        return;
      }
      case "commit-manifest":
        return this.#commit(command.checkpointId, command.acks, command.isFinal);
      case "write-savepoint":
        return this.#writeSavepoint(command.checkpointId, command.requestId, command.acks);
      case "notify-complete":
        this.#forget(command.checkpointId);
        targets.notifyComplete(command.checkpointId);
        return;
      case "retain": {
        const manifest = this.#committed.get(command.checkpointId);
        this.#committed.delete(command.checkpointId);
        const retention = manifest === undefined ? retain(storage, command.checkpointId, this.#o.config.retained) : this.#shared.retain(command.checkpointId, manifest, this.#o.config.retained);
        retention.catch((e: unknown) => logger.warn("could not delete old checkpoints", { error: describeCause(e) }));
        return;
      }
      case "abort":
        this.#forget(command.checkpointId);
        logger.warn("checkpoint aborted", { job: this.#o.plan.jobName, checkpoint: command.checkpointId, reason: command.reason });
        targets.abort(command.checkpointId);
        storage.discard(command.checkpointId).catch((e: unknown) => logger.warn("could not delete an aborted checkpoint", { error: describeCause(e) }));
        return;
      case "discard":
        this.#committed.delete(command.checkpointId);
        storage
          .discard(command.checkpointId)
          .then(() => this.#shared.forget(command.checkpointId))
          .catch((e: unknown) => logger.warn("could not delete an old checkpoint", { error: describeCause(e) }));
        return;
      case "resume-sources":
        targets.resumeSources();
        return;
      case "stop-job":
        targets.stop();
        return;
      case "fail-job":
        this.#o.onFailJob(command.error);
        return;
      case "resolve-savepoint": {
        this.#forget(command.checkpointId);
        const request = this.#savepoints.get(command.requestId);
        this.#savepoints.delete(command.requestId);
        request?.resolve(command.result);
        return;
      }
      case "reject-savepoint": {
        const request = this.#savepoints.get(command.requestId);
        this.#savepoints.delete(command.requestId);
        request?.reject(command.error);
        return;
      }
    }
  }

  /** Writes the manifest of checkpoint `id` (or of the final one); then the lifecycle hears of it. */
  #commit(id: number, acks: ReadonlyMap<string, TaskAck>, final: boolean): void {
    const { logger, storage, targets } = this.#o;
    const { tasks, manifest } = this.#manifestOf(id, acks, false, final);
    const commit = storage.commitManifest(id, manifest);
    (targets.expedite?.(commit) ?? commit).then(
      () => {
        this.#committed.set(id, manifest);
        logger.info(final ? "final checkpoint complete" : "checkpoint complete", {
          job: this.#o.plan.jobName,
          checkpoint: id,
          bytes: tasks.reduce((n, t) => n + (t.file?.size ?? 0), 0),
        });
        this.#run(this.#lifecycle.manifestCommitted(id, Date.now()));
      },
      (e: unknown) => this.#run(this.#lifecycle.manifestFailed(id, describeCause(e), Date.now())),
    );
  }

  /**
   * Every task acknowledged savepoint `id`: its files, written to the job's checkpoint storage
   * like any checkpoint's, are read back (verified) and written with the manifest into a new
   * self-contained directory under the requested one; then the staging copy is deleted.
   */
  #writeSavepoint(id: number, requestId: number, acks: ReadonlyMap<string, TaskAck>): void {
    const { logger, storage, targets } = this.#o;
    const request = this.#savepoints.get(requestId);
    if (request === undefined) throw new EddyError("INTERNAL", `savepoint ${id} has no request`);
    const { tasks, manifest } = this.#manifestOf(id, acks, true, false);
    const write = async (): Promise<SavepointResult> => {
      const files = [];
      for (const t of tasks) if (t.file !== null) files.push({ name: t.file.name, bytes: await storage.readFile(id, t.file) });
      const path = await writeSnapshotDirectory(request.dir, savepointName(this.#o.jobId, id), files, manifest);
      await storage.discard(id);
      return { path, checkpointId: id, bytes: files.reduce((n, f) => n + f.bytes.length, 0) };
    };
    const work = write();
    (targets.expedite?.(work) ?? work).then(
      (result) => {
        logger.info("savepoint complete", { job: this.#o.plan.jobName, savepoint: id, path: result.path, bytes: result.bytes });
        this.#run(this.#lifecycle.savepointWritten(id, result, Date.now()));
      },
      (e: unknown) => this.#run(this.#lifecycle.savepointFailed(id, describeCause(e), Date.now())),
    );
  }

  /** The manifest of checkpoint or savepoint `id` from its acknowledgements, with its tasks in order. */
  #manifestOf(id: number, acks: ReadonlyMap<string, TaskAck>, isSavepoint: boolean, isFinal: boolean) {
    const tasks = [...acks.values()].map((a) => a.state as TaskSnapshotHandle).sort((a, b) => a.chain - b.chain || a.subtask - b.subtask);
    const manifest = buildManifest(
      {
        jobId: this.#o.jobId,
        jobName: this.#o.plan.jobName,
        checkpointId: id,
        generation: this.#o.generation,
        isSavepoint,
        isFinal,
        triggeredAtMs: this.#triggeredAt.get(id) ?? Date.now(),
        completedAtMs: Date.now(),
        tasks,
        enumerators: this.#enumerators.get(id) ?? {},
      },
      this.#o.plan,
    );
    return { tasks, manifest };
  }

  #forget(checkpointId: number): void {
    for (const id of this.#enumerators.keys()) if (id <= checkpointId) this.#enumerators.delete(id);
    for (const id of this.#triggeredAt.keys()) if (id <= checkpointId) this.#triggeredAt.delete(id);
  }
}

/** The manifest of a checkpoint: its tasks' handles, and per operator of the plan what it ran as and what state it holds. */
function buildManifest(fields: Omit<CheckpointManifest, "format" | "version" | "operators">, plan: Plan): CheckpointManifest {
  const operators: Record<string, ManifestOperator> = {};
  for (const node of plan.nodes) {
    const keyed = new Map<string, NonNullable<ManifestOperator["keyedStates"]>[number]>();
    const listed = new Map<string, { name: string; mode: string }>();
    for (const task of fields.tasks) {
      for (const op of task.operators) {
        if (op.operatorId !== node.operatorId) continue;
        for (const s of op.keyed?.states ?? []) keyed.set(s.name, { name: s.name, kind: s.kind, format: s.format, ...(s.codec === undefined ? {} : { codec: s.codec }) });
        for (const o of op.operatorStates) listed.set(o.name, { name: o.name, mode: o.mode });
      }
    }
    operators[node.operatorId] = {
      name: node.name,
      parallelism: node.parallelism,
      maxParallelism: node.maxParallelism,
      ...(keyed.size === 0 ? {} : { keyedStates: [...keyed.values()] }),
      ...(listed.size === 0 ? {} : { operatorStates: [...listed.values()] }),
    };
  }
  return { format: MANIFEST_FORMAT, version: MANIFEST_VERSION, ...fields, operators };
}
