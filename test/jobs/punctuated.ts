/** A watermark strategy the test jobs share. */
import { WatermarkStrategy } from "eddy";

/**
 * A watermark right behind the highest timestamp so far, after every record: the tests do not
 * depend on when periodic emission runs.
 */
export function watermarkAfterEachRecord<T>(timestampOf: (record: T) => number): WatermarkStrategy<T> {
  return WatermarkStrategy.forGenerator<T>(() => {
    let max = Number.NEGATIVE_INFINITY;
    return {
      onEvent(_record, ts, output) {
        max = Math.max(max, ts);
        output.emitWatermark(max - 1);
      },
      onPeriodicEmit() {},
    };
  }).withTimestampAssigner(timestampOf);
}
