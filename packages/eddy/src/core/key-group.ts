/**
 * Key groups: how a key is mapped to a key group and a key group to a parallel subtask.
 * Modelled on Flink's KeyGroupRangeAssignment: a handful of pure functions, each with its
 * preconditions written down and checked (violations throw RangeError).
 *
 *   keyGroup = murmur3_32(encodeKeyCanonical(key), 0) mod maxParallelism
 *   subtask  = floor(keyGroup * parallelism / maxParallelism)
 *   subtask i owns the contiguous range [ceil(i * maxP / p), ceil((i + 1) * maxP / p) - 1]
 *
 * The hash, the canonical key encoding and the range layout are part of the savepoint format:
 * state is stored per key group, so changing any of them moves keys to other key groups and
 * breaks every existing savepoint. key-group.test.ts pins them with fixture values.
 */

import { invalidKeyReason, type Key } from "./key.ts";

/** Largest supported maxParallelism (number of key groups); Flink's bound, 2^15. */
export const MAX_MAX_PARALLELISM = 32768;

/** Lower bound of the default maxParallelism, so small jobs can still scale out later. */
const DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 128;

// ---------------------------------------------------------------------------------------------
// MurmurHash3 x86_32
// ---------------------------------------------------------------------------------------------

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/**
 * MurmurHash3 x86_32 (Austin Appleby's reference algorithm) of `bytes`, as an unsigned 32-bit
 * integer. Blocks are read little-endian, as in the reference implementation.
 * Precondition: `seed` is an integer in [0, 2^32).
 */
export function murmur3_32(bytes: Uint8Array, seed = 0): number {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`murmur3_32 seed must be an integer in [0, 2^32), got ${seed}`);
  }
  return murmur3Range(bytes, bytes.length, seed);
}

/** murmur3's mixing of one 4-byte block before it enters the hash. */
function mixK(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

/** murmur3's step for one full 4-byte block `k`. */
function mixBlock(h: number, k: number): number {
  h ^= mixK(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** murmur3_32 of bytes[0, length), so the hot path can hash a prefix of a reused buffer. */
function murmur3Range(bytes: Uint8Array, length: number, seed: number): number {
  // hot path
  let h = seed | 0;
  const blockEnd = length & ~3;
  let i = 0;
  for (; i < blockEnd; i += 4) {
    h = mixBlock(h, bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
  }
  const tail = length & 3;
  if (tail !== 0) {
    let k = 0;
    if (tail === 3) k ^= bytes[i + 2]! << 16;
    if (tail >= 2) k ^= bytes[i + 1]! << 8;
    k ^= bytes[i]!;
    h ^= mixK(k);
  }
  return finish(h, length);
}

/** murmur3's finalization: mixes in the length, then fmix32 (the final avalanche). */
function finish(h: number, length: number): number {
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// ---------------------------------------------------------------------------------------------
// Canonical key encoding
// ---------------------------------------------------------------------------------------------

/*
 * CANONICAL KEY ENCODING — part of the savepoint format; it must never change.
 *
 * A key is encoded as one value; every value starts with a one-byte type tag. All lengths and
 * counts are unsigned 32-bit big-endian.
 *
 *   string:  0x01, u32 byte length, UTF-8 bytes. Lone surrogates are encoded as U+FFFD
 *            (EF BF BD), exactly as TextEncoder does.
 *   number:  0x02, IEEE-754 float64 big-endian (8 bytes). -0 is written as +0, so 0 and -0 are
 *            the same key (as they are for ===). Only finite numbers are keys.
 *   bigint:  0x03, sign byte (0x00 for n >= 0, 0x01 for n < 0), u32 byte length, magnitude |n|
 *            big-endian with no leading zero bytes (0n has an empty magnitude).
 *   array:   0x04, u32 element count (>= 1), then each element encoded recursively.
 *
 * The tags keep 1, "1" and 1n apart; the length prefixes keep ["a", "b"] apart from ["ab"].
 * Should the encoding ever have to change, that is a new hash function with its own id in the
 * savepoint metadata, never an edit here.
 */

const TAG_STRING = 0x01;
const TAG_NUMBER = 0x02;
const TAG_BIGINT = 0x03;
const TAG_ARRAY = 0x04;

function invalidKeyError(key: unknown): RangeError {
  return new RangeError(`cannot encode an invalid key: ${invalidKeyReason(key) ?? "unknown reason"}`);
}

/**
 * The canonical bytes of `key` (format above). This is the plain, obviously-correct reference
 * encoder; `hashKey` uses an allocation-free encoder that must agree with it byte for byte.
 * Precondition: `key` is valid (`invalidKeyReason(key)` is undefined); otherwise RangeError.
 */
export function encodeKeyCanonical(key: Key): Uint8Array {
  const out: number[] = [];
  encodeInto(key, out);
  return Uint8Array.from(out);
}

function pushU32(out: number[], n: number): void {
  out.push((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

function encodeInto(key: Key, out: number[]): void {
  switch (typeof key) {
    case "string": {
      const utf8 = new TextEncoder().encode(key);
      out.push(TAG_STRING);
      pushU32(out, utf8.length);
      for (const b of utf8) out.push(b);
      return;
    }
    case "number": {
      if (!Number.isFinite(key)) throw invalidKeyError(key);
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, key === 0 ? 0 : key, false);
      out.push(TAG_NUMBER);
      for (let i = 0; i < 8; i++) out.push(view.getUint8(i));
      return;
    }
    case "bigint": {
      const negative = key < 0n;
      const magnitude = negative ? -key : key;
      let hex = magnitude === 0n ? "" : magnitude.toString(16);
      if (hex.length % 2 === 1) hex = "0" + hex;
      out.push(TAG_BIGINT, negative ? 1 : 0);
      pushU32(out, hex.length / 2);
      for (let i = 0; i < hex.length; i += 2) out.push(Number.parseInt(hex.slice(i, i + 2), 16));
      return;
    }
    case "object": {
      if (!Array.isArray(key) || key.length === 0) throw invalidKeyError(key);
      out.push(TAG_ARRAY);
      pushU32(out, key.length);
      for (const element of key) encodeInto(element, out);
      return;
    }
    default:
      throw invalidKeyError(key);
  }
}

// Scratch buffer of the allocation-free encoder. Grows (doubling) and never shrinks; a single
// huge key therefore keeps its size for the life of the process, which is acceptable for keys.
let scratch = new Uint8Array(256);
let scratchView = new DataView(scratch.buffer);

/** Ensures scratch[0, needed) exists, keeping the bytes already written. */
function ensureScratch(needed: number): void {
  if (needed <= scratch.length) return;
  let size = scratch.length * 2;
  while (size < needed) size *= 2;
  const grown = new Uint8Array(size);
  grown.set(scratch);
  scratch = grown;
  scratchView = new DataView(scratch.buffer);
}

function writeU32(pos: number, n: number): void {
  scratch[pos] = n >>> 24;
  scratch[pos + 1] = n >>> 16;
  scratch[pos + 2] = n >>> 8;
  scratch[pos + 3] = n;
}

/** Writes the canonical encoding of `key` into scratch at `pos`; returns the end position. */
function writeKey(key: Key, pos: number): number {
  // hot path: strings and numbers do not allocate
  switch (typeof key) {
    case "string":
      return writeString(key, pos);
    case "number":
      if (!Number.isFinite(key)) throw invalidKeyError(key);
      ensureScratch(pos + 9);
      scratch[pos] = TAG_NUMBER;
      scratchView.setFloat64(pos + 1, key === 0 ? 0 : key, false);
      return pos + 9;
    case "bigint":
      return writeBigint(key, pos);
    case "object": {
      if (!Array.isArray(key) || key.length === 0) throw invalidKeyError(key);
      ensureScratch(pos + 5);
      scratch[pos] = TAG_ARRAY;
      writeU32(pos + 1, key.length);
      let end = pos + 5;
      for (let i = 0; i < key.length; i++) end = writeKey(key[i]!, end);
      return end;
    }
    default:
      throw invalidKeyError(key);
  }
}

/** UTF-8 by hand from UTF-16 code units, lone surrogates → U+FFFD (as TextEncoder). */
function writeString(s: string, pos: number): number {
  const units = s.length;
  // Each UTF-16 unit yields at most 3 bytes (a surrogate pair: 2 units → 4 bytes).
  ensureScratch(pos + 5 + 3 * units);
  const buf = scratch;
  buf[pos] = TAG_STRING;
  const start = pos + 5;
  let p = start;
  for (let i = 0; i < units; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[p++] = c;
    } else if (c < 0x800) {
      buf[p++] = 0xc0 | (c >>> 6);
      buf[p++] = 0x80 | (c & 0x3f);
    } else if (c < 0xd800 || c > 0xdfff) {
      buf[p++] = 0xe0 | (c >>> 12);
      buf[p++] = 0x80 | ((c >>> 6) & 0x3f);
      buf[p++] = 0x80 | (c & 0x3f);
    } else {
      const next = i + 1 < units ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        buf[p++] = 0xf0 | (cp >>> 18);
        buf[p++] = 0x80 | ((cp >>> 12) & 0x3f);
        buf[p++] = 0x80 | ((cp >>> 6) & 0x3f);
        buf[p++] = 0x80 | (cp & 0x3f);
        i++;
      } else {
        buf[p++] = 0xef; // U+FFFD REPLACEMENT CHARACTER for a lone surrogate
        buf[p++] = 0xbf;
        buf[p++] = 0xbd;
      }
    }
  }
  writeU32(pos + 1, p - start);
  return p;
}

/** Bigint keys are rare; extracting bytes allocates intermediate bigints, which is accepted. */
function writeBigint(n: bigint, pos: number): number {
  const negative = n < 0n;
  let m = negative ? -n : n;
  ensureScratch(pos + 6);
  scratch[pos] = TAG_BIGINT;
  scratch[pos + 1] = negative ? 1 : 0;
  const start = pos + 6;
  let p = start;
  // Least significant byte first, then reversed in place to big-endian.
  while (m > 0n) {
    ensureScratch(p + 1);
    scratch[p++] = Number(m & 0xffn);
    m >>= 8n;
  }
  for (let lo = start, hi = p - 1; lo < hi; lo++, hi--) {
    const t = scratch[lo]!;
    scratch[lo] = scratch[hi]!;
    scratch[hi] = t;
  }
  writeU32(pos + 2, p - start);
  return p;
}

/**
 * The 32-bit hash of a key: murmur3_32(encodeKeyCanonical(key), seed 0), unsigned.
 * Runs once per record; string and number keys are encoded into a reused module-level buffer,
 * so they do not allocate. Not reentrant (single-threaded JS makes that safe).
 * Precondition: `key` is valid (`invalidKeyReason(key)` is undefined); otherwise RangeError.
 */
export function hashKey(key: Key): number {
  // hot path
  if (typeof key === "number") return hashNumberKey(key);
  const length = writeKey(key, 0);
  return murmur3Range(scratch, length, 0);
}

const numberBits = new Float64Array(1);
/** The double's two 32-bit halves, high word first: indexes into `numberWords` by endianness. */
const numberWords = new Uint32Array(numberBits.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const HI = LITTLE_ENDIAN ? 1 : 0;
const LO = LITTLE_ENDIAN ? 0 : 1;

/**
 * hashKey for numbers without writing bytes: murmur3 over the same 9 canonical bytes
 * (TAG_NUMBER, then the double big-endian: b0..b3 from the high word, b4..b7 from the low word),
 * as two 4-byte blocks and a 1-byte tail. Pinned equal to the general path by the fixture and
 * property tests.
 */
function hashNumberKey(key: number): number {
  if (!Number.isFinite(key)) throw invalidKeyError(key);
  numberBits[0] = key === 0 ? 0 : key;
  const hi = numberWords[HI]!;
  const lo = numberWords[LO]!;
  // Block 1: TAG, b0, b1, b2. Block 2: b3, b4, b5, b6. Tail: b7.
  let h = mixBlock(0, TAG_NUMBER | ((hi >>> 24) << 8) | (((hi >>> 16) & 0xff) << 16) | (((hi >>> 8) & 0xff) << 24));
  h = mixBlock(h, (hi & 0xff) | ((lo >>> 24) << 8) | (((lo >>> 16) & 0xff) << 16) | (((lo >>> 8) & 0xff) << 24));
  h ^= mixK(lo & 0xff);
  return finish(h, 9);
}

/** The general path for any key (exported for tests that pin the fast paths to it). */
export function hashKeyGeneral(key: Key): number {
  const length = writeKey(key, 0);
  return murmur3Range(scratch, length, 0);
}

// ---------------------------------------------------------------------------------------------
// Key groups and subtasks
// ---------------------------------------------------------------------------------------------

/** A contiguous, inclusive range of key groups [start, end]; empty when end = start - 1. */
export interface KeyGroupRange {
  readonly start: number;
  readonly end: number;
}

function checkMaxParallelism(maxParallelism: number): void {
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > MAX_MAX_PARALLELISM) {
    throw new RangeError(
      `maxParallelism must be an integer in [1, ${MAX_MAX_PARALLELISM}], got ${maxParallelism}`,
    );
  }
}

/**
 * Checks the preconditions shared by the functions below: `parallelism` is an integer ≥ 1,
 * `maxParallelism` an integer in [1, MAX_MAX_PARALLELISM], and parallelism ≤ maxParallelism
 * (every subtask must own at least one key group). Throws RangeError otherwise.
 */
export function checkParallelism(parallelism: number, maxParallelism: number): void {
  if (!Number.isInteger(parallelism) || parallelism < 1) {
    throw new RangeError(`parallelism must be an integer ≥ 1, got ${parallelism}`);
  }
  checkMaxParallelism(maxParallelism);
  if (parallelism > maxParallelism) {
    throw new RangeError(
      `parallelism ${parallelism} exceeds maxParallelism ${maxParallelism}; every subtask needs at least one key group`,
    );
  }
}

/**
 * Default maxParallelism for an operator of the given parallelism:
 * min(max(roundUpPow2(p + floor(p / 2)), 128), 32768) — room to scale out by 1.5x and beyond.
 * Precondition: `parallelism` is an integer in [1, MAX_MAX_PARALLELISM].
 */
export function defaultMaxParallelism(parallelism: number): number {
  if (!Number.isInteger(parallelism) || parallelism < 1 || parallelism > MAX_MAX_PARALLELISM) {
    throw new RangeError(`parallelism must be an integer in [1, ${MAX_MAX_PARALLELISM}], got ${parallelism}`);
  }
  const wanted = parallelism + Math.floor(parallelism / 2);
  let pow2 = 1;
  while (pow2 < wanted) pow2 *= 2;
  return Math.min(Math.max(pow2, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), MAX_MAX_PARALLELISM);
}

/**
 * The key group of a key hash: hash mod maxParallelism.
 * Preconditions: `keyHash` is a uint32 (as returned by hashKey); `maxParallelism` is an integer in
 * [1, MAX_MAX_PARALLELISM].
 */
export function computeKeyGroupForKeyHash(keyHash: number, maxParallelism: number): number {
  if (!Number.isInteger(keyHash) || keyHash < 0 || keyHash > 0xffffffff) {
    throw new RangeError(`key hash must be a uint32, got ${keyHash}`);
  }
  checkMaxParallelism(maxParallelism);
  return keyHash % maxParallelism;
}

/**
 * The key group of a key: hashKey(key) mod maxParallelism.
 * Preconditions: `key` is valid; `maxParallelism` is an integer in [1, MAX_MAX_PARALLELISM].
 * The per-record path uses a KeyGroupAssigner instead (checks once, caches).
 */
export function assignToKeyGroup(key: Key, maxParallelism: number): number {
  return computeKeyGroupForKeyHash(hashKey(key), maxParallelism);
}

/**
 * keyHash mod maxParallelism in int32 arithmetic: a uint32 above 2^31 is a double in V8, and a
 * double modulo is a C call (~10 ns). Splits the hash into 16-bit halves so every step stays
 * below 2^31: ((hi mod m) * 2^16 + lo) mod m = keyHash mod m for m ≤ 2^15.
 * Preconditions: as computeKeyGroupForKeyHash (unchecked).
 */
function keyGroupOfHash(keyHash: number, maxParallelism: number): number {
  return ((((keyHash >>> 16) % maxParallelism) << 16) + (keyHash & 0xffff)) % maxParallelism;
}

/** Slots of a KeyGroupAssigner's cache (a power of two): 40 KB per assigner. */
const KEY_GROUP_CACHE_SLOTS = 4096;

/**
 * The key groups of keys for one maxParallelism, on the per-record path (keyBy partitioners and
 * keyed operators): the preconditions are checked once, at construction, and the groups of
 * recently seen number keys are remembered in a direct-mapped cache indexed by the key's low bits
 * (a hit costs two typed-array reads instead of a murmur3 hash, ~20 ns). Other keys are hashed
 * every time. Cost: O(1); a miss hashes and overwrites the slot.
 *
 * Invariant: `#cachedKeys[s]` is NaN (never equal to a key) or a number key whose key group is
 * `#cachedGroups[s]`. Keys compare with ===, so 0 and -0 share a slot and a group, as they do
 * in hashKey.
 */
export class KeyGroupAssigner {
  readonly maxParallelism: number;
  readonly #cachedKeys = new Float64Array(KEY_GROUP_CACHE_SLOTS).fill(Number.NaN);
  readonly #cachedGroups = new Uint16Array(KEY_GROUP_CACHE_SLOTS);

  /** Precondition: `maxParallelism` is an integer in [1, MAX_MAX_PARALLELISM] (RangeError otherwise). */
  constructor(maxParallelism: number) {
    checkMaxParallelism(maxParallelism);
    this.maxParallelism = maxParallelism;
  }

  /** assignToKeyGroup(key, maxParallelism). Precondition: `key` is valid (RangeError otherwise). */
  keyGroupOf(key: Key): number {
    // hot path
    if (typeof key !== "number") return keyGroupOfHash(hashKey(key), this.maxParallelism);
    const slot = key & (KEY_GROUP_CACHE_SLOTS - 1);
    if (this.#cachedKeys[slot] === key) return this.#cachedGroups[slot]!;
    const keyGroup = keyGroupOfHash(hashNumberKey(key), this.maxParallelism);
    this.#cachedKeys[slot] = key;
    this.#cachedGroups[slot] = keyGroup;
    return keyGroup;
  }
}

/**
 * The subtask that owns `keyGroup`: floor(keyGroup * parallelism / maxParallelism). Exact in
 * doubles since keyGroup * parallelism < 2^30.
 * Preconditions: checkParallelism(parallelism, maxParallelism); `keyGroup` an integer in
 * [0, maxParallelism).
 */
export function computeOperatorIndexForKeyGroup(
  maxParallelism: number,
  parallelism: number,
  keyGroup: number,
): number {
  checkParallelism(parallelism, maxParallelism);
  if (!Number.isInteger(keyGroup) || keyGroup < 0 || keyGroup >= maxParallelism) {
    throw new RangeError(`key group must be an integer in [0, ${maxParallelism}), got ${keyGroup}`);
  }
  return operatorIndexOfKeyGroup(maxParallelism, parallelism, keyGroup);
}

/** computeOperatorIndexForKeyGroup without its checks: for hot paths that checked their arguments once. */
export function operatorIndexOfKeyGroup(maxParallelism: number, parallelism: number, keyGroup: number): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/**
 * The key groups owned by subtask `operatorIndex`:
 * [ceil(i * maxP / p), ceil((i + 1) * maxP / p) - 1]. The ranges of subtasks 0..p-1 partition
 * [0, maxP) contiguously in order, and are never empty because p ≤ maxP. Exactly the key groups
 * for which computeOperatorIndexForKeyGroup returns `operatorIndex`.
 * Preconditions: checkParallelism(parallelism, maxParallelism); `operatorIndex` an integer in
 * [0, parallelism).
 */
export function keyGroupRangeForOperator(
  maxParallelism: number,
  parallelism: number,
  operatorIndex: number,
): KeyGroupRange {
  checkParallelism(parallelism, maxParallelism);
  if (!Number.isInteger(operatorIndex) || operatorIndex < 0 || operatorIndex >= parallelism) {
    throw new RangeError(`operator index must be an integer in [0, ${parallelism}), got ${operatorIndex}`);
  }
  const start = Math.ceil((operatorIndex * maxParallelism) / parallelism);
  const end = Math.ceil(((operatorIndex + 1) * maxParallelism) / parallelism) - 1;
  return { start, end };
}

/** Whether `keyGroup` lies in the inclusive range. */
export function keyGroupRangeContains(range: KeyGroupRange, keyGroup: number): boolean {
  return keyGroup >= range.start && keyGroup <= range.end;
}

/** Number of key groups in the range (0 for an empty range). */
export function keyGroupRangeSize(range: KeyGroupRange): number {
  return Math.max(0, range.end - range.start + 1);
}
