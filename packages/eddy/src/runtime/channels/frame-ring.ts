/**
 * A frame transport for one channel between two threads of one process: a single-producer,
 * single-consumer ring of bytes in a SharedArrayBuffer. Frames are copied into the ring by the
 * sender and decoded in place by the receiver; no message is posted per frame, no buffer is
 * allocated per frame, and credit travels back through a shared counter. Each channel has its own
 * ring, so a channel the receiver does not read (a blocked input during barrier alignment) never
 * holds up another one.
 *
 * Layout: a 128-byte header of Int32 slots, the writer's and the reader's on separate cache lines,
 * then `capacity` bytes of data (a power of two):
 *
 *   slot 0   write    bytes written so far (wraps at 2^32; published after a record is complete)
 *   slot 1   pending  1 while the writer holds frames that did not fit (it waits for room)
 *   slot 16  read     bytes the reader has released (wraps at 2^32)
 *   slot 17  credit   records of credit the reader has returned so far (wraps at 2^32)
 *
 * Data is a sequence of 8-aligned records: i32 length, i32 flags, `length` bytes, zero padding
 * to 8. Flags: 1 = more (a fragment; the frame continues in the next record), 2 = wrap (no
 * payload: the next record starts at data offset 0). A record never straddles the end of the data
 * area, so a frame of at most `maxRecordBytes` is one contiguous view; longer frames are cut into
 * fragments, which the reader joins into a buffer of its own.
 *
 * Only positions published with Atomics are trusted across threads: a record becomes visible when
 * `write` moves past it, and its bytes are reused only once `read` has moved past it. A writer
 * that dies half way through a record therefore leaves nothing visible; one that dies between the
 * fragments of a frame leaves an incomplete frame that is never delivered.
 */
import type { FrameInlet, FrameOutlet } from "./remote-channel.ts";

const HEADER_BYTES = 128;
const WRITE = 0;
const PENDING = 1;
const READ = 16;
const CREDIT = 17;
const FLAG_MORE = 1;
const FLAG_WRAP = 2;
const RECORD_HEADER_BYTES = 8;
/** The reader keeps a joining buffer up to this size between fragmented frames. */
const RETAIN_JOIN_BYTES = 4 * 1024 * 1024;

const align8 = (n: number): number => (n + 7) & ~7;

/** A ring's shared memory: allocate once, hand the same buffer to the writer and the reader. */
export function createFrameRing(capacityBytes: number): SharedArrayBuffer {
  if (!(capacityBytes >= 256 && capacityBytes <= 2 ** 30 && (capacityBytes & (capacityBytes - 1)) === 0)) {
    throw new RangeError(`ring capacity must be a power of two in [256, 2^30] bytes, got ${capacityBytes}`);
  }
  return new SharedArrayBuffer(HEADER_BYTES + capacityBytes);
}

/** The ring size for a channel of `capacityRecords` (~32 bytes a record, 64 KiB to 4 MiB). */
export function frameRingBytesFor(capacityRecords: number): number {
  let bytes = 64 * 1024;
  while (bytes < capacityRecords * 32 && bytes < 4 * 1024 * 1024) bytes *= 2;
  return bytes;
}

/** Views and constants both ends derive from the shared buffer. */
class RingViews {
  readonly header: Int32Array;
  readonly data: Uint8Array;
  /** The data area as Int32 slots, for record headers (8-aligned, so always aligned). */
  readonly words: Int32Array;
  readonly capacity: number;
  readonly mask: number;

  constructor(shared: SharedArrayBuffer) {
    this.capacity = shared.byteLength - HEADER_BYTES;
    if (!(this.capacity >= 256 && (this.capacity & (this.capacity - 1)) === 0)) throw new RangeError("not a frame ring");
    this.header = new Int32Array(shared, 0, HEADER_BYTES / 4);
    this.data = new Uint8Array(shared, HEADER_BYTES, this.capacity);
    this.words = new Int32Array(shared, HEADER_BYTES, this.capacity / 4);
    this.mask = this.capacity - 1;
  }
}

/** A frame waiting on the writer's side for room, and how much of it is in the ring already. */
interface Held {
  readonly bytes: Uint8Array;
  at: number;
}

export class FrameRingWriter implements FrameOutlet {
  readonly #r: RingViews;
  /** Tells the reader's thread that something was published (it may sleep). */
  readonly #notify: () => void;
  /** The largest record payload: a quarter of the ring, so a record always fits once it drains. */
  readonly #maxChunk: number;
  /** Bytes written; equals the published `write` except while a write is in progress. */
  #write: number;
  /** The reader's position as last loaded; refreshed when it seems to leave too little room. */
  #read: number;
  #creditSeen: number;
  /** Frames (or their rests) that did not fit yet, oldest first; sent before anything newer. */
  readonly #held: Held[] = [];

  constructor(shared: SharedArrayBuffer, notify: () => void) {
    this.#r = new RingViews(shared);
    this.#notify = notify;
    this.#maxChunk = this.#r.capacity / 4 - RECORD_HEADER_BYTES;
    this.#write = Atomics.load(this.#r.header, WRITE);
    this.#read = Atomics.load(this.#r.header, READ);
    this.#creditSeen = Atomics.load(this.#r.header, CREDIT);
  }

  send(frame: Uint8Array): void {
    if (frame.length === 0) throw new RangeError("a frame has at least one byte");
    if (this.#held.length === 0) {
      const at = this.#writeFrom(frame, 0);
      if (at > 0) this.#notify();
      if (at === frame.length) return;
      this.#held.push({ bytes: frame.slice(at), at: 0 });
    } else {
      this.#held.push({ bytes: frame.slice(), at: 0 });
    }
    // Announce the wait before looking again, so a reader releasing meanwhile sees it (or we see its room).
    Atomics.store(this.#r.header, PENDING, 1);
    this.#drain();
  }

  get hasRoom(): boolean {
    if (this.#held.length === 0) return true;
    this.#drain();
    return this.#held.length === 0;
  }

  takeCredit(): number {
    const seen = Atomics.load(this.#r.header, CREDIT);
    const credit = (seen - this.#creditSeen) | 0;
    this.#creditSeen = seen;
    return credit;
  }

  /** Frames held for room (tests, metrics). */
  get heldFrames(): number {
    return this.#held.length;
  }

  #drain(): void {
    let wrote = false;
    while (this.#held.length > 0) {
      const head = this.#held[0]!;
      const at = this.#writeFrom(head.bytes, head.at);
      if (at > head.at) wrote = true;
      if (at < head.bytes.length) {
        head.at = at;
        break;
      }
      this.#held.shift();
    }
    if (this.#held.length === 0) Atomics.store(this.#r.header, PENDING, 0);
    if (wrote) this.#notify();
  }

  /**
   * Writes records of `bytes[at..]` while they fit and publishes them; returns how far it got.
   * hot path: one record per frame of up to a quarter of the ring
   */
  #writeFrom(bytes: Uint8Array, at: number): number {
    const { data, words, capacity, mask, header } = this.#r;
    const end = bytes.length;
    let write = this.#write;
    while (at < end) {
      const chunk = Math.min(end - at, this.#maxChunk);
      const need = RECORD_HEADER_BYTES + align8(chunk);
      const offset = write & mask;
      const toEnd = capacity - offset;
      const skip = need > toEnd ? toEnd : 0;
      if (capacity - ((write - this.#read) | 0) < skip + need) {
        this.#read = Atomics.load(header, READ);
        if (capacity - ((write - this.#read) | 0) < skip + need) break;
      }
      if (skip !== 0) {
        words[offset >> 2] = 0;
        words[(offset >> 2) + 1] = FLAG_WRAP;
        write = (write + skip) | 0;
      }
      const o = write & mask;
      const more = at + chunk < end;
      words[o >> 2] = chunk;
      words[(o >> 2) + 1] = more ? FLAG_MORE : 0;
      data.set(at === 0 && chunk === end ? bytes : bytes.subarray(at, at + chunk), o + RECORD_HEADER_BYTES);
      write = (write + need) | 0;
      at += chunk;
    }
    if (write !== this.#write) {
      this.#write = write;
      Atomics.store(header, WRITE, write);
    }
    return at;
  }
}

export class FrameRingReader implements FrameInlet {
  readonly #r: RingViews;
  /** Tells the writer's thread that room or credit appeared (it may sleep waiting for them). */
  readonly #notify: () => void;
  /** Start of the next record not yet looked at; ahead of the published `read` while a frame is held. */
  #cursor: number;
  /** The frame `peek` returned and `release` has not freed yet. */
  #current: Uint8Array | undefined = undefined;
  /** Whether #current lies in #join (a frame of several fragments) rather than in the ring. */
  #joined = false;
  #join = new Uint8Array(0);
  #joinLength = 0;

  constructor(shared: SharedArrayBuffer, notify: () => void) {
    this.#r = new RingViews(shared);
    this.#notify = notify;
    this.#cursor = Atomics.load(this.#r.header, READ);
  }

  get hasData(): boolean {
    return Atomics.load(this.#r.header, WRITE) !== this.#cursor;
  }

  get halfFull(): boolean {
    const queued = (Atomics.load(this.#r.header, WRITE) - Atomics.load(this.#r.header, READ)) | 0;
    return queued >= this.#r.capacity >>> 1;
  }

  peek(): Uint8Array | undefined {
    if (this.#current !== undefined) return this.#current;
    const { data, words, capacity, mask, header } = this.#r;
    const write = Atomics.load(header, WRITE);
    let skipped = false;
    while (this.#cursor !== write) {
      const start = this.#cursor;
      const offset = start & mask;
      const length = words[offset >> 2]!;
      const flags = words[(offset >> 2) + 1]!;
      if ((flags & FLAG_WRAP) !== 0) {
        this.#cursor = (start + capacity - offset) | 0;
        skipped = true;
        continue;
      }
      const payload = data.subarray(offset + RECORD_HEADER_BYTES, offset + RECORD_HEADER_BYTES + length);
      this.#cursor = (start + RECORD_HEADER_BYTES + align8(length)) | 0;
      if ((flags & FLAG_MORE) === 0 && this.#joinLength === 0) {
        // hot path: a whole frame in one record, decoded where it lies; its room is freed on release
        if (skipped) this.#publishRead(start);
        this.#current = payload;
        return payload;
      }
      // A fragment: copy it out and free its room at once, so the writer can send the rest.
      this.#append(payload);
      this.#publishRead(this.#cursor);
      skipped = false;
      if ((flags & FLAG_MORE) === 0) {
        this.#joined = true;
        this.#current = this.#join.subarray(0, this.#joinLength);
        return this.#current;
      }
    }
    if (skipped) this.#publishRead(this.#cursor);
    return undefined;
  }

  release(): void {
    if (this.#current === undefined) return;
    this.#current = undefined;
    if (this.#joined) {
      this.#joined = false;
      this.#joinLength = 0;
      if (this.#join.length > RETAIN_JOIN_BYTES) this.#join = new Uint8Array(0);
      return;
    }
    this.#publishRead(this.#cursor);
  }

  returnCredit(records: number): void {
    Atomics.add(this.#r.header, CREDIT, records);
    this.#notify();
  }

  /** Frees the ring up to `position`; wakes the writer if it waits for room. */
  #publishRead(position: number): void {
    const { header } = this.#r;
    Atomics.store(header, READ, position);
    if (Atomics.load(header, PENDING) !== 0) this.#notify();
  }

  #append(bytes: Uint8Array): void {
    const need = this.#joinLength + bytes.length;
    if (need > this.#join.length) {
      let size = Math.max(4096, this.#join.length * 2);
      while (size < need) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.#join.subarray(0, this.#joinLength));
      this.#join = grown;
    }
    this.#join.set(bytes, this.#joinLength);
    this.#joinLength = need;
  }
}
