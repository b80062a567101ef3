/**
 * Key rows: the current key of a keyed backend resolved once per record for all of its state
 * tables, for string and composite keys.
 *
 * Why: an operator with several states (q16: two map states and a value state per record) looked
 * its key up in each state's table — one JS Map probe per state and record, each landing on other
 * cache lines — and a composite key's map identity was a string built per record, which V8 hashes
 * on its first use as a Map key (flattening it first, as it was built by concatenation): ~150-300
 * ns for a fresh 10-20 character string, against ~25 ns for a string whose hash is cached.
 *
 * A row is a recurring key's resolution: its map identity (one string object for as long as the
 * row lives, so its hash is computed once and the tables that stored it compare it by pointer)
 * and each table's entry of the key (`entries`, by the table's index among the backend's tables,
 * StateTable's `#rowIndex`). The backend finds the
 * row of the current key in a direct-mapped array by a hash of the key computed here in JS (the
 * characters of a string, the parts of a composite key) and compares the key itself, so a row is
 * never wrong, only missing: a miss makes a new row, which takes the slot.
 *
 * Invariant (kept by StateTable): `row.entries[i]`, when set, is the entry table i's group map
 * holds for the key; an entry that leaves its map (removed, evicted, replaced by a copy) is taken
 * out of its row (`KeyEntry.row` points back). Absence is not recorded: a table without the key
 * probes its map again.
 *
 * Numbers have no rows: int32 keys have the tables' own entry cache, and other numbers hash
 * cheaply in a Map. Bigints and nested composite keys have none either (rare; the Map path). Nor
 * do the keys of a backend with one table, or any while most keys miss (KeyRows).
 */
import { mapKeyOf, type Key, type MapKey } from "../core/key.ts";

/**
 * A recurring key's resolution, shared by the tables of one backend (see the file comment). `E`:
 * the tables' entries (state-table.ts's KeyEntry; generic so this file does not import it).
 */
export class KeyRow<E> {
  /** Each table's entry of the key, by the table's index (StateTable's `#rowIndex`); undefined: not known. */
  readonly entries: (E | undefined)[];
  constructor(
    /** The key (a composite key's array is kept as the selector returned it: keys are never mutated). */
    readonly key: string | readonly Key[],
    /** `mapKeyOf(key)`, the one string object every lookup through this row uses. */
    readonly mapKey: MapKey,
    /** The key's key group: a record whose key finds this row needs neither validating nor hashing. */
    readonly keyGroup: number,
    tables: number,
  ) {
    this.entries = new Array<E | undefined>(tables).fill(undefined);
  }
}

/** Slots of a backend's row array (a power of two): 64-128 KB of slots once a key has a row. */
const ROW_SLOTS = 16384;
const ROW_MASK = ROW_SLOTS - 1;
/** Characters of a string that enter its hash (the first ones; the length always does). */
const HASHED_CHARS = 32;
const M = 0x5bd1e995;

/** Lookups per period of the rows' miss count (see KeyRows). */
const MISS_PERIOD = 4096;
/** Lookups that go without rows after a period in which most lookups missed. */
const PAUSE = 65536;

/**
 * The rows of one backend: a direct-mapped array, allocated at the first key that has a row.
 *
 * Rows pay off where a key has several tables to find it in and recurs while its row is still in
 * its slot. They cost a hash and a slot per record, and a miss allocates a row. So a backend with
 * one table has none, and rows pause for PAUSE lookups when more than half of a period's lookups
 * missed (keys spread wider than the slots, or seen once): measured on Nexmark, q16 (three
 * states, ~10 K recurring [channel, day] keys) gained ~25 % per core, q18 (one state, a
 * [bidder, auction] key per bid) lost ~19 % with rows on.
 */
export class KeyRows<E> {
  #slots: (KeyRow<E> | undefined)[] | undefined = undefined;
  #lookups = 0;
  #misses = 0;
  /** Lookups left before rows are used again (0: in use). */
  #paused = 0;
  /** What the last `find` found (once: the next `rowOf` takes it), so the row is not looked up twice. */
  #foundKey: unknown = undefined;
  #found: KeyRow<E> | undefined = undefined;

  /**
   * hot path: the row of `selected`, a key selector's result not validated yet, if its slot holds
   * a row of an equal key (part for part, ===); undefined otherwise, and for anything without rows.
   * A row's key was valid and in the backend's range when the row was made, and validity and key
   * group depend only on the parts, so the row's key group is `selected`'s. A row found is counted
   * as a lookup and handed to the next `rowOf(selected)` without a second probe.
   */
  find(selected: unknown, tables: number): KeyRow<E> | undefined {
    if (tables < 2 || this.#paused > 0) return undefined;
    if (typeof selected !== "string" && !Array.isArray(selected)) return undefined;
    const row = this.#slots?.[rowSlotOf(selected as Key)];
    if (row === undefined || !sameKey(row.key, selected as Key)) return undefined;
    this.#count(false);
    this.#foundKey = selected;
    this.#found = row;
    return row;
  }

  /**
   * hot path: the row of `key` (valid, of key group `keyGroup`), made when its slot holds none or
   * another key's; undefined for keys without rows (numbers, bigints, composite keys with other
   * than string and number parts), with fewer than two tables, and while rows are paused.
   * `tables`: how many tables the backend has.
   */
  rowOf(key: Key, tables: number, keyGroup: number): KeyRow<E> | undefined {
    if (this.#foundKey !== undefined) {
      const found = this.#foundKey === key ? this.#found : undefined;
      this.#foundKey = this.#found = undefined;
      if (found !== undefined) return found;
    }
    if (tables < 2) return undefined;
    if (this.#paused > 0) {
      this.#paused--;
      return undefined;
    }
    const slot = rowSlotOf(key);
    if (slot < 0) return undefined;
    const slots = this.#slots ?? (this.#slots = new Array<KeyRow<E> | undefined>(ROW_SLOTS).fill(undefined));
    const row = slots[slot];
    if (row !== undefined && sameKey(row.key, key)) {
      this.#count(false);
      return row;
    }
    this.#count(true);
    const made = new KeyRow<E>(key as string | readonly Key[], mapKeyOf(key), keyGroup, tables);
    slots[slot] = made;
    return made;
  }

  /** Counts a lookup (a miss: `missed`); pauses rows after a period in which most lookups missed. */
  #count(missed: boolean): void {
    if (missed) this.#misses++;
    if (++this.#lookups === MISS_PERIOD) {
      if (2 * this.#misses > MISS_PERIOD) this.#paused = PAUSE;
      this.#lookups = 0;
      this.#misses = 0;
    }
  }
}

/**
 * hot path: the slot of `key`'s row: a hash of the key's characters or parts (equal keys, equal
 * slots), or -1 for keys without rows.
 */
export function rowSlotOf(key: Key): number {
  let h: number;
  if (typeof key === "string") h = mixString(0, key);
  else if (typeof key === "object") {
    h = key.length;
    for (let p = 0; p < key.length; p++) {
      const part = key[p];
      if (typeof part === "string") h = mixString(h, part);
      else if (typeof part === "number") {
        h = Math.imul(h ^ (part | 0), M);
        h = Math.imul(h ^ ((part / 4294967296) | 0), M);
      } else return -1;
      h ^= h >>> 15;
    }
  } else return -1;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) & ROW_MASK;
}

function mixString(h: number, s: string): number {
  const n = s.length < HASHED_CHARS ? s.length : HASHED_CHARS;
  h = Math.imul(h ^ s.length, M);
  for (let i = 0; i < n; i++) h = Math.imul(h ^ s.charCodeAt(i), M);
  return h;
}

/**
 * Whether a row's key is `key`: === per part, the keys' own equality for strings and numbers (0
 * and -0 are one key, as for mapKeyOf).
 */
function sameKey(rowKey: string | readonly Key[], key: Key): boolean {
  if (typeof rowKey === "string") return rowKey === key;
  if (typeof key !== "object" || key.length !== rowKey.length) return false;
  for (let p = 0; p < rowKey.length; p++) if (rowKey[p] !== key[p]) return false;
  return true;
}
