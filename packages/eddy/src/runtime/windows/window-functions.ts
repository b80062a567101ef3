/** What users write to evaluate a window (Flink's WindowFunction / ProcessWindowFunction). */
import type { OutputTag } from "../../core/output-tag.ts";
import type { Collector, KeyedStateStore, RuntimeContext } from "../functions.ts";
import type { FunctionFactory } from "../operators/function-instance.ts";
import type { Window } from "./windows.ts";

/**
 * Called once per firing with the window's input, always an array (Flink's Iterable): every
 * element (apply), or the one pre-aggregated value (the window function of reduce/aggregate), so
 * `for (const x of input)` works in every form.
 */
export type WindowFunction<IN, OUT, K, W extends Window> = (key: K, window: W, input: IN[], out: Collector<OUT>) => void;

/**
 * The window function form of reduce/aggregate: `input` is the one pre-aggregated value in an
 * array, typed as a one-element tuple so `(key, window, [value], out) => …` needs no `!`.
 */
export type AggregatedWindowFunction<V, OUT, K, W extends Window> = (key: K, window: W, input: [V], out: Collector<OUT>) => void;

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
  /** `elements`: every element (process), or an array of the one pre-aggregated value (reduce/aggregate). */
  process(key: K, context: ProcessWindowContext<W>, elements: IN[], out: Collector<OUT>): void;
  /** The window is being purged for good: clean up per-window state. */
  clear?(context: ProcessWindowContext<W>): void;
  close?(): void;
}

/**
 * What a window's `process`/`apply` take: a plain window function, a ProcessWindowFunction
 * object, or a factory of one marked by `functionFactory` (a bare `() => new X()` would read as a
 * window function; see function-instance.ts).
 */
export type AnyWindowFunction<IN, OUT, K, W extends Window> =
  | WindowFunction<IN, OUT, K, W>
  | ProcessWindowFunction<IN, OUT, K, W>
  | FunctionFactory<ProcessWindowFunction<IN, OUT, K, W>>;

/** What reduce/aggregate take to evaluate their pre-aggregated value (the same three forms). */
export type AnyAggregatedWindowFunction<V, OUT, K, W extends Window> =
  | AggregatedWindowFunction<V, OUT, K, W>
  | ProcessWindowFunction<V, OUT, K, W>
  | FunctionFactory<ProcessWindowFunction<V, OUT, K, W>>;
