/**
 * DataStream and KeyedStream: the typed, fluent API that builds transformations. (KeyedStream
 * extends DataStream, as in Flink, so both live in this file: a subclass in another module would
 * need its base class at module-evaluation time, which the import cycle cannot give.)
 */
import type { BatchCodec } from "../core/codec/codec.ts";
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import { checkParallelism, MAX_MAX_PARALLELISM } from "../core/key-group.ts";
import { requireOutputTag, type OutputTag } from "../core/output-tag.ts";
import { DEAD_LETTERS, errorPolicySpec, FAIL_POLICY, type DeadLetter, type ErrorPolicy, type ErrorPolicyOptions } from "../core/error-policy.ts";
import type { WatermarkStrategy } from "../core/watermark-strategy.ts";
import { printSink } from "../connector/print-sink.ts";
import type { Sink } from "../connector/sink.ts";
import type {
  OneInputFactory,
  OneInputTransformation,
  PhysicalTransformation,
  Transformation,
} from "../graph/transformation.ts";
import { ReducingStateDescriptor, ValueStateDescriptor, type MapStateDescriptor } from "../state/descriptors.ts";
import type { PartitionerSpec } from "../runtime/channels/partitioner.ts";
import type {
  Collector,
  FilterFunction,
  KeyedProcessFunction,
  FlatMapFunction,
  KeySelector,
  MapFunction,
  ProcessFunction,
  ReduceFunction,
} from "../runtime/functions.ts";
import type { AnyKeySelector, OneInputOperator, OperatorContext, Output } from "../runtime/operator.ts";
import { keyedProcessOperator } from "../runtime/operators/keyed-process-operator.ts";
import { processOperator } from "../runtime/operators/process-operator.ts";
import { requireFunctionObject, type FunctionObjectOrFactory } from "../runtime/operators/function-instance.ts";
import {
  fieldAggregation,
  rollingReduceOperator,
  type AggregationKind,
} from "../runtime/operators/rolling-reduce-operator.ts";
import { sinkOperator } from "../runtime/operators/sink-operator.ts";
import { filterOperator, flatMapOperator, mapOperator } from "../runtime/operators/stateless-operators.ts";
import { timestampsAndWatermarksOperator } from "../runtime/operators/timestamps-and-watermarks-operator.ts";
import { ConnectedStreams } from "./connected-streams.ts";
import { BroadcastConnectedStream, BroadcastStream, KeyedBroadcastConnectedStream } from "./broadcast-stream.ts";
import { WindowedStream } from "./windowed-stream.ts";
import { JoinedStreams } from "./joined-streams.ts";
import { IntervalJoin } from "./interval-join.ts";
import { GlobalWindows, type WindowAssigner } from "../runtime/windows/assigners.ts";
import { CountEvictor } from "../runtime/windows/evictors.ts";
import { CountTrigger, PurgingTrigger } from "../runtime/windows/triggers.ts";
import type { GlobalWindow, Window } from "../runtime/windows/windows.ts";
import type { JobBuilder } from "./job-builder.ts";

type AnyFactory<IN, OUT> = (ctx: OperatorContext, output: Output<OUT>) => OneInputOperator<IN>;

/** Settings shared by every operator handle: `.uid()`, `.name()`, `.setParallelism()`. */
abstract class OperatorHandle {
  protected readonly builder: JobBuilder;
  /** @internal */
  readonly _transformation: Transformation;

  constructor(builder: JobBuilder, transformation: Transformation) {
    this.builder = builder;
    this._transformation = transformation;
  }

  /** Stable operator id; savepoints match state to operators by it. Set it on stateful operators. */
  uid(id: string): this {
    if (typeof id !== "string" || id.length === 0) throw new TypeError("uid needs a non-empty string");
    const t = this.#physical("uid");
    if (t.ofSource === undefined) {
      t.uid = id;
    } else {
      t.ofSource.uid = id;
      t.uid = `${id}-watermarks`;
    }
    return this;
  }

  /** Display name in logs, errors and metrics. */
  name(name: string): this {
    if (typeof name !== "string" || name.length === 0) throw new TypeError("name needs a non-empty string");
    this.#physical("name").name = name;
    return this;
  }

  setParallelism(parallelism: number): this {
    checkParallelism(parallelism, MAX_MAX_PARALLELISM);
    const t = this.#physical("setParallelism");
    t.parallelism = parallelism;
    if (t.ofSource !== undefined) t.ofSource.parallelism = parallelism;
    return this;
  }

  setMaxParallelism(maxParallelism: number): this {
    checkParallelism(1, maxParallelism);
    const t = this.#physical("setMaxParallelism");
    t.maxParallelism = maxParallelism;
    if (t.ofSource !== undefined) t.ofSource.maxParallelism = maxParallelism;
    return this;
  }

  #physical(what: string): PhysicalTransformation {
    const t = this._transformation;
    if (t.kind === "source" || t.kind === "one-input" || t.kind === "two-input") return t;
    throw new EddyError("NOT_AN_OPERATOR", `${what}() applies to an operator, not to a ${t.kind} of streams`);
  }
}

export class DataStream<T> extends OperatorHandle {
  /** @internal */
  constructor(builder: JobBuilder, transformation: Transformation) {
    super(builder, transformation);
  }

  /**
   * Sets how this operator's records are encoded when they go to a subtask on another thread
   * (e.g. an Avro or Protobuf codec through `recordCodec`). Records that stay on one thread are
   * never encoded. Default: the built-in codec, which handles JSON-like values, bigint, Date,
   * Uint8Array, Map and Set, and learns record shapes to encode batches column-wise.
   */
  setCodec(codec: BatchCodec): this {
    if (codec === null || typeof codec !== "object" || typeof codec.encode !== "function" || typeof codec.decode !== "function") {
      throw new TypeError("setCodec needs a BatchCodec (see recordCodec for per-record codecs)");
    }
    const t = this._transformation;
    if (t.kind !== "source" && t.kind !== "one-input" && t.kind !== "two-input") {
      throw new EddyError("NOT_AN_OPERATOR", `setCodec() applies to an operator, not to a ${t.kind} of streams`);
    }
    t.codec = codec;
    return this;
  }

  /**
   * What this operator does with a record its user function throws on — or, for a source, input
   * its reader cannot read (docs/error-policy.md): `"fail"` (the default) fails the job,
   * `"skip"` drops and counts the record (numRecordsSkipped), `"dead-letter"` sends it to
   * `deadLetters()` and counts it (numRecordsDeadLettered). With `{ maxPerMinute: n }` the job
   * still fails when a subtask would skip or dead-letter more than n records within a minute
   * (ERROR_POLICY_BOUND_EXCEEDED).
   *
   * Applies to map, filter, flatMap, process, a keyed stream's process (its key selector
   * included), assignTimestampsAndWatermarks (the timestamp assigner), async I/O (a record whose
   * request failed or timed out: AsyncDataStream) and sources (on the stream fromSource returns:
   * the source's bad records and its timestamp assigner).
   */
  onError(policy: ErrorPolicy, options?: ErrorPolicyOptions): this {
    const spec = errorPolicySpec(policy, options);
    const t = this._transformation;
    if ((t.kind !== "one-input" && t.kind !== "source") || t.errorPolicy === undefined) {
      const what = t.kind === "one-input" || t.kind === "two-input" || t.kind === "source" ? `operator '${t.name}'` : `a ${t.kind} of streams`;
      throw new EddyError(
        "INVALID_ERROR_POLICY",
        `onError() applies to map, filter, flatMap, process, keyed process, assignTimestampsAndWatermarks, async I/O (AsyncDataStream) and sources, not to ${what}`,
      );
    }
    t.errorPolicy = spec;
    if (t.ofSource !== undefined) t.ofSource.errorPolicy = spec;
    return this;
  }

  /**
   * The records this operator dead-lettered (its policy must be `onError("dead-letter")`, set
   * before): the side output DEAD_LETTERS, a stream like any other, to send to any sink. For the
   * stream fromSource returns, the source's and its timestamp assigner's dead letters together.
   */
  deadLetters(): DataStream<DeadLetter> {
    const t = this._transformation;
    if ((t.kind !== "one-input" && t.kind !== "source") || t.errorPolicy?.policy !== "dead-letter") {
      throw new EddyError(
        "INVALID_ERROR_POLICY",
        `deadLetters() needs an operator whose error policy is "dead-letter": call .onError("dead-letter") on it first`,
      );
    }
    const own = this.getSideOutput(DEAD_LETTERS);
    if (t.ofSource === undefined) return own;
    const ofSource = this.builder.add({ kind: "side-output", id: this.builder.nextId(), input: t.ofSource, tag: DEAD_LETTERS as OutputTag<unknown> });
    return new DataStream<DeadLetter>(this.builder, ofSource).union(own);
  }

  /** @internal marks the operator this stream comes from as one that applies an error policy (onError). */
  _withErrorPolicy(): this {
    const t = this._transformation;
    if (t.kind === "one-input" || t.kind === "source") t.errorPolicy ??= FAIL_POLICY;
    return this;
  }

  /** @internal adds a one-input operator consuming this stream. */
  _transform<R>(name: string, factory: AnyFactory<T, R>, stateful: boolean, keySelector?: AnyKeySelector): DataStream<R> {
    return new DataStream<R>(this.builder, this._addOneInput(name, factory, stateful, keySelector, false));
  }

  /** @internal */
  _addOneInput<R>(
    name: string,
    factory: AnyFactory<T, R>,
    stateful: boolean,
    keySelector: AnyKeySelector | undefined,
    isSink: boolean,
    /** Where an operator the API inserts goes (default: after this stream, with the next id). */
    at?: { readonly input: Transformation; readonly id: number },
  ): OneInputTransformation {
    return this.builder.add({
      kind: "one-input",
      id: at?.id ?? this.builder.nextId(),
      name,
      uid: undefined,
      parallelism: undefined,
      maxParallelism: undefined,
      codec: undefined,
      stateful,
      input: at?.input ?? this._transformation,
      factory: factory as unknown as OneInputFactory,
      keySelector,
      isSink,
    });
  }

  map<R>(fn: MapFunction<T, R>): DataStream<R> {
    requireFunction(fn, "map");
    return this._transform("Map", mapOperator(fn), false)._withErrorPolicy();
  }

  filter(fn: FilterFunction<T>): DataStream<T> {
    requireFunction(fn, "filter");
    return this._transform("Filter", filterOperator(fn), false)._withErrorPolicy();
  }

  /**
   * Emits zero or more records per input record through `out.collect(...)`. The output type comes
   * from the collector: annotate it (`(line, out: Collector<Word>) => …`) or pass it
   * (`flatMap<Word>(…)`). TypeScript cannot infer it from the `collect` calls, so without either it
   * is `never` and the first `out.collect(x)` fails to compile (rather than yielding `any`).
   */
  flatMap<R = never>(fn: FlatMapFunction<T, R>): DataStream<R> {
    requireFunction(fn, "flatMap");
    return this._transform("FlatMap", flatMapOperator(fn), false)._withErrorPolicy();
  }

  /** Partitions by key: every record with the same key reaches the same subtask and state. */
  /** Window join with `other`: `.where(k1).equalTo(k2).window(assigner).apply((l, r) => out)`. */
  join<R>(other: DataStream<R>): JoinedStreams<T, R, "join"> {
    return new JoinedStreams<T, R, "join">("join", this, other);
  }

  /** Window co-group with `other` (outer joins): `.apply((lefts, rights, out) => ...)`. */
  coGroup<R>(other: DataStream<R>): JoinedStreams<T, R, "coGroup"> {
    return new JoinedStreams<T, R, "coGroup">("coGroup", this, other);
  }

  /** Windows over the whole (non-keyed) stream, evaluated by one subtask (parallelism 1). */
  windowAll<W extends Window>(assigner: WindowAssigner<T, W>): WindowedStream<T, number, W> {
    return new WindowedStream<T, number, W>(this.keyBy(() => 0), assigner, true);
  }

  keyBy<K extends Key>(keySelector: KeySelector<T, K>): KeyedStream<T, K> {
    requireFunction(keySelector, "keyBy");
    const t = this.builder.add({
      kind: "partition",
      id: this.builder.nextId(),
      input: this._transformation,
      partitioner: { type: "key-group", keySelector },
    });
    return new KeyedStream<T, K>(this.builder, t, keySelector);
  }

  /**
   * Runs `fn.processElement(value, ctx, out)` per record. The output type is the collector's: from
   * a class implementing ProcessFunction<T, R>, an annotated `out: Collector<R>`, or `process<R>(…)`;
   * otherwise `never` (collecting then fails to compile; see flatMap).
   */
  process<R = never>(fn: FunctionObjectOrFactory<ProcessFunction<T, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "process", ["processElement"]);
    return this._transform("Process", processOperator(f), false)._withErrorPolicy();
  }

  /** Merges streams of the same type (no order between them). */
  union(...others: DataStream<T>[]): DataStream<T> {
    const t = this.builder.add({
      kind: "union",
      id: this.builder.nextId(),
      inputs: [this._transformation, ...others.map((o) => o._transformation)],
    });
    return new DataStream<T>(this.builder, t);
  }

  /**
   * Pairs this stream with another, possibly of another type, for a two-input function; with a
   * BroadcastStream (`stream.broadcast(descriptors)`), for a BroadcastProcessFunction.
   */
  connect<T2>(other: BroadcastStream<T2>): BroadcastConnectedStream<T, T2>;
  connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  connect<T2>(other: DataStream<T2> | BroadcastStream<T2>): ConnectedStreams<T, T2> | BroadcastConnectedStream<T, T2> {
    if (other instanceof BroadcastStream) return new BroadcastConnectedStream<T, T2>(this, other);
    return new ConnectedStreams<T, T2>(this.builder, this, other);
  }

  assignTimestampsAndWatermarks(strategy: WatermarkStrategy<T>): DataStream<T> {
    if (strategy.alignment !== undefined) {
      // Alignment pauses a source's reading; this operator has no source to pause (Flink applies it in SourceOperator only).
      throw new EddyError("WATERMARK_ALIGNMENT_WITHOUT_SOURCE", `watermark alignment (group '${strategy.alignment.group}') applies to fromSource only: give the strategy to env.fromSource(source, strategy, name)`);
    }
    return this._transform("Timestamps/Watermarks", timestampsAndWatermarksOperator(strategy), false)._withErrorPolicy();
  }

  /** The records this operator emitted to `tag` with `ctx.output(tag, value)`. */
  getSideOutput<S>(tag: OutputTag<S>): DataStream<S> {
    requireOutputTag(tag, "getSideOutput(tag)");
    const t = this.builder.add({
      kind: "side-output",
      id: this.builder.nextId(),
      input: this._transformation,
      tag: tag as OutputTag<unknown>,
    });
    return new DataStream<S>(this.builder, t);
  }

  sinkTo(sink: Sink<T>, name = "Sink"): DataStreamSink<T> {
    if (sink === null || typeof sink !== "object" || typeof sink.createWriter !== "function") {
      throw new TypeError("sinkTo needs a sink object with createWriter(context)");
    }
    return new DataStreamSink<T>(this.builder, this._addOneInput(name, sinkOperator(sink), false, undefined, true));
  }

  /** Writes one JSON line per record to standard output. */
  print(): DataStreamSink<T> {
    return this.sinkTo(printSink<T>(), "Sink: Print");
  }

  rebalance(): DataStream<T> {
    return this.#partition({ type: "rebalance" });
  }

  rescale(): DataStream<T> {
    return this.#partition({ type: "rescale" });
  }

  /**
   * Sends every record to every subtask of the next operator. With MapStateDescriptors, gives a
   * BroadcastStream to `connect` to another stream (the broadcast state pattern): the descriptors
   * name the broadcast states the connected function keeps (docs/broadcast-state.md).
   */
  broadcast(): DataStream<T>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- states of any key and value types
  broadcast(...descriptors: [MapStateDescriptor<any, any>, ...MapStateDescriptor<any, any>[]]): BroadcastStream<T>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  broadcast(...descriptors: MapStateDescriptor<any, any>[]): DataStream<T> | BroadcastStream<T> {
    const partitioned = this.#partition({ type: "broadcast" });
    return descriptors.length === 0 ? partitioned : new BroadcastStream<T>(this.builder, partitioned, descriptors);
  }

  forward(): DataStream<T> {
    return this.#partition({ type: "forward" });
  }

  /** Sends each record to `partitioner(key, numPartitions)`. */
  partitionCustom<K>(partitioner: (key: K, numPartitions: number) => number, keySelector: KeySelector<T, K>): DataStream<T> {
    requireFunction(partitioner, "partitionCustom");
    requireFunction(keySelector, "partitionCustom");
    return this.#partition({ type: "custom", keySelector, partition: partitioner as (key: never, n: number) => number });
  }

  /** @internal reinterpretAsKeyedStream (api/reinterpret-as-keyed-stream.ts): keyed, over a forward edge. */
  _reinterpretAsKeyed<K extends Key>(keySelector: KeySelector<T, K>): KeyedStream<T, K> {
    return new KeyedStream<T, K>(this.builder, this.forward()._transformation, keySelector);
  }

  #partition(partitioner: PartitionerSpec): DataStream<T> {
    const t = this.builder.add({ kind: "partition", id: this.builder.nextId(), input: this._transformation, partitioner });
    return new DataStream<T>(this.builder, t);
  }
}

export class KeyedStream<T, K extends Key> extends DataStream<T> {
  readonly #keySelector: KeySelector<T, K>;

  /** @internal */
  constructor(builder: JobBuilder, transformation: Transformation, keySelector: KeySelector<T, K>) {
    super(builder, transformation);
    this.#keySelector = keySelector;
  }

  /** @internal */
  get _keySelector(): KeySelector<T, K> {
    return this.#keySelector;
  }

  /**
   * @internal Local window aggregation (WindowedStream): `local` (made by `factory`) is put between
   * this keyBy's input and the keyBy, which then partitions its output by `keySelector`. Undefined
   * when this keyed stream is not a keyBy (reinterpretAsKeyedStream: nothing is shuffled).
   */
  _keyedAfterLocal<R, K2 extends Key>(
    name: string,
    factory: AnyFactory<T, R>,
    keySelector: KeySelector<R, K2>,
  ): { keyed: KeyedStream<R, K2>; local: OneInputTransformation } | undefined {
    const keyBy = this._transformation;
    if (keyBy.kind !== "partition" || keyBy.partitioner.type !== "key-group") return undefined;
    const local = this._addOneInput(name, factory, false, undefined, false, { input: keyBy.input, id: this.builder.insertedId(keyBy.id) });
    const partials = this.builder.add({
      kind: "partition",
      id: this.builder.insertedId(keyBy.id),
      input: local,
      partitioner: { type: "key-group", keySelector },
    });
    return { keyed: new KeyedStream<R, K2>(this.builder, partials, keySelector), local };
  }

  /** A process function with keyed state and timers of the current key; output type as DataStream.process. */
  override process<R = never>(fn: FunctionObjectOrFactory<KeyedProcessFunction<K, T, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "process", ["processElement"]);
    return this._transform("KeyedProcess", keyedProcessOperator(f), true, this.#keySelector)._withErrorPolicy();
  }

  /** As DataStream's; with a BroadcastStream, for a KeyedBroadcastProcessFunction (keyed state and timers). */
  override connect<T2>(other: BroadcastStream<T2>): KeyedBroadcastConnectedStream<T, K, T2>;
  override connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  override connect<T2>(other: DataStream<T2> | BroadcastStream<T2>): ConnectedStreams<T, T2> | KeyedBroadcastConnectedStream<T, K, T2> {
    if (other instanceof BroadcastStream) return new KeyedBroadcastConnectedStream<T, K, T2>(this, this.#keySelector, other);
    return super.connect(other);
  }

  /** Joins with `other` on event time: `.between(lowerMs, upperMs).process(fn)`; see IntervalJoin. */
  intervalJoin<T2>(other: KeyedStream<T2, K>): IntervalJoin<T, T2, K> {
    return new IntervalJoin(this, other);
  }

  /** Cuts the keyed stream into windows; see WindowedStream for triggers, lateness and functions. */
  window<W extends Window>(assigner: WindowAssigner<T, W>): WindowedStream<T, K, W> {
    return new WindowedStream<T, K, W>(this, assigner, false);
  }

  /**
   * Count windows: every `size` elements of a key (tumbling), or the last `size` elements every
   * `slide` elements (sliding).
   */
  countWindow(size: number, slide?: number): WindowedStream<T, K, GlobalWindow> {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`countWindow needs a size ≥ 1, got ${size}`);
    const windowed = new WindowedStream<T, K, GlobalWindow>(this, GlobalWindows.create<T>(), false);
    if (slide === undefined) return windowed.trigger(PurgingTrigger.of(CountTrigger.of<T, GlobalWindow>(size)));
    if (!Number.isInteger(slide) || slide < 1) throw new RangeError(`countWindow needs a slide ≥ 1, got ${slide}`);
    return windowed.evictor(CountEvictor.of<T, GlobalWindow>(size)).trigger(CountTrigger.of<T, GlobalWindow>(slide));
  }

  /**
   * Keeps the latest record of each key (or, with a ReducingStateDescriptor, the reduction of
   * all of them) in keyed state readable from outside the job under `name` (issue 8:
   * `eddy/query`, `eddy query`, `GET /v1/jobs/:id/state/:name/:key`). A sink: set its uid.
   */
  asQueryableState(name: string, descriptor?: ValueStateDescriptor<T> | ReducingStateDescriptor<T>): DataStreamSink<T> {
    const d = (descriptor ?? new ValueStateDescriptor<T>(name)).setQueryable(name);
    const fn: KeyedProcessFunction<K, T, never> =
      d instanceof ReducingStateDescriptor
        ? { processElement: (value, ctx) => ctx.getReducingState(d).add(value) }
        : { processElement: (value, ctx) => ctx.getState(d).update(value) };
    const t = this._addOneInput(`Queryable state '${name}'`, keyedProcessOperator(fn), true, this.#keySelector, true);
    return new DataStreamSink<T>(this.builder, t);
  }

  /** Rolling reduce: emits the key's running result after every record. */
  reduce(fn: ReduceFunction<T>): DataStream<T> {
    requireFunction(fn, "reduce");
    return this._transform("Reduce", rollingReduceOperator(fn), true, this.#keySelector);
  }

  /** Rolling sum of `field` (or of the records themselves when they are numbers). */
  sum(field?: NumericField<T>): DataStream<T> {
    return this.#aggregate("sum", field);
  }

  /** Rolling minimum of `field`; other fields keep the key's first record (see minBy). */
  min(field?: NumericField<T>): DataStream<T> {
    return this.#aggregate("min", field);
  }

  max(field?: NumericField<T>): DataStream<T> {
    return this.#aggregate("max", field);
  }

  /** Rolling record with the smallest `field` (the first one on ties). */
  minBy(field?: NumericField<T>): DataStream<T> {
    return this.#aggregate("minBy", field);
  }

  maxBy(field?: NumericField<T>): DataStream<T> {
    return this.#aggregate("maxBy", field);
  }

  #aggregate(kind: AggregationKind, field: string | undefined): DataStream<T> {
    const name = field === undefined ? kind[0]!.toUpperCase() + kind.slice(1) : `${kind}(${field})`;
    const stream = this._transform<T>(name, (ctx, output) => rollingReduceOperator<T>(fieldAggregation(kind, field, ctx.operatorName))(ctx, output), true, this.#keySelector);
    return stream;
  }
}

/** The names of number-valued fields of T (any string when T is not a record type). */
export type NumericField<T> = T extends object ? { [P in keyof T]: T[P] extends number ? P : never }[keyof T] & string : string;

/** The handle of a sink: sets uid, name, parallelism and the error policy of records the sink's service refuses. */
export class DataStreamSink<T> extends OperatorHandle {
  declare readonly __type?: T;

  /**
   * What the sink does with a record its service refuses for its own values (a constraint
   * violation, a value of the wrong type: sinks that report them through
   * `SinkContext.reportBadRecord`, such as PostgresSink): `"fail"` (the default) fails the job,
   * `"skip"` drops and counts it, `"dead-letter"` sends it to `deadLetters()`. `maxPerMinute`
   * bounds the latter two as for other operators (docs/error-policy.md).
   */
  onError(policy: ErrorPolicy, options?: ErrorPolicyOptions): this {
    const spec = errorPolicySpec(policy, options);
    const t = this._transformation;
    if (t.kind === "one-input") t.errorPolicy = spec;
    return this;
  }

  /** The records this sink dead-lettered (its policy must be `onError("dead-letter")`, set before). */
  deadLetters(): DataStream<DeadLetter> {
    const t = this._transformation;
    if (t.kind !== "one-input" || t.errorPolicy?.policy !== "dead-letter") {
      throw new EddyError("INVALID_ERROR_POLICY", `deadLetters() needs a sink whose error policy is "dead-letter": call .onError("dead-letter") on it first`);
    }
    const side = this.builder.add({ kind: "side-output", id: this.builder.nextId(), input: t, tag: DEAD_LETTERS as OutputTag<unknown> });
    return new DataStream<DeadLetter>(this.builder, side);
  }
}

export function requireFunction(fn: unknown, what: string): void {
  if (typeof fn !== "function") throw new TypeError(`${what} needs a function, got ${fn === null ? "null" : typeof fn}`);
}

