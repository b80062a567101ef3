/**
 * The keyed state handles as the runtime sees them (every backend's): the user-facing state
 * interfaces plus what windows and joins need — a namespace below the current key, and merging
 * namespaces. A handle follows its backend's current key; its namespace stays until set again.
 */
import type { StateKind } from "./descriptors.ts";
import type { Namespace } from "./namespace.ts";
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from "./state.ts";

/** What the windows layer (and other runtime code) needs beyond the user-facing interface. */
export interface InternalKvState {
  readonly name: string;
  readonly kind: StateKind;
  /** Scopes the handle below the current key; stays until set again. Default VOID_NAMESPACE. */
  setCurrentNamespace(namespace: Namespace): void;
  getCurrentNamespace(): Namespace;
  /**
   * Merges the current key's cells in `sources` into `target` and removes them (windows that
   * merge, e.g. sessions). Reducing, aggregating (needs AggregateFunction.merge) and list state.
   */
  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void;
  /**
   * Whether the current (key, namespace) holds anything, expired or not (no TTL cleanup, no
   * copy): for window operators, which know a window's or pane's timers exist while its contents
   * do (the pane operator's firing chain; the window operator learns it from `add`).
   */
  holdsValue(): boolean;
}

/** How `InternalValueState.accumulate` folds an input into the stored value. */
export interface Accumulation<IN, T> {
  /** The value of a cell that held nothing, from its first input. */
  create(value: IN): T;
  /** The next value from the stored one (which the state does not copy for this call). */
  add(stored: T, value: IN): T;
}

export type InternalValueState<T> = ValueState<T> &
  InternalKvState & {
    /**
     * `update(current === undefined ? fns.create(value) : fns.add(current, value))` in one lookup
     * of the current (key, namespace), returning whether it created the cell. For operators that
     * own their values (state declared `copy: "none"`: nothing is copied either way); no TTL.
     */
    accumulate<IN>(value: IN, fns: Accumulation<IN, T>): boolean;
    /**
     * The current key's values in the number namespaces `from`, `from + step`, … up to `to`, in increasing
     * namespace order, into `namespaces[0..n)` and `values[0..n)` (what is past n is left as it
     * was: the arrays are the caller's scratch); returns n. The
     * current namespace is left as it was. For operators that own their values (as `accumulate`):
     * the sliding pane operator reads a key's panes with it in one pass over the key's cells (those
     * of the windows the key fires in one watermark advance), instead of a namespace lookup per pane.
     */
    valuesInRange(from: number, to: number, step: number, namespaces: number[], values: T[]): number;
  };
/**
 * `add` of the appending states (list, reducing, aggregating) also returns whether it created the
 * current (key, namespace)'s cell, i.e. whether nothing visible was there before: the window
 * operator learns "is this window new" and updates it in one lookup. Listed first so it is the
 * signature a call resolves to.
 */
interface CreatingAdd<IN> {
  add(value: IN): boolean;
}

export type InternalListState<T> = CreatingAdd<T> & ListState<T> & InternalKvState;
export type InternalMapState<UK, UV> = MapState<UK, UV> & InternalKvState;
export type InternalReducingState<T> = CreatingAdd<T> & ReducingState<T> & InternalKvState;
export type InternalAggregatingState<IN, OUT> = CreatingAdd<IN> & AggregatingState<IN, OUT> & InternalKvState;
