/**
 * Pushes elements, watermarks and processing-time advances into one operator and records what it
 * emits, without building a job. Mail (processing-time timers) runs after every push, as the task
 * loop would run it between records.
 */
import type { Sink } from "../connector/sink.ts";
import { sinkOperator } from "../runtime/operators/sink-operator.ts";
import { asyncWaitOperator } from "../runtime/operators/async-wait-operator.ts";
import { asyncFunctionOf, asyncWaitSettings, type AsyncFunctionLike, type AsyncIoOptions } from "../runtime/async-function.ts";
import { errorPolicySpec, type ErrorPolicy } from "../core/error-policy.ts";
import { heapStateBackend } from "../state/heap-keyed-state-backend.ts";
import type { KeyedStateBackendFactory } from "../state/keyed-state-backend.ts";
import { ManualClock } from "../core/clock.ts";
import type { Key } from "../core/key.ts";
import { defaultMaxParallelism, keyGroupRangeForOperator } from "../core/key-group.ts";
import { silentLogger } from "../core/logger.ts";
import type { OutputTag } from "../core/output-tag.ts";
import { hasTimestamp, NO_TIMESTAMP } from "../core/time.ts";
import type { KeyedProcessFunction, KeySelector, ProcessFunction } from "../runtime/functions.ts";
import { Mailbox } from "../runtime/mailbox.ts";
import { CounterRegistry, type OneInputOperator, type OperatorContext, type Output } from "../runtime/operator.ts";
import { keyedProcessOperator } from "../runtime/operators/keyed-process-operator.ts";
import { requireFunctionObject, type FunctionObjectOrFactory } from "../runtime/operators/function-instance.ts";
import { processOperator } from "../runtime/operators/process-operator.ts";
import {
  OperatorCheckpointing,
  restoreFromSerialized,
  serializeTaskSnapshot,
  type SerializedOperatorSnapshot,
} from "../runtime/checkpointing.ts";

export type HarnessEvent<T> =
  | { readonly type: "record"; readonly value: T; readonly timestamp: number | undefined }
  | { readonly type: "watermark"; readonly watermark: number }
  | { readonly type: "status"; readonly idle: boolean };

export interface HarnessOptions {
  /** Drives processing time; a fresh ManualClock at 0 by default. */
  readonly clock?: ManualClock;
  readonly maxParallelism?: number;
  readonly operatorName?: string;
  /** Starts the operator from a snapshot another harness took (`await harness.snapshot()`). */
  readonly restore?: SerializedOperatorSnapshot;
  /** The keyed state backend of a keyed operator (default: the heap backend). */
  readonly stateBackend?: KeyedStateBackendFactory;
  /** The operator's error policy, as `.onError(...)` sets it (default: fail). */
  readonly errorPolicy?: ErrorPolicy;
}

export class OperatorTestHarness<IN, OUT> {
  readonly clock: ManualClock;
  readonly #operator: OneInputOperator<IN>;
  readonly #mailbox: Mailbox;
  readonly #events: HarnessEvent<OUT>[] = [];
  readonly #side = new Map<string, { value: unknown; timestamp: number | undefined }[]>();
  #opened = false;
  #closed = false;

  readonly #counters = new CounterRegistry();
  readonly #checkpointing: OperatorCheckpointing;
  /** Asynchronous work the operator started (awaitWork), until `settled()` sees it settled. */
  readonly #work: { settled: boolean; failed: boolean; error: unknown }[] = [];
  /** Blocking work pending (awaitWork(…, "blocking")): a task would take no input now. */
  #blocking = 0;
  /** Resolves the promise `settled()` waits on: work settled or mail arrived. */
  #wake: (() => void) | undefined;

  /** The operator's counters, by "<operator>.<name>". */
  counters(): Record<string, number> {
    return this.#counters.snapshot();
  }

  constructor(
    factory: (ctx: OperatorContext, output: Output<OUT>) => OneInputOperator<IN>,
    keySelector: ((value: IN) => unknown) | undefined,
    options: HarnessOptions = {},
  ) {
    this.clock = options.clock ?? new ManualClock(0);
    this.#mailbox = new Mailbox(() => this.#wakeUp());
    const maxParallelism = options.maxParallelism ?? defaultMaxParallelism(1);
    const ts = (t: number): number | undefined => (hasTimestamp(t) ? t : undefined);
    const output: Output<OUT> = {
      collect: (value, timestamp) => void this.#events.push({ type: "record", value, timestamp: ts(timestamp) }),
      collectSide: (tag, value, timestamp) => {
        let list = this.#side.get(tag.id);
        if (list === undefined) this.#side.set(tag.id, (list = []));
        list.push({ value, timestamp: ts(timestamp) });
      },
      emitWatermark: (watermark) => void this.#events.push({ type: "watermark", watermark }),
      emitWatermarkStatus: (idle) => void this.#events.push({ type: "status", idle }),
    };
    const ctx: OperatorContext = {
      operatorName: options.operatorName ?? "operator-under-test",
      operatorId: "operator-under-test",
      subtaskIndex: 0,
      parallelism: 1,
      maxParallelism,
      keyGroupRange: keyGroupRangeForOperator(maxParallelism, 1, 0),
      keySelectors: keySelector === undefined ? undefined : [keySelector],
      clock: this.clock,
      logger: silentLogger,
      postMail: (action) => this.#mailbox.post(action),
      job: { jobName: "harness", collect() {}, commitOnce() {}, writeStdout() {} },
      autoWatermarkIntervalMs: 200,
      stateBackend: options.stateBackend ?? heapStateBackend,
      errorPolicy: options.errorPolicy === undefined ? undefined : errorPolicySpec(options.errorPolicy),
      awaitWork: (work, kind) => {
        const entry = { settled: false, failed: false, error: undefined as unknown };
        this.#work.push(entry);
        if (kind === "blocking") this.#blocking++;
        const settle = (): void => {
          entry.settled = true;
          if (kind === "blocking") this.#blocking--;
          this.#wakeUp();
        };
        work.then(settle, (e: unknown) => {
          entry.failed = true;
          entry.error = e;
          settle();
        });
      },
      counter: (name) => this.#counters.counter(options.operatorName ?? "operator-under-test", name),
      checkpointing: (this.#checkpointing = new OperatorCheckpointing(
        "operator-under-test",
        options.operatorName ?? "operator-under-test",
        options.restore === undefined ? undefined : restoreFromSerialized(options.restore),
      )),
    };
    this.#operator = factory(ctx, output);
  }

  /**
   * Takes a checkpoint of the operator, as a task would at a barrier: keyed state, timers, the
   * watermark and operator state. Start another harness from it with `{ restore: snapshot }`.
   */
  async snapshot(checkpointId = 1): Promise<SerializedOperatorSnapshot> {
    this.open();
    const { sections, operators } = await serializeTaskSnapshot([this.#checkpointing.snapshot(checkpointId)]);
    return { checkpointId, meta: operators[0]!, sections };
  }

  /**
   * Resolves once the asynchronous work the operator started (a sink's writes, flush, commits) has
   * settled, and the mail it posted has run; rejects with the first work that failed (which would
   * fail its task).
   */
  async settled(): Promise<void> {
    // Mail runs while work is pending, as on a task: some work (an async I/O operator's end of
    // input) settles only once the mail its requests posted has run.
    for (;;) {
      this.#mailbox.drain();
      const failed = this.#work.findIndex((w) => w.failed);
      if (failed >= 0) throw this.#work.splice(failed, 1)[0]!.error;
      for (let i = this.#work.length - 1; i >= 0; i--) if (this.#work[i]!.settled) this.#work.splice(i, 1);
      if (this.#work.length === 0 && !this.#mailbox.hasMail) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /**
   * One step of a task between records, without waiting for pending work: lets promises that
   * have settled call back (two turns of the event loop), then runs the mail they posted.
   */
  async runMail(): Promise<this> {
    const turn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
    // Two turns: settled promises call back in the first, and what they defer to the next
    // event-loop turn (an async I/O operator posts its mail from setImmediate) runs in the second.
    await turn();
    await turn();
    this.#mailbox.drain();
    // And the callbacks of work the mail settled (so `blocked` is up to date).
    await turn();
    return this;
  }

  /** Whether the operator holds back its input (blocking work pending, e.g. a full async I/O queue). */
  get blocked(): boolean {
    return this.#blocking > 0;
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Tells the operator that checkpoint `checkpointId` is complete (sinks commit). */
  notifyCheckpointComplete(checkpointId: number): this {
    this.#checkpointing.notifyCheckpointComplete(checkpointId);
    this.#mailbox.drain();
    return this;
  }

  /** `fn`: the function object or a factory of it, as `DataStream.process` takes it. */
  static forProcessFunction<IN, OUT>(fn: FunctionObjectOrFactory<ProcessFunction<IN, OUT>>, options?: HarnessOptions): OperatorTestHarness<IN, OUT> {
    return new OperatorTestHarness<IN, OUT>(processOperator(requireFunctionObject(fn, "process", ["processElement"])), undefined, options);
  }

  static forKeyedProcessFunction<K extends Key, IN, OUT>(
    fn: FunctionObjectOrFactory<KeyedProcessFunction<K, IN, OUT>>,
    keySelector: KeySelector<IN, K>,
    options?: HarnessOptions,
  ): OperatorTestHarness<IN, OUT> {
    return new OperatorTestHarness<IN, OUT>(keyedProcessOperator(requireFunctionObject(fn, "process", ["processElement"])), keySelector, options);
  }

  /**
   * A sink under test, run as a job runs it (sinkOperator): writes whose promises make it wait,
   * committables and writer state in `snapshot()`, commits on `notifyCheckpointComplete`; await
   * `settled()` for its asynchronous work.
   */
  static forSink<T>(sink: Sink<T>, options?: HarnessOptions): OperatorTestHarness<T, never> {
    return new OperatorTestHarness<T, never>(sinkOperator(sink), undefined, options);
  }

  /**
   * Async I/O under test (AsyncDataStream.orderedWait / unorderedWait with `ordered: false`):
   * drive processing time (timeouts, retry delays) with the harness clock, and await `settled()`
   * for requests to complete and their results to be emitted.
   */
  static forAsyncFunction<IN, OUT>(
    fn: AsyncFunctionLike<IN, OUT>,
    options: AsyncIoOptions<OUT> & { readonly ordered: boolean },
    harnessOptions?: HarnessOptions,
  ): OperatorTestHarness<IN, OUT> {
    const { ordered, ...rest } = options;
    const what = ordered ? "orderedWait" : "unorderedWait";
    return new OperatorTestHarness<IN, OUT>(asyncWaitOperator(asyncFunctionOf(fn, what), asyncWaitSettings(rest, ordered, what)), undefined, harnessOptions);
  }

  /** The operator under test, for tests that inspect it (e.g. its state size). */
  get operator(): OneInputOperator<IN> {
    return this.#operator;
  }

  /** Opens the operator (done implicitly by the first push). */
  open(): this {
    if (!this.#opened) {
      this.#opened = true;
      this.#operator.open?.();
      this.#mailbox.drain();
    }
    return this;
  }

  processElement(value: IN, timestamp?: number): this {
    this.open();
    this.#operator.processElement(value, timestamp ?? NO_TIMESTAMP);
    this.#mailbox.drain();
    return this;
  }

  processWatermark(watermark: number): this {
    this.open();
    this.#operator.processWatermark(watermark);
    this.#mailbox.drain();
    return this;
  }

  processWatermarkStatus(idle: boolean): this {
    this.open();
    this.#operator.processWatermarkStatus?.(idle);
    this.#mailbox.drain();
    return this;
  }

  /** Moves processing time to `timeMs` and runs the timers that became due. */
  setProcessingTime(timeMs: number): this {
    this.open();
    this.clock.advanceTo(timeMs);
    this.#mailbox.drain();
    return this;
  }

  advanceProcessingTime(ms: number): this {
    return this.setProcessingTime(this.clock.now() + ms);
  }

  endInput(): this {
    this.open();
    this.#operator.endInput?.();
    this.#mailbox.drain();
    return this;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#operator.close?.();
  }

  /** Everything emitted on the main output, in order. */
  output(): HarnessEvent<OUT>[] {
    return [...this.#events];
  }

  /** Values of the records emitted on the main output. */
  records(): OUT[] {
    return this.#events.flatMap((e) => (e.type === "record" ? [e.value] : []));
  }

  watermarks(): number[] {
    return this.#events.flatMap((e) => (e.type === "watermark" ? [e.watermark] : []));
  }

  sideOutput<S>(tag: OutputTag<S>): { value: S; timestamp: number | undefined }[] {
    return [...((this.#side.get(tag.id) ?? []) as { value: S; timestamp: number | undefined }[])];
  }

  clearOutput(): void {
    this.#events.length = 0;
    this.#side.clear();
  }
}
