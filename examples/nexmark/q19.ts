/**
 * Nexmark q19 — auction top-10 price. The 10 highest bids of each auction, with their rank.
 *
 *   SELECT * FROM
 *   (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
 *   WHERE rank_number <= 10;
 *
 * DataStream: bids keyed by auction; a KeyedProcessFunction keeps the auction's top 10 in order
 * in keyed state. A bid that enters the top 10 at rank r shifts the ranks below it, so it emits
 * the rows of ranks r..10 (those that exist) again: an updating result keyed by (auction,
 * rank_number), the way Flink's rank operator with a rank-number column emits it. Bids never
 * leave the input, so a rank once filled stays filled, and the last row emitted per (auction,
 * rankNumber) is the answer. A bid below the 10th costs one comparison and emits nothing.
 *
 * Deviation: ROW_NUMBER leaves bids of equal price in any order. Here, and in the oracle, ties
 * are ordered by dateTime (earlier first), then bidder, channel, url and extra, so the answer is
 * deterministic.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q19.ts -p 2
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

export interface Q19Result extends Bid {
  /** 1 for the highest bid of the auction. */
  readonly rankNumber: number;
}

const TOP_N = 10;

/** Whether `a` ranks above `b`: higher price, then earlier dateTime, then bidder, channel, url, extra. */
export function ranksAbove(a: Bid, b: Bid): boolean {
  if (a.price !== b.price) return a.price > b.price;
  if (a.dateTime !== b.dateTime) return a.dateTime < b.dateTime;
  if (a.bidder !== b.bidder) return a.bidder < b.bidder;
  if (a.channel !== b.channel) return a.channel < b.channel;
  if (a.url !== b.url) return a.url < b.url;
  return a.extra < b.extra;
}

/** Keeps each auction's top 10 and emits the ranks a bid changed. */
export function topBids(): KeyedProcessFunction<number, Bid, Q19Result> {
  // The array is replaced, never mutated, once written, so state need not copy it.
  const top = new ValueStateDescriptor<readonly Bid[]>("top-bids", { copy: "none" });
  return {
    processElement(bid, ctx, out) {
      const state = ctx.getState(top);
      const bids = state.value() ?? [];
      let rank = bids.length;
      while (rank > 0 && ranksAbove(bid, bids[rank - 1]!)) rank--;
      if (rank >= TOP_N) return;
      const next = [...bids.slice(0, rank), bid, ...bids.slice(rank, TOP_N - 1)];
      state.update(next);
      for (let i = rank; i < next.length; i++) out.collect({ ...next[i]!, rankNumber: i + 1 });
    },
  };
}

export function q19(env: StreamExecutionEnvironment): DataStream<Q19Result> {
  return bidsOf(nexmarkEvents(env))
    .keyBy((b) => b.auction)
    .process(topBids())
    .uid("q19-top-bids");
}

export default defineJob("nexmark-q19", (env) => {
  q19(env).print();
});
