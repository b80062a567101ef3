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

/** Receives what a function emits. */
export interface Collector<T> {
  collect(value: T): void;
}

export type MapFunction<IN, OUT> = (value: IN) => OUT;
export type FilterFunction<T> = (value: T) => boolean;
export type FlatMapFunction<IN, OUT> = (value: IN, out: Collector<OUT>) => void;
export type ReduceFunction<T> = (accumulator: T, value: T) => T;
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
