/**
 * The I/O around the pure checkpoint coordinator (checkpoint/coordinator.ts): a timer ticks it,
 * its commands reach the tasks (trigger, notify, abort) and the storage (manifest, discard), and
 * the tasks' acknowledgements come back into it. One per job run, on the coordinating thread.
 */
import type { CheckpointBarrier } from "../core/elements.ts";
import { describeCause, EddyError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import {
  CheckpointCoordinator,
  type CheckpointStats,
  type CoordinatorCommand,
  type TaskAck,
} from "../checkpoint/coordinator.ts";
import type { CheckpointConfig } from "../checkpoint/checkpoint-config.ts";
import { randomBytes } from "node:crypto";
import { retain, writeSnapshotDirectory, type CheckpointStorage } from "../checkpoint/storage.ts";
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
  /** Too many checkpoints failed in a row: the job fails with this error. */
  readonly onFailJob: (error: EddyError) => void;
}

/** A savepoint asked for and not yet ended. */
interface SavepointRequest {
  /** Directory the savepoint directory is created in. */
  readonly dir: string;
  readonly stop: SourceStop | undefined;
  readonly resolve: (result: SavepointResult) => void;
  readonly reject: (error: EddyError) => void;
  /** Set once triggered; undefined while waiting for a free slot (maxConcurrent). */
  checkpointId?: number;
  result?: SavepointResult;
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

/** How long a savepoint waits for checkpoints in progress before it is refused. */
const SAVEPOINT_QUEUE_TIMEOUT_MS = 60_000;

export class CheckpointRunner {
  readonly #o: CheckpointRunnerOptions;
  readonly #coordinator: CheckpointCoordinator;
  readonly #enumerators = new Map<number, Record<string, unknown>>();
  readonly #triggeredAt = new Map<number, number>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #stopped = false;
  readonly #finished = new Set<string>();
  /** The highest checkpoint id issued so far (the final checkpoint takes the next one). */
  #lastId: number;
  #final: { readonly id: number; readonly acks: Map<string, TaskAck> } | undefined;
  readonly #savepoints: SavepointRequest[] = [];

  constructor(options: CheckpointRunnerOptions) {
    this.#o = options;
    this.#lastId = options.firstCheckpointId - 1;
    this.#coordinator = new CheckpointCoordinator(options.config, {
      tasks: options.taskIds,
      firstCheckpointId: options.firstCheckpointId,
      now: Date.now(),
    });
  }

  start(): void {
    if (this.#stopped) return;
    const period = Math.max(5, Math.min(100, Math.floor(this.#o.config.intervalMs / 4)));
    this.#timer = setInterval(() => {
      this.#triggerQueuedSavepoints();
      this.#run(this.#coordinator.tick(Date.now()));
    }, period);
    this.#timer.unref();
  }

  /** Stops ticking; later acknowledgements are ignored. Idempotent. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    for (const request of this.#savepoints.splice(0)) {
      request.reject(new EddyError("SAVEPOINT_FAILED", `job '${this.#o.plan.jobName}' ended before the savepoint completed`));
    }
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
      if (this.#stopped) {
        reject(new EddyError("JOB_NOT_RUNNING", `job '${this.#o.plan.jobName}' is not running`));
        return;
      }
      if (this.#o.config.mode !== "exactly-once") {
        reject(
          new EddyError("SAVEPOINT_NEEDS_ALIGNMENT", `savepoints are aligned, and job '${this.#o.plan.jobName}' checkpoints at-least-once (unaligned): run it exactly-once to take savepoints`),
        );
        return;
      }
      if (stop !== undefined && this.#savepoints.some((r) => r.stop !== undefined)) {
        reject(new EddyError("JOB_STOPPING", `job '${this.#o.plan.jobName}' is already stopping`));
        return;
      }
      const queuedAt = Date.now();
      const request: SavepointRequest = {
        dir,
        stop,
        resolve,
        reject: (e) => reject(e),
      };
      const expire = setTimeout(() => {
        if (request.checkpointId !== undefined) return;
        this.#dropSavepoint(request, new EddyError("SAVEPOINT_FAILED", `no savepoint slot became free within ${Date.now() - queuedAt} ms`));
      }, SAVEPOINT_QUEUE_TIMEOUT_MS);
      expire.unref();
      this.#savepoints.push(request);
      this.#triggerQueuedSavepoints();
    });
  }

  #triggerQueuedSavepoints(): void {
    for (const request of this.#savepoints) {
      if (request.checkpointId !== undefined || this.#stopped) continue;
      const outcome = this.#coordinator.triggerNow(Date.now(), { isSavepoint: true });
      if (!outcome.ok) {
        // Checkpoints in progress occupy every slot: try again on the next tick.
        if (this.#coordinator.inProgress > 0 && !this.#coordinator.isStopped) return;
        // The job has failed or finished: no storage failure, and no use asking again (409 over HTTP).
        this.#dropSavepoint(request, new EddyError("SAVEPOINT_FAILED", `cannot take a savepoint: ${outcome.reason}`, { domain: "user", retryable: false }));
        return;
      }
      request.checkpointId = outcome.checkpointId;
      this.#run(outcome.commands);
    }
  }

  #dropSavepoint(request: SavepointRequest, error: EddyError): void {
    const i = this.#savepoints.indexOf(request);
    if (i >= 0) this.#savepoints.splice(i, 1);
    request.reject(error);
  }

  #savepointOf(checkpointId: number): SavepointRequest | undefined {
    return this.#savepoints.find((r) => r.checkpointId === checkpointId);
  }

  acknowledge(taskId: string, checkpointId: number, ack: TaskAck): void {
    const final = this.#final;
    if (final !== undefined && checkpointId === final.id) {
      if (this.#stopped) return;
      final.acks.set(taskId, ack);
      if (final.acks.size === this.#o.taskIds.length) this.#commit(final.id, final.acks, true);
      return;
    }
    this.#run(this.#coordinator.acknowledge(checkpointId, taskId, ack, Date.now()));
  }

  decline(taskId: string, checkpointId: number, reason: string): void {
    if (this.#final !== undefined && checkpointId === this.#final.id) {
      // Without its final checkpoint the job cannot commit its last output: fail, so the restart
      // strategy replays from the latest checkpoint.
      if (!this.#stopped) {
        this.#o.onFailJob(
          new EddyError("CHECKPOINT_FAILED", `the final checkpoint of job '${this.#o.plan.jobName}' failed: ${reason}`),
        );
      }
      return;
    }
    this.#run(this.#coordinator.decline(checkpointId, taskId, reason, Date.now()));
  }

  taskFinished(taskId: string): void {
    this.#finished.add(taskId);
    this.#run(this.#coordinator.taskFinished(taskId, Date.now()));
  }

  /**
   * Every task finished: the final checkpoint holds what sinks wrote since the last barrier. It
   * waits until no other checkpoint is in progress: one still committing its manifest would
   * otherwise complete after it (notifications must come in id order), or be deleted by its
   * retention as an incomplete older checkpoint while its manifest is being written.
   */
  #maybeTriggerFinal(): void {
    if (this.#finished.size < this.#o.taskIds.length || this.#final !== undefined || this.#stopped) return;
    if (this.#coordinator.inProgress > 0) return;
    const id = this.#lastId + 1;
    this.#lastId = id;
    this.#final = { id, acks: new Map() };
    this.#enumerators.set(id, this.#o.targets.snapshotEnumerators(id));
    this.#triggeredAt.set(id, Date.now());
    this.#o.targets.finalCheckpoint({ kind: "barrier", checkpointId: id, timestampMs: Date.now(), isSavepoint: false });
  }

  stats(): CheckpointStats[] {
    return this.#coordinator.stats();
  }

  /** The highest checkpoint id this runner issued (a trigger, a savepoint or the final one). */
  get lastCheckpointId(): number {
    return this.#lastId;
  }

  #run(commands: readonly CoordinatorCommand[]): void {
    if (this.#stopped) return;
    for (const command of commands) {
      try {
        this.#execute(command);
      } catch (e) {
        this.#o.logger.error("checkpoint command failed", { command: command.type, error: describeCause(e) });
      }
    }
    // Whatever ended a checkpoint in progress (complete, aborted, timed out) passes through here.
    this.#maybeTriggerFinal();
  }

  #execute(command: CoordinatorCommand): void {
    const { logger, storage, targets } = this.#o;
    switch (command.type) {
      case "trigger": {
        this.#lastId = Math.max(this.#lastId, command.checkpointId);
        this.#enumerators.set(command.checkpointId, targets.snapshotEnumerators(command.checkpointId));
        this.#triggeredAt.set(command.checkpointId, command.timestampMs);
        const stop = this.#savepointOf(command.checkpointId)?.stop;
        targets.trigger({ kind: "barrier", checkpointId: command.checkpointId, timestampMs: command.timestampMs, isSavepoint: command.isSavepoint }, stop);
        return;
      }
      case "commit-manifest":
        if (command.isSavepoint) this.#commitSavepoint(command.checkpointId, command.acks);
        else this.#commit(command.checkpointId, command.acks, false);
        return;
      case "notify-complete": {
        this.#forget(command.checkpointId);
        const savepoint = this.#savepointOf(command.checkpointId);
        // As in Flink (≥ 1.15, FLIP-193), an intermediate savepoint commits no side effects: its
        // committables stay pending in the sinks and the next checkpoint commits them. Recovery
        // uses checkpoints only, so a savepoint's commits would be replayed from the checkpoint
        // before it (duplicates). Stop-with-savepoint commits: the job ends with it.
        if (savepoint === undefined || savepoint.stop !== undefined) targets.notifyComplete(command.checkpointId);
        if (savepoint !== undefined) {
          this.#savepoints.splice(this.#savepoints.indexOf(savepoint), 1);
          savepoint.resolve(savepoint.result!);
          // Sinks committed the savepoint (the notification above runs first): the job ends.
          if (savepoint.stop !== undefined) targets.stop();
          return;
        }
        retain(storage, command.checkpointId, this.#o.config.retained).catch((e: unknown) =>
          logger.warn("could not delete old checkpoints", { error: describeCause(e) }),
        );
        return;
      }
      case "abort": {
        this.#forget(command.checkpointId);
        const savepoint = this.#savepointOf(command.checkpointId);
        if (savepoint !== undefined) {
          this.#dropSavepoint(savepoint, new EddyError("SAVEPOINT_FAILED", `savepoint ${command.checkpointId} failed: ${command.reason}`));
          if (savepoint.stop?.drain === true) {
            // Event time has reached its end: the job cannot go on as if nothing happened.
            this.#o.onFailJob(new EddyError("SAVEPOINT_FAILED", `stop with drain failed: ${command.reason}`));
          } else if (savepoint.stop !== undefined) {
            targets.resumeSources();
          }
        }
        logger.warn("checkpoint aborted", { job: this.#o.plan.jobName, checkpoint: command.checkpointId, reason: command.reason });
        targets.abort(command.checkpointId);
        storage.discard(command.checkpointId).catch((e: unknown) => logger.warn("could not delete an aborted checkpoint", { error: describeCause(e) }));
        return;
      }
      case "discard":
        storage.discard(command.checkpointId).catch((e: unknown) => logger.warn("could not delete an old checkpoint", { error: describeCause(e) }));
        return;
      case "fail-job":
        this.#o.onFailJob(new EddyError("CHECKPOINT_FAILURES", `job '${this.#o.plan.jobName}' failed: ${command.reason}`));
        return;
    }
  }

  /** Writes the manifest of checkpoint `id`; then the coordinator (or, for the final one, the tasks) hears of it. */
  #commit(id: number, acks: ReadonlyMap<string, TaskAck>, final: boolean): void {
    const { logger, storage, targets } = this.#o;
    const { tasks, manifest } = this.#manifestOf(id, acks, false, final);
    const commit = storage.commitManifest(id, manifest);
    (targets.expedite?.(commit) ?? commit).then(
      () => {
        logger.info(final ? "final checkpoint complete" : "checkpoint complete", {
          job: this.#o.plan.jobName,
          checkpoint: id,
          bytes: tasks.reduce((n, t) => n + (t.file?.size ?? 0), 0),
        });
        if (!final) return this.#run(this.#coordinator.manifestCommitted(id, Date.now()));
        if (this.#stopped) return;
        this.#forget(id);
        targets.notifyComplete(id);
        retain(storage, id, this.#o.config.retained).catch((e: unknown) => logger.warn("could not delete old checkpoints", { error: describeCause(e) }));
      },
      (e: unknown) => {
        if (!final) return this.#run(this.#coordinator.manifestFailed(id, describeCause(e), Date.now()));
        this.#o.onFailJob(new EddyError("CHECKPOINT_FAILED", `the final checkpoint of job '${this.#o.plan.jobName}' failed: ${describeCause(e)}`));
      },
    );
  }

  /**
   * Every task acknowledged savepoint `id`: its files, written to the job's checkpoint storage
   * like any checkpoint's, are read back (verified) and written with the manifest into a new
   * self-contained directory under the requested one; then the staging copy is deleted.
   */
  #commitSavepoint(id: number, acks: ReadonlyMap<string, TaskAck>): void {
    const { logger, storage, targets } = this.#o;
    const request = this.#savepointOf(id);
    const { tasks, manifest } = this.#manifestOf(id, acks, true, false);
    const write = async (): Promise<SavepointResult> => {
      if (request === undefined) throw new EddyError("INTERNAL", `savepoint ${id} has no request`);
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
        if (request !== undefined) request.result = result;
        this.#run(this.#coordinator.manifestCommitted(id, Date.now()));
      },
      (e: unknown) => this.#run(this.#coordinator.manifestFailed(id, describeCause(e), Date.now())),
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
