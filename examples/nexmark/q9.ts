/**
 * Nexmark q9 — winning bids. Each auction with its winning bid: the highest bid within the
 * auction's lifetime, the earliest of equal ones.
 *
 *   SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
 *          auction, bidder, price, bid_dateTime, bid_extra
 *   FROM (SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
 *                ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
 *         FROM auction A, bid B
 *         WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
 *   WHERE rownum <= 1;
 *
 * DataStream: the winning bid of each auction (winning-bids.ts, shared with q4), emitted once,
 * when event time passes the auction's expiry, then flattened into the SQL's row. Flink's plan
 * (a regular join, then a Top-1) emits a row when an auction gets its first bid and retracts and
 * replaces it on every better bid; here each auction's row is emitted once, final, when the
 * auction closes, so the output is append-only and equals the SQL's answer over the whole input.
 * Bids equal in price and time are ordered by bidder, channel, url and extra (the SQL leaves
 * them unordered).
 *
 * Output fields are the SQL's, with `bid_dateTime` and `bid_extra` as bidDateTime and bidExtra.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q9.ts -p 2
 */
import { defineJob, type Auction, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { auctionsWithBids, nexmarkEvents } from "./nexmark-streams.ts";
import { winningBids, type WinningBid } from "./winning-bids.ts";

/** The auction's columns (A.*), then the winning bid's. */
export interface Q9Result extends Auction {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly bidDateTime: number;
  readonly bidExtra: string;
}

/** The SQL's row of an auction and its winning bid. */
export function q9Row({ auction: a, bid: b }: WinningBid): Q9Result {
  return {
    id: a.id,
    itemName: a.itemName,
    description: a.description,
    initialBid: a.initialBid,
    reserve: a.reserve,
    dateTime: a.dateTime,
    expires: a.expires,
    seller: a.seller,
    category: a.category,
    extra: a.extra,
    auction: b.auction,
    bidder: b.bidder,
    price: b.price,
    bidDateTime: b.dateTime,
    bidExtra: b.extra,
  };
}

export function q9(env: StreamExecutionEnvironment): DataStream<Q9Result> {
  return auctionsWithBids(nexmarkEvents(env)).process(winningBids()).uid("q9-winning-bids").map(q9Row);
}

export default defineJob("nexmark-q9", (env) => {
  q9(env).print();
});
