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
 * - EDDY_KAFKA_COMMITTED: a file the sink creates when it first commits (a checkpoint completed);
 *   when set, the job runs slowly (1 ms per record) until that file exists, and the fault fires at
 *   the first record from atRecord on once it exists: the job fails after a checkpoint, however
 *   slow the machine;
 * - EDDY_KAFKA_AFTER_CHECKPOINT: instead, the job's checkpoint directory: the same with "a
 *   checkpoint completed there" for "the sink committed" (a write-ahead commit, six round trips
 *   from a task thread that busy, may come only after the end of input); EDDY_KAFKA_SLOW_EVERY:
 *   sleep 1 ms every that many records instead of every record (shorter source polls: a task
 *   thread yields to its event loop between polls, and every I/O step of a checkpoint waits one).
 */
import { defineJob, WatermarkStrategy } from "eddy";
import { KafkaSink, type DeliveryGuarantee } from "eddy-kafka";
import { remoteFakeKafkaClient } from "eddy-kafka/testing";
import { existsSync } from "node:fs";
import { latestCheckpoint } from "./checkpointed.ts";
import { faultyIdentity, fireOnce, markingFirstCommit, recordFaultFrom, type RecordFault } from "./fault-markers.ts";

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
  const committed = process.env.EDDY_KAFKA_COMMITTED || undefined;
  const checkpoints = process.env.EDDY_KAFKA_AFTER_CHECKPOINT || undefined;
  const ready = committed !== undefined ? () => existsSync(committed) : checkpoints !== undefined ? () => latestCheckpoint(checkpoints) !== undefined : undefined;
  const late = fault !== undefined && ready !== undefined ? faultWhen(fault, ready) : undefined;
  // With EDDY_KAFKA_COMMITTED (or _AFTER_CHECKPOINT) the job runs slowly (1 ms per record) until
  // the sink's first commit (a completed checkpoint), so records are left to fail at however slow
  // the machine; otherwise per EDDY_KAFKA_HOLD.
  let released = false;
  const slowEvery = Number(process.env.EDDY_KAFKA_SLOW_EVERY || 1);
  const slow = ready !== undefined ? (n: number) => (released ||= n % 50 === 0 && ready(), released || n % slowEvery !== 0 || Atomics.wait(sleeper, 0, 0, 1), n) : faultyIdentity(fault, process.env.EDDY_KAFKA_HOLD || undefined, 5);
  env
    .fromSequence(1, events)
    .map((n) => (late?.(n), slow(n)))
    .assignTimestampsAndWatermarks(timestamps)
    .sinkTo(
      markingFirstCommit(KafkaSink.create<number>({
        client: () => remoteFakeKafkaClient(url),
        topic,
        serializer: (n) => String(n),
        key: (n) => `k${n % KEYS}`,
        delivery,
        exactlyOnceMode: (process.env.EDDY_KAFKA_EO_MODE || "two-phase") as "two-phase" | "write-ahead",
        transactionalIdPrefix: process.env.EDDY_KAFKA_PREFIX || `eddy-test-${topic}`,
        maxBatchSize: 200,
        lingerMs: 2,
      }), committed),
      "kafka-out",
    );
});

export default kafkaSinkJob;
