/**
 * Schema registry serdes in Eddy jobs, against the fake broker (eddy-kafka/testing) and, for the
 * registry, Confluent's MockClient or the HTTP stand-in of eddy-kafka/testing (no real registry
 * runs here):
 * - round trips: values (and Avro keys) written by a KafkaSink through the registry, read back by
 *   a KafkaSource in another job, for Avro (the real client over HTTP), JSON Schema and Protobuf
 *   (MockClient), one per sink writer (write-ahead, two-phase, at-least-once); the deserializer
 *   composes key, value and the record's position;
 * - bad records (no magic byte, an unknown schema id) go to the source's error policy with topic,
 *   partition and offset; a registry that cannot be reached fails the job (SCHEMA_REGISTRY_FAILED);
 * - Kafka (Avro) → keyed windows → Kafka (Avro), exactly-once, worker threads at parallelism 2, a
 *   worker exit or an exception at a random record, EDDY_KAFKA_ROUNDS rounds (2 here): what a
 *   read_committed reader sees equals the failure-free run's (test/jobs/kafka-pipeline.ts with
 *   EDDY_KAFKA_REGISTRY).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { create, createMutableRegistry } from "@bufbuild/protobuf";
import { MockClient } from "@confluentinc/schemaregistry";
import { defineJob, EddyError, WatermarkStrategy, type DeadLetter } from "eddy";
import { KafkaSink, KafkaSource, schemaRegistry, type ConsumerRecord, type KafkaSinkOptions, type ProducerRecord, type SchemaRegistrySerde } from "eddy-kafka";
import { serveFakeSchemaRegistry, type FakeSchemaRegistry } from "eddy-kafka/testing";
import { collectSink, runJob } from "eddy/testing";
import { fakeKafkaForThisFile, readCommitted } from "./kafka-fixtures.ts";
import { ORDER_AVRO, ORDER_JSON, OrderProto, type Order } from "./kafka-registry-fixtures.ts";
import { kafkaPipelineJob, type Event } from "./jobs/kafka-pipeline.ts";
import { prng, withEnv } from "./fixtures.ts";

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const kafka = fakeKafkaForThisFile();
let registry: FakeSchemaRegistry;
before(async () => {
  registry = await serveFakeSchemaRegistry();
});
after(async () => {
  await registry.close();
});

const ORDERS: Order[] = Array.from({ length: 300 }, (_, i) => ({ id: `o${i}`, amount: i * 3 }));

interface Read {
  readonly key: string | null;
  readonly order: Order;
  readonly partition: number;
  readonly offset: number;
}

type Delivery = Pick<KafkaSinkOptions<unknown>, "delivery" | "exactlyOnceMode" | "transactionalIdPrefix">;

/** Writes ORDERS to `topic` through `values` (keys through `keys`) with `delivery`; then reads them back through the same formats. */
async function roundTrip(topic: string, delivery: Delivery, values: SchemaRegistrySerde<Order>, write: (o: Order) => unknown, read: SchemaRegistrySerde<Order>, keys?: { out: SchemaRegistrySerde<string>; in: SchemaRegistrySerde<string> }): Promise<Read[]> {
  kafka.broker.createTopic(topic, 2);
  const writer = defineJob(`write-${topic}`, (env) => {
    env.fromCollection(ORDERS.map(write)).sinkTo(
      KafkaSink.create<unknown>({
        client: () => kafka.broker.client(),
        topic,
        serializer: values as SchemaRegistrySerde<unknown>,
        ...(keys === undefined ? {} : { key: (o: unknown) => keys.out.serialize(topic, (o as Order).id) }),
        ...delivery,
      }),
      "orders-out",
    );
  });
  await runJob(writer, { mode: "inline", parallelism: 2, logger: silent }).done;
  const reader = defineJob(`read-${topic}`, (env) => {
    env
      .fromSource(
        KafkaSource.create<Read>({
          client: () => kafka.broker.client(),
          topics: [topic],
          bounded: true,
          // A function of the whole record composing registry serdes: key, value and position.
          deserializer: async (r: ConsumerRecord) => ({ key: keys === undefined ? null : await keys.in.deserialize(r), order: await read.deserialize(r), partition: r.partition, offset: r.offset }),
        }),
        WatermarkStrategy.noWatermarks<Read>(),
        "orders-in",
      )
      .sinkTo(collectSink<Read>("read"));
  });
  const run = runJob(reader, { mode: "inline", parallelism: 1, logger: silent });
  await run.done;
  return run.collected<Read>("read");
}

const plain = (o: { id: string; amount: number }): Order => ({ id: o.id, amount: o.amount });
const byId = (a: Read, b: Read): number => a.order.id.localeCompare(b.order.id);

test("round trips through KafkaSink → fake broker → KafkaSource in jobs: Avro values and keys (the real client over HTTP; exactly-once write-ahead), JSON Schema (MockClient; exactly-once two-phase) and Protobuf (MockClient; at-least-once); per partition in offset order", async () => {
  registry.register("orders-avro-value", "AVRO", ORDER_AVRO);
  registry.register("orders-avro-key", "AVRO", '"string"');
  const url = registry.url;
  const avro = await roundTrip("orders-avro", { delivery: "exactly-once", exactlyOnceMode: "write-ahead", transactionalIdPrefix: "write-avro" }, schemaRegistry.avro<Order>({ url, schema: ORDER_AVRO }), (o) => o, schemaRegistry.avro<Order>({ url }), {
    out: schemaRegistry.avro<string>({ url, schema: '"string"', isKey: true }),
    in: schemaRegistry.avro<string>({ url, isKey: true }),
  });
  assert.deepEqual(avro.map((r) => ({ key: r.key, order: plain(r.order) })).sort((a, b) => a.order.id.localeCompare(b.order.id)), ORDERS.map((o) => ({ key: o.id, order: o })).sort((a, b) => a.order.id.localeCompare(b.order.id)));
  for (const p of [0, 1]) {
    const offsets = avro.filter((r) => r.partition === p).map((r) => r.offset);
    assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b), `partition ${p} in offset order`);
  }

  const mock = new MockClient({ baseURLs: ["mock://"] });
  const json = await roundTrip("orders-json", { delivery: "exactly-once", exactlyOnceMode: "two-phase", transactionalIdPrefix: "write-json" }, schemaRegistry.json<Order>({ client: mock, schema: ORDER_JSON, autoRegister: true }), (o) => o, schemaRegistry.json<Order>({ client: mock }));
  assert.deepEqual(json.sort(byId).map((r) => plain(r.order)), [...ORDERS].sort((a, b) => a.id.localeCompare(b.id)));

  const proto = await roundTrip("orders-pb", { delivery: "at-least-once" }, schemaRegistry.protobuf<Order>({ client: mock, protobufRegistry: createMutableRegistry(OrderProto), autoRegister: true }), (o) => create(OrderProto, { id: o.id, amount: o.amount }), schemaRegistry.protobuf<Order>({ client: mock }));
  assert.deepEqual(proto.sort(byId).map((r) => plain(r.order)), [...ORDERS].sort((a, b) => a.id.localeCompare(b.id)));
});

test("bad records (no magic byte, an unknown schema id) reach the error policy with topic, partition and offset; the records around them are read; an unreachable registry fails the job with SCHEMA_REGISTRY_FAILED", async () => {
  registry.register("mixed-value", "AVRO", ORDER_AVRO);
  const url = registry.url;
  kafka.broker.createTopic("mixed", 1);
  const good = schemaRegistry.avro<Order>({ url, schema: ORDER_AVRO });
  const records: ProducerRecord[] = [];
  for (let i = 0; i < 6; i++) records.push({ topic: "mixed", partition: 0, key: null, value: (await good.serialize("mixed", { id: `m${i}`, amount: i }))! });
  records.splice(2, 0, { topic: "mixed", partition: 0, key: null, value: new TextEncoder().encode('{"id":"m?","amount":1}') });
  records.splice(5, 0, { topic: "mixed", partition: 0, key: null, value: Uint8Array.from([0, 0, 0, 0x7a, 0x69, 2, 0x6d, 0]) });
  await kafka.broker.client().producer({}).send(records);

  const job = (registryUrl: string) =>
    defineJob("bad-avro", (env) => {
      const orders = env
        .fromSource(KafkaSource.create<Order>({ client: () => kafka.broker.client(), topics: ["mixed"], bounded: true, deserializer: schemaRegistry.avro<Order>({ url: registryUrl, clientConfig: { maxRetries: 0 } }) }), WatermarkStrategy.noWatermarks<Order>(), "orders")
        .onError("dead-letter");
      orders.map((o) => o.id).sinkTo(collectSink<string>("ids"));
      orders.deadLetters().sinkTo(collectSink<DeadLetter>("dead"));
    });
  const run = runJob(job(url), { mode: "inline", parallelism: 1, logger: silent });
  await run.done;
  assert.deepEqual(run.collected<string>("ids"), ["m0", "m1", "m2", "m3", "m4", "m5"]);
  const dead = run.collected<DeadLetter>("dead");
  assert.deepEqual(dead.map((d) => d.position), [{ topic: "mixed", partition: 0, offset: 2 }, { topic: "mixed", partition: 0, offset: 5 }]);
  assert.match(dead[0]!.error.message, /magic byte/i);
  assert.match(dead[1]!.error.message, /not found/i);

  const gone = await serveFakeSchemaRegistry();
  await gone.close();
  await assert.rejects(runJob(job(gone.url), { mode: "inline", parallelism: 1, logger: silent }).done, (e: unknown) => e instanceof EddyError && e.code === "SCHEMA_REGISTRY_FAILED" && /did not answer/.test(e.message));
});

const KEYS = 20;
const EVENTS = 6_000;
const ROUNDS = Number(process.env.EDDY_KAFKA_ROUNDS ?? 2);
const EVENT_AVRO = JSON.stringify({ type: "record", name: "Event", fields: [{ name: "n", type: "int" }, { name: "key", type: "string" }, { name: "ts", type: "int" }] });

test(`Kafka (Avro) → keyed windows → Kafka (Avro), exactly-once, worker threads at parallelism 2, a worker exit or an exception at a random record, ${ROUNDS} rounds: read_committed output equals the failure-free run's`, async () => {
  const input = "avro-events";
  kafka.broker.createTopic(input, 4);
  registry.register(`${input}-value`, "AVRO", EVENT_AVRO);
  const events = schemaRegistry.avro<Event>({ url: registry.url, schema: EVENT_AVRO });
  const records: ProducerRecord[] = [];
  for (let n = 1; n <= EVENTS; n++) {
    const e: Event = { n, key: `k${n % KEYS}`, ts: n * 5 };
    records.push({ topic: input, partition: n % 4, key: new TextEncoder().encode(e.key), value: (await events.serialize(input, e))! });
  }
  const p = kafka.broker.client().producer({});
  for (let i = 0; i < records.length; i += 500) await p.send(records.slice(i, i + 500));
  const strings = schemaRegistry.avro<string>({ url: registry.url });
  const committed = async (topic: string): Promise<string[]> => {
    const values = (await readCommitted(kafka.broker, topic, (x) => x)).flat();
    return (await Promise.all(values.map((r) => strings.deserialize(r as ConsumerRecord)))).sort();
  };
  const pipeline = async (output: string, options: Parameters<typeof runJob>[1], fault?: object): Promise<void> => {
    kafka.broker.createTopic(output, 3);
    registry.register(`${output}-value`, "AVRO", '"string"');
    const hold = options?.mode === "threads" ? join(tmpdir(), "eddy-kafka-never-released") : "";
    await withEnv({ EDDY_KAFKA_URL: kafka.url, EDDY_KAFKA_IN: input, EDDY_KAFKA_OUT: output, EDDY_KAFKA_HOLD: hold, EDDY_KAFKA_REGISTRY: registry.url, EDDY_KAFKA_FAULT: fault === undefined ? "" : JSON.stringify(fault) }, async () => {
      await runJob(kafkaPipelineJob, { logger: silent, ...options }).done;
    });
  };
  await pipeline("avro-baseline", { mode: "inline", parallelism: 1, checkpointing: false });
  const want = await committed("avro-baseline");
  assert.equal(want.reduce((s, w) => s + Number(w.split(":")[1]), 0), EVENTS, "the failure-free run counted every event once");
  const dir = mkdtempSync(join(tmpdir(), "eddy-kafka-avro-"));
  try {
    const seed = Number(process.env.EDDY_KAFKA_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    for (let round = 0; round < ROUNDS; round++) {
      const output = `avro-windows-${seed}-${round}`;
      const fault = { kind: round % 2 === 0 ? "exit" : "process", atRecord: 1 + Math.floor(random() * EVENTS * 0.95), marker: join(dir, `fault-${round}`) };
      await pipeline(output, { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 20 }, checkpointDir: join(dir, "checkpoints"), jobId: output, restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 } }, fault);
      assert.deepEqual(await committed(output), want, `seed ${seed}, round ${round}, ${fault.kind} at ${fault.atRecord}`);
      assert.deepEqual(kafka.broker.openTransactions(), [], `seed ${seed}, round ${round}: no transaction left open`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
