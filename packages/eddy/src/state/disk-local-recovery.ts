/**
 * Local recovery of the disk backend's store (`state.backend.disk.local-recovery`;
 * docs/design/disk-state.md, "Local recovery"): a subtask restoring the checkpoint its own store
 * last took part in rolls its store back to that checkpoint instead of rebuilding it from the
 * checkpoint's files. Work proportional to what changed since, not to the state's size.
 *
 * The store keeps, per snapshot it took (an *epoch*, named by its checkpoint id), two undo logs,
 * append-only files in `undo/` beside the LMDB file:
 * - `b-<id>`, before-images: every store write after the snapshot first appends the record the
 *   store held for the key (or none), in the write's transaction before it commits. From the
 *   newest epoch down to checkpoint L's, they turn the store as it is into the store as it was
 *   when L's snapshot was taken (the oldest before-image of each key wins).
 * - `a-<id>`, the state at the snapshot of every key the store did not hold as the state had it
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
 * Records (little-endian): u32 payload length, u32 CRC-32 of the payload, payload = u16 key
 * length, key, u8 has a value, value. A torn last record of a `b` log (a write that never committed) is ignored; any
 * other damage, and a damaged `a` log, make the store unusable (the restore rebuilds).
 *
 * What the store records of itself is in `undo/meta.json` (replaced atomically): the machine's
 * boot (a store left by a machine crash is never trusted: nothing is synced), the key-group range,
 * the states by id, and the epochs. A restore of checkpoint L uses the store only when an epoch of
 * L is there, complete (its `a` log written and its shared file settled) and valid, with the same
 * incremental chain as the checkpoint lists for the subtask (names and SHA-256: the same lineage);
 * and no marker says the store failed. Epochs older than the last completed checkpoint are dropped.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { uptime } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import type { Database } from "lmdb";
import { ByteWriter } from "../core/codec/bytes.ts";
import { EddyError } from "../core/errors.ts";
import type { SharedFileRef } from "./incremental-snapshot.ts";

const META_VERSION = 2;
/** Epochs kept at most (checkpoints that never complete would grow them): the oldest go first. */
export const MAX_EPOCHS = 32;
const HEADER = 8;

export interface EpochMeta {
  readonly checkpointId: number;
  /** The incremental chain the snapshot's checkpoint lists for this subtask, once written. */
  chain: readonly SharedFileRef[] | null;
  /** Its `a` log is written and its chain settled. */
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

/** Appends `key` and its record (undefined: none) to `out` as one log record. */
function appendRecord(out: ByteWriter, key: Uint8Array, value: Uint8Array | undefined): void {
  const payload = 2 + key.length + 1 + (value?.length ?? 0);
  out.u32(payload);
  const crcAt = out.length;
  out.u32(0);
  const start = out.length;
  out.u16(key.length);
  out.bytes(key);
  out.u8(value === undefined ? 0 : 1);
  if (value !== undefined) out.bytes(value);
  const written = out.written();
  const view = new DataView(written.buffer, written.byteOffset, written.byteLength);
  view.setUint32(crcAt, crc32(written.subarray(start, start + payload)), true);
}

/** A log's records in file order (key, record or undefined); a torn last record is left out when `tornTail` allows. */
function readLog(path: string, tornTail: boolean): { key: Buffer; value: Buffer | undefined }[] {
  const bytes = readFileSync(path);
  const out: { key: Buffer; value: Buffer | undefined }[] = [];
  let at = 0;
  while (at < bytes.length) {
    const intact = at + HEADER <= bytes.length && at + HEADER + bytes.readUInt32LE(at) <= bytes.length;
    if (intact) {
      const length = bytes.readUInt32LE(at);
      const payload = bytes.subarray(at + HEADER, at + HEADER + length);
      if (crc32(payload) === bytes.readUInt32LE(at + 4) && length >= 3) {
        const keyLength = payload.readUInt16LE(0);
        const key = payload.subarray(2, 2 + keyLength);
        const value = payload[2 + keyLength] === 1 ? payload.subarray(3 + keyLength) : undefined;
        out.push({ key, value });
        at += HEADER + length;
        continue;
      }
      // A bad record that is not the last: damage.
      if (at + HEADER + length < bytes.length || !tornTail) throw new Error(`${path} is damaged at byte ${at}`);
    } else if (!tornTail) throw new Error(`${path} ends in the middle of a record`);
    break; // a write that never committed
  }
  return out;
}

/** The undo logs of a store and what it records of itself. Every method runs on the task thread. */
export class UndoLog {
  readonly #dir: string;
  readonly #state: Db;
  readonly #meta: LocalMeta;
  /** The epoch whose `b` log takes the before-images of writes now (the last snapshot's), and its file. */
  #current: { readonly epoch: EpochMeta; readonly fd: number } | undefined;
  /** Before-images of the write transaction running, appended to the current `b` log before it commits. */
  readonly #before = new ByteWriter(64 * 1024);

  constructor(dir: string, state: Db, meta: LocalMeta) {
    this.#dir = dir;
    this.#state = state;
    this.#meta = meta;
  }

  /** A fresh store's logs (no epoch) in `<storeDir>/undo`, its meta written. */
  static create(storeDir: string, state: Db, keyGroups: readonly [number, number], states: readonly string[]): UndoLog {
    const dir = join(storeDir, "undo");
    mkdirSync(dir, { recursive: true });
    const log = new UndoLog(dir, state, { version: META_VERSION, bootId: bootId(), keyGroups, states: [...states], epochs: [] });
    log.#writeMeta();
    return log;
  }

  /** The logs a store left in `storeDir`, if this process may use them for key groups `keyGroups`; else why not. */
  static open(storeDir: string, state: Db, keyGroups: readonly [number, number]): UndoLog | string {
    const dir = join(storeDir, "undo");
    let meta: LocalMeta;
    try {
      meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as LocalMeta;
    } catch {
      return existsSync(join(dir, "meta.json")) ? "its record of itself does not parse" : "it records nothing of itself";
    }
    if (meta.version !== META_VERSION) return `it is of version ${String(meta.version)}`;
    if (meta.bootId !== bootId()) return "it was written before the machine restarted";
    if (meta.keyGroups[0] !== keyGroups[0] || meta.keyGroups[1] !== keyGroups[1]) return `it holds key groups ${meta.keyGroups.join("-")}`;
    return new UndoLog(dir, state, meta);
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
    this.#writeMeta();
  }

  /** Whether writes now record before-images. */
  get recording(): boolean {
    return this.#current !== undefined;
  }

  #path(kind: "a" | "b", checkpointId: number): string {
    return join(this.#dir, `${kind}-${checkpointId}`);
  }

  /** Replaces meta.json (written aside, then renamed: a kill leaves the old or the new one). */
  #writeMeta(): void {
    const path = join(this.#dir, "meta.json");
    writeFileSync(`${path}.tmp`, JSON.stringify(this.#meta));
    renameSync(`${path}.tmp`, path);
  }

  #closeCurrent(): void {
    if (this.#current !== undefined) closeSync(this.#current.fd);
    this.#current = undefined;
  }

  /**
   * The synchronous part of snapshot `checkpointId`: from now on writes append their
   * before-images to its `b` log. `valid`: see EpochMeta. The oldest epochs beyond MAX_EPOCHS go.
   */
  begin(checkpointId: number, valid: boolean): void {
    const epochs = this.#meta.epochs;
    const last = epochs[epochs.length - 1];
    // A checkpoint id again (a restore resumed an older checkpoint's numbering): start over.
    if (last !== undefined && checkpointId <= last.checkpointId) this.#dropEpochs(epochs.length);
    if (epochs.length >= MAX_EPOCHS) this.#dropEpochs(epochs.length - MAX_EPOCHS + 1);
    this.#closeCurrent();
    const epoch: EpochMeta = { checkpointId, chain: null, complete: false, valid };
    const fd = openSync(this.#path("b", checkpointId), "w");
    epochs.push(epoch);
    this.#writeMeta();
    this.#current = { epoch, fd };
  }

  /** Inside a write transaction, before `key` is written: its record now goes to the before-images (see `commit`). */
  before(key: Buffer): void {
    if (this.#current === undefined) return;
    appendRecord(this.#before, key, this.#state.getBinary(key));
  }

  /** Inside the write transaction, after its writes: appends its before-images to the current `b` log (before the commit). */
  flushBefore(): void {
    const out = this.#before;
    if (out.length === 0) return;
    try {
      if (this.#current !== undefined) writeAll(this.#current.fd, out.written());
    } finally {
      out.reset();
    }
  }

  /** Appends part of snapshot `checkpointId`'s `a` log: each key's record as of the snapshot (undefined: none). */
  writeAt(checkpointId: number, records: readonly (readonly [Buffer, Buffer | undefined])[]): void {
    if (records.length === 0) return;
    const out = new ByteWriter(64 * 1024);
    for (const [key, value] of records) appendRecord(out, key, value);
    const fd = openSync(this.#path("a", checkpointId), "a");
    try {
      writeAll(fd, out.written());
    } finally {
      closeSync(fd);
    }
  }

  /** Snapshot `checkpointId`'s file is written (chain) or failed (undefined); `complete`: its `a` log is whole. */
  settle(checkpointId: number, chain: readonly SharedFileRef[] | undefined, complete: boolean): void {
    const epoch = this.#meta.epochs.find((e) => e.checkpointId === checkpointId);
    if (epoch === undefined) return;
    epoch.chain = chain === undefined ? null : chain.map(({ name, size, sha256 }) => ({ name, size, sha256 }));
    epoch.complete = chain !== undefined && complete;
    this.#writeMeta();
  }

  /** Checkpoint `checkpointId` completed: no restore goes back before it, the epochs older go. */
  completed(checkpointId: number): void {
    const epochs = this.#meta.epochs;
    let n = 0;
    while (n < epochs.length && epochs[n]!.checkpointId < checkpointId) n++;
    if (n > 0) this.#dropEpochs(n);
  }

  /** Drops the `n` oldest epochs: their meta first, then their logs. */
  #dropEpochs(n: number): void {
    const gone = this.#meta.epochs.splice(0, n);
    if (gone.some((e) => e.checkpointId === this.#current?.epoch.checkpointId)) this.#closeCurrent();
    this.#writeMeta();
    for (const { checkpointId } of gone) {
      rmSync(this.#path("a", checkpointId), { force: true });
      rmSync(this.#path("b", checkpointId), { force: true });
    }
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
   * Rolls the store back to checkpoint `checkpointId` (whyNot must be undefined). Each key's
   * record as of the checkpoint is its `a` record if its `a` log has one, else its oldest
   * before-image in the `b` logs of it and every later epoch (the first in a log is its oldest
   * there, and an older epoch's wins over a newer's). Those records are written sorted by key in
   * one transaction, skipping every key whose record the store already holds (a write-back
   * wrote the key's `a` record and nothing changed it since: common, and a write saved is a page
   * copied less). Then every later epoch and its logs go, and the checkpoint's epoch stays, with
   * empty logs. A kill part-way leaves either the logs as they were (the transaction did not
   * commit) or the store rolled back with logs that roll it back to the same records again.
   * Returns the records read from the logs and the records written.
   */
  rollBack(checkpointId: number): { read: number; written: number } {
    const epochs = this.#meta.epochs;
    const at = epochs.findIndex((e) => e.checkpointId === checkpointId);
    if (at < 0) throw new EddyError("INTERNAL", `no local epoch of checkpoint ${checkpointId}`);
    const target = epochs[at]!;
    this.#closeCurrent();
    const records = new Map<string, Buffer | undefined>();
    let read = 0;
    for (let i = epochs.length - 1; i >= at; i--) {
      const path = this.#path("b", epochs[i]!.checkpointId);
      if (!existsSync(path)) continue;
      const seen = new Set<string>();
      for (const { key, value } of readLog(path, true)) {
        read++;
        const name = key.toString("latin1");
        if (seen.has(name)) continue;
        seen.add(name);
        records.set(name, value);
      }
    }
    const atPath = this.#path("a", checkpointId);
    if (existsSync(atPath)) {
      for (const { key, value } of readLog(atPath, false)) {
        read++;
        records.set(key.toString("latin1"), value);
      }
    }
    let written = 0;
    const names = [...records.keys()].sort();
    const state = this.#state;
    state.transactionSync(() => {
      for (const name of names) {
        const key = Buffer.from(name, "latin1");
        const value = records.get(name);
        const held = state.getBinary(key);
        if (value === undefined ? held === undefined : held !== undefined && value.equals(held)) continue;
        if (value === undefined) state.removeSync(key);
        else state.putSync(key, value);
        written++;
      }
    });
    const gone = epochs.splice(0, epochs.length, target).filter((e) => e !== target);
    this.#writeMeta();
    for (const { checkpointId: id } of [...gone, target]) {
      rmSync(this.#path("a", id), { force: true });
      rmSync(this.#path("b", id), { force: true });
    }
    this.#current = { epoch: target, fd: openSync(this.#path("b", checkpointId), "w") };
    return { read, written };
  }

  /** Closes the current log (the store closes). */
  close(): void {
    this.#closeCurrent();
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}
