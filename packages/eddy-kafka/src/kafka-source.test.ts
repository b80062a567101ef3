/**
 * KafkaSource's enumerator and reader driven by hand against the in-memory fake broker: splits per
 * partition and their owners, starting offsets (earliest, latest, committed with a fallback,
 * timestamp, explicit), bounded stops, discovery of new partitions and topics of a pattern, a
 * restored enumerator; the reader's per-split outputs with record timestamps, read_committed gaps,
 * positions in snapshots and an exact resume, group offsets on checkpoint completion, bad records
 * with topic/partition/offset, and options.
 */
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { EddyError, type BadRecord, type ReaderOutput, type Source, type SourceReader, type SourceReaderContext, type SplitEnumerator } from "eddy";
import type { ConsumerRecord, ProducerRecord } from "./client.ts";
import { FakeKafkaBroker } from "./fake-broker.ts";
import { KafkaSource } from "./kafka-source.ts";
import type { KafkaSourceOptions } from "./kafka-source-options.ts";
import type { KafkaSplit } from "./kafka-split.ts";

const enc = new TextEncoder();
const rec = (topic: string, partition: number, value: string, timestamp: number, key: string | null = null): ProducerRecord => ({
  topic,
  partition,
  key: key === null ? null : enc.encode(key),
  value: enc.encode(value),
  timestamp,
  headers: [["h", enc.encode(`${value}!`)]],
});

async function until(cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Enumerators opened by a test, closed after it whatever happened (their discovery timers keep the process alive). */
const opened: SplitEnumerator<KafkaSplit>[] = [];
afterEach(() => {
  for (const e of opened.splice(0)) e.close?.();
});

/** An enumerator with a recording context. */
function enumerate(source: Source<unknown, KafkaSplit>, parallelism: number, restored?: unknown) {
  const assigned = new Map<number, KafkaSplit[]>();
  const noMore = new Set<number>();
  const failures: unknown[] = [];
  const context = {
    parallelism,
    assignSplits: (reader: number, splits: readonly KafkaSplit[]) => assigned.set(reader, [...(assigned.get(reader) ?? []), ...splits]),
    signalNoMoreSplits: (reader: number) => noMore.add(reader),
    failJob: (e: unknown) => failures.push(e),
  };
  const enumerator: SplitEnumerator<KafkaSplit> = restored === undefined ? source.createEnumerator(context) : source.restoreEnumerator!(context, restored);
  opened.push(enumerator);
  enumerator.start?.();
  for (let i = 0; i < parallelism; i++) enumerator.addReader(i);
  const all = (): KafkaSplit[] => [...assigned.values()].flat().sort((a, b) => a.splitId.localeCompare(b.splitId));
  return { enumerator, assigned, noMore, failures, all };
}

function readerContext(metrics: Record<string, number> = {}): SourceReaderContext {
  const counter = (name: string) => ({ inc: (n = 1) => void (metrics[name] = (metrics[name] ?? 0) + n), get count() { return metrics[name] ?? 0; } });
  return {
    subtaskIndex: 0,
    parallelism: 1,
    sendSplitRequest() {},
    metrics: { counter, gauge() {}, setPendingRecordsGauge() {}, setPendingBytesGauge() {} } as unknown as SourceReaderContext["metrics"],
  };
}

interface Collected {
  readonly bySplit: Map<string, { value: unknown; timestamp: number | undefined }[]>;
  readonly bad: BadRecord[];
  readonly output: ReaderOutput<unknown>;
}

function collector(): Collected {
  const bySplit = new Map<string, { value: unknown; timestamp: number | undefined }[]>();
  const bad: BadRecord[] = [];
  const output: ReaderOutput<unknown> = {
    collect: () => assert.fail("records go through split outputs"),
    reportBadRecord: (b) => bad.push(b),
    createOutputForSplit(splitId) {
      const list = bySplit.get(splitId) ?? [];
      bySplit.set(splitId, list);
      return { collect: (value, timestamp) => void list.push({ value, timestamp }), reportBadRecord: (b) => bad.push(b) };
    },
    releaseOutputForSplit() {},
  };
  return { bySplit, bad, output };
}

/** Polls until `done` (or the reader ends). */
async function drain(reader: SourceReader<unknown, KafkaSplit>, output: ReaderOutput<unknown>, done: () => boolean): Promise<"end" | "done"> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const status = reader.pollNext(output);
    if (status === "end") return "end";
    if (done()) return "done";
    if (Date.now() > deadline) throw new Error("timed out draining the reader");
    if (status === "nothing") await Promise.race([reader.isAvailable(), new Promise((r) => setTimeout(r, 50))]);
  }
}

async function seeded(): Promise<FakeKafkaBroker> {
  const broker = new FakeKafkaBroker();
  broker.createTopic("a", 3);
  broker.createTopic("b", 1);
  const p = broker.client().producer({});
  for (let i = 0; i < 10; i++) await p.send([rec("a", i % 3, `a${i}`, 100 * i), rec("b", 0, `b${i}`, 100 * i)]);
  return broker;
}

const base = (broker: FakeKafkaBroker): KafkaSourceOptions<string> => ({ client: () => broker.client(), topics: ["a", "b"], deserializer: "string", partitionDiscoveryIntervalMs: 0 });

test("enumerator: a split per partition, each to one reader, starting offsets of every kind", async () => {
  const broker = await seeded();
  const client = broker.client();
  await client.commitOffsets("g", [{ topic: "a", partition: 1, offset: 2 }]);
  const cases: [KafkaSourceOptions<string>["startingOffsets"], Record<string, number>][] = [
    ["earliest", { "a-0": 0, "a-1": 0, "a-2": 0, "b-0": 0 }],
    ["latest", { "a-0": 4, "a-1": 3, "a-2": 3, "b-0": 10 }],
    [{ committed: "latest" }, { "a-0": 4, "a-1": 2, "a-2": 3, "b-0": 10 }],
    [{ committed: "earliest" }, { "a-0": 0, "a-1": 2, "a-2": 0, "b-0": 0 }],
    // a-0 holds a0 a3 a6 a9 (t 0, 300, 600, 900), a-1 a1 a4 a7, a-2 a2 a5 a8: the first at or after 500.
    [{ timestamp: 500 }, { "a-0": 2, "a-1": 2, "a-2": 1, "b-0": 5 }],
    [{ offsets: [{ topic: "a", partition: 2, offset: 1 }], otherwise: "latest" }, { "a-0": 4, "a-1": 3, "a-2": 1, "b-0": 10 }],
  ];
  for (const [startingOffsets, expected] of cases) {
    const e = enumerate(KafkaSource.create({ ...base(broker), groupId: "g", startingOffsets }) as Source<unknown, KafkaSplit>, 2);
    await until(() => e.all().length === 4, "4 splits");
    assert.deepEqual(Object.fromEntries(e.all().map((s) => [s.splitId, s.next])), expected, JSON.stringify(startingOffsets));
    // Every split to exactly one reader; both readers get some.
    assert.equal(new Set(e.all().map((s) => s.splitId)).size, 4);
    assert.deepEqual([...e.assigned.keys()].sort(), [0, 1]);
    assert.deepEqual(e.noMore.size, 0, "continuous: no end");
    e.enumerator.close?.();
  }
});

test("enumerator: bounded stops at the end each partition had at the start; discovery assigns new partitions and pattern topics from the earliest offset; a restored enumerator skips what it had seen", async () => {
  const broker = await seeded();
  const bounded = enumerate(KafkaSource.create({ ...base(broker), bounded: true }) as Source<unknown, KafkaSplit>, 2);
  await until(() => bounded.noMore.size === 2, "no more splits for both readers");
  assert.deepEqual(Object.fromEntries(bounded.all().map((s) => [s.splitId, s.stop])), { "a-0": 4, "a-1": 3, "a-2": 3, "b-0": 10 });

  const discovering = enumerate(KafkaSource.create({ ...base(broker), topics: undefined, topicPattern: /^a|^c$/, startingOffsets: "latest", partitionDiscoveryIntervalMs: 20 }) as Source<unknown, KafkaSplit>, 2);
  await until(() => discovering.all().length === 3, "a's 3 partitions");
  const state = discovering.enumerator.snapshotState!(1);
  broker.createTopic("a", 4);
  broker.createTopic("c", 1);
  await broker.client().producer({}).send([rec("a", 3, "new", 1)]);
  await until(() => discovering.all().length === 5, "a-3 and c-0 discovered");
  const fresh = discovering.all().filter((s) => s.splitId === "a-3" || s.splitId === "c-0");
  assert.deepEqual(fresh.map((s) => s.next), [0, 0], "new partitions start at the earliest offset, whatever startingOffsets says");
  discovering.enumerator.close?.();

  const restored = enumerate(KafkaSource.create({ ...base(broker), topics: undefined, topicPattern: /^a|^c$/, partitionDiscoveryIntervalMs: 0 }) as Source<unknown, KafkaSplit>, 2, state);
  await until(() => restored.all().length === 2, "only the partitions the checkpoint had not seen");
  assert.deepEqual(restored.all().map((s) => s.splitId), ["a-3", "c-0"]);
  restored.enumerator.close?.();
});

test("reader: records through their partition's output with the record timestamp; read_committed skips aborted records and markers; a snapshot resumes exactly; group offsets on completion", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("t", 2);
  const client = broker.client();
  const plain = client.producer({});
  await plain.send([rec("t", 0, "x0", 10), rec("t", 1, "y0", 5)]);
  const tx = client.producer({ transactionalId: "w" });
  await tx.initTransactions();
  tx.beginTransaction();
  await tx.send([rec("t", 0, "aborted", 11)]);
  await tx.abortTransaction();
  tx.beginTransaction();
  await tx.send([rec("t", 0, "x1", 12), rec("t", 1, "y1", 6)]);
  await tx.commitTransaction();
  const source = KafkaSource.create<string>({ client: () => broker.client(), topics: ["t"], deserializer: "string", groupId: "g", partitionDiscoveryIntervalMs: 0, fetchMaxWaitMs: 20 });
  const splits: KafkaSplit[] = [0, 1].map((p) => ({ v: 1, splitId: `t-${p}`, topic: "t", partition: p, next: 0, stop: -1 }));
  const reader = source.createReader(readerContext());
  reader.addSplits(splits);
  const c = collector();
  await drain(reader, c.output, () => [...c.bySplit.values()].flat().length >= 4);
  assert.deepEqual(Object.fromEntries([...c.bySplit].map(([k, v]) => [k, v])), {
    "t-0": [{ value: "x0", timestamp: 10 }, { value: "x1", timestamp: 12 }],
    "t-1": [{ value: "y0", timestamp: 5 }, { value: "y1", timestamp: 6 }],
  });
  // t-0: x0, aborted, abort marker, x1, commit marker → next 5; t-1: y0, y1, commit marker → 3.
  const snap = reader.snapshotState(7);
  assert.deepEqual(snap.map((s) => [s.splitId, s.next]), [["t-0", 5], ["t-1", 3]]);
  reader.notifyCheckpointComplete!(7);
  const committedAfter = async () => (await client.committedOffsets("g", [{ topic: "t", partition: 0 }, { topic: "t", partition: 1 }])).map((o) => o?.offset);
  const deadline = Date.now() + 5000;
  while (JSON.stringify(await committedAfter()) !== JSON.stringify([5, 3]) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(await committedAfter(), [5, 3], "the completed checkpoint's offsets are the group's");
  reader.close!();

  // A restored reader resumes at the snapshot: only what was written after it.
  await plain.send([rec("t", 0, "x2", 13)]);
  const again = source.createReader(readerContext());
  again.addSplits(snap);
  const c2 = collector();
  await drain(again, c2.output, () => [...c2.bySplit.values()].flat().length >= 1);
  await new Promise((r) => setTimeout(r, 50));
  again.pollNext(c2.output);
  assert.deepEqual([...c2.bySplit.values()].flat().map((x) => x.value), ["x2"]);
  again.close!();
});

test("reader: bounded splits end at their stop; a record the deserializer refuses is a bad record with topic, partition and offset; deserializers see key, headers and position", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("j", 1);
  await broker.client().producer({}).send([rec("j", 0, '{"n":1}', 1, "k1"), rec("j", 0, "{broken", 2), rec("j", 0, '{"n":3}', 3), rec("j", 0, '{"n":4}', 4)]);
  const json = KafkaSource.create<{ n: number }>({ client: () => broker.client(), topics: ["j"], deserializer: "json", bounded: true });
  const reader = json.createReader(readerContext());
  reader.addSplits([{ v: 1, splitId: "j-0", topic: "j", partition: 0, next: 0, stop: 3 }]);
  reader.notifyNoMoreSplits();
  const c = collector();
  assert.equal(await drain(reader, c.output, () => false), "end");
  assert.deepEqual(c.bySplit.get("j-0")!.map((x) => x.value), [{ n: 1 }, { n: 3 }], "stops before offset 3");
  assert.equal(c.bad.length, 1);
  assert.deepEqual(c.bad[0]!.position, { topic: "j", partition: 0, offset: 1 });
  assert.equal(new TextDecoder().decode(c.bad[0]!.raw as Uint8Array), "{broken");

  const seen: ConsumerRecord[] = [];
  const custom = KafkaSource.create<string>({ client: () => broker.client(), topics: ["j"], deserializer: (r) => (seen.push(r), `${r.topic}/${r.partition}@${r.offset}`), bounded: true });
  const r2 = custom.createReader(readerContext());
  r2.addSplits([{ v: 1, splitId: "j-0", topic: "j", partition: 0, next: 0, stop: 1 }]);
  r2.notifyNoMoreSplits();
  const c2 = collector();
  assert.equal(await drain(r2, c2.output, () => false), "end");
  assert.deepEqual(c2.bySplit.get("j-0")!.map((x) => x.value), ["j/0@0"]);
  assert.deepEqual({ key: new TextDecoder().decode(seen[0]!.key!), headers: seen[0]!.headers.map(([k, v]) => [k, new TextDecoder().decode(v)]), timestamp: seen[0]!.timestamp }, { key: "k1", headers: [["h", '{"n":1}!']], timestamp: 1 });
});

test("options: clear INVALID_KAFKA_OPTIONS errors", () => {
  const broker = new FakeKafkaBroker();
  const ok: KafkaSourceOptions<string> = { client: () => broker.client(), topics: ["t"], deserializer: "string" };
  const bad: [Partial<KafkaSourceOptions<string>>, RegExp][] = [
    [{ topics: undefined }, /exactly one of `topics` and `topicPattern`/],
    [{ topicPattern: /x/ }, /exactly one/],
    [{ topics: [] }, /non-empty list/],
    [{ topics: ["bad topic"] }, /not a valid topic name/],
    [{ startingOffsets: "middle" as never }, /`startingOffsets` must be/],
    [{ startingOffsets: { committed: "earliest" } }, /needs a `groupId`/],
    [{ startingOffsets: { offsets: [{ topic: "t", partition: -1, offset: 0 }], otherwise: "earliest" } }, /non-negative integers/],
    [{ deserializer: undefined as never }, /`deserializer` is required/],
    [{ isolation: "dirty" as never }, /`isolation` must be/],
    [{ fetchMaxWaitMs: -1 }, /fetchMaxWaitMs/],
  ];
  for (const [o, message] of bad) {
    assert.throws(() => KafkaSource.create({ ...ok, ...o }), (e: unknown) => e instanceof EddyError && e.code === "INVALID_KAFKA_OPTIONS" && message.test(e.message), JSON.stringify(o));
  }
});

test("a topic that does not exist fails the job from the enumerator with KAFKA_SOURCE_FAILED naming it", async () => {
  const broker = new FakeKafkaBroker();
  const e = enumerate(KafkaSource.create({ client: () => broker.client(), topics: ["missing"], deserializer: "string" }) as Source<unknown, KafkaSplit>, 1);
  await until(() => e.failures.length === 1, "the failure");
  assert.ok(e.failures[0] instanceof EddyError && e.failures[0].code === "KAFKA_SOURCE_FAILED" && /missing/.test(e.failures[0].message));
  e.enumerator.close?.();
});

test("reader, async deserializer: nothing of a partition is emitted while its batch awaits, a snapshot then holds the first record not emitted, results come in offset order (sync and async mixed), a rejection is a bad record with its position, an EddyError fails the reader", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("as", 2);
  await broker.client().producer({}).send([0, 1, 2, 3, 4, 5].map((i) => rec("as", 0, `v${i}`, i)).concat([rec("as", 1, "w0", 0)]));
  // Partition 0: odd offsets resolve when released (offset 3 rejects), even ones are synchronous; partition 1 synchronous.
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const asked: number[] = [];
  const source = KafkaSource.create<string>({
    client: () => broker.client(),
    topics: ["as"],
    bounded: true,
    deserializer: (r) => {
      asked.push(r.offset);
      const v = new TextDecoder().decode(r.value!);
      if (r.partition === 1 || r.offset % 2 === 0) return v;
      return gate.then(() => {
        if (r.offset === 3) throw new TypeError("no schema 3");
        return v;
      });
    },
  });
  const reader = source.createReader(readerContext());
  reader.addSplits([0, 1].map((p) => ({ v: 1, splitId: `as-${p}`, topic: "as", partition: p, next: 0, stop: p === 0 ? 6 : 1 })));
  reader.notifyNoMoreSplits();
  const c = collector();
  await drain(reader, c.output, () => (c.bySplit.get("as-1")?.length ?? 0) >= 1 && asked.includes(5));
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(reader.pollNext(c.output), "nothing", "only the awaiting partition has records: not 'more' (no busy loop)");
  assert.deepEqual(c.bySplit.get("as-0")!.map((x) => x.value), ["v0"], "v0 (sync) emitted; v1 awaits, and everything behind it");
  assert.deepEqual(reader.snapshotState(1).map((s) => [s.splitId, s.next]), [["as-0", 1], ["as-1", 1]], "the barrier does not pass a record fetched but not emitted");
  const available = reader.isAvailable();
  release();
  await available;
  assert.equal(await drain(reader, c.output, () => false), "end");
  assert.deepEqual(c.bySplit.get("as-0")!.map((x) => x.value), ["v0", "v1", "v2", "v4", "v5"]);
  assert.deepEqual(c.bad.map((b) => [b.position, (b.error as Error).message]), [[{ topic: "as", partition: 0, offset: 3 }, "no schema 3"]]);
  assert.deepEqual(reader.snapshotState(2).map((s) => [s.splitId, s.next]), [["as-0", 6], ["as-1", 1]]);
  reader.close!();

  // A rejection with an EddyError (the registry could not be asked) fails the reader: no bad record, nothing past it.
  const failing = KafkaSource.create<string>({ client: () => broker.client(), topics: ["as"], bounded: true, deserializer: async (r) => {
    if (r.offset === 2) throw new EddyError("SCHEMA_REGISTRY_FAILED", "registry down");
    return "ok";
  } });
  const r2 = failing.createReader(readerContext());
  r2.addSplits([{ v: 1, splitId: "as-0", topic: "as", partition: 0, next: 0, stop: 6 }]);
  const c2 = collector();
  await assert.rejects(drain(r2, c2.output, () => false), (e: unknown) => e instanceof EddyError && e.code === "SCHEMA_REGISTRY_FAILED");
  assert.deepEqual(c2.bySplit.get("as-0")!.map((x) => x.value), ["ok", "ok"]);
  assert.equal(c2.bad.length, 0);
  assert.deepEqual(r2.snapshotState(3).map((s) => s.next), [2], "the failed record is not consumed");
  r2.close!();
});

test("reader, watermark alignment per partition: a paused partition emits nothing and the others read on; resumed, it emits from where it stopped", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("w", 2);
  const producer = broker.client().producer({});
  await producer.send([rec("w", 0, "far0", 9_000), rec("w", 1, "near0", 100)]);
  const source = KafkaSource.create<string>({ client: () => broker.client(), topics: ["w"], deserializer: "string", partitionDiscoveryIntervalMs: 0, fetchMaxWaitMs: 20 });
  const reader = source.createReader(readerContext());
  reader.addSplits([0, 1].map((p) => ({ v: 1, splitId: `w-${p}`, topic: "w", partition: p, next: 0, stop: -1 })));
  const c = collector();
  const values = (split: string): unknown[] => (c.bySplit.get(split) ?? []).map((x) => x.value);
  await drain(reader, c.output, () => values("w-0").length + values("w-1").length >= 2);
  reader.pauseOrResumeSplits!(["w-0"], []);
  await producer.send([rec("w", 0, "far1", 9_100), rec("w", 1, "near1", 200), rec("w", 1, "near2", 300)]);
  await drain(reader, c.output, () => values("w-1").length >= 3);
  assert.deepEqual(values("w-1"), ["near0", "near1", "near2"], "the partition that is not paused reads on");
  // A few more rounds: the paused partition still emits nothing.
  for (let i = 0; i < 5; i++) {
    reader.pollNext(c.output);
    await Promise.race([reader.isAvailable(), new Promise((r) => setTimeout(r, 30))]);
  }
  assert.deepEqual(values("w-0"), ["far0"], "paused: nothing more of w-0");
  assert.deepEqual(reader.snapshotState(1).find((s) => s.splitId === "w-0")?.next, 1, "its position stays at the first record not emitted");
  reader.pauseOrResumeSplits!([], ["w-0"]);
  await drain(reader, c.output, () => values("w-0").length >= 2);
  assert.deepEqual(values("w-0"), ["far0", "far1"], "resumed, it emits from where it stopped");
  reader.close?.();
});
