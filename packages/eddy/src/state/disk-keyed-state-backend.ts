/**
 * The disk keyed state backend: the heap backend's tables as a bounded write-behind cache in
 * front of an embedded LMDB store (`lmdb`, chosen by bench/state-engines.ts; docs/design/disk-state.md).
 *
 * - Semantics are the heap backend's, by construction: the same handles, TTL and copy rules work
 *   on the cached entries (HeapKeyedStateBackend with a TableSource per table). A key not cached
 *   is loaded from the store on first access (a synchronous LMDB read) and stays cached until
 *   evicted.
 * - The cache holds at most `cacheSize` keys (over all states of the subtask) and at most
 *   `cacheBytes` of their estimated heap size (`KeyEntry.size`: size-estimate.ts at load, and
 *   what each write adds or takes away, reported by the handles; never a walk per access),
 *   whichever is reached first. It is evicted a quarter of the keys or a sixteenth of the bytes
 *   at a time by second chance (CLOCK, an approximation of least recently used): a use of a cached
 *   key only sets its reference bit; eviction walks the keys in insertion order, giving a
 *   referenced key a second chance (bit cleared, moved to the end) and evicting the others. A use
 *   costs one Map lookup; strict LRU moved the key to the end of a Map on every record (a delete
 *   and an insert), which was half of q12's time on this backend (churned Maps rehash). Evicted entries are encoded into a write batch (with the
 *   deletions of keys whose state was removed), written as one LMDB transaction sorted by store
 *   key once it holds WRITE_BATCH writes, and before every snapshot; reads look in it first.
 * - Store layout: one record per (key group, state, key), all namespaces of the key in it.
 *   Store key = u16 key group (big-endian) · u16 state id · key tag · key bytes, so a key-group
 *   range of a state is one contiguous scan. Record = the key, then its VOID cell and namespace
 *   cells (value in value-codec, expiry times).
 * - Snapshot (the synchronous part of a checkpoint): an LMDB read transaction is opened (MVCC:
 *   later writes do not show in it), the write batch is copied (at most WRITE_BATCH references,
 *   grouped by key group and state), and the heap tables take their copy-on-write capture of the
 *   cached entries: O(key groups + WRITE_BATCH), no write. Writing a key group merges the three
 *   (a cached key wins over the batch, the batch over the store) into the canonical format of
 *   heap-snapshot.ts, so snapshots of either backend restore into the other.
 * - The store is a cache of the last checkpoint, never trusted across runs: opening a backend
 *   deletes whatever its directory held, and a restore rebuilds it (a damaged store file cannot
 *   be read back after a restart) — unless local recovery (`localRecovery`,
 *   disk-local-recovery.ts) can roll the store its directory holds back to the checkpoint
 *   restored: then the directory is kept when the backend is disposed, the store is opened by the
 *   restore (`restoreLocally`) or before the first state is registered, and each snapshot of an
 *   incremental checkpoint keeps undo logs and writes back the entries it changed. A job directory holds a LOCK file with the owning process's
 *   pid: a second live process is refused (STATE_DIR_LOCKED).
 * - Restore (`restoreKeyGroupCells`): into a fresh store, each key's decoded cells become its
 *   record, written in one sorted transaction per key group, not through the cache.
 * - Timers stay on the heap (the timer service), as Flink's `state.backend.rocksdb.timer-service.factory: HEAP`.
 * - Write-back of changed entries only: every write path marks its entry dirty
 *   (`KeyEntry.dirty`); an entry loaded and only read is dropped when evicted, not written.
 * - Incremental checkpoints (`incremental`, state/incremental-snapshot.ts): a snapshot asked to be
 *   incremental also carries a `shared` part, a base (every key group) or a delta (the keys
 *   changed since the previous snapshot: cached entries by `KeyEntry.changedAt`, keys that left
 *   the cache by `#changed`), which the task writes to a shared file; docs/design/disk-state.md.
 */
import { closeSync, existsSync, ftruncateSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { createRequire } from "node:module";
import { getHeapStatistics } from "node:v8";
import type { Database, RootDatabase, Transaction } from "lmdb";
import { UndoLog } from "./disk-local-recovery.ts";
import type { Clock } from "../core/clock.ts";
import { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { decodeValue, encodeValue } from "../core/codec/value-codec.ts";
import { describeCause, EddyError } from "../core/errors.ts";
import { isPidAlive } from "../core/pid.ts";
import { mapKeyOf, type Key, type MapKey } from "../core/key.ts";
import type { StateDescriptorBase, ValueStateDescriptor } from "./descriptors.ts";
import { HeapKeyedStateBackend, type KeyedStateEntry } from "./heap-keyed-state-backend.ts";
import { CellColumns, type HeapKeyedStateSnapshot } from "./heap-snapshot.ts";
import type { SharedFileRef, SharedKeyedSnapshot } from "./incremental-snapshot.ts";
import { checkMaxChainLength, SnapshotChain, writeBaseKeyGroup, writeDeltaKeyGroup, type StateChanges } from "./snapshot-chain.ts";
import type { KeyedSnapshotOptions, KeyedStateBackendFactory, KeyedStateBackendOptions, KeyGroupCells, LocalRestoreOutcome } from "./keyed-state-backend.ts";
import { VoidValueCursor } from "./void-value-cursor.ts";
import type { KeyedStateMeta } from "./keyed-state-meta.ts";
import { bornIn, Cell, changeEpochOf, KeyEntry, keyGroupOutOfRange, LOADED, NS_CELL_BYTES, purgeCell, snapshotCellValue, StateTable, VOID_NAMESPACE, type CellVisitor, type KeyContext, type TableCapture, type TableSource } from "./state-table.ts";
import { sizeOf } from "./size-estimate.ts";
import type { Namespace } from "./namespace.ts";

/** Evicted entries (and removals) gathered before one write transaction (each LMDB commit costs ~0.1-0.4 ms). */
/** Added to a cached key's group index while the key is referenced (second-chance eviction); above every index. */
const REFERENCED = 0x10000;
const WRITE_BATCH = 4_096;
/** The restore's record buffer starts at this size and is dropped after a key group that grew it past RESTORE_WRITER_KEEP. */
const RESTORE_WRITER_INITIAL = 1 << 20;
const RESTORE_WRITER_KEEP = 64 << 20;

/** 0, 1, ..., n - 1. */
function identity(n: number): number[] {
  const out: number[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** The first index of a group of `#restoreOrder`. */
function indexOf(group: number | number[]): number {
  return typeof group === "number" ? group : group[0]!;
}

/** Adds index `i` to the last group of `groups`. */
function push(groups: (number | number[])[], i: number): void {
  const last = groups[groups.length - 1]!;
  if (typeof last === "number") groups[groups.length - 1] = [last, i];
  else last.push(i);
}

/**
 * Default `state.backend.disk.cache-size`: keys kept on the heap per subtask. A backstop: by
 * default the bytes bound is reached first (256 MiB hold ~1 M keys of the smallest entries).
 */
export const DEFAULT_DISK_CACHE_SIZE = 10_000_000;
/**
 * Default `state.backend.disk.cache-bytes`: estimated heap bytes of the cached entries per
 * subtask, at most an eighth of the thread's heap limit (a worker given a small heap gets less).
 */
export const DEFAULT_DISK_CACHE_BYTES = 256 * 1024 * 1024;

/** The cache's bound in bytes unless configured: DEFAULT_DISK_CACHE_BYTES, at most an eighth of this thread's heap limit. */
export function defaultDiskCacheBytes(): number {
  return Math.min(DEFAULT_DISK_CACHE_BYTES, Math.floor(getHeapStatistics().heap_size_limit / 8));
}
/**
 * Estimated heap bytes of a cached key besides its key and values (size-estimate.ts): the
 * KeyEntry, its slots in the table's group map and in the cache's second-chance Map, and the
 * map identity of a composite key. bench/disk-cache-bytes.ts calibrates it.
 */
const ENTRY_BYTES = 240;
/** Default `state.backend.disk.max-chain-length`: deltas after a base before the next full one. */
export const DEFAULT_MAX_CHAIN_LENGTH = 10;

export interface DiskStateBackendOptions {
  /** Root directory of the stores (`state.backend.disk.dir`); one directory per job and subtask below it. */
  readonly dir: string;
  /** Keys kept on the heap per subtask (`state.backend.disk.cache-size`; default 10,000,000). */
  readonly cacheSize?: number;
  /** Estimated heap bytes of the keys kept on the heap per subtask (`state.backend.disk.cache-bytes`; default defaultDiskCacheBytes()). */
  readonly cacheBytes?: number;
  /** Incremental checkpoints (`state.backend.disk.incremental`; default true). */
  readonly incremental?: boolean;
  /** Deltas after a full base before the next base (`state.backend.disk.max-chain-length`; default 10). */
  readonly maxChainLength?: number;
  /** Keep each subtask's store for a restore on this machine (`state.backend.disk.local-recovery`; default false; needs incremental). */
  readonly localRecovery?: boolean;
}

export interface DiskKeyedStateBackendOptions extends KeyedStateBackendOptions {
  /** This subtask's own directory: emptied and owned by the backend. */
  readonly storeDir: string;
  readonly cacheSize: number;
  /** Bound of the cached entries' estimated bytes (default defaultDiskCacheBytes()). */
  readonly cacheBytes?: number;
  /** Checkpoints (not savepoints) write only what changed since the previous one (default false). */
  readonly incremental?: boolean;
  /** Deltas between two full bases (default DEFAULT_MAX_CHAIN_LENGTH). */
  readonly maxChainLength?: number;
  /**
   * Local recovery (disk-local-recovery.ts): the directory is kept when the backend is disposed,
   * and `restoreLocally` rolls the store back instead of a rebuild. Needs `incremental`.
   */
  readonly localRecovery?: boolean;
}

let loadedLmdb: typeof import("lmdb") | undefined;

/**
 * lmdb, loaded when the first disk store opens, never by a job on the heap backend: lmdb's key
 * encoder compiles code from strings when it loads, which a process may forbid
 * (`--disallow-code-generation-from-strings`), and Eddy runs there (test/no-codegen.test.ts).
 * Loaded with require, synchronously: the backend is built where operators open. (In a bundled
 * worker `import.meta.url` names this source file, so lmdb resolves from Eddy's package.)
 */
function lmdb(): typeof import("lmdb") {
  if (loadedLmdb !== undefined) return loadedLmdb;
  try {
    loadedLmdb = createRequire(import.meta.url)("lmdb") as typeof import("lmdb");
  } catch (e) {
    const codegen = e instanceof EvalError ? " (lmdb compiles code from strings as it loads: run without --disallow-code-generation-from-strings, or use the heap state backend)" : "";
    throw new EddyError("STATE_STORE_FAILED", `the disk state backend could not load its store, lmdb: ${describeCause(e)}${codegen}`);
  }
  return loadedLmdb;
}

/** Key tags in store keys (after key group and state id). */
const TAG_NUMBER = 1;
const TAG_STRING = 2;
const TAG_BIGINT = 3;

/** A read view for one snapshot: the store as of then. */
interface StoreView {
  readonly txn: Transaction;
  /**
   * The write batch when the snapshot was taken (newer than the store), by the 4-byte prefix
   * (key group, state id) of its store keys, in latin1: the record, or undefined for a delete.
   */
  readonly pending: ReadonlyMap<string, ReadonlyMap<string, Buffer | undefined>>;
  /** Table captures not released yet: the transaction ends with the last. */
  open: number;
  /** The heap tables' own captures, by table id (an incremental snapshot reads them for its delta). */
  readonly cached: Map<number, TableCapture>;
}

/** Local recovery's part of one snapshot: the `a` records #localKeyGroup gathers, written a batch at a time. */
interface LocalPart {
  readonly checkpointId: number;
  /** The write-back before it was unfinished: every dirty entry is written back at the end instead. */
  readonly fullWriteBack: boolean;
  /** `a` records (disk-local-recovery.ts) gathered and not written yet: store key, record as of the snapshot (undefined: none). */
  readonly at: [Buffer, Buffer | undefined][];
}

interface TableInfo {
  readonly table: StateTable;
  readonly id: number;
  readonly descriptor: StateDescriptorBase;
}

export class DiskKeyedStateBackend extends HeapKeyedStateBackend {
  /** The LMDB environment and its database of state records: opened in the constructor, or (local recovery) by the restore or on first use. */
  #root: RootDatabase<Buffer, Buffer> | undefined;
  #state: Database<Buffer, Buffer> | undefined;
  readonly #dir: string;
  #path: string;
  readonly #local: boolean;
  /** Local recovery's undo logs (disk-local-recovery.ts). */
  #log: UndoLog | undefined;
  /** Local recovery: the write-back after the last snapshot finished, so a snapshot taken now is valid (disk-local-recovery.ts). */
  #writeBackDone = true;
  /** Local recovery: the checkpoint of the last snapshot begun (only its write-back makes the next one valid). */
  #localLatest = -1;

  /** The store may hold records (reads of keys not cached look there). */
  #storeHolds = false;
  /** What the last restore made of the local store (tests, the bench): used or why not, records applied, time taken. */
  localRecovery: LocalRestoreOutcome | undefined;
  readonly #cacheSize: number;
  readonly #cacheBytes: number;
  /** An eviction goes on until at most this many keys are cached (a quarter of the cache out)... */
  readonly #keysAfterEvict: number;
  /**
   * ...and the cached entries' estimate is at most this: a sixteenth of cacheBytes out (16 MiB
   * of the default, ~30 K keys of q18: the pause of the former 100,000-key cache's quarter).
   */
  readonly #bytesAfterEvict: number;
  /** The cached entries' estimated heap bytes: the sum of their `KeyEntry.size`. */
  #bytes = 0;
  readonly #clock: Clock;
  /** Cached keys, least recently used first (a key's entries in every table count once). */
  readonly #lru = new Map<MapKey, number>();
  /**
   * Writes not in the store yet, by store key (latin1): an evicted entry's record, or undefined
   * for a key whose state was removed. Written in one sorted transaction once WRITE_BATCH are
   * pending, and whenever the store alone must be complete (numKeys, keysOf, entries, migration,
   * background cleanup); a snapshot copies it. Reads look here before the store.
   */
  readonly #pending = new Map<string, [Buffer, Buffer | undefined]>();
  readonly #tables: TableInfo[] = [];
  readonly #tablesByName = new Map<string, TableInfo>();
  /** The view `snapshot()` is taking (read by captureTable during super.snapshot()). */
  #view: StoreView | undefined = undefined;
  readonly #writer = new ByteWriter(1024);
  /** The records of one key group being restored (replaced after a key group grew it past RESTORE_WRITER_KEEP). */
  #restoreWriter = new ByteWriter(RESTORE_WRITER_INITIAL);
  #disposed = false;
  #recordsWritten = 0;
  readonly #incremental: boolean;
  /** The key context every table shares (from the first createTable): its changeEpoch marks changes per snapshot. */
  #ctx: KeyContext | undefined = undefined;
  /**
   * Keys whose stored state changed since the previous incremental snapshot while not in the
   * cache (evicted after a change, removed, cleaned up in the store): per table id, per group
   * index, the key by its map identity. Changes of cached keys are found by `KeyEntry.changedAt`.
   */
  #changed: (Map<MapKey, Key> | undefined)[][] = [];
  /** Records made into #changed (an upper bound of its keys). */
  #changedKeys = 0;
  /** Base or delta, and the chain each incremental snapshot extends. */
  readonly #chain: SnapshotChain;
  /** Nothing but restored key groups was ever written to the store, nor cached: a restore may go straight to the store. */
  #storeOnlyRestored = true;
  /** Key groups (indexes) restored straight into the store. */
  readonly #restoredGroups = new Set<number>();

  constructor(options: DiskKeyedStateBackendOptions) {
    super(options);
    const { cacheSize, storeDir } = options;
    if (!Number.isInteger(cacheSize) || cacheSize < 1) {
      throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.cache-size must be a positive integer, got ${String(cacheSize)}`);
    }
    this.#cacheSize = cacheSize;
    const cacheBytes = options.cacheBytes ?? defaultDiskCacheBytes();
    if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 1) {
      throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.cache-bytes must be a positive integer, got ${String(cacheBytes)}`);
    }
    this.#cacheBytes = cacheBytes;
    this.#keysAfterEvict = cacheSize + 1 - Math.max(1, cacheSize >> 2); // from cacheSize + 1: a quarter goes
    this.#bytesAfterEvict = cacheBytes - Math.ceil(cacheBytes / 16);
    this.#clock = options.clock;
    this.#dir = storeDir;
    this.#incremental = options.incremental === true;
    this.#chain = new SnapshotChain(options.maxChainLength ?? DEFAULT_MAX_CHAIN_LENGTH, "state.backend.disk.max-chain-length");
    this.#local = options.localRecovery === true;
    if (this.#local && !this.#incremental) {
      throw new EddyError("INVALID_STATE_BACKEND", "state.backend.disk.local-recovery needs incremental checkpoints (state.backend.disk.incremental: true)");
    }
    this.#path = "";
    // Local recovery: the directory is left as it is until a restore looks at it, or first use.
    if (!this.#local) this.#openFresh();
  }

  /** The database of state records, opened (fresh) on first use. */
  get #db(): Database<Buffer, Buffer> {
    return this.#state ?? this.#openFresh();
  }

  /**
   * Empties the directory and opens a new store in it. Without local recovery the store is never
   * trusted across runs: what a previous run left (possibly damaged) goes; a restore rebuilds it.
   */
  #openFresh(): Database<Buffer, Buffer> {
    const dir = this.#dir;
    try {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      // A file name of its own, as a precaution: lmdb shares an environment among every opener of
      // one path in the process (worker threads included), and a restarted subtask must never get
      // its failed predecessor's, should it still be open.
      this.#path = join(dir, `store-${randomUUID()}.mdb`);
      const root = this.#openEnv();
      this.#root = root;
      this.#state = root.openDB<Buffer, Buffer>({ name: "state", keyEncoding: "binary", encoding: "binary" });
      if (this.#local) this.#log = UndoLog.create(dir, this.#state, [this.keyGroupRange.start, this.keyGroupRange.end], this.#stateNames());
    } catch (e) {
      throw storeFailed(dir, "open", e);
    }
    return this.#state;
  }

  #openEnv(): RootDatabase<Buffer, Buffer> {
    return lmdb().open<Buffer, Buffer>({ path: this.#path, keyEncoding: "binary", encoding: "binary", noSync: true, noMemInit: true, maxDbs: 4 });
  }

  /**
   * Local recovery: rolls the store this subtask's directory holds back to checkpoint
   * `checkpointId` (whose checkpoint lists `chain` and `states` for the subtask); or, when the
   * store cannot be used for it (none, another lineage, another boot, marked failed, no complete
   * and valid snapshot of the checkpoint, other states: disk-local-recovery.ts), opens a fresh
   * store (the caller restores from the checkpoint's files). Returns (and keeps in
   * `localRecovery`) which and why; undefined without local recovery. Before anything else.
   */
  restoreLocally(checkpointId: number, chain: readonly SharedFileRef[], states: readonly KeyedStateMeta[]): LocalRestoreOutcome | undefined {
    if (!this.#local) return undefined;
    if (this.#state !== undefined || this.#tables.length > 0) throw new EddyError("INTERNAL", "restoreLocally after the backend was used");
    const started = performance.now();
    const outcome = this.#rollBack(checkpointId, chain, states);
    const ms = performance.now() - started;
    if (typeof outcome === "string") {
      this.localRecovery = { used: false, reason: `the local store in ${this.#dir} is not used: ${outcome}`, ms };
      this.#openFresh();
      return this.localRecovery;
    }
    this.localRecovery = { used: true, read: outcome.read, records: outcome.written, ms };
    this.#chain.restart();
    this.#storeOnlyRestored = false;
    this.#storeHolds = true;
    return this.localRecovery;
  }

  /** The records read and written rolling the store back to `checkpointId`, or why it cannot be. */
  #rollBack(checkpointId: number, chain: readonly SharedFileRef[], states: readonly KeyedStateMeta[]): { read: number; written: number } | string {
    let names: string[];
    try {
      names = readdirSync(this.#dir);
    } catch {
      return "there is none";
    }
    if (names.includes(UNTRUSTED)) return `its last run marked it failed (${readMarker(this.#dir)})`;
    const stores = names.filter((n) => /^store-[0-9a-f-]+\.mdb$/.test(n));
    if (stores.length !== 1) return stores.length === 0 ? "there is none" : "there are several";
    this.#path = join(this.#dir, stores[0]!);
    let root: RootDatabase<Buffer, Buffer> | undefined;
    try {
      root = this.#openEnv();
      const state = root.openDB<Buffer, Buffer>({ name: "state", keyEncoding: "binary", encoding: "binary" });
      const opened = UndoLog.open(this.#dir, state, [this.keyGroupRange.start, this.keyGroupRange.end]);
      let why = typeof opened === "string" ? opened : undefined;
      const log = typeof opened === "string" ? undefined : opened;
      why ??= log!.whyNot(checkpointId, chain);
      // The checkpoint's states are the first the store numbered (those registered later had no state then).
      const given = new Map(states.map((s) => [s.name, s]));
      if (why === undefined && (states.length > log!.states.length || log!.states.slice(0, states.length).some((name) => !given.has(name)))) {
        why = `it numbered other states (${log!.states.join(", ")}) than the checkpoint has (${states.map((s) => s.name).join(", ")})`;
      }
      if (why !== undefined) {
        root.close() as unknown;
        return why;
      }
      const records = log!.rollBack(checkpointId);
      this.#root = root;
      this.#state = state;
      // Registered in the store's order: a state's id is part of its store keys.
      for (const name of log!.states.slice(0, states.length)) this.tableForRestore(given.get(name)!);
      log!.setStates(this.#stateNames());
      this.#log = log;
      return records;
    } catch (e) {
      try {
        root?.close() as unknown;
      } catch {
        // the store is dropped anyway
      }
      return `it could not be read (${describeCause(e)})`;
    }
  }

  /** Checkpoint `checkpointId` completed: local recovery no longer needs what came before it. */
  notifyCheckpointComplete(checkpointId: number): void {
    if (this.#disposed || this.#log === undefined) return;
    try {
      this.#log.completed(checkpointId);
    } catch (e) {
      throw writeFailed(this.#dir, e);
    }
  }

  /** The states by id. */
  #stateNames(): string[] {
    return this.#tables.map((t) => t.descriptor.name);
  }

  /** The store's directory (tests). */
  get storeDir(): string {
    return this.#dir;
  }

  /** The store's file (tests). */
  get storePath(): string {
    return this.#path;
  }

  /** Records written to the store (puts and deletes) since the backend opened (tests, metrics). */
  get storeWrites(): number {
    return this.#recordsWritten;
  }

  /** Keys on the heap now (tests, metrics). */
  /** Whether `key` is in the cache (tests). */
  isCached(key: Key): boolean {
    return this.#lru.has(mapKeyOf(key));
  }

  get cachedKeys(): number {
    return this.#lru.size;
  }

  /** Estimated heap bytes of the cached entries (tests, metrics). */
  get cachedBytes(): number {
    return this.#bytes;
  }

  override setCurrentKey(key: Key, keyGroup: number): void {
    // hot path
    super.setCurrentKey(key, keyGroup);
    this.#touch(this.currentMapKey, keyGroup);
  }

  override getVoidValueCursor<T>(descriptor: ValueStateDescriptor<T>): VoidValueCursor<T> {
    super.getVoidValueCursor(descriptor); // checks and registers
    return new CachingCursor<T>(this.#tablesByName.get(descriptor.name)!.table, this.keyGroupRange, (key, keyGroup) => this.#touch(mapKeyOf(key), keyGroup));
  }

  /** `mapKey` (of `keyGroup`) was used now: referenced (see the file comment); evicts when the cache is full. */
  #touch(mapKey: MapKey, keyGroup: number): void {
    // hot path
    const lru = this.#lru;
    const v = lru.get(mapKey);
    if (v === undefined) {
      lru.set(mapKey, keyGroup - this.keyGroupRange.start);
      if (lru.size > this.#cacheSize || this.#bytes > this.#cacheBytes) this.#evict(mapKey);
    } else {
      if (v < REFERENCED) lru.set(mapKey, v + REFERENCED);
      // A write may have grown the cache past its bytes since (a list appended to).
      if (this.#bytes > this.#cacheBytes) this.#evict(mapKey);
    }
  }

  protected override createTable(descriptor: StateDescriptorBase, ctx: KeyContext, clock: Clock): StateTable {
    const id = this.#tables.length;
    if (id > 0xffff) throw new EddyError("INVALID_STATE_BACKEND", "the disk state backend holds at most 65,536 states per operator");
    this.#ctx ??= ctx;
    // Local recovery opens the store late (a restore may reuse it); a first state means processing is near: not in a snapshot's synchronous part.
    if (this.#state === undefined) this.#openFresh();
    const table = new StateTable(descriptor.name, descriptor.kind, descriptor.ttl, this.keyGroupRange, ctx, clock, descriptor.copy, this.#sourceFor(id));
    const info = { table, id, descriptor };
    this.#tables.push(info);
    this.#tablesByName.set(descriptor.name, info);
    if (this.#log !== undefined) {
      try {
        this.#log.setStates(this.#stateNames());
      } catch (e) {
        throw writeFailed(this.#dir, e);
      }
    }
    return table;
  }

  #sourceFor(id: number): TableSource {
    return {
      load: (mapKey, kgIndex, version, insert) => {
        const storeKey = this.#storeKey(kgIndex, id, mapKey);
        let bytes: Buffer | undefined;
        const pending = this.#pending.size > 0 ? this.#pending.get(storeKey.toString("latin1")) : undefined;
        if (pending !== undefined) bytes = pending[1];
        // Nothing written to the store yet (it starts empty unless recovered locally): no lookup.
        else if (this.#storeHolds) {
          try {
            bytes = this.#db.getBinary(storeKey);
          } catch (e) {
            throw storeFailed(this.#dir, "read", e);
          }
        }
        if (bytes === undefined) return undefined;
        const entry = decodeEntry(bytes, mapKey, version, this.#dir);
        entry.dirty = false; // what the store (or the write batch) holds: nothing to write back
        entry.changedAt = LOADED; // unchanged since the last snapshot that saw it
        if (insert) {
          entry.size = loadedSize(entry);
          this.#bytes += entry.size;
          if (!this.#lru.has(mapKey)) this.#lru.set(mapKey, kgIndex);
        }
        return entry;
      },
      created: (entry, kgIndex) => {
        this.#storeOnlyRestored = false;
        entry.fresh = true; // (KeyEntry.fresh)
        entry.size = ENTRY_BYTES + sizeOf(entry.key);
        this.#bytes += entry.size;
        if (!this.#lru.has(entry.mapKey)) this.#lru.set(entry.mapKey, kgIndex);
      },
      // A pending delete (unless nothing was ever written for the key); should the key come back,
      // its eviction replaces it by a put.
      removed: (entry, kgIndex) => {
        const { key, mapKey } = entry;
        this.#bytes -= entry.size;
        if (!entry.fresh) this.#stage(this.#storeKey(kgIndex, id, mapKey), undefined);
        // A key created since the previous snapshot (and cached since) is in no snapshot.
        if (entry.changedAt !== bornIn(this.#ctx!.changeEpoch)) this.#recordChange(id, kgIndex, key, mapKey);
      },
      resized: (delta) => {
        this.#bytes += delta;
      },
      migrate: (step) => {
        this.#chain.restart(); // every stored value changes
        this.#migrateStored(id, step);
      },
    };
  }

  /** u16 key group (big-endian) · u16 state id · tag · key bytes. */
  #storeKey(kgIndex: number, id: number, mapKey: MapKey): Buffer {
    const kg = kgIndex + this.keyGroupRange.start;
    let out: Buffer;
    if (typeof mapKey === "number") {
      out = Buffer.allocUnsafe(13);
      out.writeUInt8(TAG_NUMBER, 4);
      out.writeDoubleBE(mapKey === 0 ? 0 : mapKey, 5);
    } else {
      const text = typeof mapKey === "string" ? mapKey : mapKey.toString();
      const n = Buffer.byteLength(text, "utf8");
      out = Buffer.allocUnsafe(5 + n);
      out.writeUInt8(typeof mapKey === "string" ? TAG_STRING : TAG_BIGINT, 4);
      out.write(text, 5, "utf8");
    }
    out.writeUInt16BE(kg, 0);
    out.writeUInt16BE(id, 2);
    return out;
  }

  /** Bounds of (key group, state) in the store: [start, end). */
  #range(kg: number, id: number): { start: Buffer; end: Buffer } {
    const start = Buffer.alloc(4);
    start.writeUInt16BE(kg, 0);
    start.writeUInt16BE(id, 2);
    const end = Buffer.alloc(4);
    if (id === 0xffff) end.writeUInt16BE(kg + 1, 0);
    else {
      end.writeUInt16BE(kg, 0);
      end.writeUInt16BE(id + 1, 2);
    }
    return { start, end };
  }

  /**
   * Evicts keys not referenced since the last pass (never `keep`, the key being used) into the
   * write batch until the cache is a quarter of its key bound and a sixteenth of its byte bound
   * under them (#keysAfterEvict, #bytesAfterEvict), and writes the batch once full. Referenced
   * keys met on the way get a second chance: their bit
   * is cleared and they move to the end, where the same pass meets them again (a Map iterator
   * visits what is added while it runs), so a pass ends at the latest once every key but `keep`
   * is evicted.
   */
  #evict(keep: MapKey | undefined): void {
    const lru = this.#lru;
    const keys = this.#keysAfterEvict;
    const bytes = this.#bytesAfterEvict;
    for (const [mapKey, v] of lru) {
      if (lru.size <= keys && this.#bytes <= bytes) break;
      if (mapKey === keep) continue;
      lru.delete(mapKey);
      if (v >= REFERENCED) lru.set(mapKey, v - REFERENCED);
      else this.#evictKey(mapKey, v);
    }
    if (this.#pending.size >= WRITE_BATCH) this.#write([]);
  }

  /** Takes `mapKey`'s entries out of every table, staging the changed ones for the store. */
  #evictKey(mapKey: MapKey, kgIndex: number): void {
    for (const { table, id } of this.#tables) {
      const entry = table.evict(mapKey, kgIndex);
      if (entry === undefined) continue;
      this.#bytes -= entry.size;
      // An entry only read is what the store (or the write batch) already holds.
      if (entry.dirty) this.#stage(this.#storeKey(kgIndex, id, mapKey), this.#encode(entry));
      // Changed since the last incremental snapshot (which saw it cached otherwise): the next one reads it from the store.
      if (this.#incremental && changeEpochOf(entry.changedAt) >= this.#ctx!.changeEpoch) this.#recordChange(id, kgIndex, entry.key, mapKey);
    }
  }

  /**
   * Key `key` of state `id` changed outside the cache: the next incremental snapshot writes it.
   * Nothing is recorded while the next snapshot is a base anyway (before the first, after a
   * restore or a failure): a job without checkpoints never grows this.
   */
  #recordChange(id: number, kgIndex: number, key: Key, mapKey: MapKey): void {
    if (!this.#incremental || this.#chain.needsBase) return;
    const groups = (this.#changed[id] ??= []);
    (groups[kgIndex] ??= new Map()).set(mapKey, key);
    this.#changedKeys++;
  }

  /** Keys recorded as changed outside the cache since the last incremental snapshot (tests, metrics). */
  get changedKeysOutsideCache(): number {
    return this.#changedKeys;
  }

  /** A write for the next batch (undefined: delete the key). */
  #stage(storeKey: Buffer, value: Buffer | undefined): void {
    this.#storeOnlyRestored = false;
    this.#storeHolds = true;
    this.#pending.set(storeKey.toString("latin1"), [storeKey, value]);
  }

  /** Writes the pending writes and `puts` (which win), sorted by key, in one transaction. */
  #write(puts: [Buffer, Buffer][]): void {
    for (const [key, value] of puts) this.#stage(key, value);
    if (this.#pending.size === 0) return;
    // Sorted by the latin1 names: one char per byte, so their order is the store keys' byte order,
    // and V8 sorts strings without a call out per comparison (Buffer.compare was a tenth of q18's time).
    const pending = this.#pending;
    const names = [...pending.keys()].sort();
    const writes = names.map((name) => pending.get(name)!);
    pending.clear();
    const db = this.#db;
    const log = this.#log?.recording === true ? this.#log : undefined;
    try {
      db.transactionSync(() => {
        for (const [key, value] of writes) {
          log?.before(key);
          if (value === undefined) db.removeSync(key);
          else db.putSync(key, value);
        }
        log?.flushBefore(); // before the commit: a write never lands without its before-image
      });
      this.#recordsWritten += writes.length;
    } catch (e) {
      throw writeFailed(this.#dir, e);
    }
  }

  /** Writes every cached entry back (they stay cached) and the write batch: the store alone is then complete. */
  #flush(): void {
    const puts: [Buffer, Buffer][] = [];
    for (const { table, id } of this.#tables) {
      for (const [mapKey, kgIndex] of table.heldKeys()) {
        const entry = table.peekHeld(mapKey, kgIndex)!;
        if (!entry.dirty) continue; // (a fresh entry is dirty)
        puts.push([this.#storeKey(kgIndex, id, mapKey), this.#encode(entry)]);
        entry.dirty = false;
        entry.fresh = false;
      }
    }
    this.#write(puts);
  }

  #encode(entry: KeyEntry): Buffer {
    const out = this.#writer;
    out.reset();
    encodeEntry(entry, out);
    // A copy: the writer is reused, and a batch holds many records until it is written.
    return Buffer.from(out.written());
  }

  /** Applies `step` to every cell of state `id` stored for keys the cache does not hold, in batches. */
  #migrateStored(id: number, step: (cell: Cell) => void): void {
    this.#write([]); // the store alone then holds every evicted entry
    const info = this.#tables[id]!;
    const { start, end } = this.keyGroupRange;
    for (let kg = start; kg <= end; kg++) {
      const range = this.#range(kg, id);
      const puts: [Buffer, Buffer][] = [];
      for (const { key, value } of this.#db.getRange({ start: range.start, end: range.end })) {
        const entry = decodeEntry(Buffer.from(value), undefined, 0, this.#dir);
        if (info.table.holds(entry.mapKey, kg - start)) continue;
        if (entry.hasVoid) step(entry);
        if (entry.nsCells !== undefined) for (const cell of entry.nsCells.values()) step(cell);
        puts.push([Buffer.from(key), this.#encode(entry)]);
      }
      this.#write(puts);
    }
  }

  /** Store records of state `id` in key group `kg` (in `txn`, or the store as it is now), decoded. */
  *#stored(kg: number, id: number, txn?: Transaction): Generator<KeyEntry> {
    for (const { entry } of this.#storedWithKeys(kg, id, txn)) yield entry;
  }

  /** As #stored, with each record's store key. */
  *#storedWithKeys(kg: number, id: number, txn?: Transaction): Generator<{ key: Buffer; entry: KeyEntry }> {
    const range = this.#range(kg, id);
    let it: Iterable<{ key: Buffer; value: Buffer }>;
    try {
      it = this.#db.getRange({ start: range.start, end: range.end, ...(txn === undefined ? {} : { transaction: txn }) });
    } catch (e) {
      throw storeFailed(this.#dir, "read", e);
    }
    for (const { key, value } of it) yield { key, entry: decodeEntry(Buffer.from(value), undefined, 0, this.#dir) };
  }

  /**
   * The synchronous part of a checkpoint: an LMDB read transaction, the write batch (at most
   * WRITE_BATCH writes, grouped by key group and state), and the heap tables' captures (see the
   * file comment). The transaction ends when every table's capture is released (the snapshot's
   * release()).
   */
  override snapshot(options?: KeyedSnapshotOptions): HeapKeyedStateSnapshot {
    // Local recovery: writes from now on record their before-images for this snapshot.
    const incremental = this.#incremental && options?.incremental === true;
    const localId = incremental && this.#local ? options?.checkpointId : undefined;
    const valid = this.#writeBackDone;
    if (localId !== undefined) {
      this.#writeBackDone = false;
      this.#localLatest = localId;
      try {
        if (this.#state === undefined) this.#openFresh(); // no state registered yet: an empty store
        this.#log!.begin(localId, valid);
      } catch (e) {
        throw writeFailed(this.#dir, e);
      }
    }
    const pending = new Map<string, Map<string, Buffer | undefined>>();
    for (const [name, [, value]] of this.#pending) {
      const prefix = name.slice(0, 4);
      let group = pending.get(prefix);
      if (group === undefined) pending.set(prefix, (group = new Map()));
      group.set(name, value);
    }
    let txn: Transaction;
    try {
      txn = this.#db.useReadTransaction();
    } catch (e) {
      throw storeFailed(this.#dir, "read", e);
    }
    const view: StoreView = { txn, pending, open: this.#tables.length, cached: new Map() };
    if (view.open === 0) txn.done();
    this.#view = view;
    try {
      const snapshot = super.snapshot();
      if (incremental) snapshot.shared = this.#sharedPart(snapshot, view, localId === undefined ? undefined : { checkpointId: localId, fullWriteBack: !valid, at: [] });
      return snapshot;
    } catch (e) {
      if (view.open > 0) txn.done();
      throw e;
    } finally {
      this.#view = undefined;
    }
  }

  protected override captureTable(table: StateTable): TableCapture {
    const cached = table.capture();
    const view = this.#view!;
    const info = this.#tables.find((t) => t.table === table)!;
    view.cached.set(info.id, cached);
    const start = this.keyGroupRange.start;
    const given = new Set<number>();
    let released = false;
    const storedOf = (index: number): Generator<{ key: Buffer; entry: KeyEntry }> => this.#storedWithKeys(index + start, info.id, view.txn);
    const pendingOf = (index: number): ReadonlyMap<string, Buffer | undefined> | undefined =>
      view.pending.size === 0 ? undefined : view.pending.get(this.#range(index + start, info.id).start.toString("latin1"));
    return {
      size: (index) => {
        if (given.has(index)) return 0;
        const n = cached.size(index);
        if (n > 0) return n;
        const pending = pendingOf(index);
        if (pending !== undefined) for (const value of pending.values()) if (value !== undefined) return 1;
        for (const _ of storedOf(index)) return 1;
        return 0;
      },
      forEachCell: (index, visit) => {
        if (given.has(index)) return;
        // Newest first: the cached entries, then the write batch, then the store.
        const seen = new Set<MapKey>();
        cached.forEachCell(index, (key, ns, value, expiresAt, expiry) => {
          seen.add(mapKeyOf(key));
          visit(key, ns, value, expiresAt, expiry);
        });
        const pending = pendingOf(index);
        if (pending !== undefined) {
          for (const value of pending.values()) {
            if (value === undefined) continue;
            const entry = decodeEntry(value, undefined, 0, this.#dir);
            if (!seen.has(entry.mapKey)) visitStored(entry, visit);
          }
        }
        for (const { key, entry } of storedOf(index)) {
          if (seen.has(entry.mapKey) || pending?.has(key.toString("latin1")) === true) continue;
          visitStored(entry, visit);
        }
      },
      releaseGroup: (index) => {
        given.add(index);
        cached.releaseGroup(index);
      },
      release: () => {
        if (released) return;
        released = true;
        cached.release();
        if (--view.open === 0) view.txn.done();
      },
    };
  }

  /**
   * The incremental part of a snapshot (synchronous: O(1) besides the captures already taken). A
   * base when the chain must restart (first snapshot, after a restore or a migration, after a
   * failed snapshot, or `maxChainLength` deltas since the last base): every key group as the
   * canonical snapshot writes it. Otherwise a delta: per key group and state, the keys changed
   * since the previous snapshot — cached entries whose `changedAt` is this snapshot's epoch or
   * later (a later change shows its value as of the snapshot: the capture's), and the keys
   * recorded in `#changed` as changed outside the cache, read from the capture, the write batch
   * or the store as of the snapshot (absent: removed).
   */
  #sharedPart(snapshot: HeapKeyedStateSnapshot, view: StoreView, local: LocalPart | undefined): SharedKeyedSnapshot {
    const ctx = this.#ctx;
    const epoch = ctx?.changeEpoch ?? 0;
    if (ctx !== undefined) ctx.changeEpoch++;
    const changed = this.#changed;
    this.#changed = [];
    this.#changedKeys = 0;
    let localGroups = 0;
    const { base, previous, settle } = this.#chain.begin(snapshot, (chain) => {
      if (local !== undefined && !this.#disposed) this.#settleLocal(local, chain, localGroups === this.keyGroupRange.end - this.keyGroupRange.start + 1);
      if (chain === undefined) {
        // What this one recorded is lost: the next is a base (and nothing is recorded until then).
        this.#changed = [];
        this.#changedKeys = 0;
      }
    });
    const now = this.#clock.now();
    const writeGroup = base
      ? (kg: number, out: ByteWriter): boolean => writeBaseKeyGroup(snapshot, kg, out)
      : (kg: number, out: ByteWriter): boolean => this.#writeDelta(kg, out, view, snapshot, changed, epoch, now);
    const writeKeyGroup =
      local === undefined
        ? writeGroup
        : (kg: number, out: ByteWriter): boolean => {
            const wrote = writeGroup(kg, out);
            this.#localKeyGroup(kg, view, epoch, local);
            localGroups++;
            return wrote;
          };
    return { kind: base ? "base" : "delta", previous, writeKeyGroup, settle };
  }

  /**
   * Local recovery, key group `kg` of snapshot `checkpointId` (before the group is released): its
   * `a` set — the write batch as of the snapshot, then the cached entries changed since the
   * previous snapshot (`changedAt` ≥ `epoch`), as of the snapshot (cached entries win over the
   * batch, as in the snapshot) — and the write-back of those entries not changed since the
   * snapshot (`changedAt` ≤ `epoch`) that are still dirty, unless the whole cache is written back
   * at the end (`fullWriteBack`). disk-local-recovery.ts says why.
   */
  #localKeyGroup(kg: number, view: StoreView, epoch: number, local: LocalPart): void {
    const index = kg - this.keyGroupRange.start;
    const { at: records, fullWriteBack } = local;
    if (view.pending.size > 0) {
      for (const { id } of this.#tables) {
        const batch = view.pending.get(this.#range(kg, id).start.toString("latin1"));
        if (batch !== undefined) for (const [name, value] of batch) records.push([Buffer.from(name, "latin1"), value]);
      }
    }
    const out = this.#writer;
    for (const [id, cached] of view.cached) {
      const table = this.#tables[id]!.table;
      let entry: KeyEntry | undefined;
      let voidCell: Cell | undefined;
      let nsCells: Map<Namespace, Cell> | undefined;
      const finish = (): void => {
        if (entry === undefined) return;
        const storeKey = this.#storeKey(index, id, entry.mapKey);
        if (voidCell === undefined && nsCells === undefined) records.push([storeKey, undefined]);
        else {
          out.reset();
          encodeRecord(entry.key, voidCell, nsCells, out);
          records.push([storeKey, Buffer.from(out.written())]);
        }
        entry = voidCell = nsCells = undefined;
      };
      cached.forEachCell(
        index,
        (_key, ns, value, expiresAt, expiry) => {
          const cell = new Cell(value, expiresAt, expiry);
          if (ns === VOID_NAMESPACE) voidCell = cell;
          else (nsCells ??= new Map()).set(ns, cell);
        },
        (e) => {
          if (changeEpochOf(e.changedAt) < epoch) return false;
          finish();
          const live = table.peekHeld(e.mapKey, index);
          // An entry loaded from the store (LOADED) is not known unchanged since the snapshot: the
          // captured entry may have been changed after it and evicted, so the store holds a later
          // record. The captured cells say the snapshot's (a key written after the snapshot shows
          // a later `changedAt` even in the capture, which shares the entry: it is then in the
          // `a` set with its snapshot record, redundant but right).
          if (live !== undefined && live.changedAt !== LOADED && changeEpochOf(live.changedAt) <= epoch) {
            // Unchanged since the snapshot: its record is the live entry's (encoded once, for the
            // `a` log and, if dirty, the write-back), and its captured cells need not be read.
            const storeKey = this.#storeKey(index, id, e.mapKey);
            const record = this.#encode(live);
            records.push([storeKey, record]);
            if (!fullWriteBack && live.dirty) {
              this.#stage(storeKey, record);
              live.dirty = false;
              live.fresh = false;
            }
            return false;
          }
          entry = e;
          return true;
        },
      );
      finish();
    }
    if (records.length >= WRITE_BATCH) this.#writeLocal(local);
    if (this.#pending.size >= WRITE_BATCH) this.#write([]);
  }

  /** Local recovery: writes the `a` records #localKeyGroup gathered (one transaction). */
  #writeLocal(local: LocalPart): void {
    try {
      this.#log!.writeAt(local.checkpointId, local.at);
    } catch (e) {
      throw writeFailed(this.#dir, e);
    } finally {
      local.at.length = 0;
    }
  }

  /**
   * Local recovery: snapshot `checkpointId`'s file is written (`chain`) or failed (undefined).
   * Written: the write-back ends (the write batch, or every dirty entry after an invalid
   * snapshot) and the snapshot is recorded complete if every key group's `a` set was written.
   */
  #settleLocal(local: LocalPart, chain: readonly SharedFileRef[] | undefined, allGroups: boolean): void {
    const { checkpointId, fullWriteBack } = local;
    if (chain !== undefined && allGroups) this.#writeLocal(local);
    local.at.length = 0;
    if (chain !== undefined && allGroups) {
      if (fullWriteBack) this.#flush();
      else this.#write([]);
      // A later snapshot begun meanwhile found this write-back unfinished: only its own makes the next valid.
      if (checkpointId === this.#localLatest) this.#writeBackDone = true;
    }
    try {
      this.#log!.settle(checkpointId, chain, chain !== undefined && allGroups);
    } catch (e) {
      throw writeFailed(this.#dir, e);
    }
  }

  /** A delta key group (incremental-snapshot.ts): false when nothing in it changed. */
  #writeDelta(kg: number, out: ByteWriter, view: StoreView, snapshot: HeapKeyedStateSnapshot, changed: (Map<MapKey, Key> | undefined)[][], epoch: number, now: number): boolean {
    const index = kg - this.keyGroupRange.start;
    const changes: StateChanges[] = [];
    for (const [id, cached] of view.cached) {
      const info = this.#tables[id]!;
      const outside = changed[id]?.[index];
      const name = info.descriptor.name;
      const meta = snapshot.states.find((m) => m.name === name)!;
      const keys: Key[] = [];
      const cells = new CellColumns(meta, info.table.ttl?.cleanupFullSnapshot === true ? now : Number.NEGATIVE_INFINITY);
      const seen = new Set<MapKey>();
      cached.forEachCell(index, cells.add, (entry) => {
        if (changeEpochOf(entry.changedAt) < epoch && outside?.has(entry.mapKey) !== true) return false;
        seen.add(entry.mapKey);
        keys.push(entry.key);
        return true;
      });
      if (outside !== undefined) {
        for (const [mapKey, key] of outside) {
          if (seen.has(mapKey)) continue;
          keys.push(key);
          const record = this.#recordAt(view, index, id, mapKey);
          if (record !== undefined) visitStored(decodeEntry(record, mapKey, 0, this.#dir), cells.add);
        }
      }
      if (keys.length > 0) changes.push({ meta, keys, cells });
    }
    return writeDeltaKeyGroup(changes, out);
  }

  /** The record of a key as of a snapshot: its write batch (a delete: undefined), else its store transaction. */
  #recordAt(view: StoreView, index: number, id: number, mapKey: MapKey): Buffer | undefined {
    const storeKey = this.#storeKey(index, id, mapKey);
    const name = storeKey.toString("latin1");
    const pending = view.pending.get(name.slice(0, 4));
    if (pending?.has(name) === true) return pending.get(name);
    try {
      return this.#db.get(storeKey, { transaction: view.txn });
    } catch (e) {
      throw storeFailed(this.#dir, "read", e);
    }
  }

  /**
   * A restore straight into the store while the store holds only what earlier restores put there
   * (a fresh backend: every start rebuilds the store): the cells of each key are encoded into
   * its record as they come (into one buffer per key group: no object per key outlives its
   * record), and the records are written from views of that buffer in one transaction per key
   * group sorted by store key (key groups come in ascending order, so LMDB appends), bypassing
   * the cache, which starts empty. Otherwise (a key group given twice, state already created) the heap backend's restore
   * into the cache, then evictions down to the cache size.
   */
  override restoreKeyGroupCells(keyGroup: number, cells: KeyGroupCells, states: readonly KeyedStateMeta[]): void {
    this.#chain.restart(); // the first incremental snapshot after a restore is a base
    const kgIndex = this.checkRestoredKeyGroup(keyGroup);
    if (!this.#storeOnlyRestored || this.#restoredGroups.has(kgIndex)) {
      this.#storeOnlyRestored = false;
      super.restoreKeyGroupCells(keyGroup, cells, states);
      if (this.#lru.size > this.#cacheSize || this.#bytes > this.#cacheBytes) this.#evict(undefined);
      return;
    }
    this.#restoredGroups.add(kgIndex);
    // Each key's record is encoded (store key, then value) into one buffer as soon as a cell of
    // another key comes: a key's cells come one after another (a chain gives each key's cells
    // from one file, where they are written key by key), so decoded values do not outlive their
    // record. A key whose cells were not together is merged below.
    const out = this.#restoreWriter;
    out.reset();
    const starts: number[] = [];
    const valuesAt: number[] = [];
    const ends: number[] = [];
    const names: string[] = [];
    const mapKeys: MapKey[] = [];
    let sorted = true;
    let lastMeta: KeyedStateMeta | undefined;
    let id = -1;
    let key: Key | undefined;
    let mapKey: MapKey = 0;
    let voidCell: Cell | undefined;
    let nsCells: Map<Namespace, Cell> | undefined;
    let recordId = -1;
    const flush = (): void => {
      const storeKey = this.#storeKey(kgIndex, recordId, mapKey);
      starts.push(out.length);
      out.bytes(storeKey);
      valuesAt.push(out.length);
      encodeRecord(key!, voidCell, nsCells, out);
      ends.push(out.length);
      const name = storeKey.toString("latin1");
      if (sorted && names.length > 0 && name <= names[names.length - 1]!) sorted = false;
      names.push(name);
      mapKeys.push(mapKey);
      voidCell = undefined;
      nsCells = undefined;
    };
    cells((meta, restored) => {
      if (meta !== lastMeta) {
        this.tableForRestore(meta);
        id = this.#tablesByName.get(meta.name)!.id;
        lastMeta = meta;
      }
      const cellKey = mapKeyOf(restored.key);
      if (key === undefined || cellKey !== mapKey || id !== recordId) {
        if (key !== undefined) flush();
        key = restored.key;
        mapKey = cellKey;
        recordId = id;
      }
      if (restored.namespace === VOID_NAMESPACE) voidCell = restored.cell;
      else (nsCells ??= new Map()).set(restored.namespace, restored.cell);
    });
    if (key !== undefined) flush();
    const order = sorted ? identity(names.length) : this.#restoreOrder(names, mapKeys, starts, valuesAt, ends, out);
    const written = out.written();
    const records = Buffer.from(written.buffer, written.byteOffset, written.byteLength);
    try {
      this.#db.transactionSync(() => {
        for (let j = 0; j < order.length; j++) {
          const i = order[j]!;
          this.#db.putSync(records.subarray(starts[i]!, valuesAt[i]!), records.subarray(valuesAt[i]!, ends[i]!));
        }
      });
      this.#recordsWritten += order.length;
      this.#storeHolds ||= order.length > 0;
    } catch (e) {
      throw writeFailed(this.#dir, e);
    } finally {
      if (out.length > RESTORE_WRITER_KEEP) this.#restoreWriter = new ByteWriter(RESTORE_WRITER_INITIAL);
    }
  }

  /**
   * The order of a restored key group's records by store key (latin1 names: one char per byte, so
   * their order is the keys' byte order; V8 sorts strings natively, where a comparison function
   * called per pair was a tenth of q18's time in #write). Each name gets its record's index after
   * a NUL (three chars): that keeps the order, since a name is a prefix of another only if a
   * string key holds a NUL (then a map finds the indexes instead). Records of one store key (a
   * key whose cells did not come together) are decoded, merged into one record appended to `out`
   * and that one is written.
   */
  #restoreOrder(names: string[], mapKeys: MapKey[], starts: number[], valuesAt: number[], ends: number[], out: ByteWriter): number[] {
    const n = names.length;
    let suffixed = n < 1 << 24;
    for (let i = 0; suffixed && i < n; i++) if (typeof mapKeys[i] !== "number" && names[i]!.includes("\0", 5)) suffixed = false;
    // Per distinct store key in order: its records' indexes.
    const groups: (number | number[])[] = [];
    if (suffixed) {
      const tagged = names.map((name, i) => `${name}\0${String.fromCharCode(i >>> 16, (i >>> 8) & 0xff, i & 0xff)}`);
      tagged.sort();
      for (let j = 0; j < n; j++) {
        const name = tagged[j]!;
        const at = name.length - 3;
        const i = (name.charCodeAt(at) << 16) | (name.charCodeAt(at + 1) << 8) | name.charCodeAt(at + 2);
        if (j > 0 && names[i] === names[indexOf(groups[groups.length - 1]!)]) push(groups, i);
        else groups.push(i);
      }
    } else {
      const byName = new Map<string, number | number[]>();
      for (let i = 0; i < n; i++) {
        const had = byName.get(names[i]!);
        if (had === undefined) byName.set(names[i]!, i);
        else if (typeof had === "number") byName.set(names[i]!, [had, i]);
        else had.push(i);
      }
      for (const name of [...byName.keys()].sort()) groups.push(byName.get(name)!);
    }
    return groups.map((group) => (typeof group === "number" ? group : this.#mergeRecords(group, mapKeys, starts, valuesAt, ends, out)));
  }

  /** Merges the records `indexes` (one store key) into one appended to `out`; returns its index. */
  #mergeRecords(indexes: readonly number[], mapKeys: MapKey[], starts: number[], valuesAt: number[], ends: number[], out: ByteWriter): number {
    const written = out.written();
    const bytes = Buffer.from(written.buffer, written.byteOffset, written.byteLength);
    const first = indexes[0]!;
    const storeKey = Buffer.from(bytes.subarray(starts[first]!, valuesAt[first]!));
    let merged: KeyEntry | undefined;
    for (const i of indexes) {
      const entry = decodeEntry(bytes.subarray(valuesAt[i]!, ends[i]!), mapKeys[i]!, 0, this.#dir);
      if (merged === undefined) merged = entry;
      else {
        if (entry.hasVoid) {
          merged.setVoid(entry.value);
          merged.expiresAt = entry.expiresAt;
          merged.expiry = entry.expiry;
        }
        if (entry.nsCells !== undefined) for (const [ns, cell] of entry.nsCells) (merged.nsCells ??= new Map()).set(ns, cell);
      }
    }
    starts.push(out.length);
    out.bytes(storeKey);
    valuesAt.push(out.length);
    encodeEntry(merged!, out);
    ends.push(out.length);
    return starts.length - 1;
  }

  override numKeys(stateName: string): number {
    super.numKeys(stateName); // unknown names are refused as by the heap backend
    const { id } = this.#tablesByName.get(stateName)!;
    this.#flush();
    let n = 0;
    for (let kg = this.keyGroupRange.start; kg <= this.keyGroupRange.end; kg++) {
      const range = this.#range(kg, id);
      for (const _ of this.#db.getKeys({ start: range.start, end: range.end })) n++;
    }
    return n;
  }

  override keysOf(stateName: string, namespace: Namespace = VOID_NAMESPACE): { readonly key: Key; readonly keyGroup: number }[] {
    super.numKeys(stateName);
    const { id, table } = this.#tablesByName.get(stateName)!;
    const descriptor = this.descriptorOf(stateName);
    this.#flush();
    const now = descriptor.ttl === undefined ? 0 : this.#clock.now();
    const out: { key: Key; keyGroup: number }[] = [];
    for (let kg = this.keyGroupRange.start; kg <= this.keyGroupRange.end; kg++) {
      for (const entry of this.#stored(kg, id)) {
        const cell = namespace === VOID_NAMESPACE ? entry.voidCell : entry.nsCells?.get(namespace);
        if (cell !== undefined && snapshotCellValue(table.kind, cell, now) !== undefined) out.push({ key: entry.key, keyGroup: kg });
      }
    }
    return out;
  }

  /** Every visible (key, namespace, value) of a state in one key group (as the heap backend's), read from the flushed store. */
  override *entries(stateName: string, keyGroup: number): Generator<KeyedStateEntry, void, undefined> {
    super.numKeys(stateName);
    if (!Number.isInteger(keyGroup) || keyGroup < this.keyGroupRange.start || keyGroup > this.keyGroupRange.end) throw keyGroupOutOfRange(keyGroup, this.keyGroupRange);
    const { id, table } = this.#tablesByName.get(stateName)!;
    this.#flush();
    const now = table.ttl === undefined ? 0 : this.#clock.now();
    for (const entry of [...this.#stored(keyGroup, id)]) {
      for (const [namespace, cell] of entry.hasVoid ? [[VOID_NAMESPACE, entry] as const, ...(entry.nsCells ?? [])] : (entry.nsCells ?? [])) {
        const value = snapshotCellValue(table.kind, cell, now);
        if (value !== undefined) yield { key: entry.key, namespace, value };
      }
    }
  }

  /**
   * Background TTL cleanup: the cached entries as the heap backend cleans them, then every stored
   * entry of the states that ask for it is examined in turn, up to `maxEntries` per state and call
   * (a cursor per state walks the store), and what expired is dropped.
   */
  override cleanupExpired(maxEntries: number): number {
    let removed = super.cleanupExpired(maxEntries);
    const now = this.#clock.now();
    for (const info of this.#tables) {
      const ttl = info.table.ttl;
      if (ttl?.cleanupInBackground !== true) continue;
      removed += this.#cleanupStored(info, maxEntries, now);
    }
    return removed;
  }

  readonly #cleanupCursor = new Map<number, Buffer>();

  #cleanupStored({ table, id }: TableInfo, maxEntries: number, now: number): number {
    this.#write([]); // a pending write is newer than what the store holds
    const { start, end } = this.keyGroupRange;
    const from = this.#cleanupCursor.get(id) ?? this.#range(start, id).start;
    let examined = 0;
    let removed = 0;
    const puts: [Buffer, Buffer][] = [];
    let last: Buffer | undefined;
    const startKg = from.readUInt16BE(0);
    outer: for (let kg = startKg; kg <= end; kg++) {
      const range = this.#range(kg, id);
      const lower = kg === startKg ? from : range.start;
      for (const { key, value } of this.#db.getRange({ start: lower, end: range.end })) {
        if (last !== undefined && Buffer.compare(key, last) === 0) continue;
        if (examined >= maxEntries) break outer;
        examined++;
        last = Buffer.from(key);
        const entry = decodeEntry(Buffer.from(value), undefined, 0, this.#dir);
        if (table.holds(entry.mapKey, kg - start)) continue;
        let dropped = 0;
        if (entry.hasVoid && purgeCell(table.kind, entry, now)) {
          entry.clearVoid();
          dropped++;
        }
        if (entry.nsCells !== undefined) {
          for (const [ns, cell] of entry.nsCells) {
            if (purgeCell(table.kind, cell, now)) {
              entry.nsCells.delete(ns);
              dropped++;
            }
          }
        }
        removed += dropped;
        if (dropped > 0) this.#recordChange(id, kg - start, entry.key, entry.mapKey);
        if (entry.isEmpty()) this.#stage(last, undefined);
        else puts.push([last, this.#encode(entry)]);
      }
    }
    // Resume after the last key examined; past the end, start over next time.
    if (examined < maxEntries || last === undefined) this.#cleanupCursor.delete(id);
    else this.#cleanupCursor.set(id, Buffer.concat([last, Buffer.from([0])]));
    this.#write(puts);
    return removed;
  }

  /** Closes the store; its directory goes too, unless kept for local recovery. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    try {
      this.#log?.close();
      this.#root?.close() as unknown;
    } finally {
      if (!this.#local) rmSync(this.#dir, { recursive: true, force: true });
    }
  }
}

function encodeCell(cell: Cell, out: ByteWriter): void {
  encodeValue(cell.value, out);
  out.f64(cell.expiresAt);
  const expiry = cell.expiry;
  if (expiry === undefined) out.u8(0);
  else if (Array.isArray(expiry)) {
    out.u8(1);
    out.varuint(expiry.length);
    for (const e of expiry) out.f64(e);
  } else {
    out.u8(2);
    out.varuint(expiry.size);
    for (const [k, e] of expiry) {
      encodeValue(k, out);
      out.f64(e);
    }
  }
}

function decodeCell(input: ByteReader, into: Cell): void {
  into.value = decodeValue(input);
  into.expiresAt = input.f64();
  const tag = input.u8();
  if (tag === 0) into.expiry = undefined;
  else if (tag === 1) {
    const n = input.varuint();
    const exps: number[] = [];
    for (let i = 0; i < n; i++) exps.push(input.f64());
    into.expiry = exps;
  } else if (tag === 2) {
    const n = input.varuint();
    const exps = new Map<unknown, number>();
    for (let i = 0; i < n; i++) exps.set(decodeValue(input), input.f64());
    into.expiry = exps;
  } else throw new Error(`unknown expiry tag ${tag}`);
}

/** A record: key, u8 hasVoid, [VOID cell], varuint n, (namespace, cell) × n. */
function encodeEntry(entry: KeyEntry, out: ByteWriter): void {
  encodeRecord(entry.key, entry.voidCell, entry.nsCells, out);
}

function encodeRecord(key: Key, voidCell: Cell | undefined, cells: Map<Namespace, Cell> | undefined, out: ByteWriter): void {
  encodeValue(key, out);
  out.u8(voidCell !== undefined ? 1 : 0);
  if (voidCell !== undefined) encodeCell(voidCell, out);
  out.varuint(cells?.size ?? 0);
  if (cells !== undefined) {
    for (const [ns, cell] of cells) {
      encodeValue(ns, out);
      encodeCell(cell, out);
    }
  }
}

function decodeEntry(bytes: Buffer, mapKey: MapKey | undefined, version: number, dir: string): KeyEntry {
  try {
    const input = new ByteReader(bytes.buffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const key = decodeValue(input) as Key;
    const entry = new KeyEntry(key, mapKey ?? mapKeyOf(key), version);
    if (input.u8() === 1) {
      entry.hasVoid = true;
      decodeCell(input, entry);
    }
    const n = input.varuint();
    if (n > 0) {
      const cells = new Map<Namespace, Cell>();
      for (let i = 0; i < n; i++) {
        const ns = decodeValue(input) as Namespace;
        const cell = new Cell(undefined, Number.POSITIVE_INFINITY, undefined);
        decodeCell(input, cell);
        cells.set(ns, cell);
      }
      entry.nsCells = cells;
    }
    return entry;
  } catch (e) {
    const message = `the disk state store in ${dir} holds an entry that cannot be decoded (${e instanceof Error ? e.message : String(e)}): the store is damaged`;
    markUntrusted(dir, message);
    throw new EddyError("STATE_STORE_CORRUPT", message);
  }
}

/** The size estimate of an entry loaded from the store (what the writes since then add to); sets each cell's `valueSize`. */
function loadedSize(entry: KeyEntry): number {
  let n = ENTRY_BYTES + sizeOf(entry.key);
  if (entry.hasVoid) n += entry.valueSize = sizeOf(entry.value) + (entry.expiry === undefined ? 0 : sizeOf(entry.expiry));
  if (entry.nsCells !== undefined) {
    for (const [ns, cell] of entry.nsCells) n += NS_CELL_BYTES + sizeOf(ns) + (cell.valueSize = sizeOf(cell.value) + (cell.expiry === undefined ? 0 : sizeOf(cell.expiry)));
  }
  return n;
}

function visitStored(entry: KeyEntry, visit: CellVisitor): void {
  if (entry.hasVoid) visit(entry.key, VOID_NAMESPACE, entry.value, entry.expiresAt, entry.expiry);
  if (entry.nsCells !== undefined) for (const [ns, cell] of entry.nsCells) visit(entry.key, ns, cell.value, cell.expiresAt, cell.expiry);
}

function storeFailed(dir: string, what: string, e: unknown): EddyError {
  if (e instanceof EddyError) return e;
  const message = `the disk state store in ${dir} failed to ${what}: ${e instanceof Error ? e.message : String(e)}`;
  markUntrusted(dir, message);
  return new EddyError("STATE_STORE_FAILED", message);
}

/** A file in a store's directory that keeps local recovery from using the store: it failed. */
const UNTRUSTED = "UNTRUSTED";

/** Marks the store in `dir` as never to be recovered from (best effort: the directory may be gone). */
function markUntrusted(dir: string, why: string): void {
  try {
    writeFileSync(join(dir, UNTRUSTED), why);
  } catch {
    // no directory: nothing to recover from either
  }
}

function readMarker(dir: string): string {
  try {
    return readFileSync(join(dir, UNTRUSTED), "utf8").slice(0, 300);
  } catch {
    return "no reason recorded";
  }
}

/** Bytes the room probe writes after a failed store write (LMDB grows its file by more than a batch). */
const ROOM_PROBE_BYTES = 8 * 1024 * 1024;
/** A device with less free space than this after a failed store write counts as full. */
const LOW_SPACE_BYTES = 64 * 1024 * 1024;

/**
 * A failed store write: STATE_STORE_FULL when the cause is a lack of room, else STATE_STORE_FAILED.
 * LMDB reports a full disk (ENOSPC) or a file size limit (EFBIG) as "Input/output error", so the
 * device's free space is looked up and a probe file of ROOM_PROBE_BYTES written (and removed) in
 * the store's directory, then extended (sparse) past the store file's size: a device nearly full,
 * or a probe refused with ENOSPC, EDQUOT or EFBIG (a file size limit), means no room.
 */
function writeFailed(dir: string, e: unknown): EddyError {
  if (e instanceof EddyError) return e;
  let free: number | undefined;
  try {
    const fs = statfsSync(dir);
    free = Number(fs.bavail) * Number(fs.bsize);
  } catch {
    // no figure: the probe decides
  }
  let refused: string | undefined;
  const probe = join(dir, `room-probe-${process.pid}-${Math.random().toString(36).slice(2)}`);
  let fd: number | undefined;
  try {
    fd = openSync(probe, "w");
    const chunk = Buffer.alloc(1024 * 1024);
    for (let written = 0; written < ROOM_PROBE_BYTES; written += chunk.length) writeSync(fd, chunk);
    // A file as large as the store could grow to (sparse: no room used), for a file size limit.
    let largest = 0;
    for (const name of readdirSync(dir)) if (name.endsWith(".mdb")) largest = Math.max(largest, statSync(join(dir, name)).size);
    ftruncateSync(fd, largest + ROOM_PROBE_BYTES);
  } catch (p) {
    const code = (p as NodeJS.ErrnoException).code;
    if (code === "ENOSPC" || code === "EDQUOT" || code === "EFBIG") refused = code;
  } finally {
    if (fd !== undefined) closeSync(fd);
    rmSync(probe, { force: true });
  }
  const cause = e instanceof Error ? e.message : String(e);
  markUntrusted(dir, `a write failed: ${cause}`);
  const space = free === undefined ? "" : `; the device has ${(free / 2 ** 20).toFixed(1)} MiB free`;
  if (refused !== undefined || (free !== undefined && free < LOW_SPACE_BYTES)) {
    const why = refused !== undefined ? `a test write there was refused with ${refused}` : "its device is nearly full";
    return new EddyError("STATE_STORE_FULL", `no room to write the disk state store in ${dir} (LMDB: ${cause}; ${why}${space}): free space on the device of state.backend.disk.dir`, { cause: e });
  }
  return new EddyError("STATE_STORE_FAILED", `the disk state store in ${dir} failed to write: ${cause}${space}`, { cause: e });
}

/** A file-safe directory name. */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100) || "_";
}

/** The directory of job `jobName`'s stores under the backend's `dir`. */
function jobDirOf(dir: string, jobName: string): string {
  return join(dir, safeName(jobName));
}

/** The pid in the job directory's LOCK, or undefined when there is none (or it cannot be read). */
function lockOwner(jobDir: string): number | undefined {
  try {
    return Number(readFileSync(join(jobDir, "LOCK"), "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Takes the job directory's LOCK for this process: created atomically (link of a complete temp
 * file) holding the pid; held by a live other process → STATE_DIR_LOCKED; by a dead one → taken
 * over. Every thread of one process shares it (the pid is the owner).
 */
export function lockJobDir(jobDir: string): void {
  mkdirSync(jobDir, { recursive: true });
  const lock = join(jobDir, "LOCK");
  for (let attempt = 0; attempt < 5; attempt++) {
    const tmp = join(jobDir, `LOCK.${process.pid}.${Math.random().toString(36).slice(2)}`);
    writeFileSync(tmp, String(process.pid));
    try {
      linkSync(tmp, lock);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw storeFailed(jobDir, "lock", e);
    } finally {
      unlinkSync(tmp);
    }
    const owner = lockOwner(jobDir);
    if (owner === undefined) continue; // removed meanwhile: try again
    if (owner === process.pid) return;
    if (isPidAlive(owner)) {
      throw new EddyError(
        "STATE_DIR_LOCKED",
        `the disk state directory ${jobDir} is in use by process ${owner}: give each process its own state.backend.disk.dir, or stop that process`,
      );
    }
    rmSync(lock, { force: true }); // a dead owner's: take it over
  }
  throw new EddyError("STATE_DIR_LOCKED", `could not take the lock of the disk state directory ${jobDir}`);
}


let unscoped = 0;

/**
 * Local recovery: a job that ended for good (finished, stopped or cancelled) needs no store to
 * restart from, so its directory `<dir>/<job>` goes (the stores of every subtask, the lock).
 * Not while another live process holds its lock. Returns the directory removed, or undefined.
 */
export function removeJobStores(dir: string, jobName: string): string | undefined {
  const jobDir = jobDirOf(dir, jobName);
  if (!existsSync(jobDir)) return undefined;
  const owner = lockOwner(jobDir);
  if (owner !== undefined && owner !== process.pid && isPidAlive(owner)) return undefined;
  rmSync(jobDir, { recursive: true, force: true });
  return jobDir;
}

/**
 * The disk backend's factory (`env.setStateBackend("disk", options)`, `-D state.backend=disk`):
 * each operator subtask gets `<dir>/<job>/<operator id>-<first key group>-<last key group>`, the
 * job directory locked for this process.
 */
export function diskStateBackend(options: DiskStateBackendOptions): KeyedStateBackendFactory {
  const cacheSize = options.cacheSize ?? DEFAULT_DISK_CACHE_SIZE;
  if (typeof options.dir !== "string" || options.dir === "") throw new EddyError("INVALID_STATE_BACKEND", "the disk state backend needs a directory (state.backend.disk.dir)");
  if (!Number.isInteger(cacheSize) || cacheSize < 1) {
    throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.cache-size must be a positive integer, got ${String(cacheSize)}`);
  }
  // Undefined: the default, resolved by each backend in its own thread (defaultDiskCacheBytes).
  const cacheBytes = options.cacheBytes;
  if (cacheBytes !== undefined && (!Number.isSafeInteger(cacheBytes) || cacheBytes < 1)) {
    throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.cache-bytes must be a positive integer, got ${String(cacheBytes)}`);
  }
  const incremental = options.incremental ?? true;
  const maxChainLength = checkMaxChainLength(options.maxChainLength ?? DEFAULT_MAX_CHAIN_LENGTH, "state.backend.disk.max-chain-length");
  const localRecovery = options.localRecovery ?? false;
  if (localRecovery && !incremental) throw new EddyError("INVALID_STATE_BACKEND", "state.backend.disk.local-recovery needs incremental checkpoints (state.backend.disk.incremental: true)");
  return (backendOptions) => {
    const scope = backendOptions.scope;
    const { start, end } = backendOptions.keyGroupRange;
    const jobDir = jobDirOf(options.dir, scope?.job ?? "unscoped");
    lockJobDir(jobDir);
    const sub = scope === undefined ? `pid${process.pid}-${unscoped++}` : `${safeName(scope.operatorId)}-${start}-${end}`;
    return new DiskKeyedStateBackend({ ...backendOptions, storeDir: join(jobDir, sub), cacheSize, cacheBytes, incremental, maxChainLength, localRecovery });
  };
}

/** A value cursor whose every seek counts as a use of the key for the cache (and may evict others first). */
class CachingCursor<T> extends VoidValueCursor<T> {
  readonly #touch: (key: Key, keyGroup: number) => void;
  constructor(table: StateTable, range: { start: number; end: number }, touch: (key: Key, keyGroup: number) => void) {
    super(table, range);
    this.#touch = touch;
  }

  override seek(key: Key, keyGroup: number): T | undefined {
    this.#touch(key, keyGroup);
    return super.seek(key, keyGroup);
  }
}
