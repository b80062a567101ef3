/**
 * Nexmark q20 — expand bid with auction. Every bid on a category-10 auction, with the auction's
 * fields.
 *
 *   SELECT auction, bidder, price, channel, url, B.dateTime, B.extra,
 *          itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
 *   FROM bid AS B INNER JOIN auction AS A on B.auction = A.id
 *   WHERE A.category = 10;
 *
 * DataStream: auctions and bids `connect`ed and keyed by auction id (auction.id, bid.auction), and
 * a KeyedCoProcessFunction joining them with keyed state, like q3: an unbounded (not windowed)
 * join in which each match is emitted once, when its second side arrives. Bids that arrive before
 * their auction wait for it.
 *
 * Unlike Flink's plan, which filters auctions before the join and so must keep every bid of every
 * other category waiting forever, the join sees all auctions and remembers only the category of
 * the others: a bid on an auction of another category is dropped at once, and the bids that
 * waited for it are dropped when it arrives. The result is the same. State: each category-10
 * auction, the category of each other auction, and the bids whose auction has not arrived.
 *
 * Output fields are the SQL's, with the two dateTime and extra columns named bidDateTime,
 * bidExtra, auctionDateTime and auctionExtra (the reference sink's names, in camelCase).
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q20.ts -p 2
 */
import {
  defineJob,
  ListStateDescriptor,
  ValueStateDescriptor,
  type Auction,
  type Bid,
  type DataStream,
  type KeyedCoProcessFunction,
  type StreamExecutionEnvironment,
} from "eddy";
import { auctionsWithBids, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q20Result {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly channel: string;
  readonly url: string;
  readonly bidDateTime: number;
  readonly bidExtra: string;
  readonly itemName: string;
  readonly description: string;
  readonly initialBid: number;
  readonly reserve: number;
  readonly auctionDateTime: number;
  readonly expires: number;
  readonly seller: number;
  readonly category: number;
  readonly auctionExtra: string;
}

export const CATEGORY = 10;

/** The result row of a bid and its auction. */
export function expand(b: Bid, a: Auction): Q20Result {
  return {
    auction: b.auction,
    bidder: b.bidder,
    price: b.price,
    channel: b.channel,
    url: b.url,
    bidDateTime: b.dateTime,
    bidExtra: b.extra,
    itemName: a.itemName,
    description: a.description,
    initialBid: a.initialBid,
    reserve: a.reserve,
    auctionDateTime: a.dateTime,
    expires: a.expires,
    seller: a.seller,
    category: a.category,
    auctionExtra: a.extra,
  };
}

/** Joins each bid with its auction when that is in category 10, whichever arrives first. */
export function expandBids(): KeyedCoProcessFunction<number, Auction, Bid, Q20Result> {
  // Auctions and bids are never mutated, so state need not copy them.
  const category = new ValueStateDescriptor<number>("auction-category");
  const auctionInCategory = new ValueStateDescriptor<Auction>("auction", { copy: "none" });
  const waitingBids = new ListStateDescriptor<Bid>("bids-waiting-for-auction", { copy: "none" });
  return {
    processElement1(auction, ctx, out) {
      // An auction opens once, so this runs at most once per key.
      ctx.getState(category).update(auction.category);
      const waiting = ctx.getListState(waitingBids);
      if (auction.category === CATEGORY) {
        ctx.getState(auctionInCategory).update(auction);
        for (const bid of waiting.get()) out.collect(expand(bid, auction));
      }
      waiting.clear();
    },
    processElement2(bid, ctx, out) {
      const known = ctx.getState(category).value();
      if (known === undefined) ctx.getListState(waitingBids).add(bid);
      else if (known === CATEGORY) out.collect(expand(bid, ctx.getState(auctionInCategory).value()!));
    },
  };
}

export function q20(env: StreamExecutionEnvironment): DataStream<Q20Result> {
  return auctionsWithBids(nexmarkEvents(env))
    .process(expandBids())
    .uid("q20-join");
}

export default defineJob("nexmark-q20", (env) => {
  q20(env).print();
});
