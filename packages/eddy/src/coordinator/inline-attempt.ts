/**
 * Inline mode: every subtask of a plan on the calling thread, connected by same-thread channels
 * (queues of references, never encoded). Used by tests with a manual clock, by the operator
 * harness, and for jobs that cannot be rebuilt on a worker thread.
 */
import type { Plan, PlanEdge } from "../graph/plan.ts";
import { LocalChannel } from "../runtime/channels/local-channel.ts";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import type { CheckpointTargets } from "./checkpoint-runner.ts";
import { TaskExecutor, type CheckpointParticipation, type Deployment, type ExecutorOptions } from "../executor/task-executor.ts";
import { SourceReaders, TaskManager } from "../executor/task-manager.ts";
import { checkProtocolVersion } from "../executor/gateway.ts";
import { SourceCoordinators } from "./source-coordinators.ts";
import { QueryableLocations, serveQueryableStates } from "../queryable/queryable-serving.ts";
import { broadcastCheckpointTargets, type ExecutionAttempt, type JobResult } from "./execution-attempt.ts";

export type { JobResult } from "./execution-attempt.ts";
export interface InlineOptions extends ExecutorOptions {
  /** Credit per channel, in records. */
  readonly channelCapacityRecords: number;
  /** Checkpointing: how tasks take part, and the enumerator state to restore (by source operator id). */
  readonly checkpoints?: { readonly participation: CheckpointParticipation; readonly enumeratorState: ((operatorId: string) => unknown) | undefined } | undefined;
  /** The job's token: the queryable state server requires it. */
  readonly token: string;
}

class InlineDeployment implements Deployment {
  readonly splits: SourceReaders;
  readonly checkpoints: CheckpointParticipation | undefined;
  readonly #channels = new Map<PlanEdge, LocalChannel[][]>();
  readonly #capacity: number;

  constructor(capacityRecords: number, splits: SourceReaders, checkpoints: CheckpointParticipation | undefined) {
    this.#capacity = capacityRecords;
    this.splits = splits;
    this.checkpoints = checkpoints;
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

export class InlineAttempt implements ExecutionAttempt {
  readonly mode = "inline";
  readonly done: Promise<JobResult>;
  /** Inline, tasks are deployed when the execution is constructed. */
  readonly running: Promise<void> = Promise.resolve();
  /** Where the job's queryable states are served (one state server, on this thread). */
  readonly queryable = new QueryableLocations();
  readonly #executor: TaskExecutor;
  /** The one task manager, called directly (gateway.ts). */
  readonly #taskManager: TaskManager;
  readonly #sources: SourceCoordinators;

  constructor(plan: Plan, options: InlineOptions) {
    const startedAtMs = options.clock.now();
    this.#sources = new SourceCoordinators(plan, () => this.#taskManager, options.checkpoints?.enumeratorState, options.logger, (cause) =>
      this.#executor.fail(cause),
    );
    // The coordinator's side of the gateway, as far as a task manager on this thread uses it:
    // checkpoint reports go straight to the participation's owner (the checkpoint runner).
    const readers = new SourceReaders(
      plan,
      {
        registerTaskManager: (version) => {
          checkProtocolVersion(version, "the inline task manager");
          this.#sources.start();
        },
        // Asynchronous like a message to a coordinator: the request never re-enters the reader.
        requestSplit: (node, subtask, event) => queueMicrotask(() => this.#sources.handleSplitRequest(node, subtask, event)),
        // Asynchronous too: the answer reaches the task as mail, never inside the report.
        reportWatermark: (node, subtask, group, watermark, drift) =>
          queueMicrotask(() => {
            try {
              this.#sources.reportWatermark(node, subtask, group, watermark, drift);
            } catch (e) {
              this.#executor.fail(e);
            }
          }),
      },
      "the inline task manager",
    );
    this.#executor = new TaskExecutor(plan, new InlineDeployment(options.channelCapacityRecords, readers, options.checkpoints?.participation), options);
    const serving = serveQueryableStates(this.#executor.queryable, {
      token: options.token,
      logger: options.logger,
      onRegistered: (registration) => this.queryable.add(registration),
    });
    this.#taskManager = new TaskManager(this.#executor, readers, () => serving.close(), { serversClosed: () => {} });
    const ended = this.#executor.done.finally(() => {
      this.#sources.close();
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
    this.#taskManager.cancel();
  }

  /** Ends the job once the calls made so far have been acted on (TaskExecutor.stop). */
  stop(): void {
    this.#taskManager.stop();
  }

  /** Fails the job from outside (e.g. too many failed checkpoints). */
  fail(cause: unknown): void {
    this.#executor.fail(cause);
  }

  /** Where the checkpoint runner's commands go: the one task manager, called directly. */
  checkpointTargets(): CheckpointTargets {
    return broadcastCheckpointTargets({
      taskManagers: () => [this.#taskManager],
      sources: this.#sources,
      stop: () => this.stop(),
      expedite: (work) => this.#executor.expedite(work),
    });
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
