/**
 * Two-phase (local-global) window aggregation: the local half, chained on the sending side of a
 * keyBy, in front of an event-time window evaluated by `reduce` or a mergeable `aggregate`.
 *
 * Per (key, bucket) — a bucket is a tumbling window, or a pane of sliding windows (the assigner's
 * `localAggregationBucket`) — it folds the elements it sees into one partial accumulator, and
 * sends the partials instead of the elements: a `LocalPartial` stamped with the bucket's last
 * millisecond, which the window operator (or the pane operator) on the other side assigns to the
 * same windows as each of the elements, and merges into them. The shuffle then carries one record
 * per (key, bucket) per flush instead of one per element, and the keyed side does one state
 * update per partial. Flink does this in SQL (local-global aggregation, with mini-batches); its
 * DataStream API has nothing like it.
 *
 * It holds nothing across a flush, so it has no state in checkpoints: it flushes
 * - before it forwards a watermark (so what precedes a watermark is still sent before it, and
 *   whether a window is late is decided on the keyed side, by the same rule, as for elements),
 * - before it forwards an idle status (an idle input no longer holds back the keyed side's
 *   watermark: partials kept back could become late),
 * - before the checkpoint barrier is forwarded (OperatorCheckpointing.beforeBarrier),
 * - at the end of input, and when it holds `maxEntries` partials (memory stays bounded).
 *
 * Only where the result cannot tell: the default event-time trigger, no evictor, no allowed
 * lateness and no late-data side output (WindowedStream decides). With allowed lateness a late
 * firing would happen per partial instead of per element; a late side output would get partials.
 */
import { userFunctionError } from "../../core/errors.ts";
import { mapKeyOf, requireValidKey, type MapKey } from "../../core/key.ts";
import type { AnyKeySelector, OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { eventTimestamp } from "./assigners.ts";
import type { PaneFunctions } from "./sliding-pane-operator.ts";
import { windowStart } from "./windows.ts";
import type { LocalPartial } from "./local-partial.ts";

export interface LocalWindowAggregationSpec<IN> {
  /** The window assigner's description, for errors. */
  readonly description: string;
  readonly width: number;
  readonly offset: number;
  /** The user's key selector (the keyBy's). */
  readonly keySelector: AnyKeySelector;
  /** How elements fold into a partial (the panes' create/add). */
  readonly fold: Pick<PaneFunctions<IN>, "create" | "add">;
  /** The partials held before a flush. */
  readonly maxEntries: number;
}

/** Partials held at most before a flush, when the job does not say (WindowedStream.localAggregation). */
export const DEFAULT_LOCAL_AGGREGATION_ENTRIES = 8192;

export function localWindowAggregationOperator<IN>(spec: LocalWindowAggregationSpec<IN>) {
  return (ctx: OperatorContext, output: Output<LocalPartial>): OneInputOperator<IN> => new LocalWindowAggregation(spec, ctx, output);
}

/** The keyed side's pane functions: partials are merged into panes (`panes`: the user's, per element). */
export function globalPaneFunctions<IN>(panes: PaneFunctions<IN>): PaneFunctions<LocalPartial> {
  return {
    create: (p) => p.a,
    add: (acc, p) => panes.merge(acc, p.a),
    merge: panes.merge,
    result: panes.result,
  };
}

class LocalWindowAggregation<IN> implements OneInputOperator<IN> {
  readonly #spec: LocalWindowAggregationSpec<IN>;
  readonly #ctx: OperatorContext;
  readonly #output: Output<LocalPartial>;
  /** Partials by bucket start, then by the key's map identity; in arrival order. */
  readonly #buckets = new Map<number, Map<MapKey, LocalPartial>>();
  /** The bucket of the last element (most elements fall into the bucket of the one before). */
  #lastStart = Number.NaN;
  #last: Map<MapKey, LocalPartial> | undefined;
  #entries = 0;
  readonly #emitted;

  constructor(spec: LocalWindowAggregationSpec<IN>, ctx: OperatorContext, output: Output<LocalPartial>) {
    this.#spec = spec;
    this.#ctx = ctx;
    this.#output = output;
    this.#emitted = ctx.counter("numPartialAggregatesSent");
    ctx.checkpointing?.beforeBarrier(() => this.#flush());
  }

  processElement(value: IN, timestamp: number): void {
    // hot path
    const spec = this.#spec;
    const start = windowStart(eventTimestamp(timestamp, spec.description), spec.offset, spec.width);
    let bucket = this.#last;
    if (start !== this.#lastStart || bucket === undefined) {
      bucket = this.#buckets.get(start);
      if (bucket === undefined) this.#buckets.set(start, (bucket = new Map()));
      this.#lastStart = start;
      this.#last = bucket;
    }
    const key = requireValidKey(spec.keySelector(value), this.#ctx.operatorName);
    const mapKey = mapKeyOf(key);
    const partial = bucket.get(mapKey);
    try {
      if (partial !== undefined) {
        partial.a = spec.fold.add(partial.a, value);
        partial.n++;
        return;
      }
      bucket.set(mapKey, { k: key, a: spec.fold.create(value), n: 1 });
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    if (++this.#entries >= spec.maxEntries) this.#flush();
  }

  processWatermark(watermark: number): void {
    this.#flush();
    this.#output.emitWatermark(watermark);
  }

  processWatermarkStatus(idle: boolean): void {
    this.#flush();
    this.#output.emitWatermarkStatus(idle);
  }

  endInput(): void {
    this.#flush();
  }

  /** Sends every partial, bucket by bucket, each stamped with its bucket's last millisecond. */
  #flush(): void {
    if (this.#entries === 0) return;
    const width = this.#spec.width;
    const output = this.#output;
    for (const [start, bucket] of this.#buckets) {
      const timestamp = start + width - 1;
      for (const partial of bucket.values()) output.collect(partial, timestamp);
    }
    this.#emitted.inc(this.#entries);
    this.#buckets.clear();
    this.#last = undefined;
    this.#lastStart = Number.NaN;
    this.#entries = 0;
  }
}
