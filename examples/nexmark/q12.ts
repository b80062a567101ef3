/**
 * Nexmark q12 — processing-time windows. How many bids each bidder makes per 10 seconds of
 * processing time (wall-clock time when the bid is processed, not its dateTime).
 *
 *   CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
 *
 *   SELECT bidder, count(*) as bid_count, window_start AS starttime, window_end AS endtime
 *   FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
 *   GROUP BY bidder, window_start, window_end;
 *
 * DataStream: bids keyed by bidder into tumbling 10 s processing-time windows, counted by an
 * `aggregate`. Which window a bid falls into depends on when it is processed, so the result is
 * not deterministic; what is: every bid is counted in exactly one window of its bidder.
 *
 * One addition: a window also fires when the input ends (the trigger below). Processing-time
 * timers still pending at the end of a bounded input are dropped (as in Flink), which would drop
 * the counts of the last window; the final watermark, which a bounded source emits when it ends,
 * fires them instead. In an unbounded run the final watermark never comes, and this is plain
 * ProcessingTimeTrigger.
 *
 *   NEXMARK_EVENTS=100000 NEXMARK_RATE_LIMIT=20000 npx eddy run examples/nexmark/q12.ts -p 2
 */
import {
  defineJob,
  Time,
  TumblingProcessingTimeWindows,
  type Bid,
  type DataStream,
  type StreamExecutionEnvironment,
  type TimeWindow,
  type Trigger,
} from "eddy";
import { bidsOf, countRecords, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q12Result {
  readonly bidder: number;
  readonly bidCount: number;
  readonly starttime: number;
  readonly endtime: number;
}

/**
 * An event-time timer here fires only on the final watermark: the bids' watermarks stay far
 * below it (event time), and MAX_WATERMARK (+Infinity) passes every finite time.
 */
const END_OF_INPUT_MS = Number.MAX_SAFE_INTEGER;

/** ProcessingTimeTrigger that also fires (and purges) each open window when the input ends. */
export const processingTimeOrEndOfInput: Trigger<unknown, TimeWindow> = {
  onElement(_bid, _timestamp, window, ctx) {
    ctx.registerProcessingTimeTimer(window.maxTimestamp());
    ctx.registerEventTimeTimer(END_OF_INPUT_MS);
    return "CONTINUE";
  },
  onEventTime: (time) => (time === END_OF_INPUT_MS ? "FIRE_AND_PURGE" : "CONTINUE"),
  onProcessingTime: () => "FIRE",
  clear(window, ctx) {
    ctx.deleteProcessingTimeTimer(window.maxTimestamp());
    ctx.deleteEventTimeTimer(END_OF_INPUT_MS);
  },
};

export function q12(env: StreamExecutionEnvironment): DataStream<Q12Result> {
  return bidsOf(nexmarkEvents(env))
    // Only the bidder crosses the keyBy (docs/performance.md, "Project before a keyBy").
    .map((b: Bid) => b.bidder)
    .keyBy((bidder) => bidder)
    .window(TumblingProcessingTimeWindows.of(Time.seconds(10)))
    .trigger(processingTimeOrEndOfInput)
    .aggregate<number, number, Q12Result>(countRecords, (bidder, window, [bidCount], out) =>
      out.collect({ bidder, bidCount, starttime: window.start, endtime: window.end }),
    )
    .uid("q12-windows");
}

export default defineJob("nexmark-q12", (env) => {
  q12(env).print();
});
