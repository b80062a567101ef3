/**
 * A task runs one subtask of a chain: its head (a source reader or the first operator), the
 * operators chained behind it, and the record writers of its network outputs. Its loop is Flink's
 * mailbox loop: `runSlice` runs pending mail, then processes input up to a budget, then returns so
 * the executor can run other tasks and the event loop can breathe. Nothing here awaits.
 *
 * Invariants: the task is driven by one caller, never concurrently; input is taken only while
 * every output channel has credit (backpressure); a watermark reaches the head only once the
 * valve of its input says it advanced; operators see endInput only after the MAX watermark.
 */
import { EddyError } from "../core/errors.ts";
import { END_OF_INPUT, type CheckpointBarrier, type StreamElement } from "../core/elements.ts";
import { BarrierAligner, type AlignerResult } from "../checkpoint/barrier-aligner.ts";
import type { OperatorCheckpointing, OperatorSnapshot } from "./checkpointing.ts";
import { MAX_WATERMARK, MIN_WATERMARK, NO_TIMESTAMP } from "../core/time.ts";
import { badRecordError, type BadRecord, type ReaderOutput, type SourceOutput, type SourceReader } from "../connector/source.ts";
import type { PendingWork } from "./pending-work.ts";
import { CONTROL_AT_HEAD, type InputChannel } from "./channels/channel.ts";
import type { RecordWriter } from "./channels/record-writer.ts";
import type { Mailbox } from "./mailbox.ts";
import type { CounterRegistry, OneInputOperator, Output, SplitAwareOperator, TwoInputOperator } from "./operator.ts";
import { StatusWatermarkValve } from "./watermark-valve.ts";
import type { OperatorMetrics } from "./metrics/operator-metrics.ts";

export type TaskHead =
  /**
   * `name`: the source operator's (errors name it, not the chain). `onBadRecord`: what the
   * source's error policy does with input its reader cannot read (runtime/record-error-policy.ts);
   * undefined: the job fails with BAD_RECORD.
   */
  | {
      readonly kind: "source";
      readonly name: string;
      readonly reader: SourceReader<unknown, unknown>;
      readonly output: Output<unknown>;
      readonly onBadRecord?: ((bad: BadRecord) => void) | undefined;
      /**
       * The operator chained after the source when it takes records per split (fromSource's
       * Timestamps/Watermarks): split outputs of the reader feed it. Undefined: a split's output
       * is the reader's output.
       */
      readonly splits?: SplitAwareOperator<unknown> | undefined;
      /** The source hands its splits out on request (Source.splitsOnRequest): it may sit out rounds (mayYield). */
      readonly splitsOnRequest?: boolean;
    }
  | { readonly kind: "one-input"; readonly operator: OneInputOperator<unknown> }
  | { readonly kind: "two-input"; readonly operator: TwoInputOperator<unknown, unknown> };

/**
 * While a checkpoint is in flight, a slice also ends once it has run this long (checked after each
 * source poll or input element, i.e. every ≤ ~1,000 records). Between slices the executor lets the
 * event loop run, and a checkpoint's asynchronous steps (snapshot writes, acknowledgements, the
 * manifest, commits) advance one event-loop turn at a time: with slow records (a map taking 20 µs
 * each), a slice of 8,192 records kept the loop away for ~160 ms, and a checkpoint took as long as
 * the rest of the input (test: "checkpoints complete while user functions are slow"). Otherwise
 * slices stay bounded by records only, so that how the tasks of one thread interleave does not
 * depend on timing: an inline run without checkpoints processes records in the same order every
 * time (the golden savepoint tests rely on it).
 */
const MAX_SLICE_MS = 5;

export interface TaskInput {
  readonly channel: InputChannel;
  /** Which logical input of the head (0, or 1 for the second input of a two-input operator). */
  readonly inputIndex: 0 | 1;
  /** Index of this channel among the channels of its logical input (for the valve). */
  readonly channelIndex: number;
  /**
   * The other inputs fed by the same upstream subtask (over another edge of the same upstream
   * task), when there are any: their batches carry comparable `seq`s, and the one pushed first is
   * read first.
   */
  readonly peers?: readonly number[];
}

export interface StreamTaskOptions {
  readonly name: string;
  /** The task's vertex id in the plan (its chain's index, as the REST API names vertices): unique where names may repeat. */
  readonly vertex?: string;
  readonly subtaskIndex: number;
  readonly head: TaskHead;
  readonly inputs: readonly TaskInput[];
  /** Every operator of the chain in topological order, head first (the source head has none). */
  readonly operators: readonly (OneInputOperator<unknown> | TwoInputOperator<unknown, unknown>)[];
  readonly writers: readonly RecordWriter[];
  readonly mailbox: Mailbox;
  /** Operator counters of this task (e.g. late records dropped by a window). */
  readonly counters?: CounterRegistry;
  /** Reads the metrics of each operator of the chain when the task reports (undefined: none). */
  readonly operatorMetrics?: () => OperatorMetrics[];
  /** Whether the executor measures busy time (addBusyTime); with per-record metrics off, it does not. */
  readonly measuresBusyTime?: boolean;
  /** Records processed per slice before the task yields (a slice also ends after MAX_SLICE_MS). */
  readonly maxRecordsPerSlice: number;
  /** Called once when the source reader says data may be available again. */
  readonly wake: () => void;
  /** Checkpointing of this task; undefined when checkpointing is off. */
  readonly checkpointing?: TaskCheckpointing | undefined;
  /** Asynchronous work of the task's operators (OperatorContext.awaitWork); see pending-work.ts. */
  readonly pendingWork: PendingWork;
}

/**
 * How a task takes part in checkpoints (see runtime/checkpointing.ts and
 * docs/design/checkpoint-protocol.md).
 */
export interface TaskCheckpointing {
  readonly mode: "exactly-once" | "at-least-once";
  /** Checkpoint parts of every node of the chain (source node included), head first. */
  readonly operators: readonly OperatorCheckpointing[];
  /**
   * The synchronous part of checkpoint `barrier.checkpointId` is done and the barrier forwarded:
   * the executor persists `snapshots` asynchronously and acknowledges.
   */
  readonly onSnapshot: (barrier: CheckpointBarrier, snapshots: OperatorSnapshot[], timing: { alignmentMs: number; syncMs: number }) => void;
  /** The task gave up a checkpoint (a newer barrier overtook it, or it cannot take it). */
  readonly onDecline: (checkpointId: number, reason: string) => void;
  /** The task consumed all its input: it takes part in no further checkpoint. */
  readonly onFinished: () => void;
  /** Whether a checkpoint is in flight (triggered, not yet complete or aborted): slices are then bounded by time too. */
  readonly inFlight: () => boolean;
}

/**
 * `finishing`: every input has ended and the operators are being ended, one after another, each
 * once the asynchronous work the one before started (a sink's flush) has settled.
 */
export type TaskState = "created" | "running" | "finishing" | "finished" | "closed";

/** How a source task stops at a stop-with-savepoint barrier. */
export interface SourceStop {
  /** Emit the end-of-time watermark before the barrier. */
  readonly drain: boolean;
}

/** What the runtime counts per subtask; readable from the job handle. */
export interface SubtaskMetrics {
  readonly task: string;
  /** The vertex id (StreamTaskOptions.vertex); "" when the task was built without one. */
  readonly vertex: string;
  readonly subtask: number;
  readonly state: TaskState;
  readonly recordsIn: number;
  readonly recordsOut: number;
  /** Encoded bytes received from / sent to other threads (0 for same-thread channels). */
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Milliseconds the task had work but no credit on an output channel. */
  readonly backpressuredMs: number;
  /** The watermark the head operator has seen (sources: the minimum watermark). */
  readonly watermark: number;
  /** Operator counters, by "<operator's metricName (graph/plan.ts)>.<name>" (e.g. "Window(...).numLateRecordsDropped"). */
  readonly counters: Readonly<Record<string, number>>;
  /**
   * Milliseconds the task ran (its slices: records, mail, timers), since it was created; NaN when
   * per-record metrics are off. Busy, backpressured and the rest (idle) split `elapsedMs`.
   */
  readonly busyMs: number;
  /** Milliseconds since the task was created. */
  readonly elapsedMs: number;
  /** Each operator of the chain, head first (docs/metrics.md). */
  readonly operators: readonly OperatorMetrics[];
}

/** StreamTask's #times: performance.now() when the task last found an output without credit (-1: none). */
const BACKPRESSURED_SINCE = 0;
/** Milliseconds the task has been backpressured, not counting the current stretch. */
const BACKPRESSURED_MS = 1;
/** performance.now() when the first barrier of the checkpoint being aligned arrived. */
const ALIGNMENT_START = 2;
/** Milliseconds spent in runSlice, as the executor measured them (addBusyTime). */
const BUSY_MS = 3;
/** performance.now() when the task was created. */
const CREATED_AT = 4;

export class StreamTask {
  readonly name: string;
  readonly subtaskIndex: number;
  readonly #o: StreamTaskOptions;
  readonly #valves: StatusWatermarkValve[];
  /** Channels per logical input not yet ended. */
  readonly #openChannels: number[];
  readonly #inputEnded: boolean[];
  readonly #inputWatermarks: number[];
  readonly #inputIdle: boolean[];
  #combinedWatermark = MIN_WATERMARK;
  #combinedIdle = false;
  #state: TaskState = "created";
  /** Round-robin position over input channels, for fairness between upstream subtasks. */
  #nextInput = 0;
  #sourceWaiting = false;
  /** A source task stopped reading at a stop-with-savepoint barrier (until resumed or closed). */
  #suspended = false;
  /** A source task whose watermark ran ahead of its alignment group's bound (setAlignmentPaused). */
  #alignmentPaused = false;
  /** The newest checkpoint this task snapshotted (0: none). */
  #lastSnapshotId = 0;
  /** While finishing: the index of the next chained operator whose endInput runs. */
  #nextToEnd = 0;
  readonly #readerOutput: ReaderOutput<unknown> | undefined;
  recordsIn = 0;
  /**
   * Times, in a Float64Array rather than in fields (indices below): a field that first holds a
   * small integer and later a fraction changes the task's hidden class mid-run, and on worker
   * threads that left the hot loop of #processRecords deoptimizing on every batch (V8 11 kept
   * re-entering stale optimized code for the loop) in about a third of the runs of
   * bench/parallel.ts (b), from the first time a source waited for credit.
   */
  readonly #times = new Float64Array([-1, 0, 0, 0, performance.now()]);
  readonly #aligner: BarrierAligner | undefined;
  /** Whether the aligner may hold back input channels now (false: skip the per-channel check). */
  #aligning = false;
  /** The barrier of the checkpoint being aligned (the one the aligner will trigger). */
  readonly #barriers = new Map<number, CheckpointBarrier>();

  constructor(options: StreamTaskOptions) {
    this.#o = options;
    this.name = options.name;
    this.subtaskIndex = options.subtaskIndex;
    const numInputs = options.head.kind === "two-input" ? 2 : options.head.kind === "one-input" ? 1 : 0;
    const perInput = [0, 0];
    for (const input of options.inputs) perInput[input.inputIndex]!++;
    this.#valves = [];
    for (let i = 0; i < numInputs; i++) this.#valves.push(new StatusWatermarkValve(perInput[i]!));
    this.#openChannels = perInput.slice(0, numInputs);
    this.#inputEnded = this.#openChannels.map(() => false);
    this.#inputWatermarks = this.#openChannels.map(() => MIN_WATERMARK);
    this.#inputIdle = this.#openChannels.map(() => false);
    if (options.checkpointing !== undefined && options.inputs.length > 0) {
      this.#aligner = new BarrierAligner(options.inputs.length, options.checkpointing.mode);
    }
    const head = options.head;
    if (head.kind === "source") {
      const output = head.output;
      const reportBadRecord =
        head.onBadRecord ??
        ((bad: BadRecord) => {
          throw badRecordError(head.name, this.subtaskIndex, bad);
        });
      const splitOutputs = new Map<string, SourceOutput<unknown>>();
      const main: SourceOutput<unknown> = {
        collect: (value, timestamp) => {
          this.recordsIn++;
          output.collect(value, timestamp ?? NO_TIMESTAMP);
        },
        reportBadRecord,
      };
      this.#readerOutput = {
        ...main,
        createOutputForSplit: (splitId) => {
          let split = splitOutputs.get(splitId);
          if (split !== undefined) return split;
          if (head.splits === undefined) split = main;
          else {
            const target = head.splits.openSplit(splitId);
            split = {
              collect: (value, timestamp) => {
                this.recordsIn++;
                target(value, timestamp ?? NO_TIMESTAMP);
              },
              reportBadRecord,
            };
          }
          splitOutputs.set(splitId, split);
          return split;
        },
        releaseOutputForSplit: (splitId) => {
          if (splitOutputs.delete(splitId)) head.splits?.releaseSplit(splitId);
        },
      };
    }
  }

  get state(): TaskState {
    return this.#state;
  }

  /**
   * A source task that may sit out a round (the executor's source yield, task-executor.ts): its
   * splits go to whichever reader asks (another thread's reader takes what it leaves), running,
   * with no mail waiting (a barrier to inject, splits to add), so skipping it delays only its
   * reading.
   */
  get mayYield(): boolean {
    return this.yieldsSplits && this.#state === "running" && !this.#o.mailbox.hasMail;
  }

  /** A source whose splits go to whichever reader asks (Source.splitsOnRequest): one the source yield may hold back. */
  get yieldsSplits(): boolean {
    const head = this.#o.head;
    return head.kind === "source" && head.splitsOnRequest === true;
  }

  /**
   * The executor skipped this source for a round (mayYield): the time counts as backpressured,
   * since work downstream on its thread holds it back, until a round finds it runnable again.
   */
  sitOut(): void {
    if (this.#times[BACKPRESSURED_SINCE]! < 0) this.#times[BACKPRESSURED_SINCE] = performance.now();
  }

  /**
   * An input from another thread is backlogged (at least half full) and this task could read it
   * now (not held back by barrier alignment): the other thread waits for this task, or soon will.
   */
  get hasBacklog(): boolean {
    if (this.#state !== "running") return false;
    const inputs = this.#o.inputs;
    for (let i = 0; i < inputs.length; i++) if (inputs[i]!.channel.backlogged === true && this.#readable(i)) return true;
    return false;
  }

  /** Finished (or closed), with no asynchronous work of its operators left (a sink's commit): the executor may close it. */
  get isFinished(): boolean {
    return (this.#state === "finished" || this.#state === "closed") && !this.#o.pendingWork.any;
  }

  /** Opens operators, tail first so nothing emits into an unopened operator. */
  open(): void {
    if (this.#state !== "created") return;
    for (let i = this.#o.operators.length - 1; i >= 0; i--) this.#o.operators[i]!.open?.();
    if (this.#o.head.kind === "source") this.#o.head.reader.start?.();
    this.#state = "running";
    // A task without inputs (a sink with no upstream cannot exist, but a union of nothing could)
    // finishes at once.
    if (this.#o.head.kind !== "source" && this.#o.inputs.length === 0) this.#finish();
  }

  /**
   * Watermark alignment (WatermarkStrategy.withWatermarkAlignment): a source task stops reading
   * while its watermark is past its group's bound; mail (barriers, timers, the coordinator's next
   * answer) still runs. Called on the task's thread, by the operator its source feeds.
   */
  setAlignmentPaused(paused: boolean): void {
    if (this.#alignmentPaused === paused) return;
    this.#alignmentPaused = paused;
    if (!paused) this.#o.wake();
  }

  /** Runs `action` on this task between records. */
  postMail(action: () => void): void {
    this.#o.mailbox.post(action);
  }

  /**
   * Whether `runSlice` would make progress now. Not a plain query: it also accounts time spent
   * backpressured (it starts the clock when the outputs have no room and stops it when they have),
   * so the executor calls it once per task per round, as its loop does.
   */
  checkRunnable(): boolean {
    if (this.#o.mailbox.hasMail) return true;
    if (this.#state === "finishing") return this.#o.pendingWork.blocking === 0;
    if (this.#state !== "running") return false;
    // An operator's write asked to wait (a sink's buffer is full): no input until it settles.
    if (this.#o.pendingWork.blocking > 0) return false;
    if (!this.#writable()) {
      if (this.#times[BACKPRESSURED_SINCE]! < 0) this.#times[BACKPRESSURED_SINCE] = performance.now();
      return false;
    }
    const since = this.#times[BACKPRESSURED_SINCE]!;
    if (since >= 0) {
      this.#times[BACKPRESSURED_MS]! += performance.now() - since;
      this.#times[BACKPRESSURED_SINCE] = -1;
    }
    if (this.#o.head.kind === "source") return !this.#sourceWaiting && !this.#suspended && !this.#alignmentPaused;
    const inputs = this.#o.inputs;
    for (let i = 0; i < inputs.length; i++) if (inputs[i]!.channel.hasData && this.#readable(i)) return true;
    return false;
  }

  /** Whether input `i` may be read now: not held back by barrier alignment. */
  #readable(i: number): boolean {
    return !this.#aligning || !this.#aligner!.isBlocked(i);
  }

  runSlice(): void {
    this.#o.mailbox.drain();
    if (this.#state === "finishing") {
      if (this.#o.pendingWork.blocking === 0) this.#endOperators();
      return;
    }
    if (this.#state !== "running") return;
    if (this.#o.head.kind === "source") {
      if (!this.#suspended && !this.#alignmentPaused) this.#pollSource(this.#o.head.reader);
    } else {
      this.#processInput();
    }
  }

  /** Sends partly filled batches whose oldest record was written before `time` (performance.now()). */
  flushOlderThan(time: number): void {
    if (this.#state !== "running") return;
    const writers = this.#o.writers;
    for (let i = 0; i < writers.length; i++) writers[i]!.flushOlderThan(time);
  }

  /** Sends every partly filled batch; returns whether there was any. */
  flushAll(): boolean {
    if (this.#state !== "running") return false;
    let sent = false;
    for (const w of this.#o.writers) sent = w.flush() || sent;
    return sent;
  }

  metrics(): SubtaskMetrics {
    let recordsOut = 0;
    let bytesOut = 0;
    for (const w of this.#o.writers) {
      recordsOut += w.recordsOut;
      bytesOut += w.bytesOut;
    }
    let bytesIn = 0;
    for (const input of this.#o.inputs) bytesIn += input.channel.bytesIn ?? 0;
    const since = this.#times[BACKPRESSURED_SINCE]!;
    const pending = since < 0 ? 0 : performance.now() - since;
    return {
      task: this.name,
      vertex: this.#o.vertex ?? "",
      subtask: this.subtaskIndex,
      state: this.#state,
      recordsIn: this.recordsIn,
      recordsOut,
      bytesIn,
      bytesOut,
      backpressuredMs: this.#times[BACKPRESSURED_MS]! + pending,
      watermark: this.#combinedWatermark,
      counters: this.#o.counters?.snapshot() ?? {},
      busyMs: this.#o.measuresBusyTime === true ? this.#times[BUSY_MS]! : Number.NaN,
      elapsedMs: performance.now() - this.#times[CREATED_AT]!,
      operators: this.#o.operatorMetrics?.() ?? [],
    };
  }

  /** The executor ran a slice of this task for `ms` (busyTimeMsPerSecond). Not per record. */
  addBusyTime(ms: number): void {
    this.#times[BUSY_MS]! += ms;
  }

  /** The watermark the head has seen: the minimum over its inputs (MIN_WATERMARK for a source head). */
  get inputWatermark(): number {
    return this.#combinedWatermark;
  }

  #writable(): boolean {
    const writers = this.#o.writers;
    for (let i = 0; i < writers.length; i++) if (!writers[i]!.isWritable) return false;
    return true;
  }

  /** When the current slice ends at the latest (performance.now() time): see MAX_SLICE_MS. */
  #sliceDeadline(): number {
    const cp = this.#o.checkpointing;
    return cp !== undefined && cp.inFlight() ? performance.now() + MAX_SLICE_MS : Number.POSITIVE_INFINITY;
  }

  #pollSource(reader: SourceReader<unknown, unknown>): void {
    const budget = this.#o.maxRecordsPerSlice;
    const start = this.recordsIn;
    const deadline = this.#sliceDeadline();
    const work = this.#o.pendingWork;
    // Alignment may pause the source in the middle (a punctuated watermark past the group's bound).
    while (this.recordsIn - start < budget && this.#writable() && work.blocking === 0 && !this.#alignmentPaused) {
      const status = reader.pollNext(this.#readerOutput!);
      if (status === "more") {
        if (deadline !== Number.POSITIVE_INFINITY && performance.now() >= deadline) return;
        continue;
      }
      if (status === "end") {
        const head = this.#o.head as Extract<TaskHead, { kind: "source" }>;
        head.output.emitWatermark(MAX_WATERMARK);
        this.#finish();
        return;
      }
      this.#sourceWaiting = true;
      reader.isAvailable().then(
        () => {
          this.#sourceWaiting = false;
          this.#o.wake();
        },
        (e: unknown) => this.#o.mailbox.post(() => {
          throw e;
        }),
      );
      return;
    }
  }

  #processInput(): void {
    const inputs = this.#o.inputs;
    const n = inputs.length;
    const budget = this.#o.maxRecordsPerSlice;
    let processed = 0;
    let idleScans = 0;
    const deadline = this.#sliceDeadline();
    const work = this.#o.pendingWork;
    while (processed < budget && this.#state === "running" && this.#writable() && work.blocking === 0) {
      let index = this.#nextInput;
      this.#nextInput = index + 1 === n ? 0 : index + 1;
      if (inputs[index]!.peers !== undefined) index = this.#pushedFirst(index);
      const input = inputs[index]!;
      const element = this.#readable(index) ? input.channel.poll() : undefined;
      if (element === undefined) {
        if (++idleScans >= n) return;
        continue;
      }
      idleScans = 0;
      processed += this.#handle(element, input, index);
      if (deadline !== Number.POSITIVE_INFINITY && performance.now() >= deadline) return;
    }
  }

  /**
   * Of input `index` and its peers (the inputs fed by the same upstream subtask), the one whose
   * next batch that subtask pushed first; `index` when its next element is not a records batch.
   * Between peers, batches are then read in the order they were pushed (see RecordWriter.group),
   * as if the edges were one. Only what has arrived counts: this never waits for a peer.
   *
   * A peer whose next element is a watermark, status or barrier goes first: the batch behind it
   * may have been pushed before `index`'s, and such an element reorders no records (each
   * channel's order is kept; a watermark valve takes channels in any order). Skipping it let a
   * later batch overtake the one it hid (stream-task.test.ts).
   */
  #pushedFirst(index: number): number {
    const inputs = this.#o.inputs;
    if (!this.#readable(index)) return index;
    let firstSeq = inputs[index]!.channel.headSeq();
    if (firstSeq === undefined || firstSeq === CONTROL_AT_HEAD) return index;
    let first = index;
    const peers = inputs[index]!.peers!;
    for (let p = 0; p < peers.length; p++) {
      const peer = peers[p]!;
      if (!this.#readable(peer)) continue;
      const seq = inputs[peer]!.channel.headSeq();
      if (seq === CONTROL_AT_HEAD) return peer;
      // uint32 sequence numbers that wrap: compare their difference as an int32.
      if (seq !== undefined && ((seq - firstSeq) | 0) < 0) {
        first = peer;
        firstSeq = seq;
      }
    }
    return first;
  }

  /** Handles one element; returns the number of records it carried. */
  #handle(element: StreamElement, input: TaskInput, index: number): number {
    switch (element.kind) {
      case "records":
        return this.#processRecords(element.values, element.timestamps, element.keyGroups, input.inputIndex);
      case "watermark": {
        const advanced = this.#valves[input.inputIndex]!.inputWatermark(input.channelIndex, element.timestamp);
        if (advanced !== undefined) this.#inputWatermarkAdvanced(input.inputIndex, advanced);
        return 0;
      }
      case "status": {
        const result = this.#valves[input.inputIndex]!.inputWatermarkStatus(input.channelIndex, element.idle);
        if (result.watermark !== undefined) this.#inputWatermarkAdvanced(input.inputIndex, result.watermark);
        if (result.statusChanged !== undefined) this.#inputStatusChanged(input.inputIndex, result.statusChanged === "idle");
        return 0;
      }
      case "barrier": {
        const aligner = this.#aligner;
        if (aligner === undefined) {
          throw new EddyError("UNEXPECTED_BARRIER", `task '${this.name}' received a checkpoint barrier but checkpointing is off`);
        }
        if (aligner.pendingCheckpoint === undefined) this.#times[ALIGNMENT_START] = performance.now();
        this.#barriers.set(element.checkpointId, element);
        this.#applyAligner(aligner.onBarrier(index, element.checkpointId));
        return 0;
      }
      case "end":
        if (this.#aligner !== undefined) this.#applyAligner(this.#aligner.onEndOfInput(index));
        this.#channelEnded(input.inputIndex);
        return 0;
    }
  }

  /** Acts on what the aligner decided: snapshot and forward, decline, read channels again. */
  #applyAligner(result: AlignerResult): void {
    const cp = this.#o.checkpointing!;
    const aligner = this.#aligner!;
    this.#aligning = aligner.mode === "exactly-once" && aligner.pendingCheckpoint !== undefined;
    for (const id of result.aborted) {
      this.#barriers.delete(id);
      cp.onDecline(id, `task '${this.name}' (subtask ${this.subtaskIndex}) received a newer barrier before aligning checkpoint ${id}`);
    }
    for (const triggered of result.triggered) {
      const barrier = this.#barriers.get(triggered)!;
      for (const id of this.#barriers.keys()) if (id <= triggered) this.#barriers.delete(id);
      this.#checkpoint(barrier, performance.now() - this.#times[ALIGNMENT_START]!);
    }
  }

  /**
   * Source tasks: checkpoint `barrier` now (the coordinator triggered it through the mailbox).
   * Declines when the task is not running (not opened yet, or finished).
   *
   * With `stop` (stop with a savepoint), the source reads nothing after the barrier, so the
   * savepoint holds everything the job read; `drain` first advances event time to the end, so
   * every window and event-time timer downstream fires before the barrier reaches it.
   */
  triggerCheckpoint(barrier: CheckpointBarrier, stop?: SourceStop): void {
    const cp = this.#o.checkpointing;
    if (cp === undefined) return;
    if (this.#state !== "running") {
      if (this.#state === "finished") this.snapshotIfFinished(barrier);
      else if (this.#state === "created") cp.onDecline(barrier.checkpointId, `task '${this.name}' (subtask ${this.subtaskIndex}) has not started`);
      return;
    }
    if (stop !== undefined) {
      this.#suspended = true;
      const head = this.#o.head;
      if (stop.drain && head.kind === "source") head.output.emitWatermark(MAX_WATERMARK);
    }
    this.#checkpoint(barrier, 0);
  }

  /** A source task reads again after a stop-with-savepoint that failed (see triggerCheckpoint). */
  resume(): void {
    this.#suspended = false;
  }

  /**
   * The job's final checkpoint, taken once every task has finished: what operators still hold
   * as operator state (a sink's last committables, the sources' finished splits) is snapshotted so
   * it is committed exactly once. Keyed state is left out: every input has ended and every
   * event-time timer has fired, so a restore from this checkpoint processes nothing more. No
   * barrier is forwarded: downstream tasks have finished too and take it themselves.
   */
  finalCheckpoint(barrier: CheckpointBarrier): void {
    const cp = this.#o.checkpointing;
    if (cp === undefined || this.#state !== "finished") return;
    const start = performance.now();
    const snapshots = this.#snapshotOperators(cp, barrier.checkpointId, false);
    cp.onSnapshot(barrier, snapshots, { alignmentMs: 0, syncMs: performance.now() - start });
  }

  /**
   * A checkpoint triggered after this task finished (or that it finished without seeing the
   * barrier of): it still takes part, with what its operators hold — the sources' finished
   * splits, a sink's committables, final keyed state. No barrier is forwarded: downstream has
   * all its input, the end included, and counts an ended channel as delivered.
   */
  snapshotIfFinished(barrier: CheckpointBarrier): void {
    const cp = this.#o.checkpointing;
    if (cp === undefined || this.#state !== "finished" || barrier.checkpointId <= this.#lastSnapshotId) return;
    this.#lastSnapshotId = barrier.checkpointId;
    const start = performance.now();
    const snapshots = this.#snapshotOperators(cp, barrier.checkpointId, true, !barrier.isSavepoint);
    cp.onSnapshot(barrier, snapshots, { alignmentMs: 0, syncMs: performance.now() - start });
  }

  /** Whether mail is waiting or asynchronous work of the operators (a sink's commit) is pending: the executor does not end before. */
  get hasWorkLeft(): boolean {
    return this.#o.mailbox.hasMail || this.#o.pendingWork.any;
  }

  /** The coordinator cancelled checkpoint `checkpointId`: stop aligning it. */
  abortCheckpoint(checkpointId: number): void {
    if (this.#aligner === undefined) return;
    this.#barriers.delete(checkpointId);
    this.#applyAligner(this.#aligner.abort(checkpointId));
  }

  notifyCheckpointComplete(checkpointId: number): void {
    for (const op of this.#o.checkpointing?.operators ?? []) op.notifyCheckpointComplete(checkpointId);
  }

  notifyCheckpointAborted(checkpointId: number): void {
    for (const op of this.#o.checkpointing?.operators ?? []) op.notifyCheckpointAborted(checkpointId);
  }

  /** Synchronous snapshot of every operator of the chain, then the barrier goes downstream. */
  #checkpoint(barrier: CheckpointBarrier, alignmentMs: number): void {
    const cp = this.#o.checkpointing!;
    this.#lastSnapshotId = barrier.checkpointId;
    const start = performance.now();
    const snapshots = this.#snapshotOperators(cp, barrier.checkpointId, true, !barrier.isSavepoint);
    const syncMs = performance.now() - start;
    for (const writer of this.#o.writers) writer.broadcastElement(barrier);
    cp.onSnapshot(barrier, snapshots, { alignmentMs, syncMs });
  }

  /** The synchronous snapshot of every operator of the chain; on failure nothing stays captured. */
  #snapshotOperators(cp: TaskCheckpointing, checkpointId: number, withKeyed: boolean, incremental = false): OperatorSnapshot[] {
    const snapshots: OperatorSnapshot[] = [];
    try {
      for (const op of cp.operators) snapshots.push(op.snapshot(checkpointId, withKeyed, incremental));
    } catch (e) {
      for (const s of snapshots) s.keyed?.release();
      throw e;
    }
    return snapshots;
  }

  #processRecords(values: unknown[], timestamps: ArrayLike<number>, keyGroups: ArrayLike<number> | undefined, inputIndex: 0 | 1): number {
    const head = this.#o.head;
    const n = values.length;
    // hot path
    if (head.kind === "one-input") {
      const op = head.operator;
      if (op.processBatch !== undefined) op.processBatch(values, timestamps, keyGroups);
      else if (keyGroups === undefined) for (let i = 0; i < n; i++) op.processElement(values[i], timestamps[i]!);
      else for (let i = 0; i < n; i++) op.processElement(values[i], timestamps[i]!, keyGroups[i]!);
    } else if (head.kind === "two-input") {
      const op = head.operator;
      if (keyGroups === undefined) {
        if (inputIndex === 0) for (let i = 0; i < n; i++) op.processElement1(values[i], timestamps[i]!);
        else for (let i = 0; i < n; i++) op.processElement2(values[i], timestamps[i]!);
      } else {
        if (inputIndex === 0) for (let i = 0; i < n; i++) op.processElement1(values[i], timestamps[i]!, keyGroups[i]!);
        else for (let i = 0; i < n; i++) op.processElement2(values[i], timestamps[i]!, keyGroups[i]!);
      }
    }
    this.recordsIn += n;
    return n;
  }

  #inputWatermarkAdvanced(inputIndex: number, watermark: number): void {
    this.#inputWatermarks[inputIndex] = watermark;
    this.#emitCombinedWatermark();
  }

  /** The head's watermark is the minimum over its logical inputs, ignoring idle ones. */
  #emitCombinedWatermark(): void {
    let min = Number.POSITIVE_INFINITY;
    let anyActive = false;
    for (let i = 0; i < this.#inputWatermarks.length; i++) {
      if (this.#inputIdle[i]) continue;
      anyActive = true;
      min = Math.min(min, this.#inputWatermarks[i]!);
    }
    if (!anyActive) min = Math.max(...this.#inputWatermarks);
    if (min > this.#combinedWatermark) {
      this.#combinedWatermark = min;
      const head = this.#o.head;
      if (head.kind !== "source") head.operator.processWatermark(min);
    }
  }

  #inputStatusChanged(inputIndex: number, idle: boolean): void {
    this.#inputIdle[inputIndex] = idle;
    const allIdle = this.#inputIdle.every(Boolean);
    if (!allIdle) this.#emitCombinedWatermark();
    if (allIdle !== this.#combinedIdle) {
      this.#combinedIdle = allIdle;
      const head = this.#o.head;
      if (head.kind !== "source") head.operator.processWatermarkStatus?.(allIdle);
    }
  }

  #channelEnded(inputIndex: 0 | 1): void {
    if (--this.#openChannels[inputIndex]! > 0) return;
    this.#inputEnded[inputIndex] = true;
    const head = this.#o.head;
    if (head.kind === "two-input") head.operator.endInput?.((inputIndex + 1) as 1 | 2);
    else if (head.kind === "one-input") head.operator.endInput?.();
    if (this.#inputEnded.every(Boolean)) this.#finish();
  }

  /** All input is consumed: end the chained operators, flush, tell downstream, close. */
  #finish(): void {
    this.#state = "finishing";
    this.#nextToEnd = this.#o.head.kind === "source" ? 0 : 1;
    this.#endOperators();
  }

  /**
   * Ends the chained operators in order (the head's input ended already); an operator that started
   * blocking work (a sink's flush) is waited for before the next one ends, and before the task is
   * finished: runSlice calls this again once the work has settled.
   */
  #endOperators(): void {
    const ops = this.#o.operators;
    for (;;) {
      // Also the head's: it ended its input before the task began finishing.
      if (this.#o.pendingWork.blocking > 0) return;
      if (this.#nextToEnd >= ops.length) break;
      (ops[this.#nextToEnd++] as OneInputOperator<unknown>).endInput?.();
    }
    for (const writer of this.#o.writers) writer.broadcastElement(END_OF_INPUT);
    this.#state = "finished";
    if (this.#o.checkpointing !== undefined) {
      // Stays open for the job's final checkpoint (sinks commit their last output on it); the
      // executor closes the task once that checkpoint is complete.
      this.#o.checkpointing.onFinished();
      return;
    }
    this.close();
  }

  /** Closes operators and the reader. Idempotent; also used on cancellation and failure. */
  close(): void {
    if (this.#state === "closed") return;
    const wasFinished = this.#state === "finished";
    this.#state = "closed";
    this.#o.mailbox.clear();
    let failure: unknown;
    for (const op of this.#o.operators) {
      try {
        op.close?.();
      } catch (e) {
        failure ??= e;
      }
    }
    if (this.#o.head.kind === "source") {
      try {
        this.#o.head.reader.close?.();
      } catch (e) {
        failure ??= e;
      }
    }
    // A failing close on the normal path fails the job; on cancellation the first failure wins.
    if (failure !== undefined && wasFinished) throw failure;
  }
}
