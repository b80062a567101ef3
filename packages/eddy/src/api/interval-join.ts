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
import type { TwoInputFactory } from "../graph/transformation.ts";
import {
  checkIntervalJoinBounds,
  intervalJoinOperator,
  type IntervalJoinBounds,
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
   * [t + lowerMs, t + upperMs]. Bounds are ms and may be negative; lowerMs ≤ upperMs.
   */
  between(lowerMs: number, upperMs: number): IntervalJoined<T1, T2, K> {
    const bounds: IntervalJoinBounds = { lowerMs, upperMs, lowerInclusive: true, upperInclusive: true };
    checkIntervalJoinBounds(bounds);
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, bounds);
  }
}

export class IntervalJoined<T1, T2, K extends Key> {
  readonly #left: KeyedStream<T1, K>;
  readonly #right: KeyedStream<T2, K>;
  readonly #bounds: IntervalJoinBounds;

  /** @internal */
  constructor(left: KeyedStream<T1, K>, right: KeyedStream<T2, K>, bounds: IntervalJoinBounds) {
    this.#left = left;
    this.#right = right;
    this.#bounds = bounds;
  }

  /** Excludes the lower bound: right.ts > left.ts + lowerMs. */
  lowerBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, { ...this.#bounds, lowerInclusive: false });
  }

  /** Excludes the upper bound: right.ts < left.ts + upperMs. */
  upperBoundExclusive(): IntervalJoined<T1, T2, K> {
    return new IntervalJoined<T1, T2, K>(this.#left, this.#right, { ...this.#bounds, upperInclusive: false });
  }

  /** Calls `fn.processElement(left, right, ctx, out)` once per joined pair; output is stamped max(left.ts, right.ts). */
  process<R>(fn: FunctionObjectOrFactory<ProcessJoinFunction<T1, T2, R>>): DataStream<R> {
    const f = requireFunctionObject(fn, "intervalJoin(...).between(...).process", ["processElement"]);
    const factory = intervalJoinOperator(f, this.#bounds) as unknown as TwoInputFactory;
    return this.#left
      .connect(this.#right)
      ._transformTwoInput<R>("IntervalJoin", factory, [this.#left._keySelector, this.#right._keySelector]);
  }
}
