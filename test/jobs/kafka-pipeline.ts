/**
 * The job of the Kafka → keyed windows → Kafka kill-and-compare test (test/kafka-source.test.ts),
 * set by the environment (read when each thread builds the job):
 * - EDDY_KAFKA_URL: the fake broker served over HTTP; EDDY_KAFKA_IN / EDDY_KAFKA_OUT: the topics;
 * - EDDY_KAFKA_BOOTSTRAP: instead of the fake, a Kafka cluster (librdkafka's mock in
 *   test/kafka-wire.test.ts) through the Confluent client, with an at-least-once sink, or with
 *   EDDY_KAFKA_DELIVERY=exactly-once an exactly-once one (write-ahead, the Confluent client's mode);
 * - EDDY_KAFKA_HOLD: until this file exists the job runs slowly (1 ms per 5 records);
 * - EDDY_KAFKA_FAULT: `{ kind: "exit" | "process", atRecord, marker }`, fired once per marker file
 *   at the event whose `n` is atRecord;
 * - EDDY_KAFKA_REGISTRY: a schema registry (test/kafka-schema-registry.test.ts): events are Avro
 *   records read through it (asynchronous deserialization; every 100th record also waits 1 ms, so
 *   that barriers arrive while batches await), and the output is Avro strings written through it
 *   (its subject `<out>-value` registered beforehand).
 * Input: JSON events `{ n, key, ts }` (a bounded KafkaSource, read_committed); output: per key and
 * 1-second event-time window, `key@start:count:sum` (exactly-once KafkaSink, keyed by `key`).
 */
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy, type Collector } from "eddy";
import { KafkaSink, KafkaSource, schemaRegistry, type ConsumerRecord } from "eddy-kafka";
import { remoteFakeKafkaClient } from "eddy-kafka/testing";
import { faultyIdentity, recordFaultFrom } from "./fault-markers.ts";

export interface Event {
  readonly n: number;
  readonly key: string;
  readonly ts: number;
}

export const kafkaPipelineJob = defineJob("kafka-pipeline", (env) => {
  const url = process.env.EDDY_KAFKA_URL ?? "";
  const bootstrap = process.env.EDDY_KAFKA_BOOTSTRAP ?? "";
  // The real client (wire tests): at-least-once unless EDDY_KAFKA_DELIVERY says exactly-once (write-ahead).
  const realExactlyOnce = bootstrap !== "" && process.env.EDDY_KAFKA_DELIVERY === "exactly-once";
  const connection = bootstrap !== "" ? { bootstrapServers: bootstrap } : { client: () => remoteFakeKafkaClient(url) };
  const fault = faultyIdentity(recordFaultFrom(process.env.EDDY_KAFKA_FAULT), process.env.EDDY_KAFKA_HOLD || undefined, 5);
  const output = process.env.EDDY_KAFKA_OUT ?? "out";
  const registry = process.env.EDDY_KAFKA_REGISTRY ?? "";
  const avroEvents = registry === "" ? undefined : schemaRegistry.avro<Event>({ url: registry });
  const deserializer = avroEvents === undefined ? ("json" as const) : async (r: ConsumerRecord) => {
    if (r.offset % 100 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    return avroEvents.deserialize(r);
  };
  const serializer = registry === "" ? ("string" as const) : schemaRegistry.avro<string>({ url: registry, schema: '"string"' });
  env
    .fromSource(
      KafkaSource.create<Event>({ ...connection, topics: [process.env.EDDY_KAFKA_IN ?? "in"], deserializer, bounded: true, fetchMaxWaitMs: 50, maxRecordsPerFetch: 50 }),
      WatermarkStrategy.forBoundedOutOfOrderness<Event>(0).withTimestampAssigner((e) => e.ts),
      "events",
    )
    .map((e) => (fault(e.n), e))
    .keyBy((e) => e.key)
    .window(TumblingEventTimeWindows.of<Event>(1_000))
    .aggregate(
      { createAccumulator: () => ({ count: 0, sum: 0 }), add: (e: Event, a: { count: number; sum: number }) => ({ count: a.count + 1, sum: a.sum + e.n }), getResult: (a: { count: number; sum: number }) => a, merge: (a, b) => ({ count: a.count + b.count, sum: a.sum + b.sum }) },
      (key: string, window, [a]: [{ count: number; sum: number }], out: Collector<string>) => out.collect(`${key}@${window.start}:${a.count}:${a.sum}`),
    )
    .uid("windows")
    .sinkTo(KafkaSink.create<string>({ ...connection, topic: output, serializer, key: (s) => s.slice(0, s.indexOf("@")), ...(bootstrap !== "" && !realExactlyOnce ? { delivery: "at-least-once" } : { delivery: "exactly-once", transactionalIdPrefix: `eddy-test-${output}` }), lingerMs: 2 }), "windows-out");
});

export default kafkaPipelineJob;
