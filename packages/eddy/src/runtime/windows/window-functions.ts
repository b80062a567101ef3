/** What users write to evaluate a window (Flink's WindowFunction / ProcessWindowFunction). */
import type { OutputTag } from "../../core/output-tag.ts";
import type { Collector, KeyedStateStore, RuntimeContext } from "../functions.ts";
import type { FunctionFactory } from "../operators/function-instance.ts";
import type { Window } from "./windows.ts";

/** Called once per firing with the window's (pre-aggregated) input. */
export type WindowFunction<IN, OUT, K, W extends Window> = (key: K, window: W, input: IN, out: Collector<OUT>) => void;

export interface ProcessWindowContext<W extends Window> {
  readonly window: W;
  currentProcessingTime(): number;
  currentWatermark(): number;
  /** Keyed state of the current key scoped to this window; cleared with `clear` when the window is. */
  windowState(): KeyedStateStore;
  /** Keyed state of the current key shared by all its windows. */
  globalState(): KeyedStateStore;
  output<S>(tag: OutputTag<S>, value: S): void;
}

/** A window function with access to the window, per-window and global keyed state. */
export interface ProcessWindowFunction<IN, OUT, K, W extends Window> {
  open?(ctx: RuntimeContext): void;
  /** `elements`: every element (process/apply) or the single pre-aggregated value (reduce/aggregate). */
  process(key: K, context: ProcessWindowContext<W>, elements: IN[], out: Collector<OUT>): void;
  /** The window is being purged for good: clean up per-window state. */
  clear?(context: ProcessWindowContext<W>): void;
  close?(): void;
}

/**
 * What `reduce(fn, windowFn)` and `aggregate(fn, windowFn)` take as `windowFn`: a plain window
 * function, a ProcessWindowFunction object, or a factory of one marked by `functionFactory` (a
 * bare `() => new X()` would read as a window function; see function-instance.ts).
 */
export type AnyWindowFunction<IN, OUT, K, W extends Window> =
  | WindowFunction<IN, OUT, K, W>
  | ProcessWindowFunction<IN, OUT, K, W>
  | FunctionFactory<ProcessWindowFunction<IN, OUT, K, W>>;
