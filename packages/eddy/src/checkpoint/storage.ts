/**
 * Checkpoint storage: where the durable bytes of checkpoints live, apart from the state backends
 * that hold working state. Protocol: docs/design/checkpoint-files.md.
 *
 * Layout: `<rootDir>/<jobId>/chk-<n>/` holds one file per task snapshot and `_manifest`, written
 * last and atomically. A checkpoint without a valid manifest does not exist. `<rootDir>/<jobId>/shared/`
 * holds the files of incremental checkpoints that several checkpoints list (state/incremental-snapshot.ts):
 * the coordinator deletes one once no retained checkpoint lists it (shared-state-registry.ts).
 */
import { randomUUID } from "node:crypto";
import { link, mkdir, open, readdir, rename, rm, stat, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import { EddyError } from "../core/errors.ts";
import { CONTAINER_BYTES, MAX_HEADER_BYTES, SnapshotFile, checkpointCorrupt, encodeSnapshotFile, streamedIndexOf } from "./format/container.ts";
import { fileChecksum, forgetVerified, MAX_SNAPSHOT_FILE_BYTES, readManifestFile, readSnapshotFile, rememberVerified, StreamedSnapshotFile } from "./untrusted-file.ts";

/** Default `rootDir`, relative to the working directory; the caller resolves it. */
export const DEFAULT_CHECKPOINT_ROOT_DIR = "./.eddy/checkpoints";
/** Where savepoints go unless the run or the request says otherwise. */
export const DEFAULT_SAVEPOINT_DIR = "./.eddy/savepoints";

/** How much of a shared file its opening reads and checks (CheckpointStorage.openSharedFile). */
export type SharedFileVerification = "whole" | "index";

export { fileChecksum };

/** A file of a checkpoint as the manifest lists it. */
export interface FileRef {
  readonly name: string;
  /** Bytes. */
  readonly size: number;
  /** SHA-256 of the whole file, hex (fileChecksum says why not a CRC). */
  readonly sha256: string;
  /**
   * Shared files (version 2) since 2026-12: SHA-256 of the file's index, its header and trailer
   * (the last bytes, from the header on), hex: a restore that reads only some sections opens the
   * file by it (`openSharedFile(ref, "index")`) and checks each section by its CRC.
   */
  readonly indexSha256?: string;
}

/**
 * Durable bytes of one job's checkpoints. Checkpoint ids are non-negative safe integers; file
 * names match `FILE_NAME` (never a path). Reads verify and throw `CHECKPOINT_MISSING` or
 * `CHECKPOINT_CORRUPT` rather than return wrong bytes. Calls for different checkpoints may run
 * concurrently; `commitManifest` is exclusive even across processes.
 */
export interface CheckpointStorage {
  /**
   * Stores a file of a not yet committed checkpoint, replacing one of the same name. The file is
   * `chunks` one after another: an array (a file built from pieces; see encodeSnapshotFileChunks),
   * or a stream (encodeSnapshotFileStream), written as it comes, a bounded amount at a time, so
   * the file is never held whole. Refused with `CHECKPOINT_FILE_TOO_LARGE` (nothing left behind)
   * when the file is, or grows, larger than a restore reads. The caller reuses a chunk's memory
   * once `written` heard of it, or the promise settled: an implementation must not read it after
   * that (copy what it keeps, e.g. for a retry in the background).
   */
  writeFile(checkpointId: number, fileName: string, chunks: readonly Uint8Array[] | AsyncIterable<Uint8Array>, written?: (chunks: readonly Uint8Array[]) => void): Promise<FileRef>;
  /**
   * Makes the checkpoint exist, atomically, after all its files are written. Refuses with
   * `CHECKPOINT_ALREADY_COMMITTED` if it has a manifest already (a stale coordinator lost).
   */
  commitManifest(checkpointId: number, manifest: unknown): Promise<void>;
  /** The manifest as committed; `CHECKPOINT_MISSING` when the checkpoint has none. */
  readManifest(checkpointId: number): Promise<unknown>;
  /** The file's bytes, verified against the ref's size and SHA-256. */
  readFile(checkpointId: number, ref: FileRef): Promise<Uint8Array>;
  /** Ids of every checkpoint that has a directory, complete or not, ascending. */
  listCheckpoints(): Promise<number[]>;
  hasManifest(checkpointId: number): Promise<boolean>;
  /** Deletes the checkpoint, manifest first, so a half-deleted one never looks complete. Idempotent. */
  discard(checkpointId: number): Promise<void>;
  /** Where the checkpoint lives, for messages. */
  checkpointDir(checkpointId: number): string;
  /**
   * Stores a shared file (incremental checkpoints), durably: listed by the manifests of every
   * checkpoint whose chain includes it, it is never rewritten (names are unique). `chunks` are
   * written as they come (a stream: encodeSnapshotFileStream), a bounded amount at a time, so
   * the file's size is not bounded by memory. Chunks are held (not copied) until written: their
   * memory must not be reused before `written` heard of them, or the promise settled.
   */
  writeSharedFile(fileName: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, written?: (chunks: readonly Uint8Array[]) => void): Promise<FileRef>;
  /**
   * A shared file, verified (CHECKPOINT_MISSING, CHECKPOINT_CORRUPT); its sections are then read
   * one at a time, each checked by its CRC. `whole` (the default): against the ref's size and
   * SHA-256 and the file's CRC, in one pass of bounded memory. `index`: only its size and the
   * SHA-256 of its index (FileRef.indexSha256) — for a restore that reads some sections, each
   * checked as it is read — or whole when the ref has no index checksum.
   */
  openSharedFile(ref: FileRef, verify?: SharedFileVerification): Promise<StreamedSnapshotFile>;
  /** Deletes a shared file; idempotent. */
  deleteSharedFile(fileName: string): Promise<void>;
  /** Names of the shared files there are (temporary files of writes in progress left out). */
  listSharedFiles(): Promise<string[]>;
}


/** Names of job ids and checkpoint files: one path segment, never hidden, never a path. */
export const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MANIFEST = "_manifest";
const MANIFEST_KIND = "manifest";
const CHECKPOINT_DIR = /^chk-(0|[1-9][0-9]*)$/;

export interface LocalCheckpointStorageOptions {
  readonly rootDir: string;
  readonly jobId: string;
}

/** Checkpoint storage on a local (or mounted shared) file system. */
export class LocalCheckpointStorage implements CheckpointStorage {
  readonly #jobDir: string;

  constructor({ rootDir, jobId }: LocalCheckpointStorageOptions) {
    checkName(jobId, "job id", "config");
    this.#jobDir = join(rootDir, jobId);
  }

  checkpointDir(checkpointId: number): string {
    if (!(Number.isSafeInteger(checkpointId) && checkpointId >= 0)) {
      throw new EddyError("INVALID_CHECKPOINT_ID", `invalid checkpoint id ${checkpointId}`);
    }
    return join(this.#jobDir, `chk-${checkpointId}`);
  }

  async writeFile(checkpointId: number, fileName: string, chunks: readonly Uint8Array[] | AsyncIterable<Uint8Array>, written?: (chunks: readonly Uint8Array[]) => void): Promise<FileRef> {
    checkName(fileName, "checkpoint file name", "internal");
    const dir = this.checkpointDir(checkpointId);
    const name = join(dir, fileName);
    // Refused before anything is written, when the size is known.
    if (Array.isArray(chunks)) {
      const size = chunks.reduce((n, c) => n + c.length, 0);
      if (size > MAX_SNAPSHOT_FILE_BYTES) throw tooLarge(name, size, MAX_SNAPSHOT_FILE_BYTES);
    }
    // Best effort against a late writer: readFile's CRC check catches one that slips past.
    if (await this.hasManifest(checkpointId)) {
      throw new EddyError("CHECKPOINT_ALREADY_COMMITTED", `cannot write '${fileName}': checkpoint ${checkpointId} is already complete`);
    }
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, tempName(fileName));
    try {
      const { size, sha256 } = await writeStreamDurably(tmp, chunks, { maxBytes: MAX_SNAPSHOT_FILE_BYTES, name, written });
      await rename(tmp, name);
      // The directory entry becomes durable with commitManifest's directory fsync.
      return { name: fileName, size, sha256 };
    } catch (e) {
      await rm(tmp, { force: true });
      throw storageFull(e, name) ?? e;
    }
  }

  async commitManifest(checkpointId: number, manifest: unknown): Promise<void> {
    const dir = this.checkpointDir(checkpointId);
    const bytes = encodeSnapshotFile(MANIFEST_KIND, manifest, []);
    await mkdir(dir, { recursive: true });
    // The entries of the shared files the manifest may list are durable before it exists.
    if (await exists(this.#sharedDir)) await syncDirectory(this.#sharedDir);
    // A unique temp name, so two coordinators never write into one temp file; link() instead of
    // rename() because link fails on an existing `_manifest` where rename would replace it.
    const tmp = join(dir, tempName(MANIFEST));
    try {
      await writeDurably(tmp, [bytes]);
      await link(tmp, join(dir, MANIFEST));
    } catch (e) {
      if (errorCode(e) !== "EEXIST") throw e;
      throw new EddyError("CHECKPOINT_ALREADY_COMMITTED", `checkpoint ${checkpointId} already has a manifest in '${dir}'; not overwriting it`);
    } finally {
      await rm(tmp, { force: true });
    }
    // Makes the manifest's entry durable, and with it the renames of the files written before.
    await syncDirectory(dir);
    await syncDirectory(this.#jobDir);
  }

  async readManifest(checkpointId: number): Promise<unknown> {
    return readManifestIn(this.checkpointDir(checkpointId), `checkpoint ${checkpointId}`);
  }

  readFile(checkpointId: number, ref: FileRef): Promise<Uint8Array> {
    return readFileIn(this.checkpointDir(checkpointId), ref);
  }

  async listCheckpoints(): Promise<number[]> {
    let entries;
    try {
      entries = await readdir(this.#jobDir, { withFileTypes: true });
    } catch (e) {
      if (errorCode(e) === "ENOENT") return [];
      throw e;
    }
    const ids: number[] = [];
    for (const entry of entries) {
      const m = CHECKPOINT_DIR.exec(entry.name);
      if (m !== null && entry.isDirectory()) ids.push(Number(m[1]));
    }
    return ids.filter(Number.isSafeInteger).sort((a, b) => a - b);
  }

  hasManifest(checkpointId: number): Promise<boolean> {
    return exists(join(this.checkpointDir(checkpointId), MANIFEST));
  }

  async discard(checkpointId: number): Promise<void> {
    const dir = this.checkpointDir(checkpointId);
    await rm(join(dir, MANIFEST), { force: true });
    await rm(dir, { recursive: true, force: true });
  }

  get #sharedDir(): string {
    return join(this.#jobDir, SHARED_DIR);
  }

  /**
   * Written in place under its unique name (no temporary file and rename: each awaited step of a
   * task's checkpoint write waits for a turn of its busy thread's event loop). A file torn by a
   * crash is listed by no manifest, and is deleted as an orphan when the job next starts; the
   * directory entry is made durable by `commitManifest` before any manifest lists the file.
   */
  async writeSharedFile(fileName: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, written?: (chunks: readonly Uint8Array[]) => void): Promise<FileRef> {
    checkName(fileName, "shared checkpoint file name", "internal");
    const path = join(this.#sharedDir, fileName);
    await mkdir(this.#sharedDir, { recursive: true });
    try {
      const { size, sha256, last, stats } = await writeStreamDurably(path, chunks, { written });
      rememberVerified(path, sha256, stats);
      const index = last === undefined ? undefined : streamedIndexOf(last);
      return { name: fileName, size, sha256, ...(index === undefined ? {} : { indexSha256: fileChecksum(index) }) };
    } catch (e) {
      // A part written is nobody's (the name is unique); one that existed already is not ours to remove.
      if (errorCode(e) !== "EEXIST") await rm(path, { force: true });
      throw storageFull(e, path) ?? e;
    }
  }

  openSharedFile(ref: FileRef, verify: SharedFileVerification = "whole"): Promise<StreamedSnapshotFile> {
    return openSharedFileIn(this.#sharedDir, ref, verify);
  }

  async deleteSharedFile(fileName: string): Promise<void> {
    checkName(fileName, "shared checkpoint file name", "internal");
    forgetVerified(join(this.#sharedDir, fileName));
    await rm(join(this.#sharedDir, fileName), { force: true });
  }

  async listSharedFiles(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.#sharedDir);
    } catch (e) {
      if (errorCode(e) === "ENOENT") return [];
      throw e;
    }
    return names.filter((name) => FILE_NAME.test(name) && TEMP_NAME.exec(name) === null).sort();
  }
}

/** The directory of shared files, beside the checkpoint directories. */
const SHARED_DIR = "shared";

/** The largest manifest file: the largest header the container takes, and the container. */
export const MAX_MANIFEST_BYTES = MAX_HEADER_BYTES + CONTAINER_BYTES;

/**
 * The manifest of the snapshot directory `dir` (a checkpoint's or a savepoint's), checked by its
 * CRCs. `_manifest` must be a regular file of at most MAX_MANIFEST_BYTES (untrusted-file.ts).
 */
export function readManifestIn(dir: string, what: string): unknown {
  const path = join(dir, MANIFEST);
  const bytes = readManifestFile(path, MAX_MANIFEST_BYTES, `${what} has no manifest ('${path}')`);
  return SnapshotFile.parse(bytes, { fileName: path, expectKind: MANIFEST_KIND }).meta;
}

/**
 * The bytes of file `ref` of the snapshot directory `dir`, verified against the ref's size and
 * SHA-256. The name must be one path segment (FILE_NAME), and the file a regular file, not a
 * link (untrusted-file.ts): a manifest cannot make us read anything outside `dir`.
 */
export async function readFileIn(dir: string, ref: FileRef): Promise<Uint8Array> {
  checkName(ref.name, "snapshot file name", "external");
  const path = join(dir, ref.name);
  return readSnapshotFile(path, ref, `snapshot file '${path}' is missing`);
}

/** Shared file `ref` of the directory `dir`, verified and read section by section (StreamedSnapshotFile). */
export function openSharedFileIn(dir: string, ref: FileRef, verify: SharedFileVerification = "whole"): Promise<StreamedSnapshotFile> {
  checkName(ref.name, "snapshot file name", "external");
  const path = join(dir, ref.name);
  return StreamedSnapshotFile.open(path, ref, `snapshot file '${path}' is missing`, ref.name, verify);
}

/**
 * The files of a snapshot directory given by path: a checkpoint's (`<root>/<jobId>/chk-<n>`),
 * whose shared files are in `<root>/<jobId>/shared`, or a savepoint's, which is self-contained —
 * a savepoint manifest that names a shared file is refused.
 */
export function snapshotDirectoryReader(dir: string): Pick<CheckpointStorage, "readFile" | "openSharedFile"> {
  const isCheckpoint = CHECKPOINT_DIR.test(basename(dir));
  return {
    readFile: (_checkpointId, ref) => readFileIn(dir, ref),
    openSharedFile: (ref, verify) =>
      isCheckpoint
        ? openSharedFileIn(join(dirname(dir), SHARED_DIR), ref, verify)
        : Promise.reject(checkpointCorrupt(`the snapshot in '${dir}' lists shared file '${ref.name}', but a savepoint is self-contained (only checkpoints are incremental)`)),
  };
}

/**
 * Writes a complete snapshot directory `<parent>/<name>` at once: the files and the manifest go
 * into a hidden temporary directory, which is renamed into place when everything is durable; a
 * directory of that name never exists half-written. Refuses to replace an existing one.
 */
export async function writeSnapshotDirectory(
  parent: string,
  name: string,
  files: readonly { readonly name: string; readonly bytes: Uint8Array }[],
  manifest: unknown,
): Promise<string> {
  checkName(name, "snapshot directory name", "internal");
  await mkdir(parent, { recursive: true });
  const tmp = join(parent, tempName(name));
  const target = join(parent, name);
  try {
    await mkdir(tmp);
    for (const f of files) {
      checkName(f.name, "snapshot file name", "internal");
      await writeDurably(join(tmp, f.name), [f.bytes]);
    }
    await writeDurably(join(tmp, MANIFEST), [encodeSnapshotFile(MANIFEST_KIND, manifest, [])]);
    await syncDirectory(tmp);
    if (await exists(target)) {
      throw new EddyError("SNAPSHOT_EXISTS", `'${target}' exists already; not replacing it`);
    }
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  }
  await syncDirectory(parent);
  return target;
}

/**
 * Removes the temporary directories `writeSnapshotDirectory` left directly in `parent` when the
 * process died before it renamed them: entries named exactly as `tempName` names them, for a
 * `name` that `isOurs` accepts, and that are directories. An entry of such a name that is a
 * symbolic link or a file is left alone (Eddy made neither), and a link is never followed.
 * Calls `onRemoved` with each path removed. A missing `parent` has nothing to remove.
 */
export async function removeInterruptedSnapshotDirectories(parent: string, isOurs: (name: string) => boolean, onRemoved: (path: string) => void): Promise<void> {
  let entries;
  try {
    entries = await readdir(parent, { withFileTypes: true });
  } catch (e) {
    if (errorCode(e) === "ENOENT") return;
    throw e;
  }
  for (const entry of entries) {
    const name = TEMP_NAME.exec(entry.name)?.[1];
    // A Dirent's type is the entry's own (lstat), never a link's target.
    if (name === undefined || !isOurs(name) || !entry.isDirectory()) continue;
    const path = join(parent, entry.name);
    await rm(path, { recursive: true, force: true });
    onRemoved(path);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (e) {
    if (errorCode(e) === "ENOENT") return false;
    throw e;
  }
}

export interface FindRestorableOptions {
  /** The files a manifest lists; each is read and checked before the checkpoint is chosen. */
  readonly verifyFiles: (manifest: unknown) => readonly FileRef[];
  /** The shared files (incremental checkpoints) a manifest lists; each is read and checked too. */
  readonly verifySharedFiles?: (manifest: unknown) => readonly FileRef[];
  /** Checkpoints with a lower id are not candidates (default: every id). */
  readonly atLeast?: number;
  /** Called for each candidate skipped, with why (the file and the fault); `incomplete`: it has no manifest (never completed). */
  readonly log?: (message: string, incomplete: boolean) => void;
}

export interface RestorableCheckpoint {
  readonly checkpointId: number;
  readonly manifest: unknown;
}

/**
 * The newest checkpoint (with an id of at least `atLeast`) whose manifest and files all verify,
 * or undefined. Incomplete, missing or corrupt checkpoints are skipped with a log line naming the
 * file and the fault; any other failure (an I/O error, say) is thrown, so a passing fault never
 * rolls a job back further than it must go.
 */
export async function findLatestRestorable(storage: CheckpointStorage, options: FindRestorableOptions): Promise<RestorableCheckpoint | undefined> {
  const ids = await storage.listCheckpoints();
  const atLeast = options.atLeast ?? Number.NEGATIVE_INFINITY;
  for (let i = ids.length - 1; i >= 0 && ids[i]! >= atLeast; i--) {
    const checkpointId = ids[i]!;
    try {
      const manifest = await storage.readManifest(checkpointId);
      for (const ref of options.verifyFiles(manifest)) await storage.readFile(checkpointId, ref);
      for (const ref of options.verifySharedFiles?.(manifest) ?? []) await storage.openSharedFile(ref);
      return { checkpointId, manifest };
    } catch (e) {
      if (!(e instanceof EddyError && (e.code === "CHECKPOINT_MISSING" || e.code === "CHECKPOINT_CORRUPT"))) throw e;
      options.log?.(`skipping checkpoint ${checkpointId}: ${e.message}`, !(await storage.hasManifest(checkpointId)));
    }
  }
  return undefined;
}

/**
 * Deletes what is no longer needed once `completedId` is complete: complete checkpoints older
 * than the newest `retained` complete ones, and incomplete ones older than `completedId`.
 * Never touches `completedId` or anything newer (those may be in progress). Returns the
 * discarded ids, ascending.
 */
export async function retain(storage: CheckpointStorage, completedId: number, retained: number): Promise<number[]> {
  if (!(Number.isSafeInteger(retained) && retained >= 1)) {
    throw new EddyError("INVALID_RETAINED_CHECKPOINTS", `retained checkpoints must be an integer ≥ 1, got ${retained}`);
  }
  if (!(await storage.hasManifest(completedId))) {
    throw new EddyError("CHECKPOINT_NOT_COMPLETE", `cannot retain around checkpoint ${completedId}: it is not complete`);
  }
  const ids = await storage.listCheckpoints();
  const discarded: number[] = [];
  let newerComplete = 0;
  for (let i = ids.length - 1; i >= 0; i--) {
    const id = ids[i]!;
    const complete = await storage.hasManifest(id);
    if (id >= completedId) {
      if (complete) newerComplete++;
      continue;
    }
    if (complete && newerComplete < retained) {
      newerComplete++;
      continue;
    }
    await storage.discard(id);
    discarded.push(id);
  }
  return discarded.reverse();
}

/** `domain` says who gave the name: the user (a job id), Eddy itself, or a snapshot read back. */
function checkName(name: string, what: string, domain: "config" | "internal" | "external"): void {
  if (typeof name !== "string" || !FILE_NAME.test(name)) {
    if (domain === "external") {
      throw checkpointCorrupt(`invalid ${what} ${JSON.stringify(name)}: a snapshot names files inside its directory only (${FILE_NAME.source})`);
    }
    throw new EddyError("INVALID_CHECKPOINT_NAME", `invalid ${what} ${JSON.stringify(name)}: must match ${FILE_NAME.source}`, { domain });
  }
}

/** Starts with "_", so it can never be a valid file name, and is unique per write. */
function tempName(fileName: string): string {
  return `_${fileName}.${randomUUID()}.tmp`;
}

/** The names `tempName` gives; the first group is the file name. */
const TEMP_NAME = /^_(.+)\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/;

/** Chunks per writev call (IOV_MAX is 1024 on Linux and macOS). */
const WRITEV_CHUNKS = 1024;
/**
 * Bytes per writev call, at most. libuv writes a whole call (looping over short writes) and Node
 * reports the count as a 32-bit integer: a call of 2 GiB or more came back with a wrapped,
 * negative count, and the short-write handling below then wrote the same bytes again and again
 * until the disk was full (a 3.7 GB shared file of bench/disk-state-scale.ts at 20 M keys).
 */
const WRITEV_BYTES = 512 * 1024 * 1024;

/** `chunks` cut into writev calls of at most WRITEV_CHUNKS chunks and `maxBytes` bytes (a larger chunk is split; exported for tests). */
export function* writevBatches(chunks: readonly Uint8Array[], maxBytes = WRITEV_BYTES): Generator<Uint8Array[]> {
  let batch: Uint8Array[] = [];
  let bytes = 0;
  for (const chunk of chunks) {
    for (let at = 0; at < chunk.length; ) {
      const piece = chunk.subarray(at, at + Math.min(chunk.length - at, maxBytes - bytes));
      batch.push(piece);
      bytes += piece.length;
      at += piece.length;
      if (batch.length === WRITEV_CHUNKS || bytes === maxBytes) {
        yield batch;
        batch = [];
        bytes = 0;
      }
    }
  }
  if (batch.length > 0) yield batch;
}

/** Writes `chunks` as the file `path` (named `name` in errors: a temporary file's final name) and syncs it. */
async function writeDurably(path: string, chunks: readonly Uint8Array[], name = path): Promise<void> {
  const size = chunks.reduce((n, c) => n + c.length, 0);
  if (size > MAX_SNAPSHOT_FILE_BYTES) {
    throw tooLarge(name, size, MAX_SNAPSHOT_FILE_BYTES);
  }
  const handle = await open(path, "wx");
  try {
    await writeAll(handle, chunks, path);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A restore refuses such a file (it reads task files whole): a checkpoint listing it could never be restored. */
function tooLarge(name: string, size: number, maxBytes: number): EddyError {
  return new EddyError(
    "CHECKPOINT_FILE_TOO_LARGE",
    `checkpoint file '${name}' would be ${size} bytes or more, more than the ${maxBytes} a restore reads: not written; raise the parallelism so that each subtask's state is smaller, or use the disk state backend (its checkpoints are incremental)`,
  );
}

/** Appends `chunks` to `handle`'s file (at its position), short writes resumed. */
async function writeAll(handle: FileHandle, chunks: readonly Uint8Array[], path: string): Promise<void> {
  // One gathered write per 1,024 chunks, not one per chunk: each awaited step of a checkpoint
  // write waits for a turn of a busy task thread's event loop.
  for (let batch of writevBatches(chunks)) {
    while (batch.length > 0) {
      const total = batch.reduce((sum, c) => sum + c.length, 0);
      let written = (await handle.writev(batch)).bytesWritten;
      if (!(written > 0 && written <= total)) throw new Error(`writev of ${total} bytes to '${path}' reported ${written} written`);
      let used = 0;
      while (used < batch.length && written >= batch[used]!.length) written -= batch[used++]!.length;
      // A short write: go on from the first byte not written.
      batch = used < batch.length ? [batch[used]!.subarray(written), ...batch.slice(used + 1)] : [];
    }
  }
}

/** Bytes gathered before one writev of a streamed file (the memory a streamed write holds, besides the chunk being made). */
const STREAM_WRITE_BYTES = 8 * 1024 * 1024;

/**
 * Writes `chunks` as the new file `path` as they come, in writev calls of about STREAM_WRITE_BYTES,
 * and syncs it; its size and SHA-256, computed on the way, its last chunk, and its stats once synced. No size bound: the
 * file is never held whole, only the chunks of one writev.
 */
async function writeStreamDurably(
  path: string,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options: { readonly maxBytes?: number; readonly name?: string; readonly written?: (chunks: readonly Uint8Array[]) => void } = {},
): Promise<{ size: number; sha256: string; last: Uint8Array | undefined; stats: Stats }> {
  const { maxBytes = Number.POSITIVE_INFINITY, name = path, written } = options;
  const handle = await open(path, "wx");
  const hash = createHash("sha256");
  let size = 0;
  let last: Uint8Array | undefined;
  let stats: Stats;
  try {
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    for await (const chunk of chunks) {
      if (chunk.length === 0) continue;
      hash.update(chunk);
      size += chunk.length;
      if (size > maxBytes) throw tooLarge(name, size, maxBytes);
      last = chunk;
      batch.push(chunk);
      batchBytes += chunk.length;
      if (batchBytes >= STREAM_WRITE_BYTES || batch.length >= WRITEV_CHUNKS) {
        await writeAll(handle, batch, path);
        written?.(batch);
        batch = [];
        batchBytes = 0;
      }
    }
    await writeAll(handle, batch, path);
    written?.(batch);
    await handle.sync();
    stats = await handle.stat();
  } finally {
    await handle.close();
  }
  return { size, sha256: hash.digest("hex"), last, stats };
}

/** Makes the directory's entries durable; Windows cannot open a directory, and needs none. */
async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === "win32") return;
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * A write the file system refused for lack of room (ENOSPC; EDQUOT: a quota; EFBIG: a file size
 * limit) as CHECKPOINT_STORAGE_FULL naming the file; undefined for other errors.
 */
function storageFull(e: unknown, path: string): EddyError | undefined {
  const code = errorCode(e);
  if (code !== "ENOSPC" && code !== "EDQUOT" && code !== "EFBIG") return undefined;
  return new EddyError(
    "CHECKPOINT_STORAGE_FULL",
    `no room to write checkpoint file '${path}' (${String(code)}: ${e instanceof Error ? e.message : String(e)}): free space on its device, or keep fewer checkpoints (state.checkpoints.num-retained)`,
    { cause: e },
  );
}

function errorCode(e: unknown): unknown {
  return (e as { code?: unknown } | null)?.code;
}
