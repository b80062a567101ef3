/**
 * The keyed state handles of the heap backend (map state: heap-map-state.ts). A handle is bound
 * to the backend's current key (through its StateTable) and to its own current namespace.
 *
 * Copying (descriptor `copy: "deep"`): values are copied on the way in and on the way out, and
 * user functions (reduce, aggregate) only ever see copies of what is stored, so no object held in
 * state is reachable from user code and the backend never mutates a stored object in place. (The
 * one input not copied: an element added to aggregating state whose accumulator is a primitive,
 * which cannot keep it; see HeapAggregatingState.add.)
 *
 * Ordering inside every write: copies and user functions run first, the cell is created last, so
 * a throwing user function or an uncopyable value leaves no empty cell behind.
 *
 * TTL: every access of a state with TTL first runs one incremental cleanup step (the TTL's
 * `cleanup.incremental`), then removes what it touches if it expired (lazy cleanup). Under
 * `returnExpiredIfNotCleanedUp` (Flink's ReturnExpiredIfNotCleanedUp) a read hands out what
 * expired but is still stored and then removes it, and reducing/aggregating writes keep reducing
 * into an expired accumulator still stored, as Flink's TtlReduceFunction/TtlAggregateFunction do.
 */

import { EddyError } from "../core/errors.ts";
import { copyValue } from "./copy-value.ts";
import type {
  AggregateFunction,
  StateDescriptorBase,
  StateKind,
} from "./descriptors.ts";
import { appendedSize, sizeOf } from "./size-estimate.ts";
import { Cell, cellHasExpired, purgeCell, VOID_NAMESPACE } from "./state-table.ts";
import type { Namespace, StateTable } from "./state-table.ts";
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from "./state.ts";
import type {
  InternalAggregatingState,
  InternalKvState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
  Accumulation,
} from "./internal-state.ts";


export abstract class HeapKvState implements InternalKvState {
  protected readonly table: StateTable;
  /** 0 when the state has no TTL. */
  protected readonly ttlMs: number;
  protected readonly refreshOnRead: boolean;
  /** TTL visibility returnExpiredIfNotCleanedUp. */
  protected readonly returnExpired: boolean;
  protected readonly deep: boolean;
  protected ns: Namespace = VOID_NAMESPACE;
  protected isVoid = true;

  constructor(
    readonly descriptor: StateDescriptorBase,
    table: StateTable,
  ) {
    this.table = table;
    this.ttlMs = descriptor.ttl?.ttlMs ?? 0;
    this.refreshOnRead = descriptor.ttl?.updateType === "onReadAndWrite";
    this.returnExpired = descriptor.ttl?.visibility === "returnExpiredIfNotCleanedUp";
    this.deep = descriptor.copy === "deep";
  }

  get name(): string {
    return this.descriptor.name;
  }

  get kind(): StateKind {
    return this.descriptor.kind;
  }

  setCurrentNamespace(namespace: Namespace): void {
    this.ns = namespace;
    this.isVoid = namespace === VOID_NAMESPACE;
  }

  getCurrentNamespace(): Namespace {
    return this.ns;
  }

  clear(): void {
    if (this.ttlMs !== 0) this.table.cleanupStep();
    const entry = this.table.currentEntry();
    if (entry !== undefined) this.table.removeCurrentCell(entry, this.ns, this.isVoid);
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    if (this.ttlMs !== 0) {
      throw new EddyError("STATE_NOT_MERGEABLE", `state '${this.name}' has a TTL; merging windows cannot merge it`);
    }
    const saved = this.ns;
    let merged: unknown;
    let has = false;
    for (const ns of sources) {
      if (ns === target) continue;
      this.setCurrentNamespace(ns);
      const cell = this.rawCell();
      if (cell === undefined) continue;
      merged = has ? this.mergeValues(merged, cell.value) : cell.value;
      has = true;
      this.clear();
    }
    if (has) {
      this.setCurrentNamespace(target);
      const cell = this.table.cellForWrite(this.ns, this.isVoid, undefined);
      const value = cell.value === undefined ? merged : this.mergeValues(cell.value, merged);
      this.resized(cell, value);
      cell.value = value;
    }
    this.setCurrentNamespace(saved);
  }

  /** Combines two stored values of this state (see mergeNamespaces). */
  protected mergeValues(_a: unknown, _b: unknown): unknown {
    throw new EddyError("STATE_NOT_MERGEABLE", `${this.kind} state '${this.name}' cannot be merged (merging windows need reducing, aggregating or list state)`);
  }

  holdsValue(): boolean {
    // hot path (the sliding pane operator, per firing)
    return this.rawCell() !== undefined;
  }

  /** The user-facing value of any cell (queryable state): no TTL refresh, no cleanup. */
  abstract queryValue(cell: Cell, now: number): unknown;

  /** The current (key, namespace) cell as stored, expired or not. */
  protected rawCell(): Cell | undefined {
    // hot path
    const entry = this.table.currentEntry();
    if (entry === undefined) return undefined;
    return this.isVoid ? entry.voidCell : entry.nsCells?.get(this.ns);
  }

  /**
   * The current cell if anything in it is visible, after dropping what expired (lists and maps
   * lose their expired elements). `read` refreshes an onReadAndWrite TTL of a value cell.
   *
   * Under returnExpiredIfNotCleanedUp what expired is visible: a write (`read` false) gets the
   * cell as it is, expired parts included; a read gets a detached cell holding everything stored
   * (rarely: only when something in it expired), and what expired is removed from the state.
   */
  protected visibleCell(read: boolean): Cell | undefined {
    if (this.ttlMs === 0) return this.rawCell();
    this.table.cleanupStep();
    const cell = this.rawCell();
    if (cell === undefined) return undefined;
    const now = this.table.now();
    const expired = cellHasExpired(this.descriptor.kind, cell, now);
    // Dropping what expired, or refreshing an expiry, changes the entry (the disk backend writes it back).
    if (expired || (read && this.refreshOnRead)) this.table.markCurrentDirty();
    if (this.returnExpired && expired) {
      if (!read) return cell;
      const detached = detachCell(this.descriptor.kind, cell);
      if (purgeCell(this.descriptor.kind, cell, now)) this.table.removeCurrentCell(this.table.currentEntry()!, this.ns, this.isVoid);
      else if (this.refreshOnRead) refreshAll(cell, now + this.ttlMs);
      return detached;
    }
    if (purgeCell(this.descriptor.kind, cell, now)) {
      this.table.removeCurrentCell(this.table.currentEntry()!, this.ns, this.isVoid);
      return undefined;
    }
    if (read && this.refreshOnRead && cell.expiry === undefined) cell.expiresAt = now + this.ttlMs;
    return cell;
  }

  protected copyIn<V>(value: V): V {
    return this.deep ? copyValue(value) : value;
  }

  /**
   * The current `cell` is about to hold `value`: the disk backend's size estimate of the current
   * entry follows (StateTable.revalue; an object changed in place and stored again is not seen
   * until the entry is loaded again).
   */
  protected resized(cell: Cell, value: unknown): void {
    // hot path
    if (this.table.sized) this.table.revalue(cell, value);
  }
}

export class HeapValueState<T> extends HeapKvState implements InternalValueState<T> {
  value(): T | undefined {
    // hot path
    const cell = this.visibleCell(true);
    if (cell === undefined) return undefined;
    return (this.deep ? copyValue(cell.value) : cell.value) as T;
  }

  update(value: T): void {
    // hot path
    if (value === undefined) return this.clear();
    const stored = this.deep ? copyValue(value) : value;
    if (this.ttlMs !== 0) this.table.cleanupStep();
    const cell = this.table.cellForWrite(this.ns, this.isVoid, undefined);
    this.resized(cell, stored);
    cell.value = stored;
    if (this.ttlMs !== 0) cell.expiresAt = this.table.now() + this.ttlMs;
  }

  accumulate<IN>(value: IN, fns: Accumulation<IN, T>): boolean {
    // hot path (the sliding pane operator, per element)
    if (this.ttlMs !== 0 || this.deep) {
      throw new EddyError("INTERNAL", `accumulate needs state '${this.name}' without TTL and declared copy: "none"`);
    }
    const current = this.rawCell();
    if (current !== undefined) {
      this.table.markCurrentDirty();
      const next = fns.add(current.value as T, value);
      this.resized(current, next);
      current.value = next;
      return false;
    }
    const created = fns.create(value);
    if (created === undefined) return false;
    // Absent a moment ago, and `create` cannot reach the operator's state: no second lookup.
    const cell = this.table.newCell(this.ns, this.isVoid, undefined);
    this.resized(cell, created);
    cell.value = created;
    return true;
  }

  valuesInRange(from: number, to: number, step: number, namespaces: number[], values: T[]): number {
    // hot path (the sliding pane operator, per firing)
    if (this.ttlMs !== 0 || this.deep) {
      throw new EddyError("INTERNAL", `valuesInRange needs state '${this.name}' without TTL and declared copy: "none"`);
    }
    const cells = this.table.currentEntry()?.nsCells;
    if (cells === undefined) return 0;
    // At most this many step namespaces lie in the range.
    const most = Math.floor((to - from) / step) + 1;
    // A pass over the key's cells in insertion order, which hands out the stored namespaces (a
    // lookup by a namespace that is not a small integer boxes it: a double). The range's panes are usually the
    // key's oldest cells (earlier panes are gone once their last window fired; later ones were
    // made later), so the pass ends once it found `most`. A key with many more cells than that
    // (windows waiting for a watermark) whose range is not found among its first cells is looked
    // up namespace by namespace instead.
    const limit = cells.size > 2 * most ? most + 2 : cells.size;
    let n = 0;
    let visited = 0;
    let sorted = true;
    for (const [ns, cell] of cells) {
      if (visited++ === limit) return lookupRange(cells, from, to, step, namespaces, values);
      if (typeof ns !== "number" || ns < from || ns > to || (ns - from) % step !== 0) continue;
      if (n > 0 && ns < namespaces[n - 1]!) sorted = false;
      namespaces[n] = ns;
      values[n] = cell.value as T;
      if (++n === most) break;
    }
    // Cells are in insertion order: out of order only where an earlier pane was created later.
    if (!sorted) sortByNamespace(namespaces, values, n);
    return n;
  }

  queryValue(cell: Cell, now: number): unknown {
    return cell.expiresAt <= now ? undefined : this.copyIn(cell.value);
  }
}

/** valuesInRange by a lookup per step namespace of the range (in order). */
function lookupRange<T>(cells: Map<Namespace, Cell>, from: number, to: number, step: number, namespaces: number[], values: T[]): number {
  let n = 0;
  for (let ns = from; ns <= to; ns += step) {
    const cell = cells.get(ns);
    if (cell === undefined) continue;
    namespaces[n] = ns;
    values[n] = cell.value as T;
    n++;
  }
  return n;
}

/** Sorts the first `n` of `values` by `namespaces` (insertion sort: a few panes, nearly in order). */
function sortByNamespace(namespaces: number[], values: unknown[], n: number): void {
  for (let i = 1; i < n; i++) {
    const ns = namespaces[i]!;
    const value = values[i];
    let j = i - 1;
    for (; j >= 0 && namespaces[j]! > ns; j--) {
      namespaces[j + 1] = namespaces[j]!;
      values[j + 1] = values[j];
    }
    namespaces[j + 1] = ns;
    values[j + 1] = value;
  }
}

export class HeapReducingState<T> extends HeapKvState implements InternalReducingState<T> {
  readonly #reduce: (a: T, b: T) => T;

  constructor(descriptor: StateDescriptorBase & { readonly reduceFn: (a: T, b: T) => T }, table: StateTable) {
    super(descriptor, table);
    this.#reduce = descriptor.reduceFn;
  }

  get(): T | undefined {
    const cell = this.visibleCell(true);
    return cell === undefined ? undefined : this.copyIn(cell.value as T);
  }

  /** Returns true when this created the current (key, namespace)'s cell (the internal states' CreatingAdd). */
  add(value: T): boolean {
    const current = this.visibleCell(false);
    const next =
      current === undefined ? this.copyIn(value) : this.#reduce(this.copyIn(current.value as T), this.copyIn(value));
    // An existing cell is the one cellForWrite would return (the same current entry, the same
    // cell), so it is written directly; only a new cell needs the table.
    let cell = current;
    if (cell === undefined) cell = this.table.cellForWrite(this.ns, this.isVoid, undefined);
    else this.table.markCurrentDirty();
    this.resized(cell, next);
    cell.value = next;
    if (this.ttlMs !== 0) cell.expiresAt = this.table.now() + this.ttlMs;
    return current === undefined;
  }

  queryValue(cell: Cell, now: number): unknown {
    return cell.expiresAt <= now ? undefined : this.copyIn(cell.value);
  }

  protected override mergeValues(a: unknown, b: unknown): unknown {
    return this.#reduce(a as T, b as T);
  }
}

export class HeapAggregatingState<IN, ACC, OUT> extends HeapKvState implements InternalAggregatingState<IN, OUT> {
  readonly #fn: AggregateFunction<IN, ACC, OUT>;

  constructor(
    descriptor: StateDescriptorBase & { readonly aggregateFunction: AggregateFunction<IN, ACC, OUT> },
    table: StateTable,
  ) {
    super(descriptor, table);
    this.#fn = descriptor.aggregateFunction;
  }

  get(): OUT | undefined {
    const cell = this.visibleCell(true);
    return cell === undefined ? undefined : this.#fn.getResult(this.copyIn(cell.value as ACC));
  }

  /** Returns true when this created the current (key, namespace)'s cell (the internal states' CreatingAdd). */
  add(value: IN): boolean {
    // hot path
    const current = this.visibleCell(false);
    const acc = current === undefined ? this.#fn.createAccumulator() : this.copyIn(current.value as ACC);
    // Only an object accumulator can keep the input (a list of elements), so only then is the
    // input copied. With a primitive one (a count, a sum) the function gets the input itself, and
    // should it return an object anyway, that is copied instead: either way nothing stored is
    // reachable from the caller. Saves a record copy per element of count/sum windows.
    const primitiveAcc = typeof acc !== "object" || acc === null;
    const next = primitiveAcc ? this.copyIn(this.#fn.add(value, acc)) : this.#fn.add(this.copyIn(value), acc);
    // As in HeapReducingState.add: an existing cell is written directly.
    let cell = current;
    if (cell === undefined) cell = this.table.cellForWrite(this.ns, this.isVoid, undefined);
    else this.table.markCurrentDirty();
    this.resized(cell, next);
    cell.value = next;
    if (this.ttlMs !== 0) cell.expiresAt = this.table.now() + this.ttlMs;
    return current === undefined;
  }

  queryValue(cell: Cell, now: number): unknown {
    return cell.expiresAt <= now ? undefined : this.#fn.getResult(this.copyIn(cell.value as ACC));
  }

  protected override mergeValues(a: unknown, b: unknown): unknown {
    const merge = this.#fn.merge;
    if (merge === undefined) {
      throw new EddyError("STATE_NOT_MERGEABLE", `aggregating state '${this.name}' is used by merging windows (sessions): its AggregateFunction needs merge(a, b)`);
    }
    return merge.call(this.#fn, a as ACC, b as ACC);
  }
}

export class HeapListState<T> extends HeapKvState implements InternalListState<T> {
  get(): T[] {
    const cell = this.visibleCell(true);
    if (cell === undefined) return [];
    const values = cell.value as T[];
    if (this.refreshOnRead) refreshAll(cell, this.table.now() + this.ttlMs); // visibleCell marked the entry dirty
    if (!this.deep) return values.slice();
    const out = new Array<T>(values.length);
    for (let i = 0; i < values.length; i++) out[i] = copyValue(values[i]!);
    return out;
  }

  /** Returns true when this created the current (key, namespace)'s cell (the internal states' CreatingAdd). */
  add(value: T): boolean {
    return this.#append([this.copyIn(value)]);
  }

  addAll(values: Iterable<T>): void {
    this.#append(this.#copyAll(values));
  }

  update(values: Iterable<T>): void {
    const copies = this.#copyAll(values);
    this.clear();
    this.#append(copies);
  }

  queryValue(cell: Cell, now: number): unknown {
    const values = listVisibleAt(cell, now);
    return values.length === 0 ? undefined : values.map((v) => this.copyIn(v));
  }

  protected override mergeValues(a: unknown, b: unknown): unknown {
    return (a as T[]).concat(b as T[]);
  }

  #copyAll(values: Iterable<T>): T[] {
    const out: T[] = [];
    for (const v of values) out.push(this.copyIn(v));
    return out;
  }

  /** Appends; returns whether the cell was created (held no visible element before). */
  #append(copies: T[]): boolean {
    if (copies.length === 0) return false;
    if (this.ttlMs !== 0) this.visibleCell(false); // drops expired elements first
    const cell = this.table.cellForWrite(this.ns, this.isVoid, undefined);
    const created = cell.value === undefined;
    if (created) {
      cell.value = copies;
      if (this.ttlMs !== 0) cell.expiry = [];
    } else {
      const values = cell.value as T[];
      for (let i = 0; i < copies.length; i++) values.push(copies[i]!);
    }
    // The disk backend's size estimate: the elements appended (and their expiries), not the whole list.
    if (this.table.sized) {
      const added = (created ? sizeOf(copies) : appendedSize(copies)) + (this.ttlMs !== 0 ? 8 * copies.length : 0);
      cell.valueSize += added;
      this.table.resizeCurrent(added);
    }
    if (this.ttlMs !== 0) {
      const exp = this.table.now() + this.ttlMs;
      const exps = cell.expiry as number[];
      for (let i = 0; i < copies.length; i++) exps.push(exp);
      cell.expiresAt = exp;
    }
    return created;
  }
}

function listVisibleAt(cell: Cell, now: number): unknown[] {
  if (cell.expiresAt <= now) return [];
  const values = cell.value as unknown[];
  const exps = cell.expiry as number[] | undefined;
  if (exps === undefined) return values;
  return values.filter((_, i) => exps[i]! > now);
}

/** A cell holding what `cell` holds, not affected by later changes of it (list and map: own collections). */
function detachCell(kind: StateKind, cell: Cell): Cell {
  const value = kind === "list" ? (cell.value as unknown[]).slice() : kind === "map" ? new Map(cell.value as Map<unknown, unknown>) : cell.value;
  return new Cell(value, cell.expiresAt, undefined);
}

/** Sets every element/entry expiry of a list or map cell to `exp` (onReadAndWrite). */
export function refreshAll(cell: Cell, exp: number): void {
  const expiry = cell.expiry;
  if (expiry === undefined) return;
  if (Array.isArray(expiry)) expiry.fill(exp);
  else for (const k of expiry.keys()) expiry.set(k, exp);
  cell.expiresAt = exp;
}
