/**
 * KafkaSink's writers and committers driven by hand against the in-memory fake broker, as the sink
 * operator drives them (write*, prepareCommit and snapshotState at a barrier, commit when the
 * checkpoint completes; a restore hands the writer states and committables to the new subtasks,
 * divided round robin at another parallelism): pre-commit and commit, abort on restore, zombie
 * fencing, rescales down and up, at-least-once acknowledgement at the barrier, options.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Committer, SinkContext, SinkWriter } from "eddy";
import { EddyError } from "eddy";
import { KafkaClientError } from "./client.ts";
import { FakeKafkaBroker, readCommitted } from "./fake-broker.ts";
import { KafkaSink, type KafkaSinkOptions } from "./kafka-sink.ts";
import { schemaRegistry } from "./schema-registry.ts";

const dec = new TextDecoder();

function contextOf(subtaskIndex: number, parallelism: number, restore?: { state: readonly unknown[]; checkpointId: number }): SinkContext {
  return {
    subtaskIndex,
    parallelism,
    operatorName: "kafka-out",
    job: { jobName: "t", collect() {}, commitOnce() {}, writeStdout() {} },
    restoredState: restore?.state,
    restoredCheckpointId: restore?.checkpointId,
    reportBadRecord(_value, cause) {
      throw cause;
    },
  };
}

function setup(options: Partial<KafkaSinkOptions<number>> = {}) {
  const broker = new FakeKafkaBroker();
  broker.createTopic("out", 3);
  const sink = KafkaSink.create<number>({ client: () => broker.client(), topic: "out", serializer: (n) => String(n), key: (n) => String(n % 7), delivery: "exactly-once", transactionalIdPrefix: "job-a", lingerMs: 0, maxBatchSize: 4, ...options });
  /** What a read_committed reader sees, sorted. */
  const committed = async (): Promise<number[]> => (await readCommitted(broker, "out", (r) => Number(dec.decode(r.value!)))).flat().sort((a, b) => a - b);
  return { broker, sink, committed };
}

/** One subtask's writer and committer, with what its barriers produced. */
interface Subtask {
  readonly writer: SinkWriter<number>;
  readonly committer: Committer<unknown>;
}

function open(sink: ReturnType<typeof setup>["sink"], subtask: number, parallelism: number, restore?: { state: readonly unknown[]; checkpointId: number }): Subtask {
  const context = contextOf(subtask, parallelism, restore);
  return { writer: sink.createWriter(context), committer: sink.createCommitter!(context) };
}

async function writeAll(writer: SinkWriter<number>, values: Iterable<number>): Promise<void> {
  for (const v of values) await writer.write(v, 1000 + v);
}

/** A barrier: prepareCommit then snapshotState, as the sink operator calls them. */
async function barrier(s: Subtask, checkpointId: number): Promise<{ committables: readonly unknown[]; state: readonly unknown[] }> {
  const committables = await s.writer.prepareCommit!();
  const state = await s.writer.snapshotState!(checkpointId);
  return { committables, state };
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

test("exactly-once: records are invisible until the checkpoint's commit; a commit repeated after a restore changes nothing", async () => {
  const { broker, sink, committed } = setup();
  const s = open(sink, 0, 1);
  await writeAll(s.writer, range(0, 10));
  const cp1 = await barrier(s, 1);
  assert.equal(cp1.committables.length, 1);
  assert.deepEqual(await committed(), [], "pre-committed, not visible");
  await s.committer.commit(cp1.committables);
  assert.deepEqual(await committed(), range(0, 10));
  await s.committer.commit(cp1.committables);
  assert.deepEqual(await committed(), range(0, 10), "the repeated commit added nothing");
  // An interval without records opens no transaction and hands over nothing.
  assert.deepEqual((await barrier(s, 2)).committables, []);
  assert.deepEqual(broker.openTransactions(), []);
  await s.writer.close!();
});

test("exactly-once: a restore aborts what the checkpoint does not hold, fences the old writer (a zombie) and commits what it holds", async () => {
  const { broker, sink, committed } = setup();
  const old = open(sink, 0, 1);
  await writeAll(old.writer, range(0, 10));
  const cp1 = await barrier(old, 1);
  // After the barrier: the next transaction, not in checkpoint 1; then the job fails before checkpoint 1 completes.
  await writeAll(old.writer, range(100, 110));
  await old.writer.flush!(false);
  assert.equal(broker.openTransactions().length, 2, "checkpoint 1's (pre-committed) and the open one");
  // Restore from checkpoint 1: the writer aborts the open one; the committer commits checkpoint 1's.
  const restored = open(sink, 0, 1, { state: cp1.state, checkpointId: 1 });
  await restored.committer.commit(cp1.committables);
  await writeAll(restored.writer, range(200, 205));
  await restored.writer.flush!(false);
  assert.deepEqual(broker.openTransactions().length, 1, "only the restored writer's own transaction is open");
  // The zombie is fenced: its next send fails.
  await assert.rejects(
    (async () => {
      await writeAll(old.writer, range(300, 310));
      await old.writer.flush!(false);
    })(),
    (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED" && /fenced/.test(e.message),
  );
  const cp2 = await barrier(restored, 2);
  await restored.committer.commit(cp2.committables);
  assert.deepEqual(await committed(), [...range(0, 10), ...range(200, 205)]);
  assert.deepEqual(broker.openTransactions(), []);
});

for (const [from, to] of [
  [3, 2],
  [2, 3],
  [3, 1],
] as const) {
  test(`exactly-once: rescale ${from} → ${to}: every transaction the checkpoint does not hold is aborted, every one it holds is committed once`, async () => {
    const { broker, sink, committed } = setup();
    const olds = range(0, from).map((i) => open(sink, i, from));
    const expected: number[] = [];
    for (const [i, s] of olds.entries()) {
      await writeAll(s.writer, range(i * 1000, i * 1000 + 20));
      expected.push(...range(i * 1000, i * 1000 + 20));
    }
    const cp = await Promise.all(olds.map((s) => barrier(s, 7)));
    // Past the barrier: open transactions the checkpoint does not hold.
    for (const [i, s] of olds.entries()) {
      await writeAll(s.writer, range(i * 1000 + 500, i * 1000 + 510));
      await s.writer.flush!(false);
    }
    // Divided as the runtime divides split state: entry k of the old subtasks' concatenation to new subtask k mod `to`.
    const states = cp.flatMap((c) => c.state);
    const committables = cp.flatMap((c) => c.committables);
    const news = range(0, to).map((i) =>
      open(sink, i, to, {
        state: states.filter((_, k) => k % to === i),
        checkpointId: 7,
      }),
    );
    for (const [i, s] of news.entries()) await s.committer.commit(committables.filter((_, k) => k % to === i));
    for (const [i, s] of news.entries()) {
      await writeAll(s.writer, range(50_000 + i * 100, 50_000 + i * 100 + 5));
      expected.push(...range(50_000 + i * 100, 50_000 + i * 100 + 5));
    }
    const cp8 = await Promise.all(news.map((s) => barrier(s, 8)));
    for (const [i, s] of news.entries()) await s.committer.commit(cp8[i]!.committables);
    assert.deepEqual(broker.openTransactions(), []);
    assert.deepEqual(await committed(), expected.sort((a, b) => a - b));
  });
}

test("exactly-once: a restore at a lower parallelism aborts what an earlier attempt after the same restore left at a higher one", async () => {
  const { broker, sink, committed } = setup();
  const first = range(0, 2).map((i) => open(sink, i, 2));
  await writeAll(first[0]!.writer, [1, 2]);
  await writeAll(first[1]!.writer, [3, 4]);
  const cp = await Promise.all(first.map((s) => barrier(s, 5)));
  // Attempt 1 after restoring checkpoint 5, at parallelism 3: subtask 2 opens a transaction; all crash.
  const attempt1 = range(0, 3).map((i) => open(sink, i, 3, { state: cp.flatMap((c) => c.state).filter((_, k) => k % 3 === i), checkpointId: 5 }));
  for (const s of attempt1) {
    await writeAll(s.writer, [900, 901]);
    await s.writer.flush!(false);
  }
  // Attempt 2 restores checkpoint 5 at parallelism 1.
  const attempt2 = open(sink, 0, 1, { state: cp.flatMap((c) => c.state), checkpointId: 5 });
  await attempt2.committer.commit(cp.flatMap((c) => c.committables));
  await attempt2.writer.flush!(false);
  assert.deepEqual(broker.openTransactions(), [], "subtasks 1 and 2 of attempt 1 were found through subtask 0 + parallelism");
  assert.deepEqual(await committed(), [1, 2, 3, 4]);
});

test("exactly-once: a transaction the broker aborted (its timeout passed) fails the commit with KAFKA_TRANSACTION_LOST", async () => {
  let now = 0;
  const broker = new FakeKafkaBroker({ now: () => now });
  broker.createTopic("out", 1);
  const sink = KafkaSink.create<number>({ client: () => broker.client(), topic: "out", serializer: "json", delivery: "exactly-once", transactionalIdPrefix: "p", transactionTimeoutMs: 1000, lingerMs: 0 });
  const s = open(sink as never, 0, 1);
  await writeAll(s.writer, [1]);
  const { committables } = await barrier(s, 1);
  now += 1000;
  await assert.rejects(Promise.resolve(s.committer.commit(committables)), (e: unknown) => e instanceof EddyError && e.code === "KAFKA_TRANSACTION_LOST" && /aborted/.test(e.message));
});

test("at-least-once: the barrier's snapshot resolves only once every record written before it is acknowledged", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("out", 2);
  let release: (() => void) | undefined;
  const gate = new Promise<void>((r) => (release = r));
  const acked: number[] = [];
  const client = () => {
    const c = broker.client();
    return {
      ...c,
      partitionCount: (t: string) => c.partitionCount(t),
      producer: (o: object) => {
        const p = c.producer(o);
        return { ...p, send: async (records: Parameters<typeof p.send>[0]) => (await gate, acked.push(records.length), p.send(records)) };
      },
    } as ReturnType<typeof broker.client>;
  };
  const sink = KafkaSink.create<string>({ client, topic: "out", serializer: "string", delivery: "at-least-once", lingerMs: 0 });
  const writer = sink.createWriter(contextOf(0, 1));
  for (const v of ["a", "b", "c"]) await writer.write(v, undefined);
  let snapshotted = false;
  const snap = Promise.resolve(writer.snapshotState!(1)).then(() => (snapshotted = true));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(snapshotted, false, "the snapshot waits for the acknowledgements");
  release!();
  await snap;
  assert.equal(acked.reduce((a, b) => a + b, 0), 3);
});

test("options: clear INVALID_KAFKA_OPTIONS errors; a record the serializer refuses goes to the error policy", async () => {
  const broker = new FakeKafkaBroker();
  const base = { client: () => broker.client(), serializer: "json" as const };
  const bad: [Partial<KafkaSinkOptions<unknown>>, RegExp][] = [
    [{}, /exactly one of `topic` and `topicSelector`/],
    [{ topic: "a", topicSelector: () => "b" }, /exactly one/],
    [{ topic: "bad topic" }, /not a valid topic name/],
    [{ topic: "a", delivery: "twice" as never }, /`delivery` must be/],
    [{ topic: "a", delivery: "exactly-once" }, /needs a `transactionalIdPrefix`/],
    [{ topic: "a", maxBatchSize: 0 }, /maxBatchSize/],
    [{ topic: "a", client: undefined as never }, /`bootstrapServers` .* is required \(or `client`/],
    [{ topic: "a", client: 5 as never }, /`client` must be a function/],
    [{ topic: "a", bootstrapServers: "127.0.0.1:9092" }, /not both/],
    [{ topic: "a", client: undefined as never, bootstrapServers: "127.0.0.1:9092", delivery: "exactly-once", exactlyOnceMode: "two-phase", transactionalIdPrefix: "p" }, /"two-phase" is not available with the Confluent client/],
    [{ topic: "a", delivery: "exactly-once", exactlyOnceMode: "later" as never, transactionalIdPrefix: "p" }, /`exactlyOnceMode` must be/],
    [{ topic: undefined, topicSelector: () => "b", delivery: "exactly-once", exactlyOnceMode: "write-ahead", transactionalIdPrefix: "p" }, /needs a `markerTopic`/],
    [{ topic: "a", delivery: "exactly-once", exactlyOnceMode: "write-ahead", transactionalIdPrefix: "p", maxBufferedBytes: 0 }, /maxBufferedBytes/],
    [{ topic: "a", client: undefined as never, bootstrapServers: " " }, /must name at least one host:port/],
  ];
  for (const [o, message] of bad) {
    assert.throws(() => KafkaSink.create({ ...base, ...o }), (e: unknown) => e instanceof EddyError && e.code === "INVALID_KAFKA_OPTIONS" && message.test(e.message), JSON.stringify(o));
  }
  broker.createTopic("a", 1);
  const reported: unknown[] = [];
  const sink = KafkaSink.create<unknown>({ ...base, topic: "a", lingerMs: 0 });
  const writer = sink.createWriter({ ...contextOf(0, 1), reportBadRecord: (value) => void reported.push(value) });
  await writer.write(1n, undefined);
  await writer.write({ ok: true }, undefined);
  await writer.flush!(true);
  assert.deepEqual(reported, [1n]);
  const [r] = await broker.client().fetch([{ topic: "a", partition: 0, offset: 0 }], { isolation: "read_committed", maxRecords: 10, maxWaitMs: 0 });
  assert.deepEqual(r!.records.map((x) => dec.decode(x.value!)), ['{"ok":true}']);
});

test("producer errors: at-least-once resends a batch after a retryable error (up to maxSendAttempts), fails at once on any other; exactly-once never resends", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("out", 1);
  /** A client whose sends fail with `error` while `failing()` says so, counting every send. */
  const flaky = (failing: () => boolean, error: () => Error) => {
    let sends = 0;
    const client = () => {
      const c = broker.client();
      return {
        ...c,
        partitionCount: (t: string) => c.partitionCount(t),
        commitTransaction: (h: Parameters<typeof c.commitTransaction>[0]) => c.commitTransaction(h),
        producer: (o: Parameters<typeof c.producer>[0]) => {
          const p = c.producer(o);
          return {
            initTransactions: () => p.initTransactions(),
            beginTransaction: () => p.beginTransaction(),
            commitTransaction: () => p.commitTransaction(),
            abortTransaction: () => p.abortTransaction(),
            close: () => p.close(),
            send: async (records: Parameters<typeof p.send>[0]) => {
              sends++;
              if (failing()) throw error();
              return p.send(records);
            },
          };
        },
      } as ReturnType<typeof broker.client>;
    };
    return { client, sends: () => sends };
  };
  const network = () => new KafkaClientError("NETWORK", "the broker did not answer");
  let failures = 2;
  const twice = flaky(() => failures-- > 0, network);
  const alo = KafkaSink.create<string>({ client: twice.client, topic: "out", serializer: "string", lingerMs: 0, maxBatchSize: 10 });
  const w1 = alo.createWriter(contextOf(0, 1));
  await w1.write("a", undefined);
  await w1.flush!(true);
  assert.equal(twice.sends(), 3, "two failed sends, then the one that went through");
  const [r] = await broker.client().fetch([{ topic: "out", partition: 0, offset: 0 }], { isolation: "read_committed", maxRecords: 10, maxWaitMs: 0 });
  assert.deepEqual(r!.records.map((x) => dec.decode(x.value!)), ["a"]);

  const always = flaky(() => true, network);
  const w2 = KafkaSink.create<string>({ client: always.client, topic: "out", serializer: "string", lingerMs: 0, maxSendAttempts: 3 }).createWriter(contextOf(0, 1));
  await w2.write("b", undefined);
  await assert.rejects(Promise.resolve(w2.flush!(true)), (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED" && /in 3 attempts/.test(e.message));
  assert.equal(always.sends(), 3);

  const fatal = flaky(() => true, () => new KafkaClientError("UNKNOWN_TOPIC", "no such topic"));
  const w3 = KafkaSink.create<string>({ client: fatal.client, topic: "out", serializer: "string", lingerMs: 0 }).createWriter(contextOf(0, 1));
  await w3.write("c", undefined);
  await assert.rejects(Promise.resolve(w3.flush!(true)), (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED" && /no such topic/.test(e.message));
  assert.equal(fatal.sends(), 1, "a fatal error is not retried");

  let eoFailures = 1;
  const once = flaky(() => eoFailures-- > 0, network);
  const w4 = KafkaSink.create<string>({ client: once.client, topic: "out", serializer: "string", lingerMs: 0, delivery: "exactly-once", transactionalIdPrefix: "eo" }).createWriter(contextOf(0, 1));
  await w4.write("d", undefined);
  await assert.rejects(Promise.resolve(w4.flush!(true)), (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED");
  assert.equal(once.sends(), 1, "exactly-once does not resend within a transaction");
});

test("exactly-once: a writer whose abort-on-start fails (the topic's broker is gone) rejects its next call with KAFKA_SINK_FAILED naming the step", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("out", 1);
  const sink = KafkaSink.create<number>({
    client: () => ({ ...broker.client(), producer: () => ({ initTransactions: () => Promise.reject(new KafkaClientError("NETWORK", "no broker")) }) as never }),
    topic: "out",
    serializer: "json",
    delivery: "exactly-once",
    transactionalIdPrefix: "gone",
    lingerMs: 0,
  });
  const writer = sink.createWriter(contextOf(0, 1));
  await assert.rejects(Promise.resolve(writer.flush!(false)), (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED" && /abort the transactions/.test(e.message) && /no broker/.test(e.message));
});

test("exactly-once is refused with a client whose transactions do not survive a restart (the Confluent client): KAFKA_SINK_FAILED before anything is written; at-least-once runs", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("out", 1);
  const client = () => Object.defineProperty(broker.client(), "transactionsSurviveRestart", { value: false });
  const eo = KafkaSink.create<number>({ client, topic: "out", serializer: "json", delivery: "exactly-once", transactionalIdPrefix: "no-resume", lingerMs: 0 });
  assert.throws(() => eo.createWriter(contextOf(0, 1)), (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED" && /transactionsSurviveRestart/.test(e.message));
  const alo = KafkaSink.create<number>({ client, topic: "out", serializer: "json", lingerMs: 0 }).createWriter(contextOf(0, 1));
  await alo.write(7, undefined);
  await alo.flush!(true);
  const [r] = await broker.client().fetch([{ topic: "out", partition: 0, offset: 0 }], { isolation: "read_committed", maxRecords: 10, maxWaitMs: 0 });
  assert.deepEqual(r!.records.map((x) => new TextDecoder().decode(x.value!)), ["7"]);
});

test("async serializers (value and key): records keep their write order in every writer; a rejection goes to reportBadRecord; an EddyError rejection (the registry) fails the write; a registry serde without a schema is refused when the sink is built", async () => {
  const later = <R>(x: R, ms: number): Promise<R> => new Promise((r) => setTimeout(() => r(x), ms));
  for (const delivery of [{ delivery: "at-least-once" }, { delivery: "exactly-once", exactlyOnceMode: "write-ahead", transactionalIdPrefix: "wa" }, { delivery: "exactly-once", exactlyOnceMode: "two-phase", transactionalIdPrefix: "tp" }] as const) {
    const broker = new FakeKafkaBroker();
    broker.createTopic("a", 1);
    const reported: unknown[] = [];
    // Later values settle sooner (a slow first lookup, then the cache): the order is the writes'.
    const sink = KafkaSink.create<number>({
      client: () => broker.client(),
      topic: "a",
      lingerMs: 0,
      ...delivery,
      serializer: (n) => (n === 3 ? Promise.reject(new RangeError("3 does not fit the schema")) : later(String(n), 10 - n)),
      key: (n) => later(`k${n}`, n % 2),
    });
    const context = { ...contextOf(0, 1), reportBadRecord: (value: unknown) => void reported.push(value) };
    const writer = sink.createWriter(context);
    for (let n = 0; n < 8; n++) await writer.write(n, undefined);
    await writer.flush?.(true);
    const committables = await writer.prepareCommit?.(1);
    await writer.snapshotState?.(1);
    if (committables !== undefined && committables.length > 0) await sink.createCommitter!(context).commit(committables);
    assert.deepEqual(reported, [3], delivery.delivery);
    const [r] = await broker.client().fetch([{ topic: "a", partition: 0, offset: 0 }], { isolation: "read_committed", maxRecords: 100, maxWaitMs: 0 });
    assert.deepEqual(r!.records.map((x) => `${dec.decode(x.key!)}=${dec.decode(x.value!)}`), ["k0=0", "k1=1", "k2=2", "k4=4", "k5=5", "k6=6", "k7=7"], JSON.stringify(delivery));
    await writer.close?.();
  }

  const broker = new FakeKafkaBroker();
  broker.createTopic("a", 1);
  const failing = KafkaSink.create<number>({ client: () => broker.client(), topic: "a", delivery: "at-least-once", serializer: async () => {
    throw new EddyError("SCHEMA_REGISTRY_FAILED", "the registry did not answer");
  } });
  const reported: unknown[] = [];
  const w = failing.createWriter({ ...contextOf(0, 1), reportBadRecord: (value) => void reported.push(value) });
  await assert.rejects(Promise.resolve(w.write(1, undefined)), (e: unknown) => e instanceof EddyError && e.code === "SCHEMA_REGISTRY_FAILED");
  assert.deepEqual(reported, []);
  await w.close?.();

  assert.throws(() => KafkaSink.create({ client: () => broker.client(), topic: "a", serializer: schemaRegistry.avro({ url: "http://127.0.0.1:1" }) }), (e: unknown) => e instanceof EddyError && e.code === "INVALID_KAFKA_OPTIONS" && /needs `schema`/.test(e.message));
});
