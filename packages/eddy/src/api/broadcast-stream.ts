/**
 * The broadcast state pattern's API, as Flink's: `stream.broadcast(...descriptors)` gives a
 * BroadcastStream (every record goes to every subtask of the operator it is connected to, and the
 * descriptors name the broadcast states that operator keeps); `keyed.connect(broadcastStream)` and
 * `nonKeyed.connect(broadcastStream)` pair it with another stream for a
 * KeyedBroadcastProcessFunction or a BroadcastProcessFunction. Semantics: runtime/broadcast-state.ts
 * and runtime/operators/broadcast-process-operator.ts; docs/broadcast-state.md.
 */
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import type { TwoInputFactory } from "../graph/transformation.ts";
import type { BroadcastProcessFunction, KeyedBroadcastProcessFunction, KeySelector } from "../runtime/functions.ts";
import {
  BROADCAST_METHODS,
  broadcastProcessOperator,
  keyedBroadcastProcessOperator,
  type AnyMapStateDescriptor,
} from "../runtime/operators/broadcast-process-operator.ts";
import { MapStateDescriptor } from "../state/descriptors.ts";
import { ConnectedStreams } from "./connected-streams.ts";
import type { DataStream } from "./data-stream.ts";
import { requireFunctionObject, type FunctionObjectOrFactory } from "../runtime/operators/function-instance.ts";
import type { JobBuilder } from "./job-builder.ts";

/** A stream whose records go to every subtask, with the broadcast states declared for it. Not a DataStream: it is only connected. */
export class BroadcastStream<T> {
  readonly #builder: JobBuilder;
  /** The input, already partitioned by the broadcast partitioner. */
  readonly #stream: DataStream<T>;
  readonly #descriptors: readonly AnyMapStateDescriptor[];

  /** @internal */
  constructor(builder: JobBuilder, broadcasted: DataStream<T>, descriptors: readonly AnyMapStateDescriptor[]) {
    this.#builder = builder;
    this.#stream = broadcasted;
    this.#descriptors = checkBroadcastDescriptors(descriptors);
  }

  /** @internal */
  get _stream(): DataStream<T> {
    return this.#stream;
  }

  /** @internal */
  get _descriptors(): readonly AnyMapStateDescriptor[] {
    return this.#descriptors;
  }

  /** @internal */
  get _builder(): JobBuilder {
    return this.#builder;
  }
}

/** A non-keyed stream connected to a broadcast stream: `.process(BroadcastProcessFunction)`. */
export class BroadcastConnectedStream<IN1, IN2> {
  protected readonly first: DataStream<IN1>;
  protected readonly broadcastStream: BroadcastStream<IN2>;

  /** @internal */
  constructor(first: DataStream<IN1>, broadcast: BroadcastStream<IN2>) {
    this.first = first;
    this.broadcastStream = broadcast;
  }

  /** `fn`: the function object, or a factory of it (called once per subtask). */
  process<R>(fn: FunctionObjectOrFactory<BroadcastProcessFunction<IN1, IN2, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "process", BROADCAST_METHODS);
    return this.addOperator<R>("BroadcastProcess", broadcastProcessOperator(f, this.broadcastStream._descriptors) as unknown as TwoInputFactory, undefined);
  }

  protected addOperator<R>(name: string, factory: TwoInputFactory, keySelector: KeySelector<IN1, Key> | undefined): DataStream<R> {
    const b = this.broadcastStream;
    const keySelectors = keySelector === undefined ? undefined : ([keySelector, undefined] as const);
    // Stateful either way: the broadcast states are the operator's.
    return new ConnectedStreams<IN1, IN2>(b._builder, this.first, b._stream)._transformTwoInput<R>(name, factory, keySelectors, true);
  }
}

/**
 * A keyed stream connected to a broadcast stream: `.process(KeyedBroadcastProcessFunction)`, with
 * keyed state and timers on the keyed side. (A subclass so that KeyedStream.connect may narrow
 * DataStream.connect's result, as in Flink, where both are one class.)
 */
export class KeyedBroadcastConnectedStream<IN1, K extends Key, IN2> extends BroadcastConnectedStream<IN1, IN2> {
  readonly #keySelector: KeySelector<IN1, K>;

  /** @internal */
  constructor(first: DataStream<IN1>, keySelector: KeySelector<IN1, K>, broadcast: BroadcastStream<IN2>) {
    super(first, broadcast);
    this.#keySelector = keySelector;
  }

  override process<R>(fn: FunctionObjectOrFactory<KeyedBroadcastProcessFunction<K, IN1, IN2, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "process", BROADCAST_METHODS);
    const factory = keyedBroadcastProcessOperator(f, this.broadcastStream._descriptors) as unknown as TwoInputFactory;
    return this.addOperator<R>("KeyedBroadcastProcess", factory, this.#keySelector);
  }
}

/** Validates what `stream.broadcast(...)` was given (a config error names what is wrong). */
function checkBroadcastDescriptors(descriptors: readonly unknown[]): readonly AnyMapStateDescriptor[] {
  const names = new Set<string>();
  for (const d of descriptors) {
    if (!(d instanceof MapStateDescriptor)) {
      throw new EddyError("INVALID_BROADCAST_STATE", `broadcast(...) takes MapStateDescriptors (broadcast state is a map), got ${describe(d)}`);
    }
    const what = `broadcast state '${d.name}'`;
    if (names.has(d.name)) throw new EddyError("INVALID_BROADCAST_STATE", `${what} is declared twice in broadcast(...)`);
    names.add(d.name);
    // Operator state records neither expiry times nor schemas, and is not served by key.
    if (d.ttl !== undefined) throw new EddyError("INVALID_BROADCAST_STATE", `${what} has a TTL; broadcast state does not expire (as in Flink)`);
    if (d.codec !== undefined) throw new EddyError("INVALID_BROADCAST_STATE", `${what} has a codec; broadcast state records no schema`);
    if (d.queryableName !== undefined) throw new EddyError("INVALID_BROADCAST_STATE", `${what} is queryable; only keyed state can be queried`);
  }
  return Object.freeze([...(descriptors as AnyMapStateDescriptor[])]);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return (value as object).constructor?.name ?? "an object";
}
