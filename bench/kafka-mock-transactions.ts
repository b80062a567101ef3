/**
 * What librdkafka's mock cluster (test/kafka-mock.ts: Debian's librdkafka 2.0.2) does with the
 * transactions of the Confluent client (librdkafka 2.15.1, through eddy-kafka's adapter), step by
 * step, as write-ahead exactly-once uses them (docs/connectors/kafka.md, "Exactly-once with the
 * real client"): initTransactions, send, sendOffsetsToTransaction to a marker group, commit; an
 * abort; a zombie producer after a newer one initialized the same id. Each step prints OK or FAIL,
 * what it returned and how long it took. A probe, not a test: it asserts nothing.
 *
 *   node -C eddy-source --import tsx bench/kafka-mock-transactions.ts
 */
import { confluentKafkaClient } from "eddy-kafka";
import { startKafkaMock } from "../test/kafka-mock.ts";
const mock = await startKafkaMock({ out: 2 });
const c = confluentKafkaClient({ bootstrapServers: mock.bootstrap, requestTimeoutMs: 10_000 });
const enc = new TextEncoder();
const read = async (iso: "read_committed" | "read_uncommitted") => {
  const r = await c.fetch([0, 1].map((p) => ({ topic: "out", partition: p, offset: 0 })), { isolation: iso, maxRecords: 1000, maxWaitMs: 500 });
  return r.map((x) => x.records.map((y) => new TextDecoder().decode(y.value!)).join(",") + ` lso=${x.lastStableOffset} hw=${x.highWatermark}`);
};
const marker = async () => (await c.committedOffsets("m-0", [{ topic: "out", partition: 0 }]))[0];
const step = async (what: string, f: () => Promise<unknown>) => {
  const t = Date.now();
  try {
    const r = await f();
    console.log("OK  ", what, JSON.stringify(r) ?? "", Date.now() - t, "ms");
  } catch (e) {
    console.log("FAIL", what, (e as Error).message, Date.now() - t, "ms");
  }
};
type Producer = ReturnType<typeof c.producer>;
/** One write-ahead transaction: `value` to `partition`, marker offset `offset`, then `end`; what read_committed and the marker group show after. */
const transaction = async (p: Producer, who: string, value: string, partition: number, offset: number, end: "commit" | "abort", open = true) => {
  if (open) p.beginTransaction();
  await step(`${who} send ${value}`, () => p.send([{ topic: "out", partition, key: null, value: enc.encode(value) }]));
  await step(`${who} sendOffsets ${offset}`, () => p.sendOffsetsToTransaction([{ topic: "out", partition: 0, offset, metadata: `${who}:${offset}` }], "m-0"));
  await step(`${who} ${end}`, () => (end === "commit" ? p.commitTransaction() : p.abortTransaction()));
  await step(`read_committed after ${who} ${end}`, () => read("read_committed"));
  await step(`marker after ${who} ${end}`, marker);
};
const p = c.producer({ transactionalId: "wa-0", transactionTimeoutMs: 10_000 });
await step("init", () => p.initTransactions());
await step("marker before", marker);
p.beginTransaction();
await step("send a,b", () => p.send([{ topic: "out", partition: 0, key: null, value: enc.encode("a") }, { topic: "out", partition: 1, key: null, value: enc.encode("b") }]));
await step("sendOffsets 7", () => p.sendOffsetsToTransaction([{ topic: "out", partition: 0, offset: 7 }], "m-0"));
await step("read_committed before commit", () => read("read_committed"));
await step("read_uncommitted before commit", () => read("read_uncommitted"));
await step("marker before commit", marker);
await step("commit", () => p.commitTransaction());
await step("read_committed after commit", () => read("read_committed"));
await step("marker after commit", marker);
await transaction(p, "p", "c", 0, 8, "abort");
// zombie: p begins a transaction, a new producer initializes the same id, p goes on
p.beginTransaction();
const q = c.producer({ transactionalId: "wa-0", transactionTimeoutMs: 10_000 });
await step("new init (fences)", () => q.initTransactions());
await transaction(p, "zombie", "d", 0, 9, "commit", false);
await transaction(q, "q", "e", 1, 10, "commit");
// For comparison: a plain (non-transactional) offset commit of another group.
await step("plain commitOffsets 1 to group m-1", () => c.commitOffsets("m-1", [{ topic: "out", partition: 0, offset: 1 }]));
await step("group m-1 after plain commit", async () => (await c.committedOffsets("m-1", [{ topic: "out", partition: 0 }]))[0]);
await p.close().catch(() => {}); await q.close().catch(() => {});
await c.close();
await mock.stop();
