/**
 * Nexmark q22 — get URL directories. Each bid with the first three path segments of its URL.
 *
 *   SELECT auction, bidder, price, channel,
 *     SPLIT_INDEX(url, '/', 3) as dir1,
 *     SPLIT_INDEX(url, '/', 4) as dir2,
 *     SPLIT_INDEX(url, '/', 5) as dir3 FROM bid;
 *
 * DataStream: one `map`. SPLIT_INDEX counts from 0 and gives NULL past the last part, like
 * `split("/")[i] ?? null` ("https:", "", "www.nexmark.com", dir1, dir2, dir3, ...).
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q22.ts -p 2
 */
import { defineJob, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q22Result {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly channel: string;
  readonly dir1: string | null;
  readonly dir2: string | null;
  readonly dir3: string | null;
}

export function q22(env: StreamExecutionEnvironment): DataStream<Q22Result> {
  return bidsOf(nexmarkEvents(env)).map((b): Q22Result => {
    const parts = b.url.split("/");
    return { auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, dir1: parts[3] ?? null, dir2: parts[4] ?? null, dir3: parts[5] ?? null };
  });
}

export default defineJob("nexmark-q22", (env) => {
  q22(env).print();
});
