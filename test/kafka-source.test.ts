/**
 * KafkaSource in jobs, against the fake broker (eddy-kafka/testing):
 * - per-partition watermarks: one reader owning a partition far ahead in event time and one
 *   behind; no record is late and the windows equal the batch answer;
 * - idleness per partition: a partition that goes quiet does not hold back windows of the others;
 * - partition discovery: partitions added while the job runs are read without a restart;
 * - Kafka → keyed windows → Kafka (exactly-once), worker threads at parallelism 2, a worker exit
 *   or an exception at a random record, EDDY_KAFKA_ROUNDS rounds (2 here): what a read_committed
 *   reader sees of the output equals the failure-free run's, per key and window.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy, type Collector } from "eddy";
import { KafkaSource, type ProducerRecord } from "eddy-kafka";
import { fakeKafkaForThisFile, json, readCommitted } from "./kafka-fixtures.ts";
import { collectSink, runJob } from "eddy/testing";
import { kafkaPipelineJob, type Event } from "./jobs/kafka-pipeline.ts";
import { lateRecordsDropped, prng, punctuated, withEnv } from "./fixtures.ts";

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const dec = new TextDecoder();

const kafka = fakeKafkaForThisFile();


async function produce(records: readonly ProducerRecord[]): Promise<void> {
  const p = kafka.broker.client().producer({});
  for (let i = 0; i < records.length; i += 500) await p.send(records.slice(i, i + 500));
}

async function until(cond: () => boolean, what: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    assert.ok(Date.now() < deadline, `timed out waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Reading {
  readonly p: string;
  readonly ts: number;
}

const countWindows = (source: ReturnType<typeof KafkaSource.create<Reading>>, strategy: WatermarkStrategy<Reading>, windowMs: number) =>
  defineJob("kafka-windows", (env) => {
    env
      .fromSource(source, strategy, "readings")
      .keyBy((r) => r.p)
      .window(TumblingEventTimeWindows.of<Reading>(windowMs))
      .aggregate(
        { createAccumulator: () => 0, add: (_r: Reading, n: number) => n + 1, getResult: (n: number) => n, merge: (a: number, b: number) => a + b },
        (p: string, window, [count]: [number], out: Collector<string>) => out.collect(`${p}@${window.start}:${count}`),
      )
      .sinkTo(collectSink<string>("counts"));
  });

test("per-partition watermarks: one reader, a partition 10× ahead in event time and one behind; event time from the record timestamps; no record is late, the windows equal the batch answer", async () => {
  kafka.broker.createTopic("lagging", 2);
  const N = 3_000;
  const records: ProducerRecord[] = [];
  for (let i = 0; i < N; i++) records.push(json("lagging", 0, { p: "ahead", ts: 10 * i }, null, 10 * i), json("lagging", 1, { p: "behind", ts: i }, null, i));
  await produce(records);
  const source = KafkaSource.create<Reading>({ client: () => kafka.broker.client(), topics: ["lagging"], deserializer: "json", bounded: true });
  // A watermark after every record (the Kafka record's timestamp), so that the test does not depend on when periodic emission runs.
  const handle = runJob(countWindows(source, punctuated<Reading>(0), 100), { mode: "inline", parallelism: 1, logger: silent });
  await handle.done;
  const oracle = new Map<string, number>();
  for (let i = 0; i < N; i++) for (const [p, ts] of [["ahead", 10 * i], ["behind", i]] as const) oracle.set(`${p}@${Math.floor(ts / 100) * 100}`, (oracle.get(`${p}@${Math.floor(ts / 100) * 100}`) ?? 0) + 1);
  assert.equal(lateRecordsDropped(handle.metrics()), 0, "no record is late");
  assert.deepEqual(handle.collected<string>("counts").sort(), [...oracle].map(([k, n]) => `${k}:${n}`).sort());
});

test("idleness per partition: a quiet partition does not hold back the windows of a busy one", async () => {
  kafka.broker.createTopic("quiet", 2);
  // Partition 1 has one early record, then nothing; partition 0 keeps moving on in event time
  // (records keep coming: a partition with nothing new goes idle too, and all idle advances nothing).
  await produce([json("quiet", 1, { p: "quiet", ts: 0 })]);
  let publishing = true;
  const trickle = (async () => {
    for (let i = 0; publishing; i++) {
      await produce([json("quiet", 0, { p: "busy", ts: i * 100 })]);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const source = KafkaSource.create<Reading>({ client: () => kafka.broker.client(), topics: ["quiet"], deserializer: "json", fetchMaxWaitMs: 50 });
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Reading>(0).withTimestampAssigner((r) => r.ts).withIdleness(200);
  const run = runJob(countWindows(source, strategy, 1_000), { mode: "inline", parallelism: 1, logger: silent });
  const ended = run.done.catch(() => {});
  try {
    // busy's windows [0, 1s) … [3s, 4s) close once the quiet partition is idle.
    await until(() => run.collected<string>("counts").filter((c) => c.startsWith("busy")).length >= 4, () => JSON.stringify(run.collected("counts")));
    assert.deepEqual(run.collected<string>("counts").filter((c) => c.startsWith("busy")).sort().slice(0, 4), ["busy@0:10", "busy@1000:10", "busy@2000:10", "busy@3000:10"]);
  } finally {
    publishing = false;
    await trickle;
    run.cancel();
    await ended;
  }
});

test("partition discovery: partitions added while the job runs are read, from their first record, without a restart", async () => {
  kafka.broker.createTopic("growing", 1);
  await produce([json("growing", 0, { p: "p0", ts: 1 })]);
  const job = defineJob("kafka-discovery", (env) => {
    env
      .fromSource(KafkaSource.create<Reading>({ client: () => kafka.broker.client(), topics: ["growing"], deserializer: "json", startingOffsets: "earliest", partitionDiscoveryIntervalMs: 50, fetchMaxWaitMs: 20 }), WatermarkStrategy.noWatermarks<Reading>(), "growing")
      .map((r) => r.p)
      .sinkTo(collectSink<string>("seen"));
  });
  const run = runJob(job, { mode: "inline", parallelism: 1, logger: silent });
  const ended = run.done.catch(() => {});
  try {
    await until(() => run.collected("seen").length === 1, () => JSON.stringify(run.collected("seen")));
    kafka.broker.createTopic("growing", 3);
    await produce([json("growing", 1, { p: "p1", ts: 2 }), json("growing", 2, { p: "p2", ts: 3 })]);
    await until(() => run.collected("seen").length === 3, () => JSON.stringify(run.collected("seen")));
    assert.deepEqual(run.collected<string>("seen").sort(), ["p0", "p1", "p2"]);
  } finally {
    run.cancel();
    await ended;
  }
});

const KEYS = 20;
const EVENTS = 8_000;
const IN_PARTITIONS = 4;
const ROUNDS = Number(process.env.EDDY_KAFKA_ROUNDS ?? 2);

async function pipeline(input: string, output: string, options: Parameters<typeof runJob>[1], fault?: object): Promise<void> {
  kafka.broker.createTopic(output, 3);
  const hold = options?.mode === "threads" ? join(tmpdir(), "eddy-kafka-never-released") : "";
  await withEnv({ EDDY_KAFKA_URL: kafka.url, EDDY_KAFKA_IN: input, EDDY_KAFKA_OUT: output, EDDY_KAFKA_HOLD: hold, EDDY_KAFKA_FAULT: fault === undefined ? "" : JSON.stringify(fault) }, async () => {
    await runJob(kafkaPipelineJob, { logger: silent, ...options }).done;
  });
}

async function committedOutput(topic: string): Promise<string[]> {
  return (await readCommitted(kafka.broker, topic, (x) => dec.decode(x.value!))).flat().sort();
}

test(`Kafka → keyed windows → Kafka, exactly-once, worker threads at parallelism 2, a worker exit or an exception at a random record, ${ROUNDS} rounds: read_committed output equals the failure-free run's`, async () => {
  const input = "events";
  kafka.broker.createTopic(input, IN_PARTITIONS);
  // Events in event-time order per partition; keys spread over partitions by the key's hash.
  const events: ProducerRecord[] = [];
  for (let n = 1; n <= EVENTS; n++) {
    const e: Event = { n, key: `k${n % KEYS}`, ts: n * 5 };
    events.push(json(input, n % IN_PARTITIONS, e, e.key));
  }
  await produce(events);
  await pipeline(input, "windows-baseline", { mode: "inline", parallelism: 1, checkpointing: false });
  const want = await committedOutput("windows-baseline");
  assert.equal(want.reduce((s, w) => s + Number(w.split(":")[1]), 0), EVENTS, "the failure-free run counted every event once");
  const dir = mkdtempSync(join(tmpdir(), "eddy-kafka-pipeline-"));
  try {
    const seed = Number(process.env.EDDY_KAFKA_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    for (let round = 0; round < ROUNDS; round++) {
      const output = `windows-${seed}-${round}`;
      const fault = { kind: round % 2 === 0 ? "exit" : "process", atRecord: 1 + Math.floor(random() * EVENTS * 0.95), marker: join(dir, `fault-${round}`) };
      await pipeline(input, output, { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 20 }, checkpointDir: join(dir, "checkpoints"), jobId: output, restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 } }, fault);
      assert.deepEqual(await committedOutput(output), want, `seed ${seed}, round ${round}, ${fault.kind} at ${fault.atRecord}`);
      assert.deepEqual(kafka.broker.openTransactions(), [], `seed ${seed}, round ${round}: no transaction left open`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
