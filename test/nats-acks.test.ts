/**
 * NatsSource with `acknowledge` (durable consumers, messages acknowledged when the checkpoint that
 * covers them completes) against a real nats-server (test/nats-server.ts starts one for this
 * file), driven by hand:
 * - nothing is acknowledged before a checkpoint completes, and then exactly up to the position
 *   that checkpoint recorded: the consumer's ack floor on the server, and on a work-queue stream
 *   the messages it still holds;
 * - a restore from the latest checkpoint emits exactly the rest, on work-queue, interest and
 *   limits streams (the consumer is replaced at the position without losing messages);
 * - a restore from an older checkpoint whose messages were acknowledged since fails with
 *   NATS_POSITION_GONE (unfiltered and per subject filter, on a work queue; on an interest stream
 *   after a later restore replaced the consumer);
 * - a bounded job over a work queue leaves it empty (its final checkpoint's acknowledgements);
 * - deliveries that never reach the reader (taken here by another client pulling from its
 *   consumer, as a dropped connection loses those in flight) are read again, not skipped.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { defineJob, EddyError, WatermarkStrategy, type SourceReader } from "eddy";
import { NatsSource, type NatsSplit } from "eddy/nats";
import { jetstream } from "@nats-io/jetstream";
import { natsAdmin, natsForTests, until } from "./nats-client.ts";
import { readerOutputOf, runJob } from "eddy/testing";
import { drive, openReader, splitsOf } from "./source-driver.ts";

const nats = natsForTests();

const numbers = (from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));

/** The stream's consumers: name → ack floor (stream sequence), unacknowledged deliveries, and pending messages. */
async function consumers(stream: string): Promise<Map<string, { floor: number; ackPending: number; pending: number }>> {
  const out = new Map<string, { floor: number; ackPending: number; pending: number }>();
  for await (const c of await nats.admin.jsm.consumers.list(stream)) out.set(c.name, { floor: c.ack_floor.stream_seq, ackPending: c.num_ack_pending, pending: c.num_pending });
  return out;
}

const copy = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

/** Polls `reader` (which opens its splits' consumers when polled) until the stream has `n` consumers; nothing is published yet. */
async function openConsumers(reader: SourceReader<string, NatsSplit>, stream: string, n: number): Promise<void> {
  const none = readerOutputOf<string>({ collect: (v) => assert.fail(`nothing published yet: ${v}`), reportBadRecord: () => assert.fail("bad record") });
  await until("the consumers exist", async () => (reader.pollNext(none), (await consumers(stream)).size === n));
}

/**
 * Reads 500 messages, checkpoint `old`; 500 more, checkpoint `latest`, which completes; waits
 * until the stream (work queue or interest) removed the acknowledged messages of its `total`.
 */
async function twoCheckpoints(reader: SourceReader<string, NatsSplit>, stream: string, total: number): Promise<{ old: NatsSplit[]; latest: NatsSplit[] }> {
  await drive(reader, 500);
  const old = copy(reader.snapshotState(1));
  await drive(reader, 500);
  const latest = copy(reader.snapshotState(2));
  reader.notifyCheckpointComplete!(2);
  await until("the stream removed the acknowledged messages", async () => (await nats.admin.count(stream)) === total - (latest[0]!.next - 1));
  return { old, latest };
}

for (const retention of ["limits", "workqueue"] as const) {
  test(`${retention} stream: acknowledgements land only when a checkpoint completes, and exactly up to the position it recorded (the consumer's ack floor${retention === "workqueue" ? ", the messages the stream still holds" : ""})`, async () => {
    const stream = `ACK_${retention.toUpperCase()}`;
    await nats.admin.addStream(stream, [stream.toLowerCase()], { retention });
    await nats.admin.publishAll(stream.toLowerCase(), numbers(1, 5_000));
    const source = NatsSource.string({ connection: { servers: nats.server.url }, stream, acknowledge: { consumer: `job_${retention}` }, fetchMessages: 200 });
    const reader = openReader(source, splitsOf(source));
    try {
      const first = await drive(reader, 1_000);
      const [c1] = reader.snapshotState(1);
      const p1 = c1!.next;
      assert.equal(p1, first.values.length + 1, "the position: the next unemitted sequence");
      // Emitted past the barrier, before the checkpoint completes.
      const second = await drive(reader, 1_500);
      const p2 = p1 + second.values.length;
      let state = await consumers(stream);
      assert.deepEqual([...state.keys()], [`job_${retention}`]);
      assert.equal(state.get(`job_${retention}`)!.floor, 0, "nothing acknowledged before a checkpoint completes");
      assert.ok(state.get(`job_${retention}`)!.ackPending >= p2 - 1, "the lag is visible on the server: delivered, unacknowledged");
      if (retention === "workqueue") assert.equal(await nats.admin.count(stream), 5_000);

      reader.notifyCheckpointComplete!(1);
      await until(`the ack floor at ${p1 - 1}`, async () => (await consumers(stream)).get(`job_${retention}`)!.floor >= p1 - 1);
      // A request on the reader's server after its acknowledgements: none past the position arrives later.
      const [c2] = reader.snapshotState(2);
      assert.equal(c2!.next, p2);
      state = await consumers(stream);
      assert.equal(state.get(`job_${retention}`)!.floor, p1 - 1, "acknowledged up to the checkpoint's position, not past it");
      if (retention === "workqueue") assert.equal(await nats.admin.count(stream), 5_000 - (p1 - 1), "the work queue removed exactly the acknowledged messages");

      reader.notifyCheckpointComplete!(2);
      await until(`the ack floor at ${p2 - 1}`, async () => (await consumers(stream)).get(`job_${retention}`)!.floor >= p2 - 1);
      assert.equal((await consumers(stream)).get(`job_${retention}`)!.floor, p2 - 1);
      if (retention === "workqueue") assert.equal(await nats.admin.count(stream), 5_000 - (p2 - 1));
      assert.deepEqual([...first.values, ...second.values], numbers(1, p2 - 1));
    } finally {
      reader.close?.();
    }
  });
}

for (const retention of ["workqueue", "interest", "limits"] as const) {
  test(`${retention} stream, two subject filters: a reader restored from the latest completed checkpoint emits exactly the rest; the consumers are replaced at the position without losing a message`, async () => {
    const stream = `RESTORE_${retention.toUpperCase()}`;
    const subject = (i: number) => `${stream.toLowerCase()}.${i % 3 === 0 ? "a" : "b"}`;
    await nats.admin.addStream(stream, [`${stream.toLowerCase()}.>`], { retention });
    const source = NatsSource.string({ connection: { servers: nats.server.url }, stream, subjects: [`${stream.toLowerCase()}.a`, `${stream.toLowerCase()}.b`], acknowledge: { consumer: "job" }, fetchMessages: 100 });
    const splits = splitsOf(source);
    const reader = openReader(source, splits);
    let checkpoint: NatsSplit[];
    let firstValues: string[];
    try {
      // An interest stream keeps messages only while a consumer exists: the reader's first.
      await openConsumers(reader, stream, 2);
      await nats.admin.publishAll(subject, numbers(1, 3_000));
      firstValues = (await drive(reader, 1_200)).values;
      checkpoint = copy(reader.snapshotState(1));
      reader.notifyCheckpointComplete!(1);
      // Read on past the checkpoint: lost with the failure, read again after the restore.
      await drive(reader, 500);
      await until("the acknowledgements of checkpoint 1", async () => [...(await consumers(stream)).values()].every((c) => c.floor > 0));
    } finally {
      reader.close?.();
    }
    const restored = openReader(source, checkpoint);
    try {
      const rest = await drive(restored, 3_000 - firstValues.length);
      const all = [...firstValues, ...rest.values].map(Number);
      assert.equal(all.length, 3_000, "every message once over both readers");
      assert.deepEqual([...all].sort((a, b) => a - b), numbers(1, 3_000).map(Number));
      // Published after the restore: read too (the consumers are live).
      await nats.admin.publishAll(subject, numbers(3_001, 3_010));
      const late = await drive(restored, 10);
      assert.deepEqual(late.values.map(Number).sort((a, b) => a - b), numbers(3_001, 3_010).map(Number));
      const names = [...(await consumers(stream)).keys()];
      assert.equal(names.length, 2, `one consumer per split: ${names.join(", ")}`);
    } finally {
      restored.close?.();
    }
  });
}

for (const filtered of [false, true]) {
  test(`work-queue stream${filtered ? ", a subject filter" : ""}: a restore from a checkpoint older than the acknowledged position fails with NATS_POSITION_GONE; from the latest it reads on`, async () => {
    const stream = filtered ? "GONE_FILTERED" : "GONE";
    const subjects = filtered ? [`${stream.toLowerCase()}.x`] : undefined;
    await nats.admin.addStream(stream, [`${stream.toLowerCase()}.>`], { retention: "workqueue" });
    await nats.admin.publishAll(`${stream.toLowerCase()}.x`, numbers(1, 2_000));
    const source = NatsSource.string({ connection: { servers: nats.server.url }, stream, subjects, acknowledge: { consumer: "job" }, fetchMessages: 100 });
    const reader = openReader(source, splitsOf(source));
    let old: NatsSplit[];
    let latest: NatsSplit[];
    try {
      ({ old, latest } = await twoCheckpoints(reader, stream, 2_000));
    } finally {
      reader.close?.();
    }
    assert.ok(old[0]!.delivered !== undefined && old[0]!.delivered.seq > 0, "the checkpoint holds the delivery of the split's last emitted message");
    const tooOld = openReader(source, old);
    try {
      await assert.rejects(drive(tooOld), (e: unknown) => {
        assert.ok(e instanceof EddyError, String(e));
        assert.equal(e.code, "NATS_POSITION_GONE");
        assert.match(e.message, new RegExp(`restored position \\(sequence ${old[0]!.next}\\) is no longer in the workqueue stream`));
        return true;
      });
    } finally {
      tooOld.close?.();
    }
    const fine = openReader(source, latest);
    try {
      const rest = await drive(fine, 2_000 - (latest[0]!.next - 1));
      assert.deepEqual(rest.values, numbers(latest[0]!.next, 2_000));
    } finally {
      fine.close?.();
    }
  });
}

test("acknowledge: a consumer name that is not one fails the build with INVALID_NATS_OPTIONS; a work-queue stream refuses a start other than 'all'", async () => {
  assert.throws(() => NatsSource.string({ connection: { servers: nats.server.url }, stream: "X", acknowledge: { consumer: "a.b" } }), (e: unknown) => e instanceof EddyError && e.code === "INVALID_NATS_OPTIONS" && /acknowledge must be/.test(e.message));
  await nats.admin.addStream("WQ_START", ["wq_start"], { retention: "workqueue" });
  const source = NatsSource.string({ connection: { servers: nats.server.url }, stream: "WQ_START", start: "new", acknowledge: { consumer: "job" } });
  const reader = openReader(source, splitsOf(source));
  try {
    await assert.rejects(drive(reader), (e: unknown) => e instanceof EddyError && e.code === "INVALID_NATS_OPTIONS" && /start must be "all"/.test(e.message));
  } finally {
    reader.close?.();
  }
});

test("a bounded job over a work-queue stream: the acknowledgements of its final checkpoint land (flushed as the reader closes), and the work queue ends empty", async () => {
  await nats.admin.addStream("WQ_JOB", ["wq_job"], { retention: "workqueue" });
  await nats.admin.publishAll("wq_job", numbers(1, 50_000));
  let counted = 0;
  const job = defineJob("nats-wq-job", (env) => {
    env
      .fromSource(NatsSource.string({ connection: { servers: nats.server.url }, stream: "WQ_JOB", bounded: true, acknowledge: { consumer: "wq-job" } }), WatermarkStrategy.noWatermarks(), "wq")
      .sinkTo({ createWriter: () => ({ write: () => void counted++ }) });
  });
  await runJob(job, { mode: "inline", checkpointing: { intervalMs: 1_000 }, logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } }).done;
  assert.equal(counted, 50_000);
  await until("the work queue empty after the job", async () => (await nats.admin.count("WQ_JOB")) === 0);
});

test("interest stream, a subject filter: a restore from a checkpoint older than a later restore's (whose consumer replaced the split's at its position) fails with NATS_POSITION_GONE", async () => {
  const stream = "GONE_INTEREST";
  await nats.admin.addStream(stream, ["gone_interest.>"], { retention: "interest" });
  const source = NatsSource.string({ connection: { servers: nats.server.url }, stream, subjects: ["gone_interest.x"], acknowledge: { consumer: "job" }, fetchMessages: 100 });
  const first = openReader(source, splitsOf(source));
  let old: NatsSplit[];
  let latest: NatsSplit[];
  try {
    await openConsumers(first, stream, 1);
    await nats.admin.publishAll("gone_interest.x", numbers(1, 2_000));
    ({ old, latest } = await twoCheckpoints(first, stream, 2_000));
  } finally {
    first.close?.();
  }
  // Restored from the latest checkpoint: a new consumer at its position replaces the first one.
  const second = openReader(source, latest);
  try {
    await drive(second, 100);
  } finally {
    second.close?.();
  }
  const tooOld = openReader(source, old);
  try {
    await assert.rejects(drive(tooOld), (e: unknown) => e instanceof EddyError && e.code === "NATS_POSITION_GONE" && /consumer was replaced since at sequence/.test(e.message));
  } finally {
    tooOld.close?.();
  }
});

for (const retention of ["workqueue", "limits"] as const) {
  test(`${retention} stream: deliveries of the reader's consumer that never reach it (another client pulls 40 from the consumer, as a dropped connection loses those in flight) are read again, in order, not skipped and not acknowledged unread`, async () => {
    const stream = `LOST_${retention.toUpperCase()}`;
    await nats.admin.addStream(stream, [stream.toLowerCase()], { retention });
    await nats.admin.publishAll(stream.toLowerCase(), numbers(1, 2_000));
    // An ack wait longer than the test: the server does not deliver the taken messages again by itself.
    const source = NatsSource.string({ connection: { servers: nats.server.url }, stream, bounded: true, acknowledge: { consumer: "job", ackWaitMs: 600_000 }, fetchMessages: 100 });
    const reader = openReader(source, splitsOf(source));
    try {
      const first = await drive(reader, 300);
      const taken: number[] = [];
      const thief = await jetstream(nats.admin.nc).consumers.get(stream, "job");
      for await (const m of await thief.fetch({ max_messages: 40, expires: 2_000 })) taken.push(m.seq);
      assert.equal(taken.length, 40, "the other client took 40 deliveries of the reader's consumer");
      const all = [...first.values, ...(await drive(reader)).values];
      const missing = taken.filter((seq) => !all.includes(String(seq)));
      assert.deepEqual(missing, [], `${all.length} messages read: the taken ones are missing`);
      assert.deepEqual(all, numbers(1, 2_000), "every message once, in stream order");
      reader.snapshotState(1);
      reader.notifyCheckpointComplete!(1);
      await until("every message acknowledged", async () => [...(await consumers(stream)).values()].some((c) => c.floor === 2_000));
      if (retention === "workqueue") await until("the work queue empty", async () => (await nats.admin.count(stream)) === 0);
    } finally {
      reader.close?.();
    }
  });
}
