/**
 * Two-phase (local-global) window aggregation: the local half, chained on the sending side of a
 * keyBy, in front of an event-time window evaluated by `reduce` or a mergeable `aggregate`.
 *
 * Per (key, bucket) — a bucket is a tumbling window, or a pane of sliding windows (the assigner's
 * `localAggregationBucket`) — it folds the elements it sees into one partial accumulator, and
 * sends the partials instead of the elements: a `LocalPartial` stamped with the bucket's last
 * millisecond, which the window operator (or the pane operator) on the other side assigns to the
 * same windows as each of the elements, and merges into them. For event-time sessions it keeps
 * per key the sessions its elements make (merged as the window operator merges them: windows that
 * intersect, into their cover) and sends each as a `SessionPartial` carrying its bounds; the
 * window operator merges it with the key's other sessions as it would merge the elements' own
 * windows (the union of intersecting intervals is one interval, so merging partial sessions gives
 * the sessions of all elements). The shuffle then carries one record
 * per (key, bucket) per flush instead of one per element, and the keyed side does one state
 * update per partial. In front of sliding panes a flush of a few buckets sends key by key (a key's
 * partials in the order its buckets came), so the pane operator updates one key's panes several
 * times in a row, while they are in the CPU caches (tumbling windows, one partial per key and
 * bucket, gain nothing from it: they keep bucket by bucket). Flink does this in SQL (local-global aggregation, with mini-batches); its
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
import { mapKeyOf, requireValidKey, type Key, type MapKey } from "../../core/key.ts";
import type { AnyKeySelector, OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { eventTimestamp, type WindowAssigner } from "./assigners.ts";
import type { Trigger } from "./triggers.ts";
import type { PaneFunctions } from "./sliding-pane-operator.ts";
import { TimeWindow, windowStart } from "./windows.ts";
import type { LocalPartial, SessionPartial } from "./local-partial.ts";

/** What the partials are per key: fixed buckets, or sessions. */
export type LocalBuckets =
  | { readonly kind: "buckets"; readonly width: number; readonly offset: number }
  /** `window`: the element's own session window (the assigner's). */
  | { readonly kind: "sessions"; readonly window: (value: unknown, timestamp: number) => TimeWindow };

export interface LocalWindowAggregationSpec<IN> {
  /** The window assigner's description, for errors. */
  readonly description: string;
  readonly buckets: LocalBuckets;
  /** The user's key selector (the keyBy's). */
  readonly keySelector: AnyKeySelector;
  /** How elements fold into a partial, and partials into each other (the panes' functions). */
  readonly fold: Pick<PaneFunctions<IN>, "create" | "add" | "merge">;
  /** The partials held before a flush. */
  readonly maxEntries: number;
  /**
   * Buckets: a flush of up to MAX_GROUPED_BUCKETS buckets sends key by key, a key's partials in
   * the order its buckets came (for sliding panes, whose keyed side then updates one key's panes in
   * a row while they are in the CPU caches); otherwise bucket by bucket.
   */
  readonly byKey?: boolean;
}

/** Partials held at most before a flush, when the job does not say (WindowedStream.localAggregation). */
export const DEFAULT_LOCAL_AGGREGATION_ENTRIES = 8192;

/**
 * Buckets a flush sends key by key at most (it looks each partial's key up in every later bucket);
 * more are sent bucket by bucket. Sliding 10 s / 2 s in bench/windows.ts (1,000 keys): ~8 buckets
 * a flush, 0.90-0.91x the CPU time with key by key; tumbling 10 s, the same flushes of one partial
 * per key and bucket: 1.05x, so only panes ask for it.
 */
const MAX_GROUPED_BUCKETS = 16;

export function localWindowAggregationOperator<IN>(spec: LocalWindowAggregationSpec<IN>) {
  return (ctx: OperatorContext, output: Output<LocalPartial>): OneInputOperator<IN> =>
    spec.buckets.kind === "buckets" ? new LocalBucketAggregation(spec, spec.buckets, ctx, output) : new LocalSessionAggregation(spec, spec.buckets, ctx, output);
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

/**
 * The keyed side's assigner for session partials: a partial's window is the one it carries; the
 * rest (merging, namespaces, trigger) is the user's session assigner's.
 */
export function sessionPartialAssigner(sessions: WindowAssigner<unknown, TimeWindow>): WindowAssigner<SessionPartial, TimeWindow> {
  return {
    description: sessions.description,
    isEventTime: sessions.isEventTime,
    mergesIntersecting: true,
    assignWindows: (partial) => [new TimeWindow(partial.s, partial.e)],
    defaultTrigger: () => sessions.defaultTrigger() as unknown as Trigger<SessionPartial, TimeWindow>,
    mergeWindows: (windows, merge) => sessions.mergeWindows!(windows, merge),
    namespaceOf: (window) => sessions.namespaceOf(window),
    windowOf: (namespace) => sessions.windowOf(namespace),
  };
}

/** When partials go: before watermarks, idle status, barriers, at the end and when full. */
abstract class LocalAggregation<IN> implements OneInputOperator<IN> {
  protected readonly spec: LocalWindowAggregationSpec<IN>;
  protected readonly ctx: OperatorContext;
  readonly #output: Output<LocalPartial>;
  #entries = 0;
  /** `pipeline.local-aggregation` false: each element goes on at once, as a partial of one. */
  protected readonly passThrough: boolean;
  readonly #sent;

  constructor(spec: LocalWindowAggregationSpec<IN>, ctx: OperatorContext, output: Output<LocalPartial>) {
    this.spec = spec;
    this.ctx = ctx;
    this.#output = output;
    this.passThrough = ctx.localAggregation === false;
    this.#sent = ctx.counter("numPartialAggregatesSent");
    ctx.checkpointing?.beforeBarrier(() => this.#flush());
  }

  abstract processElement(value: IN, timestamp: number): void;

  /** Sends every partial held (each with its timestamp) and forgets them. */
  protected abstract sendAll(output: Output<LocalPartial>): void;

  /** Sends one partial now (pass-through). */
  protected sendNow(partial: LocalPartial, timestamp: number): void {
    this.#output.collect(partial, timestamp);
    this.#sent.inc();
  }

  /** A partial of `value` alone. */
  protected create(value: IN): unknown {
    try {
      return this.spec.fold.create(value);
    } catch (e) {
      throw userFunctionError(this.ctx, e);
    }
  }

  /** The key of `value`, validated. */
  protected keyOf(value: IN): Key {
    return requireValidKey(this.spec.keySelector(value), this.ctx.operatorName);
  }

  /** A partial was created (`delta` 1) or two merged (-1). */
  protected counted(delta: number): void {
    this.#entries += delta;
    if (this.#entries >= this.spec.maxEntries) this.#flush();
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

  #flush(): void {
    if (this.#entries === 0) return;
    this.sendAll(this.#output);
    this.#sent.inc(this.#entries);
    this.#entries = 0;
  }
}

/** Tumbling windows and panes: one partial per (bucket, key), stamped with the bucket's last millisecond. */
class LocalBucketAggregation<IN> extends LocalAggregation<IN> {
  readonly #width: number;
  readonly #offset: number;
  /** Partials by bucket start, then by the key's map identity; in arrival order. */
  readonly #buckets = new Map<number, Map<MapKey, LocalPartial>>();
  /** The bucket of the last element (most elements fall into the bucket of the one before). */
  #lastStart = Number.NaN;
  #last: Map<MapKey, LocalPartial> | undefined;
  /** Scratch of `sendAll`: the buckets' starts and maps, in order. */
  readonly #starts: number[] = [];
  readonly #maps: (Map<MapKey, LocalPartial> | undefined)[] = [];

  constructor(spec: LocalWindowAggregationSpec<IN>, buckets: { width: number; offset: number }, ctx: OperatorContext, output: Output<LocalPartial>) {
    super(spec, ctx, output);
    this.#width = buckets.width;
    this.#offset = buckets.offset;
  }

  processElement(value: IN, timestamp: number): void {
    // hot path
    const start = windowStart(eventTimestamp(timestamp, this.spec.description), this.#offset, this.#width);
    if (this.passThrough) return this.sendNow({ k: this.keyOf(value), a: this.create(value), n: 1 }, start + this.#width - 1);
    let bucket = this.#last;
    if (start !== this.#lastStart || bucket === undefined) {
      bucket = this.#buckets.get(start);
      if (bucket === undefined) this.#buckets.set(start, (bucket = new Map()));
      this.#lastStart = start;
      this.#last = bucket;
    }
    const key = this.keyOf(value);
    const mapKey = mapKeyOf(key);
    const partial = bucket.get(mapKey);
    const fold = this.spec.fold;
    try {
      if (partial !== undefined) {
        partial.a = fold.add(partial.a, value);
        partial.n++;
        return;
      }
      bucket.set(mapKey, { k: key, a: fold.create(value), n: 1 });
    } catch (e) {
      throw userFunctionError(this.ctx, e);
    }
    this.counted(1);
  }

  protected sendAll(output: Output<LocalPartial>): void {
    const width = this.#width;
    const buckets = this.#buckets;
    if (this.spec.byKey !== true || buckets.size > MAX_GROUPED_BUCKETS) {
      for (const [start, bucket] of buckets) {
        const timestamp = start + width - 1;
        for (const partial of bucket.values()) output.collect(partial, timestamp);
      }
    } else {
      // Key by key, a key's partials in the order of their buckets (see `byKey`).
      const starts = this.#starts;
      const maps = this.#maps;
      let n = 0;
      for (const [start, bucket] of buckets) {
        starts[n] = start;
        maps[n++] = bucket;
      }
      for (let b = 0; b < n; b++) {
        for (const [mapKey, partial] of maps[b]!) {
          output.collect(partial, starts[b]! + width - 1);
          for (let later = b + 1; later < n; later++) {
            const other = maps[later]!;
            const next = other.get(mapKey);
            if (next === undefined) continue;
            output.collect(next, starts[later]! + width - 1);
            other.delete(mapKey); // sent
          }
        }
      }
      maps.fill(undefined);
    }
    this.#buckets.clear();
    this.#last = undefined;
    this.#lastStart = Number.NaN;
  }
}

/**
 * Sessions: per key the disjoint sessions of its elements so far, each sent with its bounds and
 * stamped with its last millisecond (what decides whether the keyed side finds it late).
 */
class LocalSessionAggregation<IN> extends LocalAggregation<IN> {
  readonly #window: (value: unknown, timestamp: number) => TimeWindow;
  /** The key's sessions, pairwise not intersecting. */
  readonly #sessions = new Map<MapKey, SessionPartial[]>();

  constructor(spec: LocalWindowAggregationSpec<IN>, buckets: { window: (value: unknown, timestamp: number) => TimeWindow }, ctx: OperatorContext, output: Output<LocalPartial>) {
    super(spec, ctx, output);
    this.#window = buckets.window;
  }

  processElement(value: IN, timestamp: number): void {
    const w = this.#window(value, eventTimestamp(timestamp, this.spec.description));
    const key = this.keyOf(value);
    const fold = this.spec.fold;
    if (this.passThrough) {
      const partial: SessionPartial = { k: key, a: this.create(value), n: 1, s: w.start, e: w.end };
      return this.sendNow(partial, w.end - 1);
    }
    const mapKey = mapKeyOf(key);
    let sessions = this.#sessions.get(mapKey);
    if (sessions === undefined) this.#sessions.set(mapKey, (sessions = []));
    try {
      // The sessions `w` intersects merge with it into one. The others intersect none of them:
      // whatever intersects the cover of intersecting intervals intersects one of them.
      let target: SessionPartial | undefined;
      for (let i = 0; i < sessions.length; i++) {
        const s = sessions[i]!;
        if (!(s.s <= w.end && s.e >= w.start)) continue;
        if (target === undefined) {
          target = s;
          continue;
        }
        target.a = fold.merge(target.a, s.a);
        target.n += s.n;
        target.s = Math.min(target.s, s.s);
        target.e = Math.max(target.e, s.e);
        sessions.splice(i--, 1);
        this.counted(-1);
      }
      if (target !== undefined) {
        target.a = fold.add(target.a, value);
        target.n++;
        target.s = Math.min(target.s, w.start);
        target.e = Math.max(target.e, w.end);
        return;
      }
      sessions.push({ k: key, a: fold.create(value), n: 1, s: w.start, e: w.end });
    } catch (e) {
      throw userFunctionError(this.ctx, e);
    }
    this.counted(1);
  }

  protected sendAll(output: Output<LocalPartial>): void {
    for (const sessions of this.#sessions.values()) for (const s of sessions) output.collect(s, s.e - 1);
    this.#sessions.clear();
  }
}
