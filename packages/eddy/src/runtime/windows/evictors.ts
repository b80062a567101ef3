/**
 * Evictors remove elements from a window's buffer before and/or after the window function runs
 * (Flink's Evictor). A window with an evictor keeps every element with its timestamp, even for
 * reduce/aggregate, which then run over what is left when the window fires.
 */
import { hasTimestamp } from "../../core/time.ts";
import type { Window } from "./windows.ts";

export interface TimestampedValue<T> {
  readonly value: T;
  readonly timestamp: number;
}

export interface EvictorContext {
  currentProcessingTime(): number;
  currentWatermark(): number;
}

export interface Evictor<T, W extends Window> {
  /** Returns the elements to keep for the window function. */
  evictBefore?(elements: TimestampedValue<T>[], window: W, ctx: EvictorContext): TimestampedValue<T>[];
  /** Returns the elements to keep in the window after the function ran. */
  evictAfter?(elements: TimestampedValue<T>[], window: W, ctx: EvictorContext): TimestampedValue<T>[];
}

function positive(n: number, what: string): void {
  if (typeof n !== "number" || !Number.isFinite(n) || n <= 0) throw new RangeError(`${what} needs a finite number > 0, got ${String(n)}`);
}

/** Keeps the last `maxCount` elements. */
export const CountEvictor = {
  of<T, W extends Window>(maxCount: number, doEvictAfter = false): Evictor<T, W> {
    positive(maxCount, "CountEvictor.of");
    const evict = (elements: TimestampedValue<T>[]) => (elements.length > maxCount ? elements.slice(elements.length - maxCount) : elements);
    return doEvictAfter ? { evictAfter: evict } : { evictBefore: evict };
  },
};

/**
 * Keeps the elements within `windowLength` ms of the newest element's timestamp: evicts those at
 * or before newest - windowLength. Elements without a timestamp (processing-time pipelines, no
 * timestamp assigner) cannot be compared, so, as Flink's TimeEvictor, it evicts nothing when the
 * first element has none. Flink fails on a later element without a timestamp; Eddy keeps it.
 */
export const TimeEvictor = {
  of<T, W extends Window>(windowLength: number, doEvictAfter = false): Evictor<T, W> {
    positive(windowLength, "TimeEvictor.of");
    const evict = (elements: TimestampedValue<T>[]) => {
      if (elements.length === 0 || !hasTimestamp(elements[0]!.timestamp)) return elements;
      let newest = -Infinity;
      for (const e of elements) if (e.timestamp > newest) newest = e.timestamp;
      const cutoff = newest - windowLength;
      return elements.filter((e) => !(e.timestamp <= cutoff));
    };
    return doEvictAfter ? { evictAfter: evict } : { evictBefore: evict };
  },
};

/** Keeps the elements whose `delta` to the last element is below `threshold`. */
export const DeltaEvictor = {
  of<T, W extends Window>(threshold: number, delta: (a: T, b: T) => number, doEvictAfter = false): Evictor<T, W> {
    if (typeof delta !== "function") throw new TypeError("DeltaEvictor.of needs a delta function (a, b) => number");
    const evict = (elements: TimestampedValue<T>[]) => {
      const last = elements[elements.length - 1];
      if (last === undefined) return elements;
      return elements.filter((e) => delta(e.value, last.value) < threshold);
    };
    return doEvictAfter ? { evictAfter: evict } : { evictBefore: evict };
  },
};
