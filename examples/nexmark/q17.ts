/**
 * Nexmark q17 — auction statistics report. Per auction and day: how many bids, per price band,
 * and the minimum, maximum, average and total price.
 *
 *   SELECT auction,
 *          DATE_FORMAT(dateTime, 'yyyy-MM-dd') as `day`,
 *          count(*) AS total_bids,
 *          count(*) filter (where price < 10000) AS rank1_bids,
 *          count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
 *          count(*) filter (where price >= 1000000) AS rank3_bids,
 *          min(price) AS min_price,
 *          max(price) AS max_price,
 *          avg(price) AS avg_price,
 *          sum(price) AS sum_price
 *   FROM bid
 *   GROUP BY auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd');
 *
 * DataStream: bids keyed by [auction, UTC day] and a KeyedProcessFunction that keeps the group's
 * row in keyed state and emits it after every bid: an updating result, like the SQL's unbounded
 * GROUP BY; the last row of a group is its answer. As in Flink (and the reference's BIGINT
 * column), the average of BIGINT prices is a BIGINT: the sum divided by the count, truncated.
 *
 *   NEXMARK_EVENTS=100000 NEXMARK_EVENT_RATE=0.05 npx eddy run examples/nexmark/q17.ts -p 2
 */
import {
  defineJob,
  ValueStateDescriptor,
  type Bid,
  type DataStream,
  type KeyedProcessFunction,
  type StreamExecutionEnvironment,
} from "eddy";
import { dayOf, formatDay, priceRank } from "./bidding-statistics.ts";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q17Result {
  readonly auction: number;
  /** 'yyyy-MM-dd', UTC. */
  readonly day: string;
  readonly totalBids: number;
  readonly rank1Bids: number;
  readonly rank2Bids: number;
  readonly rank3Bids: number;
  readonly minPrice: number;
  readonly maxPrice: number;
  /** sumPrice / totalBids, truncated to whole cents. */
  readonly avgPrice: number;
  readonly sumPrice: number;
}

/** The row of an (auction, day) after its first bid, at `price`. */
export function firstRow(auction: number, day: number, price: number): Q17Result {
  const rank = priceRank(price);
  return {
    auction,
    day: formatDay(day),
    totalBids: 1,
    rank1Bids: rank === 1 ? 1 : 0,
    rank2Bids: rank === 2 ? 1 : 0,
    rank3Bids: rank === 3 ? 1 : 0,
    minPrice: price,
    maxPrice: price,
    avgPrice: price,
    sumPrice: price,
  };
}

/** Row `s` after one more bid at `price`. */
export function nextRow(s: Q17Result, price: number): Q17Result {
  const rank = priceRank(price);
  const totalBids = s.totalBids + 1;
  const sumPrice = s.sumPrice + price;
  return {
    auction: s.auction,
    day: s.day,
    totalBids,
    rank1Bids: s.rank1Bids + (rank === 1 ? 1 : 0),
    rank2Bids: s.rank2Bids + (rank === 2 ? 1 : 0),
    rank3Bids: s.rank3Bids + (rank === 3 ? 1 : 0),
    minPrice: Math.min(s.minPrice, price),
    maxPrice: Math.max(s.maxPrice, price),
    avgPrice: Math.trunc(sumPrice / totalBids),
    sumPrice,
  };
}

/** What q17 reads of a bid. */
export interface PricedBid {
  readonly auction: number;
  readonly price: number;
  readonly dateTime: number;
}

/** Updates and emits the row of the bid's (auction, day) per bid. */
export function auctionStatistics(): KeyedProcessFunction<[number, number], PricedBid, Q17Result> {
  // Rows are replaced, never mutated, so state need not copy them.
  const row = new ValueStateDescriptor<Q17Result>("auction-day-statistics", { copy: "none" });
  return {
    processElement(bid, ctx, out) {
      const state = ctx.getState(row);
      const s = state.value();
      let next: Q17Result;
      if (s === undefined) {
        const [auction, day] = ctx.getCurrentKey();
        next = firstRow(auction, day, bid.price);
      } else next = nextRow(s, bid.price);
      state.update(next);
      out.collect(next);
    },
  };
}

export function q17(env: StreamExecutionEnvironment): DataStream<Q17Result> {
  return bidsOf(nexmarkEvents(env))
    // Only what the statistics read crosses the keyBy (docs/performance.md, "Project before a keyBy").
    .map((b: Bid): PricedBid => ({ auction: b.auction, price: b.price, dateTime: b.dateTime }))
    .keyBy((b): [number, number] => [b.auction, dayOf(b.dateTime)])
    .process(auctionStatistics())
    .uid("q17-statistics");
}

export default defineJob("nexmark-q17", (env) => {
  q17(env).print();
});
