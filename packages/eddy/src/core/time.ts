/**
 * Time vocabulary. Timestamps and watermarks are milliseconds since the epoch as JS numbers
 * (exact integers up to 2^53, i.e. for the next 285,000 years).
 */

/** The watermark before any watermark was seen. */
export const MIN_WATERMARK = Number.NEGATIVE_INFINITY;
/** The watermark that ends event time: emitted at the end of a bounded input; fires every timer. */
export const MAX_WATERMARK = Number.POSITIVE_INFINITY;
/**
 * The timestamp of a record that has none (no timestamp assigner ran). NaN compares false with
 * everything, so such a record is never late; code that needs a timestamp checks `hasTimestamp`.
 */
export const NO_TIMESTAMP = Number.NaN;

export function hasTimestamp(timestamp: number): boolean {
  return timestamp === timestamp; // NaN is the only value not equal to itself
}
