/**
 * Pushes elements, watermarks and processing-time advances into one operator (one- or two-input)
 * and records what it emits, without building a job. Mail (processing-time timers) runs after every push, as the task
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
import type {
  BroadcastProcessFunction,
  KeyedBroadcastProcessFunction,
  KeyedProcessFunction,
  KeySelector,
  ProcessFunction,
} from "../runtime/functions.ts";
import { Mailbox } from "../runtime/mailbox.ts";
import { OperatorMetricGroup } from "../runtime/metrics/metric-group.ts";
import { CounterRegistry, type OneInputOperator, type OperatorContext, type Output, type SourceAlignmentPort, type TwoInputOperator } from "../runtime/operator.ts";
import {
  broadcastProcessOperator,
  keyedBroadcastProcessOperator,
  type AnyMapStateDescriptor,
} from "../runtime/operators/broadcast-process-operator.ts";
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
  /**
   * The operator runs as subtask `subtaskIndex` (default 0) of `parallelism` (default 1): it owns
   * that subtask's key groups, and restores as that subtask would (e.g. broadcast state).
   */
  readonly parallelism?: number;
  readonly subtaskIndex?: number;
  /**
   * Whether the operator checks that no value of a `copy: "none"` state is changed in place
   * without being written back (the `state.verify-copy-none` key; default true here, in tests).
   */
  readonly verifyCopyNone?: boolean;
  /**
   * What a source's Timestamps/Watermarks operator reports to and hears from watermark alignment
   * (WatermarkStrategy.withWatermarkAlignment); undefined: the operator is not fed by a source.
   */
  readonly sourceAlignment?: SourceAlignmentPort;
}

/**
 * What every harness shares: the operator's context (manual clock, mailbox, counters,
 * checkpointing), the recorded output, snapshots and the lifecycle. One level of `extends`: the
 * one- and two-input harnesses differ only in how elements are pushed.
 */
abstract class HarnessBase<OP extends { open?(): void; close?(): void }, OUT> {
  readonly clock: ManualClock;
  protected readonly op: OP;
  readonly #mailbox: Mailbox;
  readonly #events: HarnessEvent<OUT>[] = [];
  readonly #side = new Map<string, { value: unknown; timestamp: number | undefined }[]>();
  #opened = false;
  #closed = false;

  readonly #counters = new CounterRegistry();
  /** The user metrics the function registered (RuntimeContext.metrics); `metrics.samples()` reads them. */
  readonly metrics: OperatorMetricGroup;
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
    factory: (ctx: OperatorContext, output: Output<OUT>) => OP,
    keySelectors: readonly (((value: never) => unknown) | undefined)[] | undefined,
    options: HarnessOptions,
  ) {
    this.clock = options.clock ?? new ManualClock(0);
    this.#mailbox = new Mailbox(() => this.#wakeUp());
    const maxParallelism = options.maxParallelism ?? defaultMaxParallelism(1);
    const parallelism = options.parallelism ?? 1;
    const subtaskIndex = options.subtaskIndex ?? 0;
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
      subtaskIndex,
      parallelism,
      maxParallelism,
      keyGroupRange: keyGroupRangeForOperator(maxParallelism, parallelism, subtaskIndex),
      keySelectors: keySelectors as OperatorContext["keySelectors"],
      clock: this.clock,
      logger: silentLogger,
      postMail: (action) => this.#mailbox.post(action),
      job: { jobName: "harness", collect() {}, commitOnce() {}, writeStdout() {} },
      autoWatermarkIntervalMs: 200,
      stateBackend: options.stateBackend ?? heapStateBackend,
      verifyCopyNone: options.verifyCopyNone ?? true,
      sourceAlignment: options.sourceAlignment,
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
      metrics: (this.metrics = new OperatorMetricGroup(options.operatorName ?? "operator-under-test", subtaskIndex)),
      checkpointing: (this.#checkpointing = new OperatorCheckpointing(
        "operator-under-test",
        options.operatorName ?? "operator-under-test",
        options.restore === undefined ? undefined : restoreFromSerialized(options.restore),
      )),
    };
    this.op = factory(ctx, output);
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

  /** The operator under test, for tests that inspect it (e.g. its state size). */
  get operator(): OP {
    return this.op;
  }

  /** Opens the operator (done implicitly by the first push). */
  open(): this {
    if (!this.#opened) {
      this.#opened = true;
      this.op.open?.();
      this.#mailbox.drain();
    }
    return this;
  }

  /** Opens the operator, runs `push` on it, then the mail it posted (as the task loop would). */
  protected push(push: (op: OP) => void): this {
    this.open();
    push(this.op);
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

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.op.close?.();
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

export class OperatorTestHarness<IN, OUT> extends HarnessBase<OneInputOperator<IN>, OUT> {
  constructor(
    factory: (ctx: OperatorContext, output: Output<OUT>) => OneInputOperator<IN>,
    keySelector: ((value: IN) => unknown) | undefined,
    options: HarnessOptions = {},
  ) {
    super(factory, keySelector === undefined ? undefined : [keySelector], options);
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

  processElement(value: IN, timestamp?: number): this {
    return this.push((op) => op.processElement(value, timestamp ?? NO_TIMESTAMP));
  }

  processWatermark(watermark: number): this {
    return this.push((op) => op.processWatermark(watermark));
  }

  processWatermarkStatus(idle: boolean): this {
    return this.push((op) => op.processWatermarkStatus?.(idle));
  }

  endInput(): this {
    return this.push((op) => op.endInput?.());
  }
}

/**
 * A two-input operator under test (a co-process or broadcast function): elements go to input 1
 * or 2; a watermark pushed here is the combined one (the task takes the minimum over both inputs
 * before the operator sees it).
 */
export class TwoInputOperatorTestHarness<IN1, IN2, OUT> extends HarnessBase<TwoInputOperator<IN1, IN2>, OUT> {
  constructor(
    factory: (ctx: OperatorContext, output: Output<OUT>) => TwoInputOperator<IN1, IN2>,
    keySelectors: readonly [((value: IN1) => unknown) | undefined, ((value: IN2) => unknown) | undefined] | undefined,
    options: HarnessOptions = {},
  ) {
    super(factory, keySelectors, options);
  }

  /**
   * A BroadcastProcessFunction: input 1 is the non-broadcast stream, input 2 the broadcast one
   * (`processBroadcastElement`), with the broadcast states of `descriptors`.
   */
  static forBroadcastProcessFunction<IN1, IN2, OUT>(
    fn: BroadcastProcessFunction<IN1, IN2, OUT>,
    descriptors: readonly AnyMapStateDescriptor[],
    options?: HarnessOptions,
  ): TwoInputOperatorTestHarness<IN1, IN2, OUT> {
    return new TwoInputOperatorTestHarness<IN1, IN2, OUT>(broadcastProcessOperator(fn, descriptors), undefined, options);
  }

  /** A KeyedBroadcastProcessFunction: input 1 keyed by `keySelector`, input 2 broadcast. */
  static forKeyedBroadcastProcessFunction<K extends Key, IN1, IN2, OUT>(
    fn: KeyedBroadcastProcessFunction<K, IN1, IN2, OUT>,
    keySelector: KeySelector<IN1, K>,
    descriptors: readonly AnyMapStateDescriptor[],
    options?: HarnessOptions,
  ): TwoInputOperatorTestHarness<IN1, IN2, OUT> {
    return new TwoInputOperatorTestHarness<IN1, IN2, OUT>(keyedBroadcastProcessOperator(fn, descriptors), [keySelector, undefined], options);
  }

  processElement1(value: IN1, timestamp?: number): this {
    return this.push((op) => op.processElement1(value, timestamp ?? NO_TIMESTAMP));
  }

  processElement2(value: IN2, timestamp?: number): this {
    return this.push((op) => op.processElement2(value, timestamp ?? NO_TIMESTAMP));
  }

  /** The broadcast input of a broadcast function (input 2). */
  processBroadcastElement(value: IN2, timestamp?: number): this {
    return this.processElement2(value, timestamp);
  }

  processWatermark(watermark: number): this {
    return this.push((op) => op.processWatermark(watermark));
  }

  processWatermarkStatus(idle: boolean): this {
    return this.push((op) => op.processWatermarkStatus?.(idle));
  }

  endInput(input: 1 | 2): this {
    return this.push((op) => op.endInput?.(input));
  }
}
