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

interface Hottest {
  readonly num: number;
  readonly auctions: number[];
}

/** Per window (the key: its end): the auctions with the highest count, emitted when it closes. */
export function hottestAuctions(): KeyedProcessFunction<number, Q5Result, Q5Result> {
  const hottest = new ValueStateDescriptor<Hottest>("hottest");
  return {
    processElement(count, ctx) {
      const state = ctx.getState(hottest);
      const best = state.value();
      if (best === undefined) {
        state.update({ num: count.num, auctions: [count.auction] });
        ctx.timerService().registerEventTimeTimer(count.endtime - 1);
      } else if (count.num > best.num) {
        state.update({ num: count.num, auctions: [count.auction] });
      } else if (count.num === best.num) {
        best.auctions.push(count.auction);
        state.update(best);
      }
    },
    onTimer(_timestamp, ctx, out) {
      const state = ctx.getState(hottest);
      const best = state.value();
      if (best === undefined) return;
      const endtime = ctx.getCurrentKey();
      for (const auction of best.auctions) out.collect({ auction, num: best.num, starttime: endtime - WINDOW_MS, endtime });
      state.clear();
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
