/**
 * The heap keyed state backend (the default): all keyed state of one operator subtask in JS
 * maps, stored per key group of the subtask's key-group range.
 *
 * Call order: the operator calls `setCurrentKey(key, keyGroup)` once per record or timer, then
 * user code uses handles obtained from `getState` & co. Never called concurrently; every method
 * runs on the task thread.
 */

import type { Clock } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import { mapKeyOf } from "../core/key.ts";
import type { Key, MapKey } from "../core/key.ts";
import type {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  StateDescriptorBase,
  ValueStateDescriptor,
} from "./descriptors.ts";
import { ttlFromSnapshot } from "./descriptors.ts";
import { HeapMapState } from "./heap-map-state.ts";
import { HeapAggregatingState, HeapListState, HeapReducingState, HeapValueState } from "./heap-state-handles.ts";
import type { HeapKvState } from "./heap-state-handles.ts";
import type {
  InternalAggregatingState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
} from "./internal-state.ts";
import type { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { CellColumns, HeapKeyedStateSnapshot, readKeyGroup, type CapturedState } from "./heap-snapshot.ts";
import type { SharedKeyedSnapshot } from "./incremental-snapshot.ts";
import { SnapshotChain, writeBaseKeyGroup, writeDeltaKeyGroup, type StateChanges } from "./snapshot-chain.ts";
import { metaOf, type KeyedStateMeta } from "./keyed-state-meta.ts";
import { bornIn, changeEpochOf, KeyContext, type KeyEntry, keyGroupOutOfRange, snapshotCellValue, StateTable, VOID_NAMESPACE, type TableCapture } from "./state-table.ts";
import { KeyRows, MAX_ROWS } from "./key-rows.ts";
import { VoidValueCursor } from "./void-value-cursor.ts";
import type { KeyedSnapshotOptions, KeyedStateBackend, KeyedStateBackendFactory, KeyedStateBackendOptions, KeyedStateEntry, KeyGroupCells } from "./keyed-state-backend.ts";
import type { KeyGroupRangeLike, Namespace } from "./state-table.ts";

export { VOID_NAMESPACE } from "./state-table.ts";
export type { KeyGroupRangeLike, Namespace } from "./state-table.ts";

export interface HeapKeyedStateBackendOptions extends KeyedStateBackendOptions {
  /**
   * Incremental checkpoints (`state.backend.heap.incremental`): a checkpoint (never a savepoint)
   * writes a base of every key group, then deltas of the keys changed or removed since the
   * previous one, `maxChainLength` of them before the next base. Undefined: every checkpoint is
   * full.
   */
  readonly incrementalCheckpoints?: { readonly maxChainLength: number };
}

export type { KeyedStateEntry } from "./keyed-state-backend.ts";

interface RegisteredState {
  readonly table: StateTable;
  /** How the state was first declared (or described by the snapshot it was restored from). */
  readonly descriptor: StateDescriptorBase;
  /** Undefined for a restored state the operator has not asked for yet. */
  handle: HeapKvState | undefined;
  /** Set for a state restored from a snapshot until the operator first asks for it. */
  restored: boolean;
}

/** How many descriptors HeapKeyedStateBackend remembers the handles of, by identity. */
const RECENT_DESCRIPTORS = 8;

export class HeapKeyedStateBackend implements KeyedStateBackend {
  readonly keyGroupRange: KeyGroupRangeLike;
  readonly #clock: Clock;
  readonly #ctx = new KeyContext();
  /** The current key's row, per record (key-rows.ts). */
  readonly #rows: KeyRows<KeyEntry>;
  readonly #states = new Map<string, RegisteredState>();
  /**
   * The handles of the descriptors asked for most recently, by identity: functions often ask for
   * their states on every record (`ctx.getState(d)` in processElement). Descriptors are frozen and
   * a state's handle never changes once created, so a hit skips the lookup by name and the checks.
   */
  readonly #recentDescriptors: (StateDescriptorBase | undefined)[] = new Array<undefined>(RECENT_DESCRIPTORS).fill(undefined);
  readonly #recentHandles: (HeapKvState | undefined)[] = new Array<undefined>(RECENT_DESCRIPTORS).fill(undefined);
  #recentNext = 0;
  readonly #operator: string | undefined;
  /** Tables whose TTL cleans up incrementally on every record (cleanup.incremental.everyRecord); undefined: none. */
  #everyRecord: StateTable[] | undefined = undefined;
  readonly #onBackgroundCleanup: (() => void) | undefined;
  #backgroundCleanupAnnounced = false;
  readonly #onQueryable: ((queryableName: string, stateName: string) => void) | undefined;
  /** Base or delta of the next incremental snapshot; undefined: every snapshot is full. */
  readonly #chain: SnapshotChain | undefined;
  /**
   * Keys removed since the previous incremental snapshot, per state (registration order) and
   * group index, by map identity: a delta writes them as changed keys without cells. Changed
   * keys still held are found by `KeyEntry.changedAt`. Recorded only while the next snapshot can
   * be a delta.
   */
  #removed: (Map<MapKey, Key> | undefined)[][] = [];

  /** `maxKeyRows`: how many key rows to keep (key-rows.ts); tests drop them sooner. */
  constructor(options: HeapKeyedStateBackendOptions, maxKeyRows = MAX_ROWS) {
    this.#rows = new KeyRows<KeyEntry>(maxKeyRows);
    const { start, end } = options.keyGroupRange;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start) {
      throw new EddyError("INVALID_KEY_GROUP_RANGE", `invalid key-group range [${start}, ${end}]`);
    }
    this.keyGroupRange = Object.freeze({ start, end });
    this.#clock = options.clock;
    this.#operator = options.operatorName;
    this.#onQueryable = options.onQueryable;
    this.#onBackgroundCleanup = options.onBackgroundCleanup;
    const incremental = options.incrementalCheckpoints;
    if (incremental !== undefined) this.#chain = new SnapshotChain(incremental.maxChainLength, "state.backend.heap.max-chain-length");
  }

  /**
   * Makes `key` (of key group `keyGroup`, computed by the caller) the current key of every
   * handle. Throws an internal error when `keyGroup` is not in this backend's range.
   */
  setCurrentKey(key: Key, keyGroup: number): void {
    // hot path
    const range = this.keyGroupRange;
    if ((keyGroup | 0) !== keyGroup || keyGroup < range.start || keyGroup > range.end) {
      throw keyGroupOutOfRange(keyGroup, range);
    }
    const ctx = this.#ctx;
    ctx.key = key;
    const row = this.#rows.rowOf(key, ctx.tables, keyGroup);
    ctx.row = row;
    ctx.mapKey = row === undefined ? mapKeyOf(key) : row.mapKey;
    ctx.keyGroup = keyGroup;
    ctx.kgIndex = keyGroup - range.start;
    ctx.epoch++;
    const everyRecord = this.#everyRecord;
    if (everyRecord !== undefined) for (let i = 0; i < everyRecord.length; i++) everyRecord[i]!.cleanupStep();
  }

  knownKeyGroup(selected: unknown): number {
    // hot path
    const row = this.#rows.find(selected, this.#ctx.tables);
    return row === undefined ? -1 : row.keyGroup;
  }

  /** The current key's map identity (mapKeyOf), as the tables use it. */
  protected get currentMapKey(): MapKey {
    return this.#ctx.mapKey;
  }

  getCurrentKey(): Key {
    if (this.#ctx.kgIndex < 0) throw noKeyYet();
    return this.#ctx.key;
  }

  getCurrentKeyGroup(): number {
    if (this.#ctx.kgIndex < 0) throw noKeyYet();
    return this.#ctx.keyGroup;
  }

  getState<T>(descriptor: ValueStateDescriptor<T>): InternalValueState<T> {
    return this.#register(descriptor, HeapValueState<T>);
  }

  /**
   * A cursor over the value state of `descriptor` by key (see VoidValueCursor), for operators
   * that own the state. The state is registered as by `getState` (snapshots, restore, queryable
   * reads); the descriptor must have no TTL and `copy: "none"`.
   */
  getVoidValueCursor<T>(descriptor: ValueStateDescriptor<T>): VoidValueCursor<T> {
    if (descriptor.ttl !== undefined || descriptor.copy !== "none") {
      throw new EddyError("STATE_CURSOR_UNSUPPORTED", `state '${descriptor.name}': a value cursor needs a state without TTL and with copy "none"`);
    }
    this.getState(descriptor);
    return new VoidValueCursor<T>(this.#get(descriptor.name).table, this.keyGroupRange);
  }

  getListState<T>(descriptor: ListStateDescriptor<T>): InternalListState<T> {
    return this.#register(descriptor, HeapListState<T>);
  }

  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): InternalMapState<UK, UV> {
    return this.#register(descriptor, HeapMapState<UK, UV>);
  }

  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): InternalReducingState<T> {
    return this.#register(descriptor, HeapReducingState<T>);
  }

  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): InternalAggregatingState<IN, OUT> {
    return this.#register(descriptor, HeapAggregatingState<IN, ACC, OUT>);
  }

  /** Names of every registered state, in registration order. */
  stateNames(): string[] {
    return [...this.#states.keys()];
  }

  /** The descriptor a state was first registered with (kind, ttl, copy). */
  descriptorOf(stateName: string): StateDescriptorBase {
    return this.#get(stateName).descriptor;
  }

  /**
   * The synchronous part of a snapshot: freezes every state (copy-on-write per key group, O(key
   * groups)); the returned snapshot serializes it later while processing goes on.
   */
  snapshot(options?: KeyedSnapshotOptions): HeapKeyedStateSnapshot {
    const captured = [...this.#states.values()].map(({ table, descriptor }) => ({
      meta: metaOf(descriptor),
      capture: this.captureTable(table),
      dropExpired: table.ttl?.cleanupFullSnapshot === true,
    }));
    const hasTtl = captured.some((c) => c.dropExpired);
    const now = hasTtl ? this.#clock.now() : 0;
    const snapshot = new HeapKeyedStateSnapshot(this.keyGroupRange, captured, now);
    if (this.#chain !== undefined && options?.incremental === true) snapshot.shared = this.#sharedPart(this.#chain, snapshot, captured, now);
    return snapshot;
  }

  /**
   * The incremental part of a snapshot (synchronous, O(1) besides the captures): a base when the
   * chain must restart (the first snapshot, after a restore or a failed one, or `maxChainLength`
   * deltas since the last base), else a delta: per key group and state, the captured entries
   * changed since the previous snapshot (`changedAt` at least this snapshot's epoch: one changed
   * after the capture shows its captured cells, which may be unchanged, and is written all the
   * same) and the keys removed since then that the capture does not hold.
   */
  #sharedPart(chain: SnapshotChain, snapshot: HeapKeyedStateSnapshot, captured: readonly CapturedState[], now: number): SharedKeyedSnapshot {
    const ctx = this.#ctx;
    const epoch = ctx.changeEpoch++;
    const removed = this.#removed;
    this.#removed = [];
    const { base, previous, settle } = chain.begin(snapshot, (written) => {
      if (written === undefined) this.#removed = []; // the next is a base
    });
    const writeKeyGroup = base
      ? (kg: number, out: ByteWriter): boolean => writeBaseKeyGroup(snapshot, kg, out)
      : (kg: number, out: ByteWriter): boolean => {
          const index = kg - this.keyGroupRange.start;
          const changes: StateChanges[] = [];
          for (let id = 0; id < captured.length; id++) {
            const { meta, capture, dropExpired } = captured[id]!;
            const gone = removed[id]?.[index];
            const keys: Key[] = [];
            const cells = new CellColumns(meta, dropExpired ? now : Number.NEGATIVE_INFINITY);
            const held = gone === undefined ? undefined : new Set<MapKey>();
            capture.forEachCell(
              index,
              cells.add,
              (entry) => {
                if (changeEpochOf(entry.changedAt) < epoch) return false;
                held?.add(entry.mapKey);
                keys.push(entry.key);
                return true;
              },
              true,
            );
            if (gone !== undefined) for (const [mapKey, key] of gone) if (!held!.has(mapKey)) keys.push(key);
            if (keys.length > 0) changes.push({ meta, keys, cells });
          }
          return writeDeltaKeyGroup(changes, out);
        };
    return { kind: base ? "base" : "delta", previous, writeKeyGroup, settle };
  }

  /** Keys recorded as removed for the next incremental snapshot (tests). */
  get removedKeysRecorded(): number {
    let n = 0;
    for (const groups of this.#removed) for (const group of groups ?? []) n += group?.size ?? 0;
    return n;
  }

  /** Key `entry` of state `id` left its table: the next delta writes it as removed (unless it comes back). */
  #recordRemoved(id: number, entry: KeyEntry, kgIndex: number): void {
    // A key created since the previous snapshot is in no snapshot: nothing to say it went.
    if (this.#chain!.needsBase || entry.changedAt === bornIn(this.#ctx.changeEpoch)) return;
    const groups = (this.#removed[id] ??= []);
    (groups[kgIndex] ??= new Map()).set(entry.mapKey, entry.key);
  }

  /**
   * Restores one key group written by `HeapKeyedStateSnapshot.writeKeyGroup`, before processing
   * starts. `states` describes the snapshot's states; a state already registered must have the
   * same kind and options. The key group must be in this backend's range.
   */
  restoreKeyGroup(keyGroup: number, input: ByteReader, states: readonly KeyedStateMeta[]): void {
    const byName = new Map(states.map((m) => [m.name, m]));
    this.restoreKeyGroupCells(keyGroup, (onCell) => readKeyGroup(input, (name) => byName.get(name), onCell), states);
  }

  restoreKeyGroupCells(keyGroup: number, cells: KeyGroupCells, _states: readonly KeyedStateMeta[]): void {
    this.#chain?.restart(); // the first incremental snapshot after a restore is a base
    const kgIndex = this.checkRestoredKeyGroup(keyGroup);
    cells((meta, { key, namespace, cell }) => {
      this.tableForRestore(meta).restoreCell(key, mapKeyOf(key), kgIndex, namespace, cell);
    });
  }

  /** The index of `keyGroup` in this backend's range; out of the range: refused. */
  protected checkRestoredKeyGroup(keyGroup: number): number {
    const range = this.keyGroupRange;
    if (!Number.isInteger(keyGroup) || keyGroup < range.start || keyGroup > range.end) throw keyGroupOutOfRange(keyGroup, range);
    return keyGroup - range.start;
  }

  /** The table a restored state's cells go to (registered from the snapshot's meta on first use). */
  protected tableForRestore(meta: KeyedStateMeta): StateTable {
    return this.#ensureTable({ ...meta, ttl: ttlFromSnapshot(meta.name, meta.ttl), codec: meta.codec, queryableName: meta.queryable }, true).table;
  }

  /** What a snapshot reads of one table (a subclass adds what lives outside the table's maps). */
  protected captureTable(table: StateTable): TableCapture {
    return table.capture();
  }

  /** Makes the table of a newly registered (or restored) state (a subclass gives it a source). */
  protected createTable(descriptor: StateDescriptorBase, ctx: KeyContext, clock: Clock): StateTable {
    const id = this.#states.size; // its index in the snapshot's captures
    const onRemoved = this.#chain === undefined ? undefined : (entry: KeyEntry, kgIndex: number): void => this.#recordRemoved(id, entry, kgIndex);
    return new StateTable(descriptor.name, descriptor.kind, descriptor.ttl, this.keyGroupRange, ctx, clock, descriptor.copy, undefined, onRemoved);
  }

  /** Number of keys holding any value of the state (expired ones not cleaned yet included). */
  numKeys(stateName: string): number {
    return this.#get(stateName).table.numKeys;
  }

  keysOf(stateName: string, namespace: Namespace = VOID_NAMESPACE): { readonly key: Key; readonly keyGroup: number }[] {
    const { table, descriptor } = this.#get(stateName);
    const now = descriptor.ttl === undefined ? 0 : this.#clock.now();
    const out: { key: Key; keyGroup: number }[] = [];
    for (let kg = this.keyGroupRange.start; kg <= this.keyGroupRange.end; kg++) {
      for (const cell of table.cellsOfGroup(table.indexOf(kg))) {
        if (cell.namespace === namespace && snapshotCellValue(descriptor.kind, cell.cell, now) !== undefined) out.push({ key: cell.key, keyGroup: kg });
      }
    }
    return out;
  }

  /**
   * Every visible (key, namespace, value) of a state in one key group, for snapshots. Expired
   * values and elements are left out. Do not write to the state while iterating.
   */
  *entries(stateName: string, keyGroup: number): Generator<KeyedStateEntry, void, undefined> {
    const { table, descriptor } = this.#get(stateName);
    const kgIndex = table.indexOf(keyGroup);
    const now = descriptor.ttl === undefined ? 0 : this.#clock.now();
    const kind = descriptor.kind;
    for (const { key, namespace, cell } of table.cellsOfGroup(kgIndex)) {
      const value = snapshotCellValue(kind, cell, now);
      if (value !== undefined) yield { key, namespace, value };
    }
  }

  /**
   * Reads one key's value without changing the current key (queryable state): what the handle's
   * read would return (list: array, map: Map, aggregating: the result), or undefined when
   * nothing is stored. Does not refresh TTL and does not clean up.
   */
  getValueForKey(stateName: string, key: Key, keyGroup: number, namespace: Namespace = VOID_NAMESPACE): unknown {
    const { table, handle, descriptor } = this.#get(stateName);
    const entry = table.lookup(mapKeyOf(key), table.indexOf(keyGroup));
    if (entry === undefined) return undefined;
    const cell = namespace === VOID_NAMESPACE ? entry.voidCell : entry.nsCells?.get(namespace);
    if (cell === undefined) return undefined;
    const now = descriptor.ttl === undefined ? 0 : this.#clock.now();
    if (handle !== undefined) return handle.queryValue(cell, now);
    // Restored, not used by the operator yet: the value as stored — except an aggregate, whose
    // result needs the operator's function.
    return descriptor.kind === "aggregating" ? undefined : snapshotCellValue(descriptor.kind, cell, now);
  }

  /**
   * Examines up to `maxEntries` keys of every state with TTL at its cleanup cursor and drops what
   * expired. Bounded work for the task loop to call when idle. Returns the number of removed
   * (key, namespace) values.
   */
  cleanupExpired(maxEntries: number): number {
    let removed = 0;
    for (const { table } of this.#states.values()) if (table.ttl?.cleanupInBackground === true) removed += table.cleanupExpired(maxEntries);
    return removed;
  }

  /** Takes note of a table's TTL cleanup options (a state was registered or adopted). */
  #noteCleanup(table: StateTable): void {
    const ttl = table.ttl;
    if (ttl === undefined) return;
    const tables = [...this.#states.values()].map((s) => s.table).filter((t) => t.ttl?.cleanupEveryRecord === true);
    this.#everyRecord = tables.length === 0 ? undefined : tables;
    if (ttl.cleanupInBackground && !this.#backgroundCleanupAnnounced) {
      this.#backgroundCleanupAnnounced = true;
      this.#onBackgroundCleanup?.();
    }
  }

  /**
   * The handle of `descriptor`'s state, made with `Handle` on first use. It takes the handle's
   * class, not a factory closure: the `get…State` methods built a closure per call, which V8 did
   * not always elide (25-50 bytes of garbage per event of Nexmark q4 on worker threads).
   */
  #register<D extends StateDescriptorBase, H extends HeapKvState>(descriptor: D, Handle: new (descriptor: D, table: StateTable) => H): H {
    // hot path
    const recent = this.#recentDescriptors;
    for (let i = 0; i < RECENT_DESCRIPTORS; i++) if (recent[i] === descriptor) return this.#recentHandles[i] as H;
    const handle = this.#registerNamed(descriptor, Handle);
    const slot = this.#recentNext;
    this.#recentNext = (slot + 1) % RECENT_DESCRIPTORS;
    recent[slot] = descriptor;
    this.#recentHandles[slot] = handle;
    return handle;
  }

  #registerNamed<D extends StateDescriptorBase, H extends HeapKvState>(descriptor: D, Handle: new (descriptor: D, table: StateTable) => H): H {
    const state = this.#ensureTable(descriptor);
    if (state.restored) this.#adopt(state, descriptor);
    if (state.handle === undefined && descriptor.queryableName !== undefined) this.#onQueryable?.(descriptor.queryableName, descriptor.name);
    // (Registering a name twice for one state is a no-op: the registry keeps one entry per subtask.)
    // Same name and kind, hence created by the same class; only the type parameters may differ.
    state.handle ??= new Handle(descriptor, state.table);
    return state.handle as H;
  }

  /**
   * The operator asks for a state restored from a snapshot: the kind must be the same, and the
   * values are brought to the descriptor's codec version (see StateCodec). From then on the
   * operator's descriptor is the state's.
   */
  #adopt(state: RegisteredState, descriptor: StateDescriptorBase): void {
    const where = `state '${descriptor.name}'${this.#operator === undefined ? "" : ` of operator '${this.#operator}'`}`;
    const old = state.descriptor.codec;
    const now = descriptor.codec;
    if (old !== undefined && now !== undefined) {
      if (old.id !== now.id) {
        throw new EddyError("STATE_CODEC_MISMATCH", `${where} was written with codec '${old.id}' (version ${old.version}); codec '${now.id}' cannot read it`);
      }
      if (old.version > now.version) {
        throw new EddyError(
          "STATE_CODEC_MISMATCH",
          `${where} was written with codec '${old.id}' version ${old.version}, newer than this job's version ${now.version}: restore it with the newer job`,
        );
      }
      if (old.version < now.version) {
        const migrate = now.migrate;
        if (migrate === undefined) {
          throw new EddyError(
            "STATE_MIGRATION_MISSING",
            `${where} was written with codec '${old.id}' version ${old.version}; version ${now.version} declares no migrate(value, fromVersion) to read it`,
          );
        }
        state.table.migrateValues((value) => {
          try {
            return migrate.call(now, value, old.version);
          } catch (e) {
            throw new EddyError("STATE_MIGRATION_FAILED", `${where}: migrate() from version ${old.version} to ${now.version} failed: ${e instanceof Error ? e.message : String(e)}`);
          }
        });
      }
    }
    state.restored = false;
    (state as { descriptor: StateDescriptorBase }).descriptor = descriptor;
    state.table.adoptTtl(descriptor.ttl);
    this.#noteCleanup(state.table);
  }

  /** Names of restored states the operator has not asked for (yet). */
  unclaimedStates(): string[] {
    return [...this.#states].filter(([, s]) => s.restored).map(([name]) => name);
  }

  /** The state named like `descriptor`, created empty when new; checks kind and options match. */
  #ensureTable(descriptor: StateDescriptorBase, restoring = false): RegisteredState {
    const existing = this.#states.get(descriptor.name);
    if (existing !== undefined) {
      if (existing.restored && !restoring && existing.descriptor.kind !== descriptor.kind) {
        const where = `state '${descriptor.name}'${this.#operator === undefined ? "" : ` of operator '${this.#operator}'`}`;
        throw new EddyError(
          "STATE_KIND_CHANGED",
          `${where} was restored as ${article(existing.descriptor.kind)} ${existing.descriptor.kind} state, and the job now asks for ${article(descriptor.kind)} ${descriptor.kind} state: ` +
            `keep the kind, or give the new state another name (and drop the old one)`,
        );
      }
      checkCompatible(existing.descriptor, descriptor, existing.restored);
      return existing;
    }
    const table = this.createTable(descriptor, this.#ctx, this.#clock);
    const state: RegisteredState = { table, descriptor, handle: undefined, restored: restoring };
    this.#states.set(descriptor.name, state);
    this.#noteCleanup(table);
    // A restored queryable state is served at once, before the operator next touches it.
    if (restoring && descriptor.queryableName !== undefined) this.#onQueryable?.(descriptor.queryableName, descriptor.name);
    return state;
  }

  #get(stateName: string): RegisteredState {
    const state = this.#states.get(stateName);
    if (state === undefined) {
      throw new EddyError(
        "UNKNOWN_STATE",
        `no keyed state named '${stateName}' (registered: ${[...this.#states.keys()].join(", ") || "none"})`,
      );
    }
    return state;
  }
}

/**
 * One name, one set of options. Against a state restored from a snapshot (`restored`) only what
 * the snapshot records is compared: TTL visibility and cleanup may change between runs.
 */
function checkCompatible(existing: StateDescriptorBase, asked: StateDescriptorBase, restored: boolean): void {
  if (existing.kind !== asked.kind) {
    throw new EddyError(
      "STATE_KIND_MISMATCH",
      `state '${asked.name}' is ${article(existing.kind)} ${existing.kind} state; it cannot also be used as ` +
        `${article(asked.kind)} ${asked.kind} state — give the new state another name`,
    );
  }
  const a = existing.ttl;
  const b = asked.ttl;
  const sameTtl =
    a === b ||
    (a !== undefined &&
      b !== undefined &&
      a.ttlMs === b.ttlMs &&
      a.updateType === b.updateType &&
      (restored ||
        (a.visibility === b.visibility &&
          a.cleanupFullSnapshot === b.cleanupFullSnapshot &&
          a.cleanupEntriesPerAccess === b.cleanupEntriesPerAccess &&
          a.cleanupEveryRecord === b.cleanupEveryRecord &&
          a.cleanupInBackground === b.cleanupInBackground)));
  if (!sameTtl || existing.copy !== asked.copy) {
    throw new EddyError(
      "STATE_DESCRIPTOR_MISMATCH",
      `state '${asked.name}' was registered with other options (ttl, copy); one name must always ` +
        `be used with the same options`,
    );
  }
}

function article(kind: string): string {
  return kind === "aggregating" ? "an" : "a";
}

/** The failure of state-table.ts's noCurrentKey, reached through the key instead of a state. */
function noKeyYet(): EddyError {
  return new EddyError("NO_CURRENT_KEY", "no current key: setCurrentKey was never called");
}

/** The heap backend's factory: the default of every job. */
export const heapStateBackend: KeyedStateBackendFactory = (options) => new HeapKeyedStateBackend(options);
