/**
 * Opening and reading the files of a snapshot directory (a checkpoint's or a savepoint's) as
 * hostile input. A savepoint is a directory a user hands us: whoever wrote it may have put a
 * symbolic link, a FIFO, a device or a directory where a file should be, or a file far larger than
 * its manifest says. Rules (docs/design/checkpoint-files.md, "Reading a snapshot directory"):
 *
 * - A file is opened with O_NOFOLLOW, so a symbolic link in the directory is refused, never
 *   followed out of it, and with O_NONBLOCK, so opening a FIFO returns at once instead of waiting
 *   for a writer. The directory itself may be a link: the user named it.
 * - The open handle is checked with fstat before a byte is read: anything but a regular file is
 *   refused, and so is a size other than the manifest's (a task file) or over a maximum (the
 *   manifest itself, whose size no manifest records). Reads never go past that size.
 * - A task file above VERIFY_FIRST_ABOVE_BYTES is hashed in chunks before it is read into memory,
 *   so one whose SHA-256 is not the manifest's is refused in bounded memory.
 *
 * Failures name the file: CHECKPOINT_MISSING (no such file) or CHECKPOINT_CORRUPT (refused).
 * Other I/O errors (a permission error) are thrown as they are: they are not the snapshot's fault,
 * and findLatestRestorable must not skip a checkpoint for them.
 */
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { EddyError } from "../core/errors.ts";
import { checkpointCorrupt } from "./format/container.ts";

/**
 * The largest task file read: 2 GiB − 1 byte, the largest Node's readFile took before, so every
 * file that restored before still does. A task file is held in memory whole while it is restored
 * or inspected (its sections are decoded from it); above this limit the refusal names the file
 * (Node's own "File size … is greater than 2 GiB" did not).
 */
export const MAX_SNAPSHOT_FILE_BYTES = 2 ** 31 - 1;
/**
 * Task files larger than this are read twice: hashed in chunks first, then read whole if the hash
 * is the manifest's. Below it one pass does both, and a wrong file costs at most this much memory.
 */
const VERIFY_FIRST_ABOVE_BYTES = 16 * 1024 * 1024;
/**
 * Bytes per read. Each read is a round trip to the thread pool: hashing a 1.9 GB file took
 * 1.7–2.3 s in 4 MiB reads and 2.5–5.2 s in 1 MiB reads (three runs each, shared 2-core machine).
 */
const CHUNK_BYTES = 4 * 1024 * 1024;
/** Windows has no O_NOFOLLOW (nor O_NONBLOCK): there an lstat before the open refuses links. */
const HAS_NOFOLLOW = constants.O_NOFOLLOW !== undefined;
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** What the manifest says of a file. */
export interface ExpectedFile {
  readonly size: number;
  /** Hex. */
  readonly sha256: string;
}

/**
 * The bytes of the manifest at `path`, a regular file of at most `maxBytes`. Synchronous: a job
 * reads the manifest it restores before it plans. `missing`: the message when there is none.
 */
export function readManifestFile(path: string, maxBytes: number, missing: string): Uint8Array {
  const label = `manifest '${path}'`;
  if (!HAS_NOFOLLOW && isLink(path)) throw linkRefused(label);
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS);
  } catch (e) {
    throw openFailure(e, path, label, missing);
  }
  try {
    const size = regularFileSize(fstatSync(fd), label);
    if (size > maxBytes) throw checkpointCorrupt(`${label} is ${size} bytes, more than the ${maxBytes} a manifest may have`);
    const bytes = new Uint8Array(size);
    for (let at = 0; at < size; ) {
      const read = readSync(fd, bytes, at, size - at, at);
      if (read === 0) throw shrank(label, at, size);
      at += read;
    }
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/**
 * The bytes of the task file at `path`, verified against the manifest's size and SHA-256 (see
 * the file comment for the order). `missing`: the message when there is none.
 */
export async function readSnapshotFile(path: string, expected: ExpectedFile, missing: string): Promise<Uint8Array> {
  const label = `snapshot file '${path}'`;
  if (!HAS_NOFOLLOW && isLink(path)) throw linkRefused(label);
  let handle: FileHandle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch (e) {
    throw openFailure(e, path, label, missing);
  }
  try {
    const size = regularFileSize(await handle.stat(), label);
    if (size !== expected.size) {
      const fault = size < expected.size ? "is truncated" : "is too long";
      throw checkpointCorrupt(`${label} ${fault}: ${size} bytes, the manifest lists ${expected.size}`);
    }
    if (size > MAX_SNAPSHOT_FILE_BYTES) throw checkpointCorrupt(`${label} is ${size} bytes, more than the ${MAX_SNAPSHOT_FILE_BYTES} a snapshot file may have`);
    if (size > VERIFY_FIRST_ABOVE_BYTES) checkSha256(await readHashing(handle, size, label, undefined), expected, label);
    const bytes = new Uint8Array(size);
    // Hashed again: the file may have changed since the first pass.
    checkSha256(await readHashing(handle, size, label, bytes), expected, label);
    return bytes;
  } finally {
    await handle.close();
  }
}

/**
 * Reads the file's first `size` bytes in chunks, into `into` when given (else through one chunk
 * buffer, which is all the memory it takes), and returns their SHA-256, hex.
 */
async function readHashing(handle: FileHandle, size: number, label: string, into: Uint8Array | undefined): Promise<string> {
  const hash = createHash("sha256");
  const chunk = into ?? new Uint8Array(Math.min(CHUNK_BYTES, size));
  for (let at = 0; at < size; ) {
    const offset = into === undefined ? 0 : at;
    const { bytesRead } = await handle.read(chunk, offset, Math.min(CHUNK_BYTES, size - at), at);
    if (bytesRead === 0) throw shrank(label, at, size);
    hash.update(chunk.subarray(offset, offset + bytesRead));
    at += bytesRead;
  }
  return hash.digest("hex");
}

function checkSha256(computed: string, expected: ExpectedFile, label: string): void {
  if (computed !== expected.sha256) {
    throw checkpointCorrupt(`${label} checksum mismatch: the manifest says sha256 ${expected.sha256}, the file has ${computed}`);
  }
}

/** The size of a regular file; anything else is refused, saying what it is. */
function regularFileSize(stats: Stats, label: string): number {
  if (stats.isFile()) return stats.size;
  const kind = stats.isDirectory()
    ? "a directory"
    : stats.isFIFO()
      ? "a FIFO"
      : stats.isCharacterDevice()
        ? "a character device"
        : stats.isBlockDevice()
          ? "a block device"
          : stats.isSocket()
            ? "a socket"
            : "something";
  throw checkpointCorrupt(`${label} is ${kind}, not a regular file`);
}

/** The error for a failed open: a missing file, a link (ELOOP under O_NOFOLLOW), a socket (ENXIO), or the error as it is. */
function openFailure(e: unknown, path: string, label: string, missing: string): unknown {
  const code = (e as { code?: unknown } | null)?.code;
  if (code === "ENOENT" || code === "ENOTDIR") return new EddyError("CHECKPOINT_MISSING", missing, { cause: e });
  // ELOOP also means a loop of links in the directory's own path: only a link at `path` is ours to name.
  if (code === "ELOOP" && isLink(path)) return linkRefused(label);
  if (code === "ENXIO") return checkpointCorrupt(`${label} is not a regular file (it cannot be opened: ENXIO)`);
  return e;
}

function linkRefused(label: string): EddyError {
  return checkpointCorrupt(`${label} is a symbolic link: a snapshot's files must be regular files in its directory`);
}

function isLink(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() === true;
}

function shrank(label: string, at: number, size: number): EddyError {
  return checkpointCorrupt(`${label} is truncated: it ended at byte ${at} while being read, its size was ${size}`);
}
