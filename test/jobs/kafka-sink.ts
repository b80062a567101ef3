/**
 * The job of the KafkaSink kill-and-compare tests (test/kafka-sink.test.ts), set by the
 * environment (read when each thread builds the job):
 * - EDDY_KAFKA_URL: the fake broker served over HTTP (eddy-kafka/testing); EDDY_KAFKA_TOPIC: the topic;
 * - EDDY_KAFKA_EVENTS: the events 1..n, written as value `n`, key `k<n % 50>`, timestamp 1000 + n;
 * - EDDY_KAFKA_DELIVERY: the sink's delivery guarantee;
 * - EDDY_KAFKA_HOLD: a file; until it exists the job runs slowly (1 ms per 5 records), so that
 *   checkpoints complete while records flow (a path that never exists: slow throughout);
 * - EDDY_KAFKA_FAULT: `{ kind: "exit" | "process", atRecord, marker }`, fired once per marker file.
 */
import { defineJob, WatermarkStrategy } from "eddy";
import { KafkaSink, type DeliveryGuarantee } from "eddy-kafka";
import { remoteFakeKafkaClient } from "eddy-kafka/testing";
import { faultyIdentity, recordFaultFrom } from "./fault-markers.ts";

export const KEYS = 50;

const timestamps = WatermarkStrategy.noWatermarks<number>().withTimestampAssigner((n) => 1000 + n);

export const kafkaSinkJob = defineJob("kafka-sink", (env) => {
  const fault = recordFaultFrom(process.env.EDDY_KAFKA_FAULT);
  const events = Number(process.env.EDDY_KAFKA_EVENTS ?? 20_000);
  const url = process.env.EDDY_KAFKA_URL ?? "";
  const topic = process.env.EDDY_KAFKA_TOPIC ?? "out";
  const delivery = (process.env.EDDY_KAFKA_DELIVERY ?? "exactly-once") as DeliveryGuarantee;
  env
    .fromSequence(1, events)
    .map(faultyIdentity(fault, process.env.EDDY_KAFKA_HOLD || undefined, 5))
    .assignTimestampsAndWatermarks(timestamps)
    .sinkTo(
      KafkaSink.create<number>({
        client: () => remoteFakeKafkaClient(url),
        topic,
        serializer: (n) => String(n),
        key: (n) => `k${n % KEYS}`,
        delivery,
        transactionalIdPrefix: `eddy-test-${topic}`,
        maxBatchSize: 200,
        lingerMs: 2,
      }),
      "kafka-out",
    );
});

export default kafkaSinkJob;
