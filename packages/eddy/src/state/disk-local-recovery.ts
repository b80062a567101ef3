/**
 * Local recovery of the disk backend's store (`state.backend.disk.local-recovery`;
 * docs/design/disk-state.md, "Local recovery"): a subtask restoring the checkpoint its own store
 * last took part in rolls its store back to that checkpoint instead of rebuilding it from the
 * checkpoint's files. Work proportional to what changed since, not to the state's size.
 *
 * The store keeps, per snapshot it took (an *epoch*, named by its checkpoint id), two undo sets in
 * named databases of the store's LMDB environment:
 * - `b.<id>`, before-images: the first write of each store key after the snapshot records the
 *   record the store held before it (empty: none). Applied newest epoch first down to checkpoint
 *   L, they turn the store as it is into the store as it was when L's snapshot was taken.
 * - `a.<id>`, the state at the snapshot of every key the store did not hold as the state had it
 *   then (the cache's dirty entries and the write batch): written by the snapshot's asynchronous
 *   part, before its checkpoint is acknowledged. Applied last, they turn the store as of the
 *   snapshot into the state as of the snapshot.
 *
 * `a` holds only the keys changed since the previous snapshot (the cached entries whose
 * `changedAt` says so) and the write batch. That is every key the store lags behind on only if
 * no cached entry stays dirty across two snapshots: so after each snapshot the backend writes
 * back the cached entries it changed in the interval before it and did not change since (the
 * *write-back*); an epoch whose previous write-back had not finished when it was taken is not
 * `valid` (restoring it rebuilds), and its own write-back writes every dirty entry back.
 *
 * What the store records of itself is in database `meta` (JSON): the machine's boot (a store left
 * by a machine crash is never trusted: it is written without sync), the key-group range, and the
 * epochs. A restore of checkpoint L uses the store only when an epoch of L is there, complete
 * (its `a` written and its shared file settled) and valid, with the same incremental chain as the
 * checkpoint lists for the subtask (names and SHA-256: the same lineage); and no marker says the
 * store failed. Epochs older than the last completed checkpoint are dropped.
 */
import { readFileSync } from "node:fs";
import { uptime } from "node:os";
import type { Database, RootDatabase } from "lmdb";
import { EddyError } from "../core/errors.ts";
import type { SharedFileRef } from "./incremental-snapshot.ts";

const META_VERSION = 1;
/** Epochs kept at most (checkpoints that never complete would grow them): the oldest go first. */
export const MAX_EPOCHS = 32;
/** LMDB named databases the environment may hold: state, meta, and two per epoch (plus margin). */
export const LOCAL_MAX_DBS = 2 * MAX_EPOCHS + 8;
const EMPTY = Buffer.alloc(0);

export interface EpochMeta {
  readonly checkpointId: number;
  /** The incremental chain the snapshot's checkpoint lists for this subtask, once written. */
  chain: readonly SharedFileRef[] | null;
  /** Its `a` set is written and its chain settled. */
  complete: boolean;
  /** The write-back before it had finished when it was taken (see the file comment). */
  readonly valid: boolean;
}

export interface LocalMeta {
  readonly version: number;
  readonly bootId: string;
  readonly keyGroups: readonly [number, number];
  /** The states by id (the id in store keys): a restore registers them in this order. */
  states: string[];
  epochs: EpochMeta[];
}

/** This boot of the machine: Linux's boot id, else the boot time to 10 s. */
export function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return `boot-${Math.round((Date.now() / 1000 - uptime()) / 10)}`;
  }
}

type Db = Database<Buffer, Buffer>;

/** The undo sets of a store and what it records of itself. Every method runs on the task thread. */
export class UndoLog {
  readonly #root: RootDatabase<Buffer, Buffer>;
  readonly #state: Db;
  readonly #metaDb: Database<string, string>;
  readonly #meta: LocalMeta;
  /** The epoch whose `b` set takes the before-images of writes now (the last snapshot's). */
  #current: { readonly epoch: EpochMeta; readonly before: Db } | undefined;
  readonly #dbs = new Map<string, Db>();

  constructor(root: RootDatabase<Buffer, Buffer>, state: Db, meta: LocalMeta) {
    this.#root = root;
    this.#state = state;
    this.#metaDb = root.openDB<string, string>({ name: "meta", keyEncoding: "binary", encoding: "string" }) as unknown as Database<string, string>;
    this.#meta = meta;
  }

  /** A fresh store's log (no epoch), its meta written. */
  static create(root: RootDatabase<Buffer, Buffer>, state: Db, keyGroups: readonly [number, number], states: readonly string[]): UndoLog {
    const log = new UndoLog(root, state, { version: META_VERSION, bootId: bootId(), keyGroups, states: [...states], epochs: [] });
    log.#writeMeta();
    return log;
  }

  /** The meta a store left, if it is one this process may use for key groups `keyGroups`; else why not. */
  static readMeta(root: RootDatabase<Buffer, Buffer>, keyGroups: readonly [number, number]): LocalMeta | string {
    const db = root.openDB<string, string>({ name: "meta", keyEncoding: "binary", encoding: "string" }) as unknown as Database<string, string>;
    const text = db.get(Buffer.from("meta") as unknown as string);
    if (text === undefined) return "it records nothing of itself";
    let meta: LocalMeta;
    try {
      meta = JSON.parse(text) as LocalMeta;
    } catch {
      return "its record of itself does not parse";
    }
    if (meta.version !== META_VERSION) return `it is of version ${String(meta.version)}`;
    if (meta.bootId !== bootId()) return "it was written before the machine restarted";
    if (meta.keyGroups[0] !== keyGroups[0] || meta.keyGroups[1] !== keyGroups[1]) return `it holds key groups ${meta.keyGroups.join("-")}`;
    return meta;
  }

  get epochs(): readonly EpochMeta[] {
    return this.#meta.epochs;
  }

  /** The states by id. */
  get states(): readonly string[] {
    return this.#meta.states;
  }

  /** The states by id are now `names` (a state was registered, or a restore registered them). */
  setStates(names: readonly string[]): void {
    const states = this.#meta.states;
    if (states.length === names.length && states.every((s, i) => s === names[i])) return;
    this.#meta.states = [...names];
    this.#root.transactionSync(() => this.#writeMeta());
  }

  /** Whether writes now record before-images. */
  get recording(): boolean {
    return this.#current !== undefined;
  }

  #db(name: string): Db {
    let db = this.#dbs.get(name);
    if (db === undefined) this.#dbs.set(name, (db = this.#root.openDB<Buffer, Buffer>({ name, keyEncoding: "binary", encoding: "binary" })));
    return db;
  }

  #writeMeta(): void {
    this.#metaDb.putSync(Buffer.from("meta") as unknown as string, JSON.stringify(this.#meta));
  }

  /**
   * The synchronous part of snapshot `checkpointId`: from now on writes record their
   * before-images in its `b` set. `valid`: see EpochMeta. The oldest epochs beyond MAX_EPOCHS go.
   */
  begin(checkpointId: number, valid: boolean): void {
    const epochs = this.#meta.epochs;
    const last = epochs[epochs.length - 1];
    if (last !== undefined && checkpointId <= last.checkpointId) {
      // A checkpoint id again (a restore resumed an older checkpoint's numbering): start over.
      this.#dropEpochs(epochs.length);
    }
    const epoch: EpochMeta = { checkpointId, chain: null, complete: false, valid };
    this.#root.transactionSync(() => {
      if (epochs.length >= MAX_EPOCHS) this.#dropEpochs(epochs.length - MAX_EPOCHS + 1);
      epochs.push(epoch);
      this.#writeMeta();
    });
    this.#current = { epoch, before: this.#db(`b.${checkpointId}`) };
  }

  /** Inside the write transaction, before `key` is written: its record now, if it is the key's first write of the epoch. */
  recordBefore(key: Buffer): void {
    const current = this.#current;
    if (current === undefined) return;
    const before = current.before;
    if (before.doesExist(key)) return;
    before.putSync(key, this.#state.getBinary(key) ?? EMPTY, { noOverwrite: true });
  }

  /** Part of snapshot `checkpointId`'s `a` set: each key's record as of the snapshot (undefined: none). */
  writeAt(checkpointId: number, records: readonly (readonly [Buffer, Buffer | undefined])[]): void {
    if (records.length === 0) return;
    const at = this.#db(`a.${checkpointId}`);
    this.#root.transactionSync(() => {
      for (const [key, value] of records) at.putSync(key, value ?? EMPTY);
    });
  }

  /** Snapshot `checkpointId`'s file is written (chain) or failed (undefined); `complete`: its `a` set is whole. */
  settle(checkpointId: number, chain: readonly SharedFileRef[] | undefined, complete: boolean): void {
    const epoch = this.#meta.epochs.find((e) => e.checkpointId === checkpointId);
    if (epoch === undefined) return;
    epoch.chain = chain === undefined ? null : chain.map(({ name, size, sha256 }) => ({ name, size, sha256 }));
    epoch.complete = chain !== undefined && complete;
    this.#root.transactionSync(() => this.#writeMeta());
  }

  /** Checkpoint `checkpointId` completed: no restore goes back before it, the epochs older go. */
  completed(checkpointId: number): void {
    const epochs = this.#meta.epochs;
    let n = 0;
    while (n < epochs.length && epochs[n]!.checkpointId < checkpointId) n++;
    if (n === 0) return;
    this.#root.transactionSync(() => this.#dropEpochs(n));
  }

  /** Drops the `n` oldest epochs (their sets and their meta); the caller holds a write transaction or none. */
  #dropEpochs(n: number): void {
    const gone = this.#meta.epochs.splice(0, n);
    for (const { checkpointId } of gone) {
      for (const name of [`b.${checkpointId}`, `a.${checkpointId}`]) {
        this.#db(name).dropSync();
        this.#dbs.delete(name);
      }
      if (this.#current?.epoch.checkpointId === checkpointId) this.#current = undefined;
    }
    this.#writeMeta();
  }

  /**
   * Why the store cannot be rolled back to checkpoint `checkpointId` whose checkpoint lists
   * `chain` for this subtask, or undefined when it can.
   */
  whyNot(checkpointId: number, chain: readonly SharedFileRef[]): string | undefined {
    const epoch = this.#meta.epochs.find((e) => e.checkpointId === checkpointId);
    if (epoch === undefined) return `it has no snapshot of checkpoint ${checkpointId} (it has ${this.#meta.epochs.map((e) => e.checkpointId).join(", ") || "none"})`;
    if (!epoch.complete) return `its snapshot of checkpoint ${checkpointId} was not completed`;
    if (!epoch.valid) return `its snapshot of checkpoint ${checkpointId} came before the previous write-back finished`;
    const own = epoch.chain ?? [];
    if (own.length !== chain.length || own.some((ref, i) => ref.name !== chain[i]!.name || ref.sha256 !== chain[i]!.sha256)) {
      return `checkpoint ${checkpointId} lists other files for it than it wrote (another run's checkpoint)`;
    }
    return undefined;
  }

  /**
   * Rolls the store back to checkpoint `checkpointId` (whyNot must be undefined): the `b` sets of
   * it and every later epoch, newest first, then its `a` set; each epoch's sets are dropped in
   * the transaction that applies them, so a kill part-way leaves a store the same call finishes.
   * Afterwards the store holds the state of the checkpoint and one epoch of it, empty. Returns
   * the records written.
   */
  rollBack(checkpointId: number): number {
    const epochs = this.#meta.epochs;
    const at = epochs.findIndex((e) => e.checkpointId === checkpointId);
    if (at < 0) throw new EddyError("INTERNAL", `no local epoch of checkpoint ${checkpointId}`);
    const target = epochs[at]!;
    let written = 0;
    const apply = (db: Db): void => {
      for (const { key, value } of db.getRange({})) {
        if (value.length === 0) this.#state.removeSync(key);
        else this.#state.putSync(key, value);
        written++;
      }
    };
    for (let i = epochs.length - 1; i >= at; i--) {
      const { checkpointId: id } = epochs[i]!;
      this.#root.transactionSync(() => {
        apply(this.#db(`b.${id}`));
        this.#db(`b.${id}`).dropSync();
        this.#dbs.delete(`b.${id}`);
        if (i > at) {
          this.#db(`a.${id}`).dropSync();
          this.#dbs.delete(`a.${id}`);
          epochs.splice(i, 1);
          this.#writeMeta();
        }
      });
    }
    this.#root.transactionSync(() => {
      apply(this.#db(`a.${checkpointId}`));
      // Its `a` set, and what older epochs kept (no restore goes back before this one now).
      for (const name of [`a.${checkpointId}`, ...epochs.slice(0, at).flatMap((e) => [`b.${e.checkpointId}`, `a.${e.checkpointId}`])]) {
        this.#db(name).dropSync();
        this.#dbs.delete(name);
      }
      epochs.splice(0, epochs.length, target);
      this.#writeMeta();
    });
    this.#current = { epoch: target, before: this.#db(`b.${checkpointId}`) };
    return written;
  }
}
