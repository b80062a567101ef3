/**
 * Nexmark q15 — bidding statistics report. Per day: how many bids, distinct bidders and distinct
 * auctions, in total and per price band.
 *
 *   SELECT DATE_FORMAT(dateTime, 'yyyy-MM-dd') as `day`,
 *          count(*) AS total_bids,
 *          count(*) filter (where price < 10000) AS rank1_bids,
 *          count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
 *          count(*) filter (where price >= 1000000) AS rank3_bids,
 *          count(distinct bidder) AS total_bidders,
 *          count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
 *          count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
 *          count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
 *          count(distinct auction) AS total_auctions,
 *          count(distinct auction) filter (where price < 10000) AS rank1_auctions,
 *          count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
 *          count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
 *   FROM bid
 *   GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd');
 *
 * DataStream: bids keyed by their UTC day, and a KeyedProcessFunction (bidding-statistics.ts)
 * that updates the day's counts and distinct sets and emits the day's row after every bid: an
 * updating result, like the SQL's unbounded GROUP BY. The last row of a day is its answer.
 *
 *   NEXMARK_EVENTS=100000 NEXMARK_EVENT_RATE=0.05 npx eddy run examples/nexmark/q15.ts -p 2
 */
import { defineJob, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { bidFacts, biddingStatistics, dayOf, formatDay, type BiddingStatistics } from "./bidding-statistics.ts";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q15Result extends BiddingStatistics {
  /** 'yyyy-MM-dd', UTC. */
  readonly day: string;
}

export function q15(env: StreamExecutionEnvironment): DataStream<Q15Result> {
  return bidsOf(nexmarkEvents(env))
    .map(bidFacts)
    .keyBy((b) => dayOf(b.dateTime))
    .process(biddingStatistics<number, Q15Result>((day, stats) => ({ day: formatDay(day), ...stats })))
    .uid("q15-statistics");
}

export default defineJob("nexmark-q15", (env) => {
  q15(env).print();
});
