/**
 * AsyncSinkWriter against a fake service whose answers each test controls: batching by size and
 * by time, the bounds that make `write` wait, refused entries sent again, retries and failures,
 * and the entries a snapshot keeps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { EddyError } from "../core/errors.ts";
import { AsyncSinkWriter, type AsyncSinkOptions } from "./async-sink.ts";
import type { SinkContext } from "./sink.ts";

const context: SinkContext = {
  subtaskIndex: 0,
  parallelism: 1,
  operatorName: "store",
  reportBadRecord: (_value, cause) => {
    throw cause;
  },
  job: { jobName: "test", collect() {}, commitOnce() {}, writeStdout() {} },
};

/** A service that records every batch; `answer` decides each request's outcome (default: accept all). */
function service(answer: (batch: readonly number[], call: number) => Promise<readonly number[] | void> = () => Promise.resolve()) {
  const batches: number[][] = [];
  const accepted: number[] = [];
  const submit: AsyncSinkOptions<number, number>["submit"] = async (batch) => {
    batches.push([...batch]);
    const refused = await answer(batch, batches.length);
    const no = new Set(refused ?? []);
    for (const e of batch) if (!no.has(e)) accepted.push(e);
    return refused;
  };
  return { batches, accepted, submit };
}

function writer(options: Partial<AsyncSinkOptions<number, number>> & Pick<AsyncSinkOptions<number, number>, "submit">, ctx: SinkContext = context) {
  return new AsyncSinkWriter<number, number>({ toEntry: (v) => v, maxTimeInBufferMs: 0, ...options }, ctx);
}

test("entries go out in batches of maxBatchSize, the rest with the final flush, in order", async () => {
  const s = service();
  const w = writer({ submit: s.submit, maxBatchSize: 3 });
  for (let i = 1; i <= 7; i++) assert.equal(w.write(i, undefined), undefined);
  await w.flush(true);
  assert.deepEqual(s.batches, [[1, 2, 3], [4, 5, 6], [7]]);
  assert.deepEqual(s.accepted, [1, 2, 3, 4, 5, 6, 7]);
  w.close();
});

test("the final flush sends the partial batch the in-flight bound held back, once the requests before it settle", async () => {
  const s = service(() => sleep(5));
  const w = writer({ submit: s.submit, maxBatchSize: 2, maxInFlightRequests: 1 });
  for (let i = 1; i <= 5; i++) assert.equal(w.write(i, undefined), undefined);
  await w.flush(true);
  assert.deepEqual(s.batches, [[1, 2], [3, 4], [5]]);
  w.close();
});

test("a partial batch goes out once its oldest entry has waited maxTimeInBufferMs", async () => {
  const s = service();
  const w = writer({ submit: s.submit, maxBatchSize: 100, maxTimeInBufferMs: 10 });
  w.write(1, undefined);
  w.write(2, undefined);
  assert.deepEqual(s.batches, []);
  await sleep(40);
  assert.deepEqual(s.batches, [[1, 2]]);
  w.close();
});

test("write asks the task to wait once the buffer is full (maxInFlightRequests in flight), and resolves when a request settles", async () => {
  const releases: (() => void)[] = [];
  const s = service(() => new Promise<void>((resolve) => releases.push(resolve)));
  const w = writer({ submit: s.submit, maxBatchSize: 2, maxInFlightRequests: 1, maxBufferedRequests: 2 });
  assert.equal(w.write(1, undefined), undefined);
  // A full batch goes out; the buffer is empty again.
  assert.equal(w.write(2, undefined), undefined);
  assert.equal(w.write(3, undefined), undefined);
  // The buffer holds maxBufferedRequests and the one request allowed is in flight: wait.
  const wait = w.write(4, undefined);
  assert.ok(wait instanceof Promise);
  let resolved = false;
  void wait.then(() => (resolved = true));
  await sleep(5);
  assert.equal(resolved, false);
  releases.shift()!();
  await wait;
  // The buffered full batch went out as soon as the first settled.
  assert.deepEqual(s.batches, [[1, 2], [3, 4]]);
  releases.shift()!();
  await w.flush(true);
  assert.deepEqual(s.accepted, [1, 2, 3, 4]);
  w.close();
});

test("entries the service refuses are sent again, before newer ones, until accepted", async () => {
  const s = service(async (batch, call) => (call === 1 ? batch.filter((e) => e % 2 === 0) : undefined));
  // One request at a time: 5 and 6 wait in the buffer while the first is in flight.
  const w = writer({ submit: s.submit, maxBatchSize: 4, maxInFlightRequests: 1 });
  for (let i = 1; i <= 6; i++) w.write(i, undefined);
  await w.flush(true);
  assert.deepEqual(s.batches, [[1, 2, 3, 4], [2, 4, 5, 6]]);
  assert.deepEqual([...s.accepted].sort(), [1, 2, 3, 4, 5, 6]);
  w.close();
});

test("a retryable error sends the batch again with backoff; after maxAttempts the writer fails with SINK_WRITE_FAILED", async () => {
  let failures = 2;
  const s = service(async () => {
    if (failures-- > 0) throw new Error("503 slow down");
  });
  const w = writer({ submit: s.submit, maxBatchSize: 2, isRetryable: (e) => /503/.test(String(e)), initialBackoffMs: 1, maxAttempts: 3 });
  w.write(1, undefined);
  w.write(2, undefined);
  await w.flush(true);
  assert.deepEqual(s.batches, [[1, 2], [1, 2], [1, 2]]);
  assert.deepEqual(s.accepted, [1, 2]);

  const always = service(async () => {
    throw new Error("503 slow down");
  });
  const failing = writer({ submit: always.submit, maxBatchSize: 1, isRetryable: () => true, initialBackoffMs: 1, maxAttempts: 2 });
  failing.write(1, undefined);
  await assert.rejects(Promise.resolve(failing.flush(true)), (e: unknown) => {
    assert.ok(e instanceof EddyError);
    assert.equal(e.code, "SINK_WRITE_FAILED");
    assert.match(e.message, /sink 'store' \(subtask 0\) could not send 1 entries after 2 attempts: Error: 503 slow down/);
    return true;
  });
  assert.equal(always.batches.length, 2);
  // Every later call fails the task too, the snapshot included.
  await assert.rejects(Promise.resolve(failing.write(2, undefined)), /SINK_WRITE_FAILED|could not send/);
  assert.throws(() => failing.snapshotState(), (e: unknown) => e instanceof EddyError && e.code === "SINK_WRITE_FAILED");
});

test("an error that is not retryable fails the writer at once", async () => {
  const s = service(async () => {
    throw new Error("400 malformed record");
  });
  const w = writer({ submit: s.submit, maxBatchSize: 1 });
  w.write(1, undefined);
  await assert.rejects(Promise.resolve(w.flush(true)), (e: unknown) => e instanceof EddyError && e.code === "SINK_WRITE_FAILED" && !/attempts/.test(e.message));
  assert.equal(s.batches.length, 1);
});

test("a snapshot holds the entries in flight and buffered; a writer restored from it sends them again", async () => {
  const releases: (() => void)[] = [];
  const s = service(() => new Promise<void>((resolve) => releases.push(resolve)));
  const w = writer({ submit: s.submit, maxBatchSize: 2, maxInFlightRequests: 1 });
  for (let i = 1; i <= 3; i++) w.write(i, undefined);
  assert.deepEqual(s.batches, [[1, 2]]);
  const state = w.snapshotState();
  assert.deepEqual([...state].sort(), [1, 2, 3]);
  w.close();

  const after = service();
  const restored = writer({ submit: after.submit, maxBatchSize: 10 }, { ...context, restoredState: state });
  restored.write(4, undefined);
  await restored.flush(true);
  assert.deepEqual(after.accepted, [1, 2, 3, 4]);
  restored.close();
});

test("options out of range are refused with INVALID_SINK_OPTIONS", () => {
  for (const bad of [{ maxBatchSize: 0 }, { maxInFlightRequests: 1.5 }, { maxTimeInBufferMs: -1 }, { maxAttempts: Number.NaN }]) {
    assert.throws(
      () => writer({ submit: async () => {}, ...bad }),
      (e: unknown) => e instanceof EddyError && e.code === "INVALID_SINK_OPTIONS",
      JSON.stringify(bad),
    );
  }
});
