/**
 * KafkaSource and KafkaSink throughput against eddy-kafka's in-memory fake broker, each against a
 * bare loop over the same client in the same run (issue 26, "Measured", as far as it can be
 * measured without a real client): with the fake in the same thread, the client costs almost
 * nothing, so the ratios are the connector's and Eddy's runtime's own cost — what remains to be
 * added to a real client's. Not the figure (connector over the real client from the mock):
 * no adapter exists yet.
 *
 * - bare fetch loop: `client.fetch` of the 4 partitions (500 records each per fetch,
 *   read_committed) until their end, JSON.parse of each value;
 * - eddy KafkaSource: KafkaSource.create({ deserializer: "json", bounded: true }) → a counting
 *   sink, inline, parallelism 1, checkpoints every 1 s;
 * - bare send loop: JSON.stringify of each record, `producer.send` of 500 at a time (partition by
 *   murmur2 of the key), awaiting each;
 * - eddy KafkaSink at-least-once / exactly-once: fromSequence → the same records → KafkaSink
 *   (key, json), inline, parallelism 1, checkpoints every 1 s;
 * - asynchronous serdes (the reader's and writer's promise path): the source with
 *   `async (r) => JSON.parse(...)`; Avro through a schema registry (`schemaRegistry.avro` over
 *   @confluentinc/schemaregistry's MockClient, in process: the serde's own cost, no HTTP) for the
 *   source (the same events, Avro-encoded in a second topic) and the at-least-once sink.
 *
 * Run: node -C eddy-source --import tsx bench/kafka.ts [records=200000] [rounds=3] [variants=regex]
 * (variants: only those whose name matches, with their baselines).
 */
import { loadavg } from "node:os";
import { defineJob, WatermarkStrategy, type Sink } from "eddy";
import { MockClient } from "@confluentinc/schemaregistry";
import { KafkaSink, KafkaSource, partitionForKey, schemaRegistry, type DeliveryGuarantee, type KafkaDeserializer, type KafkaValueSerializer, type ProducerRecord } from "eddy-kafka";
import { FakeKafkaBroker } from "eddy-kafka/testing";
import { runJob } from "eddy/testing";
import { median } from "./stats.ts";

const RECORDS = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const ONLY = new RegExp(process.argv[4] ?? "");
const PARTITIONS = 4;
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const enc = new TextEncoder();
const dec = new TextDecoder();

interface Event {
  readonly id: number;
  readonly user: string;
  readonly amount: number;
}
const eventOf = (id: number): Event => ({ id, user: `user-${id % 1000}`, amount: (id % 9973) / 7 });

const broker = new FakeKafkaBroker();
const client = broker.client();
broker.createTopic("source", PARTITIONS);
{
  const p = client.producer({});
  for (let i = 0; i < RECORDS; i += 500) {
    const batch: ProducerRecord[] = [];
    for (let id = i; id < Math.min(RECORDS, i + 500); id++) batch.push({ topic: "source", partition: id % PARTITIONS, key: null, value: enc.encode(JSON.stringify(eventOf(id))), timestamp: id });
    await p.send(batch);
  }
}

// The same events as Avro in the Confluent wire format, through a registry in process.
const registry = new MockClient({ baseURLs: ["mock://"] });
const EVENT_AVRO = JSON.stringify({ type: "record", name: "Event", fields: [{ name: "id", type: "int" }, { name: "user", type: "string" }, { name: "amount", type: "double" }] });
const avroOut = (): KafkaValueSerializer<Event> => schemaRegistry.avro<Event>({ client: registry, schema: EVENT_AVRO, autoRegister: true });
broker.createTopic("source-avro", PARTITIONS);
if (ONLY.test("eddy KafkaSource, registry Avro")) {
  const p = client.producer({});
  const avro = schemaRegistry.avro<Event>({ client: registry, schema: EVENT_AVRO, autoRegister: true });
  for (let i = 0; i < RECORDS; i += 500) {
    const batch: ProducerRecord[] = [];
    for (let id = i; id < Math.min(RECORDS, i + 500); id++) batch.push({ topic: "source-avro", partition: id % PARTITIONS, key: null, value: await avro.serialize("source-avro", eventOf(id)), timestamp: id });
    await p.send(batch);
  }
}

async function bareFetch(): Promise<void> {
  const next = Array.from({ length: PARTITIONS }, () => 0);
  const end = await client.listOffsets(next.map((_, partition) => ({ topic: "source", partition })), "latest", "read_committed");
  let n = 0;
  let sum = 0;
  while (next.some((o, p) => o < end[p]!)) {
    const results = await client.fetch(next.map((offset, partition) => ({ topic: "source", partition, offset })), { isolation: "read_committed", maxRecords: 500, maxWaitMs: 0 });
    for (const r of results) {
      for (const rec of r.records) {
        sum += (JSON.parse(dec.decode(rec.value!)) as Event).amount;
        n++;
      }
      next[r.partition] = r.nextOffset;
    }
  }
  if (n !== RECORDS || Number.isNaN(sum)) throw new Error(`bare fetch loop: ${n} records`);
}

let counted = 0;
const counting: Sink<Event> = { createWriter: () => ({ write: () => void counted++ }) };
async function eddySource(deserializer: KafkaDeserializer<Event> = "json", topic = "source"): Promise<void> {
  counted = 0;
  await runJob(
    defineJob("bench-kafka-source", (env) => {
      env.fromSource(KafkaSource.create<Event>({ client: () => broker.client(), topics: [topic], deserializer, bounded: true, fetchMaxWaitMs: 0 }), WatermarkStrategy.noWatermarks(), "source").sinkTo(counting);
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: 1_000 }, logger: quiet },
  ).done;
  if (counted !== RECORDS) throw new Error(`eddy KafkaSource: ${counted} records`);
}

let topicCount = 0;
const freshTopic = (): string => {
  const t = `sink-${topicCount++}`;
  broker.createTopic(t, PARTITIONS);
  return t;
};

async function bareSend(topic: string): Promise<void> {
  const p = client.producer({});
  for (let i = 0; i < RECORDS; i += 500) {
    const batch: ProducerRecord[] = [];
    for (let id = i; id < Math.min(RECORDS, i + 500); id++) {
      const e = eventOf(id);
      const key = enc.encode(e.user);
      batch.push({ topic, partition: partitionForKey(key, PARTITIONS), key, value: enc.encode(JSON.stringify(e)), timestamp: id });
    }
    await p.send(batch);
  }
}

async function eddySink(topic: string, delivery: DeliveryGuarantee, serializer: KafkaValueSerializer<Event> = "json"): Promise<void> {
  await runJob(
    defineJob("bench-kafka-sink", (env) => {
      env
        .fromSequence(0, RECORDS - 1)
        .map(eventOf)
        .sinkTo(KafkaSink.create<Event>({ client: () => broker.client(), topic, key: (e) => e.user, serializer, delivery, transactionalIdPrefix: `bench-${topic}` }));
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: 1_000 }, logger: quiet },
  ).done;
}

async function committedCount(topic: string): Promise<number> {
  const results = await client.fetch(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition, offset: 0 })), { isolation: "read_committed", maxRecords: 1e9, maxWaitMs: 0 });
  return results.reduce((n, r) => n + r.records.length, 0);
}

type Variant =
  | "bare fetch loop"
  | "eddy KafkaSource"
  | "eddy KafkaSource, async json"
  | "eddy KafkaSource, registry Avro"
  | "bare send loop"
  | "eddy KafkaSink at-least-once"
  | "eddy KafkaSink exactly-once"
  | "eddy KafkaSink at-least-once, registry Avro";
const ALL: Record<Variant, { run: (topic: string) => Promise<void>; sink: boolean; baseline: Variant }> = {
  "bare fetch loop": { run: bareFetch, sink: false, baseline: "bare fetch loop" },
  "eddy KafkaSource": { run: () => eddySource(), sink: false, baseline: "bare fetch loop" },
  "eddy KafkaSource, async json": { run: () => eddySource(async (r) => JSON.parse(dec.decode(r.value!)) as Event), sink: false, baseline: "bare fetch loop" },
  "eddy KafkaSource, registry Avro": { run: () => eddySource(schemaRegistry.avro<Event>({ client: registry }), "source-avro"), sink: false, baseline: "bare fetch loop" },
  "bare send loop": { run: bareSend, sink: true, baseline: "bare send loop" },
  "eddy KafkaSink at-least-once": { run: (t) => eddySink(t, "at-least-once"), sink: true, baseline: "bare send loop" },
  "eddy KafkaSink exactly-once": { run: (t) => eddySink(t, "exactly-once"), sink: true, baseline: "bare send loop" },
  "eddy KafkaSink at-least-once, registry Avro": { run: (t) => eddySink(t, "at-least-once", avroOut()), sink: true, baseline: "bare send loop" },
};
const chosen = (Object.keys(ALL) as Variant[]).filter((v) => ONLY.test(v));
const VARIANTS = Object.fromEntries((Object.keys(ALL) as Variant[]).filter((v) => chosen.includes(v) || chosen.some((c) => ALL[c].baseline === v)).map((v) => [v, ALL[v]])) as typeof ALL;

const results = new Map<Variant, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [variant, { run, sink }] of Object.entries(VARIANTS) as [Variant, (typeof VARIANTS)[Variant]][]) {
    const topic = sink ? freshTopic() : "source";
    const start = performance.now();
    await run(topic);
    const ms = performance.now() - start;
    if (sink && (await committedCount(topic)) !== RECORDS) throw new Error(`${variant}: ${await committedCount(topic)} records committed, not ${RECORDS}`);
    results.set(variant, [...(results.get(variant) ?? []), RECORDS / (ms / 1000)]);
  }
}
console.log(`${RECORDS.toLocaleString("en-US")} records (JSON, ~60 bytes), ${PARTITIONS} partitions, the fake broker in process, median of ${ROUNDS} rounds; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
for (const [variant, { baseline }] of Object.entries(VARIANTS) as [Variant, (typeof VARIANTS)[Variant]][]) {
  const rate = median(results.get(variant)!);
  const base = median(results.get(baseline)!);
  console.log(`${variant.padEnd(44)} ${Math.round(rate).toLocaleString("en-US").padStart(10)} rec/s  ${Math.round((rate / base) * 100)} % of ${baseline}`);
}
