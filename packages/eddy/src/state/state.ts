/**
 * Keyed state handles as user functions see them. Every handle is scoped to the key of the record
 * (or timer) being processed, and to a namespace (the window, for window operators). Handles are
 * used only from the task thread that owns them; they are never called concurrently.
 *
 * Aliasing: unless the descriptor says `copy: "none"`, a value read from a handle is the caller's
 * own copy, and a value written to a handle is copied, so mutating either later never changes
 * what state holds.
 */

export interface ValueState<T> {
  /** The value for the current key, or undefined when none was set (or it expired). */
  value(): T | undefined;
  /** Sets the value; `update(undefined)` is the same as `clear()`. */
  update(value: T): void;
  clear(): void;
}

export interface ListState<T> {
  /** The elements in insertion order; `[]` when empty. A fresh array the caller may mutate. */
  get(): T[];
  add(value: T): void;
  addAll(values: Iterable<T>): void;
  /** Replaces all elements; an empty iterable clears the list. */
  update(values: Iterable<T>): void;
  clear(): void;
}

export interface MapState<UK, UV> {
  get(key: UK): UV | undefined;
  put(key: UK, value: UV): void;
  putAll(entries: Iterable<readonly [UK, UV]>): void;
  /** Removing an absent key is a no-op. */
  remove(key: UK): void;
  contains(key: UK): boolean;
  /**
   * Live iteration in insertion order; values are copies. Entries put while iterating may or may
   * not be visited (JS Map semantics).
   */
  entries(): IterableIterator<[UK, UV]>;
  keys(): IterableIterator<UK>;
  values(): IterableIterator<UV>;
  isEmpty(): boolean;
  clear(): void;
}

export interface ReducingState<T> {
  /** The reduction of every value added since the last clear, or undefined when none was. */
  get(): T | undefined;
  add(value: T): void;
  clear(): void;
}

export interface AggregatingState<IN, OUT> {
  /** `getResult` of the accumulator, or undefined when nothing was added since the last clear. */
  get(): OUT | undefined;
  add(value: IN): void;
  clear(): void;
}
