/**
 * Nexmark q16 — channel statistics report. q15 per channel and day, with the latest minute of
 * the day that saw a bid on the channel.
 *
 *   SELECT channel,
 *          DATE_FORMAT(dateTime, 'yyyy-MM-dd') as `day`,
 *          max(DATE_FORMAT(dateTime, 'HH:mm')) as `minute`,
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
 *   GROUP BY channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd');
 *
 * DataStream: q15's KeyedProcessFunction (bidding-statistics.ts) keyed by the composite key
 * [channel, day]. Within one day 'HH:mm' strings sort like the times, so the largest minute is
 * the minute of the group's latest bid, which the function tracks. An updating result: the last
 * row of a (channel, day) is its answer.
 *
 *   NEXMARK_EVENTS=100000 NEXMARK_EVENT_RATE=0.05 npx eddy run examples/nexmark/q16.ts -p 2
 */
import { defineJob, type Bid, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { biddingStatistics, dayOf, formatDay, formatMinute, type BidFacts, type BiddingStatistics } from "./bidding-statistics.ts";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q16Result extends BiddingStatistics {
  readonly channel: string;
  /** 'yyyy-MM-dd', UTC. */
  readonly day: string;
  /** 'HH:mm' (UTC) of the latest bid on the channel that day. */
  readonly minute: string;
}

/** What q16 reads of a bid: the statistics' fields and the channel it groups by. */
interface ChannelBid extends BidFacts {
  readonly channel: string;
}

export function q16(env: StreamExecutionEnvironment): DataStream<Q16Result> {
  return bidsOf(nexmarkEvents(env))
    .map((b: Bid): ChannelBid => ({ channel: b.channel, auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime }))
    .keyBy((b): [string, number] => [b.channel, dayOf(b.dateTime)])
    .process(
      biddingStatistics<[string, number], Q16Result>(([channel, day], stats, lastDateTime) => ({
        channel,
        day: formatDay(day),
        minute: formatMinute(lastDateTime),
        ...stats,
      })),
    )
    .uid("q16-statistics");
}

export default defineJob("nexmark-q16", (env) => {
  q16(env).print();
});
