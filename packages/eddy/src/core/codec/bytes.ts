/**
 * Growable byte writer and bounds-checked byte reader: the primitives every batch codec and the
 * frame layer write with. All multi-byte values are little-endian.
 *
 * Primitive layouts (shared by every format built on these classes):
 *
 *   u8 / u16 / u32 / i32 / f64   1 / 2 / 4 / 4 / 8 bytes, little-endian, unaligned.
 *   varuint                      unsigned LEB128 of an integer in [0, 2^32 − 1]: 7 bits per byte,
 *                                least significant group first, high bit set on all but the last
 *                                byte; 1–5 bytes, always the shortest form.
 *   string                       varuint h, then the payload. h = 2·len + enc:
 *                                  enc 0: `len` bytes of UTF-8 (the string is well-formed UTF-16);
 *                                  enc 1: `len` UTF-16 code units, 2·len bytes little-endian
 *                                         (used for strings holding lone surrogates, which UTF-8
 *                                         cannot carry; no alignment).
 *   align(n)                     zero bytes up to the next multiple of n, counted from the
 *                                writer's byte 0 (the reader's `start`).
 *   u16Array                     align(2), then count × u16 (a view when aligned, like f64Array)
 *   i32Array                     align(4), then count × i32 (a view when aligned, like f64Array)
 *   f64Array                     align(8), then count × f64; the reader returns a zero-copy
 *                                Float64Array view when the underlying address is 8-aligned.
 *
 * Alignment is relative to the start of the encoding, so a frame header written before the codec
 * output shifts nothing: the reader is constructed with the offset where the writer's byte 0 lies.
 */
import { isAscii } from "node:buffer";
import { CodecError } from "./codec-error.ts";

/** Whether typed-array views use little-endian byte order (every platform Node ships on today). */
export const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

type NumberArray = Float64Array | Int32Array | Uint16Array;

/** How a reader takes an array of one number type: element width, view, little-endian read. */
interface NumberArrayKind<A extends NumberArray> {
  readonly width: 2 | 4 | 8;
  readonly what: string;
  view(buffer: ArrayBufferLike, at: number, count: number): A;
  read(view: DataView, offset: number): number;
}

const F64_ARRAY: NumberArrayKind<Float64Array> = {
  width: 8,
  what: "f64 values",
  view: (buffer, at, count) => new Float64Array(buffer, at, count),
  read: (view, offset) => view.getFloat64(offset, true),
};
const I32_ARRAY: NumberArrayKind<Int32Array> = {
  width: 4,
  what: "i32 values",
  view: (buffer, at, count) => new Int32Array(buffer, at, count),
  read: (view, offset) => view.getInt32(offset, true),
};
const U16_ARRAY: NumberArrayKind<Uint16Array> = {
  width: 2,
  what: "u16 values",
  view: (buffer, at, count) => new Uint16Array(buffer, at, count),
  read: (view, offset) => view.getUint16(offset, true),
};

const MAX_VARUINT = 0xffff_ffff;
/** Writers that grew past this are shrunk back on `finish()` so one huge batch is not kept. */
const RETAIN_MAX_BYTES = 16 * 1024 * 1024;
/** Strings up to this length are tried as ASCII by hand; a native call costs more below it. */
const SHORT_STRING = 64;
/** String columns averaging at least this many characters are joined before encoding (see joinedString). */
const JOIN_MIN_AVERAGE = 16;
/** Characters per joined chunk: a one-byte string of this size is still allocated in the young generation. */
const JOIN_CHUNK_CHARS = 16 * 1024;
/** Strings up to this many bytes are decoded as ASCII by hand (measured: ~30 ns vs ~85 ns native). */
const SHORT_DECODE = 16;
const UTF16_CHUNK = 4096;

const encoder = new TextEncoder();
// fatal: corrupt UTF-8 throws instead of decoding to U+FFFD; ignoreBOM: a leading U+FEFF is data.
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

// `String.prototype.isWellFormed` exists from Node 20; the lib target (ES2022) does not declare it.
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `s` is well-formed UTF-16 (no lone surrogate), i.e. survives a UTF-8 round trip. */
export function isWellFormedString(s: string): boolean {
  return isWellFormed !== undefined ? isWellFormed.call(s) : !LONE_SURROGATE.test(s);
}

/** Number of bytes `varuint(value)` writes. */
export function varuintSize(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x20_0000 ? 3 : value < 0x1000_0000 ? 4 : 5;
}

/**
 * Buffers kept for reuse, in sizes `bufferBytes` × 2^k. A fresh buffer is expensive twice over:
 * the first touch of each 4 KiB page is a page fault, measured at ~17 µs per page on the 2-core
 * development VM (a fresh 40 MB buffer: ~170 ms to fill the first time, 3 ms the second); and V8
 * counts buffers as external memory, each 64 MiB more of which starts a full collection of the
 * heap (seconds, for a task holding gigabytes of keyed state). Large writers that run again and
 * again (checkpoint serialization) take their buffers from a pool and give them back when the
 * bytes are written; one that outgrows its buffer (a key group larger than it) takes the next size.
 * The pool keeps at most `maxRetainedBytes`.
 */
export class BufferPool {
  /** Free buffers by size class k (byteLength `bufferBytes` × 2^k). */
  readonly #free: ArrayBuffer[][] = [];
  #retained = 0;

  constructor(
    readonly bufferBytes: number,
    readonly maxRetainedBytes: number,
  ) {}

  /** A buffer of at least `minBytes` (`bufferBytes` × 2^k): a pooled one when there is one of that size, else a fresh one. Not zeroed. */
  acquire(minBytes: number): ArrayBuffer {
    let k = 0;
    while (this.bufferBytes * 2 ** k < minBytes) k++;
    const buffer = this.#free[k]?.pop();
    if (buffer === undefined) return new ArrayBuffer(this.bufferBytes * 2 ** k);
    this.#retained -= buffer.byteLength;
    return buffer;
  }

  /**
   * Takes back buffers nothing uses any more (the caller promises: no view of them is read or
   * written again). Buffers of other sizes, and those beyond the limit, are left to the GC.
   */
  release(buffers: Iterable<ArrayBufferLike>): void {
    for (const buffer of buffers) {
      if (!(buffer instanceof ArrayBuffer)) continue;
      const k = Math.log2(buffer.byteLength / this.bufferBytes);
      if (!Number.isInteger(k) || k < 0) continue;
      if (this.#retained + buffer.byteLength > this.maxRetainedBytes) continue;
      const free = (this.#free[k] ??= []);
      if (free.includes(buffer)) continue;
      free.push(buffer);
      this.#retained += buffer.byteLength;
    }
  }

  /** Bytes held for reuse. */
  get retainedBytes(): number {
    return this.#retained;
  }
}

/**
 * Writes `s` at `at` as one byte per char if it is all ASCII; returns false (having written a
 * prefix the caller overwrites) at its first non-ASCII char. The caller ensured the room.
 */
function writeAscii(s: string, u8: Uint8Array, at: number): boolean {
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return false;
    u8[at + i] = c;
  }
  return true;
}

export class ByteWriter {
  readonly #initialCapacity: number;
  readonly #pool: BufferPool | undefined;
  #buffer: ArrayBuffer;
  #u8: Uint8Array;
  #view: DataView;
  /** A Node Buffer over #buffer, made when first needed (its UTF-8 writer is the fastest). */
  #node: Buffer | undefined = undefined;
  /** Bytes written; always ≤ #buffer.byteLength. */
  #pos = 0;
  /** Start of the bytes not yet handed out by `take()`; what lies before it belongs to views. */
  #taken = 0;

  /** With a `pool`, buffers come from it (and those the writer outgrows before any `take` go back). */
  constructor(initialCapacity = 4096, pool?: BufferPool) {
    this.#initialCapacity = Math.max(64, initialCapacity);
    this.#pool = pool;
    this.#buffer = pool?.acquire(this.#initialCapacity) ?? new ArrayBuffer(this.#initialCapacity);
    this.#u8 = new Uint8Array(this.#buffer);
    this.#view = new DataView(this.#buffer);
  }

  /** Bytes written since construction or the last `reset()`/`finish()`/`take()`. */
  get length(): number {
    return this.#pos - this.#taken;
  }

  /** Starts over, keeping the buffer (unless views were taken from it, or it grew huge). */
  reset(): void {
    this.#pos = 0;
    if (this.#taken !== 0 || this.#buffer.byteLength > RETAIN_MAX_BYTES) this.#release();
  }

  /**
   * The bytes written since the last reset/finish/take, as a view of the writer's buffer without
   * copying. The caller only borrows it: it is valid until the writer is next written to or
   * reset. For bytes that are copied on at once (a frame into a transport).
   */
  written(): Uint8Array {
    return this.#u8.subarray(this.#taken, this.#pos);
  }

  /**
   * Returns a copy of the written bytes, exactly `length` long, which the caller owns and may
   * transfer; then resets the writer, which keeps its own buffer for the next batch.
   */
  finish(): ArrayBuffer {
    const out = this.#buffer.slice(this.#taken, this.#pos);
    this.#pos = 0;
    if (this.#taken !== 0 || this.#buffer.byteLength > RETAIN_MAX_BYTES) this.#release();
    return out;
  }

  /**
   * Returns the bytes written since the last `take()` (or construction, reset, finish) as a view
   * of the writer's buffer, without copying; the caller owns it. The writer never writes over a
   * view it handed out: it goes on after it, 8-aligned (so `align` keeps meaning the same relative
   * to each view's byte 0), and when the buffer is full it starts a new one, copying only the bytes
   * not taken yet. For many pieces that end up together, such as the sections of a checkpoint file:
   * construct with a capacity of a few megabytes so a buffer holds many pieces.
   */
  take(): Uint8Array {
    // An empty view ties no buffer (so a pool never sees a buffer as free while a view holds it).
    if (this.#pos === this.#taken) return new Uint8Array(0);
    const view = this.#u8.subarray(this.#taken, this.#pos);
    const next = Math.min((this.#pos + 7) & ~7, this.#buffer.byteLength);
    this.#pos = this.#taken = next;
    return view;
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.#pos + n;
    if (need > this.#buffer.byteLength) this.#grow(need);
  }

  u8(value: number): void {
    this.ensure(1);
    this.#u8[this.#pos++] = value;
  }

  u16(value: number): void {
    this.ensure(2);
    this.#view.setUint16(this.#pos, value, true);
    this.#pos += 2;
  }

  u32(value: number): void {
    this.ensure(4);
    this.#view.setUint32(this.#pos, value, true);
    this.#pos += 4;
  }

  i32(value: number): void {
    this.ensure(4);
    this.#view.setInt32(this.#pos, value, true);
    this.#pos += 4;
  }

  f64(value: number): void {
    this.ensure(8);
    this.#view.setFloat64(this.#pos, value, true);
    this.#pos += 8;
  }

  /** Writes an integer in [0, 2^32 − 1] as LEB128. */
  varuint(value: number): void {
    if (!(value >= 0 && value <= MAX_VARUINT && Math.floor(value) === value)) {
      throw new RangeError(`varuint out of range: ${value}`);
    }
    this.ensure(5);
    this.#putVaruint(value);
  }

  /** Writes a varuint into room the caller has ensured. */
  #putVaruint(value: number): void {
    const u8 = this.#u8;
    let p = this.#pos;
    while (value >= 0x80) {
      u8[p++] = (value & 0x7f) | 0x80;
      value = Math.floor(value / 128);
    }
    u8[p++] = value;
    this.#pos = p;
  }

  /** Pads with zero bytes to the next multiple of `n` (a power of two) from byte 0. */
  align(n: number): void {
    const pad = (n - (this.#pos & (n - 1))) & (n - 1);
    if (pad === 0) return;
    this.ensure(pad);
    this.#u8.fill(0, this.#pos, this.#pos + pad);
    this.#pos += pad;
  }

  /** align(8), then the first `count` values as f64. */
  f64Array(values: ArrayLike<number>, count: number): void {
    this.align(8);
    this.ensure(count * 8);
    if (HOST_LITTLE_ENDIAN) {
      const out = new Float64Array(this.#buffer, this.#pos, count);
      if (values instanceof Float64Array) out.set(values.subarray(0, count));
      else for (let i = 0; i < count; i++) out[i] = values[i] as number; // hot path
    } else {
      for (let i = 0; i < count; i++) this.#view.setFloat64(this.#pos + i * 8, values[i] as number, true);
    }
    this.#pos += count * 8;
  }

  /** align(2), then the first `count` values as u16 (callers check they are in [0, 65535]). */
  u16Array(values: ArrayLike<number>, count: number): void {
    this.align(2);
    this.ensure(count * 2);
    if (HOST_LITTLE_ENDIAN) {
      const out = new Uint16Array(this.#buffer, this.#pos, count);
      // hot path: a whole array of small integers is one native copy (~3× the loop's speed)
      if (Array.isArray(values) && values.length === count) out.set(values as number[]);
      else for (let i = 0; i < count; i++) out[i] = values[i] as number;
    } else {
      for (let i = 0; i < count; i++) this.#view.setUint16(this.#pos + i * 2, values[i] as number, true);
    }
    this.#pos += count * 2;
  }

  /** align(4), then the first `count` values as i32 (callers check they are int32). */
  i32Array(values: ArrayLike<number>, count: number): void {
    this.align(4);
    this.ensure(count * 4);
    if (HOST_LITTLE_ENDIAN) {
      const out = new Int32Array(this.#buffer, this.#pos, count);
      for (let i = 0; i < count; i++) out[i] = values[i] as number; // hot path
    } else {
      for (let i = 0; i < count; i++) this.#view.setInt32(this.#pos + i * 4, values[i] as number, true);
    }
    this.#pos += count * 4;
  }

  /**
   * align(8), then room for `count` f64 values, returned as a view to fill (host byte order, so
   * only on little-endian hosts). Valid until the writer next grows: ensure the room of everything
   * reserved together first.
   */
  reserveF64(count: number): Float64Array {
    this.align(8);
    this.ensure(count * 8);
    const view = new Float64Array(this.#buffer, this.#pos, count);
    this.#pos += count * 8;
    return view;
  }

  /** align(4), then room for `count` i32 values, as `reserveF64`. */
  reserveI32(count: number): Int32Array {
    this.align(4);
    this.ensure(count * 4);
    const view = new Int32Array(this.#buffer, this.#pos, count);
    this.#pos += count * 4;
    return view;
  }

  bytes(data: Uint8Array): void {
    this.ensure(data.length);
    this.#u8.set(data, this.#pos);
    this.#pos += data.length;
  }

  /** Writes a `string` (see the header): UTF-8 when well-formed, UTF-16 code units otherwise. */
  string(s: string): void {
    const n = s.length;
    if (n < SHORT_STRING) {
      // ASCII by hand: the header is one byte (2·n < 128) and each char one byte.
      this.ensure(1 + n);
      if (writeAscii(s, this.#u8, this.#pos + 1)) {
        this.#u8[this.#pos] = n << 1;
        this.#pos += 1 + n;
        return;
      }
    }
    if (!isWellFormedString(s)) {
      this.#utf16(s);
      return;
    }
    // Encode after room for the longest possible header, then move the bytes back if the real
    // header is shorter, so the header stays in its shortest form.
    const maxBytes = n * 3;
    const room = varuintSize(maxBytes * 2);
    this.ensure(room + maxBytes);
    const at = this.#pos + room;
    const written = encoder.encodeInto(s, this.#u8.subarray(at, at + maxBytes)).written;
    const size = varuintSize(written * 2);
    if (size < room) this.#u8.copyWithin(this.#pos + size, at, at + written);
    this.#putVaruint(written * 2); // within the room ensured above: no growth, which would drop the bytes
    this.#pos += written;
  }

  /**
   * Writes the first `m` strings joined, as one `string`: the same bytes as
   * `string(strings.slice(0, m).join(""))`. Short strings (a column averaging under
   * JOIN_MIN_AVERAGE characters, e.g. keys like "k12") are encoded one by one where they go, ASCII
   * by hand; longer ones are joined in chunks of about JOIN_CHUNK_CHARS and each chunk encoded by
   * one native call (measured on Nexmark bid URLs and padding, 60–70 characters: ~45 ns per
   * string instead of ~75–180 ns one call per string; for 4-character keys, ~10 ns by hand
   * against ~20 joined). Chunks stay small enough for the young generation: joining a 500 KB
   * column at once allocated a large-object string per batch, 3× slower.
   */
  joinedString(strings: readonly string[], m: number): void {
    let chars = 0;
    for (let i = 0; i < m; i++) chars += (strings[i] as string).length;
    const maxBytes = chars * 3;
    const room = varuintSize(maxBytes * 2);
    this.ensure(room + maxBytes);
    const start = this.#pos + room;
    const end = chars >= JOIN_MIN_AVERAGE * m ? this.#writeJoinedChunks(strings, m, start) : this.#writeEach(strings, m, start);
    if (end < 0) {
      // A lone surrogate (it may pair up with a neighbour once joined): let `string` decide on the whole.
      this.string(strings.slice(0, m).join(""));
      return;
    }
    const written = end - start;
    const size = varuintSize(written * 2);
    if (size < room) this.#u8.copyWithin(this.#pos + size, start, end);
    this.#putVaruint(written * 2); // within the room ensured above
    this.#pos += written;
  }

  /**
   * Writes the lengths (in UTF-16 code units) of the first `m` strings, a varuint each: the bytes
   * of `varuint(strings[i].length)` for each, with one check for room.
   */
  stringLengths(strings: readonly string[], m: number): void {
    this.ensure(m * 5);
    const u8 = this.#u8;
    let p = this.#pos;
    for (let i = 0; i < m; i++) {
      const n = (strings[i] as string).length;
      if (n < 0x80) {
        u8[p++] = n;
        continue;
      }
      this.#pos = p;
      this.#putVaruint(n);
      p = this.#pos;
    }
    this.#pos = p;
  }

  /** Encodes each string at `p` on; returns the end, or -1 if one is not well-formed. */
  #writeEach(strings: readonly string[], m: number, p: number): number {
    const u8 = this.#u8;
    for (let i = 0; i < m; i++) {
      const s = strings[i] as string;
      const n = s.length;
      if (n < SHORT_STRING && writeAscii(s, u8, p)) {
        p += n;
        continue;
      }
      if (!isWellFormedString(s)) return -1;
      p += (this.#node ??= Buffer.from(this.#buffer)).write(s, p, "utf8");
    }
    return p;
  }

  /** Encodes the strings joined in chunks at `p` on; returns the end, or -1 if a chunk is not well-formed. */
  #writeJoinedChunks(strings: readonly string[], m: number, p: number): number {
    const node = (this.#node ??= Buffer.from(this.#buffer));
    let from = 0;
    let chars = 0;
    for (let i = 0; i < m; i++) {
      chars += (strings[i] as string).length;
      if (chars < JOIN_CHUNK_CHARS && i < m - 1) continue;
      const chunk = from === 0 && i === strings.length - 1 ? strings.join("") : strings.slice(from, i + 1).join("");
      if (!isWellFormedString(chunk)) return -1;
      p += node.write(chunk, p, "utf8");
      from = i + 1;
      chars = 0;
    }
    return p;
  }

  #utf16(s: string): void {
    const n = s.length;
    this.varuint(n * 2 + 1);
    this.ensure(n * 2);
    const u8 = this.#u8;
    let p = this.#pos;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      u8[p++] = c & 0xff;
      u8[p++] = c >>> 8;
    }
    this.#pos = p;
  }

  #grow(need: number): void {
    const taken = this.#taken;
    if (taken !== 0) {
      // Views of the bytes before `taken` are out there: move only the rest to a new buffer.
      const live = this.#pos - taken;
      let capacity = this.#initialCapacity;
      while (capacity < need - taken) capacity *= 2;
      const old = this.#u8;
      this.#replaceBuffer(capacity);
      this.#u8.set(old.subarray(taken, this.#pos));
      this.#pos = live;
      this.#taken = 0;
      return;
    }
    let capacity = this.#buffer.byteLength * 2;
    while (capacity < need) capacity *= 2;
    const old = this.#u8;
    this.#replaceBuffer(capacity);
    this.#u8.set(old.subarray(0, this.#pos));
    this.#pool?.release([old.buffer]); // no view of it was handed out (nothing was taken)
  }

  /** Leaves the buffer to the views taken from it; starts afresh. */
  #release(): void {
    this.#taken = 0;
    this.#replaceBuffer(this.#initialCapacity);
  }

  #replaceBuffer(capacity: number): void {
    this.#node = undefined;
    this.#buffer = this.#pool?.acquire(capacity) ?? new ArrayBuffer(capacity);
    this.#u8 = new Uint8Array(this.#buffer);
    this.#view = new DataView(this.#buffer);
  }
}

/**
 * Reads what a ByteWriter wrote. Every read checks the bounds and throws CodecError
 * "CORRUPT_FRAME" ("truncated: …") instead of reading past `end`.
 */
export class ByteReader {
  readonly #buffer: ArrayBufferLike;
  readonly #u8: Uint8Array;
  readonly #view: DataView;
  /** Absolute offset of the writer's byte 0; alignment is relative to it. */
  readonly #start: number;
  readonly #end: number;
  /** Absolute read position; #start ≤ #pos ≤ #end. */
  #pos: number;

  /**
   * Reads `buffer[start, end)`; `start` is where the writer's byte 0 lies. The buffer may be shared
   * (a ring between threads): views the reader returns are then views of shared memory.
   */
  constructor(buffer: ArrayBufferLike, start = 0, end = buffer.byteLength) {
    if (!(start >= 0 && start <= end && end <= buffer.byteLength)) {
      throw new RangeError(`invalid range [${start}, ${end}) of a ${buffer.byteLength}-byte buffer`);
    }
    this.#buffer = buffer;
    this.#u8 = new Uint8Array(buffer);
    this.#view = new DataView(buffer);
    this.#start = start;
    this.#end = end;
    this.#pos = start;
  }

  /** Bytes read so far, counted from `start` (equals the writer's `length` at the same point). */
  get offset(): number {
    return this.#pos - this.#start;
  }

  get remaining(): number {
    return this.#end - this.#pos;
  }

  /** Throws "truncated" unless `n` more bytes are available. */
  need(n: number): void {
    if (n > this.#end - this.#pos) {
      throw CodecError.corrupt(`truncated: needs ${n} bytes at offset ${this.offset}, ${this.remaining} remain`);
    }
  }

  /** Throws unless `count` items of at least `minBytes` each can still follow. */
  checkCount(count: number, minBytes: number, what: string): void {
    if (count * minBytes > this.#end - this.#pos) {
      throw CodecError.corrupt(`truncated: ${count} ${what} cannot fit in the ${this.remaining} remaining bytes`);
    }
  }

  skip(n: number): void {
    this.need(n);
    this.#pos += n;
  }

  u8(): number {
    this.need(1);
    return this.#u8[this.#pos++] as number;
  }

  /** The byte `ahead` bytes after the position, without reading it. */
  peekU8(ahead: number): number {
    this.need(ahead + 1);
    return this.#u8[this.#pos + ahead] as number;
  }

  u16(): number {
    this.need(2);
    const v = this.#view.getUint16(this.#pos, true);
    this.#pos += 2;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.#view.getUint32(this.#pos, true);
    this.#pos += 4;
    return v;
  }

  i32(): number {
    this.need(4);
    const v = this.#view.getInt32(this.#pos, true);
    this.#pos += 4;
    return v;
  }

  f64(): number {
    this.need(8);
    const v = this.#view.getFloat64(this.#pos, true);
    this.#pos += 8;
    return v;
  }

  varuint(): number {
    const u8 = this.#u8;
    const end = this.#end;
    let p = this.#pos;
    if (p < end) {
      const b = u8[p] as number;
      if (b < 0x80) {
        this.#pos = p + 1;
        return b;
      }
    }
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 5; i++) {
      if (p >= end) this.need(1);
      const b = u8[p++] as number;
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (value > MAX_VARUINT) break;
        this.#pos = p;
        return value;
      }
      scale *= 128;
    }
    throw CodecError.corrupt(`varuint longer than 5 bytes or above 2^32 − 1 at offset ${this.offset}`);
  }

  align(n: number): void {
    const pad = (n - ((this.#pos - this.#start) & (n - 1))) & (n - 1);
    if (pad !== 0) this.skip(pad);
  }

  /** align(8), then `count` f64 values: a view into the buffer when aligned, else a copy. */
  f64Array(count: number): Float64Array {
    return this.#numbers(count, F64_ARRAY);
  }

  /** align(2), then `count` u16 values: a view into the buffer when aligned, else a copy. */
  u16Array(count: number): Uint16Array {
    return this.#numbers(count, U16_ARRAY);
  }

  /** align(4), then `count` i32 values: a view into the buffer when aligned, else a copy. */
  i32Array(count: number): Int32Array {
    return this.#numbers(count, I32_ARRAY);
  }

  #numbers<A extends NumberArray>(count: number, kind: NumberArrayKind<A>): A {
    const width = kind.width;
    this.align(width);
    this.checkCount(count, width, kind.what);
    const at = this.#pos;
    this.#pos += count * width;
    if (HOST_LITTLE_ENDIAN && (at & (width - 1)) === 0) return kind.view(this.#buffer, at, count);
    const out = kind.view(new ArrayBuffer(count * width), 0, count);
    for (let i = 0; i < count; i++) out[i] = kind.read(this.#view, at + i * width);
    return out;
  }

  /** `n` bytes as a view into the buffer (valid as long as the buffer is; copy to keep). */
  bytes(n: number): Uint8Array {
    this.need(n);
    const view = this.#u8.subarray(this.#pos, this.#pos + n);
    this.#pos += n;
    return view;
  }

  /**
   * The bytes of the next `string` if it is UTF-8 and all ASCII, so that its characters are its
   * bytes (e.g. to decode parts of it on their own); the string is then consumed. Otherwise
   * undefined, and nothing is consumed.
   */
  asciiStringBytes(): Uint8Array | undefined {
    const at = this.#pos;
    const h = this.varuint();
    const len = Math.floor(h / 2);
    if ((h & 1) === 0) {
      this.need(len);
      const bytes = this.#u8.subarray(this.#pos, this.#pos + len);
      if (isAscii(bytes)) {
        this.#pos += len;
        return bytes;
      }
    }
    this.#pos = at;
    return undefined;
  }

  /** Reads a `string` (see the header). Invalid UTF-8 throws CORRUPT_FRAME. */
  string(): string {
    const h = this.varuint();
    const len = Math.floor(h / 2);
    if ((h & 1) === 1) return this.#utf16(len);
    this.need(len);
    const u8 = this.#u8;
    const start = this.#pos;
    if (len <= SHORT_DECODE) {
      const codes = new Array<number>(len);
      let i = 0;
      for (; i < len; i++) {
        const c = u8[start + i] as number;
        if (c >= 0x80) break;
        codes[i] = c;
      }
      if (i === len) {
        this.#pos = start + len;
        return String.fromCharCode.apply(null, codes);
      }
    }
    let s: string;
    try {
      s = decoder.decode(u8.subarray(start, start + len));
    } catch (cause) {
      throw CodecError.corrupt(`invalid UTF-8 in a string at offset ${this.offset}`, cause);
    }
    this.#pos = start + len;
    return s;
  }

  #utf16(len: number): string {
    this.checkCount(len, 2, "UTF-16 code units");
    const u8 = this.#u8;
    let p = this.#pos;
    const units = new Uint16Array(Math.min(len, UTF16_CHUNK));
    let s = "";
    for (let done = 0; done < len; ) {
      const chunk = Math.min(len - done, UTF16_CHUNK);
      for (let i = 0; i < chunk; i++, p += 2) units[i] = (u8[p] as number) | ((u8[p + 1] as number) << 8);
      s += String.fromCharCode.apply(null, chunk === units.length ? (units as unknown as number[]) : (units.subarray(0, chunk) as unknown as number[]));
      done += chunk;
    }
    this.#pos = p;
    return s;
  }
}
