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
 * row lives, so its hash is computed once and the tables that stored it compare it by pointer),
 * its key group, and each table's entry of the key (`entries`, by the table's index among the
 * backend's tables, StateTable's `#rowIndex`). The backend finds the row of the current key in a
 * trie of JS Maps, one level per part of the key (a string key: one level). The parts are the
 * Map keys, so a string part is hashed once in its life (V8 keeps a string's hash in the string)
 * and a number part hashes cheaply; Maps compare parts as SameValueZero, which for the parts a
 * valid key has (strings, finite numbers; 0 and −0 one key) is the keys' own equality. A row is
 * never wrong, only missing: rows are dropped all at once when there are more than MAX_ROWS, and
 * made again as keys recur. (Until 2026-12-05 rows sat in a direct-mapped array of 16,384 slots,
 * by a hash of the key's characters computed in JS: q16's ~10,000 keys missed 13 % of lookups
 * there, each miss building the key's map identity again, and hashing the characters cost more
 * than the trie's Map probes: q16 took ~9 % less CPU with the trie, medians of 4 alternated runs.)
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

/** Rows a backend keeps at most; one more drops them all (they are made again as keys recur). */
export const MAX_ROWS = 65536;
/** Lookups per period of the rows' miss count (see KeyRows). */
const MISS_PERIOD = 4096;
/** Lookups that go without rows after a period in which most lookups missed. */
const PAUSE = 65536;

/** A level of the composite keys' trie: a part → the next level, or at the last part → its row. */
type Level = Map<unknown, unknown>;

/**
 * The rows of one backend: a Map of string keys, and per length of composite key a trie of Maps,
 * one level per part.
 *
 * Rows pay off where a key has several tables to find it in and recurs. They cost a probe per part
 * and record, and a miss allocates a row. So a backend with one table has none, and rows pause
 * for PAUSE lookups when more than half of a period's lookups missed (keys seen once): measured on
 * Nexmark, q16 (three states, ~10 K recurring [channel, day] keys) gained ~25 % per core, q18 (one
 * state, a [bidder, auction] key per bid) lost ~19 % with rows on.
 */
export class KeyRows<E> {
  readonly #maxRows: number;
  #strings = new Map<string, KeyRow<E>>();
  /** By length: the trie of the composite keys of that many parts. */
  #composites: (Level | undefined)[] = [];
  #rows = 0;
  #lookups = 0;
  #misses = 0;
  /** Lookups left before rows are used again (0: in use). */
  #paused = 0;
  /** What the last `find` found (once: the next `rowOf` takes it), so the row is not looked up twice. */
  #foundKey: unknown = undefined;
  #found: KeyRow<E> | undefined = undefined;

  /** `maxRows`: MAX_ROWS but in tests, which drop rows sooner. */
  constructor(maxRows = MAX_ROWS) {
    this.#maxRows = maxRows;
  }

  /**
   * hot path: the row of `selected`, a key selector's result not validated yet, if a key equal to
   * it (part for part, as SameValueZero) has one; undefined otherwise, and for anything without
   * rows. A row is made only for a valid key in the backend's range, and validity and key group
   * depend only on the parts, so the row's key group is `selected`'s (an invalid part — NaN, an
   * object — equals no valid key's part, so it finds nothing). A row found is counted as a lookup
   * and handed to the next `rowOf(selected)` without a second probe.
   */
  find(selected: unknown, tables: number): KeyRow<E> | undefined {
    if (tables < 2 || this.#paused > 0) return undefined;
    let row: KeyRow<E> | undefined;
    if (typeof selected === "string") row = this.#strings.get(selected);
    else if (Array.isArray(selected)) row = this.#probe(selected);
    if (row === undefined) return undefined;
    this.#count(false);
    this.#foundKey = selected;
    this.#found = row;
    return row;
  }

  /**
   * hot path: the row of `key` (valid, of key group `keyGroup`), made when it has none; undefined
   * for keys without rows (numbers, bigints, composite keys with other than string and number
   * parts), with fewer than two tables, and while rows are paused. `tables`: how many tables the
   * backend has.
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
    let row: KeyRow<E> | undefined;
    if (typeof key === "string") row = this.#strings.get(key);
    else if (typeof key === "object" && hasRowParts(key)) row = this.#probe(key);
    else return undefined;
    this.#count(row === undefined);
    if (row !== undefined) return row;
    if (this.#rows === this.#maxRows) {
      this.#strings = new Map();
      this.#composites = [];
      this.#rows = 0;
    }
    this.#rows++;
    const made = new KeyRow<E>(key as string | readonly Key[], mapKeyOf(key), keyGroup, tables);
    if (typeof key === "string") this.#strings.set(key, made);
    else this.#insert(key, made);
    return made;
  }

  /** The row of composite key `key`, or undefined. */
  #probe(key: readonly unknown[]): KeyRow<E> | undefined {
    const last = key.length - 1;
    let level = this.#composites[key.length];
    for (let p = 0; p < last && level !== undefined; p++) level = level.get(key[p]) as Level | undefined;
    return level?.get(key[last]) as KeyRow<E> | undefined;
  }

  /** Puts `row` as the row of composite key `key` (which has none). */
  #insert(key: readonly Key[], row: KeyRow<E>): void {
    const last = key.length - 1;
    let level = this.#composites[key.length];
    if (level === undefined) this.#composites[key.length] = level = new Map();
    for (let p = 0; p < last; p++) {
      let next = level.get(key[p]) as Level | undefined;
      if (next === undefined) level.set(key[p], (next = new Map()));
      level = next;
    }
    level.set(key[last], row);
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

/** Whether a composite key (valid) has rows: at least one part, every part a string or a number. */
function hasRowParts(key: readonly Key[]): boolean {
  if (key.length === 0) return false;
  for (let p = 0; p < key.length; p++) {
    const t = typeof key[p];
    if (t !== "string" && t !== "number") return false;
  }
  return true;
}
