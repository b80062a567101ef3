/**
 * The job of the metrics tests (test/metrics.test.ts), in a module of its own so worker threads
 * can import it. Its counts are known in advance: numbers 1..RECORDS from one paced source
 * subtask; the even ones and LATE_NUMBERS pass "Evens"; the late ones carry event time 0 once
 * event time is far past it, so the window drops exactly them (one input channel per window
 * subtask keeps watermark and records in order). "Tally" registers one user metric of each kind.
 */
import { defineJob, TumblingEventTimeWindows, type KeyedProcessFunction, type MetricCounter, type MetricHistogram, type MetricMeter } from "eddy";
import { collectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";
import { watermarkAfterEachRecord } from "./punctuated.ts";

export const RECORDS = 1_000;
export const KEYS = 8;
export const LATE_NUMBERS = [599, 699, 799, 899, 999];
const isLate = (n: number): boolean => LATE_NUMBERS.includes(n);
/** Event time of number n. */
export const eventTime = (n: number): number => (isLate(n) ? 0 : n * 10);

export interface Tagged {
  readonly key: string;
  readonly n: number;
}

/** Watermark right behind each number's event time (the late ones hold it back: they are behind it). */
const punctuatedNumbers = watermarkAfterEachRecord(eventTime);

/** One user metric of each kind; passes every record on. */
function tally(): KeyedProcessFunction<string, Tagged, Tagged> {
  let seen: MetricCounter;
  let rate: MetricMeter;
  let values: MetricHistogram;
  let last = -1;
  return {
    open(ctx) {
      seen = ctx.metrics.counter("tallied");
      rate = ctx.metrics.meter("tallyRate");
      values = ctx.metrics.histogram("tallyValues");
      ctx.metrics.gauge("lastN", () => last);
    },
    processElement(e, _ctx, out) {
      seen.inc();
      rate.markEvent();
      values.update(e.n);
      last = e.n;
      out.collect(e);
    },
  };
}

export const metricsJob = defineJob("metrics-known", (env) => {
  const evens = env
    .fromSource(pacedNumbers({ records: RECORDS, splits: 1, idPrefix: "metrics", perPoll: 50, pauseMs: Number(process.env.EDDY_METRICS_PAUSE_MS ?? 5) }), punctuatedNumbers, "Numbers")
    .uid("numbers")
    .setParallelism(1)
    .map((n): Tagged => ({ key: `k${n % KEYS}`, n }))
    .name("Tag")
    .setParallelism(1)
    .filter((e) => e.n % 2 === 0 || isLate(e.n))
    .name("Evens")
    .setParallelism(1);
  evens
    .keyBy((e) => e.key)
    .window(TumblingEventTimeWindows.of<Tagged>(1_000))
    .reduce((a, b) => ({ key: a.key, n: a.n + b.n }))
    .name("Sums")
    .uid("sums")
    .sinkTo(collectSink("sums"), "Sums sink");
  evens
    .keyBy((e) => e.key)
    .process(tally)
    .name("Tally")
    .uid("tally")
    .sinkTo(collectSink("tallied"), "Tally sink");
});
