/**
 * The interval join of two keyed streams (Flink's `KeyedStream.intervalJoin`):
 *
 *   orders.keyBy((o) => o.id)
 *     .intervalJoin(payments.keyBy((p) => p.orderId))
 *     .between(-Time.minutes(5), Time.minutes(10))
 *     .process({ processElement(order, payment, ctx, out) { out.collect(...); } })
 *
 * joins every order with every payment of the same key stamped from 5 minutes before to 10
 * minutes after it (both bounds inclusive unless made exclusive). Both inputs need event
 * timestamps. Semantics, lateness and state cleanup: runtime/operators/interval-join-operator.ts.
 *
 * The builders are immutable: every step returns a new object, so a half-built join can be reused.
 */
import type { Key } from "../core/key.ts";
import { requireOutputTag, type OutputTag } from "../core/output-tag.ts";
import type { TwoInputFactory } from "../graph/transformation.ts";
import {
  checkIntervalJoinBounds,
  intervalJoinOperator,
  type IntervalJoinBounds,
  type IntervalJoinLateData,
  type ProcessJoinFunction,
} from "../runtime/operators/interval-join-operator.ts";
import { requireFunctionObject, type FunctionObjectOrFactory } from "../runtime/operators/function-instance.ts";
import type { DataStream, KeyedStream } from "./data-stream.ts";

export type { ProcessJoinContext, ProcessJoinFunction } from "../runtime/operators/interval-join-operator.ts";

export class IntervalJoin<T1, T2, K extends Key> {
  readonly #left: KeyedStream<T1, K>;
  readonly #right: KeyedStream<T2, K>;

  /** @internal use `left.intervalJoin(right)`. */
  constructor(left: KeyedStream<T1, K>, right: KeyedStream<T2, K>) {
    this.#left = left;
    this.#right = right;
  }

  /**
   * Joins a left record at time t with the right records of its key stamped in
   * [t + lowerMs, t + upperMs]. Bounds are integer ms and may be negative; lowerMs ≤ upperMs.
   */
  between(lowerMs: number, upperMs: number): IntervalJoined<T1, T2, K> {
    const bounds: IntervalJoinBounds = { lowerMs, upperMs, lowerInclusive: true, upperInclusive: true };
    checkIntervalJoinBounds(bounds);
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, bounds, {});
  }
}

export class IntervalJoined<T1, T2, K extends Key> {
  readonly #left: KeyedStream<T1, K>;
  readonly #right: KeyedStream<T2, K>;
  readonly #bounds: IntervalJoinBounds;
  readonly #lateData: IntervalJoinLateData<T1, T2>;

  /** @internal */
  constructor(left: KeyedStream<T1, K>, right: KeyedStream<T2, K>, bounds: IntervalJoinBounds, lateData: IntervalJoinLateData<T1, T2>) {
    this.#left = left;
    this.#right = right;
    this.#bounds = bounds;
    this.#lateData = lateData;
  }

  /** Excludes the lower bound: right.ts > left.ts + lowerMs, i.e. the inclusive bound lowerMs + 1 (as Flink). */
  lowerBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, { ...this.#bounds, lowerInclusive: false }, this.#lateData);
  }

  /** Excludes the upper bound: right.ts < left.ts + upperMs, i.e. the inclusive bound upperMs - 1 (as Flink). */
  upperBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, { ...this.#bounds, upperInclusive: false }, this.#lateData);
  }

  /**
   * Sends left records that arrive late (timestamp below the join's watermark) to the side output
   * `tag`, with their own timestamp, instead of dropping them: `joined.getSideOutput(tag)`.
   */
  sideOutputLeftLateData(tag: OutputTag<T1>): IntervalJoined<T1, T2, K> {
    requireOutputTag(tag, "sideOutputLeftLateData(tag)");
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, this.#bounds, { ...this.#lateData, left: tag });
  }

  /** As sideOutputLeftLateData, for late right records. */
  sideOutputRightLateData(tag: OutputTag<T2>): IntervalJoined<T1, T2, K> {
    requireOutputTag(tag, "sideOutputRightLateData(tag)");
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, this.#bounds, { ...this.#lateData, right: tag });
  }

  /** Calls `fn.processElement(left, right, ctx, out)` once per joined pair; output is stamped max(left.ts, right.ts). */
  process<R = never>(fn: FunctionObjectOrFactory<ProcessJoinFunction<T1, T2, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "intervalJoin(...).between(...).process", ["processElement"]);
    const factory = intervalJoinOperator(f, this.#bounds, this.#lateData) as unknown as TwoInputFactory;
    return this.#left
      .connect(this.#right)
      ._transformTwoInput<R>("IntervalJoin", factory, [this.#left._keySelector, this.#right._keySelector]);
  }
}
