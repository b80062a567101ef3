/**
 * Nexmark q0 — pass-through. Reads every bid and writes it out unchanged (minus channel and url):
 * the cost of the source, the records and the sink with no work in between.
 *
 *   SELECT auction, bidder, price, dateTime, extra FROM bid;
 *
 * DataStream: the bid stream of the source, one `map` projecting the columns.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q0.ts -p 2
 */
import { defineJob, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q0Result {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly dateTime: number;
  readonly extra: string;
}

/** Builds the query on `env`; the caller decides where the results go. */
export function q0(env: StreamExecutionEnvironment): DataStream<Q0Result> {
  return bidsOf(nexmarkEvents(env)).map(
    (b): Q0Result => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra }),
  );
}

export default defineJob("nexmark-q0", (env) => {
  q0(env).print();
});
