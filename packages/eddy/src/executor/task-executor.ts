/**
 * Runs the subtasks a deployment assigns to this thread: instantiates their operators, wires
 * their channels, registers their source readers, and drives them all with one cooperative loop
 * (run every runnable task for one slice, yield to the event loop, sleep when nothing is runnable
 * until mail, channel data, credit or source data wakes it). Sources whose splits go to whichever
 * reader asks may sit out rounds while the thread holds up another one (the source yield:
 * ExecutorOptions.sourceYieldRounds).
 *
 * Inline mode runs every subtask of a plan in one executor with local channels; threaded mode runs
 * one executor per worker thread, each with its share of subtasks, and remote channels between
 * them. The executor does not know which: the `Deployment` decides what is local.
 */
import type { Clock } from "../core/clock.ts";
import type { CheckpointBarrier } from "../core/elements.ts";
import { encodeSnapshotFileStream } from "../checkpoint/format/container.ts";
import type { CheckpointStorage, FileRef } from "../checkpoint/storage.ts";
import { OperatorCheckpointing, writeTaskSnapshot, type OperatorRestore, type OperatorSnapshot, type WriteSharedKeyedFile } from "../runtime/checkpointing.ts";
import { SHARED_BASE_KIND, SHARED_DELTA_KIND } from "../checkpoint/format/keyed-chain.ts";
import { randomBytes } from "node:crypto";
import type { OperatorSnapshotMeta, TaskSnapshotHandle } from "../checkpoint/format/task-snapshot.ts";
import { describeCause, EddyError } from "../core/errors.ts";
import { keyGroupRangeForOperator } from "../core/key-group.ts";
import type { Logger } from "../core/logger.ts";
import type { SourceReader } from "../connector/source.ts";
import type { Plan, PlanChain, PlanEdge, PlanNode } from "../graph/plan.ts";
import type { InputChannel, OutputChannel } from "../runtime/channels/channel.ts";
import { createChannelSelector } from "../runtime/channels/partitioner.ts";
import { RecordWriter } from "../runtime/channels/record-writer.ts";
import { Mailbox } from "../runtime/mailbox.ts";
import { PendingWork } from "../runtime/pending-work.ts";
import { QueryableRegistry } from "../runtime/queryable-registry.ts";
import { CounterRegistry, type JobServices, type OneInputOperator, type OperatorContext, type Output, type SourceAlignmentPort, type SplitAwareOperator, type TwoInputOperator } from "../runtime/operator.ts";
import { chainedTarget, createEdgeMeter, createOutput, NetworkTarget, type EdgeMeter, type OutputTarget } from "../runtime/outputs.ts";
import { OperatorMetricGroup } from "../runtime/metrics/metric-group.ts";
import { SourceIdleTime, type OperatorMetrics } from "../runtime/metrics/operator-metrics.ts";
import { recordErrorPolicy } from "../runtime/record-error-policy.ts";
import { StreamTask, type SourceStop, type SubtaskMetrics, type TaskHead, type TaskInput } from "../runtime/stream-task.ts";
import type { BusyTaskBoard } from "./task-watchdog.ts";
import type { JobMasterGateway } from "./gateway.ts";
import { heapStateBackend } from "../state/heap-keyed-state-backend.ts";
import type { KeyedStateBackendFactory } from "../state/keyed-state-backend.ts";

export interface ExecutorOptions {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly services: JobServices;
  readonly autoWatermarkIntervalMs: number;
  /** Records per batch on a channel. */
  readonly batchRecords: number;
  /** A partly filled batch is sent once its oldest record is this old (and whenever the thread goes idle). */
  readonly flushTimeoutMs: number;
  readonly maxRecordsPerSlice: number;
  /**
   * Longest stretch of task work before the loop yields to the event loop. Worker threads use 0
   * (yield after every round) so frames from other threads are received promptly.
   */
  readonly yieldIntervalMs: number;
  /** Where this executor says which task runs user code, for the coordinator's watchdog (worker threads). */
  readonly busyBoard?: BusyTaskBoard | undefined;
  /** The keyed state backend of keyed operators (default: the heap backend). */
  readonly stateBackend?: KeyedStateBackendFactory | undefined;
  /**
   * Per-record metrics (`metrics.enabled`, default true): chained edges count records and the
   * loop measures busy time. Off, operators fed by chained edges report no record counts; task
   * counts (kept per batch) and user metrics remain. docs/metrics.md.
   */
  readonly metricsEnabled?: boolean | undefined;
  /**
   * Local window aggregation (`pipeline.local-aggregation`, default true): false makes every
   * LocalAggregation operator send each element on at once, as a partial of one
   * (runtime/windows/local-window-aggregation.ts).
   */
  readonly localAggregation?: boolean | undefined;
  /** `state.verify-copy-none` (OperatorContext.verifyCopyNone). */
  readonly verifyCopyNone?: boolean | undefined;
  /**
   * The source yield: while a task of this executor has an input from another thread that is at
   * least half full (StreamTask.hasBacklog: that thread waits for this one, or soon will), its
   * source tasks sit out up to this many rounds in a row, then run one; sources with mail always
   * run. 0 or undefined: never. With splits handed out on request, a source on another thread
   * then takes the splits this one does not ask for (docs/performance.md, §5).
   */
  readonly sourceYieldRounds?: number | undefined;
}

/**
 * ExecutorOptions.sourceYieldRounds by default. Nexmark at parallelism 2, 3 M events, medians of
 * 4 alternated runs against 0: q15 -13 %, q16 -11 % run time; q5 and q17 unchanged
 * (docs/performance.md, §5).
 */
export const DEFAULT_SOURCE_YIELD_ROUNDS = 16;

/** What the source yield reads of a task (StreamTask). */
export interface YieldingTask {
  /** An input from another thread is at least half full, and the task could read it now. */
  readonly hasBacklog: boolean;
}

/**
 * The source yield's rounds (ExecutorOptions.sourceYieldRounds): `startRound` says whether the
 * sources that may yield sit out the round about to run. They do while a task has a backlog, at
 * most `rounds` rounds in a row; then one round runs them, and the count starts again.
 */
export class SourceYield {
  readonly #rounds: number;
  /** Rounds in a row the sources sat out. */
  #satOut = 0;

  constructor(rounds: number) {
    this.#rounds = rounds;
  }

  startRound(tasks: readonly YieldingTask[]): boolean {
    let backlog = false;
    if (this.#satOut < this.#rounds) for (let i = 0; i < tasks.length && !backlog; i++) backlog = tasks[i]!.hasBacklog;
    this.#satOut = backlog ? this.#satOut + 1 : 0;
    return backlog;
  }

  /** The round's tasks with a backlog could not run: the next round runs the sources. */
  endSitOut(): void {
    this.#satOut = this.#rounds;
  }
}

/** Where a network edge's channel ends come from; see the file comment. */
export interface Deployment {
  /** Whether this executor runs subtask `subtask` of `chain`. */
  owns(chain: PlanChain, subtask: number): boolean;
  /** The sending end of the channel `sender → receiver` of `edge` (the sender is owned here). */
  outputChannel(edge: PlanEdge, sender: number, receiver: number): OutputChannel;
  /** The receiving end of the channel `sender → receiver` of `edge` (the receiver is owned here). */
  inputChannel(edge: PlanEdge, sender: number, receiver: number): InputChannel;
  readonly splits: SplitCoordination;
  /** Checkpointing of this executor's subtasks; undefined when checkpointing is off. */
  readonly checkpoints?: CheckpointParticipation | undefined;
  /**
   * How other threads wake this executor when they publish data, credit or room in shared memory
   * (which sends no event). Undefined when every arrival is an event that calls `wake()` itself.
   */
  readonly doorbell?: Doorbell | undefined;
  /**
   * Sends what transports held back for lack of room (see FrameOutlet.hasRoom); returns whether
   * some is still held. Called on rounds where no task ran and before the executor ends, which it
   * does only once nothing is held. Undefined when transports never hold frames back.
   */
  flushTransports?(): boolean;
}

/**
 * A flag other threads check after publishing something for this executor: while it is armed,
 * they wake the executor (with a message); while it is not, they do nothing, and the executor
 * finds what they published on its next round. The executor arms it, looks at its inputs once more
 * (so nothing published before the arming is missed), and only then sleeps; it disarms it on
 * waking.
 */
export interface Doorbell {
  arm(): void;
  disarm(): void;
}

/**
 * How an executor's tasks take part in checkpoints: where they write, what they restore, and whom
 * they report to (the coordinator's gateway: called directly inline, carried as messages from a
 * worker thread).
 */
export interface CheckpointParticipation extends Pick<JobMasterGateway, "acknowledgeCheckpoint" | "declineCheckpoint" | "taskFinished"> {
  readonly mode: "exactly-once" | "at-least-once";
  readonly storage: CheckpointStorage;
  /** What subtask `subtask` of `node` restores from (undefined: start empty). */
  restoreFor(node: PlanNode, subtask: number): OperatorRestore | undefined;
  /** Restored state no operator takes back is dropped (with a warning) instead of failing the job. */
  readonly allowNonRestoredState: boolean;
}

/** The id of subtask `subtask` of `chain` in checkpoints (coordinator and manifest). */
export function taskIdOf(chain: PlanChain, subtask: number): string {
  return `${chain.index}.${subtask}`;
}

/** The reader side of split assignment (FLIP-27): enumerators live with the coordinator. */
export interface ReaderHandle {
  addSplits(splits: readonly unknown[]): void;
  notifyNoMoreSplits(): void;
  /** Watermark alignment: the coordinator's answer to the subtask's last report. */
  updateMaxAllowedWatermark(maxAllowed: number): void;
}

export interface SplitCoordination {
  /** A source subtask of this executor exists; split assignments for it go to `handle`. */
  registerReader(node: PlanNode, subtask: number, handle: ReaderHandle): void;
  /** With `event`: a source event of the reader for its enumerator, not a request. */
  requestSplit(node: PlanNode, subtask: number, event?: unknown): void;
  /** Watermark alignment: a source subtask's watermark for the coordinator (gateway.ts, reportWatermark). */
  reportWatermark(node: PlanNode, subtask: number, group: string, watermark: number, maxAllowedDriftMs: number): void;
  /** Every reader of this executor is registered. */
  start(): void;
  close(): void;
}

export interface ExecutorResult {
  /** Records read by this executor's source subtasks. */
  readonly sourceRecords: number;
}

/** The operator state name under which a source subtask's split positions are checkpointed. */
export const SOURCE_SPLITS_STATE = "source-splits";

type AnyOperator = OneInputOperator<unknown> | TwoInputOperator<unknown, unknown>;

export class TaskExecutor {
  readonly done: Promise<ExecutorResult>;
  readonly tasks: StreamTask[] = [];
  /** The chain index of each task, by position in `tasks` (for the busy board). */
  readonly #taskChains: number[] = [];
  /** The queryable states of this executor's subtasks (a state server reads them). */
  readonly queryable = new QueryableRegistry();
  readonly #plan: Plan;
  readonly #deployment: Deployment;
  readonly #options: ExecutorOptions;
  readonly #sourceTasks = new Set<StreamTask>();
  #wakeup: (() => void) | undefined;
  #failure: EddyError | undefined;
  #cancelled = false;
  #stopRequested = false;
  /** Checkpoints triggered and not yet complete or aborted: a task finishing takes part in them. */
  readonly #triggered = new Map<number, CheckpointBarrier>();
  /** Every operator subtask's checkpointing, by a name for messages. */
  readonly #checkpointings: [string, OperatorCheckpointing][] = [];
  #idleWaiters: (() => void)[] = [];
  /** Asynchronous I/O in flight that should not wait for the next regular yield (checkpoint writes); `settled` waits for it. */
  readonly #inFlight = new Set<Promise<unknown>>();
  /** The id of the job's final checkpoint once triggered, and whether it completed. */
  #finalCheckpointId: number | undefined;
  #finalCommitted = false;

  constructor(plan: Plan, deployment: Deployment, options: ExecutorOptions) {
    this.#plan = plan;
    this.#deployment = deployment;
    this.#options = options;
    this.done = this.#deployAndRun();
  }

  /** Stops the executor; `done` then rejects with a cancellation error. Idempotent. */
  cancel(): void {
    this.#cancelled = true;
    this.wake();
  }

  /** Fails the executor from outside the loop (e.g. a peer reported a broken channel). */
  fail(cause: unknown): void {
    this.#fail(cause);
    this.wake();
  }

  /** Resolves the next time no task is runnable (all wait for time or data) or the executor ended. */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.#idleWaiters.push(resolve);
      this.wake();
    });
  }

  /** Records read by this executor's source subtasks so far. */
  get sourceRecords(): number {
    let n = 0;
    for (const task of this.#sourceTasks) n += task.recordsIn;
    return n;
  }

  metrics(): SubtaskMetrics[] {
    return this.tasks.map((t) => t.metrics());
  }

  /**
   * Injects the barrier of checkpoint `barrier.checkpointId` at every source task of this
   * executor; with `stop`, the sources read nothing more after it (stop with a savepoint).
   */
  triggerCheckpoint(barrier: CheckpointBarrier, stop?: SourceStop): void {
    this.#triggered.set(barrier.checkpointId, barrier);
    for (const task of this.tasks) {
      if (this.#sourceTasks.has(task)) task.postMail(() => task.triggerCheckpoint(barrier, stop));
      else task.postMail(() => task.snapshotIfFinished(barrier));
    }
  }

  /** A stop-with-savepoint failed: the sources read again. */
  resumeSources(): void {
    for (const task of this.#sourceTasks) task.postMail(() => task.resume());
  }

  /**
   * Ends the executor once the mail posted so far has run (the savepoint's completion, on which
   * sinks commit): the job stopped with a savepoint. `done` then resolves normally.
   */
  stop(): void {
    this.#stopRequested = true;
    this.wake();
  }

  /** Checkpoint `checkpointId` is complete (its manifest is committed): sinks commit. */
  notifyCheckpointComplete(checkpointId: number): void {
    for (const id of this.#triggered.keys()) if (id <= checkpointId) this.#triggered.delete(id);
    for (const task of this.tasks) task.postMail(() => task.notifyCheckpointComplete(checkpointId));
    if (checkpointId === this.#finalCheckpointId) this.#finalCommitted = true;
    this.wake();
  }

  /** Every task of the job has finished: take the final checkpoint (see StreamTask.finalCheckpoint). */
  finalCheckpoint(barrier: CheckpointBarrier): void {
    this.#finalCheckpointId = barrier.checkpointId;
    for (const task of this.tasks) task.postMail(() => task.finalCheckpoint(barrier));
  }

  /** The coordinator gave up checkpoint `checkpointId`. */
  abortCheckpoint(checkpointId: number): void {
    this.#triggered.delete(checkpointId);
    for (const task of this.tasks) {
      task.postMail(() => {
        task.abortCheckpoint(checkpointId);
        task.notifyCheckpointAborted(checkpointId);
      });
    }
  }

  /**
   * While `work` runs, the loop yields to the event loop after every round instead of every
   * `yieldIntervalMs`, so each of its I/O steps waits a round, not an interval (checkpoint files
   * are written in several steps). Returns `work`.
   */
  expedite<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    const done = (): void => void this.#inFlight.delete(work);
    work.then(done, done);
    return work;
  }

  /**
   * Resolves once the work handed to `expedite` (checkpoint files being written) has settled, or
   * after `timeoutMs`. A worker thread waits for this before it reports its end: the coordinator
   * terminates it then, and terminating a thread while it is inside an fs call aborts the whole
   * process (Node 20: `Assertion failed: (req_wrap) != nullptr` in fs's AsyncDestCall).
   */
  async settled(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.#inFlight.size > 0) {
      const left = deadline - performance.now();
      if (left <= 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.#inFlight]), new Promise((resolve) => (timer = setTimeout(resolve, left)))]);
      clearTimeout(timer);
    }
  }

  /** Wakes the loop if it sleeps: new mail, channel data or credit. Cheap; call freely. */
  wake(): void {
    const wake = this.#wakeup;
    if (wake === undefined) return;
    this.#wakeup = undefined;
    wake();
  }

  async #deployAndRun(): Promise<ExecutorResult> {
    // Let the caller attach handlers before anything can fail.
    await Promise.resolve();
    // Keep the process (or worker thread) alive while the job runs: sources and clocks use unref'd
    // timers, and a job waiting only on them (e.g. a rate-limited source) must not let Node exit.
    const keepAlive = setInterval(() => {}, 2 ** 30);
    try {
      this.#deploy();
      const board = this.#options.busyBoard;
      for (let i = 0; i < this.tasks.length; i++) {
        board?.enter(this.#taskChains[i]!, this.tasks[i]!.subtaskIndex);
        this.tasks[i]!.open();
        board?.leave();
      }
      this.#checkRestoredStateClaimed();
      this.#deployment.splits.start();
      await this.#loop();
    } catch (e) {
      this.#fail(e);
    } finally {
      clearInterval(keepAlive);
    }
    this.#shutdown();
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
    if (this.#failure !== undefined) throw this.#failure;
    return { sourceRecords: this.sourceRecords };
  }

  async #loop(): Promise<void> {
    const tasks = this.tasks;
    const { yieldIntervalMs, flushTimeoutMs } = this.#options;
    const doorbell = this.#deployment.doorbell;
    const board = this.#options.busyBoard;
    const chains = this.#taskChains;
    const measureBusy = this.#options.metricsEnabled !== false;
    let armed = false;
    let lastYield = performance.now();
    // Without a source it may hold back, the yield does not look for backlogs at all.
    const sourceYield = new SourceYield(tasks.some((t) => t.yieldsSplits) ? (this.#options.sourceYieldRounds ?? 0) : 0);
    while (this.#failure === undefined) {
      if (this.#cancelled) {
        this.#failure = new EddyError("JOB_CANCELLED", `job '${this.#plan.jobName}' was cancelled`);
        return;
      }
      // Stopped with a savepoint: once the mail before (its completion) has run and the commits it started are done.
      if (this.#stopRequested && !tasks.some((t) => t.hasWorkLeft)) return;
      let allFinished = true;
      let progressed = false;
      const backlog = sourceYield.startRound(tasks);
      for (let i = 0; i < tasks.length; i++) {
        const task = tasks[i]!;
        if (backlog && task.mayYield) {
          task.sitOut();
          allFinished = false;
          continue;
        }
        if (task.checkRunnable()) {
          progressed = true;
          board?.enter(chains[i]!, task.subtaskIndex);
          // Once per slice, not per record: busyTimeMsPerSecond.
          const started = measureBusy ? performance.now() : 0;
          try {
            task.runSlice();
          } catch (e) {
            this.#fail(e, task);
            return;
          } finally {
            if (measureBusy) task.addBusyTime(performance.now() - started);
            board?.leave();
          }
        }
        if (!task.isFinished) allFinished = false;
      }
      if (backlog && !progressed) {
        // The tasks with a backlog could not run (their outputs are full): the sources may, at once.
        sourceYield.endSitOut();
        continue;
      }
      // Frames a transport held back for lack of room go out as room appears, even after the task
      // that sent them has finished; the executor does not end before they are out.
      const held = (allFinished || !progressed) && this.#deployment.flushTransports !== undefined && this.#deployment.flushTransports();
      // With checkpointing, finished tasks stay open until the final checkpoint is complete and its
      // notifications have run (sinks commit their last output there).
      if (allFinished && !held && (this.#deployment.checkpoints === undefined || (this.#finalCommitted && !tasks.some((t) => t.hasWorkLeft)))) return;
      const now = performance.now();
      if (progressed) {
        if (armed) {
          armed = false;
          doorbell!.disarm();
        }
        // Under load, batches fill; a partly filled batch waits at most the flush timeout.
        for (let i = 0; i < tasks.length; i++) tasks[i]!.flushOlderThan(now - flushTimeoutMs);
        if (now - lastYield >= yieldIntervalMs || this.#inFlight.size !== 0) {
          // Let timers, I/O and frames from other threads in; a job never starves the event loop.
          await new Promise<void>((resolve) => setImmediate(resolve));
          lastYield = performance.now();
        }
        continue;
      }
      // Nothing is runnable: nothing more will join a pending batch soon, so send them now.
      let flushed = false;
      for (let i = 0; i < tasks.length; i++) flushed = tasks[i]!.flushAll() || flushed;
      if (flushed) continue;
      if (doorbell !== undefined && !armed) {
        // One more round with the doorbell armed: whatever was published before is seen then.
        doorbell.arm();
        armed = true;
        continue;
      }
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
      await new Promise<void>((resolve) => {
        this.#wakeup = resolve;
      });
      if (armed) {
        armed = false;
        doorbell!.disarm();
      }
      lastYield = performance.now();
    }
  }

  /** The asynchronous part of a task's checkpoint: serialize, write, acknowledge (or decline). */
  #persist(
    cp: CheckpointParticipation,
    taskId: string,
    chain: PlanChain,
    subtask: number,
    barrier: CheckpointBarrier,
    snapshots: OperatorSnapshot[],
    timing: { alignmentMs: number; syncMs: number },
  ): void {
    const id = barrier.checkpointId;
    const start = performance.now();
    const run = async (): Promise<void> => {
      // Incremental keyed state: one shared file per operator and checkpoint, named uniquely
      // (shared-state-registry.ts reads the checkpoint id back from the name).
      const writeShared: WriteSharedKeyedFile = (operatorIndex, operatorId, kind, sharedSections, buffers) => {
        const name = `task-${chain.index}-${subtask}-${operatorIndex}-${kind}-${id}-${randomBytes(6).toString("hex")}.kgs`;
        // Streamed: each key group's section is written as it is serialized, never the whole file in memory.
        const meta = () => ({ taskId, subtask, checkpointId: id, operatorId });
        const chunks = encodeSnapshotFileStream(kind === "base" ? SHARED_BASE_KIND : SHARED_DELTA_KIND, meta, sharedSections, (bytes) => buffers.handed(bytes));
        return cp.storage.writeSharedFile(name, chunks, (written) => buffers.written(written));
      };
      const { file, operators, operatorBytes, sharedBytes } = await writeTaskSnapshot(snapshots, cp.storage, id, `task-${chain.index}-${subtask}.snap`, (ops) => ({ taskId, chain: chain.index, subtask, checkpointId: id, operators: ops }), writeShared);
      const handle: TaskSnapshotHandle = { taskId, chain: chain.index, subtask, file, operators };
      cp.acknowledgeCheckpoint(taskId, id, {
        state: handle,
        syncMs: timing.syncMs,
        asyncMs: performance.now() - start,
        alignmentMs: timing.alignmentMs,
        bytes: (file?.size ?? 0) + sharedBytes,
        operatorBytes,
      });
    };
    this.expedite(run()).catch((e: unknown) => {
      this.#options.logger.warn("checkpoint failed in a task", { job: this.#plan.jobName, checkpoint: id, task: taskId, error: describeCause(e) });
      cp.declineCheckpoint(taskId, id, `task ${taskId} could not persist its snapshot: ${describeCause(e)}`);
    });
  }

  /** Restored state an open operator did not take back fails the job, unless allowed to be dropped. */
  #checkRestoredStateClaimed(): void {
    const cp = this.#deployment.checkpoints;
    if (cp === undefined) return;
    for (const [name, checkpointing] of this.#checkpointings) {
      const unclaimed = checkpointing.unclaimedRestoredState();
      if (unclaimed.length === 0) continue;
      const what = `operator '${name}' (uid '${checkpointing.operatorId}') did not take back its restored ${unclaimed.join(", ")}`;
      if (!cp.allowNonRestoredState) {
        throw new EddyError(
          "NON_RESTORED_STATE",
          `${what}: make it keyed / register that state in open(), or pass --allow-non-restored-state to drop it`,
          { operator: name },
        );
      }
      this.#options.logger.warn(`dropping restored state (allow-non-restored-state): ${what}`, { job: this.#plan.jobName });
    }
  }

  #fail(cause: unknown, task?: StreamTask): void {
    if (this.#failure !== undefined) return;
    this.queryable.close("the job failed");
    if (cause instanceof EddyError) {
      this.#failure = cause;
    } else {
      const where = task === undefined ? "" : ` in task '${task.name}' (subtask ${task.subtaskIndex})`;
      this.#failure = new EddyError("TASK_FAILED", `job '${this.#plan.jobName}' failed${where}: ${describeCause(cause)}`, { cause, ...(task === undefined ? {} : { operator: task.name, subtask: task.subtaskIndex }) });
    }
    // Debug only: the failure goes to the coordinator, which says once whether the job restarts
    // (a warning) or gives up (an error); the CLI's last line is the failure itself.
    this.#options.logger.debug("task executor failed", { job: this.#plan.jobName, error: this.#failure.message, code: this.#failure.code });
  }

  #shutdown(): void {
    this.queryable.close("the job has ended");
    for (const task of this.tasks) {
      try {
        task.close();
      } catch (e) {
        this.#fail(e, task);
      }
    }
    try {
      this.#deployment.splits.close();
    } catch (e) {
      this.#options.logger.warn("split coordination failed to close", { error: describeCause(e) });
    }
  }

  #deploy(): void {
    const { clock, logger, services, autoWatermarkIntervalMs } = this.#options;
    const deployment = this.#deployment;
    const metricsOn = this.#options.metricsEnabled !== false;

    for (const chain of this.#plan.chains) {
      for (let subtask = 0; subtask < chain.parallelism; subtask++) {
        if (!deployment.owns(chain, subtask)) continue;
        const mailbox = new Mailbox(() => this.wake());
        const pendingWork = new PendingWork(
          () => this.wake(),
          (e) =>
            mailbox.post(() => {
              throw e;
            }),
        );
        const counters = new CounterRegistry();
        const writers: RecordWriter[] = [];
        /** The downstream operator and input of each writer: writers to the same operator push together (RecordWriter.group). */
        const writerTargets = new Map<RecordWriter, { node: PlanNode; inputIndex: number }>();
        const operators = new Map<PlanNode, AnyOperator>();
        const checkpointings = new Map<PlanNode, OperatorCheckpointing>();
        const cp = deployment.checkpoints;
        if (cp !== undefined) {
          for (const node of chain.nodes) {
            const checkpointing = new OperatorCheckpointing(node.operatorId, node.name, cp.restoreFor(node, subtask));
            checkpointings.set(node, checkpointing);
            this.#checkpointings.push([`${node.name}[${subtask}]`, checkpointing]);
          }
        }
        const outputs = new Map<PlanNode, Output<unknown>>();
        /** Per node: the meters of the chained edges into it, its first main output, its user metrics. */
        const metersInto = new Map<PlanNode, EdgeMeter[]>();
        const firstOutputs = new Map<PlanNode, OutputProbe>();
        const groups = new Map<PlanNode, OperatorMetricGroup>();

        // Watermark alignment: the operator a source feeds directly (fromSource's watermarks) may
        // pause the source's reading; the task exists only after its operators, so it is linked later.
        const chainHead = chain.nodes[0]!;
        const headMain = chainHead.transformation.kind === "source" ? chainHead.outputs.filter((e) => e.sideTag === undefined) : [];
        const alignedNode = headMain.length === 1 && headMain[0]!.chained ? headMain[0]!.target : undefined;
        const alignment: { listener?: (maxAllowed: number) => void; task?: StreamTask; reader?: SourceReader<unknown, unknown> } = {};
        const alignmentPort: SourceAlignmentPort = {
          report: (group, watermark, drift) => deployment.splits.reportWatermark(chainHead, subtask, group, watermark, drift),
          onMaxAllowedWatermark: (listener) => {
            alignment.listener = listener;
          },
          setPaused: (paused) => alignment.task?.setAlignmentPaused(paused),
          get splitsPausable() {
            return typeof alignment.reader?.pauseOrResumeSplits === "function";
          },
          pauseOrResumeSplits: (pause, resume) => alignment.reader!.pauseOrResumeSplits!(pause, resume),
          setDriftGauge: (drift) => groups.get(alignedNode!)!.setWatermarkAlignmentDriftGauge(drift),
        };

        // Build tail first so each operator is created with its downstream already in place.
        for (let n = chain.nodes.length - 1; n >= 0; n--) {
          const node = chain.nodes[n]!;
          const main: OutputTarget[] = [];
          const side = new Map<string, OutputTarget[]>();
          let firstOutput: OutputProbe | undefined;
          for (const edge of node.outputs) {
            let target: OutputTarget;
            let probe: OutputProbe;
            if (edge.chained) {
              const meter = metricsOn ? createEdgeMeter() : undefined;
              if (meter !== undefined) metersInto.set(edge.target, [...(metersInto.get(edge.target) ?? []), meter]);
              target = chainedTarget(operators.get(edge.target) as OneInputOperator<unknown>, meter);
              probe = meter === undefined ? NOT_COUNTED : { records: () => meter[0]!, watermark: () => meter[1]! };
            } else {
              const selector = createChannelSelector(edge.partitioner, {
                senderIndex: subtask,
                senderParallelism: node.parallelism,
                receiverParallelism: edge.target.parallelism,
                receiverMaxParallelism: edge.target.maxParallelism,
                receiverName: edge.target.name,
                receiverHandlesBadKeys: handlesBadKeys(edge.target),
              });
              const channels: OutputChannel[] = [];
              for (let r = 0; r < edge.target.parallelism; r++) channels.push(deployment.outputChannel(edge, subtask, r));
              const writer = new RecordWriter(channels, selector, this.#options.batchRecords);
              writers.push(writer);
              writerTargets.set(writer, { node: edge.target, inputIndex: edge.inputIndex });
              const network = new NetworkTarget(writer);
              target = network;
              probe = { records: () => network.recordsOut, watermark: () => network.watermark };
            }
            if (edge.sideTag === undefined) {
              main.push(target);
              firstOutput ??= probe;
            } else side.set(edge.sideTag, [...(side.get(edge.sideTag) ?? []), target]);
          }
          const output = createOutput(main, side);
          outputs.set(node, output);
          if (firstOutput !== undefined) firstOutputs.set(node, firstOutput);
          const group = new OperatorMetricGroup(node.metricName, subtask);
          groups.set(node, group);
          const t = node.transformation;
          if (t.kind === "source") continue;
          const ctx: OperatorContext = {
            operatorName: node.name,
            operatorId: node.operatorId,
            subtaskIndex: subtask,
            parallelism: node.parallelism,
            maxParallelism: node.maxParallelism,
            keyGroupRange: keyGroupRangeForOperator(node.maxParallelism, node.parallelism, subtask),
            keySelectors: node.keySelectors,
            clock,
            logger,
            postMail: (action) => mailbox.post(action),
            job: services,
            autoWatermarkIntervalMs,
            localAggregation: this.#options.localAggregation,
            verifyCopyNone: this.#options.verifyCopyNone,
            counter: (name) => counters.counter(node.metricName, name),
            metrics: group,
            errorPolicy: t.errorPolicy,
            checkpointing: checkpointings.get(node),
            queryable: this.queryable,
            stateBackend: this.#options.stateBackend ?? heapStateBackend,
            awaitWork: (work, kind) => pendingWork.add(work, kind),
            sourceAlignment: node === alignedNode ? alignmentPort : undefined,
          };
          operators.set(node, t.factory(ctx, output));
        }

        const headNode = chain.nodes[0]!;
        const headT = headNode.transformation;
        const taskId = taskIdOf(chain, subtask);
        let head: TaskHead;
        /** The operator a source head feeds directly (its records bypass the chained edge when taken per split). */
        let sourceFed: PlanNode | undefined;
        if (headT.kind === "source") {
          const reader: SourceReader<unknown, unknown> = headT.source.createReader({
            subtaskIndex: subtask,
            parallelism: headNode.parallelism,
            sendSplitRequest: () => deployment.splits.requestSplit(headNode, subtask),
            metrics: groups.get(headNode)!,
            sendSourceEvent: (event) => deployment.splits.requestSplit(headNode, subtask, event),
          });
          alignment.reader = reader;
          const sourceCheckpointing = checkpointings.get(headNode);
          if (sourceCheckpointing !== undefined) {
            // The reader's split positions are the source's state; restored splits go back to it.
            const restored = sourceCheckpointing.registerOperatorState(SOURCE_SPLITS_STATE, "split", (id) => reader.snapshotState(id));
            if (restored !== undefined && restored.length > 0) mailbox.post(() => reader.addSplits(restored));
            if (reader.notifyCheckpointComplete !== undefined) sourceCheckpointing.addListener({ notifyCheckpointComplete: (id) => reader.notifyCheckpointComplete!(id) });
          }
          const sourceOutput = outputs.get(headNode)!;
          const errors = recordErrorPolicy(
            { operatorName: headNode.name, subtaskIndex: subtask, parallelism: headNode.parallelism, errorPolicy: headT.errorPolicy, clock, counter: (name) => counters.counter(headNode.metricName, name) },
            sourceOutput,
          );
          // fromSource chains its Timestamps/Watermarks operator to the source: it takes the
          // records of each split with the split's own watermark generator. The source's main
          // output is that one edge; any other output is a side output (its dead letters, read
          // through deadLetters()), which bad records reach through the source's output as before.
          const mainOutputs = headNode.outputs.filter((e) => e.sideTag === undefined);
          sourceFed = mainOutputs.length === 1 && mainOutputs[0]!.chained ? mainOutputs[0]!.target : undefined;
          const next = sourceFed === undefined ? undefined : operators.get(sourceFed);
          const splits = next !== undefined && "openSplit" in next ? (next as SplitAwareOperator<unknown>) : undefined;
          head = {
            kind: "source",
            name: headNode.name,
            reader,
            output: sourceOutput,
            onBadRecord: (bad) => errors.onBadRecord(bad),
            splits,
            splitsOnRequest: headT.source.splitsOnRequest === true,
          };
          deployment.splits.registerReader(headNode, subtask, {
            addSplits: (splits) => mailbox.post(() => reader.addSplits(splits)),
            notifyNoMoreSplits: () => mailbox.post(() => reader.notifyNoMoreSplits()),
            updateMaxAllowedWatermark: (maxAllowed) => mailbox.post(() => alignment.listener?.(maxAllowed)),
          });
        } else if (headT.kind === "one-input") {
          head = { kind: "one-input", operator: operators.get(headNode) as OneInputOperator<unknown> };
        } else {
          head = { kind: "two-input", operator: operators.get(headNode) as TwoInputOperator<unknown, unknown> };
        }

        const inputs: TaskInput[] = [];
        const perInput = [0, 0];
        /** The upstream subtask of each input, as "chain/subtask": inputs sharing one are peers. */
        const senders: string[] = [];
        for (const edge of headNode.inputs) {
          for (let s = 0; s < edge.source.parallelism; s++) {
            inputs.push({
              channel: deployment.inputChannel(edge, s, subtask),
              inputIndex: edge.inputIndex,
              channelIndex: perInput[edge.inputIndex]!++,
              // Set on every input, so that all have one shape (the task's loop reads it per poll).
              peers: undefined,
            });
            senders.push(`${this.#plan.chains.findIndex((c) => c.nodes.includes(edge.source))}/${s}`);
          }
        }
        for (let i = 0; i < inputs.length; i++) {
          const peers = senders.flatMap((sender, j) => (j !== i && sender === senders[i] ? [j] : []));
          if (peers.length > 0) inputs[i] = { ...inputs[i]!, peers };
        }

        if (writers.length > 1) {
          const sequence = { value: 0 };
          for (const w of writers) {
            w.sequence = sequence;
            const group = writers.filter((other) => writerTargets.get(other)!.node === writerTargets.get(w)!.node);
            if (group.length > 1) w.group = group.sort((a, b) => writerTargets.get(a)!.inputIndex - writerTargets.get(b)!.inputIndex);
          }
        }
        const sourceIdle = new SourceIdleTime(performance.now());
        const task = new StreamTask({
          name: chain.name,
          vertex: String(chain.index),
          subtaskIndex: subtask,
          head,
          inputs,
          operators: chain.nodes.filter((n) => operators.has(n)).map((n) => operators.get(n)!),
          writers,
          mailbox,
          pendingWork,
          counters,
          measuresBusyTime: metricsOn,
          // Read when the task reports (every metrics interval), never per record.
          operatorMetrics: () => {
            const sourceIdleTime = sourceIdle.at(task.recordsIn, performance.now());
            return chain.nodes.map((node, i): OperatorMetrics => {
              const isSource = node.transformation.kind === "source";
              let recordsIn: number;
              let inputWatermark: number;
              if (isSource) [recordsIn, inputWatermark] = [0, Number.NaN];
              else if (i === 0) [recordsIn, inputWatermark] = [task.recordsIn, task.inputWatermark];
              else {
                const meters = metersInto.get(node);
                recordsIn = node === sourceFed ? task.recordsIn : meters === undefined ? Number.NaN : meters.reduce((n, m) => n + m[0]!, 0);
                inputWatermark = meters === undefined ? Number.NaN : Math.max(...meters.map((m) => m[1]!));
              }
              const out = firstOutputs.get(node);
              return {
                name: node.name,
                operatorId: node.operatorId,
                recordsIn,
                // Every record a source's reader emits goes to its output, per split or not.
                recordsOut: isSource ? task.recordsIn : out === undefined ? 0 : out.records(),
                inputWatermark,
                outputWatermark: out === undefined ? Number.NaN : out.watermark(),
                gauges: isSource ? { ...groups.get(node)!.standardGauges(), sourceIdleTime } : groups.get(node)!.standardGauges(),
                counters: counters.of(node.name),
                user: groups.get(node)!.samples(),
              };
            });
          },
          maxRecordsPerSlice: this.#options.maxRecordsPerSlice,
          wake: () => this.wake(),
          checkpointing:
            cp === undefined
              ? undefined
              : {
                  mode: cp.mode,
                  operators: chain.nodes.map((n) => checkpointings.get(n)!),
                  onSnapshot: (barrier, snapshots, timing) => this.#persist(cp, taskId, chain, subtask, barrier, snapshots, timing),
                  onDecline: (id, reason) => cp.declineCheckpoint(taskId, id, reason),
                  onFinished: () => {
                    for (const barrier of this.#triggered.values()) task.snapshotIfFinished(barrier);
                    cp.taskFinished(taskId);
                  },
                  inFlight: () => this.#triggered.size > 0,
                },
        });
        alignment.task = task;
        this.tasks.push(task);
        this.#taskChains.push(chain.index);
        if (headT.kind === "source") this.#sourceTasks.add(task);
      }
    }
  }
}

/** Reads what an operator's first main output edge passed (records, last watermark). */
interface OutputProbe {
  records(): number;
  watermark(): number;
}

/** A chained edge with per-record metrics off: nothing is counted. */
const NOT_COUNTED: OutputProbe = { records: () => Number.NaN, watermark: () => Number.NaN };

/**
 * Whether `node` is a keyed operator whose error policy takes records whose key cannot be
 * computed: the partitioner before it then hands such records on (partitioner.ts).
 */
function handlesBadKeys(node: PlanNode): boolean {
  const t = node.transformation;
  return t.kind === "one-input" && t.keySelector !== undefined && t.errorPolicy !== undefined && t.errorPolicy.policy !== "fail";
}
