/**
 * Runs a plan with every subtask on the calling thread ("inline" mode): the executor of tests and
 * of `eddy run` until worker threads take over. It instantiates tasks, wires channels, assigns
 * source splits, and drives all tasks with one cooperative loop: run every runnable task for one
 * slice, yield to the event loop, and sleep when nothing is runnable until mail or source data
 * wakes it.
 */
import type { Clock } from "../core/clock.ts";
import { describeCause, EddyError } from "../core/errors.ts";
import { keyGroupRangeForOperator } from "../core/key-group.ts";
import type { Logger } from "../core/logger.ts";
import type { SourceReader, SplitEnumerator } from "../connector/source.ts";
import type { Plan, PlanEdge, PlanNode } from "../graph/plan.ts";
import { LocalChannel } from "../runtime/channels/local-channel.ts";
import { createChannelSelector } from "../runtime/channels/partitioner.ts";
import { RecordWriter } from "../runtime/channels/record-writer.ts";
import { Mailbox } from "../runtime/mailbox.ts";
import type { JobServices, OneInputOperator, OperatorContext, Output, TwoInputOperator } from "../runtime/operator.ts";
import { ChainedTarget, createOutput, NetworkTarget, type OutputTarget } from "../runtime/outputs.ts";
import { StreamTask, type TaskHead, type TaskInput } from "../runtime/stream-task.ts";

export interface ExecutorOptions {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly services: JobServices;
  readonly autoWatermarkIntervalMs: number;
  /** Credit per channel, in records. */
  readonly channelCapacityRecords: number;
  /** Records per batch on a channel. */
  readonly batchRecords: number;
  readonly maxRecordsPerSlice: number;
}

export interface JobResult {
  readonly jobName: string;
  readonly durationMs: number;
  /** Records read by source subtasks. */
  readonly sourceRecords: number;
}

type AnyOperator = OneInputOperator<unknown> | TwoInputOperator<unknown, unknown>;

export class InlineExecution {
  readonly done: Promise<JobResult>;
  readonly tasks: StreamTask[] = [];
  readonly #plan: Plan;
  readonly #options: ExecutorOptions;
  readonly #enumerators: SplitEnumerator<unknown>[] = [];
  readonly #enumeratorOf = new Map<PlanNode, SplitEnumerator<unknown>>();
  readonly #sourceTasks = new Set<StreamTask>();
  #wakeup: (() => void) | undefined;
  #failure: EddyError | undefined;
  #cancelled = false;
  #idleWaiters: (() => void)[] = [];
  readonly #startedAtMs: number;

  constructor(plan: Plan, options: ExecutorOptions) {
    this.#plan = plan;
    this.#options = options;
    this.#startedAtMs = options.clock.now();
    this.done = this.#deployAndRun();
  }

  /** Stops the job; `done` then rejects with a cancellation error. Idempotent. */
  cancel(): void {
    this.#cancelled = true;
    this.#wake();
  }

  /** Resolves the next time no task is runnable (all wait for time or data) or the job ended. */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.#idleWaiters.push(resolve);
      this.#wake();
    });
  }

  /** Records read by all source subtasks so far. */
  get sourceRecords(): number {
    let n = 0;
    for (const task of this.#sourceTasks) n += task.recordsIn;
    return n;
  }

  #wake(): void {
    const wake = this.#wakeup;
    this.#wakeup = undefined;
    wake?.();
  }

  async #deployAndRun(): Promise<JobResult> {
    // Let the caller attach handlers before anything can fail.
    await Promise.resolve();
    try {
      this.#deploy();
      for (const task of this.tasks) task.open();
      await this.#loop();
    } catch (e) {
      this.#fail(e);
    }
    this.#shutdown();
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
    if (this.#failure !== undefined) throw this.#failure;
    return {
      jobName: this.#plan.jobName,
      durationMs: this.#options.clock.now() - this.#startedAtMs,
      sourceRecords: this.sourceRecords,
    };
  }

  async #loop(): Promise<void> {
    const tasks = this.tasks;
    let lastYield = Date.now();
    while (this.#failure === undefined) {
      if (this.#cancelled) {
        this.#failure = new EddyError("JOB_CANCELLED", `job '${this.#plan.jobName}' was cancelled`, { domain: "user" });
        return;
      }
      let allFinished = true;
      let progressed = false;
      for (let i = 0; i < tasks.length; i++) {
        const task = tasks[i]!;
        if (task.isRunnable) {
          progressed = true;
          try {
            task.runSlice();
          } catch (e) {
            this.#fail(e, task);
            return;
          }
        }
        if (!task.isFinished) allFinished = false;
      }
      if (allFinished) return;
      if (!progressed) {
        for (const resolve of this.#idleWaiters.splice(0)) resolve();
        await new Promise<void>((resolve) => {
          this.#wakeup = resolve;
        });
      } else if (Date.now() - lastYield > 10) {
        // Let timers and I/O run; a job never starves the event loop for long.
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = Date.now();
      }
    }
  }

  #fail(cause: unknown, task?: StreamTask): void {
    if (this.#failure !== undefined) return;
    if (cause instanceof EddyError) {
      this.#failure = cause;
    } else {
      const where = task === undefined ? "" : ` in task '${task.name}' (subtask ${task.subtaskIndex})`;
      this.#failure = new EddyError("TASK_FAILED", `job '${this.#plan.jobName}' failed${where}: ${describeCause(cause)}`, {
        domain: "internal",
        cause,
      });
    }
    this.#options.logger.error("job failed", { job: this.#plan.jobName, error: this.#failure.message, code: this.#failure.code });
  }

  #shutdown(): void {
    for (const task of this.tasks) {
      try {
        task.close();
      } catch (e) {
        this.#fail(e, task);
      }
    }
    for (const enumerator of this.#enumerators) {
      try {
        enumerator.close?.();
      } catch (e) {
        this.#options.logger.warn("split enumerator failed to close", { error: describeCause(e) });
      }
    }
  }

  #deploy(): void {
    const { clock, logger, services, autoWatermarkIntervalMs } = this.#options;
    /** channels[edgeId][sender][receiver] */
    const edgeIds = new Map<PlanEdge, number>();
    const channels: LocalChannel[][][] = [];
    for (const node of this.#plan.nodes) {
      for (const edge of node.outputs) {
        if (edge.chained) continue;
        edgeIds.set(edge, channels.length);
        const matrix: LocalChannel[][] = [];
        for (let s = 0; s < edge.source.parallelism; s++) {
          const row: LocalChannel[] = [];
          for (let r = 0; r < edge.target.parallelism; r++) row.push(new LocalChannel(this.#options.channelCapacityRecords));
          matrix.push(row);
        }
        channels.push(matrix);
      }
    }

    const readersBySource = new Map<PlanNode, SourceReader<unknown, unknown>[]>();
    const mailboxesBySource = new Map<PlanNode, Mailbox[]>();

    for (const chain of this.#plan.chains) {
      for (let subtask = 0; subtask < chain.parallelism; subtask++) {
        const mailbox = new Mailbox(() => this.#wake());
        const writers: RecordWriter[] = [];
        const operators = new Map<PlanNode, AnyOperator>();
        const outputs = new Map<PlanNode, Output<unknown>>();

        // Build tail first so each operator is created with its downstream already in place.
        for (let n = chain.nodes.length - 1; n >= 0; n--) {
          const node = chain.nodes[n]!;
          const main: OutputTarget[] = [];
          const side = new Map<string, OutputTarget[]>();
          for (const edge of node.outputs) {
            let target: OutputTarget;
            if (edge.chained) {
              target = new ChainedTarget(operators.get(edge.target) as OneInputOperator<unknown>);
            } else {
              const selector = createChannelSelector(edge.partitioner, {
                senderIndex: subtask,
                senderParallelism: node.parallelism,
                receiverParallelism: edge.target.parallelism,
                receiverMaxParallelism: edge.target.maxParallelism,
                receiverName: edge.target.name,
              });
              const writer = new RecordWriter(channels[edgeIds.get(edge)!]![subtask]!, selector, this.#options.batchRecords);
              writers.push(writer);
              target = new NetworkTarget(writer);
            }
            if (edge.sideTag === undefined) main.push(target);
            else side.set(edge.sideTag, [...(side.get(edge.sideTag) ?? []), target]);
          }
          const output = createOutput(main, side);
          outputs.set(node, output);
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
          };
          operators.set(node, t.factory(ctx, output));
        }

        const headNode = chain.nodes[0]!;
        const headT = headNode.transformation;
        let head: TaskHead;
        if (headT.kind === "source") {
          const reader = headT.source.createReader({
            subtaskIndex: subtask,
            parallelism: headNode.parallelism,
            sendSplitRequest: () => {
              const enumerator = this.#enumeratorOf.get(headNode);
              queueMicrotask(() => enumerator?.handleSplitRequest?.(subtask));
            },
          });
          head = { kind: "source", reader, output: outputs.get(headNode)! };
          readersBySource.set(headNode, [...(readersBySource.get(headNode) ?? []), reader]);
          mailboxesBySource.set(headNode, [...(mailboxesBySource.get(headNode) ?? []), mailbox]);
        } else if (headT.kind === "one-input") {
          head = { kind: "one-input", operator: operators.get(headNode) as OneInputOperator<unknown> };
        } else {
          head = { kind: "two-input", operator: operators.get(headNode) as TwoInputOperator<unknown, unknown> };
        }

        const inputs: TaskInput[] = [];
        const perInput = [0, 0];
        for (const edge of headNode.inputs) {
          const matrix = channels[edgeIds.get(edge)!]!;
          for (let s = 0; s < edge.source.parallelism; s++) {
            inputs.push({ channel: matrix[s]![subtask]!, inputIndex: edge.inputIndex, channelIndex: perInput[edge.inputIndex]!++ });
          }
        }

        const task = new StreamTask({
          name: chain.name,
          subtaskIndex: subtask,
          head,
          inputs,
          operators: chain.nodes.filter((n) => operators.has(n)).map((n) => operators.get(n)!),
          writers,
          mailbox,
          maxRecordsPerSlice: this.#options.maxRecordsPerSlice,
          wake: () => this.#wake(),
        });
        this.tasks.push(task);
        if (headT.kind === "source") this.#sourceTasks.add(task);
      }
    }

    // The coordinator side of sources: one enumerator per source operator.
    for (const [node, readers] of readersBySource) {
      const t = node.transformation;
      if (t.kind !== "source") continue;
      const mailboxes = mailboxesBySource.get(node)!;
      const enumerator = t.source.createEnumerator({
        parallelism: node.parallelism,
        assignSplits: (subtask, splits) => mailboxes[subtask]!.post(() => readers[subtask]!.addSplits(splits)),
        signalNoMoreSplits: (subtask) => mailboxes[subtask]!.post(() => readers[subtask]!.notifyNoMoreSplits()),
      });
      this.#enumeratorOf.set(node, enumerator);
      this.#enumerators.push(enumerator);
      enumerator.start?.();
      for (let i = 0; i < readers.length; i++) enumerator.addReader(i);
    }
  }
}
