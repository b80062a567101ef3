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
import { crc32 } from "node:zlib";
import { checkpointCorrupt, checkSection, hex32, MAX_HEADER_BYTES, parseHeader, readHeaderLayout, sectionKey, type HeaderLayout, type SectionEntry, type SectionSource } from "./format/container.ts";

/**
 * The largest task file read: 2 GiB − 1 byte, the largest Node's readFile took before, so every
 * file that restored before still does. A task file is held in memory whole while it is restored
 * or inspected (its sections are decoded from it); above this limit the refusal names the file
 * (Node's own "File size … is greater than 2 GiB" did not).
 */
export const MAX_SNAPSHOT_FILE_BYTES = internalBound("EDDY_INTERNAL_MAX_SNAPSHOT_FILE_BYTES") ?? 2 ** 31 - 1;

/**
 * A bound lowered for tests through an internal environment variable (a positive integer), so
 * that a test can pass it with small files; undefined when unset.
 */
function internalBound(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text === "") return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new EddyError("INVALID_CONFIG", `${name} must be a positive integer, got '${text}'`);
  return n;
}
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
  /** Hex: of a streamed file's index (FileRef.indexSha256). */
  readonly indexSha256?: string;
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
  const handle = await openExpected(path, label, missing);
  try {
    const size = await expectedSize(handle, expected, label);
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

/** Opens `path` for reading as a snapshot's file: no link followed, a FIFO not waited for (see the file comment). */
async function openExpected(path: string, label: string, missing: string): Promise<FileHandle> {
  if (!HAS_NOFOLLOW && isLink(path)) throw linkRefused(label);
  try {
    return await open(path, OPEN_FLAGS);
  } catch (e) {
    throw openFailure(e, path, label, missing);
  }
}

/** The open file's size: a regular file of exactly the manifest's size, else CHECKPOINT_CORRUPT. */
async function expectedSize(handle: FileHandle, expected: ExpectedFile, label: string): Promise<number> {
  return sizeAsExpected(await handle.stat(), expected, label);
}

function sizeAsExpected(stats: Stats, expected: ExpectedFile, label: string): number {
  const size = regularFileSize(stats, label);
  if (size !== expected.size) {
    const fault = size < expected.size ? "is truncated" : "is too long";
    throw checkpointCorrupt(`${label} ${fault}: ${size} bytes, the manifest lists ${expected.size}`);
  }
  return size;
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

/**
 * The checksum a FileRef records: SHA-256, which identifies the content. (A CRC-32 of a whole
 * snapshot file would not: the file ends with the CRC-32 of what precedes it, so the CRC of the
 * whole file is one constant for every file — the CRC residue — and a seeded CRC is constant for
 * every file of one length. The files' own CRCs catch damage; the ref catches a wrong file.)
 */
export function fileChecksum(...chunks: readonly Uint8Array[]): string {
  const hash = createHash("sha256");
  for (const chunk of chunks) hash.update(chunk);
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

/**
 * Shared files this process verified whole, or wrote (rememberVerified: their SHA-256 is of the
 * bytes it wrote), by path, with what identified them then. A whole verification of such a file
 * still the same (the ref's size and SHA-256; the same device, inode, size and modification
 * time to the millisecond — the kernel's clock for file times is coarser) reads only its header: an attempt restarting after a worker failed
 * (findLatestRestorable) does not read gigabytes of state it wrote a minute ago. Each section is
 * still checked by its CRC as it is read, and one that fails forgets its file, so the next
 * verification reads it whole and skips its checkpoint: a damaged file fails one attempt, never
 * every attempt. A file deleted through the storage is forgotten.
 */
const verifiedFiles = new Map<string, { readonly sha256: string; readonly dev: number; readonly ino: number; readonly size: number; readonly mtimeMs: number }>();

/** Records that the file at `path`, as `stats` shows it, has SHA-256 `sha256` (verified, or written by this process). */
export function rememberVerified(path: string, sha256: string, stats: Stats): void {
  verifiedFiles.set(path, { sha256, dev: stats.dev, ino: stats.ino, size: stats.size, mtimeMs: Math.trunc(stats.mtimeMs) });
}

export function forgetVerified(path: string): void {
  verifiedFiles.delete(path);
}

function knownVerified(path: string, expected: ExpectedFile, stats: Stats): boolean {
  const known = verifiedFiles.get(path);
  return known !== undefined && known.sha256 === expected.sha256 && known.size === expected.size && known.dev === stats.dev && known.ino === stats.ino && known.size === stats.size && known.mtimeMs === Math.trunc(stats.mtimeMs);
}

/**
 * A shared file of an incremental checkpoint, verified and then read section by section: never
 * held in memory whole, so its size is not bounded by MAX_SNAPSHOT_FILE_BYTES (a section is, as
 * it is read whole). `open` checks it as `readSnapshotFile` does (a regular file, not a link, of
 * the manifest's size) and reads it once in chunks, computing its SHA-256 and its whole-file
 * CRC-32 and keeping only its header — or, opened by its index (`verify` "index", for a restore
 * that reads only some sections), reads only the header and trailer and checks their SHA-256
 * against the manifest's indexSha256; `section` then reads one section by its offset, checking
 * that the file is still a regular file of that size, and verifies the section's own CRC. A file
 * changed between the two is caught by that CRC (a section's bytes are never used unchecked).
 */
export class StreamedSnapshotFile implements SectionSource {
  readonly fileName: string;
  readonly kind: string;
  readonly meta: unknown;
  readonly #path: string;
  readonly #size: number;
  readonly #bodyStart: number;
  readonly #index: ReadonlyMap<string, SectionEntry>;

  private constructor(path: string, fileName: string, size: number, kind: string, meta: unknown, bodyStart: number, entries: readonly SectionEntry[]) {
    this.#path = path;
    this.fileName = fileName;
    this.#size = size;
    this.kind = kind;
    this.meta = meta;
    this.#bodyStart = bodyStart;
    this.#index = new Map(entries.map((e) => [sectionKey(e.name, e.keyGroup), e]));
  }

  /**
   * Opens and verifies the file at `path` (see the class comment); `fileName` names it in errors.
   * `index` (when `expected` has an indexSha256): only the index is read and checked, not the body.
   */
  static async open(path: string, expected: ExpectedFile, missing: string, fileName = path, verify: "whole" | "index" = "whole"): Promise<StreamedSnapshotFile> {
    const label = `snapshot file '${path}'`;
    const fail = (what: string): EddyError => checkpointCorrupt(`checkpoint file '${fileName}' ${what}`);
    const handle = await openExpected(path, label, missing);
    try {
      const stats = await handle.stat();
      const size = sizeAsExpected(stats, expected, label);
      const head = new Uint8Array(Math.min(16, size));
      const tail = new Uint8Array(Math.min(12, size));
      await readFully(handle, head, 0, label, size);
      await readFully(handle, tail, size - tail.length, label, size);
      const layout = readHeaderLayout(size, head, tail, fail);
      if (layout.headerLength > MAX_HEADER_BYTES) throw fail(`has a header of ${layout.headerLength} bytes, more than the ${MAX_HEADER_BYTES} a header may have`);
      // The header's bytes: checked by the index's SHA-256, by an earlier whole pass, or by one now.
      let header: Uint8Array;
      if (verify === "index" && expected.indexSha256 !== undefined) {
        if (layout.version !== 2) throw fail(`is of version ${layout.version}, but its manifest entry has an index checksum (only streamed files, version 2, have one)`);
        const index = new Uint8Array(size - layout.headerStart);
        await readFully(handle, index, layout.headerStart, label, size);
        const computed = fileChecksum(index);
        if (computed !== expected.indexSha256) throw checkpointCorrupt(`${label} index checksum mismatch: the manifest says sha256 ${expected.indexSha256}, the file's index has ${computed}`);
        header = index.subarray(0, layout.headerLength);
      } else if (knownVerified(path, expected, stats)) {
        header = new Uint8Array(layout.headerLength);
        await readFully(handle, header, layout.headerStart, label, size);
      } else {
        header = await verifyWhole(handle, layout, size, tail, expected, label, fail);
        rememberVerified(path, expected.sha256, stats);
      }
      const { kind, meta, entries } = parseHeader(header, layout.bodyLength, fail);
      return new StreamedSnapshotFile(path, fileName, size, kind, meta, layout.bodyStart, entries);
    } finally {
      await handle.close();
    }
  }

  section(name: string, keyGroup?: number): Uint8Array | undefined {
    const entry = this.#index.get(sectionKey(name, keyGroup));
    if (entry === undefined) return undefined;
    const label = `snapshot file '${this.#path}'`;
    let fd: number;
    try {
      fd = openSync(this.#path, OPEN_FLAGS);
    } catch (e) {
      throw openFailure(e, this.#path, label, `${label} was removed while it was restored`);
    }
    try {
      const size = regularFileSize(fstatSync(fd), label);
      if (size !== this.#size) throw checkpointCorrupt(`${label} changed while it was restored: ${size} bytes, verified with ${this.#size}`);
      const bytes = new Uint8Array(entry.length);
      const start = this.#bodyStart + entry.offset;
      for (let at = 0; at < bytes.length; ) {
        const read = readSync(fd, bytes, at, Math.min(CHUNK_BYTES * 256, bytes.length - at), start + at);
        if (read === 0) throw shrank(label, start + at, size);
        at += read;
      }
      try {
        return checkSection(this.fileName, entry, bytes);
      } catch (e) {
        forgetVerified(this.#path);
        throw e;
      }
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * One pass over the whole file: its SHA-256 checked against `expected`, its CRC-32 against the
 * stored one (in `tail`, its last bytes); returns the header's bytes, kept on the way.
 */
async function verifyWhole(handle: FileHandle, layout: HeaderLayout, size: number, tail: Uint8Array, expected: ExpectedFile, label: string, fail: (what: string) => EddyError): Promise<Uint8Array> {
  const header = new Uint8Array(layout.headerLength);
  const hash = createHash("sha256");
  let crc = 0;
  const chunk = new Uint8Array(Math.min(CHUNK_BYTES, size));
  for (let at = 0; at < size; ) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(CHUNK_BYTES, size - at), at);
    if (bytesRead === 0) throw shrank(label, at, size);
    const bytes = chunk.subarray(0, bytesRead);
    hash.update(bytes);
    if (at < layout.crcAt) crc = crc32(bytes.subarray(0, Math.min(bytesRead, layout.crcAt - at)), crc);
    const from = Math.max(at, layout.headerStart);
    const to = Math.min(at + bytesRead, layout.headerStart + layout.headerLength);
    if (from < to) header.set(bytes.subarray(from - at, to - at), from - layout.headerStart);
    at += bytesRead;
  }
  checkSha256(hash.digest("hex"), expected, label);
  const stored = new DataView(tail.buffer, tail.byteOffset, tail.byteLength).getUint32(tail.length - 8, true);
  if (stored !== crc >>> 0) throw fail(`checksum mismatch: stored ${hex32(stored)}, computed ${hex32(crc >>> 0)}`);
  return header;
}

async function readFully(handle: FileHandle, into: Uint8Array, position: number, label: string, size: number): Promise<void> {
  for (let at = 0; at < into.length; ) {
    const { bytesRead } = await handle.read(into, at, into.length - at, position + at);
    if (bytesRead === 0) throw shrank(label, position + at, size);
    at += bytesRead;
  }
}
