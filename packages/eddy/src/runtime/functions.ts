/**
 * The user function types. Every function is a plain object (or class instance) with the hooks
 * it needs; no base class is required. Re-exported by the API layer.
 */
import type { OutputTag } from "../core/output-tag.ts";
import type {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "../state/descriptors.ts";
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from "../state/state.ts";
import type { OperatorListState } from "./operator-state.ts";
import type { BroadcastState, ReadOnlyBroadcastState } from "./broadcast-state.ts";
import type { MetricGroup } from "./metrics/metric-group.ts";

/** Receives what a function emits. */
export interface Collector<T> {
  collect(value: T): void;
}

export type MapFunction<IN, OUT> = (value: IN) => OUT;
export type FilterFunction<T> = (value: T) => boolean;
export type FlatMapFunction<IN, OUT> = (value: IN, out: Collector<OUT>) => void;
export type ReduceFunction<T> = (accumulator: T, value: T) => T;
/**
 * The key of a record: a string, a finite number, a bigint, or a non-empty array of those. Keys
 * are compared by value; the engine keeps the value returned (in state, timers and its key
 * cache), so a selector returns a new array per record and never changes one it returned.
 */
export type KeySelector<T, K> = (value: T) => K;

export interface TimerService {
  /** The current processing time (ms). */
  currentProcessingTime(): number;
  /** The current event time: the last watermark this operator received. */
  currentWatermark(): number;
  /** Fires `onTimer` once the watermark passes `timestamp`. Deduplicated per key and time. */
  registerEventTimeTimer(timestamp: number): void;
  /** Fires `onTimer` once processing time reaches `timestamp`. Deduplicated per key and time. */
  registerProcessingTimeTimer(timestamp: number): void;
  deleteEventTimeTimer(timestamp: number): void;
  deleteProcessingTimeTimer(timestamp: number): void;
}

/** Access to keyed state of the current key. */
export interface KeyedStateStore {
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>;
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV>;
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): ReducingState<T>;
  getAggregatingState<IN, ACC, OUT>(descriptor: AggregatingStateDescriptor<IN, ACC, OUT>): AggregatingState<IN, OUT>;
}

/** Given to `open`: what is known about the running subtask. */
export interface RuntimeContext {
  readonly operatorName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  /**
   * Metrics of this operator subtask (Flink's getMetricGroup()): register counters, gauges,
   * meters and histograms here, in `open`, and keep the handles. docs/metrics.md.
   */
  readonly metrics: MetricGroup;
  /**
   * Operator list state of this subtask, checkpointed with the job. On a restore at another
   * parallelism its elements are divided among the subtasks (each to exactly one).
   */
  getOperatorListState<T>(name: string): OperatorListState<T>;
  /** Operator list state that every subtask gets whole on a restore (Flink's union list state). */
  getUnionListState<T>(name: string): OperatorListState<T>;
}

/** Given to `open` of keyed functions: state handles may be obtained here and kept. */
export interface KeyedRuntimeContext extends RuntimeContext, KeyedStateStore {}

export interface ProcessContext {
  /** The record's timestamp, or undefined when it has none. */
  timestamp(): number | undefined;
  timerService(): TimerService;
  /** Emits `value` to the side output `tag`, with the current timestamp. */
  output<S>(tag: OutputTag<S>, value: S): void;
}

export interface KeyedProcessContext<K> extends ProcessContext, KeyedStateStore {
  getCurrentKey(): K;
}

export interface OnTimerContext<K> extends KeyedProcessContext<K> {
  /** Which clock fired the timer. */
  timeDomain(): "event-time" | "processing-time";
}

export interface ProcessFunction<IN, OUT> {
  open?(ctx: RuntimeContext): void;
  processElement(value: IN, ctx: ProcessContext, out: Collector<OUT>): void;
  close?(): void;
}

export interface KeyedProcessFunction<K, IN, OUT> {
  open?(ctx: KeyedRuntimeContext): void;
  processElement(value: IN, ctx: KeyedProcessContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

export interface CoProcessFunction<IN1, IN2, OUT> {
  open?(ctx: RuntimeContext): void;
  processElement1(value: IN1, ctx: ProcessContext, out: Collector<OUT>): void;
  processElement2(value: IN2, ctx: ProcessContext, out: Collector<OUT>): void;
  close?(): void;
}

export interface KeyedCoProcessFunction<K, IN1, IN2, OUT> {
  open?(ctx: KeyedRuntimeContext): void;
  processElement1(value: IN1, ctx: KeyedProcessContext<K>, out: Collector<OUT>): void;
  processElement2(value: IN2, ctx: KeyedProcessContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}

/** What `processElement` of a broadcast function may do: read broadcast state, never write it. */
export interface BroadcastReadOnlyContext extends ProcessContext {
  /** The broadcast state of `descriptor` (given to `stream.broadcast(...)`), read-only. */
  getBroadcastState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): ReadOnlyBroadcastState<UK, UV>;
}

/** What `processBroadcastElement` may do: read and write broadcast state. Timers cannot be set. */
export interface BroadcastContext extends ProcessContext {
  getBroadcastState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): BroadcastState<UK, UV>;
}

export interface KeyedBroadcastReadOnlyContext<K> extends BroadcastReadOnlyContext, KeyedProcessContext<K> {}

export interface KeyedBroadcastOnTimerContext<K> extends KeyedBroadcastReadOnlyContext<K>, OnTimerContext<K> {}

/** Visits one key's state in `applyToKeyedState`; the handle is scoped to that key. */
export type KeyedStateFunction<K, S> = (key: K, state: S) => void;

export interface KeyedBroadcastContext<K> extends BroadcastContext {
  /**
   * Calls `fn` for every key of this subtask that holds a value of the keyed state `descriptor`,
   * with the state scoped to that key (it may be read, updated or cleared). Keys are listed first,
   * so keys whose state `fn` creates are not visited.
   */
  applyToKeyedState<T>(descriptor: ValueStateDescriptor<T>, fn: KeyedStateFunction<K, ValueState<T>>): void;
  applyToKeyedState<T>(descriptor: ListStateDescriptor<T>, fn: KeyedStateFunction<K, ListState<T>>): void;
  applyToKeyedState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>, fn: KeyedStateFunction<K, MapState<UK, UV>>): void;
  applyToKeyedState<T>(descriptor: ReducingStateDescriptor<T>, fn: KeyedStateFunction<K, ReducingState<T>>): void;
  applyToKeyedState<IN, ACC, OUT>(descriptor: AggregatingStateDescriptor<IN, ACC, OUT>, fn: KeyedStateFunction<K, AggregatingState<IN, OUT>>): void;
}

/**
 * A non-keyed stream connected to a broadcast stream (`stream.connect(broadcastStream)`): the
 * broadcast records reach every subtask and may change broadcast state; the others only read it.
 */
export interface BroadcastProcessFunction<IN1, IN2, OUT> {
  open?(ctx: RuntimeContext): void;
  processElement(value: IN1, ctx: BroadcastReadOnlyContext, out: Collector<OUT>): void;
  processBroadcastElement(value: IN2, ctx: BroadcastContext, out: Collector<OUT>): void;
  close?(): void;
}

/**
 * A keyed stream connected to a broadcast stream (`keyed.connect(broadcastStream)`): keyed state
 * and timers on the keyed side, broadcast state written by the broadcast side and read by both.
 */
export interface KeyedBroadcastProcessFunction<K, IN1, IN2, OUT> {
  open?(ctx: KeyedRuntimeContext): void;
  processElement(value: IN1, ctx: KeyedBroadcastReadOnlyContext<K>, out: Collector<OUT>): void;
  /** Has no current key: keyed state is reached through `ctx.applyToKeyedState`. */
  processBroadcastElement(value: IN2, ctx: KeyedBroadcastContext<K>, out: Collector<OUT>): void;
  onTimer?(timestamp: number, ctx: KeyedBroadcastOnTimerContext<K>, out: Collector<OUT>): void;
  close?(): void;
}
