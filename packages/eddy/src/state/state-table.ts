/**
 * The storage of one keyed state (one descriptor name) in the heap backend: per key group, a JS
 * Map from the key's map identity to a `KeyEntry`, which holds one `Cell` per namespace.
 *
 * Invariants:
 * - `groups[kg - range.start]` holds exactly the keys of key group `kg`; nothing keyed lives
 *   anywhere else, so snapshots and rescaling work per key group.
 * - No empty entries: a cell whose value is cleared, or whose list/map became empty, is removed,
 *   and a key without cells is removed from its group map. `numKeys` counts group-map entries.
 * - Stored objects are never mutated in place by the backend, except the list array and the Map
 *   of list/map cells (which `entries()` therefore copies).
 * - TTL: `Cell.expiresAt` is the expiry of a value cell, and an upper bound of the element
 *   expiries of a list/map cell (Infinity without TTL); an entry is expired when `expiresAt <= now`.
 *
 * Costs: current-key lookup is one Map.get per (state, record), cached until the next
 * setCurrentKey; the VOID namespace is a field of the entry, other namespaces one more Map.get.
 * Keys that are int32 numbers also go through a direct-mapped cache of entries (slot: the key's
 * low bits), filled by lookups, which holds only entries that are in their group map; string and
 * composite keys through their key row (key-rows.ts), shared by the tables of one backend, which
 * lists each table's entry of the key. The places that take entries out of a group map or replace
 * them (`removeCell`, `evict`, `#copyEntry`) update both (`#replaceHot`).
 *
 * Snapshots (copy-on-write, per key group and per entry, as Flink's CopyOnWriteStateMap does):
 * - `capture()` costs O(key groups), not O(keys): it bumps the table's version and records, per
 *   non-empty group, that the capture still reads the group's live map (the group is *pending*).
 * - The first access of a pending group (read or write) hands every pending capture an array of
 *   the group's entries as they are (a copy of pointers, ~10 ns per key), so later inserts and
 *   deletes in the live map do not change what the captures see.
 * - Value, reducing and aggregating state (unless declared `copy: "none"`) never mutates a value
 *   in place, so the array also records each entry's VOID cell by value (value, expiry) and its
 *   namespace map: the entry itself may then change in place, and such an entry is never copied
 *   — unless it has namespace cells (windows), whose map is mutated in place.
 * - Other entries carry the version they were created at. An entry older than the newest live
 *   capture holding its group is shared with it and never changed again: the first access of its
 *   key replaces it in the live map by a private copy (entry, cells, list arrays and maps, and
 *   the values of states declared `copy: "none"`, which internal accumulators and user reduce
 *   functions may mutate in place; other values are never mutated in place). So a capture's view
 *   is frozen while the task goes on processing, and only the keys touched while it is alive are
 *   copied. A map cell without TTL is not copied: the live copy takes its Map, and the captured
 *   cell keeps a FrozenMap of its entries (two arrays: ~20-40 ns per entry against ~160 for a new
 *   Map, which rehashes every key; q16's checkpoints had copied ~2.6 M map entries each).
 * - The copy decision is per group: an entry is copied when it is older than the newest live
 *   capture that still needs its group. A snapshot writes its groups one by one and gives each
 *   back when written (`releaseGroup`), so a key touched after its group was written is not
 *   copied: on average half the copies of holding every group until the end.
 * - `release()` ends a capture (every group it still holds); once none is alive, nothing is
 *   copied any more.
 */

import type { Clock } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import type { Key, MapKey } from "../core/key.ts";
import { copyValue } from "./copy-value.ts";
import { FrozenMap } from "../core/codec/frozen-map.ts";
import type { KeyRow } from "./key-rows.ts";
import type { ResolvedTtl, StateKind } from "./descriptors.ts";
import { sizeOf } from "./size-estimate.ts";

import { VOID_NAMESPACE, type KeyGroupRangeLike, type Namespace } from "./namespace.ts";

export { VOID_NAMESPACE } from "./namespace.ts";
export type { KeyGroupRangeLike, Namespace } from "./namespace.ts";

/** The backend's current key, shared by every table of one backend. Mutated only by the backend. */
export class KeyContext {
  key: Key = "";
  mapKey: MapKey = "";
  keyGroup = -1;
  /** `keyGroup - range.start`; -1 before the first `setCurrentKey`. */
  kgIndex = -1;
  /** Bumped on every `setCurrentKey`; tables cache their current entry per epoch. */
  epoch = 0;
  /** The current key's row (key-rows.ts): its map identity and each table's entry; undefined: the key has none. */
  row: KeyRow<KeyEntry> | undefined = undefined;
  /** Tables made with this context so far: the next one's `rowIndex`. */
  tables = 0;
  /**
   * Bumped by every snapshot that takes part in incremental checkpoints; written into each entry
   * changed (`KeyEntry.changedAt`), so a snapshot knows which cached entries changed since the
   * previous one.
   */
  changeEpoch = 0;
}

/**
 * `KeyEntry.changedAt` of an entry created in change epoch `epoch` (≥ 0): -2 and below, apart
 * from the disk backend's `LOADED` (-1).
 */
export function bornIn(epoch: number): number {
  return -epoch - 2;
}

/**
 * `KeyEntry.changedAt` of an entry the disk backend loaded from its store: unchanged since the
 * last snapshot that saw the key. Only as of the load: the store may hold a record written after a
 * snapshot still being written (disk-keyed-state-backend.ts, #localKeyGroup).
 */
export const LOADED = -1;

/** The change epoch a `KeyEntry.changedAt` says: a born entry's is the epoch it was created in. */
export function changeEpochOf(changedAt: number): number {
  return changedAt <= -2 ? -changedAt - 2 : changedAt;
}

export class Cell {
  /**
   * The estimate of `value` (and its expiries) counted in its entry's `KeyEntry.size` (tables with
   * a source only; 0 otherwise): what a write replacing the value takes back, and a removal.
   */
  valueSize = 0;
  constructor(
    /** value kinds: the value or accumulator; list: unknown[]; map: Map<unknown, unknown>. */
    public value: unknown,
    public expiresAt: number,
    /** Per-element (list, parallel array) or per-entry (map) expiry; only with TTL. */
    public expiry: number[] | Map<unknown, number> | undefined,
  ) {}
}

/**
 * A key's state in one table. The cell of the VOID namespace (all state outside windows) is the
 * entry itself — its `value`, `expiresAt` and `expiry`, valid while `hasVoid` — so the common
 * case is one object per key, not two; cells of other namespaces are in `nsCells`.
 */
export class KeyEntry extends Cell {
  hasVoid = false;
  nsCells: Map<Namespace, Cell> | undefined = undefined;
  /**
   * Changed since it was loaded from (or last written to) the disk backend's store: only dirty
   * entries are written back when evicted. New and copied entries are dirty; the disk backend
   * marks an entry it loads clean. Every write path sets it (`StateTable.markDirty`).
   */
  dirty = true;
  /**
   * The key context's `changeEpoch` at the entry's last change (incremental checkpoints: a change
   * made since the previous snapshot has the epoch that snapshot left behind) — or, for an entry
   * created in that epoch and not changed in a later one, `bornIn(epoch)` (negative): no snapshot
   * has held the key, so its removal in the same epoch needs no record. Read it through
   * `changeEpochOf`. The disk backend marks an entry it loads `LOADED`.
   */
  changedAt = 0;
  /**
   * Estimated heap bytes of the entry, its key and its cells (size-estimate.ts), kept only by
   * tables with a source (the disk backend bounds its cache by their sum); 0 otherwise.
   */
  size = 0;
  /**
   * The disk backend: created in this run of the cache and never written to the store or its
   * write batch, so removing it needs no store delete (a value cleared and set again on every
   * record costs no store write). False otherwise.
   */
  fresh = false;
  /** The key row that lists this entry (key-rows.ts), so it can be taken out when it leaves its table. */
  row: KeyRow<KeyEntry> | undefined = undefined;
  constructor(
    readonly key: Key,
    readonly mapKey: MapKey,
    /** The table's version when the entry was created: shared with every capture taken since. */
    readonly version: number,
  ) {
    super(undefined, Number.POSITIVE_INFINITY, undefined);
  }

  /** The VOID namespace's cell (the entry itself), or undefined when it has none. */
  get voidCell(): Cell | undefined {
    return this.hasVoid ? this : undefined;
  }

  /** Makes the VOID cell exist, holding `value`, without expiry. */
  setVoid(value: unknown): void {
    this.hasVoid = true;
    this.value = value;
    this.expiresAt = Number.POSITIVE_INFINITY;
    this.expiry = undefined;
    this.valueSize = 0;
  }

  clearVoid(): void {
    this.hasVoid = false;
    this.value = undefined;
    this.expiresAt = Number.POSITIVE_INFINITY;
    this.expiry = undefined;
    this.valueSize = 0;
  }

  isEmpty(): boolean {
    return !this.hasVoid && (this.nsCells === undefined || this.nsCells.size === 0);
  }
}

/**
 * Where a table's keys live when they are not in its maps (the disk backend: the maps are a cache
 * in front of a store). Without one (the heap backend) the maps hold everything.
 */
export interface TableSource {
  /**
   * The stored entry of a key the maps do not hold (a cache miss), created at table version
   * `version`, or undefined when nothing is stored. `insert`: the table will hold it from now on.
   */
  load(mapKey: MapKey, kgIndex: number, version: number, insert: boolean): KeyEntry | undefined;
  /** A key without stored state got an entry in the maps (the source sets its `size`). */
  created(entry: KeyEntry, kgIndex: number): void;
  /** An entry became empty and left the maps: what is stored of the key must go. */
  removed(entry: KeyEntry, kgIndex: number): void;
  /** The `size` of a cached entry changed by `delta` bytes (a write; see `StateTable.resize`). */
  resized(delta: number): void;
  /**
   * `migrateValues`: applies `step` to every cell of stored keys the maps do not hold (those in
   * the maps were migrated already).
   */
  migrate(step: (cell: Cell) => void): void;
}

/** Estimated bytes of a namespace cell besides its namespace and value: the Cell and its slot in `nsCells`. */
export const NS_CELL_BYTES = 96;

/** Hops over empty key groups allowed per incremental cleanup step (bounds its cost). */
const INCREMENTAL_GROUP_HOPS = 8;

/** Slots of the entry cache for int32 keys (a power of two): 48 KB per table that has such keys. */
const HOT_SLOTS = 4096;
const HOT_MASK = HOT_SLOTS - 1;

/** Whether `mapKey` is an int32 number, the keys the entry cache serves. */
function isHotKey(mapKey: MapKey): mapKey is number {
  return typeof mapKey === "number" && (mapKey | 0) === mapKey;
}

export class StateTable {
  #ttl: ResolvedTtl | undefined;
  /** Keys examined by `cleanupStep` (the TTL's incremental cleanup; 0: none). */
  #entriesPerAccess: number;
  /** Per key group, indexed by `keyGroup - range.start`; undefined until first written. */
  readonly #groups: (Map<MapKey, KeyEntry> | undefined)[];
  readonly #range: KeyGroupRangeLike;
  readonly #ctx: KeyContext;
  readonly #clock: Clock;
  #numKeys = 0;
  /**
   * Entries of int32 keys by `key & HOT_MASK`, and their keys (compared without loading the
   * entry); allocated at the first lookup of such a key, filled by lookups. A slot holds an entry
   * that is in its group map, or undefined: removeCell and #copyEntry keep it so (#replaceHot).
   */
  #hot: (KeyEntry | undefined)[] | undefined = undefined;
  #hotKeys: Int32Array = new Int32Array(0);
  /** `#cacheEntry` is the current key's entry (or undefined: none) while `#cacheEpoch === ctx.epoch`. */
  #cacheEpoch = -1;
  #cacheEntry: KeyEntry | undefined = undefined;
  /** Cleanup cursor: the group index it scans next, and a live iterator over a group being scanned. */
  #cursorGroup = 0;
  #cursorIter: Iterator<KeyEntry> | undefined = undefined;
  /** Group index of the group `#cursorIter` iterates. */
  #cursorKgIndex = 0;
  /** Entries are created at this version; `capture()` bumps it. */
  #version = 0;
  /**
   * Per group index: the version of the newest live capture that still holds the group (0: none).
   * An entry of the group older than it is shared with that capture: copied on access.
   */
  readonly #required: Int32Array;
  /** Live captures, oldest first. */
  readonly #captures: LiveCapture[] = [];
  /** Per group index: the live captures that still read the group's live map (see the file comment). */
  readonly #pending: (LiveCapture[] | undefined)[];
  /** Whether unsharing deep-copies value/reducing/aggregating values (descriptor `copy: "none"`). */
  readonly #copyValues: boolean;
  /** Whether captures record VOID cells by value, so entries without namespace cells are never copied. */
  readonly #byValue: boolean;
  /** Where keys not in the maps are (undefined: nowhere; the maps hold everything). */
  readonly #source: TableSource | undefined;
  /** Told of every entry that became empty and left the maps (the heap backend's incremental snapshots). */
  readonly #onRemoved: ((entry: KeyEntry, kgIndex: number) => void) | undefined;
  /** This table's index in the key rows' `entries` (unique among the tables of its key context). */
  readonly #rowIndex: number;

  constructor(
    readonly name: string,
    readonly kind: StateKind,
    ttl: ResolvedTtl | undefined,
    range: KeyGroupRangeLike,
    ctx: KeyContext,
    clock: Clock,
    copy: "deep" | "none" = "deep",
    source?: TableSource,
    onRemoved?: (entry: KeyEntry, kgIndex: number) => void,
  ) {
    this.#source = source;
    this.#onRemoved = onRemoved;
    this.#rowIndex = ctx.tables++;
    this.#ttl = ttl;
    this.#entriesPerAccess = ttl?.cleanupEntriesPerAccess ?? 0;
    this.#range = range;
    this.#pending = new Array<LiveCapture[] | undefined>(range.end - range.start + 1).fill(undefined);
    this.#required = new Int32Array(range.end - range.start + 1);
    this.#copyValues = copy === "none" && kind !== "list" && kind !== "map";
    this.#byValue = copy !== "none" && kind !== "list" && kind !== "map";
    this.#ctx = ctx;
    this.#clock = clock;
    this.#groups = new Array<Map<MapKey, KeyEntry> | undefined>(range.end - range.start + 1).fill(undefined);
  }

  get numKeys(): number {
    return this.#numKeys;
  }

  /**
   * Whether entries keep a size estimate (`KeyEntry.size`): the tables of the disk backend. The
   * handles then report what each write adds or takes away (`resize`), estimated by sizeOf.
   */
  get sized(): boolean {
    return this.#source !== undefined;
  }

  /** `entry` (private, in the maps) grew by `delta` estimated bytes (negative: shrank). Only when `sized`. */
  resize(entry: KeyEntry, delta: number): void {
    if (delta === 0) return;
    entry.size += delta;
    this.#source!.resized(delta);
  }

  /** As `resize`, for the current key's entry (none: nothing). */
  resizeCurrent(delta: number): void {
    const entry = this.currentEntry();
    if (entry !== undefined) this.resize(entry, delta);
  }

  /**
   * `cell` of the current key's entry is about to hold `value` instead of what it holds: its
   * `valueSize` and the entry's size follow (one estimate of the new value). Only when `sized`;
   * the same object stored again changes nothing.
   */
  revalue(cell: Cell, value: unknown): void {
    if (cell.value === value) return;
    const size = sizeOf(value);
    this.resizeCurrent(size - cell.valueSize);
    cell.valueSize = size;
  }

  get ttl(): ResolvedTtl | undefined {
    return this.#ttl;
  }

  /**
   * The job's descriptor took over a state restored from a snapshot: same `ttlMs` and
   * `updateType` (checked by the caller), but its own visibility and cleanup options.
   */
  adoptTtl(ttl: ResolvedTtl | undefined): void {
    this.#ttl = ttl;
    this.#entriesPerAccess = ttl?.cleanupEntriesPerAccess ?? 0;
  }

  now(): number {
    return this.#clock.now();
  }

  /** The current key's entry, or undefined when the key has no state here. */
  currentEntry(): KeyEntry | undefined {
    // hot path
    const ctx = this.#ctx;
    if (this.#cacheEpoch !== ctx.epoch) {
      const kgIndex = ctx.kgIndex;
      if (kgIndex < 0) throw noCurrentKey(this.name);
      const row = ctx.row;
      this.#cacheEntry = row === undefined ? this.entryAt(ctx.mapKey, kgIndex) : this.#entryInRow(row, kgIndex);
      this.#cacheEpoch = ctx.epoch;
    }
    return this.#cacheEntry;
  }

  /**
   * hot path: the entry of any key — map identity `mapKey`, group index `kgIndex` (in range,
   * checked by the caller) — without making it the current key; undefined when the key has no
   * state here. Like `currentEntry`, it unshares an entry a live capture holds, so the entry
   * returned may be written. For operators that address keys by record (see VoidValueCursor).
   */
  entryAt(mapKey: MapKey, kgIndex: number): KeyEntry | undefined {
    if (this.#pending[kgIndex] !== undefined) this.#materialize(kgIndex);
    let entry: KeyEntry | undefined;
    if (isHotKey(mapKey)) {
      const hot = this.#hot ?? this.#allocateHot();
      const slot = mapKey & HOT_MASK;
      // -0 is stored as 0, and 0 === -0, as for the group map's keys.
      entry = this.#hotKeys[slot] === mapKey ? hot[slot] : undefined;
      if (entry === undefined) {
        entry = this.#groups[kgIndex]?.get(mapKey);
        if (entry !== undefined) {
          hot[slot] = entry;
          this.#hotKeys[slot] = mapKey;
        }
      }
    } else entry = this.#groups[kgIndex]?.get(mapKey);
    if (entry === undefined) return this.#loadOrNone(mapKey, kgIndex);
    return this.#unshared(entry, kgIndex);
  }

  /** A key the maps do not hold: the source's entry (put in the maps), or undefined without a source or stored state. */
  #loadOrNone(mapKey: MapKey, kgIndex: number): KeyEntry | undefined {
    return this.#source === undefined ? undefined : this.#load(mapKey, kgIndex);
  }

  /** Lists `entry` (in this table's maps) as this table's entry in the key's row. */
  #list(row: KeyRow<KeyEntry>, entry: KeyEntry): void {
    row.entries[this.#rowIndex] = entry;
    entry.row = row;
  }

  /** `entryAt` of the current key through its row: the row's entry of this table, else the map's (then listed in the row). */
  #entryInRow(row: KeyRow<KeyEntry>, kgIndex: number): KeyEntry | undefined {
    // hot path
    if (this.#pending[kgIndex] !== undefined) this.#materialize(kgIndex);
    let entry = row.entries[this.#rowIndex];
    if (entry === undefined) {
      entry = this.#groups[kgIndex]?.get(row.mapKey) ?? this.#loadOrNone(row.mapKey, kgIndex);
      if (entry === undefined) return undefined;
      this.#list(row, entry);
    }
    return this.#unshared(entry, kgIndex);
  }

  /** A cache miss: the source's entry of the key, put in the maps (fresh: no capture shares it). */
  #load(mapKey: MapKey, kgIndex: number): KeyEntry | undefined {
    const entry = this.#source!.load(mapKey, kgIndex, this.#version, true);
    if (entry === undefined) return undefined;
    let group = this.#groups[kgIndex];
    if (group === undefined) this.#groups[kgIndex] = group = new Map();
    group.set(mapKey, entry);
    this.#numKeys++;
    return entry;
  }

  /**
   * Takes a key's entry out of the maps (the disk backend's cache evicts it; the caller stores
   * it) and returns it, or undefined when the maps do not hold the key. Captures keep seeing it.
   */
  evict(mapKey: MapKey, kgIndex: number): KeyEntry | undefined {
    const group = this.#groups[kgIndex];
    const entry = group?.get(mapKey);
    if (entry === undefined) return undefined;
    if (this.#pending[kgIndex] !== undefined) this.#materialize(kgIndex);
    group!.delete(mapKey);
    this.#numKeys--;
    this.#replaceHot(entry, undefined);
    if (this.#cacheEntry === entry) {
      this.#cacheEntry = undefined;
      this.#cacheEpoch = -1;
    }
    return entry;
  }

  /** Whether the maps hold `mapKey` (no source lookup). */
  holds(mapKey: MapKey, kgIndex: number): boolean {
    return this.#groups[kgIndex]?.has(mapKey) === true;
  }

  /** Every key the maps hold, with its group index (read-only; do not change the table meanwhile). */
  *heldKeys(): Generator<[MapKey, number]> {
    for (let i = 0; i < this.#groups.length; i++) {
      const group = this.#groups[i];
      if (group !== undefined) for (const mapKey of group.keys()) yield [mapKey, i];
    }
  }

  /** The entry the maps hold for `mapKey`, read-only, without a source lookup. */
  peekHeld(mapKey: MapKey, kgIndex: number): KeyEntry | undefined {
    return this.#groups[kgIndex]?.get(mapKey);
  }

  #allocateHot(): (KeyEntry | undefined)[] {
    this.#hotKeys = new Int32Array(HOT_SLOTS);
    return (this.#hot = new Array<KeyEntry | undefined>(HOT_SLOTS).fill(undefined));
  }

  /** Adds an empty entry for a key `entryAt` found none for, and returns it. */
  createEntry(key: Key, mapKey: MapKey, kgIndex: number): KeyEntry {
    let group = this.#groups[kgIndex];
    if (group === undefined) this.#groups[kgIndex] = group = new Map();
    const entry = new KeyEntry(key, mapKey, this.#version);
    entry.changedAt = bornIn(this.#ctx.changeEpoch);
    group.set(mapKey, entry);
    this.#numKeys++;
    this.#source?.created(entry, kgIndex);
    // The cache may hold "no entry" for this very key.
    this.#cacheEpoch = -1;
    return entry;
  }

  /** The current key's cell for `ns`, created empty (value undefined) when absent. */
  cellForWrite(ns: Namespace, isVoid: boolean, initialValue: unknown): Cell {
    const entry = this.#entryForWrite();
    if (isVoid) {
      if (!entry.hasVoid) entry.setVoid(initialValue);
      return entry;
    }
    return entry.nsCells?.get(ns) ?? this.#addCell(entry, ns, initialValue);
  }

  /**
   * `cellForWrite` for a namespace cell the caller just found absent (a read of the current key's
   * cell that missed, with nothing written since): creates it without looking it up again. The
   * sliding pane operator creates its panes so (`accumulate`): a lookup less per pane, in a key's
   * map that is usually out of the CPU caches.
   */
  newCell(ns: Namespace, isVoid: boolean, initialValue: unknown): Cell {
    if (isVoid) return this.cellForWrite(ns, true, initialValue);
    return this.#addCell(this.#entryForWrite(), ns, initialValue);
  }

  /** The current key's entry, created when it has none, marked changed. */
  #entryForWrite(): KeyEntry {
    const entry = this.currentEntry();
    if (entry !== undefined) {
      this.markDirty(entry);
      return entry;
    }
    const ctx = this.#ctx;
    const created = this.createEntry(ctx.key, ctx.mapKey, ctx.kgIndex);
    if (ctx.row !== undefined) this.#list(ctx.row, created);
    this.#cacheEpoch = ctx.epoch;
    this.#cacheEntry = created;
    return created;
  }

  /** Adds the cell of `ns` (absent) to `entry`. */
  #addCell(entry: KeyEntry, ns: Namespace, initialValue: unknown): Cell {
    const cell = new Cell(initialValue, Number.POSITIVE_INFINITY, undefined);
    (entry.nsCells ??= new Map()).set(ns, cell);
    if (this.#source !== undefined) this.resize(entry, NS_CELL_BYTES + sizeOf(ns));
    return cell;
  }

  /**
   * Removes the cell of `ns` from `entry`, and `entry` from its group when it became empty.
   * `entry` must be private: the current entry, or one `#unshared` returned.
   */
  removeCell(entry: KeyEntry, ns: Namespace, isVoid: boolean, kgIndex: number): void {
    this.markDirty(entry);
    const sized = this.#source !== undefined;
    if (isVoid) {
      if (sized && entry.hasVoid) this.resize(entry, -entry.valueSize);
      entry.clearVoid();
    } else if (!sized) {
      entry.nsCells?.delete(ns); // one lookup (a window's cell: per pane or window fired)
    } else {
      const cell = entry.nsCells?.get(ns);
      if (cell !== undefined) {
        this.resize(entry, -(NS_CELL_BYTES + sizeOf(ns) + cell.valueSize));
        entry.nsCells!.delete(ns);
      }
    }
    if (!entry.isEmpty()) return;
    const group = this.#groups[kgIndex];
    if (group !== undefined && group.get(entry.mapKey) === entry) {
      group.delete(entry.mapKey);
      this.#numKeys--;
      this.#source?.removed(entry, kgIndex);
      this.#onRemoved?.(entry, kgIndex);
    }
    this.#replaceHot(entry, undefined);
    if (this.#cacheEntry === entry) this.#cacheEntry = undefined;
  }

  /** `entry` (private: the current entry, or one `#unshared` returned) is being changed. */
  markDirty(entry: KeyEntry): void {
    // hot path
    entry.dirty = true;
    const epoch = this.#ctx.changeEpoch;
    // One created in this epoch stays marked as such.
    if (entry.changedAt !== bornIn(epoch)) entry.changedAt = epoch;
  }

  /** The current key's entry, if any, is being changed in place (a write to a cell it holds). */
  markCurrentDirty(): void {
    const entry = this.currentEntry();
    if (entry !== undefined) this.markDirty(entry);
  }

  removeCurrentCell(entry: KeyEntry, ns: Namespace, isVoid: boolean): void {
    this.removeCell(entry, ns, isVoid, this.#ctx.kgIndex);
  }

  /** The entry of any key (no current-key change), read-only; `kgIndex` must be in range. */
  lookup(mapKey: MapKey, kgIndex: number): KeyEntry | undefined {
    return this.#groups[kgIndex]?.get(mapKey) ?? this.#source?.load(mapKey, kgIndex, this.#version, false);
  }

  /** Every (key, namespace, cell) of one key group (index), expired cells included; read-only. */
  *cellsOfGroup(kgIndex: number): Generator<{ key: Key; namespace: Namespace; cell: Cell }> {
    const group = this.#groups[kgIndex];
    if (group === undefined) return;
    for (const entry of group.values()) {
      if (entry.hasVoid) yield { key: entry.key, namespace: VOID_NAMESPACE, cell: entry };
      if (entry.nsCells !== undefined) {
        for (const [namespace, cell] of entry.nsCells) yield { key: entry.key, namespace, cell };
      }
    }
  }

  /**
   * One incremental cleanup step (StateTtlCleanup.incremental), run by every access of a state
   * with TTL, and per record when the TTL asks for it.
   */
  cleanupStep(): void {
    if (this.#numKeys !== 0 && this.#entriesPerAccess !== 0) this.cleanupExpired(this.#entriesPerAccess, INCREMENTAL_GROUP_HOPS);
  }

  /**
   * Examines up to `maxEntries` keys at the cleanup cursor (hopping over at most `maxGroupHops`
   * key groups) and drops what expired. Returns the number of cells removed.
   */
  cleanupExpired(maxEntries: number, maxGroupHops = this.#groups.length): number {
    if (this.#ttl === undefined || this.#numKeys === 0) return 0;
    const now = this.#clock.now();
    const groups = this.#groups;
    let examined = 0;
    let hops = 0;
    let removed = 0;
    while (examined < maxEntries) {
      if (this.#cursorIter === undefined) {
        if (hops >= maxGroupHops) break;
        hops++;
        const index = this.#cursorGroup;
        this.#cursorGroup = index + 1 === groups.length ? 0 : index + 1;
        if (groups[index] === undefined || groups[index].size === 0) continue;
        if (this.#pending[index] !== undefined) this.#materialize(index);
        const group = groups[index]!;
        this.#cursorIter = group.values();
        this.#cursorKgIndex = index;
      }
      const next = this.#cursorIter.next();
      if (next.done === true) {
        this.#cursorIter = undefined;
        continue;
      }
      examined++;
      removed += this.#purgeEntry(this.#unshared(next.value, this.#cursorKgIndex), now, this.#cursorKgIndex);
    }
    return removed;
  }

  #purgeEntry(entry: KeyEntry, now: number, kgIndex: number): number {
    let removed = 0;
    // purgeCell drops expired list elements and map entries in place: the entry changes.
    if (entryHasExpired(this.kind, entry, now)) this.markDirty(entry);
    if (entry.hasVoid && purgeCell(this.kind, entry, now)) {
      this.removeCell(entry, VOID_NAMESPACE, true, kgIndex);
      removed++;
    }
    if (entry.nsCells !== undefined) {
      for (const [ns, cell] of entry.nsCells) {
        if (purgeCell(this.kind, cell, now)) {
          this.removeCell(entry, ns, false, kgIndex);
          removed++;
        }
      }
    }
    return removed;
  }

  /**
   * Freezes the current contents for a snapshot (see the file comment): the returned group maps
   * (by group index; undefined: empty) stay unchanged until `release()`. O(key groups).
   */
  capture(): TableCapture {
    const version = ++this.#version;
    const capture = new LiveCapture(version, this.#groups.length);
    const groups = this.#groups;
    for (let i = 0; i < groups.length; i++) {
      const group = groups[i];
      if (group === undefined || group.size === 0) continue;
      capture.groups[i] = group;
      (this.#pending[i] ??= []).push(capture);
      this.#required[i] = version;
    }
    this.#captures.push(capture);
    // The cached entry is shared from now on; the cleanup iterator may be over a pending group.
    this.#cacheEpoch = -1;
    this.#cacheEntry = undefined;
    this.#cursorIter = undefined;
    let released = false;
    return {
      size: (index) => capture.size(index),
      forEachCell: (index, visit, only, keepFrozen) => capture.forEachCell(index, keepFrozen === true ? visit : thawing(visit), only),
      releaseGroup: (index) => {
        if (!released) this.#releaseGroup(capture, index);
      },
      release: () => {
        if (released) return;
        released = true;
        this.#release(capture);
      },
    };
  }

  #release(capture: LiveCapture): void {
    for (let i = 0; i < capture.groups.length; i++) this.#releaseGroup(capture, i);
    this.#captures.splice(this.#captures.indexOf(capture), 1);
  }

  /** `capture` no longer holds group `index`: its entries are copied only for older captures. */
  #releaseGroup(capture: LiveCapture, index: number): void {
    if (capture.groups[index] === undefined) return;
    capture.groups[index] = undefined;
    const pending = this.#pending[index];
    if (pending !== undefined) {
      const at = pending.indexOf(capture);
      if (at >= 0) pending.splice(at, 1);
      if (pending.length === 0) this.#pending[index] = undefined;
    }
    let required = 0;
    const captures = this.#captures;
    for (let c = captures.length - 1; c >= 0; c--) {
      if (captures[c]!.groups[index] !== undefined) {
        required = captures[c]!.version;
        break;
      }
    }
    this.#required[index] = required;
  }

  /** Number of live captures (for tests). */
  get liveCaptures(): number {
    return this.#captures.length;
  }

  /**
   * Adds a restored cell for `key` (of group index `kgIndex`) and `ns`; replaces an existing cell.
   * Restore only: before any processing, never on a shared group.
   */
  restoreCell(key: Key, mapKey: MapKey, kgIndex: number, ns: Namespace, cell: Cell): void {
    const entry = this.#groups[kgIndex]?.get(mapKey) ?? this.createEntry(key, mapKey, kgIndex);
    this.markDirty(entry);
    const size = this.#source === undefined ? 0 : sizeOf(cell.value);
    if (this.#source !== undefined) {
      const before = ns === VOID_NAMESPACE ? (entry.hasVoid ? entry.valueSize : 0) : entry.nsCells?.has(ns) === true ? NS_CELL_BYTES + sizeOf(ns) + entry.nsCells.get(ns)!.valueSize : 0;
      this.resize(entry, (ns === VOID_NAMESPACE ? 0 : NS_CELL_BYTES + sizeOf(ns)) + size - before);
    }
    if (ns === VOID_NAMESPACE) {
      entry.setVoid(cell.value);
      entry.expiresAt = cell.expiresAt;
      entry.expiry = cell.expiry;
      entry.valueSize = size;
    } else {
      cell.valueSize = size;
      (entry.nsCells ??= new Map()).set(ns, cell);
    }
    this.#cacheEpoch = -1;
  }

  /**
   * Replaces every stored value by `migrate(value)`: the whole value of value, reducing and
   * aggregating state, each element of list state, each value of map state (schema evolution
   * after a restore). Groups shared with a snapshot are copied first, so the snapshot keeps the
   * old values.
   */
  migrateValues(migrate: (value: unknown) => unknown): void {
    const kind = this.kind;
    const step = (cell: Cell): void => {
      if (kind === "list") cell.value = (cell.value as unknown[]).map(migrate);
      else if (kind === "map") cell.value = new Map([...(cell.value as Map<unknown, unknown>)].map(([k, v]) => [k, migrate(v)]));
      else cell.value = migrate(cell.value);
    };
    for (let i = 0; i < this.#groups.length; i++) {
      if (this.#groups[i] === undefined) continue;
      if (this.#pending[i] !== undefined) this.#materialize(i);
      for (let entry of this.#groups[i]!.values()) {
        entry = this.#unshared(entry, i);
        this.markDirty(entry);
        if (entry.hasVoid) step(entry);
        if (entry.nsCells !== undefined) for (const cell of entry.nsCells.values()) step(cell);
      }
    }
    this.#source?.migrate(step);
    this.#cacheEpoch = -1;
  }

  /**
   * `entry` (of group `kgIndex`, in its live map), ready to be changed in place: the entry itself,
   * or — when a live capture holding the group shares it — a private copy put in its place. An
   * entry older than that capture is shared unless the capture recorded its VOID cell by value
   * and it has no namespace cells.
   */
  #unshared(entry: KeyEntry, kgIndex: number): KeyEntry {
    // hot path
    if (entry.version >= this.#required[kgIndex]! || (this.#byValue && entry.nsCells === undefined)) return entry;
    return this.#copyEntry(entry, kgIndex);
  }

  /** Gives the captures pending on group `kgIndex` its entries as they are, before it changes. */
  #materialize(kgIndex: number): void {
    const pending = this.#pending[kgIndex]!;
    const entries = Array.from(this.#groups[kgIndex]!.values());
    let group: CapturedGroup;
    if (this.#byValue) {
      const n = entries.length;
      const values = new Array<unknown>(n);
      const nsCells = new Array<Map<Namespace, Cell> | undefined>(n);
      const expiresAt = this.#ttl === undefined ? undefined : new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const entry = entries[i]!;
        values[i] = entry.hasVoid ? entry.value : NO_VOID;
        nsCells[i] = entry.nsCells;
        if (expiresAt !== undefined) expiresAt[i] = entry.expiresAt;
      }
      group = { entries, values, nsCells, expiresAt };
    } else group = { entries, values: undefined, nsCells: undefined, expiresAt: undefined };
    for (const capture of pending) capture.groups[kgIndex] = group;
    this.#pending[kgIndex] = undefined;
  }

  /** Replaces `entry` (shared with a capture) in its group by a private copy, and returns the copy. */
  #copyEntry(entry: KeyEntry, kgIndex: number): KeyEntry {
    const kind = this.kind;
    const copyValues = this.#copyValues;
    const e = new KeyEntry(entry.key, entry.mapKey, this.#version);
    e.dirty = entry.dirty;
    e.changedAt = entry.changedAt;
    e.size = entry.size;
    e.fresh = entry.fresh;
    if (entry.hasVoid) {
      e.hasVoid = true;
      unshareCellInto(kind, entry, e, copyValues);
    }
    if (entry.nsCells !== undefined) {
      const cells = new Map<Namespace, Cell>();
      for (const [ns, cell] of entry.nsCells) cells.set(ns, unshareCellInto(kind, cell, new Cell(undefined, 0, undefined), copyValues));
      e.nsCells = cells;
    }
    this.#groups[kgIndex]!.set(entry.mapKey, e);
    this.#replaceHot(entry, e);
    return e;
  }

  /**
   * Puts `by` where `entry` is in the entry cache and in its key row (if it is there): it left its
   * group map, or `by` took its place.
   */
  #replaceHot(entry: KeyEntry, by: KeyEntry | undefined): void {
    const mapKey = entry.mapKey;
    if (this.#hot !== undefined && isHotKey(mapKey) && this.#hot[mapKey & HOT_MASK] === entry) this.#hot[mapKey & HOT_MASK] = by;
    const row = entry.row;
    if (row !== undefined && row.entries[this.#rowIndex] === entry) {
      if (by === undefined) row.entries[this.#rowIndex] = undefined;
      else this.#list(row, by);
    }
  }

  /** Range check for key groups handed in by callers other than the current-key path. */
  indexOf(keyGroup: number): number {
    if (!Number.isInteger(keyGroup) || keyGroup < this.#range.start || keyGroup > this.#range.end) {
      throw keyGroupOutOfRange(keyGroup, this.#range);
    }
    return keyGroup - this.#range.start;
  }
}

/** What `StateTable.capture()` returns: the frozen entries per group index, and their release. */
export interface TableCapture {
  /** Number of keys group `index` had when captured. */
  size(index: number): number;
  /**
   * Calls `visit` with every cell group `index` had when captured (expired ones included), as it
   * was then, whatever happened since: valid while the capture holds the group. `only`: just the
   * cells of entries it accepts (it sees the live entry: its key, `changedAt`; never its cells).
   * `keepFrozen`: a map cell the task changed since may come as a FrozenMap of what it held (the
   * default codec writes it as that Map); otherwise every map cell is a Map.
   */
  forEachCell(index: number, visit: CellVisitor, only?: (entry: KeyEntry) => boolean, keepFrozen?: boolean): void;
  /** Gives group `index` back (it was written): it reads as empty from now on; idempotent. */
  releaseGroup(index: number): void;
  /** Ends the capture; idempotent. Entries are no longer copied for it. */
  release(): void;
}

/** Receives one captured cell: `expiry` is the element expiries of list and map cells. */
export type CellVisitor = (key: Key, namespace: Namespace, value: unknown, expiresAt: number, expiry: Cell["expiry"]) => void;

/** Marks an entry without a VOID cell in `CapturedGroup.values`. */
const NO_VOID: unique symbol = Symbol("no VOID cell");

/**
 * A group's entries as they were when first accessed after a capture; for tables captured by
 * value, with each entry's VOID value (or NO_VOID), namespace map and (with TTL) expiry.
 */
interface CapturedGroup {
  readonly entries: readonly KeyEntry[];
  readonly values: readonly unknown[] | undefined;
  readonly nsCells: readonly (Map<Namespace, Cell> | undefined)[] | undefined;
  readonly expiresAt: Float64Array | undefined;
}

/**
 * One capture's view, per group index: the live map while the group is pending (unchanged since
 * the capture), what was captured of it once it was materialized, or undefined when empty or
 * given back.
 */
class LiveCapture {
  readonly groups: (ReadonlyMap<MapKey, KeyEntry> | CapturedGroup | undefined)[];
  constructor(
    readonly version: number,
    numGroups: number,
  ) {
    this.groups = new Array<undefined>(numGroups).fill(undefined);
  }

  size(index: number): number {
    const group = this.groups[index];
    return group === undefined ? 0 : group instanceof Map ? group.size : (group as CapturedGroup).entries.length;
  }

  forEachCell(index: number, visit: CellVisitor, only?: (entry: KeyEntry) => boolean): void {
    const group = this.groups[index];
    if (group === undefined) return;
    if (group instanceof Map) {
      for (const entry of (group as ReadonlyMap<MapKey, KeyEntry>).values()) if (only === undefined || only(entry)) visitEntry(entry, visit);
      return;
    }
    const { entries, values, nsCells, expiresAt } = group as CapturedGroup;
    if (values === undefined) {
      for (const entry of entries) if (only === undefined || only(entry)) visitEntry(entry, visit);
      return;
    }
    for (let i = 0; i < entries.length; i++) {
      if (only !== undefined && !only(entries[i]!)) continue;
      const key = entries[i]!.key;
      const value = values[i];
      if (value !== NO_VOID) visit(key, VOID_NAMESPACE, value, expiresAt === undefined ? Number.POSITIVE_INFINITY : expiresAt[i]!, undefined);
      visitNamespaces(key, nsCells![i], visit);
    }
  }
}

/**
 * `visit` given Maps for the FrozenMaps of captured map cells (unshareCellInto): what every visitor
 * but the heap snapshot's writer, which encodes a FrozenMap as it is, expects.
 */
function thawing(visit: CellVisitor): CellVisitor {
  return (key, ns, value, expiresAt, expiry) => visit(key, ns, value instanceof FrozenMap ? value.toMap() : value, expiresAt, expiry);
}

/** Visits the cells of an entry that has not changed since the capture. */
function visitEntry(entry: KeyEntry, visit: CellVisitor): void {
  if (entry.hasVoid) visit(entry.key, VOID_NAMESPACE, entry.value, entry.expiresAt, entry.expiry);
  visitNamespaces(entry.key, entry.nsCells, visit);
}

/** Visits a key's namespace cells (windows), if it has any. */
function visitNamespaces(key: Key, cells: ReadonlyMap<Namespace, Cell> | undefined, visit: CellVisitor): void {
  if (cells !== undefined) for (const [ns, cell] of cells) visit(key, ns, cell.value, cell.expiresAt, cell.expiry);
}

/**
 * Makes `to` the live cell of what captured cell `from` holds, `from` unchanged in what it holds;
 * returns `to`. A map cell without TTL hands its Map over to `to` and keeps a FrozenMap of its
 * entries (much cheaper than copying the Map, which rehashes every key); other cells are copied.
 */
function unshareCellInto(kind: StateKind, from: Cell, to: Cell, copyValues: boolean): Cell {
  if (kind !== "map" || from.expiry !== undefined || !(from.value instanceof Map)) return copyCellInto(kind, from, to, copyValues);
  to.value = from.value;
  to.valueSize = from.valueSize;
  to.expiresAt = from.expiresAt;
  to.expiry = undefined;
  from.value = new FrozenMap(from.value);
  return to;
}

/** Makes `to` a private copy of cell `from` (its own list array / Map and expiry; values copied when asked); returns `to`. */
function copyCellInto(kind: StateKind, from: Cell, to: Cell, copyValues: boolean): Cell {
  const expiry = from.expiry;
  let value = from.value;
  if (kind === "list") value = (value as unknown[]).slice();
  else if (kind === "map") value = new Map(value as Map<unknown, unknown>);
  else if (copyValues) value = copyValue(value);
  to.value = value;
  to.valueSize = from.valueSize;
  to.expiresAt = from.expiresAt;
  to.expiry = expiry === undefined ? undefined : Array.isArray(expiry) ? expiry.slice() : new Map(expiry);
  return to;
}

/** Whether anything stored in `cell` expired at `now` (the whole cell, or an element or entry). */
export function cellHasExpired(kind: StateKind, cell: Cell, now: number): boolean {
  if (cell.expiresAt <= now) return true;
  const expiry = cell.expiry;
  if (expiry === undefined) return false;
  if (kind === "list") return (expiry as number[]).some((e) => e <= now);
  for (const e of (expiry as Map<unknown, number>).values()) if (e <= now) return true;
  return false;
}

/** Whether any cell of `entry` holds something expired at `now`. */
function entryHasExpired(kind: StateKind, entry: KeyEntry, now: number): boolean {
  if (entry.hasVoid && cellHasExpired(kind, entry, now)) return true;
  if (entry.nsCells !== undefined) for (const cell of entry.nsCells.values()) if (cellHasExpired(kind, cell, now)) return true;
  return false;
}

/**
 * Drops expired elements of a list/map cell in place; returns true when the whole cell is
 * expired or empty (the caller removes it). Value cells are all-or-nothing.
 */
export function purgeCell(kind: StateKind, cell: Cell, now: number): boolean {
  if (cell.expiresAt <= now) return true;
  const expiry = cell.expiry;
  if (expiry === undefined) return false;
  if (kind === "list") {
    const values = cell.value as unknown[];
    const exps = expiry as number[];
    let w = 0;
    for (let r = 0; r < values.length; r++) {
      if (exps[r]! > now) {
        values[w] = values[r];
        exps[w] = exps[r]!;
        w++;
      }
    }
    values.length = w;
    exps.length = w;
    return w === 0;
  }
  if (kind === "map") {
    const map = cell.value as Map<unknown, unknown>;
    for (const [k, exp] of expiry as Map<unknown, number>) {
      if (exp <= now) {
        map.delete(k);
        (expiry as Map<unknown, number>).delete(k);
      }
    }
    return map.size === 0;
  }
  return false;
}

/**
 * The stored value of a cell without what expired, for snapshots: value kinds as stored (never
 * mutated in place, so sharing is safe); list and map cells as a fresh shallow copy of the
 * collection. Undefined when nothing is visible. Does not modify the cell.
 */
export function snapshotCellValue(kind: StateKind, cell: Cell, now: number): unknown {
  if (cell.expiresAt <= now) return undefined;
  const expiry = cell.expiry;
  if (kind === "list") {
    const values = cell.value as unknown[];
    if (expiry === undefined) return values.length === 0 ? undefined : values.slice();
    const exps = expiry as number[];
    const out: unknown[] = [];
    for (let i = 0; i < values.length; i++) if (exps[i]! > now) out.push(values[i]);
    return out.length === 0 ? undefined : out;
  }
  if (kind === "map") {
    const map = cell.value as Map<unknown, unknown>;
    if (expiry === undefined) return map.size === 0 ? undefined : new Map(map);
    const out = new Map<unknown, unknown>();
    for (const [k, v] of map) if ((expiry as Map<unknown, number>).get(k)! > now) out.set(k, v);
    return out.size === 0 ? undefined : out;
  }
  return cell.value;
}

export function keyGroupOutOfRange(keyGroup: number, range: KeyGroupRangeLike): EddyError {
  return new EddyError(
    "KEY_GROUP_OUT_OF_RANGE",
    `key group ${keyGroup} is outside this backend's key-group range [${range.start}, ${range.end}]`,
  );
}

function noCurrentKey(name: string): EddyError {
  return new EddyError(
    "NO_CURRENT_KEY",
    `keyed state '${name}' was accessed without a current key; keyed state is available only while ` +
      `processing a record or timer of a keyed stream`,
  );
}
