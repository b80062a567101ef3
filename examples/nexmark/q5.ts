/**
 * Nexmark q5 — hot items. Every 2 seconds, the auctions with the most bids in the last 10
 * seconds (all of them when several tie).
 *
 *   SELECT AuctionBids.auction, AuctionBids.num
 *   FROM (SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
 *         FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
 *         GROUP BY auction, window_start, window_end) AS AuctionBids
 *   JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
 *         FROM (<the same counts>) AS CountBids
 *         GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids
 *   ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
 *      AND AuctionBids.num >= MaxBids.maxn;
 *
 * DataStream, in two keyed steps:
 * 1. bids keyed by auction, sliding event-time windows of 10 s every 2 s, counted by an
 *    `aggregate` (one counter per 2 s pane, merged when a window fires: one state update per bid);
 * 2. the counts keyed by their window, and a KeyedProcessFunction that keeps only the running
 *    maximum and the auctions that reach it, and emits them when event time passes the window's
 *    end. A window's counts are stamped with its last millisecond and all arrive before the
 *    watermark that passes it, from every upstream subtask, so the timer at that millisecond fires
 *    after the last count.
 *
 * Output: the SQL's (auction, num) plus the window's bounds (starttime, endtime), so that results
 * of different windows can be told apart.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q5.ts -p 2
 */
import {
  defineJob,
  ListStateDescriptor,
  SlidingEventTimeWindows,
  Time,
  ValueStateDescriptor,
  type Bid,
  type DataStream,
  type KeyedProcessFunction,
  type StreamExecutionEnvironment,
} from "eddy";
import { bidsOf, countRecords, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q5Result {
  readonly auction: number;
  /** Bids on the auction in the window. */
  readonly num: number;
  readonly starttime: number;
  readonly endtime: number;
}

const WINDOW_MS = Time.seconds(10);
const SLIDE_MS = Time.seconds(2);

/**
 * Per window (the key: its end): the auctions with the highest count, emitted when it closes. The
 * highest count and the auctions that have it are two states, so a tie appends one number to a
 * list state instead of copying every tied auction in and out of one value state.
 */
export function hottestAuctions(): KeyedProcessFunction<number, Q5Result, Q5Result> {
  const maxCount = new ValueStateDescriptor<number>("max-count");
  const hottest = new ListStateDescriptor<number>("hottest-auctions");
  return {
    processElement(count, ctx) {
      const max = ctx.getState(maxCount);
      const best = max.value();
      if (best !== undefined && count.num < best) return;
      const auctions = ctx.getListState(hottest);
      if (count.num === best) {
        auctions.add(count.auction);
        return;
      }
      if (best === undefined) ctx.timerService().registerEventTimeTimer(count.endtime - 1);
      max.update(count.num);
      auctions.update([count.auction]);
    },
    onTimer(_timestamp, ctx, out) {
      const max = ctx.getState(maxCount);
      const num = max.value();
      if (num === undefined) return;
      const auctions = ctx.getListState(hottest);
      const endtime = ctx.getCurrentKey();
      for (const auction of auctions.get()) out.collect({ auction, num, starttime: endtime - WINDOW_MS, endtime });
      max.clear();
      auctions.clear();
    },
  };
}

export function q5(env: StreamExecutionEnvironment): DataStream<Q5Result> {
  return bidsOf(nexmarkEvents(env))
    // Only the auction id crosses the keyBy (the window reads the record's timestamp, not the bid).
    .map((b: Bid) => b.auction)
    .keyBy((auction) => auction)
    .window(SlidingEventTimeWindows.of(WINDOW_MS, SLIDE_MS))
    .aggregate<number, number, Q5Result>(countRecords, (auction, window, [num], out) =>
      out.collect({ auction, num, starttime: window.start, endtime: window.end }),
    )
    .uid("q5-count-bids")
    .keyBy((c) => c.endtime)
    .process(hottestAuctions())
    .uid("q5-hottest");
}

export default defineJob("nexmark-q5", (env) => {
  q5(env).print();
});
