/**
 * NatsSource and NatsSink against a real nats-server with JetStream (test/nats-server.ts starts
 * one for this file), driven by hand and in small jobs:
 * - the source reads a bounded stream split by subject, from the start, a sequence, a time or the
 *   end; a reader restored from a snapshot emits exactly the messages after its position;
 * - a message that does not deserialize reaches the error policy with its stream sequence;
 * - the sink awaits PubAcks at the barrier; a writer restored from a checkpoint publishes the
 *   replayed records under the same ids, and the stream drops them;
 * - a message the server refuses goes to the sink's error policy;
 * - a server that goes away is retried, then the job fails saying so;
 * - examples/nats-totals.ts computes what it says.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { defineJob, EddyError, TumblingEventTimeWindows, WatermarkStrategy, type DeadLetter, type SinkContext } from "eddy";
import { NatsSink, NatsSource, type NatsMessage } from "eddy/nats";
import { collectSink, runJob, sourceReaderContext } from "eddy/testing";
import { drive, openReader, splitsOf } from "./source-driver.ts";
import { startNats } from "./nats-server.ts";
import { natsAdmin, natsForTests } from "./nats-client.ts";
import { MINUTE_MS, natsTotalsJob, REGIONS, type MinuteTotal, type Order } from "../examples/nats-totals.ts";

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const nats = natsForTests();

interface Read {
  readonly subject: string;
  readonly text: string;
  readonly sequence: number;
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, readonly string[]>> | undefined;
}

const decoder = new TextDecoder();
const asRead = (m: NatsMessage): Read => ({ subject: m.subject, text: decoder.decode(m.data), sequence: m.sequence, timestamp: m.timestamp, headers: m.headers });

test("source, bounded: each subject filter is a split; every message once with its subject, headers, sequence and timestamp; a reader restored from a snapshot emits exactly the rest", async () => {
  await nats.admin.addStream("SHOP", ["shop.>"]);
  const before = Date.now();
  const payloads = Array.from({ length: 3_000 }, (_, i) => `m${i + 1}`);
  await nats.admin.publishAll((i) => (i % 3 === 0 ? "shop.eu" : "shop.us"), payloads, (i) => ({ n: String(i + 1) }));
  const source = NatsSource.create({ connection: { servers: nats.server.url }, stream: "SHOP", subjects: ["shop.eu", "shop.us"], bounded: true, fetchMessages: 100 }, asRead);
  const splits = splitsOf(source);
  assert.deepEqual(splits.map((s) => s.splitId), ["SHOP/shop.eu", "SHOP/shop.us"]);

  const context = sourceReaderContext({ subtaskIndex: 0, parallelism: 1 });
  const reader = openReader(source, splits, context);
  const first = await drive(reader, 1_234);
  // The reader's lag (pendingRecords): what the server holds past its fetches plus what it fetched
  // and has not emitted: the rest of the bounded input, exactly.
  assert.equal(context.metrics.standardGauges().pendingRecords, 3_000 - first.values.length);
  const snapshot = reader.snapshotState(1);
  reader.close?.();
  // Published after the source opened its splits: past the bounded end, never read.
  await nats.admin.publishAll("shop.eu", ["late"]);
  const restoredContext = sourceReaderContext({ subtaskIndex: 0, parallelism: 1 });
  const restored = openReader(source, JSON.parse(JSON.stringify(snapshot)) as typeof snapshot, restoredContext);
  const rest = await drive(restored);
  assert.equal(restoredContext.metrics.standardGauges().pendingRecords, 0, "nothing left once the bounded input is read");
  restored.close?.();

  const all = [...first.values, ...rest.values];
  assert.equal(all.length, 3_000, "every message once over both readers");
  assert.deepEqual(all.map((r) => r.text).sort(), [...payloads].sort());
  for (const r of all) {
    const n = Number(r.text.slice(1));
    assert.equal(r.sequence, n, "the stream sequence");
    assert.equal(r.subject, n % 3 === 1 ? "shop.eu" : "shop.us");
    assert.deepEqual(r.headers, { n: [String(n)] });
    assert.ok(r.timestamp >= before - 1_000 && r.timestamp <= Date.now(), "the stored time, in ms");
  }
  // Within a split, stream order; the record's timestamp is the message's.
  for (const subject of ["shop.eu", "shop.us"]) {
    const seqs = all.filter((r) => r.subject === subject).map((r) => r.sequence);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
  }
  assert.deepEqual(first.timestamps, first.values.map((r) => r.timestamp));
});

test("source: start at a sequence, at a time, or at the end; the stream's whole content with start 'all'", async () => {
  await nats.admin.addStream("TICKS", ["ticks"]);
  await nats.admin.publishAll("ticks", ["1", "2", "3", "4", "5"]);
  await new Promise((r) => setTimeout(r, 20));
  const middle = Date.now();
  await new Promise((r) => setTimeout(r, 20));
  await nats.admin.publishAll("ticks", ["6", "7"]);
  const read = async (start: Parameters<typeof NatsSource.string>[0]["start"]) => {
    const source = NatsSource.string({ connection: { servers: nats.server.url }, stream: "TICKS", start, bounded: true });
    const reader = openReader(source, splitsOf(source));
    const { values } = await drive(reader);
    reader.close?.();
    return values;
  };
  assert.deepEqual(await read(undefined), ["1", "2", "3", "4", "5", "6", "7"]);
  assert.deepEqual(await read({ sequence: 4 }), ["4", "5", "6", "7"]);
  assert.deepEqual(await read({ timeMs: middle }), ["6", "7"]);
  assert.deepEqual(await read("new"), []);
  assert.throws(() => NatsSource.string({ connection: { servers: nats.server.url }, stream: "TICKS", start: { sequence: 0 } }), /INVALID_NATS_OPTIONS|start must be/);
  assert.throws(() => NatsSource.string({ connection: { servers: [] }, stream: "TICKS" }), (e: unknown) => e instanceof EddyError && e.code === "INVALID_NATS_OPTIONS");
});

test("source: a message that does not parse reaches the error policy with its stream sequence; the default policy fails the job naming it", async () => {
  await nats.admin.addStream("EVENTS", ["events"]);
  await nats.admin.publishAll("events", ['{"n":1}', '{"n":2}', "not json", '{"n":4}']);
  const job = (policy: "fail" | "dead-letter") =>
    defineJob(`nats-bad-${policy}`, (env) => {
      const events = env.fromSource(NatsSource.json<{ n: number }>({ connection: { servers: nats.server.url }, stream: "EVENTS", bounded: true }), WatermarkStrategy.noWatermarks(), "events").onError(policy);
      events.sinkTo(collectSink("out"));
      if (policy === "dead-letter") events.deadLetters().sinkTo(collectSink("dead"));
    });
  const run = runJob(job("dead-letter"), { mode: "inline", logger: silent });
  await run.done;
  assert.deepEqual(run.collected("out"), [{ n: 1 }, { n: 2 }, { n: 4 }]);
  const dead = run.collected<DeadLetter>("dead");
  assert.equal(dead.length, 1);
  assert.deepEqual(dead[0]!.position, { stream: "EVENTS", subject: "events", sequence: 3 });
  assert.equal(dead[0]!.rawEncoding, "base64");
  assert.equal(Buffer.from(dead[0]!.raw!, "base64").toString(), "not json");

  const failing = runJob(job("fail"), { mode: "inline", logger: silent });
  await assert.rejects(failing.done, (e: unknown) => {
    assert.ok(e instanceof EddyError);
    assert.equal(e.code, "BAD_RECORD");
    assert.match(e.message, /stream 'EVENTS', subject 'events', sequence 3: SyntaxError/);
    return true;
  });
});

test("source, continuous: each split has its own watermark, and a quiet split marked idle (withIdleness) does not hold back the windows of a busy one", async () => {
  await nats.admin.addStream("SENSORS", ["sensors.>"]);
  const t0 = 1_700_000_000_000;
  // Split b has one early reading, then stays quiet; split a keeps getting readings, 100 ms of
  // event time apart (a split whose records stop goes idle too, and a source whose splits are all
  // idle holds its watermark, as in Flink).
  await nats.admin.publishAll("sensors.b", [JSON.stringify({ ts: t0 })]);
  let i = 0;
  let publishing = true;
  const trickle = (async () => {
    while (publishing) {
      await nats.admin.publishAll("sensors.a", Array.from({ length: 5 }, () => JSON.stringify({ ts: t0 + i++ * 100 })));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const job = defineJob("nats-idle", (env) => {
    env
      .fromSource(
        NatsSource.json<{ ts: number }>({ connection: { servers: nats.server.url }, stream: "SENSORS", subjects: ["sensors.a", "sensors.b"] }),
        WatermarkStrategy.forBoundedOutOfOrderness<{ ts: number }>(0)
          .withTimestampAssigner((r) => r.ts)
          .withIdleness(300),
        "sensors",
      )
      .map(() => 1)
      .keyBy(() => "all")
      .window(TumblingEventTimeWindows.of(1_000))
      .reduce((a, b) => a + b)
      .sinkTo(collectSink("windows"));
  });
  const run = runJob(job, { mode: "inline", logger: silent });
  const ended = run.done.catch(() => {});
  try {
    const deadline = Date.now() + 30_000;
    // Windows [t0, t0+1s) ... [t0+8s, t0+9s) close once split a's watermark passes them.
    while (run.collected<number>("windows").length < 9) {
      assert.ok(Date.now() < deadline, `windows fired within 30 s: ${JSON.stringify(run.collected("windows"))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(run.collected<number>("windows").slice(0, 9), [11, 10, 10, 10, 10, 10, 10, 10, 10]);
  } finally {
    publishing = false;
    await trickle;
    run.cancel();
    await ended;
  }
});

test("source, continuous: a split behind in event time is not late: the source's watermark is the minimum over its splits (per-split watermark generators)", async () => {
  await nats.admin.addStream("LAGGING", ["lagging.>"]);
  const t0 = 1_700_000_000_000;
  const job = defineJob("nats-lagging", (env) => {
    env
      .fromSource(
        NatsSource.json<{ ts: number }>({ connection: { servers: nats.server.url }, stream: "LAGGING", subjects: ["lagging.ahead", "lagging.behind"] }),
        WatermarkStrategy.forBoundedOutOfOrderness<{ ts: number }>(0).withTimestampAssigner((r) => r.ts),
        "lagging",
      )
      .map((r) => ({ count: 1, first: r.ts }))
      .keyBy(() => "all")
      .window(TumblingEventTimeWindows.of(1_000))
      .reduce((a, b) => ({ count: a.count + b.count, first: Math.min(a.first, b.first) }))
      .sinkTo(collectSink("windows"));
  });
  const run = runJob(job, { mode: "inline", logger: silent });
  const ended = run.done.catch(() => {});
  try {
    // The split ahead (event time t0+10s...) is read first; a while later the split behind (t0...).
    await nats.admin.publishAll("lagging.ahead", Array.from({ length: 100 }, (_, i) => JSON.stringify({ ts: t0 + 10_000 + i * 100 })));
    await new Promise((r) => setTimeout(r, 1_000));
    await nats.admin.publishAll("lagging.behind", Array.from({ length: 50 }, (_, i) => JSON.stringify({ ts: t0 + i * 100 })));
    const deadline = Date.now() + 30_000;
    // The behind split's windows [t0, t0+1s) ... [t0+3s, t0+4s) close; none of them was late.
    while (run.collected("windows").length < 4) {
      assert.ok(Date.now() < deadline, `windows fired within 30 s: ${JSON.stringify(run.collected("windows"))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(run.collected("windows").slice(0, 4), [0, 1, 2, 3].map((w) => ({ count: 10, first: t0 + w * 1_000 })));
  } finally {
    run.cancel();
    await ended;
  }
});

function sinkContext(subtaskIndex: number, restoredState?: readonly unknown[], bad: unknown[] = []): SinkContext {
  return {
    subtaskIndex,
    parallelism: 1,
    operatorName: "out",
    job: { jobName: "nats-sink-test", collect() {}, commitOnce() {}, writeStdout() {} },
    restoredState,
    reportBadRecord: (value, cause) => void bad.push({ value, cause }),
  };
}

test("sink: PubAcks awaited at the barrier; a writer restored from the checkpoint publishes the replay under the same ids and the stream drops it; a fresh start does not", async () => {
  await nats.admin.addStream("SUNK", ["sunk.>"]);
  const sink = NatsSink.json<{ n: number }>({ connection: { servers: nats.server.url }, subject: (r) => `sunk.${r.n % 2}` });
  const first = sink.createWriter(sinkContext(0));
  for (let n = 1; n <= 500; n++) await first.write({ n }, undefined);
  const checkpoint = await first.snapshotState!(1);
  assert.equal(await nats.admin.count("SUNK"), 500, "every message written before the barrier is stored when snapshotState resolves");
  for (let n = 501; n <= 800; n++) await first.write({ n }, undefined);
  await first.flush!(false);
  await first.close!();
  await first.close!();
  assert.equal(await nats.admin.count("SUNK"), 800);

  // Restored from the barrier after record 500: records 501-800 come again, then 801-1000.
  const restored = sink.createWriter(sinkContext(0, JSON.parse(JSON.stringify(checkpoint)) as unknown[]));
  for (let n = 501; n <= 1_000; n++) await restored.write({ n }, undefined);
  await restored.snapshotState!(2);
  await restored.close!();
  const stored = await nats.admin.readAll("SUNK");
  assert.deepEqual(stored.map((m) => JSON.parse(m.data).n), Array.from({ length: 1_000 }, (_, i) => i + 1), "each record once, in order");
  assert.equal(new Set(stored.map((m) => m.msgId)).size, 1_000);
  assert.match(stored[0]!.msgId!, /^nats-sink-test:out:0:[0-9a-f]{8}:0$/);
  assert.equal(stored[0]!.subject, "sunk.1");

  // A fresh start (no checkpoint) is a new epoch: its messages are not taken for replays.
  const fresh = sink.createWriter(sinkContext(0));
  await fresh.write({ n: 1 }, undefined);
  await fresh.flush!(true);
  await fresh.close!();
  assert.equal(await nats.admin.count("SUNK"), 1_001);
});

test("sink: the barrier waits for the PubAcks: publishes to a subject no stream takes yet are retried, and the barrier's snapshotState resolves only once the stream exists and stored them", async () => {
  const sink = NatsSink.json<{ n: number }>({ connection: { servers: nats.server.url }, subject: "later.x", initialBackoffMs: 50, maxBackoffMs: 200, maxAttempts: 50 });
  const writer = sink.createWriter(sinkContext(0));
  for (let n = 1; n <= 10; n++) await writer.write({ n }, undefined);
  let prepared = false;
  const barrier = Promise.resolve(writer.snapshotState!(1)).then(() => (prepared = true));
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(prepared, false, "no stream, no PubAck: the barrier is not passed");
  await nats.admin.addStream("LATER", ["later.>"]);
  await barrier;
  assert.equal(await nats.admin.count("LATER"), 10);
  await writer.close!();
});

test("sink: a message the stream refuses (larger than its max_msg_size, 256 bytes) and one that does not serialize go to the error policy; the default policy fails the job with NATS_BAD_MESSAGE", async () => {
  await nats.admin.addStream("SMALL", ["small"], { max_msg_size: 256 });
  const records = [{ id: 1, text: "ok" }, { id: 2, text: "x".repeat(400) }, { id: 3, text: 10n as unknown as string }, { id: 4, text: "ok" }];
  const job = (policy: "fail" | "dead-letter") =>
    defineJob(`nats-refused-${policy}`, (env) => {
      const sunk = env.fromCollection(records).sinkTo(NatsSink.json<{ id: number; text: string }>({ connection: { servers: nats.server.url }, subject: "small" }), "small").onError(policy);
      if (policy === "dead-letter") sunk.deadLetters().sinkTo(collectSink("dead"));
    });
  const run = runJob(job("dead-letter"), { mode: "inline", logger: silent });
  await run.done;
  assert.deepEqual((await nats.admin.readAll("SMALL")).map((m) => JSON.parse(m.data).id), [1, 4]);
  const dead = run.collected<DeadLetter>("dead").sort((a, b) => (a.value as { id: number }).id - (b.value as { id: number }).id);
  assert.deepEqual(dead.map((d) => [d.operator, d.error.code, (d.value as { id: number }).id]), [["small", "NATS_BAD_MESSAGE", 2], ["small", "NATS_BAD_MESSAGE", 3]]);
  assert.match(dead[0]!.error.message, /could not publish the record \{"id":2,.* to 'small': .*(size|payload)/i);
  assert.match(dead[1]!.error.message, /the record \{"id":3,"text":"10n"\}: TypeError: .*BigInt/);

  const failing = runJob(job("fail"), { mode: "inline", logger: silent });
  // Record 3 fails as it is written, record 2 when the server refuses it: whichever comes first fails the job.
  await assert.rejects(failing.done, (e: unknown) => e instanceof EddyError && e.code === "NATS_BAD_MESSAGE" && /\{"id":(2|3)/.test(e.message));
});

test("the server going away: the client reconnects, publishes and fetches are retried, then the job fails with NATS_SINK_FAILED or NATS_SOURCE_FAILED saying the connection is closed", async () => {
  const own = await startNats();
  try {
    const ownAdmin = await natsAdmin(own.url);
    await ownAdmin.addStream("IN", ["in"]);
    await ownAdmin.addStream("OUT", ["out"]);
    await ownAdmin.publishAll("in", Array.from({ length: 200 }, (_, i) => String(i)));
    await ownAdmin.close();
    const connection = { servers: own.url, maxReconnectAttempts: 3, reconnectTimeWait: 100 };
    const job = defineJob("nats-away", (env) => {
      env
        .fromSource(NatsSource.json<number>({ connection, stream: "IN", maxAttempts: 3, initialBackoffMs: 50 }), WatermarkStrategy.noWatermarks(), "in")
        .sinkTo(NatsSink.json<number>({ connection, subject: "out", maxAttempts: 3, initialBackoffMs: 50, publishTimeoutMs: 1_000 }), "out");
    });
    const run = runJob(job, { mode: "inline", checkpointing: { intervalMs: 50 }, logger: silent });
    const failed = assert.rejects(run.done, (e: unknown) => {
      assert.ok(e instanceof EddyError, String(e));
      assert.match(e.code, /^NATS_(SINK|SOURCE)_FAILED$/, e.message);
      assert.match(e.message, /connection .*closed|after 3 attempts|could not connect .*refused/, e.message);
      return true;
    });
    const check = await natsAdmin(own.url);
    const deadline = Date.now() + 30_000;
    while ((await check.count("OUT")) < 200) {
      assert.ok(Date.now() < deadline, "the messages did not reach OUT within 30 s");
      await new Promise((r) => setTimeout(r, 20));
    }
    await check.close();
    await own.stop();
    await failed;
  } finally {
    await own.stop();
  }
});

test("examples/nats-totals.ts: per-customer totals per minute from two regions' orders, one message each, equal to a direct computation", async () => {
  await nats.admin.addStream("ORDERS", ["orders.>"]);
  await nats.admin.addStream("TOTALS", ["totals.>"]);
  const t0 = 1_700_000_000_000;
  const orders: Order[] = Array.from({ length: 2_000 }, (_, i) => ({ customer: `c${(i * 7) % 13}`, amount: (i % 50) + 1, ts: t0 + i * 300 }));
  await nats.admin.publishAll((i) => `orders.${REGIONS[i % 2]}`, orders.map((o) => JSON.stringify(o)));
  await nats.admin.publishAll("orders.eu", ["not json"]);
  await runJob(natsTotalsJob(nats.server.url, true), { mode: "inline", parallelism: 2, checkpointing: { intervalMs: 50 }, logger: silent }).done;
  const expected = new Map<string, MinuteTotal>();
  for (const o of orders) {
    const minute = Math.floor(o.ts / MINUTE_MS) * MINUTE_MS;
    const k = `${o.customer}@${minute}`;
    const t = expected.get(k) ?? { customer: o.customer, minute, orders: 0, amount: 0 };
    expected.set(k, { ...t, orders: t.orders + 1, amount: t.amount + o.amount });
  }
  const got = await nats.admin.readAll("TOTALS");
  const key = (t: MinuteTotal) => `${t.customer}@${t.minute}`;
  assert.deepEqual(got.map((m) => JSON.parse(m.data) as MinuteTotal).sort((a, b) => key(a).localeCompare(key(b))), [...expected.values()].sort((a, b) => key(a).localeCompare(key(b))));
  for (const m of got) assert.equal(m.subject, `totals.${(JSON.parse(m.data) as MinuteTotal).customer}`);
});
