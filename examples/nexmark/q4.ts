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
 * 1. auctions and bids `connect`ed and keyed by auction id; a KeyedCoProcessFunction keeps the
 *    auction and the highest price of its bids stamped in [dateTime, expires], and emits that
 *    winning price once, when event time passes `expires` (an event-time timer). The watermark
 *    says every bid stamped up to `expires` has arrived by then, so the price is final and the
 *    auction's state is dropped. Bids that arrive before their auction (the generator bids on
 *    auctions a few ids ahead; at parallelism 2 the auction may come from the other subtask) wait
 *    for it, but only until event time passes their own dateTime: an auction still missing then
 *    opens after the bid, which therefore is outside its lifetime.
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
import {
  defineJob,
  ListStateDescriptor,
  ValueStateDescriptor,
  type Auction,
  type Bid,
  type DataStream,
  type KeyedCoProcessFunction,
  type KeyedProcessFunction,
  type StreamExecutionEnvironment,
} from "eddy";
import { auctionsWithBids, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q4Result {
  readonly category: number;
  /** Average winning price in the category so far (cents, truncated). */
  readonly final: number;
}

/** The highest bid of one auction in its lifetime. */
export interface WinningBid {
  readonly auction: number;
  readonly category: number;
  readonly price: number;
}

/** An open auction and its highest price so far (-1: no bid in its lifetime yet). */
interface OpenAuction {
  readonly category: number;
  readonly dateTime: number;
  readonly expires: number;
  readonly maxPrice: number;
}

/** Emits each auction's winning price when event time passes its expiry. */
export function winningBids(): KeyedCoProcessFunction<number, Auction, Bid, WinningBid> {
  // Values are replaced, never mutated, so state need not copy them.
  const open = new ValueStateDescriptor<OpenAuction>("open-auction", { copy: "none" });
  const early = new ListStateDescriptor<Bid>("bids-before-auction", { copy: "none" });
  const inLifetime = (a: OpenAuction | Auction, b: Bid) => b.dateTime >= a.dateTime && b.dateTime <= a.expires;
  return {
    processElement1(auction, ctx) {
      let maxPrice = -1;
      const waiting = ctx.getListState(early);
      for (const bid of waiting.get()) {
        if (bid.price > maxPrice && inLifetime(auction, bid)) maxPrice = bid.price;
      }
      waiting.clear();
      ctx.getState(open).update({ category: auction.category, dateTime: auction.dateTime, expires: auction.expires, maxPrice });
      ctx.timerService().registerEventTimeTimer(auction.expires);
    },
    processElement2(bid, ctx) {
      const state = ctx.getState(open);
      const auction = state.value();
      if (auction === undefined) {
        ctx.getListState(early).add(bid);
        ctx.timerService().registerEventTimeTimer(bid.dateTime);
      } else if (bid.price > auction.maxPrice && inLifetime(auction, bid)) {
        state.update({ ...auction, maxPrice: bid.price });
      }
    },
    onTimer(timestamp, ctx, out) {
      const state = ctx.getState(open);
      const auction = state.value();
      if (auction !== undefined) {
        if (timestamp !== auction.expires) return;
        if (auction.maxPrice >= 0) out.collect({ auction: ctx.getCurrentKey(), category: auction.category, price: auction.maxPrice });
        state.clear();
        return;
      }
      // No auction yet: bids stamped up to now can no longer fall into its lifetime.
      const waiting = ctx.getListState(early);
      waiting.update(waiting.get().filter((b) => b.dateTime > timestamp));
    },
  };
}

interface PriceSum {
  readonly sum: number;
  readonly count: number;
}

/** The running average of the winning prices of a category. */
export function averagePrice(): KeyedProcessFunction<number, WinningBid, Q4Result> {
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

export function q4(env: StreamExecutionEnvironment): DataStream<Q4Result> {
  return auctionsWithBids(nexmarkEvents(env))
    .process(winningBids())
    .uid("q4-winning-bids")
    .keyBy((w) => w.category)
    .process(averagePrice())
    .uid("q4-average");
}

export default defineJob("nexmark-q4", (env) => {
  q4(env).print();
});
