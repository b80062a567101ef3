/**
 * Nexmark q1 — currency conversion. Every bid with its price converted from dollars to euros.
 *
 *   SELECT auction, bidder, 0.908 * price as price, dateTime, extra FROM bid;
 *
 * DataStream: one `map`. SQL computes `0.908 * price` as an exact DECIMAL; here it is
 * `price * 908 / 1000`: `price * 908` is an exact integer (prices are far below 2^53 / 908), so the
 * one division gives the double nearest to the exact decimal, which is what the DECIMAL reads as
 * when converted to a double. (`0.908 * price` would round twice: 0.908 has no exact double.)
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q1.ts -p 2
 */
import { defineJob, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q1Result {
  readonly auction: number;
  readonly bidder: number;
  /** Price in euro cents (fractional). */
  readonly price: number;
  readonly dateTime: number;
  readonly extra: string;
}

/** Dollars to euros, exactly rounded: see the file comment. */
export function dollarsToEuros(price: number): number {
  return (price * 908) / 1000;
}

export function q1(env: StreamExecutionEnvironment): DataStream<Q1Result> {
  return bidsOf(nexmarkEvents(env)).map(
    (b): Q1Result => ({ auction: b.auction, bidder: b.bidder, price: dollarsToEuros(b.price), dateTime: b.dateTime, extra: b.extra }),
  );
}

export default defineJob("nexmark-q1", (env) => {
  q1(env).print();
});
