/**
 * The random choices of one Nexmark event. Every event reseeds one module-level generator from
 * its event id, so an event depends on its id (and the config) alone: the same id gives the same
 * event on any machine, in any order, on any subtask. Generation is synchronous and never
 * re-entered, so one shared state is safe and saves an allocation per event.
 *
 * The generator is splitmix32 (a 32-bit state advanced by the golden-ratio increment, output
 * through a murmur3-style finaliser): a handful of integer operations per draw, and statistically
 * ample for the ten to thirty draws an event makes. It is not Java's `Random`, so values differ
 * from Beam's generator while following the same distributions.
 *
 * Strings are not built a character at a time: they are slices of two fixed pseudo-random pools
 * (letters; letters with a space about every 13th character, like Beam's `nextString`), at a
 * random offset. `substring` of 13 or more characters is an O(1) slice in V8, so a bid's padding
 * costs one small allocation instead of ~70 string appends.
 */

/**
 * Current generator state (int32), in a typed array: a module-level `let` cost ~6 ns per draw
 * against ~2 ns here (V8 keeps a context slot boxed and checked; an Int32Array element is a plain
 * int32), and a bid takes ~8 draws. The values are the same int32s either way.
 */
const state = new Int32Array(1);

const TWO_TO_MINUS_32 = 2.3283064365386963e-10;

/** murmur3's 32-bit finaliser: a bijection on 32-bit integers with good avalanche. */
function fmix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return x ^ (x >>> 16);
}

/** Mixed into the high word of the event id, so ids beyond 2^32 still seed distinct streams. */
const HIGH_WORD_SALT = fmix32(0x9e3779b9);

/**
 * Reseeds the generator for event `eventId` (a non-negative safe integer) under `seed` (int32).
 * Distinct ids below 2^32 give distinct states (fmix32 is a bijection).
 */
export function seedEventRandom(eventId: number, seed: number): void {
  const high = Math.floor(eventId * TWO_TO_MINUS_32);
  state[0] = fmix32(((eventId >>> 0) ^ seed) + (high === 0 ? HIGH_WORD_SALT : fmix32(high ^ HIGH_WORD_SALT)));
}

/** The next uniform 32-bit unsigned integer (splitmix32). */
function nextU32(): number {
  let z = (state[0]! + 0x9e3779b9) | 0;
  state[0] = z;
  z = Math.imul(z ^ (z >>> 16), 0x21f0aafd);
  z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
  return (z ^ (z >>> 15)) >>> 0;
}

/** A uniform integer in [0, n), n ≥ 1 (Java's `Random.nextInt(n)`; exact for n < 2^21). */
export function nextInt(n: number): number {
  return Math.floor(nextU32() * n * TWO_TO_MINUS_32);
}

/** A uniform double in [0, 1) with 32 bits of resolution. */
export function nextDouble(): number {
  return nextU32() * TWO_TO_MINUS_32;
}

/** Length of each string pool; longer than any string drawn from it. */
const POOL_LENGTH = 1 << 16;

/** A pool of `POOL_LENGTH` characters from a fixed generator, independent of the event state. */
function makePool(salt: number, spaceEvery: number): string {
  let s = fmix32(salt);
  const codes = new Uint16Array(POOL_LENGTH);
  for (let i = 0; i < POOL_LENGTH; i++) {
    s = (s + 0x9e3779b9) | 0;
    const r = fmix32(s) >>> 0;
    codes[i] = spaceEvery > 0 && r % spaceEvery === 0 ? 0x20 : 0x61 + ((r >>> 8) % 26);
  }
  // `join` yields one flat string, so slices of it point into a single sequential buffer.
  const parts: string[] = [];
  for (let i = 0; i < POOL_LENGTH; i += 4096) parts.push(String.fromCharCode(...codes.subarray(i, i + 4096)));
  return parts.join("");
}

/**
 * The pools, built at first use: this module is part of every job's worker bundle (the package
 * exports the Nexmark source), and building both took ~10-25 ms of each worker's start-up. Fields
 * of a const object, not module-level `let`s (which V8 boxes and checks on every access, see
 * `state` above).
 */
const pools: { letters?: string; lettersAndSpaces?: string } = {};

/** Exactly `length` random lowercase letters (Beam's `nextExactString`); `length` ≤ 65,536. */
export function nextExactString(length: number): string {
  const from = nextInt(POOL_LENGTH - length + 1);
  return (pools.letters ??= makePool(0x6e65786d, 0)).substring(from, from + length);
}

/**
 * Random letters and spaces, 3 to `maxLength` - 1 characters before trimming (Beam's
 * `nextString`); `maxLength` ≥ 4.
 */
export function nextString(maxLength: number): string {
  const length = 3 + nextInt(maxLength - 3);
  const from = nextInt(POOL_LENGTH - length + 1);
  return (pools.lettersAndSpaces ??= makePool(0x61726b21, 13)).substring(from, from + length).trim();
}

/**
 * Padding such that `currentSize` + its length averages `averageSize` (Beam's `nextExtra`):
 * uniform within ±20% of the gap, empty if the record is already that large.
 */
export function nextExtra(currentSize: number, averageSize: number): string {
  if (currentSize > averageSize) return "";
  const gap = averageSize - currentSize;
  const delta = Math.round(gap * 0.2);
  return nextExactString(gap - delta + (delta === 0 ? 0 : nextInt(2 * delta)));
}

/**
 * A stand-alone generator for fixed tables (channel URLs): its own state, so filling a table in
 * the middle of an event does not disturb that event's draws.
 */
export function fixedRandom(salt: number): (n: number) => number {
  let s = fmix32(salt);
  return (n) => {
    s = (s + 0x9e3779b9) | 0;
    return Math.floor((fmix32(s) >>> 0) * n * TWO_TO_MINUS_32);
  };
}
