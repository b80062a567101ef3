/**
 * CheckpointLifecycle: one per job run, on the coordinating thread. Owns the CheckpointCoordinator
 * (coordinator.ts) and adds what a job's checkpoints need beyond it: the savepoint queue,
 * stop-with-savepoint, the final checkpoint, and which completions sinks hear of (FLIP-193). A pure
 * state machine like the coordinator: every input takes `now` and returns the commands the caller
 * (coordinator/checkpoint-runner.ts) performs; no timers, no I/O. Savepoint results (`R`) and the
 * tasks' acknowledgements are opaque to it.
 *
 * Life of a savepoint request:  requestSavepoint ─▶ queued ─(a slot is free: triggerNow)─▶ bound to
 * checkpoint n ─(every task acked: write-savepoint)─▶ writing ─(savepointWritten)─▶ the coordinator
 * completes n ─▶ resolve-savepoint. It may instead be refused at once (reject-savepoint), expire in
 * the queue, or be rejected when n aborts, when the job fails, stops, or ends (stop()).
 * Life of the final checkpoint:  every task finished and none in progress ─▶ trigger-final (id =
 * last id + 1) ─(every task acked)─▶ commit-manifest (isFinal) ─(manifestCommitted)─▶
 * notify-complete, retain. A decline or a manifest failure of it fails the job.
 * The machine itself:  running ─(stop-job)─▶ stopping;  running|stopping ─(fail-job)─▶ failed;
 * any ─(stop())─▶ stopped.
 *
 * Rules:
 * - Savepoints are aligned: in at-least-once mode every request is refused
 *   (SAVEPOINT_NEEDS_ALIGNMENT). One stop request at a time: a second while one is outstanding is
 *   refused (JOB_STOPPING), as is every request once the job stops with its savepoint.
 * - Queued requests are triggered in request order, at the request and at every `tick`, before
 *   the coordinator's periodic trigger: they take the next free slot (`maxConcurrent`). While
 *   checkpoints in progress occupy every slot a request waits; one still untriggered
 *   SAVEPOINT_QUEUE_TIMEOUT_MS after it was made is rejected at the next tick. A request the
 *   coordinator refuses with nothing in progress (every task finished) is rejected: no slot will
 *   free up (SAVEPOINT_FAILED, domain user, not retryable: 409 over HTTP).
 * - A savepoint's barrier carries the request's `stop`. As in Flink ≥ 1.15 (FLIP-193) an
 *   intermediate savepoint commits no side effects: its completion is not announced to tasks, its
 *   committables stay pending and the next checkpoint commits them. Recovery restores checkpoints
 *   only, so a savepoint that committed would leave committed output ahead of every restorable
 *   checkpoint. A stop savepoint is announced (sinks commit; the job ends with it), then stop-job.
 * - A stop savepoint that aborts: without drain, sources resume-sources and the job goes on; with
 *   drain, event time has ended (the MAX watermark went out), so the job fails (SAVEPOINT_FAILED).
 * - Retention (`retain`) follows completed checkpoints, the final one included, never savepoints:
 *   those are the user's.
 * - The final checkpoint waits until no other checkpoint is in progress: one still writing its
 *   manifest would complete after it (notifications go in id order), or be deleted by its retention
 *   as an incomplete older checkpoint. The coordinator triggers nothing once every task finished,
 *   so it is the last id. It has no timeout: the tasks are done and only snapshot.
 * - A command the caller could not perform comes back as `commandFailed`, and fails what it was
 *   for: a trigger is declined (the coordinator takes failures only as declines, so on behalf of
 *   the first task; the reason says what failed), a manifest or savepoint write fails its
 *   checkpoint, the final checkpoint's trigger or manifest fails the job, and a notify-complete,
 *   resume-sources or stop-job the tasks did not get fails the job (CHECKPOINT_COMMAND_FAILED): a
 *   sink may have missed its commit, sources may stay stopped. An abort, discard or retain that
 *   failed changes nothing: a newer barrier supersedes an aborted one at every task, and deletes
 *   are best-effort (the caller logs them).
 * - Failing the job (the coordinator's fail-job, a failed drain or final checkpoint, a command
 *   failure) rejects every outstanding request; the job fails with the first cause.
 *
 * Invariants: notify-complete ids strictly increase; every request ends exactly once, with one
 * resolve-savepoint or reject-savepoint, and is resolved only after its savepoint was written and
 * the coordinator completed it (for a stop savepoint, after its notify-complete); no notify-complete
 * for an intermediate savepoint; stop-job only right after its savepoint's notify-complete;
 * trigger-final at most once, after every trigger; nothing after stop-job but a fail-job for a
 * failed notify/stop, and nothing at all after fail-job or stop() (but the refusal of a new
 * request). Commands are returned in the order they must be performed.
 *
 * Cost: O(outstanding requests + in-progress checkpoints) per input, on top of the coordinator's.
 */
import { EddyError } from "../core/errors.ts";
import type { CheckpointConfig } from "./checkpoint-config.ts";
import { CheckpointCoordinator, subtaskStats, type CheckpointCounts, type CheckpointStats, type CoordinatorCommand, type SubtaskCheckpointStats, type TaskAck } from "./coordinator.ts";

/** How long a savepoint request waits for a free slot before it is rejected. */
export const SAVEPOINT_QUEUE_TIMEOUT_MS = 60_000;

/** Stop-with-savepoint: sources read nothing after the barrier; with `drain`, after the MAX watermark. */
export interface SavepointStop {
  readonly drain: boolean;
}

export type LifecycleCommand<R> =
  /** Snapshot the enumerators and inject barrier `checkpointId` at every source, with `stop` if set. */
  | {
      readonly type: "trigger";
      readonly checkpointId: number;
      readonly timestampMs: number;
      readonly isSavepoint: boolean;
      readonly stop: SavepointStop | undefined;
    }
  /** Every task finished: snapshot the enumerators and ask every task for the final checkpoint. */
  | { readonly type: "trigger-final"; readonly checkpointId: number; readonly timestampMs: number }
  /** Write the manifest of a checkpoint (or the final one); then manifestCommitted or manifestFailed. */
  | { readonly type: "commit-manifest"; readonly checkpointId: number; readonly isFinal: boolean; readonly acks: ReadonlyMap<string, TaskAck> }
  /** Write savepoint `checkpointId` for request `requestId`; then savepointWritten or savepointFailed. */
  | { readonly type: "write-savepoint"; readonly checkpointId: number; readonly requestId: number; readonly acks: ReadonlyMap<string, TaskAck> }
  /** Tasks act on completion (sinks commit). Ids strictly increase. */
  | { readonly type: "notify-complete"; readonly checkpointId: number }
  /** Tasks drop the checkpoint; its directory is deleted. */
  | { readonly type: "abort"; readonly checkpointId: number; readonly reason: string }
  /** Delete a completed checkpoint that the coordinator's retention no longer keeps. */
  | { readonly type: "discard"; readonly checkpointId: number }
  /** Checkpoint `checkpointId` completed: delete what the storage keeps beyond `retained` before it. */
  | { readonly type: "retain"; readonly checkpointId: number }
  /** A stop savepoint failed (without drain): sources read again. */
  | { readonly type: "resume-sources" }
  /** Stop savepoint `checkpointId` completed and sinks were told: every executor ends. */
  | { readonly type: "stop-job"; readonly checkpointId: number }
  | { readonly type: "fail-job"; readonly error: EddyError }
  | { readonly type: "resolve-savepoint"; readonly requestId: number; readonly checkpointId: number; readonly result: R }
  | { readonly type: "reject-savepoint"; readonly requestId: number; readonly error: EddyError };

export interface LifecycleOptions {
  /** For messages. */
  readonly jobName: string;
  /** Ids of every subtask that must acknowledge. Non-empty, unique. */
  readonly tasks: readonly string[];
  /** 1 for a fresh job, or one more than any id an earlier attempt issued. */
  readonly firstCheckpointId: number;
  readonly now: number;
}

export type LifecyclePhase = "running" | "stopping" | "failed" | "stopped";

interface SavepointRequest<R> {
  readonly requestId: number;
  readonly stop: SavepointStop | undefined;
  readonly requestedAtMs: number;
  /** Set once triggered; undefined while waiting for a slot. */
  checkpointId: number | undefined;
  /** Set by savepointWritten; read when the coordinator completes the savepoint. */
  written: { readonly result: R } | undefined;
}

interface FinalCheckpoint {
  readonly id: number;
  readonly triggerTimeMs: number;
  readonly acks: Map<string, TaskAck>;
  /** For its statistics (allStats): what each task reported, when. */
  readonly subtasks: SubtaskCheckpointStats[];
  status: "acking" | "committing" | "completed" | "failed";
  endMs: number | undefined;
  failureReason: string | undefined;
}

export class CheckpointLifecycle<R> {
  readonly config: CheckpointConfig;
  readonly #coordinator: CheckpointCoordinator;
  readonly #jobName: string;
  readonly #tasks: readonly string[];
  readonly #taskSet: ReadonlySet<string>;
  readonly #finished = new Set<string>();
  /** The highest id issued (a trigger, also one never sent, or the final one). */
  #lastId: number;
  #lastNow: number;
  /** Outstanding requests, in request order (Map insertion order). */
  readonly #requests = new Map<number, SavepointRequest<R>>();
  /** Set once trigger-final was issued; never unset. */
  #final: FinalCheckpoint | undefined;
  #phase: LifecyclePhase = "running";

  constructor(config: CheckpointConfig, options: LifecycleOptions) {
    this.config = config;
    this.#coordinator = new CheckpointCoordinator(config, options);
    this.#jobName = options.jobName;
    this.#tasks = [...options.tasks];
    this.#taskSet = new Set(options.tasks);
    this.#lastId = options.firstCheckpointId - 1;
    this.#lastNow = options.now;
  }

  get phase(): LifecyclePhase {
    return this.#phase;
  }

  /** The highest checkpoint id issued so far (a trigger, a savepoint or the final one). */
  get lastCheckpointId(): number {
    return this.#lastId;
  }

  /** The coordinator's counts of ended checkpoints (the final checkpoint is not among them). */
  counts(): CheckpointCounts {
    return this.#coordinator.counts();
  }

  /** The coordinator's statistics (the final checkpoint is not among them). */
  stats(): CheckpointStats[] {
    return this.#coordinator.stats();
  }

  /** The coordinator's statistics and, once triggered, the final checkpoint's (last: its id is the highest), for the REST API's history. */
  allStats(): CheckpointStats[] {
    const stats = this.#coordinator.stats();
    const f = this.#final;
    if (f === undefined) return stats;
    // As the coordinator's: maxima of the times, the sum of the bytes.
    const max = (pick: (s: SubtaskCheckpointStats) => number) => f.subtasks.reduce((n, s) => Math.max(n, pick(s)), 0);
    stats.push({
      checkpointId: f.id,
      isSavepoint: false,
      triggerTimeMs: f.triggerTimeMs,
      status: f.status === "completed" || f.status === "failed" ? f.status : "in-progress",
      durationMs: f.endMs === undefined ? undefined : f.endMs - f.triggerTimeMs,
      acknowledgedTasks: f.acks.size,
      totalTasks: this.#taskSet.size,
      syncMs: max((s) => s.syncMs),
      asyncMs: max((s) => s.asyncMs),
      alignmentMs: max((s) => s.alignmentMs),
      bytes: f.subtasks.reduce((n, s) => n + s.bytes, 0),
      failureReason: f.failureReason,
      subtasks: [...f.subtasks],
    });
    return stats;
  }

  /** Triggers queued savepoints, expires overdue ones, then lets the coordinator time out and trigger. */
  tick(now: number): LifecycleCommand<R>[] {
    if (this.#phase !== "running") return [];
    now = this.#advance(now);
    const out: LifecycleCommand<R>[] = [];
    this.#triggerQueued(now, out);
    for (const r of this.#requests.values()) {
      if (r.checkpointId !== undefined || now - r.requestedAtMs < SAVEPOINT_QUEUE_TIMEOUT_MS) continue;
      this.#reject(r, new EddyError("SAVEPOINT_FAILED", `no savepoint slot became free within ${now - r.requestedAtMs} ms`), out);
    }
    this.#translate(this.#coordinator.tick(now), out);
    return this.#afterInput(now, out);
  }

  /** A savepoint into a new directory (the caller keeps where); `stop` stops the job with it. */
  requestSavepoint(requestId: number, options: { readonly stop?: SavepointStop | undefined }, now: number): LifecycleCommand<R>[] {
    if (this.#requests.has(requestId)) throw new EddyError("INTERNAL", `savepoint request ${requestId} is outstanding already`);
    now = this.#advance(now);
    const refuse = (error: EddyError): LifecycleCommand<R>[] => [{ type: "reject-savepoint", requestId, error }];
    const job = this.#jobName;
    if (this.#phase === "stopped") return refuse(new EddyError("JOB_NOT_RUNNING", `job '${job}' is not running`));
    if (this.config.mode !== "exactly-once") {
      return refuse(
        new EddyError("SAVEPOINT_NEEDS_ALIGNMENT", `savepoints are aligned, and job '${job}' checkpoints at-least-once (unaligned): run it exactly-once to take savepoints`),
      );
    }
    if (this.#phase === "failed") return refuse(new EddyError("SAVEPOINT_FAILED", "cannot take a savepoint: the job has failed", { domain: "user", retryable: false }));
    const stopping = this.#phase === "stopping" || (options.stop !== undefined && [...this.#requests.values()].some((r) => r.stop !== undefined));
    if (stopping) return refuse(new EddyError("JOB_STOPPING", `job '${job}' is already stopping`));
    this.#requests.set(requestId, { requestId, stop: options.stop, requestedAtMs: now, checkpointId: undefined, written: undefined });
    const out: LifecycleCommand<R>[] = [];
    this.#triggerQueued(now, out);
    return this.#afterInput(now, out);
  }

  acknowledge(checkpointId: number, taskId: string, ack: TaskAck, now: number): LifecycleCommand<R>[] {
    if (this.#phase !== "running") return [];
    now = this.#advance(now);
    const final = this.#final;
    if (final !== undefined && checkpointId === final.id) {
      if (final.status !== "acking" || !this.#taskSet.has(taskId) || final.acks.has(taskId)) return [];
      final.acks.set(taskId, ack);
      final.subtasks.push(subtaskStats(taskId, ack, now));
      if (final.acks.size < this.#taskSet.size) return [];
      final.status = "committing";
      return [{ type: "commit-manifest", checkpointId, isFinal: true, acks: final.acks }];
    }
    const out: LifecycleCommand<R>[] = [];
    this.#translate(this.#coordinator.acknowledge(checkpointId, taskId, ack, now), out);
    return this.#afterInput(now, out);
  }

  decline(checkpointId: number, taskId: string, reason: string, now: number): LifecycleCommand<R>[] {
    if (this.#phase !== "running") return [];
    now = this.#advance(now);
    if (this.#final !== undefined && checkpointId === this.#final.id) {
      if (this.#final.status !== "acking" || !this.#taskSet.has(taskId)) return [];
      return this.#failFinal(reason, now);
    }
    const out: LifecycleCommand<R>[] = [];
    this.#translate(this.#coordinator.decline(checkpointId, taskId, reason, now), out);
    return this.#afterInput(now, out);
  }

  /** `taskId` reached the end of its input; it still acknowledges (see coordinator.ts). */
  taskFinished(taskId: string, now: number): LifecycleCommand<R>[] {
    if (this.#phase !== "running") return [];
    now = this.#advance(now);
    if (this.#taskSet.has(taskId)) this.#finished.add(taskId);
    const out: LifecycleCommand<R>[] = [];
    this.#translate(this.#coordinator.taskFinished(taskId, now), out);
    return this.#afterInput(now, out);
  }

  /** The manifest of a commit-manifest is written. */
  manifestCommitted(checkpointId: number, now: number): LifecycleCommand<R>[] {
    if (this.#phase !== "running") return [];
    now = this.#advance(now);
    const final = this.#final;
    if (final !== undefined && checkpointId === final.id) {
      if (final.status !== "committing") return [];
      final.status = "completed";
      final.endMs = now;
      return [
        { type: "notify-complete", checkpointId },
        { type: "retain", checkpointId },
      ];
    }
    const out: LifecycleCommand<R>[] = [];
    this.#translate(this.#coordinator.manifestCommitted(checkpointId, now), out);
    return this.#afterInput(now, out);
  }

  manifestFailed(checkpointId: number, reason: string, now: number): LifecycleCommand<R>[] {
    if (this.#phase !== "running") return [];
    now = this.#advance(now);
    if (this.#final !== undefined && checkpointId === this.#final.id) {
      return this.#final.status === "completed" ? [] : this.#failFinal(reason, now);
    }
    const out: LifecycleCommand<R>[] = [];
    this.#translate(this.#coordinator.manifestFailed(checkpointId, reason, now), out);
    return this.#afterInput(now, out);
  }

  /** The savepoint of a write-savepoint is written (its directory is complete): it completes. */
  savepointWritten(checkpointId: number, result: R, now: number): LifecycleCommand<R>[] {
    if (this.#phase !== "running") return [];
    const request = this.#requestOf(checkpointId);
    if (request === undefined) return [];
    request.written = { result };
    return this.manifestCommitted(checkpointId, now);
  }

  savepointFailed(checkpointId: number, reason: string, now: number): LifecycleCommand<R>[] {
    return this.manifestFailed(checkpointId, reason, now);
  }

  /** Performing `command` threw `reason`: it fails what it was for (see the rules). */
  commandFailed(command: LifecycleCommand<R>, reason: string, now: number): LifecycleCommand<R>[] {
    const fatal = (message: string): LifecycleCommand<R>[] => {
      if (this.#phase !== "running" && this.#phase !== "stopping") return [];
      const out: LifecycleCommand<R>[] = [];
      this.#fail(new EddyError("CHECKPOINT_COMMAND_FAILED", `${message}: ${reason}`), out);
      return out;
    };
    switch (command.type) {
      case "trigger":
        return this.decline(command.checkpointId, this.#tasks[0]!, `its barrier could not be sent: ${reason}`, now);
      case "trigger-final":
        return this.#phase === "running" && this.#final?.status === "acking" ? this.#failFinal(reason, now) : [];
      case "commit-manifest":
        return this.manifestFailed(command.checkpointId, reason, now);
      case "write-savepoint":
        return this.savepointFailed(command.checkpointId, reason, now);
      case "notify-complete":
        return fatal(`could not notify the tasks of job '${this.#jobName}' that checkpoint ${command.checkpointId} completed`);
      case "resume-sources":
        return fatal(`could not resume the sources of job '${this.#jobName}' after its stop failed`);
      case "stop-job":
        return fatal(`could not stop job '${this.#jobName}' after savepoint ${command.checkpointId}`);
      case "abort":
      case "discard":
      case "retain":
      case "fail-job":
      case "resolve-savepoint":
      case "reject-savepoint":
        return [];
    }
  }

  /** The job run ended (or is ending): every outstanding request is rejected; nothing follows. Idempotent. */
  stop(): LifecycleCommand<R>[] {
    if (this.#phase === "stopped") return [];
    const out: LifecycleCommand<R>[] = [];
    this.#rejectAll(new EddyError("SAVEPOINT_FAILED", `job '${this.#jobName}' ended before the savepoint completed`), out);
    this.#phase = "stopped";
    return out;
  }

  #advance(now: number): number {
    if (now > this.#lastNow) this.#lastNow = now;
    return this.#lastNow;
  }

  #requestOf(checkpointId: number): SavepointRequest<R> | undefined {
    for (const r of this.#requests.values()) if (r.checkpointId === checkpointId) return r;
    return undefined;
  }

  #triggerQueued(now: number, out: LifecycleCommand<R>[]): void {
    for (const r of this.#requests.values()) {
      if (r.checkpointId !== undefined) continue;
      const outcome = this.#coordinator.triggerNow(now, { isSavepoint: true });
      if (!outcome.ok) {
        // Checkpoints in progress occupy every slot: wait for the next tick.
        if (this.#coordinator.inProgress > 0) return;
        // Every task has finished: no slot will free up, no use asking again (409 over HTTP).
        this.#reject(r, new EddyError("SAVEPOINT_FAILED", `cannot take a savepoint: ${outcome.reason}`, { domain: "user", retryable: false }), out);
        continue;
      }
      r.checkpointId = outcome.checkpointId;
      this.#translate(outcome.commands, out);
    }
  }

  /**
   * The coordinator's commands as this machine's. A failure (the coordinator's fail-job, a failed
   * drain) is applied after the whole batch, so the batch's aborts and completions still go out
   * and nothing follows the fail-job; a trigger after it is not sent.
   */
  #translate(commands: readonly CoordinatorCommand[], out: LifecycleCommand<R>[]): void {
    const jobFails = commands.some((c) => c.type === "fail-job");
    let failure: EddyError | undefined;
    let stoppedWith: number | undefined;
    for (const c of commands) {
      switch (c.type) {
        case "trigger":
          this.#lastId = Math.max(this.#lastId, c.checkpointId);
          if (failure === undefined) out.push({ ...c, stop: this.#requestOf(c.checkpointId)?.stop });
          break;
        case "commit-manifest": {
          if (!c.isSavepoint) {
            out.push({ type: "commit-manifest", checkpointId: c.checkpointId, isFinal: false, acks: c.acks });
            break;
          }
          const request = this.#requestOf(c.checkpointId);
          // A savepoint is triggered only for a request, which ends only when the savepoint does.
          if (request === undefined) throw new EddyError("INTERNAL", `savepoint ${c.checkpointId} has no request`);
          out.push({ type: "write-savepoint", checkpointId: c.checkpointId, requestId: request.requestId, acks: c.acks });
          break;
        }
        case "notify-complete": {
          const request = this.#requestOf(c.checkpointId);
          if (request === undefined) {
            out.push(c, { type: "retain", checkpointId: c.checkpointId });
            break;
          }
          // FLIP-193: only a stop savepoint is announced (see the rules).
          if (request.stop !== undefined) out.push(c);
          this.#requests.delete(request.requestId);
          // The coordinator completes a savepoint only on savepointWritten, which sets `written`.
          out.push({ type: "resolve-savepoint", requestId: request.requestId, checkpointId: c.checkpointId, result: request.written!.result });
          if (request.stop !== undefined) stoppedWith = c.checkpointId;
          break;
        }
        case "abort": {
          const request = this.#requestOf(c.checkpointId);
          if (request !== undefined) {
            this.#reject(request, new EddyError("SAVEPOINT_FAILED", `savepoint ${c.checkpointId} failed: ${c.reason}`), out);
            // When the job fails anyway, its own cause is the one to report, and no source resumes.
            if (request.stop !== undefined && !jobFails) {
              // With drain, event time has reached its end: the job cannot go on as if nothing happened.
              if (request.stop.drain) failure ??= new EddyError("SAVEPOINT_FAILED", `stop with drain failed: ${c.reason}`);
              else out.push({ type: "resume-sources" });
            }
          }
          out.push(c);
          break;
        }
        case "discard":
          out.push(c);
          break;
        case "fail-job":
          failure = new EddyError("CHECKPOINT_FAILURES", `job '${this.#jobName}' failed: ${c.reason}`);
          break;
      }
    }
    if (failure !== undefined) this.#fail(failure, out);
    else if (stoppedWith !== undefined) {
      this.#rejectAll(new EddyError("SAVEPOINT_FAILED", `job '${this.#jobName}' stopped with savepoint ${stoppedWith} before this savepoint completed`), out);
      out.push({ type: "stop-job", checkpointId: stoppedWith });
      this.#phase = "stopping";
    }
  }

  /** Every task finished and nothing is in progress: the final checkpoint (see the rules). */
  #afterInput(now: number, out: LifecycleCommand<R>[]): LifecycleCommand<R>[] {
    if (this.#phase !== "running" || this.#final !== undefined) return out;
    if (this.#finished.size < this.#taskSet.size || this.#coordinator.inProgress > 0) return out;
    const id = ++this.#lastId;
    this.#final = { id, triggerTimeMs: now, acks: new Map(), subtasks: [], status: "acking", endMs: undefined, failureReason: undefined };
    out.push({ type: "trigger-final", checkpointId: id, timestampMs: now });
    return out;
  }

  /** Without its final checkpoint the job cannot commit its last output: fail, so the restart strategy replays from the latest checkpoint. */
  #failFinal(reason: string, now: number): LifecycleCommand<R>[] {
    const final = this.#final!;
    final.status = "failed";
    final.endMs = now;
    final.failureReason = reason;
    const out: LifecycleCommand<R>[] = [];
    this.#fail(new EddyError("CHECKPOINT_FAILED", `the final checkpoint of job '${this.#jobName}' failed: ${reason}`), out);
    return out;
  }

  #fail(error: EddyError, out: LifecycleCommand<R>[]): void {
    this.#rejectAll(new EddyError("SAVEPOINT_FAILED", `job '${this.#jobName}' failed before the savepoint completed: ${error.message}`), out);
    out.push({ type: "fail-job", error });
    this.#phase = "failed";
  }

  #reject(request: SavepointRequest<R>, error: EddyError, out: LifecycleCommand<R>[]): void {
    this.#requests.delete(request.requestId);
    out.push({ type: "reject-savepoint", requestId: request.requestId, error });
  }

  #rejectAll(error: EddyError, out: LifecycleCommand<R>[]): void {
    for (const r of this.#requests.values()) this.#reject(r, error, out);
  }
}
