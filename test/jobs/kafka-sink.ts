/**
 * The job of the KafkaSink kill-and-compare tests (test/kafka-sink.test.ts), set by the
 * environment (read when each thread builds the job):
 * - EDDY_KAFKA_URL: the fake broker served over HTTP (eddy-kafka/testing); EDDY_KAFKA_TOPIC: the topic;
 *   EDDY_KAFKA_PREFIX: the transactionalIdPrefix (default `eddy-test-<topic>`);
 * - EDDY_KAFKA_EVENTS: the events 1..n, written as value `n`, key `k<n % 50>`, timestamp 1000 + n;
 * - EDDY_KAFKA_DELIVERY: the sink's delivery guarantee;
 * - EDDY_KAFKA_EO_MODE: exactly-once's mode ("two-phase", the default with a `client`, or "write-ahead");
 * - EDDY_KAFKA_HOLD: a file; until it exists the job runs slowly (1 ms per 5 records), so that
 *   checkpoints complete while records flow (a path that never exists: slow throughout);
 * - EDDY_KAFKA_FAULT: `{ kind: "exit" | "process", atRecord, marker }`, fired once per marker file;
 * - EDDY_KAFKA_AFTER_CHECKPOINT: the job's checkpoint directory; when set, the job runs slowly
 *   (1 ms every EDDY_KAFKA_SLOW_EVERY records) until a checkpoint completed there, and the fault
 *   fires at the first record from atRecord on after that: the job fails after a checkpoint (as
 *   long as the input outlasts the slow phase: a task thread yields to its event loop between
 *   source polls, and every I/O step of a checkpoint waits for one, so sleeping less per record
 *   makes checkpoints complete sooner). Waiting for the sink's first commit instead (a
 *   marker file) was dropped: a commit six round trips long, from a thread that busy, came after
 *   the end of the input under CI's load.
 */
import { defineJob, WatermarkStrategy } from "eddy";
import { KafkaSink, type DeliveryGuarantee } from "eddy-kafka";
import { remoteFakeKafkaClient } from "eddy-kafka/testing";
import { latestCheckpoint } from "./checkpointed.ts";
import { faultyIdentity, fireOnce, recordFaultFrom, type RecordFault } from "./fault-markers.ts";

export const KEYS = 50;

const sleeper = new Int32Array(new SharedArrayBuffer(4));

const timestamps = WatermarkStrategy.noWatermarks<number>().withTimestampAssigner((n) => 1000 + n);

/** The fault at the first record from `fault.atRecord` on once `ready()` (checked every 50 records). */
function faultWhen(fault: RecordFault, ready: () => boolean): (n: number) => void {
  let armed = false;
  return (n) => {
    if (n < fault.atRecord || !(armed ||= n % 50 === 0 && ready()) || !fireOnce(fault.marker)) return;
    if (fault.kind === "exit") process.exit(3);
    throw new Error(`injected fault at record ${n}`);
  };
}

export const kafkaSinkJob = defineJob("kafka-sink", (env) => {
  const fault = recordFaultFrom(process.env.EDDY_KAFKA_FAULT);
  const events = Number(process.env.EDDY_KAFKA_EVENTS ?? 20_000);
  const url = process.env.EDDY_KAFKA_URL ?? "";
  const topic = process.env.EDDY_KAFKA_TOPIC ?? "out";
  const delivery = (process.env.EDDY_KAFKA_DELIVERY ?? "exactly-once") as DeliveryGuarantee;
  const checkpoints = process.env.EDDY_KAFKA_AFTER_CHECKPOINT || undefined;
  const ready = checkpoints !== undefined ? () => latestCheckpoint(checkpoints) !== undefined : undefined;
  const late = fault !== undefined && ready !== undefined ? faultWhen(fault, ready) : undefined;
  // With EDDY_KAFKA_AFTER_CHECKPOINT the job runs slowly until a checkpoint completed; otherwise per EDDY_KAFKA_HOLD.
  let released = false;
  const slowEvery = Number(process.env.EDDY_KAFKA_SLOW_EVERY || 1);
  const slow = ready !== undefined ? (n: number) => (released ||= n % 50 === 0 && ready(), released || n % slowEvery !== 0 || Atomics.wait(sleeper, 0, 0, 1), n) : faultyIdentity(fault, process.env.EDDY_KAFKA_HOLD || undefined, 5);
  env
    .fromSequence(1, events)
    .map((n) => (late?.(n), slow(n)))
    .assignTimestampsAndWatermarks(timestamps)
    .sinkTo(
      KafkaSink.create<number>({
        client: () => remoteFakeKafkaClient(url),
        topic,
        serializer: (n) => String(n),
        key: (n) => `k${n % KEYS}`,
        delivery,
        exactlyOnceMode: (process.env.EDDY_KAFKA_EO_MODE || "two-phase") as "two-phase" | "write-ahead",
        transactionalIdPrefix: process.env.EDDY_KAFKA_PREFIX || `eddy-test-${topic}`,
        maxBatchSize: 200,
        lingerMs: 2,
      }),
      "kafka-out",
    );
});

export default kafkaSinkJob;
