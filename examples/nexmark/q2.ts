/**
 * Nexmark q2 — selection. The bids on a few auctions: those whose id is a multiple of 123.
 *
 *   SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
 *
 * DataStream: `filter` then `map`; both chain to the source, so no record leaves its thread.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q2.ts -p 2
 */
import { defineJob, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q2Result {
  readonly auction: number;
  readonly price: number;
}

export function q2(env: StreamExecutionEnvironment): DataStream<Q2Result> {
  return bidsOf(nexmarkEvents(env))
    .filter((b) => b.auction % 123 === 0)
    .map((b): Q2Result => ({ auction: b.auction, price: b.price }));
}

export default defineJob("nexmark-q2", (env) => {
  q2(env).print();
});
