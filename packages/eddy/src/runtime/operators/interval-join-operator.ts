/**
 * The interval join (Flink's IntervalJoinOperator): joins two keyed streams on event time. For a
 * left record l and a right record r of the same key it calls the join function once when
 *
 *     l.ts + lower ≤ r.ts ≤ l.ts + upper
 *
 * and emits with timestamp max(l.ts, r.ts). Timestamps are integer ms, so an exclusive bound is
 * the inclusive bound 1 ms tighter (lower + 1, upper − 1); as in Flink, the operator works with
 * those inclusive bounds only, for matching and for cleanup.
 *
 * Buffers. Each side keeps its records in keyed map state, timestamp → records with that timestamp
 * (in arrival order). A record is first added to its own buffer, then joined with the buckets of
 * the other buffer whose timestamp is in range; only the bucket keys are scanned, and a bucket is
 * read (copied) only when it matches.
 *
 * Lateness. A record whose timestamp is < the current watermark is late: before touching state,
 * it goes to its side's late-data side output when one is set (Flink's sideOutputLeftLateData /
 * sideOutputRightLateData, with its own timestamp), otherwise it is dropped and counted in
 * `numLateRecordsDropped`. (As in Flink, a record whose timestamp
 * equals the watermark is not late, yet may miss partners already cleaned up at that watermark:
 * such a record breaks the watermark's promise anyway.)
 *
 * Cleanup. Every buffered bucket has one event-time timer (timers are deduplicated, so records with
 * the same key and timestamp share it): a left bucket at ts + upper (ts when upper ≤ 0), a right
 * bucket at ts − lower (ts when lower ≥ 0), with the inclusive bounds. From that watermark on, no record that is not late can
 * match the bucket, so the timer removes it. Left and right timers are told apart by their
 * namespace. Once the watermark passes every record's interval, state and timers are empty.
 *
 * Cost per record: a scan of the bucket timestamps of its key on the other side, plus copies of
 * its own bucket (read, append, write) and of each matching bucket — the heap backend copies values
 * so that the join function can never change what state holds. A key with many records at one
 * timestamp therefore pays O(bucket size) per record.
 *
 * Invariants: everything keyed lives in keyed state and per-key-group timers (no operator-private
 * maps), so snapshots and rescaling see all of it; timestamps are integer milliseconds (the
 * cleanup timer recovers the bucket timestamp arithmetically).
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import { requireOutputTag, type OutputTag } from "../../core/output-tag.ts";
import { hasTimestamp } from "../../core/time.ts";
import { MapStateDescriptor } from "../../state/descriptors.ts";
import type { InternalMapState } from "../../state/internal-state.ts";
import type { Collector, RuntimeContext } from "../functions.ts";
import { LATE_RECORDS_DROPPED, type AnyKeySelector, type Counter, type OperatorContext, type Output, type TwoInputOperator } from "../operator.ts";
import { perSubtaskInstance, type FunctionFactory } from "./function-instance.ts";
import { KeyedStateAndTimers, requireKeySelector, type TimerDomain } from "./keyed-state-and-timers.ts";
import { callUser, runtimeContextOf } from "./process-operator.ts";
import { TimestampedCollector } from "./timestamped-collector.ts";

/** What the join function may ask about the pair being joined. */
export interface ProcessJoinContext {
  /** Timestamp of the left record. */
  leftTimestamp(): number;
  /** Timestamp of the right record. */
  rightTimestamp(): number;
  /** Timestamp of the output: max(leftTimestamp(), rightTimestamp()). */
  timestamp(): number;
  /** Emits `value` to the side output `tag`, with the output timestamp. */
  output<S>(tag: OutputTag<S>, value: S): void;
}

/** Called once per joined pair; a plain object or a class instance (copied per subtask). */
export interface ProcessJoinFunction<IN1, IN2, OUT> {
  open?(ctx: RuntimeContext): void;
  processElement(left: IN1, right: IN2, ctx: ProcessJoinContext, out: Collector<OUT>): void;
  close?(): void;
}

/** The interval, relative to the left record's timestamp, in ms. Checked by `intervalJoinOperator`. */
export interface IntervalJoinBounds {
  readonly lowerMs: number;
  readonly upperMs: number;
  readonly lowerInclusive: boolean;
  readonly upperInclusive: boolean;
}

/** Where late records of each side go; a side without a tag drops (and counts) them. */
export interface IntervalJoinLateData<IN1, IN2> {
  readonly left?: OutputTag<IN1> | undefined;
  readonly right?: OutputTag<IN2> | undefined;
}

export interface IntervalJoinOperator<IN1, IN2> extends TwoInputOperator<IN1, IN2> {
  /** Keys holding buffered records, and pending timers: both return to 0 once the watermark passes every interval. */
  stateSize(): { keys: number; timers: number };
}

/** State names of the two buffers (their identity in snapshots). */
export const LEFT_BUFFER = "interval-join-left";
export const RIGHT_BUFFER = "interval-join-right";
/** Timer namespaces of the cleanup timers of each side. */
const CLEANUP_LEFT = "cleanup-left";
const CLEANUP_RIGHT = "cleanup-right";

/**
 * The same interval with both bounds inclusive: an exclusive bound moves 1 ms inwards (Flink's
 * IntervalJoinOperator does the same), which is exact because timestamps are integer ms.
 */
export function inclusiveIntervalJoinBounds(bounds: IntervalJoinBounds): { readonly lowerMs: number; readonly upperMs: number } {
  return {
    lowerMs: bounds.lowerInclusive ? bounds.lowerMs : bounds.lowerMs + 1,
    upperMs: bounds.upperInclusive ? bounds.upperMs : bounds.upperMs - 1,
  };
}

/** Throws a config error unless the bounds describe a non-empty interval of integer ms. */
export function checkIntervalJoinBounds(bounds: IntervalJoinBounds): void {
  const { lowerMs, upperMs } = bounds;
  for (const [what, v] of [["lower", lowerMs], ["upper", upperMs]] as const) {
    if (typeof v !== "number" || !Number.isSafeInteger(v)) {
      throw new EddyError("INVALID_INTERVAL", `interval join: the ${what} bound must be an integer number of ms, got ${String(v)}`);
    }
  }
  if (lowerMs > upperMs) {
    throw new EddyError(
      "INVALID_INTERVAL",
      `interval join: the lower bound (${lowerMs} ms) must not be greater than the upper bound (${upperMs} ms)`,
    );
  }
  const inclusive = inclusiveIntervalJoinBounds(bounds);
  if (inclusive.lowerMs > inclusive.upperMs) {
    // Flink accepts such an interval and joins nothing; a join that can never match is a mistake.
    throw new EddyError(
      "INVALID_INTERVAL",
      `interval join: the interval (${lowerMs} ms, ${upperMs} ms) is empty once its exclusive bounds are left out`,
    );
  }
}

export function intervalJoinOperator<IN1, IN2, OUT>(
  userFn: ProcessJoinFunction<IN1, IN2, OUT> | FunctionFactory<ProcessJoinFunction<IN1, IN2, OUT>>,
  bounds: IntervalJoinBounds,
  lateData: IntervalJoinLateData<IN1, IN2> = {},
) {
  checkIntervalJoinBounds(bounds);
  return (ctx: OperatorContext, output: Output<OUT>): IntervalJoinOperator<IN1, IN2> =>
    new IntervalJoin<IN1, IN2, OUT>(perSubtaskInstance(userFn, ctx, ["processElement"]), bounds, lateData, ctx, output);
}

/** The context handed to the join function: one per operator, updated before every pair. */
class JoinContext implements ProcessJoinContext {
  readonly #output: Output<unknown>;
  /** Timestamps of the pair being joined; set by the operator before each call. */
  left = 0;
  right = 0;

  constructor(output: Output<unknown>) {
    this.#output = output;
  }

  leftTimestamp(): number {
    return this.left;
  }
  rightTimestamp(): number {
    return this.right;
  }
  timestamp(): number {
    return Math.max(this.left, this.right);
  }
  output<S>(tag: OutputTag<S>, value: S): void {
    requireOutputTag(tag, "ctx.output(tag, value)", "user");
    this.#output.collectSide(tag, value, Math.max(this.left, this.right));
  }
}

class IntervalJoin<IN1, IN2, OUT> implements IntervalJoinOperator<IN1, IN2> {
  readonly #fn: ProcessJoinFunction<IN1, IN2, OUT>;
  readonly #ctx: OperatorContext;
  readonly #output: Output<OUT>;
  /** The interval with both bounds inclusive (exclusive ones moved 1 ms inwards); lower ≤ upper. */
  readonly #lower: number;
  readonly #upper: number;
  readonly #keySelector1: AnyKeySelector;
  readonly #keySelector2: AnyKeySelector;
  readonly #keyed: KeyedStateAndTimers;
  /** Both buffers follow the current key (set by the record or the firing timer); void namespace. */
  readonly #left: InternalMapState<number, IN1[]>;
  readonly #right: InternalMapState<number, IN2[]>;
  readonly #collector: TimestampedCollector<OUT>;
  readonly #context: JoinContext;
  readonly #lateDropped: Counter;
  readonly #lateLeft: OutputTag<IN1> | undefined;
  readonly #lateRight: OutputTag<IN2> | undefined;

  constructor(
    fn: ProcessJoinFunction<IN1, IN2, OUT>,
    bounds: IntervalJoinBounds,
    lateData: IntervalJoinLateData<IN1, IN2>,
    ctx: OperatorContext,
    output: Output<OUT>,
  ) {
    this.#fn = fn;
    this.#ctx = ctx;
    this.#output = output;
    const inclusive = inclusiveIntervalJoinBounds(bounds);
    this.#lower = inclusive.lowerMs;
    this.#upper = inclusive.upperMs;
    this.#keySelector1 = requireKeySelector(ctx, 0);
    this.#keySelector2 = requireKeySelector(ctx, 1);
    this.#keyed = new KeyedStateAndTimers(ctx, (domain, timestamp, _key, _kg, namespace) => this.#onTimer(domain, timestamp, namespace));
    this.#left = this.#keyed.backend.getMapState(new MapStateDescriptor<number, IN1[]>(LEFT_BUFFER));
    this.#right = this.#keyed.backend.getMapState(new MapStateDescriptor<number, IN2[]>(RIGHT_BUFFER));
    this.#collector = new TimestampedCollector(output);
    this.#context = new JoinContext(output as Output<unknown>);
    this.#lateDropped = ctx.counter(LATE_RECORDS_DROPPED);
    this.#lateLeft = lateData.left;
    this.#lateRight = lateData.right;
  }

  open(): void {
    callUser(this.#ctx, () => this.#fn.open?.(runtimeContextOf(this.#ctx)));
  }

  // hot path
  processElement1(value: IN1, timestamp: number, keyGroup?: number): void {
    this.#requireTimestamp(timestamp, 1);
    if (timestamp < this.#keyed.currentWatermark) {
      this.#late(this.#lateLeft, value, timestamp);
      return;
    }
    this.#keyed.setKeyFromRecord(this.#keySelector1, value, keyGroup);
    addToBucket(this.#left, timestamp, value);
    const context = this.#context;
    context.left = timestamp;
    try {
      for (const rightTs of this.#right.keys()) {
        if (!this.#inInterval(rightTs - timestamp)) continue;
        context.right = rightTs;
        this.#collector.timestamp = Math.max(timestamp, rightTs);
        const bucket = this.#right.get(rightTs)!;
        for (let i = 0; i < bucket.length; i++) this.#fn.processElement(value, bucket[i]!, context, this.#collector);
      }
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    const cleanupAt = this.#upper > 0 ? timestamp + this.#upper : timestamp;
    this.#registerCleanup(CLEANUP_LEFT, cleanupAt);
  }

  // hot path
  processElement2(value: IN2, timestamp: number, keyGroup?: number): void {
    this.#requireTimestamp(timestamp, 2);
    if (timestamp < this.#keyed.currentWatermark) {
      this.#late(this.#lateRight, value, timestamp);
      return;
    }
    this.#keyed.setKeyFromRecord(this.#keySelector2, value, keyGroup);
    addToBucket(this.#right, timestamp, value);
    const context = this.#context;
    context.right = timestamp;
    try {
      for (const leftTs of this.#left.keys()) {
        if (!this.#inInterval(timestamp - leftTs)) continue;
        context.left = leftTs;
        this.#collector.timestamp = Math.max(leftTs, timestamp);
        const bucket = this.#left.get(leftTs)!;
        for (let i = 0; i < bucket.length; i++) this.#fn.processElement(bucket[i]!, value, context, this.#collector);
      }
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    const cleanupAt = this.#lower < 0 ? timestamp - this.#lower : timestamp;
    this.#registerCleanup(CLEANUP_RIGHT, cleanupAt);
  }

  /** Cleanup timers the watermark passes fire first (they emit nothing), then it is forwarded. */
  processWatermark(watermark: number): void {
    this.#keyed.timers.advanceWatermark(watermark);
    this.#output.emitWatermark(watermark);
  }

  processWatermarkStatus(idle: boolean): void {
    this.#output.emitWatermarkStatus(idle);
  }

  /** Keys holding any state of this operator, and pending timers: both return to 0 once it holds nothing. */
  stateSize(): { keys: number; timers: number } {
    return this.#keyed.stateSize();
  }

  close(): void {
    this.#keyed.close();
    callUser(this.#ctx, () => this.#fn.close?.());
  }

  /** A late record: to its side output with its own timestamp, or dropped and counted. */
  #late<T>(tag: OutputTag<T> | undefined, value: T, timestamp: number): void {
    if (tag !== undefined) this.#output.collectSide(tag, value, timestamp);
    else this.#lateDropped.inc();
  }

  /** Whether `rightTs - leftTs` lies in the interval. */
  #inInterval(delta: number): boolean {
    return delta >= this.#lower && delta <= this.#upper;
  }

  #registerCleanup(namespace: string, timestamp: number): void {
    const backend = this.#keyed.backend;
    this.#keyed.timers.registerEventTimeTimer(backend.getCurrentKey(), backend.getCurrentKeyGroup(), namespace, timestamp);
  }

  /** A cleanup timer: removes the bucket it was registered for (the key is already current). */
  #onTimer(domain: TimerDomain, timestamp: number, namespace: string | number): void {
    if (domain !== "event") return;
    if (namespace === CLEANUP_LEFT) this.#left.remove(this.#upper > 0 ? timestamp - this.#upper : timestamp);
    else if (namespace === CLEANUP_RIGHT) this.#right.remove(this.#lower < 0 ? timestamp + this.#lower : timestamp);
  }

  #requireTimestamp(timestamp: number, input: 1 | 2): void {
    if (hasTimestamp(timestamp)) return;
    const { operatorName: operator, subtaskIndex: subtask } = this.#ctx;
    throw new EddyError(
      "NO_TIMESTAMP",
      `interval join '${operator}' (subtask ${subtask}) needs event timestamps on both inputs, but a record of ${input === 1 ? "the left" : "the right"} input has none: use assignTimestampsAndWatermarks(...) or a source that sets them`,
      { operator, subtask },
    );
  }
}

/** Appends `value` to the bucket of `timestamp` (state copies the bucket on read and write). */
function addToBucket<T>(buffer: InternalMapState<number, T[]>, timestamp: number, value: T): void {
  const bucket = buffer.get(timestamp);
  if (bucket === undefined) buffer.put(timestamp, [value]);
  else {
    bucket.push(value);
    buffer.put(timestamp, bucket);
  }
}
