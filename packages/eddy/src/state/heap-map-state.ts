/**
 * The map state handle of the heap backend. TTL is per map entry: `Cell.expiry` maps each user
 * key to its expiry and `Cell.expiresAt` is an upper bound of them, so a map that expired as a
 * whole is dropped without looking at its entries. Single-key operations look at one entry only;
 * iteration and isEmpty purge the whole map first (O(size), like the iteration itself).
 */

import { copyValue } from "./copy-value.ts";
import { checkUserKey } from "./descriptors.ts";
import { HeapKvState, refreshAll } from "./heap-state-handles.ts";
import { MAP_ENTRY_BYTES, sizeOf } from "./size-estimate.ts";
import type { InternalMapState } from "./internal-state.ts";
import type { Cell } from "./state-table.ts";

export class HeapMapState<UK, UV> extends HeapKvState implements InternalMapState<UK, UV> {
  get(key: UK): UV | undefined {
    const cell = this.#mapCell();
    if (cell === undefined) return undefined;
    const map = cell.value as Map<UK, UV>;
    const v = map.get(key);
    if (this.ttlMs !== 0 && !this.#liveEntry(cell, key)) return undefined;
    return this.deep ? copyValue(v) : v;
  }

  contains(key: UK): boolean {
    const cell = this.#mapCell();
    if (cell === undefined) return false;
    if (this.ttlMs !== 0) return this.#liveEntry(cell, key);
    return (cell.value as Map<UK, UV>).has(key);
  }

  put(key: UK, value: UV): void {
    checkUserKey(this.name, key);
    const copy = this.copyIn(value);
    if (this.ttlMs !== 0) this.table.cleanupStep();
    this.#set(key, copy);
  }

  putAll(entries: Iterable<readonly [UK, UV]>): void {
    const copies: [UK, UV][] = [];
    for (const [k, v] of entries) {
      checkUserKey(this.name, k);
      copies.push([k, this.copyIn(v)]);
    }
    if (copies.length === 0) return;
    if (this.ttlMs !== 0) this.table.cleanupStep();
    for (let i = 0; i < copies.length; i++) this.#set(copies[i]![0], copies[i]![1]);
  }

  remove(key: UK): void {
    const cell = this.#mapCell();
    if (cell === undefined) return;
    this.table.markCurrentDirty();
    const map = cell.value as Map<UK, UV>;
    if (this.table.sized && map.has(key)) this.#grew(cell, -this.#entryBytes(key, map.get(key)));
    map.delete(key);
    (cell.expiry as Map<UK, number> | undefined)?.delete(key);
    this.#dropIfEmpty(cell);
  }

  /** The disk backend's size estimate: the map cell grew by `delta` bytes. */
  #grew(cell: Cell, delta: number): void {
    cell.valueSize += delta;
    this.table.resizeCurrent(delta);
  }

  /** Estimated bytes of one map entry (the disk backend's cache bound). */
  #entryBytes(key: UK, value: UV | undefined): number {
    return MAP_ENTRY_BYTES + sizeOf(key) + sizeOf(value) + (this.ttlMs !== 0 ? MAP_ENTRY_BYTES + 8 : 0);
  }

  isEmpty(): boolean {
    return this.#liveMap(false) === undefined;
  }

  entries(): IterableIterator<[UK, UV]> {
    const map = this.#liveMap(true);
    if (map === undefined) return ([] as [UK, UV][]).values();
    return this.deep ? copiedEntries(map) : map.entries();
  }

  keys(): IterableIterator<UK> {
    const map = this.#liveMap(true);
    return map === undefined ? ([] as UK[]).values() : map.keys();
  }

  values(): IterableIterator<UV> {
    const map = this.#liveMap(true);
    if (map === undefined) return ([] as UV[]).values();
    return this.deep ? copiedValues(map) : map.values();
  }

  queryValue(cell: Cell, now: number): unknown {
    const map = cell.value as Map<UK, UV>;
    const expiry = cell.expiry as Map<UK, number> | undefined;
    const out = new Map<UK, UV>();
    if (cell.expiresAt > now) {
      for (const [k, v] of map) if (expiry === undefined || expiry.get(k)! > now) out.set(k, this.copyIn(v));
    }
    return out.size === 0 ? undefined : out;
  }

  /**
   * The current map cell, unless it expired as a whole (then it is removed; under
   * returnExpiredIfNotCleanedUp it is kept for #liveEntry to hand out entry by entry).
   */
  #mapCell(): Cell | undefined {
    if (this.ttlMs === 0) return this.rawCell();
    this.table.cleanupStep();
    const cell = this.rawCell();
    if (cell === undefined) return undefined;
    if (!this.returnExpired && cell.expiresAt <= this.table.now()) {
      this.table.removeCurrentCell(this.table.currentEntry()!, this.ns, this.isVoid);
      return undefined;
    }
    return cell;
  }

  /**
   * With TTL: whether `key` is present and visible; drops it if expired (visible all the same,
   * this once, under returnExpiredIfNotCleanedUp), refreshes it on read.
   */
  #liveEntry(cell: Cell, key: UK): boolean {
    const expiry = cell.expiry as Map<UK, number>;
    const exp = expiry.get(key);
    if (exp === undefined) return false;
    const now = this.table.now();
    if (exp <= now) {
      this.table.markCurrentDirty();
      (cell.value as Map<UK, UV>).delete(key);
      expiry.delete(key);
      this.#dropIfEmpty(cell);
      return this.returnExpired;
    }
    if (this.refreshOnRead) {
      this.table.markCurrentDirty();
      expiry.set(key, now + this.ttlMs);
      cell.expiresAt = now + this.ttlMs;
    }
    return true;
  }

  /**
   * The current map without expired entries, or undefined when empty. `read` (iteration, not
   * isEmpty) refreshes every entry under onReadAndWrite.
   */
  #liveMap(read: boolean): Map<UK, UV> | undefined {
    const cell = this.visibleCell(read);
    if (cell === undefined) return undefined;
    if (read && this.refreshOnRead) refreshAll(cell, this.table.now() + this.ttlMs); // visibleCell marked the entry dirty
    return cell.value as Map<UK, UV>;
  }

  #set(key: UK, copy: UV): void {
    const cell = this.table.cellForWrite(this.ns, this.isVoid, undefined);
    if (cell.value === undefined) {
      cell.value = new Map<UK, UV>();
      if (this.ttlMs !== 0) cell.expiry = new Map<UK, number>();
      if (this.table.sized) this.#grew(cell, sizeOf(cell.value) + (this.ttlMs !== 0 ? sizeOf(cell.expiry) : 0));
    }
    const map = cell.value as Map<UK, UV>;
    if (this.table.sized) {
      // The disk backend's size estimate: the entry added, or the value replaced.
      const old = map.get(key);
      if (old === undefined && !map.has(key)) this.#grew(cell, this.#entryBytes(key, copy));
      else if (old !== copy) this.#grew(cell, sizeOf(copy) - sizeOf(old));
    }
    map.set(key, copy);
    if (this.ttlMs !== 0) {
      const exp = this.table.now() + this.ttlMs;
      (cell.expiry as Map<UK, number>).set(key, exp);
      cell.expiresAt = exp;
    }
  }

  #dropIfEmpty(cell: Cell): void {
    if ((cell.value as Map<UK, UV>).size === 0) {
      this.table.removeCurrentCell(this.table.currentEntry()!, this.ns, this.isVoid);
    }
  }
}

function* copiedEntries<UK, UV>(map: Map<UK, UV>): Generator<[UK, UV], undefined, unknown> {
  for (const [k, v] of map) yield [k, copyValue(v)];
  return undefined;
}

function* copiedValues<UV>(map: Map<unknown, UV>): Generator<UV, undefined, unknown> {
  for (const v of map.values()) yield copyValue(v);
  return undefined;
}
