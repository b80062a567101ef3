/**
 * Exactly-once by write-ahead (write-ahead.ts) driven by hand against the fake broker, as the sink
 * operator drives it: write*, prepareCommit(checkpointId) at a barrier, commit when the checkpoint
 * completes, the restored committables committed again by a new committer after a restore.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Committer, SinkContext, SinkWriter } from "eddy";
import { EddyError } from "eddy";
import { KafkaClientError, type KafkaClient } from "./client.ts";
import { FakeKafkaBroker, readCommitted } from "./fake-broker.ts";
import { KafkaSink, type KafkaSinkOptions } from "./kafka-sink.ts";
import { alreadyWritten, markerGroup, markerMetadata, MAX_ANCESTRY, readMarker } from "./write-ahead.ts";

const dec = new TextDecoder();

function contextOf(subtaskIndex: number, parallelism: number, restored?: { readonly checkpointId: number; readonly state: readonly unknown[] }): SinkContext {
  return {
    subtaskIndex,
    parallelism,
    ...(restored === undefined ? {} : { restoredCheckpointId: restored.checkpointId, restoredState: restored.state }),
    operatorName: "kafka-out",
    job: { jobName: "t", collect() {}, commitOnce() {}, writeStdout() {} },
    reportBadRecord(_value, cause) {
      throw cause;
    },
  };
}

function setup(options: Partial<KafkaSinkOptions<number>> = {}, client?: (broker: FakeKafkaBroker) => KafkaClient) {
  const broker = new FakeKafkaBroker();
  broker.createTopic("out", 3);
  const sink = KafkaSink.create<number>({ client: () => client?.(broker) ?? broker.client(), topic: "out", serializer: (n) => String(n), key: (n) => String(n % 7), delivery: "exactly-once", exactlyOnceMode: "write-ahead", transactionalIdPrefix: "wa", maxBatchSize: 4, ...options });
  /** What a read_committed reader sees, sorted. */
  const committed = async (): Promise<number[]> => (await readCommitted(broker, "out", (r) => Number(dec.decode(r.value!)))).flat().sort((a, b) => a - b);
  const marker = async (owner: number): Promise<number | undefined> => (await broker.client().committedOffsets(markerGroup("wa", owner), [{ topic: "out", partition: 0 }]))[0]?.offset;
  return { broker, sink, committed, marker };
}

interface Subtask {
  readonly writer: SinkWriter<number>;
  readonly committer: Committer<unknown>;
}

/** A subtask's writer and committer; `restored`: after a restore from that checkpoint, with the writer states it held. */
function open(sink: ReturnType<typeof setup>["sink"], subtask: number, parallelism: number, restored?: { readonly checkpointId: number; readonly state: readonly unknown[] }): Subtask {
  const context = contextOf(subtask, parallelism, restored);
  return { writer: sink.createWriter(context), committer: sink.createCommitter!(context) };
}

async function interval(s: Subtask, values: readonly number[], checkpointId: number): Promise<readonly unknown[]> {
  for (const v of values) await s.writer.write(v, 1000 + v);
  return s.writer.prepareCommit!(checkpointId);
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

test("write-ahead: nothing reaches Kafka before the checkpoint completes; then records and marker together; a repeated commit writes nothing", async () => {
  const { broker, sink, committed, marker } = setup();
  const s = open(sink, 0, 1);
  const cp1 = await interval(s, range(0, 10), 1);
  assert.equal(cp1.length, 1);
  assert.deepEqual(await broker.client().listOffsets([0, 1, 2].map((partition) => ({ topic: "out", partition })), "latest", "read_uncommitted"), [0, 0, 0], "nothing written, not even uncommitted");
  await s.committer.commit(cp1);
  assert.deepEqual(await committed(), range(0, 10));
  assert.equal(await marker(0), 1, "the marker names checkpoint 1");
  const cp2 = await interval(s, range(10, 15), 2);
  assert.deepEqual(await s.writer.prepareCommit!(3), [], "an empty interval has no committable");
  await s.committer.commit(cp2);
  // A restore from checkpoint 2 (which still held cp2, its commit not yet acknowledged): a new committer sees the marker.
  const restored = open(sink, 0, 1);
  await restored.committer.commit([...cp1, ...cp2]);
  assert.deepEqual(await committed(), range(0, 15), "no duplicates");
  assert.equal(await marker(0), 2);
  assert.deepEqual(broker.openTransactions(), []);
});

test("write-ahead: a commit that failed before its transaction committed is written by the restored committer; one that committed is not written again", async () => {
  // commitTransaction fails once, before reaching the broker (the transaction is aborted by the next init).
  let failCommit = false;
  const { broker, sink, committed, marker } = setup({}, (b) => {
    const c = b.client();
    return {
      ...c,
      partitionCount: (t) => c.partitionCount(t),
      committedOffsets: (g, p) => c.committedOffsets(g, p),
      producer: (o) => {
        const p = c.producer(o);
        return {
          initTransactions: () => p.initTransactions(),
          beginTransaction: () => p.beginTransaction(),
          send: (r) => p.send(r),
          sendOffsetsToTransaction: (offsets, g) => p.sendOffsetsToTransaction(offsets, g),
          abortTransaction: () => Promise.resolve(),
          close: () => p.close(),
          commitTransaction: () => (failCommit ? Promise.reject(new KafkaClientError("NETWORK", "lost")) : p.commitTransaction()),
        };
      },
    } as KafkaClient;
  });
  const s = open(sink, 0, 1);
  const cp1 = await interval(s, range(0, 8), 1);
  failCommit = true;
  await assert.rejects(Promise.resolve(s.committer.commit(cp1)), (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED" && /checkpoint 1's 8 records of subtask 0 through wa-0/.test(e.message));
  assert.deepEqual(await committed(), [], "the transaction did not commit");
  assert.equal(await marker(0), undefined, "nor did the marker");
  failCommit = false;
  // The job restarts from checkpoint 1: the new committer fences wa-0 (aborting what was left open) and writes cp1.
  const restored = open(sink, 0, 1);
  await restored.committer.commit(cp1);
  assert.deepEqual(await committed(), range(0, 8));
  assert.equal(await marker(0), 1);
  assert.deepEqual(broker.openTransactions(), []);
});

test("write-ahead: a restored committer fences the old one (a zombie), whose later writes fail; committables of several owners go through their owners' ids", async () => {
  const { broker, sink, committed, marker } = setup();
  const a = open(sink, 0, 2);
  const b = open(sink, 1, 2);
  const a1 = await interval(a, range(0, 6), 1);
  const b1 = await interval(b, range(100, 106), 1);
  await a.committer.commit(a1);
  const a2 = await interval(a, range(6, 9), 2);
  const b2 = await interval(b, range(106, 109), 2);
  // Rescale 2 → 1 after checkpoint 2 (b's commit of checkpoint 1 never happened): one committer gets both owners'.
  const merged = open(sink, 0, 1);
  await merged.committer.commit([...a1, ...b1, ...a2, ...b2]);
  assert.deepEqual(await committed(), [...range(0, 9), ...range(100, 109)]);
  assert.deepEqual([await marker(0), await marker(1)], [2, 2]);
  assert.deepEqual([...broker.transactionalIds().keys()].sort(), ["wa-0", "wa-1"], "one id per owner, whatever the checkpoints");
  // The old committer of subtask 0 still runs (a zombie): fenced by the merged committer's init.
  const a3 = await interval(a, [9], 3);
  await assert.rejects(Promise.resolve(a.committer.commit(a3)), (e: unknown) => e instanceof EddyError && /fenced/.test(e.message));
  assert.deepEqual(await committed(), [...range(0, 9), ...range(100, 109)]);
});

test("write-ahead: the interval's records are bounded by maxBufferedBytes (the writer fails); the end of input without checkpointing is written without a marker", async () => {
  const { sink, committed, marker } = setup({ maxBufferedBytes: 700 });
  const s = open(sink, 0, 1);
  assert.throws(() => {
    for (const v of range(0, 100)) void s.writer.write(v, undefined);
  }, (e: unknown) => e instanceof EddyError && e.code === "KAFKA_SINK_FAILED" && /maxBufferedBytes \(700\)/.test(e.message));
  const t = open(sink, 0, 1);
  for (const v of range(0, 5)) await t.writer.write(v, undefined);
  const last = await t.writer.prepareCommit!();
  await t.committer.commit(last);
  assert.deepEqual(await committed(), range(0, 5));
  assert.equal(await marker(0), undefined);
});

test("fake broker: offsets sent in a transaction are the group's once it commits, never if it aborts", async () => {
  const broker = new FakeKafkaBroker();
  broker.createTopic("t", 1);
  const c = broker.client();
  const p = c.producer({ transactionalId: "x" });
  await p.initTransactions();
  p.beginTransaction();
  await p.sendOffsetsToTransaction([{ topic: "t", partition: 0, offset: 42, metadata: "m42" }], "g");
  assert.deepEqual(await c.committedOffsets("g", [{ topic: "t", partition: 0 }]), [undefined], "not before the commit");
  await p.commitTransaction();
  assert.deepEqual(await c.committedOffsets("g", [{ topic: "t", partition: 0 }]), [{ offset: 42, metadata: "m42" }], "the offset with its metadata");
  p.beginTransaction();
  await p.sendOffsetsToTransaction([{ topic: "t", partition: 0, offset: 43 }], "g");
  await p.abortTransaction();
  assert.deepEqual(await c.committedOffsets("g", [{ topic: "t", partition: 0 }]), [{ offset: 42, metadata: "m42" }], "an aborted transaction's offsets are dropped");
  p.beginTransaction();
  await p.sendOffsetsToTransaction([{ topic: "t", partition: 0, offset: 44 }], "g");
  await c.producer({ transactionalId: "x" }).initTransactions();
  assert.deepEqual(await c.committedOffsets("g", [{ topic: "t", partition: 0 }]), [{ offset: 42, metadata: "m42" }], "nor those of a transaction a newer producer aborted");
  await assert.rejects(p.commitTransaction(), (e: unknown) => e instanceof KafkaClientError && e.code === "PRODUCER_FENCED");
});

/** What a writer keeps in checkpoint `checkpointId` (the sink operator calls snapshotState after prepareCommit). */
const writerState = async (s: Subtask, checkpointId: number): Promise<readonly unknown[]> => s.writer.snapshotState!(checkpointId);

test("write-ahead: after a restore from an older checkpoint (checkpoint ids go back), the new committables are written although the marker is past their ids", async () => {
  const { sink, committed, marker } = setup();
  const x = open(sink, 0, 1);
  let state2: readonly unknown[] = [];
  let cp2: readonly unknown[] = [];
  for (let c = 1; c <= 5; c++) {
    const cp = await interval(x, range(c * 10, c * 10 + 3), c);
    if (c === 2) [cp2, state2] = [cp, await writerState(x, 2)];
    await x.committer.commit(cp);
  }
  assert.equal(await marker(0), 5);
  // Restored from checkpoint 2 into a new checkpoint directory: ids continue at 3. Checkpoint 2 still held its committable.
  const y = open(sink, 0, 1, { checkpointId: 2, state: state2 });
  await y.committer.commit(cp2);
  const before = await committed();
  assert.deepEqual(before, [10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42, 50, 51, 52], "checkpoint 2's committable was written by the old run: skipped");
  const y3 = await interval(y, [1003, 1004], 3);
  await y.committer.commit(y3);
  const y4 = await interval(y, [1005], 4);
  await y.committer.commit(y4);
  assert.deepEqual(await committed(), [...before, 1003, 1004, 1005].sort((a, b) => a - b), "the new run's checkpoints 3 and 4 are written (the old marker said 5)");
  assert.equal(await marker(0), 4);
  // And a fresh job (no restore) with the same prefix: its checkpoint 1 is written too.
  const z = open(sink, 0, 1);
  await z.committer.commit(await interval(z, [7777], 1));
  assert.ok((await committed()).includes(7777));
});

test("write-ahead: a restored committable of an ancestor life is not written again when the marker is of a later life (commits that lagged behind a checkpoint)", async () => {
  const { sink, committed } = setup();
  const x = open(sink, 0, 1);
  const x1 = await interval(x, [1, 2], 1);
  await x.committer.commit(x1);
  const x2 = await interval(x, [3, 4], 2);
  const state2 = await writerState(x, 2);
  // x dies before committing checkpoint 2. Y restores from 2; its checkpoint 3 is taken while x2 is still pending.
  const y = open(sink, 0, 1, { checkpointId: 2, state: state2 });
  const y3 = await interval(y, [5, 6], 3);
  const state3 = await writerState(y, 3);
  await y.committer.commit([...x2, ...y3]);
  assert.deepEqual(await committed(), [1, 2, 3, 4, 5, 6]);
  // Z restores from checkpoint 3, which holds x2 and y3 (both written since): neither is written again.
  const z = open(sink, 0, 1, { checkpointId: 3, state: state3 });
  await z.committer.commit([...x2, ...y3]);
  assert.deepEqual(await committed(), [1, 2, 3, 4, 5, 6], "no duplicates");
  const z4 = await interval(z, [7], 4);
  await z.committer.commit(z4);
  assert.deepEqual(await committed(), [1, 2, 3, 4, 5, 6, 7]);
});

test("write-ahead: the marker's history (alreadyWritten, readMarker)", () => {
  const m = readMarker({ offset: 9, metadata: markerMetadata("b", [["a", 4], ["r", 2]]) });
  assert.deepEqual(m, { checkpointId: 9, life: "b", ancestry: [["a", 4], ["r", 2]] });
  assert.equal(alreadyWritten("b", 9, m), true);
  assert.equal(alreadyWritten("b", 10, m), false, "the marker's life past it");
  assert.equal(alreadyWritten("a", 4, m), true, "an ancestor up to where the history left it");
  assert.equal(alreadyWritten("a", 5, m), false, "an ancestor's discarded future");
  assert.equal(alreadyWritten("r", 1, m), true);
  assert.equal(alreadyWritten("c", 1, m), false, "another life (a restore from elsewhere, a fresh start)");
  assert.equal(alreadyWritten("b", 1, undefined), false, "no marker: nothing written");
  // A marker without Eddy's metadata (something else committed to the group): checkpoint ids compared.
  for (const metadata of ["", "other", "eddy-wa/1", "eddy-wa/1 b a:x"]) {
    const foreign = readMarker({ offset: 9, metadata });
    assert.equal(foreign?.life, undefined, metadata);
    assert.deepEqual([alreadyWritten("q", 9, foreign), alreadyWritten("q", 10, foreign)], [true, false]);
  }
});

test("write-ahead: a writer remembers at most MAX_ANCESTRY lives, nearest first; only the restored state of its own subtask", async () => {
  const { sink } = setup();
  let state = await writerState(open(sink, 0, 1), 1);
  const lives: string[] = [(state[0] as { life: string }).life];
  for (let i = 2; i <= MAX_ANCESTRY + 5; i++) {
    const s = open(sink, 0, 1, { checkpointId: i - 1, state });
    state = await writerState(s, i);
    lives.unshift((state[0] as { life: string }).life);
  }
  const { ancestry } = state[0] as { ancestry: readonly (readonly [string, number])[] };
  assert.equal(ancestry.length, MAX_ANCESTRY);
  assert.deepEqual(ancestry.map(([l]) => l), lives.slice(1, MAX_ANCESTRY + 1));
  assert.deepEqual(ancestry[0]![1], MAX_ANCESTRY + 4, "the nearest ancestor up to the restored checkpoint");
  assert.ok(markerMetadata("0123456789abcdef", ancestry.map(([, u]) => ["0123456789abcdef", u] as const)).length < 600);
  // Subtask 1 restored with subtask 0's state (a rescale dealt it there): no ancestry of another owner.
  const other = await writerState(open(sink, 1, 2, { checkpointId: 3, state }), 4);
  assert.deepEqual((other[0] as { ancestry: unknown[] }).ancestry, []);
});
