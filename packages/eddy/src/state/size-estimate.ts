/**
 * Rough heap sizes of state values, for the disk backend's cache bound in bytes
 * (`state.backend.disk.cache-bytes`; docs/state-backends.md, "The cache").
 *
 * An estimate, bounded in cost, not a measurement: each call walks at most SAMPLE elements of an
 * array, Map or Set (and extrapolates to its length) and at most DEPTH levels of nesting, so a
 * list of a million elements costs what one of SAMPLE does. Strings count as one byte per
 * character plus a header (V8's one-byte strings), numbers as a boxed double, a shared object as
 * often as it is referenced (Nexmark's bids share their channel and URL strings: over-counted).
 * Compared with `process.memoryUsage().heapUsed` by bench/disk-cache-bytes.ts: from 0.74 (lists
 * of numbers) to 1.34 (a number per key) of the heap it stands for; docs/state-backends.md.
 */

/** Elements of an array, Map or Set walked before extrapolating. */
const SAMPLE = 8;
/** Levels of nesting walked; deeper objects count OPAQUE bytes. */
const DEPTH = 4;
/** An object beyond DEPTH. */
const OPAQUE = 64;
/** A JS object's header (map, properties, elements). */
const OBJECT = 24;
/** A property or element slot. */
const SLOT = 8;
/** Per entry of a Map or Set (hash table entry, chain, bucket share), besides its key and value. */
const HASH_ENTRY = 40;

/** Estimated bytes `value` holds on the heap (itself and what it references, bounded; see the file comment). */
export function sizeOf(value: unknown): number {
  return size(value, 0);
}

function size(v: unknown, depth: number): number {
  switch (typeof v) {
    case "number":
      return 16; // a heap number (a small integer costs nothing, but a field of a record is not told apart)
    case "string":
      return 16 + ((v.length + 7) & ~7);
    case "bigint":
      return 24;
    case "object":
      if (v === null) return 0;
      if (depth >= DEPTH) return OPAQUE;
      if (Array.isArray(v)) return OBJECT + SLOT * v.length + sampledArray(v, depth + 1);
      if (v instanceof Map) return OBJECT + HASH_ENTRY * v.size + sampledEntries(v, v.size, depth + 1);
      if (v instanceof Set) return OBJECT + HASH_ENTRY * v.size + sampledValues(v, v.size, depth + 1);
      if (ArrayBuffer.isView(v)) return 2 * OBJECT + v.byteLength;
      if (v instanceof Date) return OBJECT + SLOT;
      return objectSize(v as Record<string, unknown>, depth + 1);
    case "function":
    case "symbol":
      return OPAQUE;
    default:
      return 0; // undefined, boolean: in the slot
  }
}

function objectSize(o: Record<string, unknown>, depth: number): number {
  let n = OBJECT;
  for (const k in o) n += SLOT + size(o[k], depth);
  return n;
}

/** An array element besides its slot: a number is in the slot (a small integer, or an array of doubles). */
function element(v: unknown, depth: number): number {
  return typeof v === "number" ? 0 : size(v, depth);
}

function sampledArray(a: unknown[], depth: number): number {
  const len = a.length;
  if (len <= SAMPLE) {
    let n = 0;
    for (let i = 0; i < len; i++) n += element(a[i], depth);
    return n;
  }
  const step = len / SAMPLE;
  let n = 0;
  for (let i = 0; i < SAMPLE; i++) n += element(a[Math.floor(i * step)], depth);
  return Math.round((n * len) / SAMPLE);
}

function sampledEntries(m: Map<unknown, unknown>, count: number, depth: number): number {
  let n = 0;
  let seen = 0;
  for (const [k, v] of m) {
    if (seen === SAMPLE) break;
    n += size(k, depth) + size(v, depth);
    seen++;
  }
  return seen === 0 ? 0 : Math.round((n * count) / seen);
}

function sampledValues(s: Set<unknown>, count: number, depth: number): number {
  let n = 0;
  let seen = 0;
  for (const v of s) {
    if (seen === SAMPLE) break;
    n += size(v, depth);
    seen++;
  }
  return seen === 0 ? 0 : Math.round((n * count) / seen);
}

/** Bytes a list append of `values` adds (slots and elements; the array's header is counted once, at creation). */
export function appendedSize(values: readonly unknown[]): number {
  return SLOT * values.length + sampledArray(values as unknown[], 1);
}

/** Bytes a new Map entry adds besides its key and value. */
export const MAP_ENTRY_BYTES = HASH_ENTRY;
