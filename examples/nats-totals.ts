/**
 * Orders in from NATS JetStream, per-customer totals per minute out to NATS, exactly once within
 * the output stream's duplicate window (docs/connectors/nats.md).
 *
 * Needs a NATS server with JetStream (`nats-server -js`), given by EDDY_NATS_URL, the client
 * packages (`npm i @nats-io/jetstream @nats-io/transport-node`), and two streams:
 *
 *   nats stream add ORDERS --subjects 'orders.>' --defaults
 *   nats stream add TOTALS --subjects 'totals.>' --dupe-window 10m --defaults
 *   EDDY_NATS_URL=nats://localhost:4222 npx eddy run examples/nats-totals.ts
 *
 * Orders are JSON `{ "customer": "c1", "amount": 12, "ts": 1700000000000 }` on `orders.<region>`;
 * each region is a split (read in parallel, with its own watermark). A one-minute tumbling window
 * per customer sums them, and its result is published to `totals.<customer>`; a message that is not
 * JSON goes to the dead letters with its stream sequence. Bounded when EDDY_NATS_BOUNDED=1 (it
 * reads what the stream holds when it starts, then ends), otherwise it runs on.
 * (test/nats-connector.test.ts runs it against a real server and checks the totals.)
 */
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy } from "eddy";
import { NatsSink, NatsSource } from "eddy/nats";

export interface Order {
  readonly customer: string;
  readonly amount: number;
  readonly ts: number;
}

export interface MinuteTotal {
  readonly customer: string;
  readonly minute: number;
  readonly orders: number;
  readonly amount: number;
}

export const REGIONS = ["eu", "us"] as const;
export const MINUTE_MS = 60_000;

export function natsTotalsJob(url: string | undefined, bounded: boolean) {
  return defineJob("nats-totals", (env) => {
    if (url === undefined || url === "") throw new Error("examples/nats-totals.ts needs EDDY_NATS_URL, e.g. nats://localhost:4222");
    const connection = { servers: url };
    const orders = env
      .fromSource(
        NatsSource.json<Order>({ connection, stream: "ORDERS", subjects: REGIONS.map((r) => `orders.${r}`), bounded }),
        WatermarkStrategy.forBoundedOutOfOrderness<Order>(5_000)
          .withTimestampAssigner((o) => o.ts)
          .withIdleness(30_000),
        "orders",
      )
      .onError("dead-letter");
    orders.deadLetters().print();
    orders
      .map((o): MinuteTotal => ({ customer: o.customer, minute: Math.floor(o.ts / MINUTE_MS) * MINUTE_MS, orders: 1, amount: o.amount }))
      .keyBy((t) => t.customer)
      .window(TumblingEventTimeWindows.of(MINUTE_MS))
      .reduce((a, b) => ({ customer: a.customer, minute: a.minute, orders: a.orders + b.orders, amount: a.amount + b.amount }))
      .uid("minute-totals")
      .sinkTo(NatsSink.json<MinuteTotal>({ connection, subject: (t) => `totals.${t.customer}` }), "totals");
  });
}

export default natsTotalsJob(process.env.EDDY_NATS_URL, process.env.EDDY_NATS_BOUNDED === "1");
