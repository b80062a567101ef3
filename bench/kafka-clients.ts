/**
 * The two Kafka clients issue 26 names, measured against librdkafka's mock cluster
 * (test/kafka-mock.ts: Debian's librdkafka-dev, loopback) for choosing the one eddy-kafka's
 * adapter wraps (docs/connectors/kafka.md, "Choosing the client"):
 *
 * - produce: N records of 100 bytes to 4 partitions, until every one is acknowledged
 *   (kafkajs: `send` of 1,000 at a time, acks -1; Confluent: `produce` + delivery reports, linger 5 ms, idempotent);
 * - consume: the same N records read back with read_committed (kafkajs: a consumer group, as it
 *   has no manual assignment, timed from the first batch; Confluent: `assign` at offset 0);
 * - transactions: init, commit, a second producer with the same transactional id, then the
 *   first one's send and commit (a zombie): fenced or not, and what read_committed sees.
 *
 * Neither client is a dependency of the repository (the Confluent client builds librdkafka
 * natively, about 3 minutes here): install both into a directory and point EDDY_KAFKA_CLIENTS at it:
 *   mkdir /tmp/kc && cd /tmp/kc && npm init -y && npm i kafkajs@2.2.4 && CKJS_LINKING=dynamic npm i @confluentinc/kafka-javascript@1.10.1
 * Run: EDDY_KAFKA_CLIENTS=/tmp/kc node -C eddy-source --import tsx bench/kafka-clients.ts [records=100000] [rounds=3]
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { median } from "./stats.ts";
import { startKafkaMock, type KafkaMock } from "../test/kafka-mock.ts";

const RECORDS = Number(process.argv[2] ?? 100_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const dir = process.env.EDDY_KAFKA_CLIENTS;
if (dir === undefined || dir === "") {
  console.error("set EDDY_KAFKA_CLIENTS to a directory where kafkajs and @confluentinc/kafka-javascript are installed (see the comment at the top of bench/kafka-clients.ts)");
  process.exit(1);
}
const require = createRequire(join(dir, "package.json"));
/* eslint-disable @typescript-eslint/no-explicit-any */
type Any = any;
const kafkajs: Any = require("kafkajs");
const confluent: Any = require("@confluentinc/kafka-javascript");
const value = Buffer.alloc(100, 120);
const cb = <T>(fn: (done: (e: unknown, v: T) => void) => void): Promise<T> => new Promise((res, rej) => fn((e, v) => (e ? rej(e) : res(v))));

async function kafkajsRound(mock: KafkaMock, topic: string): Promise<{ produce: number; consume: number; joinMs: number }> {
  const kafka = new kafkajs.Kafka({ brokers: mock.bootstrap.split(","), logLevel: kafkajs.logLevel.NOTHING, clientId: "bench" });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  let t0 = performance.now();
  for (let i = 0; i < RECORDS; i += 1000) {
    const messages = [];
    for (let j = i; j < Math.min(RECORDS, i + 1000); j++) messages.push({ key: String(j), value, partition: j % 4 });
    await producer.send({ topic, messages, acks: -1 });
  }
  const produce = RECORDS / ((performance.now() - t0) / 1000);
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `bench-${topic}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let got = 0;
  let first = 0;
  t0 = performance.now();
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachBatch: async ({ batch }: Any) => {
        if (first === 0) first = performance.now();
        got += batch.messages.length;
        if (got >= RECORDS) resolve();
      },
    });
  });
  const consume = got / ((performance.now() - first) / 1000);
  await consumer.disconnect();
  return { produce, consume, joinMs: first - t0 };
}

async function confluentRound(mock: KafkaMock, topic: string): Promise<{ produce: number; consume: number }> {
  const producer = new confluent.Producer({ "bootstrap.servers": mock.bootstrap, dr_cb: true, "linger.ms": 5, "enable.idempotence": true, "queue.buffering.max.messages": 1_000_000 });
  await cb((done) => producer.connect({}, done));
  producer.setPollInterval(5);
  let delivered = 0;
  producer.on("delivery-report", (err: unknown) => void (err ? 0 : delivered++));
  let t0 = performance.now();
  for (let i = 0; i < RECORDS; i++) {
    for (;;) {
      try {
        producer.produce(topic, i % 4, value, Buffer.from(String(i)), Date.now());
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 1));
      }
    }
  }
  while (delivered < RECORDS) await new Promise((r) => setTimeout(r, 2));
  const produce = RECORDS / ((performance.now() - t0) / 1000);
  await cb((done) => producer.disconnect(done));
  const consumer = new confluent.KafkaConsumer({ "bootstrap.servers": mock.bootstrap, "group.id": "bench", "enable.auto.commit": false, "isolation.level": "read_committed" }, {});
  await cb((done) => consumer.connect({}, done));
  consumer.assign([0, 1, 2, 3].map((partition) => ({ topic, partition, offset: 0 })));
  let got = 0;
  t0 = performance.now();
  while (got < RECORDS) got += (await cb<unknown[]>((done) => consumer.consume(5000, done))).length;
  const consume = got / ((performance.now() - t0) / 1000);
  await cb((done) => consumer.disconnect(done));
  return { produce, consume };
}

async function confluentTransactions(mock: KafkaMock): Promise<string> {
  const make = async (): Promise<Any> => {
    const p = new confluent.Producer({ "bootstrap.servers": mock.bootstrap, "transactional.id": "bench-tid", dr_cb: true });
    await cb((done) => p.connect({}, done));
    await cb((done) => p.initTransactions(10_000, done));
    return p;
  };
  const first = await make();
  await cb((done) => first.beginTransaction(done));
  first.produce("tx", 0, Buffer.from("committed"));
  await cb((done) => first.commitTransaction(10_000, done));
  await cb((done) => first.beginTransaction(done));
  first.produce("tx", 0, Buffer.from("zombie"));
  await make();
  let zombie: string;
  try {
    await cb((done) => first.commitTransaction(10_000, done));
    zombie = "the zombie's commit was accepted (not fenced)";
  } catch (e) {
    zombie = `the zombie was fenced (${String((e as Error).message ?? e)})`;
  }
  const c = new confluent.KafkaConsumer({ "bootstrap.servers": mock.bootstrap, "group.id": "tx", "enable.auto.commit": false, "isolation.level": "read_committed" }, {});
  await cb((done) => c.connect({}, done));
  c.assign([{ topic: "tx", partition: 0, offset: 0 }]);
  const seen: string[] = [];
  for (let i = 0; i < 5; i++) seen.push(...(await cb<Any[]>((done) => c.consume(100, done))).map((m) => String(m.value)));
  await cb((done) => c.disconnect(done));
  return `${zombie}; read_committed sees ${JSON.stringify(seen)}`;
}

async function kafkajsTransactions(mock: KafkaMock): Promise<string> {
  const kafka = new kafkajs.Kafka({ brokers: mock.bootstrap.split(","), logLevel: kafkajs.logLevel.NOTHING, clientId: "tx" });
  try {
    const p = kafka.producer({ transactionalId: "bench-kjs", idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    const txn = await p.transaction();
    await txn.send({ topic: "tx", messages: [{ value: "x" }] });
    await txn.commit();
    return "commit accepted";
  } catch (e) {
    return `failed: ${String((e as Error).message ?? e)}`;
  }
}

const topics = Object.fromEntries(Array.from({ length: ROUNDS * 2 }, (_, i) => [`t${i}`, 4]));
const mock = await startKafkaMock({ ...topics, tx: 1 });
try {
  const kjs: { produce: number; consume: number; joinMs: number }[] = [];
  const ck: { produce: number; consume: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    ck.push(await confluentRound(mock, `t${2 * r}`));
    kjs.push(await kafkajsRound(mock, `t${2 * r + 1}`));
  }
  const m = (xs: number[]): number => Math.round(median(xs));
  console.log(`records ${RECORDS} x 100 B, ${ROUNDS} rounds, medians; librdkafka mock cluster ${mock.bootstrap}`);
  console.log(`@confluentinc/kafka-javascript ${require("@confluentinc/kafka-javascript/package.json").version} (librdkafka ${confluent.librdkafkaVersion}): produce ${m(ck.map((x) => x.produce))} rec/s, consume (assign, read_committed) ${m(ck.map((x) => x.consume))} rec/s`);
  console.log(`kafkajs ${require("kafkajs/package.json").version}: produce ${m(kjs.map((x) => x.produce))} rec/s, consume (group, read_committed) ${m(kjs.map((x) => x.consume))} rec/s after a group join of ${m(kjs.map((x) => x.joinMs))} ms`);
  console.log(`transactions, Confluent client vs the mock: ${await confluentTransactions(mock)}`);
  console.log(`transactions, kafkajs vs the mock: ${await kafkajsTransactions(mock)}`);
} finally {
  await mock.stop();
}
process.exit(0);
