/**
 * What every variant of a query (the Eddy job, the hand-written loop) folds its output into: a
 * record count and an order-independent checksum. The bench fails a query whose variants
 * disagree, so no variant can skip work, and outputs that arrive in another order (parallel
 * subtasks) still agree.
 *
 * A record's digest is an int32 mixing the fields that make it what it is (numbers exactly;
 * short strings by content; long padding strings by length, which is cheap and still changes when
 * a record is dropped or swapped). Digests are summed modulo 2^32: commutative and associative.
 */

export interface OutputFold {
  /** Output records. */
  count: number;
  /** Sum of the records' digests modulo 2^32 (an int32). */
  checksum: number;
}

export const emptyFold = (): OutputFold => ({ count: 0, checksum: 0 });

/** Adds one record's digest to `fold`. */
// hot path
export function foldDigest(fold: OutputFold, digest: number): void {
  fold.count++;
  fold.checksum = (fold.checksum + digest) | 0;
}

/** Merges per-subtask folds. */
export function mergeFolds(folds: readonly OutputFold[]): OutputFold {
  const total = emptyFold();
  for (const f of folds) {
    total.count += f.count;
    total.checksum = (total.checksum + f.checksum) | 0;
  }
  return total;
}

const TWO_POW_32 = 4_294_967_296;

/**
 * Mixes a number into hash `h` (murmur3-style round). Integers up to 2^53 mix both 32-bit halves
 * exactly; fractions enter through their value × 1000 (prices in euro cents have at most 3
 * decimals after the × 0.908, so this is exact for them and deterministic for anything).
 */
export function mixNumber(h: number, x: number): number {
  const v = Number.isInteger(x) ? x : Math.round(x * 1000);
  h = mix32(h, v | 0);
  return mix32(h, (v / TWO_POW_32) | 0);
}

/** Mixes a short string into `h` by content (null and undefined as a marker). */
export function mixString(h: number, s: string | null | undefined): number {
  if (s === null || s === undefined) return mix32(h, 0x5bd1e995);
  h = mix32(h, s.length);
  for (let i = 0; i < s.length; i++) h = mix32(h, s.charCodeAt(i));
  return h;
}

function mix32(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}
