/**
 * A value state's values outside windows (the VOID namespace), addressed by key: for an operator
 * that owns the state and handles records one after another in a batch loop (rolling
 * aggregations). `seek` a record's key and read its value, `set` the new one: one map lookup per
 * record, and the backend's current key (the one the handles follow) does not move.
 *
 * Only for states without TTL and declared `copy: "none"`: the cursor neither expires nor copies.
 * Copying what it stores is the operator's job, so that no stored object is reachable from user
 * code (the no-aliasing rule of the heap backend).
 *
 * Call order: `seek`, then at most one `set` for that key, before the next `seek`; nothing else
 * writes the state in between. Snapshots stay correct: `seek` unshares an entry a live capture
 * holds, exactly as the current-key path does.
 */
import type { Key, MapKey } from "../core/key.ts";
import { mapKeyOf } from "../core/key.ts";
import type { ValueCursor } from "./keyed-state-backend.ts";
import { sizeOf } from "./size-estimate.ts";
import { keyGroupOutOfRange, VOID_NAMESPACE, type KeyEntry, type KeyGroupRangeLike, type StateTable } from "./state-table.ts";

export class VoidValueCursor<T> implements ValueCursor<T> {
  readonly #table: StateTable;
  readonly #range: KeyGroupRangeLike;
  /** The key `seek` moved to: its key, map identity, group index and entry (undefined: none yet). */
  #key: Key = "";
  #mapKey: MapKey = "";
  #kgIndex = -1;
  #entry: KeyEntry | undefined = undefined;

  constructor(table: StateTable, range: KeyGroupRangeLike) {
    this.#table = table;
    this.#range = range;
  }

  /**
   * hot path: moves to `key` of key group `keyGroup` and returns its value, undefined when none.
   * Throws an internal error when `keyGroup` is not in the backend's range.
   */
  seek(key: Key, keyGroup: number): T | undefined {
    const range = this.#range;
    if ((keyGroup | 0) !== keyGroup || keyGroup < range.start || keyGroup > range.end) {
      throw keyGroupOutOfRange(keyGroup, range);
    }
    const mapKey = mapKeyOf(key);
    const kgIndex = keyGroup - range.start;
    this.#key = key;
    this.#mapKey = mapKey;
    this.#kgIndex = kgIndex;
    const entry = this.#table.entryAt(mapKey, kgIndex);
    this.#entry = entry;
    return entry !== undefined && entry.hasVoid ? (entry.value as T) : undefined;
  }

  /** hot path: stores `value` for the key `seek` moved to; undefined clears it (as ValueState.update). */
  set(value: T | undefined): void {
    let entry = this.#entry;
    if (value === undefined) {
      if (entry !== undefined) this.#table.removeCell(entry, VOID_NAMESPACE, true, this.#kgIndex);
      this.#entry = undefined;
      return;
    }
    if (entry === undefined) this.#entry = entry = this.#table.createEntry(this.#key, this.#mapKey, this.#kgIndex);
    else this.#table.markDirty(entry);
    if (!entry.hasVoid) entry.setVoid(undefined);
    // The disk backend's size estimate (an accumulator changed in place is not seen: see HeapKvState.resized).
    if (entry.value !== value && this.#table.sized) {
      const size = sizeOf(value);
      this.#table.resize(entry, size - entry.valueSize);
      entry.valueSize = size;
    }
    entry.value = value;
  }
}
