/**
 * Nexmark q14 — calculation with a user function. Bids in a price band, converted to euros,
 * classified by the hour they were made, with a count of the letter 'c' in their `extra` field
 * (the suite's `count_char` UDF).
 *
 *   SELECT auction, bidder, 0.908 * price as price,
 *     CASE WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
 *          WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
 *          ELSE 'otherTime' END AS bidTimeType,
 *     dateTime, extra, count_char(extra, 'c') AS c_counts
 *   FROM bid
 *   WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
 *
 * DataStream: `filter` then `map`, chained to the source. A user-defined function is just a
 * function here. The price band is tested on `price * 908` against the bounds × 1000, exact integer
 * arithmetic equal to the SQL's DECIMAL comparison; the euro price is q1's `dollarsToEuros`.
 * HOUR is taken in UTC.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q14.ts -p 2
 */
import { defineJob, type Bid, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";
import { dollarsToEuros } from "./q1.ts";

export type BidTimeType = "dayTime" | "nightTime" | "otherTime";

export interface Q14Result {
  readonly auction: number;
  readonly bidder: number;
  /** Price in euro cents (fractional). */
  readonly price: number;
  readonly bidTimeType: BidTimeType;
  readonly dateTime: number;
  readonly extra: string;
  /** Occurrences of 'c' in `extra`. */
  readonly cCounts: number;
}

/** The suite's CountChar UDF: how often `char` (one UTF-16 unit) occurs in `s`. */
export function countChar(s: string, char: string): number {
  const code = char.charCodeAt(0);
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === code) n++;
  return n;
}

export function bidTimeType(dateTime: number): BidTimeType {
  const hour = new Date(dateTime).getUTCHours();
  if (hour >= 8 && hour <= 18) return "dayTime";
  if (hour <= 6 || hour >= 20) return "nightTime";
  return "otherTime";
}

/** Whether q14 keeps a bid: its price in euros between 1 M and 50 M (×908 avoids fractions). */
export function q14Keeps(b: Bid): boolean {
  return b.price * 908 > 1_000_000_000 && b.price * 908 < 50_000_000_000;
}

/** q14's row for a kept bid. */
export function q14Row(b: Bid): Q14Result {
  return {
    auction: b.auction,
    bidder: b.bidder,
    price: dollarsToEuros(b.price),
    bidTimeType: bidTimeType(b.dateTime),
    dateTime: b.dateTime,
    extra: b.extra,
    cCounts: countChar(b.extra, "c"),
  };
}

export function q14(env: StreamExecutionEnvironment): DataStream<Q14Result> {
  return bidsOf(nexmarkEvents(env)).filter(q14Keeps).map(q14Row);
}

export default defineJob("nexmark-q14", (env) => {
  q14(env).print();
});
