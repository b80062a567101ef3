/**
 * Window assigners: which windows an element belongs to. Event-time assigners use the record's
 * timestamp; processing-time assigners the operator's clock. Session assigners are *merging*:
 * each element gets its own window [t, t + gap), and overlapping windows of a key merge.
 */
import { EddyError } from "../../core/errors.ts";
import { hasTimestamp } from "../../core/time.ts";
import type { Namespace } from "../../state/namespace.ts";
import { EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, type Trigger } from "./triggers.ts";
import { GlobalWindow, TimeWindow, timeWindowNamespace, windowStart, type Window } from "./windows.ts";

export interface WindowAssignerContext {
  currentProcessingTime(): number;
}

export interface WindowAssigner<T, W extends Window> {
  /** For names and errors, e.g. "TumblingEventTimeWindows(10000)". */
  readonly description: string;
  readonly isEventTime: boolean;
  assignWindows(element: T, timestamp: number, context: WindowAssignerContext): readonly W[];
  defaultTrigger(): Trigger<T, W>;
  /** Merging assigners only: calls `merge(windows, result)` for each group of windows that merge. */
  mergeWindows?(windows: readonly W[], merge: (toMerge: W[], result: W) => void): void;
  /**
   * @internal Merging time-window assigners whose `mergeWindows` merges exactly the windows that
   * intersect, into their cover (sessions): MergingWindowSet then merges by one scan.
   */
  readonly mergesIntersecting?: true;
  /** Sliding event-time assigners: what pane evaluation needs (see sliding-pane-operator.ts). */
  paneSpec?(): { readonly size: number; readonly slide: number; readonly offset: number } | undefined;
  /**
   * @internal Event-time assigners whose windows are unions of fixed buckets [start, start + width)
   * aligned at `offset`, such that a record stamped with a bucket's last millisecond is assigned
   * the windows of every element of the bucket: tumbling windows (a bucket is a window) and
   * sliding windows evaluated by panes (a bucket is a pane). What local aggregation
   * (local-window-aggregation.ts) pre-aggregates by; absent otherwise.
   */
  localAggregationBucket?(): { readonly width: number; readonly offset: number } | undefined;
  /** The state/timer namespace of a window, and back. */
  namespaceOf(window: W): Namespace;
  windowOf(namespace: Namespace): W;
  /**
   * The assigner one operator instance uses, for assigners that keep per-subtask state (a window
   * stagger drawn on the first element); absent when the assigner is shared as it is.
   */
  forSubtask?(): WindowAssigner<T, W>;
}

/**
 * How tumbling processing-time windows are shifted per subtask, so that the windows of all
 * subtasks do not fire at the same instant (Flink's WindowStagger). The offset is drawn once per
 * subtask, from the processing time of its first element, and is not checkpointed (as in Flink,
 * a restored subtask draws it again).
 */
export interface WindowStagger {
  readonly name: string;
  /** The offset in [0, sizeMs) to add to the window offset. */
  staggerOffset(currentProcessingTimeMs: number, sizeMs: number): number;
}

export const WindowStagger = {
  /** No stagger: every subtask's windows start at the same instants (the default). */
  ALIGNED: { name: "ALIGNED", staggerOffset: () => 0 } as WindowStagger,
  /** A uniformly random offset in [0, size) per subtask. */
  RANDOM: { name: "RANDOM", staggerOffset: (_now: number, size: number) => Math.floor(Math.random() * size) } as WindowStagger,
  /** Windows start when the subtask's first element arrives: the offset is that instant within its aligned window. */
  NATURAL: { name: "NATURAL", staggerOffset: (now: number, size: number) => Math.max(0, now - windowStart(now, 0, size)) } as WindowStagger,
} as const;

function requireDuration(value: number, what: string, min: number): void {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min) {
    throw new EddyError("INVALID_WINDOW", `${what} must be a finite number ≥ ${min} ms, got ${String(value)}`);
  }
}

export function eventTimestamp(timestamp: number, description: string): number {
  if (!hasTimestamp(timestamp)) {
    throw new EddyError(
      "NO_TIMESTAMP",
      `${description} needs record timestamps: use assignTimestampsAndWatermarks(...) or a source that sets them`,
    );
  }
  return timestamp;
}

/** Fixed-size windows are identified by their start (a number namespace). */
abstract class FixedSizeAssigner<T> implements WindowAssigner<T, TimeWindow> {
  abstract readonly description: string;
  abstract readonly isEventTime: boolean;
  protected readonly size: number;

  constructor(size: number) {
    this.size = size;
  }

  abstract assignWindows(element: T, timestamp: number, context: WindowAssignerContext): readonly TimeWindow[];

  defaultTrigger(): Trigger<T, TimeWindow> {
    return this.isEventTime ? EventTimeTrigger.create() : ProcessingTimeTrigger.create();
  }

  namespaceOf(window: TimeWindow): Namespace {
    return window.start;
  }

  windowOf(namespace: Namespace): TimeWindow {
    const start = namespace as number;
    return new TimeWindow(start, start + this.size);
  }
}

class Tumbling<T> extends FixedSizeAssigner<T> {
  readonly description: string;
  readonly isEventTime: boolean;
  /** The offset windows start at: the configured one, plus the stagger once drawn. */
  #offset: number;
  /** Draws the stagger on the first element; undefined once drawn, or for no stagger. */
  #stagger: WindowStagger | undefined;

  constructor(size: number, offset: number, eventTime: boolean, stagger: WindowStagger = WindowStagger.ALIGNED) {
    super(size);
    requireDuration(size, "window size", 1);
    if (!Number.isFinite(offset) || Math.abs(offset) >= size) {
      throw new EddyError("INVALID_WINDOW", `window offset must be in (-size, size), got ${offset}`);
    }
    if (stagger === null || typeof stagger !== "object" || typeof stagger.staggerOffset !== "function") {
      throw new EddyError("INVALID_WINDOW", `window stagger must be a WindowStagger (ALIGNED, RANDOM, NATURAL or your own), got ${String(stagger)}`);
    }
    this.#offset = offset;
    this.#stagger = stagger === WindowStagger.ALIGNED ? undefined : stagger;
    this.isEventTime = eventTime;
    const staggered = this.#stagger === undefined ? "" : `, ${stagger.name}`;
    this.description = `Tumbling${eventTime ? "Event" : "Processing"}TimeWindows(${size}${offset === 0 && staggered === "" ? "" : `, ${offset}`}${staggered})`;
  }

  forSubtask(): WindowAssigner<T, TimeWindow> {
    return this.#stagger === undefined ? this : new Tumbling<T>(this.size, this.#offset, this.isEventTime, this.#stagger);
  }

  localAggregationBucket(): { width: number; offset: number } | undefined {
    return this.isEventTime && this.#stagger === undefined ? { width: this.size, offset: this.#offset } : undefined;
  }

  /**
   * The last assignment, returned again while elements fall into the same window, so the
   * per-element path does not allocate. Safe to share (also between subtasks using this
   * assigner): a TimeWindow never changes, and the array is frozen.
   */
  #last: readonly TimeWindow[] = Object.freeze([new TimeWindow(Number.NaN, Number.NaN)]);

  assignWindows(_element: T, timestamp: number, context: WindowAssignerContext): readonly TimeWindow[] {
    // hot path
    const t = this.isEventTime ? eventTimestamp(timestamp, this.description) : context.currentProcessingTime();
    if (this.#stagger !== undefined) this.#drawStagger(t);
    const start = windowStart(t, this.#offset, this.size);
    if (this.#last[0]!.start === start) return this.#last;
    return (this.#last = Object.freeze([new TimeWindow(start, start + this.size)]));
  }

  #drawStagger(now: number): void {
    const stagger = this.#stagger!.staggerOffset(now, this.size);
    if (typeof stagger !== "number" || !Number.isFinite(stagger)) {
      throw new EddyError("INVALID_WINDOW", `${this.description}: the window stagger gave ${String(stagger)}, not a number of ms`, { domain: "user" });
    }
    this.#offset = (this.#offset + Math.floor(stagger)) % this.size;
    this.#stagger = undefined;
  }
}

class Sliding<T> extends FixedSizeAssigner<T> {
  readonly description: string;
  readonly isEventTime: boolean;
  readonly #slide: number;
  readonly #offset: number;

  constructor(size: number, slide: number, offset: number, eventTime: boolean) {
    super(size);
    requireDuration(size, "window size", 1);
    requireDuration(slide, "window slide", 1);
    // A slide larger than the size leaves gaps between windows; elements in a gap belong to no
    // window and are dropped without being late (as in Flink).
    if (!Number.isFinite(offset) || Math.abs(offset) >= slide) {
      throw new EddyError("INVALID_WINDOW", `window offset must be in (-slide, slide), got ${offset}`);
    }
    this.#slide = slide;
    this.#offset = offset;
    this.isEventTime = eventTime;
    this.description = `Sliding${eventTime ? "Event" : "Processing"}TimeWindows(${size}, ${slide}${offset === 0 ? "" : `, ${offset}`})`;
  }

  paneSpec(): { size: number; slide: number; offset: number } | undefined {
    return this.isEventTime && this.size % this.#slide === 0 ? { size: this.size, slide: this.#slide, offset: this.#offset } : undefined;
  }

  localAggregationBucket(): { width: number; offset: number } | undefined {
    const panes = this.paneSpec();
    return panes === undefined ? undefined : { width: panes.slide, offset: panes.offset };
  }

  assignWindows(_element: T, timestamp: number, context: WindowAssignerContext): readonly TimeWindow[] {
    const t = this.isEventTime ? eventTimestamp(timestamp, this.description) : context.currentProcessingTime();
    const windows: TimeWindow[] = [];
    const lastStart = windowStart(t, this.#offset, this.#slide);
    for (let start = lastStart; start > t - this.size; start -= this.#slide) windows.push(new TimeWindow(start, start + this.size));
    return windows;
  }
}

class Sessions<T> implements WindowAssigner<T, TimeWindow> {
  readonly description: string;
  readonly isEventTime: boolean;
  readonly mergesIntersecting = true as const;
  readonly #gap: (element: T) => number;

  constructor(gap: (element: T) => number, eventTime: boolean, description: string) {
    this.#gap = gap;
    this.isEventTime = eventTime;
    this.description = description;
  }

  assignWindows(element: T, timestamp: number, context: WindowAssignerContext): readonly TimeWindow[] {
    const t = this.isEventTime ? eventTimestamp(timestamp, this.description) : context.currentProcessingTime();
    const gap = this.#gap(element);
    if (typeof gap !== "number" || !Number.isFinite(gap) || gap <= 0) {
      // Returned by the user's gap function while running, not given while building: domain user.
      throw new EddyError("INVALID_WINDOW", `${this.description}: the session gap must be a finite number > 0 ms, got ${String(gap)}`, {
        domain: "user",
      });
    }
    return [new TimeWindow(t, t + gap)];
  }

  defaultTrigger(): Trigger<T, TimeWindow> {
    return this.isEventTime ? EventTimeTrigger.create() : ProcessingTimeTrigger.create();
  }

  /** Flink's TimeWindow.mergeWindows: sort by start, then sweep merging intersecting windows. */
  mergeWindows(windows: readonly TimeWindow[], merge: (toMerge: TimeWindow[], result: TimeWindow) => void): void {
    const sorted = [...windows].sort((a, b) => a.start - b.start);
    let group: TimeWindow[] = [];
    let cover: TimeWindow | undefined;
    const flush = (): void => {
      if (cover !== undefined && group.length > 1) merge(group, cover);
    };
    for (const w of sorted) {
      if (cover === undefined) {
        cover = w;
        group = [w];
      } else if (cover.intersects(w)) {
        cover = cover.cover(w);
        group.push(w);
      } else {
        flush();
        cover = w;
        group = [w];
      }
    }
    flush();
  }

  namespaceOf(window: TimeWindow): Namespace {
    // Number-to-string conversion of epoch milliseconds is costly; do it once per window object.
    return (window.namespace ??= timeWindowNamespace(window.start, window.end));
  }

  windowOf(namespace: Namespace): TimeWindow {
    const ns = String(namespace);
    const bar = ns.indexOf("|");
    const window = new TimeWindow(Number(ns.slice(0, bar)), Number(ns.slice(bar + 1)));
    window.namespace = ns;
    return window;
  }
}

class Global<T> implements WindowAssigner<T, GlobalWindow> {
  readonly description: string;
  readonly isEventTime = false;
  readonly #windows = [GlobalWindow.INSTANCE];
  readonly #endOfStream: boolean;

  constructor(endOfStream: boolean) {
    this.#endOfStream = endOfStream;
    this.description = endOfStream ? "GlobalWindows(EndOfStreamTrigger)" : "GlobalWindows";
  }

  assignWindows(): readonly GlobalWindow[] {
    return this.#windows;
  }

  /**
   * With end of stream: Flink's EndOfStreamTrigger, an event-time timer at the global window's
   * last timestamp that only the final watermark reaches. EventTimeTrigger does exactly that for
   * the global window (the window is never late before the end, and never cleaned up).
   */
  defaultTrigger(): Trigger<T, GlobalWindow> {
    return this.#endOfStream ? EventTimeTrigger.create() : NeverTrigger.create();
  }

  namespaceOf(): Namespace {
    return "global";
  }

  windowOf(): GlobalWindow {
    return GlobalWindow.INSTANCE;
  }
}

export const TumblingEventTimeWindows = {
  of: <T = unknown>(size: number, offset = 0): WindowAssigner<T, TimeWindow> => new Tumbling<T>(size, offset, true),
};
export const TumblingProcessingTimeWindows = {
  /** `stagger` shifts each subtask's windows (see WindowStagger); ALIGNED by default. */
  of: <T = unknown>(size: number, offset = 0, stagger: WindowStagger = WindowStagger.ALIGNED): WindowAssigner<T, TimeWindow> =>
    new Tumbling<T>(size, offset, false, stagger),
};
export const SlidingEventTimeWindows = {
  of: <T = unknown>(size: number, slide: number, offset = 0): WindowAssigner<T, TimeWindow> => new Sliding<T>(size, slide, offset, true),
};
export const SlidingProcessingTimeWindows = {
  of: <T = unknown>(size: number, slide: number, offset = 0): WindowAssigner<T, TimeWindow> =>
    new Sliding<T>(size, slide, offset, false),
};

function sessions<T>(eventTime: boolean) {
  const kind = eventTime ? "EventTimeSessionWindows" : "ProcessingTimeSessionWindows";
  return {
    withGap: (gap: number): WindowAssigner<T, TimeWindow> => {
      requireDuration(gap, "session gap", 1);
      return new Sessions<T>(() => gap, eventTime, `${kind}.withGap(${gap})`);
    },
    withDynamicGap: (extractor: (element: T) => number): WindowAssigner<T, TimeWindow> => {
      if (typeof extractor !== "function") throw new TypeError(`${kind}.withDynamicGap needs a function (element) => gap in ms`);
      return new Sessions<T>(extractor, eventTime, `${kind}.withDynamicGap`);
    },
  };
}

export const EventTimeSessionWindows = {
  withGap: <T = unknown>(gap: number) => sessions<T>(true).withGap(gap),
  withDynamicGap: <T>(extractor: (element: T) => number) => sessions<T>(true).withDynamicGap(extractor),
};
export const ProcessingTimeSessionWindows = {
  withGap: <T = unknown>(gap: number) => sessions<T>(false).withGap(gap),
  withDynamicGap: <T>(extractor: (element: T) => number) => sessions<T>(false).withDynamicGap(extractor),
};
export const GlobalWindows = {
  /** Everything in one window per key, which fires only through a trigger you set. */
  create: <T = unknown>(): WindowAssigner<T, GlobalWindow> => new Global<T>(false),
  /** One window per key that fires once, when the (bounded) input ends: batch-style aggregation. */
  createWithEndOfStreamTrigger: <T = unknown>(): WindowAssigner<T, GlobalWindow> => new Global<T>(true),
};
