/**
 * Inline mode: every subtask of a plan on the calling thread, connected by same-thread channels
 * (queues of references, never encoded). Used by tests with a manual clock, by the operator
 * harness, and for jobs that cannot be rebuilt on a worker thread.
 */
import { describeCause } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { SplitEnumerator } from "../connector/source.ts";
import type { Plan, PlanEdge, PlanNode } from "../graph/plan.ts";
import { LocalChannel } from "../runtime/channels/local-channel.ts";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import { openEnumerator, snapshotEnumerators } from "../connector/source.ts";
import type { CheckpointTargets } from "./checkpoint-runner.ts";
import { TaskExecutor, type CheckpointParticipation, type Deployment, type ExecutorOptions, type ReaderHandle, type SplitCoordination } from "../executor/task-executor.ts";
import { QueryableLocations, serveQueryableStates } from "../queryable/queryable-serving.ts";
import type { Execution, JobResult } from "./execution.ts";

export type { JobResult } from "./execution.ts";
export interface InlineOptions extends ExecutorOptions {
  /** Credit per channel, in records. */
  readonly channelCapacityRecords: number;
  /** Checkpointing: how tasks take part, and the enumerator state to restore (by source operator id). */
  readonly checkpoints?: { readonly participation: CheckpointParticipation; readonly enumeratorState: ((operatorId: string) => unknown) | undefined } | undefined;
  /** The job's token: the queryable state server requires it. */
  readonly token: string;
}

/** Creates one source enumerator per source operator and connects it to that source's readers. */
export class LocalSplitCoordination implements SplitCoordination {
  readonly #readers = new Map<PlanNode, Map<number, ReaderHandle>>();
  readonly #enumerators = new Map<PlanNode, SplitEnumerator<unknown>>();
  readonly #logger: Logger;
  /** Restored enumerator state by source operator id; undefined: a fresh start. */
  readonly #restored: ((operatorId: string) => unknown) | undefined;

  constructor(logger: Logger, restored?: (operatorId: string) => unknown) {
    this.#logger = logger;
    this.#restored = restored;
  }

  /** Split enumerator state per source operator id, for a checkpoint. */
  snapshotEnumerators(checkpointId: number): Record<string, unknown> {
    return snapshotEnumerators([...this.#enumerators].map(([node, e]) => [node.operatorId, e] as const), checkpointId);
  }

  registerReader(node: PlanNode, subtask: number, handle: ReaderHandle): void {
    let readers = this.#readers.get(node);
    if (readers === undefined) this.#readers.set(node, (readers = new Map()));
    readers.set(subtask, handle);
  }

  requestSplit(node: PlanNode, subtask: number): void {
    // Asynchronous like a message to a coordinator: the request never re-enters the reader.
    queueMicrotask(() => this.#enumerators.get(node)?.handleSplitRequest?.(subtask));
  }

  start(): void {
    for (const [node, readers] of this.#readers) {
      const t = node.transformation;
      if (t.kind !== "source") continue;
      const reader = (subtask: number): ReaderHandle => {
        const handle = readers.get(subtask);
        if (handle === undefined) throw new RangeError(`source '${node.name}' has no subtask ${subtask}`);
        return handle;
      };
      const context = {
        parallelism: node.parallelism,
        assignSplits: (subtask: number, splits: readonly unknown[]) => reader(subtask).addSplits(splits),
        signalNoMoreSplits: (subtask: number) => reader(subtask).notifyNoMoreSplits(),
      };
      const enumerator = openEnumerator(t.source, context, this.#restored === undefined ? undefined : { state: this.#restored(node.operatorId) });
      this.#enumerators.set(node, enumerator);
      enumerator.start?.();
      for (let i = 0; i < node.parallelism; i++) enumerator.addReader(i);
    }
  }

  close(): void {
    for (const enumerator of this.#enumerators.values()) {
      try {
        enumerator.close?.();
      } catch (e) {
        this.#logger.warn("split enumerator failed to close", { error: describeCause(e) });
      }
    }
  }
}

class InlineDeployment implements Deployment {
  readonly splits: LocalSplitCoordination;
  readonly checkpoints: CheckpointParticipation | undefined;
  readonly #channels = new Map<PlanEdge, LocalChannel[][]>();
  readonly #capacity: number;

  constructor(capacityRecords: number, logger: Logger, checkpoints: InlineOptions["checkpoints"]) {
    this.#capacity = capacityRecords;
    this.splits = new LocalSplitCoordination(logger, checkpoints?.enumeratorState);
    this.checkpoints = checkpoints?.participation;
  }

  owns(): boolean {
    return true;
  }

  outputChannel(edge: PlanEdge, sender: number, receiver: number): LocalChannel {
    return this.#channel(edge, sender, receiver);
  }

  inputChannel(edge: PlanEdge, sender: number, receiver: number): LocalChannel {
    return this.#channel(edge, sender, receiver);
  }

  #channel(edge: PlanEdge, sender: number, receiver: number): LocalChannel {
    let matrix = this.#channels.get(edge);
    if (matrix === undefined) {
      matrix = [];
      for (let s = 0; s < edge.source.parallelism; s++) {
        const row: LocalChannel[] = [];
        for (let r = 0; r < edge.target.parallelism; r++) row.push(new LocalChannel(this.#capacity));
        matrix.push(row);
      }
      this.#channels.set(edge, matrix);
    }
    return matrix[sender]![receiver]!;
  }
}

export class InlineExecution implements Execution {
  readonly mode = "inline";
  readonly done: Promise<JobResult>;
  /** Inline, tasks are deployed when the execution is constructed. */
  readonly running: Promise<void> = Promise.resolve();
  /** Where the job's queryable states are served (one state server, on this thread). */
  readonly queryable = new QueryableLocations();
  readonly #executor: TaskExecutor;
  readonly #deployment: InlineDeployment;

  constructor(plan: Plan, options: InlineOptions) {
    const startedAtMs = options.clock.now();
    this.#deployment = new InlineDeployment(options.channelCapacityRecords, options.logger, options.checkpoints);
    this.#executor = new TaskExecutor(plan, this.#deployment, options);
    const serving = serveQueryableStates(this.#executor.queryable, {
      token: options.token,
      logger: options.logger,
      onRegistered: (registration) => this.queryable.add(registration),
    });
    const ended = this.#executor.done.finally(() => {
      this.queryable.end();
      return serving.close();
    });
    this.done = ended.then((r) => ({
      jobName: plan.jobName,
      durationMs: options.clock.now() - startedAtMs,
      runningMs: options.clock.now() - startedAtMs,
      sourceRecords: r.sourceRecords,
      metrics: this.#executor.metrics(),
    }));
  }

  get tasks() {
    return this.#executor.tasks;
  }

  cancel(): void {
    this.#executor.cancel();
  }

  /** Ends the job once the mail posted so far has run (TaskExecutor.stop). */
  stop(): void {
    this.#executor.stop();
  }

  /** Fails the job from outside (e.g. too many failed checkpoints). */
  fail(cause: unknown): void {
    this.#executor.fail(cause);
  }

  /** Where the checkpoint runner's commands go. */
  checkpointTargets(): CheckpointTargets {
    const executor = this.#executor;
    return {
      trigger: (barrier, stop) => executor.triggerCheckpoint(barrier, stop),
      resumeSources: () => executor.resumeSources(),
      stop: () => this.stop(),
      notifyComplete: (id) => executor.notifyCheckpointComplete(id),
      abort: (id) => executor.abortCheckpoint(id),
      finalCheckpoint: (barrier) => executor.finalCheckpoint(barrier),
      snapshotEnumerators: (id) => this.#deployment.splits.snapshotEnumerators(id),
      expedite: (work) => executor.expedite(work),
    };
  }

  whenIdle(): Promise<void> {
    return this.#executor.whenIdle();
  }

  get sourceRecords(): number {
    return this.#executor.sourceRecords;
  }

  metrics(): SubtaskMetrics[] {
    return this.#executor.metrics();
  }
}
