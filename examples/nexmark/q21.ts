/**
 * Nexmark q21 — add a channel id. Each bid with the id of the channel it came through: a fixed
 * number for the four big channels, otherwise the `channel_id` parameter of its URL; bids with
 * neither are dropped.
 *
 *   SELECT auction, bidder, price, channel,
 *     CASE WHEN lower(channel) = 'apple' THEN '0'
 *          WHEN lower(channel) = 'google' THEN '1'
 *          WHEN lower(channel) = 'facebook' THEN '2'
 *          WHEN lower(channel) = 'baidu' THEN '3'
 *          ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) END AS channel_id
 *   FROM bid
 *   WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null
 *      or lower(channel) in ('apple', 'google', 'facebook', 'baidu');
 *
 * DataStream: one `flatMap` (a map that may drop its record), chained to the source.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q21.ts -p 2
 */
import { defineJob, type DataStream, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q21Result {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly channel: string;
  readonly channelId: string;
}

const KNOWN_CHANNELS: Readonly<Record<string, string>> = { apple: "0", google: "1", facebook: "2", baidu: "3" };
const CHANNEL_ID = /(&|^)channel_id=([^&]*)/;

/** The channel's id, or undefined when it has none. */
export function channelId(channel: string, url: string): string | undefined {
  return KNOWN_CHANNELS[channel.toLowerCase()] ?? CHANNEL_ID.exec(url)?.[2];
}

export function q21(env: StreamExecutionEnvironment): DataStream<Q21Result> {
  return bidsOf(nexmarkEvents(env)).flatMap<Q21Result>((b, out) => {
    const id = channelId(b.channel, b.url);
    if (id !== undefined) out.collect({ auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, channelId: id });
  });
}

export default defineJob("nexmark-q21", (env) => {
  q21(env).print();
});
