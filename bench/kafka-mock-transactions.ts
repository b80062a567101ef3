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
const step = async (what: string, f: () => Promise<unknown>) => { const t = Date.now(); try { const r = await f(); console.log("OK  ", what, JSON.stringify(r) ?? "", Date.now() - t, "ms"); } catch (e) { console.log("FAIL", what, (e as Error).message, Date.now() - t, "ms"); } };
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
p.beginTransaction();
await step("send c", () => p.send([{ topic: "out", partition: 0, key: null, value: enc.encode("c") }]));
await step("sendOffsets 8", () => p.sendOffsetsToTransaction([{ topic: "out", partition: 0, offset: 8 }], "m-0"));
await step("abort", () => p.abortTransaction());
await step("read_committed after abort", () => read("read_committed"));
await step("marker after abort", marker);
// zombie: p begins a txn, a new producer inits the same id
p.beginTransaction();
await step("zombie send d", () => p.send([{ topic: "out", partition: 0, key: null, value: enc.encode("d") }]));
const q = c.producer({ transactionalId: "wa-0", transactionTimeoutMs: 10_000 });
await step("new init (fences)", () => q.initTransactions());
await step("zombie sendOffsets 9", () => p.sendOffsetsToTransaction([{ topic: "out", partition: 0, offset: 9 }], "m-0"));
await step("zombie commit", () => p.commitTransaction());
await step("read_committed after zombie", () => read("read_committed"));
await step("marker after zombie", marker);
q.beginTransaction();
await step("q send e", () => q.send([{ topic: "out", partition: 1, key: null, value: enc.encode("e") }]));
await step("q sendOffsets 10", () => q.sendOffsetsToTransaction([{ topic: "out", partition: 0, offset: 10 }], "m-0"));
await step("q commit", () => q.commitTransaction());
await step("read_committed end", () => read("read_committed"));
await step("marker end", marker);
// For comparison: a plain (non-transactional) offset commit of another group.
await step("plain commitOffsets 1 to group m-1", () => c.commitOffsets("m-1", [{ topic: "out", partition: 0, offset: 1 }]));
await step("group m-1 after plain commit", async () => (await c.committedOffsets("m-1", [{ topic: "out", partition: 0 }]))[0]);
await p.close().catch(() => {}); await q.close().catch(() => {});
await c.close();
await mock.stop();
