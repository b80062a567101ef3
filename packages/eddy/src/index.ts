/**
 * `eddy`: the public API. Everything a job module imports comes from here; deep imports are not
 * part of the contract (package.json `exports` lists only this file and `eddy/testing`).
 */
export { defineJob, type JobDefinition } from "./api/define-job.ts";
export { StreamExecutionEnvironment } from "./api/environment.ts";
export { DataStream, KeyedStream, DataStreamSink, type NumericField } from "./api/data-stream.ts";
export { ConnectedStreams, KeyedConnectedStreams } from "./api/connected-streams.ts";
export { AsyncDataStream } from "./api/async-data-stream.ts";
export type { AsyncFunction, AsyncFunctionLike, AsyncIoOptions, AsyncRetryOptions } from "./runtime/async-function.ts";
export { reinterpretAsKeyedStream } from "./api/reinterpret-as-keyed-stream.ts";
export { BroadcastConnectedStream, BroadcastStream, KeyedBroadcastConnectedStream } from "./api/broadcast-stream.ts";
export type { BroadcastState, ReadOnlyBroadcastState } from "./runtime/broadcast-state.ts";
export type {
  BroadcastContext,
  BroadcastProcessFunction,
  BroadcastReadOnlyContext,
  Collector,
  CoProcessFunction,
  FilterFunction,
  FlatMapFunction,
  KeyedBroadcastContext,
  KeyedBroadcastOnTimerContext,
  KeyedBroadcastProcessFunction,
  KeyedBroadcastReadOnlyContext,
  KeyedCoProcessFunction,
  KeyedProcessContext,
  KeyedStateFunction,
  KeyedProcessFunction,
  KeyedRuntimeContext,
  KeyedStateStore,
  KeySelector,
  MapFunction,
  OnTimerContext,
  ProcessContext,
  ProcessFunction,
  ReduceFunction,
  RuntimeContext,
  TimerService,
} from "./runtime/functions.ts";
export {
  WatermarkStrategy,
  type TimestampAssigner,
  type WatermarkGenerator,
  type WatermarkOutput,
} from "./core/watermark-strategy.ts";
export { OutputTag } from "./core/output-tag.ts";
export { DEAD_LETTERS, type DeadLetter, type ErrorPolicy, type ErrorPolicyOptions } from "./core/error-policy.ts";
export { EddyError, type ErrorCode, type ErrorDomain } from "./core/errors.ts";
export type { Key } from "./core/key.ts";
export type { OperatorListState } from "./runtime/operator-state.ts";
export type { MetricCounter, MetricGroup, MetricHistogram, MetricMeter, SourceReaderMetricGroup } from "./core/metrics.ts";
export type { ControlledJob, JobStatus, SavepointOptions, SavepointResult, StopOptions } from "./coordinator/control.ts";
export type { Clock } from "./core/clock.ts";
export { SystemClock } from "./core/clock.ts";
export type { Logger } from "./core/logger.ts";
export { MAX_WATERMARK, MIN_WATERMARK } from "./core/time.ts";
export {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
  type AggregateFunction,
  type StateTtlConfig,
  type StateDescriptorOptions,
  type StateCodec,
} from "./state/descriptors.ts";
export type { AggregatingState, ListState, MapState, ReducingState, ValueState } from "./state/state.ts";
export type { DiskStateBackendInput, HeapStateBackendInput, StateBackendKind } from "./state/state-backend-spec.ts";
export type {
  BadRecord,
  Boundedness,
  InputStatus,
  ReaderOutput,
  SourceOutput,
  Source,
  SourceReader,
  SourceReaderContext,
  SplitEnumerator,
  SplitEnumeratorContext,
} from "./connector/source.ts";
export { staticSplitEnumerator } from "./connector/source.ts";
export type { Committer, CommitRetry, Sink, SinkContext, SinkWriter } from "./connector/sink.ts";
export { DEFAULT_COMMIT_RETRY } from "./connector/sink.ts";
export { asyncSink, AsyncSinkWriter, type AsyncSinkOptions } from "./connector/async-sink.ts";
export { FileSource, type CsvFormatOptions, type CsvSourceOptions, type FileSourceOptions, type FileSplit } from "./connector/file/index.ts";
export type { JobResult } from "./coordinator/inline-attempt.ts";
export type { SubtaskMetrics } from "./runtime/stream-task.ts";
export {
  DEFAULT_NEXMARK_CONFIG,
  eventTimestamp,
  nexmarkConfig,
  nexmarkEvent,
  nexmarkSource,
  type Auction,
  type Bid,
  type NexmarkConfig,
  type NexmarkEvent,
  type NexmarkSourceOptions,
  type NexmarkSplitAssignment,
  type NexmarkSplit,
  type Person,
} from "./connector/nexmark/index.ts";
export { WindowedStream } from "./api/windowed-stream.ts";
export { IntervalJoin, IntervalJoined, type ProcessJoinFunction, type ProcessJoinContext } from "./api/interval-join.ts";
export { JoinedStreams, JoinWhereEqual, WindowedJoin, type JoinFunction, type FlatJoinFunction, type CoGroupFunction } from "./api/joined-streams.ts";
export { Time, TimeWindow, GlobalWindow, type Window } from "./runtime/windows/windows.ts";
export {
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
  SlidingEventTimeWindows,
  SlidingProcessingTimeWindows,
  EventTimeSessionWindows,
  ProcessingTimeSessionWindows,
  GlobalWindows,
  WindowStagger,
  type WindowAssigner,
  type WindowAssignerContext,
} from "./runtime/windows/assigners.ts";
export {
  TriggerResult,
  EventTimeTrigger,
  ProcessingTimeTrigger,
  CountTrigger,
  PurgingTrigger,
  ContinuousEventTimeTrigger,
  ContinuousProcessingTimeTrigger,
  type Trigger,
  type TriggerContext,
  type OnMergeContext,
} from "./runtime/windows/triggers.ts";
export { CountEvictor, TimeEvictor, DeltaEvictor, type Evictor, type EvictorContext, type TimestampedValue } from "./runtime/windows/evictors.ts";
export type { WindowFunction, AggregatedWindowFunction, ProcessWindowFunction, ProcessWindowContext } from "./runtime/windows/window-functions.ts";
export { functionFactory, type FunctionFactory, type FunctionObjectOrFactory } from "./runtime/operators/function-instance.ts";
export {
  ByteReader,
  ByteWriter,
  CodecError,
  defaultCodec,
  recordCodec,
  valueCodec,
  type BatchCodec,
  type RecordCodecSpec,
} from "./core/codec/index.ts";
// Checkpoint storage, for a storage module of one's own (`checkpointStorage: { module }`): a
// function `(location: CheckpointLocation) => CheckpointStorage`, e.g. wrapping LocalCheckpointStorage.
export { LocalCheckpointStorage } from "./checkpoint/storage.ts";
export type { CheckpointStorage, FileRef } from "./checkpoint/storage.ts";
export type { CheckpointLocation } from "./executor/checkpoint-storage-ref.ts";
export {
  FileSink,
  type BucketAssignerOption,
  type BucketContext,
  type BucketFunction,
  type CsvFileSinkOptions,
  type DateTimeBuckets,
  type FileSinkOptions,
  type NdjsonFileSinkOptions,
  type ParquetColumn,
  type ParquetFileSinkOptions,
  type RollingPolicyOptions,
} from "./connector/file-sink/index.ts";
