/**
 * KafkaSink in jobs on worker threads against the fake broker (eddy-kafka/testing, served over
 * loopback HTTP so that every thread uses one broker, and a worker that exits leaves its
 * transaction open on it, as on a real broker). What a read_committed reader sees is compared,
 * record for record (partition, offset order aside: key, value, timestamp), with a failure-free run:
 * Exactly-once twice: exactlyOnceMode "two-phase" (a transaction per interval, committed by
 * handle) and "write-ahead" (the records in the checkpoint, written with a marker once it completes).
 * - exactly-once, kill-and-compare: a worker exit or an exception at a random record, at
 *   parallelism 2, EDDY_KAFKA_ROUNDS rounds (10 per mode here, 20 in all in CI; `npm run soak:kafka` runs 20 per mode): equal, and no
 *   transaction left open;
 * - exactly-once, rescale: a job at parallelism 2 fails (a worker exit, once a checkpoint
 *   completed) and stays down; it resumes from its latest checkpoint at parallelism 1 and 3:
 *   equal, and no transaction left open;
 * - exactly-once, an older checkpoint restored into a new checkpoint directory (checkpoint ids go
 *   back) with the transactionalIdPrefix of the run that went past it: the output of the new run
 *   equals that of the same restore under a fresh prefix;
 * - at-least-once: a worker exit loses nothing (duplicates allowed). (That the barrier waits for
 *   the acknowledgements is tested in packages/eddy-kafka/src/kafka-sink.test.ts: here a send
 *   rarely waits long enough for a failure to fall between a barrier and its acknowledgement.)
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fakeKafkaForThisFile, readCommitted } from "./kafka-fixtures.ts";
import { runJob } from "eddy/testing";
import { latestCheckpoint } from "./jobs/checkpointed.ts";
import { kafkaSinkJob } from "./jobs/kafka-sink.ts";
import { prng, withEnv } from "./fixtures.ts";

const EVENTS = 12_000;
/**
 * The rescale tests: the job runs slowly (1 ms every 10 records) until a checkpoint completed,
 * then fails. A source poll (1,024 records) is a round of the task loop, after which it yields to
 * the event loop, and each I/O step of a checkpoint waits for one: at 1 ms per record the first
 * checkpoint of a write-ahead job, whose writer never returns a promise, completed only after the
 * input ended; two-phase, which waited for the sink's first commit at 1 ms per record over 12,000
 * records, sometimes did too under CI's load (the job ended without failing).
 */
const RESCALE_EVENTS = 60_000;

const PARTITIONS = 4;
const ROUNDS = Number(process.env.EDDY_KAFKA_ROUNDS ?? 10);
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const dec = new TextDecoder();

const kafka = fakeKafkaForThisFile();

/** Per partition, what a read_committed reader sees: `key=value@timestamp`, sorted (parallel writers interleave). */
async function committedOf(topic: string): Promise<string[][]> {
  return (await readCommitted(kafka.broker, topic, (x) => `${dec.decode(x.key!)}=${dec.decode(x.value!)}@${x.timestamp}`)).map((p) => p.sort());
}

type RunOptions = Parameters<typeof runJob>[1];

type Mode = "two-phase" | "write-ahead";

async function run(topic: string, delivery: string, options: RunOptions, fault?: object, mode: Mode = "two-phase", events = EVENTS, afterCheckpoint = "", slowEvery = 1, prefix = ""): Promise<void> {
  // Jobs on threads run slowly throughout (the hold file never exists), so that checkpoints complete while records flow.
  const hold = options?.mode === "threads" ? join(tmpdir(), "eddy-kafka-never-released") : "";
  await withEnv({ EDDY_KAFKA_PREFIX: prefix, EDDY_KAFKA_AFTER_CHECKPOINT: afterCheckpoint, EDDY_KAFKA_SLOW_EVERY: String(slowEvery), EDDY_KAFKA_HOLD: hold, EDDY_KAFKA_URL: kafka.url, EDDY_KAFKA_TOPIC: topic, EDDY_KAFKA_EVENTS: String(events), EDDY_KAFKA_DELIVERY: delivery, EDDY_KAFKA_EO_MODE: mode, EDDY_KAFKA_FAULT: fault === undefined ? "" : JSON.stringify(fault) }, async () => {
    await runJob(kafkaSinkJob, { logger: silent, ...options }).done;
  });
}

const baselines = new Map<number, string[][]>();
/** The failure-free run's output (once per file and number of events). */
async function expected(events = EVENTS): Promise<string[][]> {
  const known = baselines.get(events);
  if (known !== undefined) return known;
  const topic = `baseline-${events}`;
  kafka.broker.createTopic(topic, PARTITIONS);
  await run(topic, "exactly-once", { mode: "inline", parallelism: 1, checkpointing: false }, undefined, "two-phase", events);
  const baseline = await committedOf(topic);
  assert.equal(baseline.flat().length, events, "the failure-free run wrote every event once");
  baselines.set(events, baseline);
  return baseline;
}

for (const mode of ["two-phase", "write-ahead"] as const) {
test(`exactly-once (${mode}): worker threads, parallelism 2, a worker exit or an exception at a random record, ${ROUNDS} rounds; read_committed sees the failure-free output`, async () => {
  const want = await expected();
  const dir = mkdtempSync(join(tmpdir(), "eddy-kafka-eo-"));
  try {
    const seed = Number(process.env.EDDY_KAFKA_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    for (let round = 0; round < ROUNDS; round++) {
      const topic = `eo-${mode}-${seed}-${round}`;
      kafka.broker.createTopic(topic, PARTITIONS);
      const fault = { kind: round % 3 === 1 ? "process" : "exit", atRecord: 1 + Math.floor(random() * EVENTS * 0.95), marker: join(dir, `fault-${round}`) };
      const label = `seed ${seed}, round ${round}, ${fault.kind} at ${fault.atRecord}`;
      await run(topic, "exactly-once", { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 20 }, checkpointDir: join(dir, "checkpoints"), jobId: topic, restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 } }, fault, mode);
      assert.deepEqual(await committedOf(topic), want, `${label}: read_committed sees the failure-free output`);
      assert.deepEqual(kafka.broker.openTransactions(), [], `${label}: no transaction left open`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(`exactly-once (${mode}): a job at parallelism 2 fails and stays down; restored from its latest checkpoint at parallelism 1 and 3 the output is the failure-free one`, async () => {
  const events = RESCALE_EVENTS;
  const want = await expected(events);
  const dir = mkdtempSync(join(tmpdir(), "eddy-kafka-rescale-"));
  try {
    for (const parallelism of [1, 3]) {
      const topic = `rescale-${mode}-${parallelism}`;
      kafka.broker.createTopic(topic, PARTITIONS);
      const checkpoints = join(dir, `checkpoints-${parallelism}`);
      // A worker exit (what it had open stays open on the broker, as on a real one) at the first
      // record after the first completed checkpoint, whose commit may come late from a task
      // thread this busy (the restore commits it: two-phase by its handle, write-ahead by writing it).
      const fault = { kind: "exit", atRecord: 1, marker: join(dir, `fault-${parallelism}`) };
      await assert.rejects(run(topic, "exactly-once", { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 20 }, checkpointDir: checkpoints, jobId: topic, restartStrategy: { type: "none" } }, fault, mode, events, join(checkpoints, topic), 10));
      assert.ok(existsSync(fault.marker), "the fault fired");
      const from = latestCheckpoint(join(checkpoints, topic));
      assert.ok(from !== undefined, "a checkpoint completed before the failure");
      await run(topic, "exactly-once", { mode: parallelism === 1 ? "inline" : "threads", parallelism, checkpointing: { intervalMs: 20 }, checkpointDir: checkpoints, jobId: topic, fromCheckpoint: from }, undefined, mode, events);
      assert.deepEqual(await committedOf(topic), want, `2 → ${parallelism}`);
      assert.deepEqual(kafka.broker.openTransactions(), [], `2 → ${parallelism}: no transaction left open`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});


test(`exactly-once (${mode}): an older checkpoint restored into a new checkpoint directory, the prefix of the run that went on from it: the new run's output is written whole`, async () => {
  const events = RESCALE_EVENTS;
  const dir = mkdtempSync(join(tmpdir(), "eddy-kafka-older-"));
  try {
    const first = join(dir, "first");
    const prefix = `older-${mode}`;
    const topic = (name: string): string => {
      kafka.broker.createTopic(`older-${mode}-${name}`, PARTITIONS);
      return `older-${mode}-${name}`;
    };
    const original = topic("original");
    // The first run fails after a checkpoint completed; resumed from it, it runs to the end (checkpoints kept).
    const fault = { kind: "exit", atRecord: 1, marker: join(dir, "fault") };
    const checkpointing = { intervalMs: 20, retained: 1000 };
    await assert.rejects(run(original, "exactly-once", { mode: "threads", parallelism: 2, checkpointing, checkpointDir: first, jobId: "j", restartStrategy: { type: "none" } }, fault, mode, events, join(first, "j"), 10, prefix));
    const older = latestCheckpoint(join(first, "j"));
    assert.ok(older !== undefined, "a checkpoint completed before the failure");
    await run(original, "exactly-once", { mode: "inline", parallelism: 2, checkpointing, checkpointDir: first, jobId: "j", fromCheckpoint: older }, undefined, mode, events, "", 1, prefix);
    assert.deepEqual(await committedOf(original), await expected(events), "the first run's output");
    const olderId = Number(/(\d+)$/.exec(older)![1]);
    const lastId = Number(/(\d+)$/.exec(latestCheckpoint(join(first, "j"))!)![1]);
    assert.ok(lastId > olderId, `the first run went on past the older checkpoint (${olderId} → ${lastId})`);
    // The older checkpoint restored again, into new checkpoint directories (ids continue after it):
    // once with the prefix of the run that went on (its markers are past the new ids), once with a fresh one.
    const again = topic("again");
    await run(again, "exactly-once", { mode: "inline", parallelism: 2, checkpointing, checkpointDir: join(dir, "second"), jobId: "j", fromCheckpoint: older }, undefined, mode, events, "", 1, prefix);
    const fresh = topic("fresh");
    await run(fresh, "exactly-once", { mode: "inline", parallelism: 2, checkpointing, checkpointDir: join(dir, "third"), jobId: "j", fromCheckpoint: older }, undefined, mode, events, "", 1, `${prefix}-fresh`);
    const want = await committedOf(fresh);
    assert.ok(want.flat().length > 0, "the restored run wrote records");
    assert.deepEqual(await committedOf(again), want, "the same output as under a fresh prefix");
    assert.deepEqual(kafka.broker.openTransactions(), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

}

test("at-least-once: a worker exit at a random record loses nothing (duplicates allowed)", async () => {
  const want = new Set((await expected()).flat());
  const dir = mkdtempSync(join(tmpdir(), "eddy-kafka-alo-"));
  try {
    const topic = "alo";
    kafka.broker.createTopic(topic, PARTITIONS);
    const fault = { kind: "exit", atRecord: Math.floor(EVENTS * (0.2 + prng(Date.now() % 1000)() * 0.7)), marker: join(dir, "fault") };
    await run(topic, "at-least-once", { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 20 }, checkpointDir: join(dir, "checkpoints"), jobId: topic, restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 } }, fault);
    const got = (await committedOf(topic)).flat();
    const missing = [...want].filter((r) => !got.includes(r));
    assert.deepEqual(missing.slice(0, 5), [], `fault at ${fault.atRecord}: nothing lost`);
    assert.ok(got.length >= want.size);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
