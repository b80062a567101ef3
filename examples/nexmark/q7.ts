/**
 * Nexmark q7 — highest bid. Every 10 seconds, the bid(s) with the highest price in that window.
 *
 *   SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
 *   FROM bid B
 *   JOIN (SELECT MAX(price) AS maxprice, window_end as dateTime
 *         FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
 *         GROUP BY window_start, window_end) B1
 *   ON B.price = B1.maxprice
 *   WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;
 *
 * DataStream: `windowAll` over tumbling 10 s event-time windows (one subtask sees every bid; the
 * question is global) with an `aggregate` whose accumulator is the highest price so far and the
 * bids at that price: no buffer of the window's bids, one small accumulator per window. The window
 * function emits those bids when the watermark passes the window's end.
 *
 * Deviation: `BETWEEN` is closed, so the SQL also pairs a window's maximum with a bid at exactly
 * its end time (the first millisecond of the next window) at the same price. This job takes the
 * bids of the window itself, [start, end), which is the query's intent.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q7.ts -p 2
 */
import {
  defineJob,
  Time,
  TumblingEventTimeWindows,
  type AggregateFunction,
  type Bid,
  type DataStream,
  type StreamExecutionEnvironment,
} from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q7Result {
  readonly auction: number;
  readonly price: number;
  readonly bidder: number;
  readonly dateTime: number;
  readonly extra: string;
}

interface HighestBids {
  /** The highest price so far; -1 before the first bid. */
  price: number;
  /** Every bid at `price`, in arrival order. */
  bids: Q7Result[];
}

export const highestBids: AggregateFunction<Bid, HighestBids, Q7Result[]> = {
  createAccumulator: () => ({ price: -1, bids: [] }),
  add(b, acc) {
    if (b.price < acc.price) return acc;
    const bid: Q7Result = { auction: b.auction, price: b.price, bidder: b.bidder, dateTime: b.dateTime, extra: b.extra };
    if (b.price > acc.price) return { price: b.price, bids: [bid] };
    acc.bids.push(bid);
    return acc;
  },
  getResult: (acc) => acc.bids,
  merge: (a, b) => (a.price > b.price ? a : b.price > a.price ? b : { price: a.price, bids: [...a.bids, ...b.bids] }),
};

export function q7(env: StreamExecutionEnvironment): DataStream<Q7Result> {
  return bidsOf(nexmarkEvents(env))
    .windowAll(TumblingEventTimeWindows.of(Time.seconds(10)))
    .aggregate<HighestBids, Q7Result[], Q7Result>(highestBids, (_key, _window, [bids], out) => {
      for (const bid of bids) out.collect(bid);
    })
    .uid("q7-highest-bids");
}

export default defineJob("nexmark-q7", (env) => {
  q7(env).print();
});
