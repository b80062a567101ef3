import {
  Time,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type AggregateFunction,
  type Collector,
  type DataStream,
  type TimeWindow,
} from "eddy";

/** A temperature reading of one sensor. */
export interface Reading {
  readonly sensor: string;
  readonly celsius: number;
  /** Event time: when the sensor took the reading (ms since the epoch). */
  readonly ts: number;
}

/** A sensor's average temperature over one 10-second window of event time. */
export interface Average {
  readonly sensor: string;
  readonly windowStart: number;
  readonly windowEnd: number;
  readonly celsius: number;
  readonly readings: number;
}

/** Readings may arrive up to this late (out of order) and still count in their window. */
export const OUT_OF_ORDERNESS_MS = 2_000;

const average: AggregateFunction<Reading, { sum: number; n: number }, { celsius: number; readings: number }> = {
  createAccumulator: () => ({ sum: 0, n: 0 }),
  add: (r, acc) => ({ sum: acc.sum + r.celsius, n: acc.n + 1 }),
  getResult: (acc) => ({ celsius: Math.round((acc.sum / acc.n) * 100) / 100, readings: acc.n }),
  merge: (a, b) => ({ sum: a.sum + b.sum, n: a.n + b.n }),
};

/** Per sensor, the average of each 10-second window, emitted when the watermark passes its end. */
export function averages(readings: DataStream<Reading>): DataStream<Average> {
  return readings
    .assignTimestampsAndWatermarks(
      WatermarkStrategy.forBoundedOutOfOrderness<Reading>(OUT_OF_ORDERNESS_MS).withTimestampAssigner((r) => r.ts),
    )
    .keyBy((r) => r.sensor)
    .window(TumblingEventTimeWindows.of(Time.seconds(10)))
    .aggregate(average, (sensor: string, window: TimeWindow, [result], out: Collector<Average>) => {
      if (result !== undefined) out.collect({ sensor, windowStart: window.start, windowEnd: window.end, ...result });
    })
    .name("10s averages");
}
