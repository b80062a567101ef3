/**
 * NatsSource and NatsSink throughput (issue 27, "Measured"), against the bare client in the same run:
 *
 * - bare publish loop: `@nats-io/jetstream` alone, `js.publish` of each message with a
 *   Nats-Msg-Id, at most 1,024 awaiting their PubAck, waiting for half of them when full (what
 *   the sink does by default);
 * - eddy sink: the same messages through a job (sequence source → NatsSink.json, inline,
 *   parallelism 1, checkpoints every 1 s, PubAcks awaited at each barrier);
 * - bare consume loop: an ordered consumer's `consume()` over the whole stream, JSON.parse of each
 *   payload, until the stream's last sequence;
 * - eddy source: NatsSource.json over the same stream (bounded) → a sink that only counts, inline,
 *   parallelism 1, checkpoints every 1 s;
 * - eddy source, acknowledge: the same through a durable consumer acknowledged on checkpoint
 *   completion (AckAll, one acknowledgement per checkpoint);
 * - eddy source, acknowledge, work queue: the same messages in a work-queue stream (filled before
 *   each timed run), explicit acknowledgements, one per message; the stream is empty after.
 *
 * The server is Debian's nats-server with JetStream on loopback (test/nats-server.ts), sharing
 * the machine's cores with Node. Payloads are small JSON objects (~60 bytes).
 *
 * Run: node -C eddy-source --import tsx bench/nats.ts [messages=200000] [rounds=3]
 */
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { defineJob, WatermarkStrategy, type Sink } from "eddy";
import { NatsSink, NatsSource } from "eddy/nats";
import { runJob } from "eddy/testing";
import { startNats } from "../test/nats-server.ts";

const MESSAGES = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const IN_FLIGHT = 1_024;

interface Event {
  readonly id: number;
  readonly user: string;
  readonly amount: number;
}
const eventOf = (id: number): Event => ({ id, user: `user-${id % 1000}`, amount: (id % 9973) / 7 });

const server = await startNats();
const nc = await connect({ servers: server.url });
const jsm = await jetstreamManager(nc);
const js = jetstream(nc);
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

async function freshStream(name: string, retention: "limits" | "workqueue" = "limits"): Promise<void> {
  await jsm.streams.delete(name).catch(() => {});
  await jsm.streams.add({ name, subjects: [name.toLowerCase()], duplicate_window: 120_000_000_000, retention: retention as never });
}

/** Publishes every message of `payload(i)`, at most IN_FLIGHT awaiting their PubAck; when full, waits for half of them (as the sink does). */
async function publishAll(subject: string, msgId: ((i: number) => string) | undefined): Promise<void> {
  let inFlight = 0;
  let wake: (() => void) | undefined;
  const settled = (): void => {
    inFlight--;
    if (wake !== undefined && inFlight <= IN_FLIGHT >>> 1) {
      const w = wake;
      wake = undefined;
      w();
    }
  };
  for (let i = 0; i < MESSAGES; i++) {
    inFlight++;
    js.publish(subject, JSON.stringify(eventOf(i)), msgId === undefined ? {} : { msgID: msgId(i) }).then(settled, (e: unknown) => {
      throw e;
    });
    if (inFlight >= IN_FLIGHT) await new Promise<void>((r) => (wake = r));
  }
  while (inFlight > 0) await new Promise<void>((r) => (wake = r));
}

const barePublish = (): Promise<void> => publishAll("sink", (i) => `bench:${i}`);

const eddySink = () =>
  runJob(
    defineJob("bench-nats-sink", (env) => {
      env.fromSequence(0, MESSAGES - 1).map(eventOf).sinkTo(NatsSink.json<Event>({ connection: { servers: server.url }, subject: "sink" }));
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: 1_000 }, logger: quiet },
  ).done;

async function bareConsume(): Promise<number> {
  const consumer = await js.consumers.get("SOURCE", { deliver_policy: "all" as never });
  const messages = await consumer.consume({ max_messages: 1_000 });
  let n = 0;
  let sum = 0;
  for await (const m of messages) {
    sum += (JSON.parse(m.string()) as Event).amount;
    if (++n === MESSAGES) break;
  }
  await messages.close();
  return sum;
}

let counted = 0;
const counting: Sink<Event> = { createWriter: () => ({ write: () => void counted++ }) };
const eddySource = (stream = "SOURCE", acknowledge?: { consumer: string }) =>
  runJob(
    defineJob("bench-nats-source", (env) => {
      env.fromSource(NatsSource.json<Event>({ connection: { servers: server.url }, stream, bounded: true, acknowledge }), WatermarkStrategy.noWatermarks(), "source").sinkTo(counting);
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: 1_000 }, logger: quiet },
  ).done;

// The source's input, once.
await freshStream("SOURCE");
await publishAll("source", undefined);

type Variant = "bare publish loop" | "eddy NatsSink" | "bare consume loop" | "eddy NatsSource" | "eddy NatsSource ack" | "eddy NatsSource ack WQ";
const countedAll = async (): Promise<void> => {
  if (counted !== MESSAGES) throw new Error(`eddy NatsSource: ${counted} records, not ${MESSAGES}`);
};
const VARIANTS: Record<Variant, { run: () => Promise<unknown>; check: () => Promise<void>; baseline: Variant }> = {
  "bare publish loop": { run: barePublish, check: () => expectCount("SINK"), baseline: "bare publish loop" },
  "eddy NatsSink": { run: eddySink, check: () => expectCount("SINK"), baseline: "bare publish loop" },
  "bare consume loop": { run: bareConsume, check: async () => {}, baseline: "bare consume loop" },
  "eddy NatsSource": {
    run: async () => ((counted = 0), eddySource()),
    check: async () => {
      if (counted !== MESSAGES) throw new Error(`eddy NatsSource: ${counted} records, not ${MESSAGES}`);
    },
    baseline: "bare consume loop",
  },
  "eddy NatsSource ack": { run: async () => ((counted = 0), eddySource("SOURCE", { consumer: "bench" })), check: countedAll, baseline: "bare consume loop" },
  "eddy NatsSource ack WQ": {
    run: async () => ((counted = 0), eddySource("WQ", { consumer: "bench" })),
    check: async () => {
      await countedAll();
      // The last acknowledgements (the final checkpoint's) are sent as the job closes: polled.
      let left = -1;
      for (const deadline = Date.now() + 10_000; left !== 0 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) left = (await jsm.streams.info("WQ")).state.messages;
      if (left !== 0) throw new Error(`the work queue holds ${left} messages 10 s after the job`);
    },
    baseline: "bare consume loop",
  },
};

async function expectCount(stream: string): Promise<void> {
  const n = (await jsm.streams.info(stream)).state.messages;
  if (n !== MESSAGES) throw new Error(`${stream}: ${n} messages, not ${MESSAGES}`);
}

// Timed: run() only (the output stream is created afresh before it).
const results = new Map<Variant, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [variant, { run, check }] of Object.entries(VARIANTS) as [Variant, (typeof VARIANTS)[Variant]][]) {
    if (variant === "bare publish loop" || variant === "eddy NatsSink") await freshStream("SINK");
    if (variant === "eddy NatsSource ack WQ") {
      await freshStream("WQ", "workqueue");
      await publishAll("wq", undefined);
    }
    const start = performance.now();
    await run();
    const ms = performance.now() - start;
    await check();
    results.set(variant, [...(results.get(variant) ?? []), MESSAGES / (ms / 1000)]);
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${MESSAGES.toLocaleString("en-US")} messages of ~60 bytes, median of ${ROUNDS} rounds`);
for (const [variant, { baseline }] of Object.entries(VARIANTS) as [Variant, (typeof VARIANTS)[Variant]][]) {
  const rate = median(results.get(variant)!);
  console.log(`${variant.padEnd(20)} ${Math.round(rate).toLocaleString("en-US").padStart(9)} msgs/s  ${((100 * rate) / median(results.get(baseline)!)).toFixed(0).padStart(4)} % of ${baseline}`);
}
await nc.close();
await server.stop();
