/**
 * Nexmark q11 — user sessions. How many bids each bidder made per session, a session ending
 * after 10 seconds without a bid.
 *
 *   SELECT B.bidder, count(*) as bid_count,
 *          SESSION_START(B.dateTime, INTERVAL '10' SECOND) as starttime,
 *          SESSION_END(B.dateTime, INTERVAL '10' SECOND) as endtime
 *   FROM bid B
 *   GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);
 *
 * DataStream: bids keyed by bidder into event-time session windows with a 10 s gap, counted by an
 * `aggregate` (merging sessions merge their counts). A session runs from its first bid to its
 * last bid + 10 s; as in Flink, two bids exactly 10 s apart are in one session.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q11.ts -p 2
 */
import {
  defineJob,
  EventTimeSessionWindows,
  Time,
  type Bid,
  type DataStream,
  type StreamExecutionEnvironment,
} from "eddy";
import { bidsOf, countRecords, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q11Result {
  readonly bidder: number;
  readonly bidCount: number;
  readonly starttime: number;
  readonly endtime: number;
}

export function q11(env: StreamExecutionEnvironment): DataStream<Q11Result> {
  return bidsOf(nexmarkEvents(env))
    // Only the bidder id crosses the keyBy (sessions read the record's timestamp, not the bid).
    .map((b: Bid) => b.bidder)
    .keyBy((bidder) => bidder)
    .window(EventTimeSessionWindows.withGap(Time.seconds(10)))
    .aggregate<number, number, Q11Result>(countRecords, (bidder, session, [bidCount], out) =>
      out.collect({ bidder, bidCount, starttime: session.start, endtime: session.end }),
    )
    .uid("q11-sessions");
}

export default defineJob("nexmark-q11", (env) => {
  q11(env).print();
});
