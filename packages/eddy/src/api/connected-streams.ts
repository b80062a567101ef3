/** Two streams of possibly different types processed together by one two-input function. */
import type { Key } from "../core/key.ts";
import type { Transformation, TwoInputFactory } from "../graph/transformation.ts";
import type { CoProcessFunction, KeyedCoProcessFunction, KeySelector } from "../runtime/functions.ts";
import { keyedCoProcessOperator } from "../runtime/operators/keyed-process-operator.ts";
import { coProcessOperator } from "../runtime/operators/process-operator.ts";
import type { AnyKeySelector } from "../runtime/operator.ts";
import { requireFunctionObject, type FunctionObjectOrFactory } from "../runtime/operators/function-instance.ts";
import { DataStream, requireFunction } from "./data-stream.ts";
import type { JobBuilder } from "./job-builder.ts";

export class ConnectedStreams<T1, T2> {
  readonly #builder: JobBuilder;
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;

  /** @internal */
  constructor(builder: JobBuilder, first: DataStream<T1>, second: DataStream<T2>) {
    this.#builder = builder;
    this.#first = first;
    this.#second = second;
  }

  process<R = never>(fn: FunctionObjectOrFactory<CoProcessFunction<T1, T2, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "process", ["processElement1", "processElement2"]);
    return addTwoInput<R>(this.#builder, "CoProcess", this.#first, this.#second, coProcessOperator(f) as unknown as TwoInputFactory, undefined, false);
  }

  /**
   * @internal adds a two-input operator over both streams, keyed when `keySelectors` is given (the
   * inputs must then already be partitioned by those keys; a broadcast input has no key selector);
   * used by IntervalJoin and the broadcast state pattern. `stateful`: by default, whether it is keyed.
   */
  _transformTwoInput<R>(
    name: string,
    factory: TwoInputFactory,
    keySelectors: readonly [AnyKeySelector, AnyKeySelector | undefined] | undefined,
    stateful = keySelectors !== undefined,
  ): DataStream<R> {
    return addTwoInput<R>(this.#builder, name, this.#first, this.#second, factory, keySelectors, stateful);
  }

  /** Partitions both inputs by key so records of one key from either input meet in one subtask. */
  keyBy<K extends Key>(keySelector1: KeySelector<T1, K>, keySelector2: KeySelector<T2, K>): KeyedConnectedStreams<T1, T2, K> {
    requireFunction(keySelector1, "keyBy");
    requireFunction(keySelector2, "keyBy");
    return new KeyedConnectedStreams<T1, T2, K>(
      this.#builder,
      this.#first.keyBy(keySelector1),
      this.#second.keyBy(keySelector2),
      [keySelector1, keySelector2],
    );
  }
}

export class KeyedConnectedStreams<T1, T2, K extends Key> {
  readonly #builder: JobBuilder;
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;
  readonly #keySelectors: readonly [AnyKeySelector, AnyKeySelector];

  /** @internal */
  constructor(
    builder: JobBuilder,
    first: DataStream<T1>,
    second: DataStream<T2>,
    keySelectors: readonly [AnyKeySelector, AnyKeySelector],
  ) {
    this.#builder = builder;
    this.#first = first;
    this.#second = second;
    this.#keySelectors = keySelectors;
  }

  /** A two-input function with keyed state and timers shared by both inputs of a key. */
  process<R = never>(fn: FunctionObjectOrFactory<KeyedCoProcessFunction<K, T1, T2, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "process", ["processElement1", "processElement2"]);
    return addTwoInput<R>(
      this.#builder,
      "KeyedCoProcess",
      this.#first,
      this.#second,
      keyedCoProcessOperator(f) as unknown as TwoInputFactory,
      this.#keySelectors,
      true,
    );
  }
}

function addTwoInput<R>(
  builder: JobBuilder,
  name: string,
  first: { readonly _transformation: Transformation },
  second: { readonly _transformation: Transformation },
  factory: TwoInputFactory,
  keySelectors: readonly [AnyKeySelector, AnyKeySelector | undefined] | undefined,
  stateful: boolean,
): DataStream<R> {
  const t = builder.add({
    kind: "two-input",
    id: builder.nextId(),
    name,
    uid: undefined,
    parallelism: undefined,
    maxParallelism: undefined,
    codec: undefined,
    stateful,
    input1: first._transformation,
    input2: second._transformation,
    factory,
    keySelectors,
  });
  return new DataStream<R>(builder, t);
}
