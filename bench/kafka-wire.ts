/**
 * KafkaSource and KafkaSink (at-least-once, exactly-once) over the Confluent client against librdkafka's mock
 * cluster (test/kafka-mock.ts), each against the bare client doing the same work in the same run
 * (issue 26, "Measured": the connector should cost at most 30 % over the bare client):
 *
 * - bare consumer: @confluentinc/kafka-javascript's KafkaConsumer, `assign` of the 4 partitions at
 *   offset 0, `consume(2000)` in a loop until every record is read, JSON.parse of each value;
 * - eddy KafkaSource: KafkaSource.create({ bootstrapServers, deserializer: "json", bounded: true })
 *   → a counting sink, inline, parallelism 1, checkpoints every 1 s;
 * - bare producer: Producer (acks=all, idempotent, linger 5 ms, delivery reports), JSON.stringify
 *   and `produce` of each record (partition by murmur2 of the key), until every report is in;
 * - eddy KafkaSink at-least-once: fromSequence → the same records → KafkaSink({ bootstrapServers,
 *   key, serializer: "json" }), inline, parallelism 1, checkpoints every 1 s (each waits for acks);
 * - eddy KafkaSink exactly-once: the same with delivery "exactly-once" (write-ahead, the Confluent
 *   client's mode: each checkpoint interval's records written in one transaction with the marker
 *   when the checkpoint completes; the mock accepts the transactional calls without isolating).
 *
 * Sources are reported twice: over the whole run (connecting, metadata, offsets included) and from
 * the first record to the last (the steady state a long-running job sees; Eddy's start — the
 * enumerator's metadata and offset queries, then the reader's own consumer — costs a few hundred
 * milliseconds that a 100,000-record run does not amortize).
 *
 * Run: node -C eddy-source --import tsx bench/kafka-wire.ts [records=100000] [rounds=3]
 * (EDDY_BENCH_VARIANTS="eddy KafkaSource,bare consumer": only those, e.g. under a profiler;
 * EDDY_BENCH_CHECKPOINT_MS: the jobs' checkpoint interval, 1000 by default.)
 * More than ~200,000 records: the mock drops the oldest records of a partition past about 70,000.
 */
import { createRequire } from "node:module";
import { defineJob, WatermarkStrategy, type Sink } from "eddy";
import { confluentKafkaClient, KafkaSink, KafkaSource, partitionForKey } from "eddy-kafka";
import { runJob } from "eddy/testing";
import { startKafkaMock } from "../test/kafka-mock.ts";
import { median } from "./stats.ts";

const RECORDS = Number(process.argv[2] ?? 100_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const PARTITIONS = 4;
/** The Eddy jobs' checkpoint interval (EDDY_BENCH_CHECKPOINT_MS; 1 s by default). Write-ahead writes an interval's records once its checkpoint completes. */
const CHECKPOINT_MS = Number(process.env.EDDY_BENCH_CHECKPOINT_MS ?? 1_000);
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
/* eslint-disable @typescript-eslint/no-explicit-any */
const K: any = createRequire(import.meta.resolve("eddy-kafka/package.json"))("@confluentinc/kafka-javascript");
const cb = <T>(fn: (done: (e: unknown, v: T) => void) => void): Promise<T> => new Promise((res, rej) => fn((e, v) => (e ? rej(e) : res(v))));

interface Event {
  readonly id: number;
  readonly user: string;
  readonly amount: number;
}
const eventOf = (id: number): Event => ({ id, user: `user-${id % 1000}`, amount: (id % 9973) / 7 });

const topics: Record<string, number> = { source: PARTITIONS };
for (let i = 0; i < ROUNDS * 3; i++) topics[`sink-${i}`] = PARTITIONS;
const mock = await startKafkaMock(topics);
const bootstrap = mock.bootstrap;

async function bareProduce(topic: string): Promise<void> {
  const p = new K.Producer({ "bootstrap.servers": bootstrap, dr_cb: true, "linger.ms": 5, acks: "all", "enable.idempotence": true, "queue.buffering.max.messages": 1_000_000 });
  await cb((d) => p.connect({}, d));
  p.setPollInterval(5);
  let delivered = 0;
  let failed: unknown;
  p.on("delivery-report", (e: unknown) => (e ? (failed = e) : delivered++));
  for (let id = 0; id < RECORDS; id++) {
    const e = eventOf(id);
    const key = Buffer.from(e.user);
    for (;;) {
      try {
        p.produce(topic, partitionForKey(key, PARTITIONS), Buffer.from(JSON.stringify(e)), key, id);
        break;
      } catch {
        p.poll();
        await new Promise((r) => setTimeout(r, 1));
      }
    }
  }
  while (delivered < RECORDS && failed === undefined) await new Promise((r) => setTimeout(r, 1));
  if (failed !== undefined) throw failed;
  await cb((d) => p.disconnect(d));
}

/** When the current source variant saw its first record (performance.now()). */
let firstRecordAt = 0;

async function bareConsume(): Promise<void> {
  const c = new K.KafkaConsumer({ "bootstrap.servers": bootstrap, "group.id": `bench-${Date.now()}`, "enable.auto.commit": false, "isolation.level": "read_committed" }, {});
  await cb((d) => c.connect({}, d));
  c.setDefaultConsumeTimeout(500);
  c.setDefaultIsTimeoutOnlyForFirstMessage(true);
  c.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: "source", partition, offset: 0 })));
  let n = 0;
  let sum = 0;
  while (n < RECORDS) {
    const batch = await cb<any[]>((d) => c.consume(2000, d));
    if (n === 0 && batch.length > 0) firstRecordAt = performance.now();
    for (const m of batch) {
      sum += (JSON.parse(m.value.toString()) as Event).amount;
      n++;
    }
  }
  if (Number.isNaN(sum)) throw new Error("sum");
  await cb((d) => c.disconnect(d));
}

let counted = 0;
const counting: Sink<Event> = { createWriter: () => ({ write: () => void (counted++ === 0 && (firstRecordAt = performance.now())) }) };
async function eddySource(): Promise<void> {
  counted = 0;
  await runJob(
    defineJob("bench-kafka-wire-source", (env) => {
      env.fromSource(KafkaSource.create<Event>({ bootstrapServers: bootstrap, topics: ["source"], deserializer: "json", bounded: true, maxRecordsPerFetch: 2000 }), WatermarkStrategy.noWatermarks(), "source").sinkTo(counting);
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: CHECKPOINT_MS }, logger: quiet },
  ).done;
  if (counted !== RECORDS) throw new Error(`eddy KafkaSource: ${counted} records`);
}

async function eddySink(topic: string, exactlyOnce = false): Promise<void> {
  await runJob(
    defineJob("bench-kafka-wire-sink", (env) => {
      env
        .fromSequence(0, RECORDS - 1)
        .map(eventOf)
        .sinkTo(
          KafkaSink.create<Event>(
            exactlyOnce
              ? { bootstrapServers: bootstrap, topic, key: (e) => e.user, serializer: "json", delivery: "exactly-once", transactionalIdPrefix: `bench-${topic}` }
              : { bootstrapServers: bootstrap, topic, key: (e) => e.user, serializer: "json", delivery: "at-least-once" },
          ),
        );
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: CHECKPOINT_MS }, logger: quiet },
  ).done;
}

const client = confluentKafkaClient({ bootstrapServers: bootstrap });
async function written(topic: string): Promise<number> {
  const ends = await client.listOffsets(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition })), "latest", "read_committed");
  return ends.reduce((a, b) => a + b, 0);
}

type Variant = "bare consumer" | "eddy KafkaSource" | "bare producer" | "eddy KafkaSink at-least-once" | "eddy KafkaSink exactly-once";
const ALL: Record<Variant, { run: (topic: string) => Promise<void>; sink: boolean; baseline: Variant }> = {
  "bare producer": { run: bareProduce, sink: true, baseline: "bare producer" },
  "eddy KafkaSink at-least-once": { run: eddySink, sink: true, baseline: "bare producer" },
  "eddy KafkaSink exactly-once": { run: (topic) => eddySink(topic, true), sink: true, baseline: "bare producer" },
  "bare consumer": { run: bareConsume, sink: false, baseline: "bare consumer" },
  "eddy KafkaSource": { run: eddySource, sink: false, baseline: "bare consumer" },
};
const only = process.env.EDDY_BENCH_VARIANTS?.split(",");
const VARIANTS = Object.fromEntries(Object.entries(ALL).filter(([v]) => only === undefined || only.includes(v))) as Partial<typeof ALL>;

try {
  await bareProduce("source");
  const results = new Map<Variant, number[]>();
  const steady = new Map<Variant, number[]>();
  let sinkTopic = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [variant, { run, sink }] of Object.entries(VARIANTS) as [Variant, (typeof ALL)[Variant]][]) {
      const topic = sink ? `sink-${sinkTopic++}` : "source";
      firstRecordAt = 0;
      const start = performance.now();
      await run(topic);
      const end = performance.now();
      const ms = end - start;
      if (!sink) steady.set(variant, [...(steady.get(variant) ?? []), RECORDS / ((end - firstRecordAt) / 1000)]);
      if (sink && (await written(topic)) !== RECORDS) throw new Error(`${variant}: ${await written(topic)} records written, not ${RECORDS}`);
      results.set(variant, [...(results.get(variant) ?? []), RECORDS / (ms / 1000)]);
    }
  }
  console.log(`${RECORDS.toLocaleString("en-US")} records (JSON, ~60 bytes), checkpoints every ${CHECKPOINT_MS} ms, ${PARTITIONS} partitions, librdkafka's mock cluster (loopback), @confluentinc/kafka-javascript ${K.librdkafkaVersion ? `(librdkafka ${K.librdkafkaVersion})` : ""}, median of ${ROUNDS} rounds`);
  const rec = (n: number): string => `${Math.round(n).toLocaleString("en-US").padStart(10)} rec/s`;
  for (const [variant, { baseline, sink }] of Object.entries(VARIANTS) as [Variant, (typeof ALL)[Variant]][]) {
    const rate = median(results.get(variant)!);
    const base = results.has(baseline) ? median(results.get(baseline)!) : Number.NaN;
    let line = `${variant.padEnd(30)} ${rec(rate)}  ${Math.round((rate / base) * 100)} % of ${baseline}`;
    if (!sink) {
      const s = median(steady.get(variant)!);
      const b = steady.has(baseline) ? median(steady.get(baseline)!) : Number.NaN;
      line += `;  first record to last: ${rec(s)}  ${Math.round((s / b) * 100)} %`;
    }
    console.log(line);
  }
} finally {
  await client.close();
  await mock.stop();
}
process.exit(0);
