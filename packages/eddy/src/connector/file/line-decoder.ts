/**
 * Lines out of a split's byte chunks, by the boundary rule of file-split.ts, with the byte offset
 * and line number of the next unread line at any time.
 *
 * Cost: each chunk's complete lines are decoded to one string (one UTF-8 decode per chunk, not per
 * line) and cut at '\n'; a line spanning chunks is carried over (copied once per chunk it spans).
 * Byte offsets are not tracked per line: when the decoded text has as many UTF-16 units as bytes
 * (ASCII, the common case) a character index is a byte offset; otherwise `offset()` measures the
 * consumed prefix, which it is asked for only at snapshots and bad records.
 */
const NEWLINE = 0x0a;

export class LineDecoder {
  /** Bytes of the line in progress (after the last newline fed), not yet decoded. */
  #carry: Buffer | undefined;
  /** Stream offset of #carry[0] (or of the next chunk when there is no carry). */
  #carryOffset: number;
  /** Decoded complete lines (each ending in '\n'), and the read position in it. */
  #text = "";
  #pos = 0;
  /** Stream offset of #text[0], and how many bytes #text decodes. */
  #textOffset: number;
  #textBytes = 0;
  /** Whether #text has one UTF-16 unit per byte (character index = byte index). */
  #unitPerByte = true;
  /** Bytes at the start still to drop: through the first newline (a split starting inside the file). */
  #skipping: boolean;
  /** One past the last byte at which an owned line may start; -1: none (to the end). */
  readonly #end: number;
  /** No more lines after #text: the end of the stream was fed, or the line that crosses #end was reached. */
  #done = false;
  /** Lines returned so far. */
  linesRead: number;

  /** Reads the stream from `offset`; `skipFirst`: offset is `start - 1` of a split starting inside the file. */
  constructor(offset: number, end: number, skipFirst: boolean, linesRead: number) {
    this.#carryOffset = offset;
    this.#textOffset = offset;
    this.#end = end;
    this.#skipping = skipFirst;
    this.linesRead = linesRead;
  }

  /** Whether every owned line has been fed (more chunks would not be used). */
  get inputComplete(): boolean {
    return this.#done;
  }

  /**
   * Ends the input where it is, dropping the line in progress (a compressed stream that broke off
   * mid-line); returns that partial line's text for a bad record.
   */
  abandon(): string {
    const partial = this.#carry?.toString("utf8") ?? "";
    this.#carry = undefined;
    this.#done = true;
    return partial;
  }

  /** Whether `nextLine` would return a line now. */
  get hasLine(): boolean {
    return this.#pos < this.#text.length;
  }

  /** Feeds the next chunk, or null at the end of the stream. Call only when `hasLine` is false. */
  feed(chunk: Buffer | null): void {
    if (this.#done) return;
    // While skipping, the position stays at start - 1, so a split restored from it skips again.
    if (!this.#skipping) this.#textOffset = this.#carryOffset;
    this.#text = "";
    this.#pos = 0;
    this.#textBytes = 0;
    if (chunk === null) {
      this.#done = true;
      const carry = this.#carry;
      this.#carry = undefined;
      // The last line of the stream, without a newline: owned if it starts before the end.
      if (carry !== undefined && carry.length > 0 && !this.#skipping && (this.#end < 0 || this.#carryOffset < this.#end)) {
        this.#decode(carry, carry.length);
        this.#text += "\n";
      }
      return;
    }
    let bytes = chunk;
    let bytesOffset = this.#carryOffset;
    if (this.#skipping) {
      const nl = bytes.indexOf(NEWLINE);
      if (nl < 0) {
        this.#carryOffset += bytes.length;
        return;
      }
      this.#skipping = false;
      bytes = bytes.subarray(nl + 1);
      bytesOffset += nl + 1;
      this.#carryOffset = bytesOffset;
      this.#textOffset = bytesOffset;
      // The line that began before the split runs past its end: the split owns no line.
      if (this.#end >= 0 && bytesOffset >= this.#end) {
        this.#done = true;
        return;
      }
    } else if (this.#carry !== undefined) {
      bytes = Buffer.concat([this.#carry, bytes]);
      this.#carry = undefined;
    }
    // The last byte to decode: the newline ending the line that crosses #end, or the last newline.
    let last = -1;
    if (this.#end >= 0) {
      last = bytes.indexOf(NEWLINE, Math.max(0, this.#end - 1 - bytesOffset));
      if (last >= 0) this.#done = true;
    }
    if (last < 0) last = bytes.lastIndexOf(NEWLINE);
    if (last < bytes.length - 1 && !this.#done) this.#carry = bytes.subarray(last + 1);
    this.#carryOffset = bytesOffset + last + 1;
    if (last >= 0) this.#decode(bytes, last + 1);
  }

  #decode(bytes: Buffer, length: number): void {
    this.#text = bytes.toString("utf8", 0, length);
    this.#textBytes = length;
    this.#unitPerByte = this.#text.length === length;
    // A byte-order mark at the very start of the stream is not part of the first line.
    if (this.#textOffset === 0 && this.#text.charCodeAt(0) === 0xfeff) this.#pos = 1;
  }

  /** The next line (without its '\n' or '\r\n'), or undefined when the fed text is used up. */
  // hot path
  nextLine(): string | undefined {
    const text = this.#text;
    const pos = this.#pos;
    if (pos >= text.length) return undefined;
    const nl = text.indexOf("\n", pos);
    this.#pos = nl + 1;
    this.linesRead++;
    return text.slice(pos, nl > pos && text.charCodeAt(nl - 1) === 0x0d ? nl - 1 : nl);
  }

  /** Stream byte offset of the next unread line. */
  offset(): number {
    return this.#offsetAt(this.#pos);
  }

  /** Stream byte offset at which the line starting at character `index` of the current text begins. */
  #offsetAt(index: number): number {
    const units = Math.min(index, this.#text.length);
    const bytes = this.#unitPerByte ? units : Buffer.byteLength(this.#text.slice(0, units));
    // The '\n' appended after a last line without one has no byte.
    return this.#textOffset + Math.min(bytes, this.#textBytes);
  }

  /** Marks the current position, for `offsetOfMark` (a bad record's offset). */
  mark(): number {
    return this.#pos;
  }

  offsetOfMark(mark: number): number {
    return this.#offsetAt(mark);
  }
}
