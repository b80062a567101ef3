/**
 * The container every persisted checkpoint file uses: task snapshot files and the manifest.
 * Layout and rationale: docs/design/checkpoint-files.md. Version 1, little-endian:
 *
 *   offset      size  field
 *   0           8     magic "EDDYCKPT"
 *   8           2     u16 format version (1)
 *   10          2     u16 flags (0; any other value is refused)
 *   12          4     u32 header length H
 *   16          H     UTF-8 JSON header { kind, meta, sections: [{ name, keyGroup?, offset, length, crc32 }] }
 *   16+H        B     body: the section bytes, concatenated in header order (offsets relative to 16+H)
 *   16+H+B      4     u32 CRC-32 of every preceding byte
 *   20+H+B      4     end magic "EDDY"
 *
 * Version 2 (shared files of incremental checkpoints, written as a stream of sections whose
 * sizes are not known in advance) puts the header after the body:
 *
 *   0           8     magic "EDDYCKPT"
 *   8           2     u16 format version (2)
 *   10          2     u16 flags (0)
 *   12          4     u32 0 (reserved)
 *   16          B     body
 *   16+B        H     UTF-8 JSON header, as in version 1 (offsets relative to 16)
 *   16+B+H      4     u32 header length H
 *   20+B+H      4     u32 CRC-32 of every preceding byte
 *   24+B+H      4     end magic "EDDY"
 *
 * The sections tile the body exactly, so the header fixes the file's length: any truncation is
 * detected even before the CRC is compared. Parsing never returns wrong data: a file that fails a
 * check throws `CHECKPOINT_CORRUPT` naming the file and the fault.
 *
 * The header is bounded (MAX_HEADER_BYTES, MAX_HEADER_DEPTH) on both sides: the writer refuses
 * a header a reader would refuse, so a checkpoint that could not be read back is never committed.
 */
import { crc32 } from "node:zlib";
import { EddyError } from "../../core/errors.ts";

/** Version this Eddy writes. */
export const SNAPSHOT_FILE_VERSION = 1;
/** Version of files written as a stream (`encodeSnapshotFileStream`): the header after the body. */
export const STREAMED_FILE_VERSION = 2;
/** Versions this Eddy reads; a new version adds a reader in `SnapshotFile.parse` and `readHeaderLayout`. */
const READABLE_VERSIONS = [1, 2];

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const MAGIC = encoder.encode("EDDYCKPT");
const END_MAGIC = encoder.encode("EDDY");
/** magic, version, flags, header length. */
const PREAMBLE_BYTES = 16;
/** CRC, end magic. */
const TRAILER_BYTES = 8;
/** What the container adds to its header and body: a file with neither has this many bytes. */
export const CONTAINER_BYTES = PREAMBLE_BYTES + TRAILER_BYTES;
/** Version 2's trailer: header length, CRC, end magic. */
const TRAILER_V2_BYTES = 12;
/**
 * The largest header, in bytes. JSON.parse of a header costs memory in proportion to its size
 * (~22× for a text of empty objects, the worst measured), and this is the only bound on that: a
 * count of values taken after parsing would come too late. Generous: a manifest takes ~370 bytes
 * per operator of each task (the golden savepoints), 5 MiB for 1,000 tasks of a dozen operators;
 * a task file's header ~80 bytes per section, one per key group of each keyed operator.
 */
export const MAX_HEADER_BYTES = 64 * 1024 * 1024;
/**
 * The deepest nesting of objects and arrays in a header, the header object itself counted.
 * JSON.parse takes any depth, but a recursive walk of the result (structuredClone to a worker
 * thread, JSON.stringify, a validator) overflows the stack at a few thousand levels. Eddy's own
 * metadata nests about ten deep; the rest is for split enumerator state, which sources define.
 */
export const MAX_HEADER_DEPTH = 64;

/** One named block of a file; (name, keyGroup) is unique within a file. */
export interface SnapshotSection {
  readonly name: string;
  /** The key group the bytes belong to, for keyed state; absent for per-subtask data. */
  readonly keyGroup?: number;
  readonly bytes: Uint8Array;
}

export interface SnapshotSectionInfo {
  readonly name: string;
  readonly keyGroup: number | undefined;
  readonly length: number;
}

/** A section as the header lists it. */
export interface SectionEntry extends SnapshotSectionInfo {
  /** Offset in the body. */
  readonly offset: number;
  readonly crc32: number;
}

export interface SnapshotFileParseOptions {
  /** Named in every error message; never opened. */
  readonly fileName: string;
  /** When given, a file of another kind is refused. */
  readonly expectKind?: string;
}

/** The error of every failed check on persisted checkpoint bytes. */
export function checkpointCorrupt(message: string): EddyError {
  return new EddyError("CHECKPOINT_CORRUPT", message);
}

/** `0x` and 8 hex digits, for checksums in messages. */
export function hex32(value: number): string {
  return `0x${value.toString(16).padStart(8, "0")}`;
}

/**
 * Encodes a file as the list of its pieces, in order: preamble and header, the section bytes
 * themselves (not copied: the caller must not change them until the file is written), trailer.
 * Writing the pieces one after another writes the file; nothing is concatenated. `meta` goes
 * through JSON (so it must be JSON-able, and comes back as `JSON.parse(JSON.stringify(meta))`).
 */
export function encodeSnapshotFileChunks(kind: string, meta: unknown, sections: readonly SnapshotSection[]): Uint8Array[] {
  const entries: object[] = [];
  const seen = new Set<string>();
  let bodyBytes = 0;
  for (const { name, keyGroup, bytes } of sections) {
    if (keyGroup !== undefined && !isIndex(keyGroup)) {
      throw invalidSections(`section '${name}' has an invalid key group ${keyGroup}`);
    }
    const id = sectionId(name, keyGroup);
    if (seen.has(id)) throw invalidSections(`duplicate section ${describeSection(name, keyGroup)}`);
    seen.add(id);
    const entry = { name, keyGroup, offset: bodyBytes, length: bytes.length, crc32: crc32(bytes) };
    entries.push(entry);
    bodyBytes += bytes.length;
  }
  const header = encodeHeader(kind, meta, entries);
  const head = new Uint8Array(PREAMBLE_BYTES + header.length);
  const headView = new DataView(head.buffer);
  head.set(MAGIC, 0);
  headView.setUint16(8, SNAPSHOT_FILE_VERSION, true);
  headView.setUint16(10, 0, true);
  headView.setUint32(12, header.length, true);
  head.set(header, PREAMBLE_BYTES);
  let crc = crc32(head);
  for (const { bytes } of sections) crc = crc32(bytes, crc);
  const trailer = new Uint8Array(TRAILER_BYTES);
  new DataView(trailer.buffer).setUint32(0, crc, true);
  trailer.set(END_MAGIC, 4);
  return [head, ...sections.map((s) => s.bytes), trailer];
}

/** The header's JSON bytes; refused (INVALID_CHECKPOINT_META) if a reader would refuse them. */
function encodeHeader(kind: string, meta: unknown, entries: readonly object[]): Uint8Array {
  let json: string;
  try {
    json = JSON.stringify({ kind, meta, sections: entries });
  } catch (cause) {
    throw new EddyError("INVALID_CHECKPOINT_META", `checkpoint file meta is not JSON-serializable`, { cause });
  }
  const header = encoder.encode(json);
  const unreadable = headerFault(header);
  if (unreadable !== undefined) {
    throw new EddyError("INVALID_CHECKPOINT_META", `checkpoint file meta of kind '${kind}' would not be readable: it ${unreadable}`);
  }
  return header;
}

/** Encodes a file into one buffer (`encodeSnapshotFileChunks`, concatenated): for small files. */
export function encodeSnapshotFile(kind: string, meta: unknown, sections: readonly SnapshotSection[]): Uint8Array {
  const chunks = encodeSnapshotFileChunks(kind, meta, sections);
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/**
 * Encodes a file of version 2 as a stream: the preamble, each section's bytes as `sections`
 * yields it (not copied: a consumer may hold several before writing them), then the header and
 * trailer. Nothing but the header's entries is kept, so memory is bounded by
 * the largest section whatever the file's size. `meta` gives the header's metadata, asked for
 * after the last section (a task file's is learned while its sections are made). `handed` hears of each
 * section's bytes as they are yielded (SectionBufferReturn counts them).
 */
export async function* encodeSnapshotFileStream(
  kind: string,
  meta: () => unknown,
  sections: AsyncIterable<SnapshotSection> | Iterable<SnapshotSection>,
  handed?: (bytes: Uint8Array) => void,
): AsyncGenerator<Uint8Array> {
  const head = new Uint8Array(PREAMBLE_BYTES);
  const headView = new DataView(head.buffer);
  head.set(MAGIC, 0);
  headView.setUint16(8, STREAMED_FILE_VERSION, true);
  headView.setUint16(10, 0, true);
  headView.setUint32(12, 0, true);
  let crc = crc32(head);
  yield head;
  const entries: object[] = [];
  const seen = new Set<string>();
  let bodyBytes = 0;
  for await (const { name, keyGroup, bytes } of sections) {
    if (keyGroup !== undefined && !isIndex(keyGroup)) throw invalidSections(`section '${name}' has an invalid key group ${keyGroup}`);
    const id = sectionId(name, keyGroup);
    if (seen.has(id)) throw invalidSections(`duplicate section ${describeSection(name, keyGroup)}`);
    seen.add(id);
    entries.push({ name, keyGroup, offset: bodyBytes, length: bytes.length, crc32: crc32(bytes) });
    bodyBytes += bytes.length;
    crc = crc32(bytes, crc);
    handed?.(bytes);
    yield bytes;
  }
  const header = encodeHeader(kind, meta(), entries);
  const tail = new Uint8Array(header.length + TRAILER_V2_BYTES);
  const tailView = new DataView(tail.buffer);
  tail.set(header, 0);
  tailView.setUint32(header.length, header.length, true);
  tailView.setUint32(header.length + 4, crc32(tail.subarray(0, header.length + 4), crc), true);
  tail.set(END_MAGIC, header.length + 8);
  yield tail;
}

/**
 * The index of a version-2 file — its header and trailer, the file's last H + 12 bytes — when
 * `last` (the last chunk of a file as encodeSnapshotFileStream yields it) is exactly that; else
 * undefined. Its SHA-256 (FileRef.indexSha256) lets a reader trust the index without reading the
 * body: every section it then reads is checked by the CRC-32 the index lists for it.
 */
export function streamedIndexOf(last: Uint8Array): Uint8Array | undefined {
  if (last.length < TRAILER_V2_BYTES || !matchesAt(last, END_MAGIC, last.length - 4)) return undefined;
  const headerLength = new DataView(last.buffer, last.byteOffset, last.byteLength).getUint32(last.length - TRAILER_V2_BYTES, true);
  return headerLength + TRAILER_V2_BYTES === last.length ? last : undefined;
}

/** Where a file's header and body lie, from its first 16 and last 12 bytes (`readHeaderLayout`). */
export interface HeaderLayout {
  readonly version: number;
  readonly headerStart: number;
  readonly headerLength: number;
  readonly bodyStart: number;
  readonly bodyLength: number;
  /** The whole-file CRC is over [0, crcAt) and stored at crcAt. */
  readonly crcAt: number;
}

/**
 * The layout of a file of `size` bytes from its `head` (first 16 bytes, or fewer) and `tail`
 * (last 12): magic, version, flags, end magic and the header's bounds checked. For readers that
 * do not hold the file (a streamed shared file). `fail` names the file.
 */
export function readHeaderLayout(size: number, head: Uint8Array, tail: Uint8Array, fail: (what: string) => EddyError): HeaderLayout {
  if (size < CONTAINER_BYTES) throw fail(`is truncated: ${size} bytes, needs at least ${CONTAINER_BYTES}`);
  if (!matchesAt(head, MAGIC, 0)) throw fail("is not an Eddy checkpoint file (bad magic)");
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const version = view.getUint16(8, true);
  if (!READABLE_VERSIONS.includes(version)) throw fail(`has unsupported format version ${version} (this Eddy reads ${READABLE_VERSIONS.join(", ")})`);
  if (!matchesAt(tail, END_MAGIC, tail.length - 4)) throw fail("does not end with the end magic 'EDDY' (truncated or not fully written)");
  const flags = view.getUint16(10, true);
  if (flags !== 0) throw fail(`has unsupported flags ${hex32(flags)}`);
  if (version === 1) {
    const headerLength = view.getUint32(12, true);
    const bodyStart = PREAMBLE_BYTES + headerLength;
    if (bodyStart > size - TRAILER_BYTES) throw fail(`has a header of ${headerLength} bytes, longer than the file`);
    return { version, headerStart: PREAMBLE_BYTES, headerLength, bodyStart, bodyLength: size - TRAILER_BYTES - bodyStart, crcAt: size - TRAILER_BYTES };
  }
  if (size < PREAMBLE_BYTES + TRAILER_V2_BYTES) throw fail(`is truncated: ${size} bytes, needs at least ${PREAMBLE_BYTES + TRAILER_V2_BYTES}`);
  const tailView = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  const headerLength = tailView.getUint32(tail.length - TRAILER_V2_BYTES, true);
  const headerStart = size - TRAILER_V2_BYTES - headerLength;
  if (headerStart < PREAMBLE_BYTES) throw fail(`has a header of ${headerLength} bytes, longer than the file`);
  return { version, headerStart, headerLength, bodyStart: PREAMBLE_BYTES, bodyLength: headerStart - PREAMBLE_BYTES, crcAt: size - TRAILER_BYTES };
}

/** What a reader of sections needs of a file (a parsed SnapshotFile, or a shared file read section by section). */
export interface SectionSource {
  readonly fileName: string;
  readonly kind: string;
  /** The bytes of a section, its CRC verified, or undefined when the file has none by that name and key group. */
  section(name: string, keyGroup?: number): Uint8Array | undefined;
}

/** A parsed, verified file. Sections are views into the parsed bytes: do not mutate them. */
export class SnapshotFile implements SectionSource {
  readonly fileName: string;
  readonly version: number;
  readonly kind: string;
  readonly meta: unknown;
  /** In body order. */
  readonly sections: readonly SnapshotSectionInfo[];
  readonly #body: Uint8Array;
  /** By `sectionId`. */
  readonly #index: ReadonlyMap<string, SectionEntry>;

  private constructor(fileName: string, { version, kind, meta, entries, body }: FileContent) {
    this.fileName = fileName;
    this.version = version;
    this.kind = kind;
    this.meta = meta;
    this.sections = entries.map(({ name, keyGroup, length }) => ({ name, keyGroup, length }));
    this.#body = body;
    this.#index = new Map(entries.map((e) => [sectionId(e.name, e.keyGroup), e]));
  }

  /**
   * Verifies, in this order: minimum length, magic, version, end magic, whole-file CRC, header,
   * that the sections tile the body; then the kind when `expectKind` is given.
   */
  static parse(bytes: Uint8Array, options: SnapshotFileParseOptions): SnapshotFile {
    const { fileName } = options;
    const fail = (what: string): EddyError => checkpointCorrupt(`checkpoint file '${fileName}' ${what}`);
    if (bytes.length < CONTAINER_BYTES) throw fail(`is truncated: ${bytes.length} bytes, needs at least ${CONTAINER_BYTES}`);
    if (!matchesAt(bytes, MAGIC, 0)) throw fail("is not an Eddy checkpoint file (bad magic)");
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const version = view.getUint16(8, true);
    let content: FileContent;
    switch (version) {
      case 1:
      case 2: {
        const layout = readHeaderLayout(bytes.length, bytes.subarray(0, PREAMBLE_BYTES), bytes.subarray(Math.max(0, bytes.length - TRAILER_V2_BYTES)), fail);
        const stored = view.getUint32(layout.crcAt, true);
        const computed = crc32(bytes.subarray(0, layout.crcAt));
        if (stored !== computed) throw fail(`checksum mismatch: stored ${hex32(stored)}, computed ${hex32(computed)}`);
        // From here on the bytes are what the writer wrote; the checks below catch a faulty writer.
        const header = parseHeader(bytes.subarray(layout.headerStart, layout.headerStart + layout.headerLength), layout.bodyLength, fail);
        content = { version, ...header, body: bytes.subarray(layout.bodyStart, layout.bodyStart + layout.bodyLength) };
        break;
      }
      default:
        throw fail(`has unsupported format version ${version} (this Eddy reads ${READABLE_VERSIONS.join(", ")})`);
    }
    if (options.expectKind !== undefined && content.kind !== options.expectKind) {
      throw fail(`is a '${content.kind}' file, expected '${options.expectKind}'`);
    }
    return new SnapshotFile(fileName, content);
  }

  /**
   * The bytes of a section, or undefined when the file has none by that name and key group.
   * Verifies the section's own CRC each call.
   */
  section(name: string, keyGroup?: number): Uint8Array | undefined {
    const entry = this.#index.get(sectionId(name, keyGroup));
    if (entry === undefined) return undefined;
    return checkSection(this.fileName, entry, this.#body.subarray(entry.offset, entry.offset + entry.length));
  }
}

/** What a version's reader hands to `SnapshotFile`, whatever the layout it read. */
interface FileContent {
  readonly version: number;
  readonly kind: string;
  readonly meta: unknown;
  readonly entries: SectionEntry[];
  readonly body: Uint8Array;
}

/** The header's JSON (`headerText`) checked against a body of `bodyLength` bytes: bounds, shape, sections tiling the body. */
export function parseHeader(headerText: Uint8Array, bodyLength: number, fail: (what: string) => EddyError): { kind: string; meta: unknown; entries: SectionEntry[] } {
  const unreadable = headerFault(headerText);
  if (unreadable !== undefined) throw fail(unreadable);
  let header: unknown;
  try {
    header = JSON.parse(decoder.decode(headerText));
  } catch {
    throw fail("has a header that is not valid UTF-8 JSON");
  }
  if (!isRecord(header) || typeof header["kind"] !== "string" || !Array.isArray(header["sections"])) {
    throw fail("has a malformed header (needs kind and sections)");
  }
  const entries: SectionEntry[] = [];
  const seen = new Set<string>();
  let next = 0;
  for (const raw of header["sections"] as unknown[]) {
    const entry = toSectionEntry(raw);
    if (entry === undefined) throw fail(`has a malformed section entry ${JSON.stringify(raw)}`);
    const what = describeSection(entry.name, entry.keyGroup);
    if (entry.offset !== next || entry.offset + entry.length > bodyLength) {
      throw fail(`section ${what} at [${entry.offset}, ${entry.offset + entry.length}) does not follow on at ${next} within the ${bodyLength}-byte body`);
    }
    const id = sectionId(entry.name, entry.keyGroup);
    if (seen.has(id)) throw fail(`has a duplicate section ${what}`);
    seen.add(id);
    entries.push(entry);
    next += entry.length;
  }
  if (next !== bodyLength) throw fail(`has a ${bodyLength}-byte body but its sections cover ${next} bytes`);
  return { kind: header["kind"], meta: header["meta"], entries };
}

/** The id of a section in a file's index: (name, key group). */
export function sectionKey(name: string, keyGroup: number | undefined): string {
  return sectionId(name, keyGroup);
}

/** A section's CRC checked: the bytes, or CHECKPOINT_CORRUPT naming the file and section. */
export function checkSection(fileName: string, entry: SectionEntry, bytes: Uint8Array): Uint8Array {
  const computed = crc32(bytes);
  if (computed !== entry.crc32) {
    throw checkpointCorrupt(`checkpoint file '${fileName}' section ${describeSection(entry.name, entry.keyGroup)} checksum mismatch: stored ${hex32(entry.crc32)}, computed ${hex32(computed)}`);
  }
  return bytes;
}

/** Why a header (JSON text) exceeds the bounds, as "has …", or undefined when it is within them. */
function headerFault(json: Uint8Array): string | undefined {
  if (json.length > MAX_HEADER_BYTES) return `has a header of ${json.length} bytes, more than the ${MAX_HEADER_BYTES} a header may have`;
  if (nestsDeeperThan(json, MAX_HEADER_DEPTH)) return `has a header nested deeper than ${MAX_HEADER_DEPTH} levels`;
  return undefined;
}

/**
 * Whether the JSON text `json` nests objects and arrays deeper than `max`. Scans the bytes
 * before anything is parsed, in one loop (no recursion to overflow): in UTF-8 every byte of a
 * multi-byte character is ≥ 0x80, so brackets and quotes are found as they are. Text that is not
 * JSON may count wrongly; JSON.parse refuses it next.
 */
function nestsDeeperThan(json: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const b = json[i]!;
    if (inString) {
      if (b === 0x5c) i++; // a backslash: the next byte is escaped, whatever it is
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) {
      inString = true;
    } else if (b === 0x7b || b === 0x5b) {
      if (++depth > max) return true;
    } else if (b === 0x7d || b === 0x5d) {
      depth--;
    }
  }
  return false;
}

function toSectionEntry(raw: unknown): SectionEntry | undefined {
  if (!isRecord(raw)) return undefined;
  const { name, keyGroup, offset, length, crc32: crc } = raw;
  const valid =
    typeof name === "string" &&
    (keyGroup === undefined || isIndex(keyGroup)) &&
    isIndex(offset) &&
    isIndex(length) &&
    isIndex(crc) &&
    crc <= 0xffff_ffff;
  return valid ? { name, keyGroup: keyGroup as number | undefined, offset, length, crc32: crc } : undefined;
}

function sectionId(name: string, keyGroup: number | undefined): string {
  // The key group never contains "/", so the first "/" separates the two unambiguously.
  return `${keyGroup ?? ""}/${name}`;
}

function describeSection(name: string, keyGroup: number | undefined): string {
  return keyGroup === undefined ? `'${name}'` : `'${name}' (key group ${keyGroup})`;
}

function invalidSections(message: string): EddyError {
  return new EddyError("INVALID_SNAPSHOT_SECTIONS", message);
}

function isIndex(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function matchesAt(bytes: Uint8Array, expected: Uint8Array, at: number): boolean {
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}
