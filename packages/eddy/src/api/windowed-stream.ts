/**
 * WindowedStream: a keyed stream cut into windows (`keyed.window(assigner)`), configured with a
 * trigger, an evictor, allowed lateness and a late-data side output, then evaluated by reduce,
 * aggregate, process or apply. `windowAll` is the same over one key on one subtask.
 */
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import { requireOutputTag, type OutputTag } from "../core/output-tag.ts";
import type { AggregateFunction } from "../state/descriptors.ts";
import type { ReduceFunction } from "../runtime/functions.ts";
import type { WindowAssigner } from "../runtime/windows/assigners.ts";
import type { Evictor } from "../runtime/windows/evictors.ts";
import type { Trigger } from "../runtime/windows/triggers.ts";
import type { AnyAggregatedWindowFunction, AnyWindowFunction, ProcessWindowFunction, WindowFunction } from "../runtime/windows/window-functions.ts";
import { windowOperator, type WindowContents } from "../runtime/windows/window-operator.ts";
import type { TimeWindow, Window } from "../runtime/windows/windows.ts";
import { slidingPaneOperator, type PaneFunctions } from "../runtime/windows/sliding-pane-operator.ts";
import { copyValue } from "../state/copy-value.ts";
import { isFunctionFactory, requireFunctionObject, type FunctionObjectOrFactory } from "../runtime/operators/function-instance.ts";
import { DEFAULT_LOCAL_AGGREGATION_ENTRIES, globalPaneFunctions, localWindowAggregationOperator, sessionPartialAssigner } from "../runtime/windows/local-window-aggregation.ts";
import { partialKey, type LocalPartial } from "../runtime/windows/local-partial.ts";
import type { PhysicalTransformation } from "../graph/transformation.ts";
import type { DataStream, KeyedStream } from "./data-stream.ts";

export class WindowedStream<T, K extends Key, W extends Window> {
  readonly #input: KeyedStream<T, K>;
  readonly #assigner: WindowAssigner<T, W>;
  readonly #all: boolean;
  #trigger: Trigger<T, W> | undefined;
  #evictor: Evictor<T, W> | undefined;
  #allowedLateness = 0;
  #lateTag: OutputTag<T> | undefined;
  #localAggregation = true;

  /** @internal */
  constructor(input: KeyedStream<T, K>, assigner: WindowAssigner<T, W>, all: boolean) {
    if (assigner === null || typeof assigner !== "object" || typeof assigner.assignWindows !== "function") {
      throw new TypeError("window needs a WindowAssigner, e.g. TumblingEventTimeWindows.of(Time.seconds(10))");
    }
    this.#input = input;
    this.#assigner = assigner;
    this.#all = all;
  }

  /** Replaces the assigner's default trigger. */
  trigger(trigger: Trigger<T, W>): this {
    if (trigger === null || typeof trigger !== "object" || typeof trigger.onElement !== "function") {
      throw new TypeError("trigger needs a Trigger (onElement, onEventTime, onProcessingTime, clear)");
    }
    this.#trigger = trigger;
    return this;
  }

  /** Removes elements from a window before and/or after the window function runs. */
  evictor(evictor: Evictor<T, W>): this {
    if (evictor === null || typeof evictor !== "object" || (typeof evictor.evictBefore !== "function" && typeof evictor.evictAfter !== "function")) {
      throw new TypeError("evictor needs an Evictor (evictBefore and/or evictAfter)");
    }
    this.#evictor = evictor;
    return this;
  }

  /** How long after a window's end late elements still update it (default 0). Event time only. */
  allowedLateness(ms: number): this {
    if (typeof ms !== "number" || !(ms >= 0) || !Number.isFinite(ms)) throw new RangeError(`allowedLateness needs a finite number ≥ 0 ms, got ${String(ms)}`);
    if (ms > 0 && !this.#assigner.isEventTime) {
      throw new EddyError("INVALID_WINDOW", `allowedLateness applies to event-time windows; ${this.#assigner.description} is not`);
    }
    this.#allowedLateness = ms;
    return this;
  }

  /**
   * Whether reduce/aggregate windows pre-aggregate on the sending side of the keyBy (default: on).
   * Applies to event-time tumbling windows, sliding windows whose size is a multiple of the slide
   * and event-time sessions, with the default trigger, no evictor, no allowed lateness and no
   * late-data side output; elsewhere it has no effect. docs/design/windows-state.md, "Local
   * (two-phase) aggregation".
   */
  localAggregation(enabled: boolean): this {
    if (typeof enabled !== "boolean") throw new TypeError(`localAggregation needs true or false, got ${String(enabled)}`);
    this.#localAggregation = enabled;
    return this;
  }

  /** Elements too late for any window go to this side output instead of being dropped. */
  sideOutputLateData(tag: OutputTag<T>): this {
    requireOutputTag(tag, "sideOutputLateData(tag)");
    this.#lateTag = tag;
    return this;
  }

  /** Incremental: one reduced value per window; `windowFn` (optional) gets it as a one-element array. */
  reduce(fn: ReduceFunction<T>): DataStream<T>;
  reduce<R = never>(fn: ReduceFunction<T>, windowFn: AnyAggregatedWindowFunction<T, R, K, W>): DataStream<R>;
  reduce<R>(fn: ReduceFunction<T>, windowFn?: AnyAggregatedWindowFunction<T, R, K, W>): DataStream<R | T> {
    if (typeof fn !== "function") throw new TypeError("reduce needs a function (a, b) => c");
    return this.#build("Reduce", { kind: "reduce", reduce: fn }, windowFn as AnyWindowFunction<unknown, unknown, Key, W> | undefined);
  }

  /** Incremental: one accumulator per window (never a buffer of elements); `windowFn` gets its result as a one-element array. */
  aggregate<ACC, V>(fn: AggregateFunction<T, ACC, V>): DataStream<V>;
  aggregate<ACC, V, R = never>(fn: AggregateFunction<T, ACC, V>, windowFn: AnyAggregatedWindowFunction<V, R, K, W>): DataStream<R>;
  aggregate<ACC, V, R>(fn: AggregateFunction<T, ACC, V>, windowFn?: AnyAggregatedWindowFunction<V, R, K, W>): DataStream<R | V> {
    for (const m of ["createAccumulator", "add", "getResult"] as const) {
      if (fn === null || typeof fn !== "object" || typeof fn[m] !== "function") throw new TypeError(`aggregate needs an AggregateFunction with ${m}()`);
    }
    if (this.#assigner.mergeWindows !== undefined && typeof fn.merge !== "function" && this.#evictor === undefined) {
      throw new EddyError("AGGREGATE_NEEDS_MERGE", `${this.#assigner.description} merges windows: the AggregateFunction needs merge(a, b)`);
    }
    return this.#build("Aggregate", { kind: "aggregate", aggregate: fn as AggregateFunction<T, unknown, unknown> }, windowFn as AnyWindowFunction<unknown, unknown, Key, W> | undefined);
  }

  /**
   * Buffers the window's elements and hands them all to `fn` with the window and keyed state. The
   * output type is the collector's (`out: Collector<R>`, a class, or `process<R>(…)`), else `never`.
   */
  process<R = never>(fn: FunctionObjectOrFactory<ProcessWindowFunction<T, R, K, W>>): DataStream<R> {
    const f = requireFunctionObject(fn, "process (a ProcessWindowFunction)", ["process"]);
    return this.#build("Process", { kind: "list" }, f as AnyWindowFunction<unknown, unknown, Key, W>);
  }

  /** Buffers the window's elements and calls `fn(key, window, elements, out)`. */
  apply<R = never>(fn: WindowFunction<T, R, K, W>): DataStream<R> {
    if (typeof fn !== "function") throw new TypeError("apply needs a function (key, window, elements, out) => void");
    return this.#build("Apply", { kind: "list" }, fn as AnyWindowFunction<unknown, unknown, Key, W>);
  }

  /**
   * Two-phase (local-global) aggregation: partials per (key, bucket) made in front of the keyBy
   * (local-window-aggregation.ts), merged by the window (or pane) operator behind it. Undefined
   * where it could change what the job emits (a trigger, an evictor, allowed lateness, a late-data
   * side output), where the assigner has neither buckets nor event-time sessions (processing time,
   * global windows) or where nothing is shuffled (reinterpretAsKeyedStream).
   */
  #withLocalAggregation<R>(
    name: string,
    contents: WindowContents<T>,
    panes: PaneFunctions<T>,
    windowFn: AnyWindowFunction<unknown, unknown, Key, W> | undefined,
  ): DataStream<R> | undefined {
    const assigner = this.#assigner;
    if (this.#trigger !== undefined || this.#evictor !== undefined || this.#allowedLateness !== 0 || this.#lateTag !== undefined) return undefined;
    const bucket = assigner.localAggregationBucket?.();
    const sessions = assigner.mergesIntersecting === true && assigner.isEventTime;
    if (bucket === undefined && !sessions) return undefined;
    const description = assigner.description;
    const noProcessingTime = { currentProcessingTime: (): number => Number.NaN }; // event time only
    const paneSpec = this.#assigner.paneSpec?.();
    const local = localWindowAggregationOperator<T>({
      description,
      buckets:
        bucket !== undefined
          ? { kind: "buckets", ...bucket }
          : { kind: "sessions", window: (value, timestamp) => assigner.assignWindows(value as T, timestamp, noProcessingTime)[0] as unknown as TimeWindow },
      keySelector: this.#input._keySelector,
      fold: panes,
      maxEntries: DEFAULT_LOCAL_AGGREGATION_ENTRIES,
      byKey: paneSpec !== undefined,
    });
    const pre = this.#input._keyedAfterLocal<LocalPartial, Key>(`LocalAggregation(${description})`, local, partialKey);
    if (pre === undefined) return undefined;
    const global =
      paneSpec !== undefined
        ? slidingPaneOperator<LocalPartial>({
            ...paneSpec,
            description,
            allowedLateness: 0,
            lateDataTag: undefined,
            panes: globalPaneFunctions(panes),
            windowFunction: windowFn as AnyWindowFunction<unknown, unknown, Key, TimeWindow> | undefined,
            partials: true,
          })
        : windowOperator<LocalPartial, W>({
            assigner: (sessions ? sessionPartialAssigner(assigner as unknown as WindowAssigner<unknown, TimeWindow>) : assigner) as unknown as WindowAssigner<LocalPartial, W>,
            trigger: assigner.defaultTrigger() as unknown as Trigger<LocalPartial, W>,
            allowedLateness: 0,
            lateDataTag: undefined,
            contents: partialContents(contents) as WindowContents<LocalPartial>,
            windowFunction: windowFn,
            partials: true,
          });
    const stream = pre.keyed._transform<R>(name, global as never, true, partialKey);
    pre.local.insertedFor = stream._transformation as PhysicalTransformation;
    if (this.#all) stream.setParallelism(1);
    return stream;
  }

  /**
   * How reduce/aggregate contents combine as panes; undefined when they cannot (no merge).
   *
   * `merge` hands the user function a copy of its second argument: panes and the pane sweep's
   * partial merges are still needed after a merge, and Flink lets AggregateFunction.merge reuse
   * either accumulator as its target (and a ReduceFunction's second argument is, in Flink's
   * windows, the element, which it may change). The first argument is always the sweep's own.
   */
  #paneFunctions(contents: WindowContents<T>): PaneFunctions<T> | undefined {
    if (contents.kind === "reduce") {
      const reduce = contents.reduce;
      return { create: (v) => copyValue(v), add: (acc, v) => reduce(acc as T, v), merge: (a, b) => reduce(a as T, copyValue(b) as T), result: (acc) => acc };
    }
    if (contents.kind === "aggregate") {
      const f = contents.aggregate;
      const merge = f.merge;
      if (merge === undefined) return undefined;
      return {
        create: (v) => f.add(v, f.createAccumulator()),
        add: (acc, v) => f.add(v, acc),
        merge: (a, b) => merge.call(f, a, copyValue(b)),
        result: (acc) => f.getResult(acc),
      };
    }
    return undefined;
  }

  #build<R>(what: string, contents: WindowContents<T>, windowFn: AnyWindowFunction<unknown, unknown, Key, W> | undefined): DataStream<R> {
    if (typeof windowFn === "function" && windowFn.length === 0) {
      // A factory or a window function that ignores its arguments? Refused rather than guessed.
      throw new EddyError(
        "INVALID_FUNCTION_FACTORY",
        `${what.toLowerCase()}'s window function takes (key, window, input, out), and this one takes no parameters: ` +
          `to pass a factory of a ProcessWindowFunction, wrap it: functionFactory(() => new MyWindowFunction())`,
      );
    }
    if (windowFn !== undefined && typeof windowFn !== "function" && !isFunctionFactory(windowFn) && (typeof windowFn !== "object" || typeof windowFn.process !== "function")) {
      throw new TypeError(`${what.toLowerCase()}'s window function must be (key, window, input, out) => void, a ProcessWindowFunction or functionFactory(() => …)`);
    }
    const panes = this.#paneFunctions(contents);
    const paneSpec = this.#assigner.paneSpec?.();
    const usesPanes = panes !== undefined && paneSpec !== undefined && this.#trigger === undefined && this.#evictor === undefined;
    // The name is the same with or without local aggregation: an operator without a uid has an id derived from it.
    const name = `${this.#all ? "WindowAll" : "Window"}(${this.#assigner.description}, ${what}${usesPanes ? ", panes" : ""})`;
    if (panes !== undefined && this.#localAggregation) {
      const stream = this.#withLocalAggregation<R>(name, contents, panes, windowFn);
      if (stream !== undefined) return stream;
    }
    if (usesPanes) {
      // Sliding windows by reduce/aggregate: O(1) state work per element (sliding-pane-operator.ts).
      const stream = this.#input._transform<R>(
        name,
        slidingPaneOperator<T>({
          ...paneSpec,
          description: this.#assigner.description,
          allowedLateness: this.#allowedLateness,
          lateDataTag: this.#lateTag,
          panes,
          windowFunction: windowFn as AnyWindowFunction<unknown, unknown, Key, TimeWindow> | undefined,
        }) as never,
        true,
        this.#input._keySelector,
      );
      if (this.#all) stream.setParallelism(1);
      return stream;
    }
    const trigger = this.#trigger ?? this.#assigner.defaultTrigger();
    const stream = this.#input._transform<R>(
      name,
      windowOperator<T, W>({
        assigner: this.#assigner,
        trigger,
        evictor: this.#evictor,
        allowedLateness: this.#allowedLateness,
        lateDataTag: this.#lateTag,
        contents,
        windowFunction: windowFn,
      }) as never,
      true,
      this.#input._keySelector,
    );
    if (this.#all) stream.setParallelism(1);
    return stream;
  }
}

/**
 * The contents of a window fed with local partials (the window operator adds a partial's `a`): a
 * reduce merges partially reduced values with itself; an aggregate merges accumulators with its
 * `merge` (#paneFunctions made sure it has one). The state keeps the same kind and type, so
 * savepoints do not depend on whether local aggregation was on.
 */
function partialContents<T>(contents: WindowContents<T>): WindowContents<unknown> {
  if (contents.kind !== "aggregate") return contents as WindowContents<unknown>;
  const f = contents.aggregate;
  const merge = f.merge!;
  return {
    kind: "aggregate",
    aggregate: {
      createAccumulator: () => f.createAccumulator(),
      add: (partial, acc) => merge.call(f, acc, partial),
      getResult: (acc) => f.getResult(acc),
      merge: (a, b) => merge.call(f, a, b),
    },
  };
}
