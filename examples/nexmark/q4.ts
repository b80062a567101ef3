/**
 * Nexmark q4 — average price for a category. The average of the winning bids of all auctions in
 * each category, the winning bid of an auction being its highest bid within its lifetime.
 *
 *   SELECT Q.category, AVG(Q.final)
 *   FROM (SELECT MAX(B.price) AS final, A.category
 *         FROM auction A, bid B
 *         WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
 *         GROUP BY A.id, A.category) Q
 *   GROUP BY Q.category;
 *
 * DataStream, in two keyed steps:
 * 1. the winning bid of each auction (winning-bids.ts, shared with q9), emitted once, when event
 *    time passes the auction's expiry, and reduced to its category and price. Only what the join
 *    reads crosses its keyBy: an auction's id, category and lifetime, a bid's auction, price and
 *    time (at parallelism 2 whole records cost 1.7× the CPU per event);
 * 2. the winning prices keyed by category, and a running average (sum and count in keyed state)
 *    emitted after each auction closes.
 *
 * Difference from the SQL, in how results arrive, not in what they converge to: Flink's regular
 * join updates MAX on every bid and retracts the category average each time it changes; here an
 * auction contributes once, when it closes, so the stream of averages is append-only and its last
 * value per category equals the SQL answer. At the end of a bounded input the final watermark
 * closes every auction still open. As in Flink, AVG of a BIGINT is a BIGINT: the average is
 * truncated to whole cents. Auctions without a bid in their lifetime are not counted (inner join).
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q4.ts -p 2
 */
import { defineJob, ValueStateDescriptor, type Auction, type Bid, type DataStream, type KeyedProcessFunction, type StreamExecutionEnvironment } from "eddy";
import { auctionsOf, bidsOf, nexmarkEvents } from "./nexmark-streams.ts";
import { winningBids, type AuctionLifetime, type TimedBid } from "./winning-bids.ts";

export interface Q4Result {
  readonly category: number;
  /** Average winning price in the category so far (cents, truncated). */
  readonly final: number;
}

/** A closed auction's category and winning price: all of it the second step needs (and all that crosses the keyBy). */
export interface WinningPrice {
  readonly category: number;
  readonly price: number;
}

interface PriceSum {
  readonly sum: number;
  readonly count: number;
}

/** The running average of the winning prices of a category. */
export function averagePrice(): KeyedProcessFunction<number, WinningPrice, Q4Result> {
  const total = new ValueStateDescriptor<PriceSum>("winning-price-sum", { copy: "none" });
  return {
    processElement(win, ctx, out) {
      const state = ctx.getState(total);
      const before = state.value() ?? { sum: 0, count: 0 };
      const after = { sum: before.sum + win.price, count: before.count + 1 };
      state.update(after);
      out.collect({ category: win.category, final: Math.trunc(after.sum / after.count) });
    },
  };
}

/** What q4 reads of an auction: its lifetime and category. */
export interface CategorizedAuction extends AuctionLifetime {
  readonly category: number;
}

/** q4 reads only the winning price, so a higher price wins and ties need no order. */
export const higherPrice = (b: TimedBid, best: TimedBid | undefined): boolean => best === undefined || b.price > best.price;

// Only the fields the join reads cross its keyBy (docs/performance.md, "Project before a keyBy").
export const categorizedAuction = (a: Auction): CategorizedAuction => ({ id: a.id, category: a.category, dateTime: a.dateTime, expires: a.expires });
export const timedBid = (b: Bid): TimedBid => ({ auction: b.auction, price: b.price, dateTime: b.dateTime });

export function q4(env: StreamExecutionEnvironment): DataStream<Q4Result> {
  const events = nexmarkEvents(env);
  const auctions = auctionsOf(events).map(categorizedAuction);
  const bids = bidsOf(events).map(timedBid);
  return auctions
    .connect(bids)
    .keyBy(
      (a) => a.id,
      (b) => b.auction,
    )
    .process(winningBids<CategorizedAuction, TimedBid>(higherPrice))
    .uid("q4-winning-bids")
    .map((w): WinningPrice => ({ category: w.auction.category, price: w.bid.price }))
    .keyBy((w) => w.category)
    .process(averagePrice())
    .uid("q4-average");
}

export default defineJob("nexmark-q4", (env) => {
  q4(env).print();
});
