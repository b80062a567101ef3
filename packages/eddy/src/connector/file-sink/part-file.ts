/**
 * An in-progress part file of one bucket, and the row-format implementation (NDJSON, CSV): records
 * are encoded into a write buffer, which goes to the file's channel whole once full, so a record
 * costs an encode and a copy, never a system call. The part's length is exact at every moment
 * (bytes handed to the channel plus bytes in the buffer); a barrier makes a prefix of it durable.
 */
import type { FileChannel } from "./file-channel.ts";
import type { PendingPart } from "./file-sink-state.ts";
import type { PartProgress } from "./rolling-policy.ts";

/** What every format's part file offers the writer. Never called concurrently. */
export interface PartFile<T> extends PartProgress {
  readonly bucket: string;
  /** Hidden name while in progress and pending. */
  readonly tmp: string;
  /** Visible name once committed. */
  readonly name: string;
  /** Set on every write, cleared by the writer's time checks (which stamp `lastWriteAtMs`). */
  touched: boolean;
  lastWriteAtMs: number;
  /** May throw (a value the format cannot encode): the task fails. The hot path. */
  append(value: T): void;
  /** Hands buffered bytes to the channel; resolves once written. */
  flush(): Promise<void>;
  /**
   * Row formats only: makes what was appended so far durable (written, fsync) and resolves to
   * that length, while later appends go on. Bulk formats have none: they roll at every barrier.
   */
  persist?(): Promise<number>;
  /** Writes the rest, syncs and closes: the part is pending. No call may follow. */
  closeForCommit(): Promise<PendingPart>;
  /** Closes without syncing (the writer is closing); no call may follow. */
  abandon(): void;
}

/** Turns a record into its bytes as text (with its line end), and a part's first line. */
export interface RowEncoder<T> {
  readonly header: string | undefined;
  encode(value: T): string;
}

export interface PartPlacement {
  readonly bucket: string;
  readonly tmp: string;
  readonly name: string;
  readonly openedAtMs: number;
}

/** UTF-8 needs at most 3 bytes per UTF-16 code unit: a string of n units fits in 3n bytes. */
const MAX_UTF8_PER_UNIT = 3;

/** Records whose text is joined and written into the buffer at once. */
const TEXTS_PER_WRITE = 128;

export class RowPart<T> implements PartFile<T> {
  readonly bucket: string;
  readonly tmp: string;
  readonly name: string;
  readonly openedAtMs: number;
  lastWriteAtMs: number;
  touched = false;
  readonly #channel: FileChannel;
  readonly #encoder: RowEncoder<T>;
  readonly #bufferBytes: number;
  #buffer: Buffer;
  /** Bytes of `#buffer` in use. */
  #pos = 0;
  /** Bytes handed to the channel (the file's length once they are written). */
  #handed = 0;
  /**
   * Records' text not in `#buffer` yet, and its length in UTF-16 units: written into it in one
   * `buffer.write` per TEXTS_PER_WRITE records, where one call per record cost about as much as
   * encoding the record (Nexmark q10: `Buffer#write` and `utf8Write` 14 % of the job).
   */
  readonly #texts: string[] = [];
  #textUnits = 0;

  constructor(placement: PartPlacement, channel: FileChannel, encoder: RowEncoder<T>, bufferBytes: number) {
    this.bucket = placement.bucket;
    this.tmp = placement.tmp;
    this.name = placement.name;
    this.openedAtMs = placement.openedAtMs;
    this.lastWriteAtMs = placement.openedAtMs;
    this.#channel = channel;
    this.#encoder = encoder;
    this.#bufferBytes = bufferBytes;
    this.#buffer = Buffer.allocUnsafe(bufferBytes);
    channel.open();
    if (encoder.header !== undefined) this.#appendText(encoder.header);
  }

  /** Exact: writes the records' text held back into the buffer first. */
  get size(): number {
    this.#writeTexts();
    return this.#handed + this.#pos;
  }

  holdsAtLeast(bytes: number): boolean {
    // hot path: a UTF-16 unit is 1 to 3 bytes of UTF-8, so most answers need no encoding.
    const written = this.#handed + this.#pos;
    if (written + this.#textUnits >= bytes) return true;
    if (written + this.#textUnits * MAX_UTF8_PER_UNIT < bytes) return false;
    return this.size >= bytes;
  }

  // hot path
  append(value: T): void {
    this.#appendText(this.#encoder.encode(value));
    this.touched = true;
  }

  #appendText(text: string): void {
    if ((this.#textUnits + text.length) * MAX_UTF8_PER_UNIT > this.#bufferBytes - this.#pos) {
      this.#spill();
      if (text.length * MAX_UTF8_PER_UNIT > this.#bufferBytes) {
        // A record larger than the buffer goes to the channel on its own.
        const bytes = Buffer.from(text, "utf8");
        this.#channel.write(bytes, this.#handed);
        this.#handed += bytes.byteLength;
        return;
      }
    }
    this.#texts.push(text);
    this.#textUnits += text.length;
    if (this.#texts.length === TEXTS_PER_WRITE) this.#writeTexts();
  }

  #writeTexts(): void {
    const texts = this.#texts;
    if (texts.length === 0) return;
    this.#pos += this.#buffer.write(texts.length === 1 ? texts[0]! : texts.join(""), this.#pos, "utf8");
    texts.length = 0;
    this.#textUnits = 0;
  }

  /** The buffer goes to the channel, which owns it from now on; a fresh one takes its place. */
  #spill(): void {
    this.#writeTexts();
    if (this.#pos === 0) return;
    this.#channel.write(this.#buffer.subarray(0, this.#pos), this.#handed);
    this.#handed += this.#pos;
    this.#buffer = Buffer.allocUnsafe(this.#bufferBytes);
    this.#pos = 0;
  }

  flush(): Promise<void> {
    this.#spill();
    return this.#channel.settled();
  }

  persist(): Promise<number> {
    this.#spill();
    const length = this.#handed;
    this.#channel.sync();
    return this.#channel.settled().then(() => length);
  }

  closeForCommit(): Promise<PendingPart> {
    this.#spill();
    return closeForCommit(this.#channel, this, this.#handed);
  }

  abandon(): void {
    this.#channel.abandon();
  }
}

/**
 * The end of a part of either format once all its `length` bytes are handed to `channel`: synced,
 * closed, and then pending, as the committable that names it.
 */
export function closeForCommit(channel: FileChannel, part: Pick<PartPlacement, "bucket" | "tmp" | "name">, length: number): Promise<PendingPart> {
  channel.sync();
  channel.close();
  return channel.settled().then(() => ({ v: 1, bucket: part.bucket, tmp: part.tmp, name: part.name, length }));
}
