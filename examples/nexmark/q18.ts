/**
 * Nexmark q18 — find last bid. Each bidder's latest bid on each auction (a deduplication that
 * keeps the last row).
 *
 *   SELECT auction, bidder, price, channel, url, dateTime, extra
 *   FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
 *         FROM bid)
 *   WHERE rank_number <= 1;
 *
 * DataStream: bids keyed by [bidder, auction]; a KeyedProcessFunction keeps the latest bid and
 * emits a bid whenever it becomes the latest. An updating result, like Flink's deduplication on
 * event time: a bid arriving after a later-stamped one of the same key changes nothing; the last
 * bid emitted for a key is its answer. State: one bid per (bidder, auction) ever seen.
 *
 * Deviation: the SQL leaves bids of the same key and millisecond in any order (Flink keeps the
 * one that arrived last, which depends on the parallelism). Here, and in the oracle, "latest"
 * orders by dateTime, then price, channel, url and extra, so the answer is deterministic.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q18.ts -p 2
 */
import {
  defineJob,
  ValueStateDescriptor,
  type Bid,
  type DataStream,
  type KeyedProcessFunction,
  type StreamExecutionEnvironment,
} from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export type Q18Result = Bid;

/** Whether `a` comes after `b`: by dateTime, then price, channel, url, extra. */
export function isLater(a: Bid, b: Bid): boolean {
  if (a.dateTime !== b.dateTime) return a.dateTime > b.dateTime;
  if (a.price !== b.price) return a.price > b.price;
  if (a.channel !== b.channel) return a.channel > b.channel;
  if (a.url !== b.url) return a.url > b.url;
  return a.extra > b.extra;
}

/** Emits a bid when it is the latest of its key so far. */
export function lastBid(): KeyedProcessFunction<[number, number], Bid, Q18Result> {
  // Bids are never mutated, so state need not copy them.
  const latest = new ValueStateDescriptor<Bid>("latest-bid", { copy: "none" });
  return {
    processElement(bid, ctx, out) {
      const state = ctx.getState(latest);
      const last = state.value();
      if (last !== undefined && !isLater(bid, last)) return;
      state.update(bid);
      out.collect(bid);
    },
  };
}

export function q18(env: StreamExecutionEnvironment): DataStream<Q18Result> {
  return bidsOf(nexmarkEvents(env))
    .keyBy((b): [number, number] => [b.bidder, b.auction])
    .process(lastBid())
    .uid("q18-last-bid");
}

export default defineJob("nexmark-q18", (env) => {
  q18(env).print();
});
