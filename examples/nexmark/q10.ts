/**
 * Nexmark q10 — log to file system. Every bid is written to files partitioned by its date and its
 * hour-minute, as the nexmark suite's Flink SQL does with the filesystem connector:
 *
 *   CREATE TABLE fs_sink (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3),
 *     extra VARCHAR, dt STRING, hm STRING) PARTITIONED BY (dt, hm)
 *     WITH ('connector' = 'filesystem', 'format' = 'csv', ...);
 *   INSERT INTO fs_sink SELECT auction, bidder, price, dateTime, extra,
 *     DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm') FROM bid;
 *
 * DataStream: the bids into `FileSink.csv`, bucketed by the bid's event time into
 * `dt=<yyyy-MM-dd>/hm=<HH:mm>` (UTC), the partition columns in the path as in Hive and Flink, not
 * in the file. Part files become visible when a checkpoint completes (exactly once), or at the end
 * of a bounded run; a reader of the directory sees only committed files (hidden in-progress files
 * start with a dot). `dateTime` is written as Flink's TIMESTAMP(3) text, `yyyy-MM-dd HH:mm:ss.SSS`.
 *
 *   NEXMARK_EVENTS=100000 Q10_OUT=/tmp/q10 npx eddy run examples/nexmark/q10.ts -p 2 --checkpoint-interval 1000
 */
import { defineJob, FileSink, type DataStream, type Sink, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

/** One row of the file: the bid, with its time as TIMESTAMP(3) text. */
export interface Q10Row {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly dateTime: string;
  readonly extra: string;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

let lastSecond = Number.NaN;
let lastSecondText = "";

/**
 * `ms` as Flink prints a TIMESTAMP(3) in UTC: `2026-12-01 13:05:07.123`. Event time moves forward,
 * so the text up to the second is remembered from the last call; only the milliseconds change.
 */
export function timestamp3(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    const d = new Date(second * 1000);
    lastSecondText = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.`;
    lastSecond = second;
  }
  return lastSecondText + pad(ms - second * 1000, 3);
}

export function q10(env: StreamExecutionEnvironment): DataStream<Q10Row> {
  return bidsOf(nexmarkEvents(env)).map((b): Q10Row => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: timestamp3(b.dateTime), extra: b.extra }));
}

/** The filesystem sink of the query: CSV without a header, partitioned by dt and hm of the event time. */
export function q10Sink(dir: string): Sink<Q10Row> {
  return FileSink.csv<Q10Row>(dir, {
    columns: ["auction", "bidder", "price", "dateTime", "extra"],
    header: false,
    buckets: { by: "event-time", pattern: "dt={yyyy}-{MM}-{dd}/hm={HH}:{mm}", timeZone: "UTC" },
  });
}

export default defineJob("nexmark-q10", (env) => {
  q10(env).sinkTo(q10Sink(process.env.Q10_OUT ?? "./q10-out")).name("Sink: fs_sink");
});
