/**
 * Broadcast state, as Flink's broadcast state pattern: per operator subtask, one map for each
 * MapStateDescriptor given to `stream.broadcast(...)`. Every subtask receives every broadcast
 * record, and only `processBroadcastElement` may change the maps, so (as long as the user's
 * function changes them the same way on every subtask) all subtasks hold the same state. The other
 * side (`processElement`, `onTimer`) sees it read-only: a write there throws
 * BROADCAST_STATE_READ_ONLY, since it would change one subtask's copy only.
 *
 * Checkpointing: each map is operator state of mode `broadcast`, written by every subtask as the
 * list of its entries; on restore, at any parallelism, new subtask i takes the entries of old
 * subtask i mod the old parallelism (executor/checkpoint-restore.ts), as Flink does.
 *
 * Invariant: stored values are never mutated in place by Eddy; with `copy: "deep"` (the default)
 * they are copied when put and when read, so a snapshot may hold the stored values themselves.
 */
import { EddyError } from "../core/errors.ts";
import { checkUserKey, type MapStateDescriptor } from "../state/descriptors.ts";
import { copyValue } from "../state/copy-value.ts";
import type { OperatorContext } from "./operator.ts";

/** Broadcast state as the non-broadcast side sees it (Flink's ReadOnlyBroadcastState). */
export interface ReadOnlyBroadcastState<UK, UV> {
  get(key: UK): UV | undefined;
  contains(key: UK): boolean;
  /** Entries in insertion order; values are copies unless the descriptor says `copy: "none"`. */
  entries(): IterableIterator<[UK, UV]>;
  keys(): IterableIterator<UK>;
  values(): IterableIterator<UV>;
  isEmpty(): boolean;
  readonly size: number;
}

/** Broadcast state as `processBroadcastElement` sees it: writable. */
export interface BroadcastState<UK, UV> extends ReadOnlyBroadcastState<UK, UV> {
  put(key: UK, value: UV): void;
  putAll(entries: Iterable<readonly [UK, UV]>): void;
  /** Removing an absent key is a no-op. */
  remove(key: UK): void;
  clear(): void;
}

type AnyMapDescriptor = MapStateDescriptor<unknown, unknown>;

/** The broadcast states of one operator subtask, with a writable and a read-only handle each. */
export class BroadcastStates {
  readonly #operatorName: string;
  readonly #writable = new Map<string, BroadcastState<unknown, unknown>>();
  readonly #readOnly = new Map<string, ReadOnlyBroadcastState<unknown, unknown>>();

  /** Creates the maps of `descriptors` (names unique), restored from the checkpoint if it has them. */
  constructor(ctx: OperatorContext, descriptors: readonly AnyMapDescriptor[]) {
    this.#operatorName = ctx.operatorName;
    for (const d of descriptors) {
      const map = new Map<unknown, unknown>();
      // The stored values are never mutated in place (invariant above): the snapshot shares them.
      const restored = ctx.checkpointing?.registerOperatorState(d.name, "broadcast", () => [...map]);
      if (restored !== undefined) restoreEntries(map, restored, d.name, ctx.operatorName);
      const copy = d.copy === "deep" ? copyValue : <T>(v: T): T => v;
      const writable = new MapBroadcastState(d.name, map, copy);
      this.#writable.set(d.name, writable);
      this.#readOnly.set(d.name, readOnlyView(writable, d.name));
    }
  }

  writable<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): BroadcastState<UK, UV> {
    return this.#find(this.#writable, descriptor) as BroadcastState<UK, UV>;
  }

  readOnly<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): ReadOnlyBroadcastState<UK, UV> {
    return this.#find(this.#readOnly, descriptor) as ReadOnlyBroadcastState<UK, UV>;
  }

  #find<S>(states: ReadonlyMap<string, S>, descriptor: { readonly name?: unknown }): S {
    const name = descriptor?.name;
    const state = typeof name === "string" ? states.get(name) : undefined;
    if (state === undefined) {
      throw new EddyError(
        "UNKNOWN_BROADCAST_STATE",
        `operator '${this.#operatorName}' has no broadcast state '${String(name)}' (declared: ${[...states.keys()].join(", ")}); ` +
          `pass its descriptor to stream.broadcast(...)`,
      );
    }
    return state;
  }
}

class MapBroadcastState implements BroadcastState<unknown, unknown> {
  readonly #name: string;
  readonly #map: Map<unknown, unknown>;
  readonly #copy: <T>(value: T) => T;

  constructor(name: string, map: Map<unknown, unknown>, copy: <T>(value: T) => T) {
    this.#name = name;
    this.#map = map;
    this.#copy = copy;
  }

  get size(): number {
    return this.#map.size;
  }
  get(key: unknown): unknown {
    const v = this.#map.get(key);
    return v === undefined ? undefined : this.#copy(v);
  }
  contains(key: unknown): boolean {
    return this.#map.has(key);
  }
  *entries(): IterableIterator<[unknown, unknown]> {
    for (const [k, v] of this.#map) yield [k, this.#copy(v)];
  }
  keys(): IterableIterator<unknown> {
    return this.#map.keys();
  }
  *values(): IterableIterator<unknown> {
    for (const v of this.#map.values()) yield this.#copy(v);
  }
  isEmpty(): boolean {
    return this.#map.size === 0;
  }
  put(key: unknown, value: unknown): void {
    checkUserKey(this.#name, key);
    // A new entry object each time: a snapshot taken before still holds the old value.
    this.#map.set(key, this.#copy(value));
  }
  putAll(entries: Iterable<readonly [unknown, unknown]>): void {
    for (const [k, v] of entries) this.put(k, v);
  }
  remove(key: unknown): void {
    this.#map.delete(key);
  }
  clear(): void {
    this.#map.clear();
  }
}

/**
 * The read-only face of a broadcast state. The writing methods exist so that a call through a cast
 * (or from plain JavaScript) fails with a clear error instead of "put is not a function".
 */
function readOnlyView(state: BroadcastState<unknown, unknown>, name: string): ReadOnlyBroadcastState<unknown, unknown> {
  const refuse = (method: string) => (): never => {
    throw new EddyError(
      "BROADCAST_STATE_READ_ONLY",
      `broadcast state '${name}' is read-only here: ${method}() may only be called in processBroadcastElement, ` +
        `where every subtask makes the same change (processElement and onTimer see it read-only)`,
    );
  };
  const view: ReadOnlyBroadcastState<unknown, unknown> & Record<"put" | "putAll" | "remove" | "clear", () => never> = {
    get: (key) => state.get(key),
    contains: (key) => state.contains(key),
    entries: () => state.entries(),
    keys: () => state.keys(),
    values: () => state.values(),
    isEmpty: () => state.isEmpty(),
    get size() {
      return state.size;
    },
    put: refuse("put"),
    putAll: refuse("putAll"),
    remove: refuse("remove"),
    clear: refuse("clear"),
  };
  return view;
}

function restoreEntries(map: Map<unknown, unknown>, entries: readonly unknown[], name: string, operatorName: string): void {
  for (const entry of entries) {
    if (!Array.isArray(entry) || entry.length !== 2) {
      throw new EddyError("CHECKPOINT_CORRUPT", `broadcast state '${name}' of '${operatorName}' holds an entry that is not a [key, value] pair`);
    }
    checkUserKey(name, entry[0]);
    map.set(entry[0], entry[1]);
  }
}
