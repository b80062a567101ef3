/**
 * Window assigners: which windows an element belongs to. Event-time assigners use the record's
 * timestamp; processing-time assigners the operator's clock. Session assigners are *merging*:
 * each element gets its own window [t, t + gap), and overlapping windows of a key merge.
 */
import { EddyError } from "../../core/errors.ts";
import { hasTimestamp } from "../../core/time.ts";
import type { Namespace } from "../../state/namespace.ts";
import { EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, type Trigger } from "./triggers.ts";
import { GlobalWindow, TimeWindow, windowStart, type Window } from "./windows.ts";

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
  /** Sliding event-time assigners: what pane evaluation needs (see sliding-pane-operator.ts). */
  paneSpec?(): { readonly size: number; readonly slide: number; readonly offset: number } | undefined;
  /** The state/timer namespace of a window, and back. */
  namespaceOf(window: W): Namespace;
  windowOf(namespace: Namespace): W;
}

function requireDuration(value: number, what: string, min: number): void {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min) {
    throw new EddyError("INVALID_WINDOW", `${what} must be a finite number ≥ ${min} ms, got ${String(value)}`);
  }
}

function eventTimestamp(timestamp: number, description: string): number {
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
  readonly #offset: number;

  constructor(size: number, offset: number, eventTime: boolean) {
    super(size);
    requireDuration(size, "window size", 1);
    if (!Number.isFinite(offset) || Math.abs(offset) >= size) {
      throw new EddyError("INVALID_WINDOW", `window offset must be in (-size, size), got ${offset}`);
    }
    this.#offset = offset;
    this.isEventTime = eventTime;
    this.description = `Tumbling${eventTime ? "Event" : "Processing"}TimeWindows(${size}${offset === 0 ? "" : `, ${offset}`})`;
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
    const start = windowStart(t, this.#offset, this.size);
    if (this.#last[0]!.start === start) return this.#last;
    return (this.#last = Object.freeze([new TimeWindow(start, start + this.size)]));
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
    if (slide > size) throw new EddyError("INVALID_WINDOW", `window slide (${slide}) must not exceed its size (${size})`);
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
    return (window.namespace ??= `${window.start}|${window.end}`);
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
  readonly description = "GlobalWindows";
  readonly isEventTime = false;
  readonly #windows = [GlobalWindow.INSTANCE];

  assignWindows(): readonly GlobalWindow[] {
    return this.#windows;
  }

  defaultTrigger(): Trigger<T, GlobalWindow> {
    return NeverTrigger.create();
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
  of: <T = unknown>(size: number, offset = 0): WindowAssigner<T, TimeWindow> => new Tumbling<T>(size, offset, false),
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
  create: <T = unknown>(): WindowAssigner<T, GlobalWindow> => new Global<T>(),
};
