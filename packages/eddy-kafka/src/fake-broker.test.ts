/**
 * The fake broker against Kafka's documented semantics (KIP-98 transactions, read_committed):
 * offsets and markers, the last stable offset, aborted records hidden, fencing by epoch, abort of
 * an open transaction on init, the transaction timeout, resumed commits, group offsets,
 * listOffsets — directly and over HTTP (fake-remote.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KafkaClientError, type KafkaClient, type ProducerRecord } from "./client.ts";
import { FakeKafkaBroker } from "./fake-broker.ts";
import { remoteFakeKafkaClient, serveFakeKafka } from "./fake-remote.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const rec = (value: string, partition = 0, timestamp?: number): ProducerRecord => ({ topic: "t", partition, key: null, value: enc.encode(value), ...(timestamp === undefined ? {} : { timestamp }) });
const FETCH = { isolation: "read_committed", maxRecords: 1000, maxWaitMs: 0 } as const;

async function values(client: KafkaClient, partition = 0, isolation: "read_committed" | "read_uncommitted" = "read_committed"): Promise<string[]> {
  const [r] = await client.fetch([{ topic: "t", partition, offset: 0 }], { ...FETCH, isolation });
  return r!.records.map((x) => dec.decode(x.value!));
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof KafkaClientError && e.code === code);
}

for (const transport of ["in-process", "http"] as const) {
  const withClient = async (fn: (broker: FakeKafkaBroker, client: KafkaClient) => Promise<void>, options = {}): Promise<void> => {
    const broker = new FakeKafkaBroker(options);
    broker.createTopic("t", 2);
    if (transport === "in-process") return fn(broker, broker.client());
    const server = await serveFakeKafka(broker);
    try {
      await fn(broker, remoteFakeKafkaClient(server.url));
    } finally {
      await server.close();
    }
  };

  test(`${transport}: records and markers take offsets; read_committed stops at the LSO of an open transaction and hides aborted records`, () =>
    withClient(async (broker, client) => {
      const plain = client.producer({});
      assert.deepEqual(await plain.send([rec("a"), rec("b")]), [0, 1]);
      const p = client.producer({ transactionalId: "tx" });
      await p.initTransactions();
      p.beginTransaction();
      assert.deepEqual(await p.send([rec("t1")]), [2]);
      await plain.send([rec("c")]);
      // Open transaction at offset 2: read_committed sees a, b only; read_uncommitted sees all.
      assert.deepEqual(await values(client), ["a", "b"]);
      assert.deepEqual(await values(client, 0, "read_uncommitted"), ["a", "b", "t1", "c"]);
      let [r] = await client.fetch([{ topic: "t", partition: 0, offset: 0 }], FETCH);
      assert.deepEqual({ next: r!.nextOffset, lso: r!.lastStableOffset, hw: r!.highWatermark }, { next: 2, lso: 2, hw: 4 });
      await p.abortTransaction();
      // The abort marker takes offset 4; t1 is hidden; c (not transactional) is visible.
      assert.deepEqual(await values(client), ["a", "b", "c"]);
      p.beginTransaction();
      await p.send([rec("t2"), rec("t3", 1)]);
      await p.commitTransaction();
      assert.deepEqual(await values(client), ["a", "b", "c", "t2"]);
      assert.deepEqual(await values(client, 1), ["t3"]);
      [r] = await client.fetch([{ topic: "t", partition: 0, offset: 0 }], FETCH);
      // a b t1 c abort t2 commit: 7 offsets; the next fetch starts past the commit marker.
      assert.deepEqual({ next: r!.nextOffset, hw: r!.highWatermark, offsets: r!.records.map((x) => x.offset) }, { next: 7, hw: 7, offsets: [0, 1, 3, 5] });
      assert.deepEqual(broker.openTransactions(), []);
    }));

  test(`${transport}: initTransactions bumps the epoch, aborts the open transaction and fences the older producer`, () =>
    withClient(async (broker, client) => {
      const old = client.producer({ transactionalId: "tx" });
      const first = await old.initTransactions();
      assert.equal(first.epoch, 0, "a new transactional id starts at epoch 0");
      old.beginTransaction();
      await old.send([rec("zombie")]);
      const fresh = client.producer({ transactionalId: "tx" });
      const second = await fresh.initTransactions();
      assert.deepEqual({ producerId: second.producerId, epoch: second.epoch }, { producerId: first.producerId, epoch: 1 });
      assert.deepEqual(broker.openTransactions(), [], "the zombie's transaction was aborted");
      await rejectsWith(old.send([rec("late")]), "PRODUCER_FENCED");
      await rejectsWith(old.commitTransaction(), "PRODUCER_FENCED");
      fresh.beginTransaction();
      await fresh.send([rec("ok")]);
      await fresh.commitTransaction();
      assert.deepEqual(await values(client), ["ok"]);
    }));

  test(`${transport}: a transaction left open is committed by its handle from another client; a repeated commit is recognised; an aborted one is refused`, () =>
    withClient(async (_broker, client) => {
      const p = client.producer({ transactionalId: "tx" });
      const handle = await p.initTransactions();
      p.beginTransaction();
      await p.send([rec("x")]);
      // The producer is gone (no close); the committer has only the handle.
      assert.equal(await client.commitTransaction(handle), "committed");
      assert.equal(await client.commitTransaction(handle), "already-committed");
      assert.deepEqual(await values(client), ["x"]);
      const q = client.producer({ transactionalId: "tx" });
      const h2 = await q.initTransactions();
      q.beginTransaction();
      await q.send([rec("y")]);
      await q.abortTransaction();
      await rejectsWith(client.commitTransaction(h2), "INVALID_TXN_STATE");
      // The first handle's epoch is older than the id's now.
      await rejectsWith(client.commitTransaction({ ...handle, epoch: h2.epoch + 5 }), "INVALID_TXN_STATE");
      await rejectsWith(client.commitTransaction({ ...handle, transactionalId: "never" }), "INVALID_TXN_STATE");
    }));

  test(`${transport}: the broker aborts a transaction open longer than its timeout and fences its producer`, () => {
    let now = 1_000_000;
    return withClient(
      async (broker, client) => {
        const p = client.producer({ transactionalId: "tx", transactionTimeoutMs: 500 });
        const handle = await p.initTransactions();
        p.beginTransaction();
        await p.send([rec("slow")]);
        now += 499;
        assert.deepEqual(broker.openTransactions(), ["tx"]);
        now += 1;
        assert.deepEqual(broker.openTransactions(), []);
        assert.deepEqual(await values(client), []);
        await rejectsWith(p.send([rec("more")]), "PRODUCER_FENCED");
        await rejectsWith(client.commitTransaction(handle), "INVALID_TXN_STATE");
      },
      { now: () => now },
    );
  });

  test(`${transport}: listOffsets (earliest, latest by isolation, timestamp), group offsets, unknown topics and partitions`, () =>
    withClient(async (broker, client) => {
      const plain = client.producer({});
      await plain.send([rec("a", 0, 100), rec("b", 0, 200), rec("c", 0, 300)]);
      const p = client.producer({ transactionalId: "tx" });
      await p.initTransactions();
      p.beginTransaction();
      await p.send([rec("d", 0, 400)]);
      const tp = [{ topic: "t", partition: 0 }];
      assert.deepEqual(await client.listOffsets(tp, "earliest", "read_committed"), [0]);
      assert.deepEqual(await client.listOffsets(tp, "latest", "read_committed"), [3]);
      assert.deepEqual(await client.listOffsets(tp, "latest", "read_uncommitted"), [4]);
      assert.deepEqual(await client.listOffsets(tp, { timestamp: 150 }, "read_committed"), [1]);
      assert.deepEqual(await client.listOffsets(tp, { timestamp: 1000 }, "read_committed"), [3]);
      assert.deepEqual(await client.committedOffsets("g", tp), [undefined]);
      await client.commitOffsets("g", [{ topic: "t", partition: 0, offset: 2 }]);
      assert.deepEqual(await client.committedOffsets("g", tp), [{ offset: 2, metadata: "" }]);
      await rejectsWith(client.partitionCount("nope"), "UNKNOWN_TOPIC");
      await rejectsWith(client.fetch([{ topic: "t", partition: 9, offset: 0 }], FETCH), "UNKNOWN_PARTITION");
      await rejectsWith(client.fetch([{ topic: "t", partition: 0, offset: 99 }], FETCH), "OFFSET_OUT_OF_RANGE");
      broker.createTopic("t", 3);
      assert.equal(await client.partitionCount("t"), 3);
      assert.deepEqual([...(await client.listTopics())], ["t"]);
    }));

  test(`${transport}: a fetch with maxWaitMs waits for a commit that makes records visible`, () =>
    withClient(async (_broker, client) => {
      const p = client.producer({ transactionalId: "tx" });
      await p.initTransactions();
      p.beginTransaction();
      await p.send([rec("later")]);
      const fetched = client.fetch([{ topic: "t", partition: 0, offset: 0 }], { ...FETCH, maxWaitMs: 30_000 });
      await new Promise((r) => setTimeout(r, 20));
      await p.commitTransaction();
      const [r] = await fetched;
      assert.deepEqual(r!.records.map((x) => dec.decode(x.value!)), ["later"]);
    }));
}

test("bytes, keys, headers and timestamps are stored as copies and come back as sent", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("t", 1);
  const server = await serveFakeKafka(broker);
  try {
    const client = remoteFakeKafkaClient(server.url);
    const key = new Uint8Array([0, 255, 7]);
    await client.producer({}).send([{ topic: "t", partition: 0, key, value: null, headers: [["h", new Uint8Array([1])], ["h", new Uint8Array([2])]], timestamp: 42 }]);
    const [r] = await client.fetch([{ topic: "t", partition: 0, offset: 0 }], FETCH);
    const got = r!.records[0]!;
    assert.deepEqual({ key: [...got.key!], value: got.value, headers: got.headers.map(([k, v]) => [k, [...v]]), timestamp: got.timestamp }, { key: [0, 255, 7], value: null, headers: [["h", [1]], ["h", [2]]], timestamp: 42 });
    const bad = await fetch(server.url.replace(/\/[^/]*$/, "/wrong"), { method: "POST", body: "{}" });
    assert.equal(bad.status, 404, "a request without the token is refused");
  } finally {
    await server.close();
  }
});
