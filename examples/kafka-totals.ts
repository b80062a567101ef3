/**
 * Orders in from Kafka, per-customer totals per minute out to Kafka, exactly-once
 * (docs/connectors/kafka.md). Runs against any Kafka (or Redpanda) reachable at KAFKA_BOOTSTRAP:
 *
 *   docker run -d --name kafka -p 9092:9092 apache/kafka:3.9.0          # on your own machine
 *   docker exec kafka /opt/kafka/bin/kafka-topics.sh --bootstrap-server localhost:9092 --create --topic orders --partitions 4
 *   docker exec kafka /opt/kafka/bin/kafka-topics.sh --bootstrap-server localhost:9092 --create --topic totals --partitions 4
 *   KAFKA_BOOTSTRAP=localhost:9092 npx eddy run examples/kafka-totals.ts --checkpoint-dir /tmp/kafka-totals
 *   # after a kill: the same with --from-latest-checkpoint
 *
 * Orders are JSON `{ "customer": "c1", "amount": 12, "ts": 1700000000000 }` (any key); each
 * partition has its own watermark (the record's `ts`) and goes idle after 30 s without records.
 * Watermark alignment keeps the partitions within a minute of event time of each other (reading a
 * backlog, a partition that runs ahead waits instead of filling the windows' state). A
 * one-minute tumbling window per customer sums them; the result goes to `totals`, keyed by the
 * customer. A record that is not JSON goes to the dead letters with its topic, partition and offset.
 * Offsets are committed to the group `kafka-totals` when checkpoints complete (lag monitoring).
 * Bounded when EDDY_KAFKA_BOUNDED=1 (reads what the topic holds at the start, then ends).
 * The job checkpoints every 10 s (`eddy run --checkpoint-dir` says where; a run's own
 * `--checkpoint-interval` overrides it); the sink is exactly-once by write-ahead (the Confluent
 * client's mode): each checkpoint interval's totals are written in one transaction per subtask when
 * the checkpoint completes, so a reader of `totals` with isolation.level=read_committed sees each
 * total once, also after a kill and `--from-checkpoint`. Totals appear up to a checkpoint interval
 * after their window fires.
 * Not run by any test here: no Kafka broker can run on these machines; test/kafka-wire.test.ts
 * covers the same source and sink against librdkafka's mock.
 */
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy } from "eddy";
import { KafkaSink, KafkaSource } from "eddy-kafka";

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

export const MINUTE_MS = 60_000;

export function kafkaTotalsJob(bootstrapServers: string | undefined, bounded: boolean) {
  return defineJob("kafka-totals", (env) => {
    if (bootstrapServers === undefined || bootstrapServers === "") throw new Error("examples/kafka-totals.ts needs KAFKA_BOOTSTRAP, e.g. localhost:9092");
    env.enableCheckpointing(10_000);
    const orders = env
      .fromSource(
        KafkaSource.create<Order>({ bootstrapServers, topics: ["orders"], groupId: "kafka-totals", startingOffsets: { committed: "earliest" }, deserializer: "json", bounded }),
        WatermarkStrategy.forBoundedOutOfOrderness<Order>(5_000)
          .withTimestampAssigner((o) => o.ts)
          .withIdleness(30_000)
          .withWatermarkAlignment("orders", MINUTE_MS),
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
      .sinkTo(KafkaSink.create<MinuteTotal>({ bootstrapServers, topic: "totals", key: (t) => t.customer, serializer: "json", delivery: "exactly-once", transactionalIdPrefix: "kafka-totals" }), "totals");
  });
}

export default kafkaTotalsJob(process.env.KAFKA_BOOTSTRAP, process.env.EDDY_KAFKA_BOUNDED === "1");
