/**
 * The keyed state backend contract: what operators, the window machinery and checkpointing depend
 * on, whatever holds the state (the heap backend today, a disk backend next). One backend per
 * keyed operator subtask, holding every keyed state of that subtask for the key groups it owns.
 *
 * Call order: the operator calls `setCurrentKey(key, keyGroup)` once per record or timer; handles
 * from `getState` & co. then read and write the current key's state (in their current namespace).
 * `restoreKeyGroup` only before processing starts. Never called concurrently: every method runs on
 * the task thread. A snapshot taken by `snapshot()` is written later, on the same thread, between
 * records, while processing goes on; what is written afterwards never shows in it.
 *
 * Semantics every backend keeps (the shared contract suite, keyed-state-backend-contract.ts,
 * checks them against each implementation):
 * - State is scoped to (current key, namespace); nothing of one key or namespace is seen from
 *   another. Everything is stored per key group, so a key-group range snapshots and restores on
 *   its own (rescaling).
 * - Reads after a write see the write. A cleared or emptied value leaves nothing behind
 *   (`numKeys` counts it no more).
 * - TTL: an expired value is never returned, whether or not it was cleaned up yet — unless the
 *   TTL's visibility is `returnExpiredIfNotCleanedUp`: then a read that finds one still stored
 *   returns it and removes it. Snapshots leave expired values out unless `cleanup.fullSnapshot`
 *   is false.
 * - Copying, by the descriptor's `copy`:
 *   - `"deep"` (default): what is written is copied, and so is what is read; no object held in
 *     state is reachable from user code, and mutating a value after `update()` or after reading
 *     it changes nothing stored.
 *   - `"none"`: no copies are made. Changes persist only through `update()` (`add`, `put`, …): a
 *     backend that serializes stores the value as it was when written, while the heap backend
 *     keeps the very object, so a value mutated in place and not written again may or may not be
 *     seen by later reads. Code that declares `copy: "none"` must not mutate a value after
 *     writing it, nor a value it read unless it writes it back.
 * - Snapshots are in the canonical format (keyed-state-meta.ts, heap-snapshot.ts's writer), so a
 *   snapshot of one backend restores into another.
 */
import type { Clock } from "../core/clock.ts";
import type { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import type { Key } from "../core/key.ts";
import type {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  StateDescriptorBase,
  ValueStateDescriptor,
} from "./descriptors.ts";
import type {
  InternalKvState,
  InternalAggregatingState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
} from "./internal-state.ts";
import type { SharedFileRef, SharedKeyedSnapshot } from "./incremental-snapshot.ts";
import type { KeyedStateMeta } from "./keyed-state-meta.ts";
import type { RestoredCell } from "./heap-snapshot.ts";
import type { KeyGroupRangeLike, Namespace } from "./namespace.ts";

export interface KeyedStateBackendOptions {
  /** The key groups this subtask owns (inclusive). */
  readonly keyGroupRange: KeyGroupRangeLike;
  /** Processing time for TTL. */
  readonly clock: Clock;
  /** The operator the state belongs to, for messages. */
  readonly operatorName?: string;
  /** A state whose descriptor is queryable was registered (see DescriptorBase.setQueryable). */
  readonly onQueryable?: (queryableName: string, stateName: string) => void;
  /**
   * Called once, when the first state whose TTL asks for background cleanup is registered (or
   * restored): from then on the caller calls `cleanupExpired` now and then, between records.
   */
  readonly onBackgroundCleanup?: () => void;
  /**
   * Which operator subtask the backend serves, for backends that keep files (the disk backend's
   * directory per job and subtask). Undefined in unit tests.
   */
  readonly scope?: { readonly job: string; readonly operatorId: string; readonly subtaskIndex: number };
}

/** Makes the backend of one keyed operator subtask (chosen per job; the heap backend by default). */
/** One key group's decoded cells: calls `onCell` for each (state by its snapshot meta). */
export type KeyGroupCells = (onCell: (meta: KeyedStateMeta, restored: RestoredCell) => void) => void;

export type KeyedStateBackendFactory = (options: KeyedStateBackendOptions) => KeyedStateBackend;

export interface KeyedStateBackend {
  /** The key groups this backend owns (inclusive). */
  readonly keyGroupRange: KeyGroupRangeLike;

  /**
   * hot path: makes `key` (of key group `keyGroup`, computed by the caller) the current key of
   * every handle. Throws an internal error when `keyGroup` is not in the range.
   */
  setCurrentKey(key: Key, keyGroup: number): void;
  /**
   * hot path: the key group of `selected` (a key selector's result, not validated) when it equals
   * a key this backend resolved recently — which was valid and in range then, as `selected` is —
   * so that the caller may skip validating and hashing it; -1 when not known (the caller does
   * both). Never wrong, only missing. The next `setCurrentKey(selected, …)` reuses the lookup.
   */
  knownKeyGroup(selected: unknown): number;
  /** The current key; throws NO_CURRENT_KEY before the first `setCurrentKey`. */
  getCurrentKey(): Key;
  getCurrentKeyGroup(): number;

  /**
   * The handle of a state, registered on first use by name; asking again with an equal descriptor
   * returns the same handle, with a different kind or options is refused (naming the state). A
   * state restored from a snapshot is adopted by the first descriptor that asks for it.
   */
  getState<T>(descriptor: ValueStateDescriptor<T>): InternalValueState<T>;
  getListState<T>(descriptor: ListStateDescriptor<T>): InternalListState<T>;
  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): InternalMapState<UK, UV>;
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): InternalReducingState<T>;
  getAggregatingState<IN, ACC, OUT>(descriptor: AggregatingStateDescriptor<IN, ACC, OUT>): InternalAggregatingState<IN, OUT>;
  /**
   * A cursor over a value state's VOID-namespace values by key, for operators that own the state
   * and handle a batch of records in a loop (rolling aggregations): registered as by `getState`.
   * The descriptor must have no TTL and `copy: "none"`; the operator copies what it stores.
   */
  getVoidValueCursor<T>(descriptor: ValueStateDescriptor<T>): ValueCursor<T>;

  /** Names of every registered state (restored ones included), in registration order. */
  stateNames(): string[];
  /** The descriptor a state was first registered with (kind, ttl, copy). */
  descriptorOf(stateName: string): StateDescriptorBase;
  /** Restored states no descriptor has asked for yet (dropped, or refused, after open()). */
  unclaimedStates(): string[];
  /** Number of keys holding any value of the state (expired ones not cleaned yet included). */
  numKeys(stateName: string): number;
  /**
   * The keys holding a visible (unexpired) value of a state in `namespace` (default: VOID), each
   * with its key group, taken when called: the caller may move the current key and write to the
   * state while going through them (Flink's applyToAllKeys; broadcast functions' applyToKeyedState).
   * O(keys of the state); an unknown state is UNKNOWN_STATE.
   */
  keysOf(stateName: string, namespace?: Namespace): { readonly key: Key; readonly keyGroup: number }[];
  /**
   * Every visible (key, namespace, value) of a state in one key group of this backend's range
   * (expired values and elements left out), taken as the iteration goes: do not write to the
   * state meanwhile (collect first). An unknown state is UNKNOWN_STATE.
   */
  entries(stateName: string, keyGroup: number): Iterable<KeyedStateEntry>;
  /**
   * One key's value without moving the current key (queryable state): what the handle's read
   * would return, or undefined when nothing is stored. Neither refreshes TTL nor cleans up.
   */
  getValueForKey(stateName: string, key: Key, keyGroup: number, namespace?: Namespace): unknown;
  /**
   * Background TTL cleanup (StateTtlCleanup.background), bounded: examines up to `maxEntries`
   * keys of each state whose TTL asks for it; returns the values removed.
   */
  cleanupExpired(maxEntries: number): number;

  /**
   * The synchronous part of a checkpoint: a consistent view of every state as of now, written
   * later by key group while processing goes on. Bounded work (the heap backend: O(key groups)).
   */
  snapshot(options?: KeyedSnapshotOptions): KeyedStateSnapshot;
  /**
   * Restores one key group in the canonical format, before processing starts. `states` describes
   * the snapshot's states; one already registered must have the same kind and options.
   */
  restoreKeyGroup(keyGroup: number, input: ByteReader, states: readonly KeyedStateMeta[]): void;
  /**
   * Restores one key group given as decoded cells (what `restoreKeyGroup` reads from the
   * canonical format; a restore from an incremental chain decodes its files once and gives the
   * cells here, not re-encoded). Same rules as `restoreKeyGroup`.
   */
  restoreKeyGroupCells(keyGroup: number, cells: KeyGroupCells, states: readonly KeyedStateMeta[]): void;
  /**
   * The operator closed (also after a failure): release what lives outside the heap (files, the
   * store). Optional: the heap backend holds nothing else. No other call follows.
   */
  dispose?(): void;
  /**
   * Local recovery (optional): restores checkpoint `checkpointId` — whose incremental chain for
   * this subtask, with the same key-group range, is `chain`, holding `states` — from what the backend kept on this
   * machine (`used`), or says why it cannot (the caller then restores the key groups from the
   * checkpoint's files); undefined when the backend keeps nothing locally. Before anything else;
   * timers are restored by the caller either way.
   */
  restoreLocally?(checkpointId: number, chain: readonly SharedFileRef[], states: readonly KeyedStateMeta[]): LocalRestoreOutcome | undefined;
  /** Checkpoint `checkpointId` completed (optional: a backend keeping local state drops what is older). */
  notifyCheckpointComplete?(checkpointId: number): void;
}

/** What a backend made of local recovery (KeyedStateBackend.restoreLocally). */
export interface LocalRestoreOutcome {
  /** The state came back from what the backend kept on this machine. */
  readonly used: boolean;
  /** Why not, when not used. */
  readonly reason?: string;
  /** Records the backend read from what it kept, when used. */
  readonly read?: number;
  /** Records it wrote to come back to the checkpoint, when used. */
  readonly records?: number;
  /** Time taken (ms). */
  readonly ms: number;
}

/** One stored (key, namespace) value of a state, as `entries()` reports it. */
export interface KeyedStateEntry {
  readonly key: Key;
  readonly namespace: Namespace;
  /** As stored: the value or accumulator; a fresh array for list state; a fresh Map for map state. */
  readonly value: unknown;
}

export interface KeyedSnapshotOptions {
  /**
   * The snapshot is for a checkpoint (not a savepoint), which a backend may write incrementally:
   * then `shared` holds its state and `writeKeyGroup` is not used for it (state/incremental-snapshot.ts).
   */
  readonly incremental?: boolean;
  /** The checkpoint (or savepoint) the snapshot is for. */
  readonly checkpointId?: number;
}

/** A backend's frozen view for one checkpoint. `release()` when done, also on failure; may be called twice. */
export interface KeyedStateSnapshot {
  readonly states: readonly KeyedStateMeta[];
  /** An incremental snapshot's state, written to a shared file (absent: the canonical key groups hold it). */
  readonly shared?: SharedKeyedSnapshot;
  /** Whether key group `keyGroup` holds anything to write. */
  hasKeyGroup(keyGroup: number): boolean;
  /** Writes key group `keyGroup` in the canonical format. */
  writeKeyGroup(keyGroup: number, out: ByteWriter): void;
  /** Key group `keyGroup` is written: what the view keeps of it may go. */
  releaseKeyGroup(keyGroup: number): void;
  release(): void;
}

/**
 * See KeyedStateBackend.getVoidValueCursor. Call order: `seek`, then at most one `set` for that
 * key, before the next `seek`; nothing else writes the state in between.
 */
export interface ValueCursor<T> {
  /** hot path: moves to `key` (of `keyGroup`) and returns its value, undefined when none. */
  seek(key: Key, keyGroup: number): T | undefined;
  /** Stores the value of the key `seek` moved to; undefined removes it. */
  set(value: T | undefined): void;
}

/** The handle of the state `descriptor` declares, whatever its kind (registered as by getState & co.). */
export function stateFor(backend: KeyedStateBackend, descriptor: StateDescriptorBase): InternalKvState {
  switch (descriptor.kind) {
    case "value":
      return backend.getState(descriptor as never);
    case "list":
      return backend.getListState(descriptor as never);
    case "map":
      return backend.getMapState(descriptor as never);
    case "reducing":
      return backend.getReducingState(descriptor as never);
    case "aggregating":
      return backend.getAggregatingState(descriptor as never);
  }
}
