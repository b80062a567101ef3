/**
 * The asynchronous sink contract (connector/sink.ts): a write that returns a promise holds back
 * the task's input until it settles; a flush at the end of input holds back the job's end;
 * committables given as a promise hold back the checkpoint; commits are retried with backoff and
 * fail the job when the retries run out; what a writer records with snapshotState comes back after
 * a restore. Every test checks the output against what the source produced. (Inline: the sinks
 * close over test state; the kill tests of checkpoints.test.ts run an asynchronous committer on
 * worker threads.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { asyncSink, defineJob, EddyError, type Sink } from "eddy";
import { runJob, type RunOptions } from "eddy/testing";

const N = 2_000;
const sequence = (): number[] => Array.from({ length: N }, (_, i) => i + 1);

/**
 * A job of `fromSequence(1, N)` into `sink`, through an optional map. The rebalance puts the map
 * and the sink in a task of their own, which reads batches: the source emits up to 1,024 records
 * per poll, and a task's slice ends only between polls.
 */
function job(sink: Sink<number>, map: (n: number) => number = (n) => n) {
  return defineJob("async-sink", (env) => {
    env.fromSequence(1, N).rebalance().map(map).name("map").sinkTo(sink).name("async sink");
  });
}

/** Collects warnings and errors of a run, for assertions and failure messages. */
function logger(lines: string[]): NonNullable<RunOptions["logger"]> {
  const note = (message: string, fields?: Record<string, unknown>): void => void lines.push(`${message} ${JSON.stringify(fields ?? {})}`);
  return { debug: () => {}, info: () => {}, warn: note, error: note };
}

test("a write that returns a promise holds back the next record until it settles (backpressure), and nothing is lost", async () => {
  const written: number[] = [];
  let inFlight = 0;
  let overlapped = 0;
  const sink: Sink<number> = {
    createWriter: (context) => ({
      write(value) {
        if (inFlight > 0) overlapped++;
        written.push(value);
        // Every 10th record the writer's buffer is "full": it asks the task to wait.
        if (value % 10 !== 0) return;
        inFlight++;
        return sleep(1).then(() => {
          inFlight--;
          context.job.collect("out", value);
        });
      },
    }),
  };
  const run = runJob(job(sink), { mode: "inline" });
  await run.done;
  assert.equal(overlapped, 0, "a record was written while a write's promise was pending");
  assert.deepEqual(written, sequence());
  assert.deepEqual(run.collected("out"), sequence().filter((n) => n % 10 === 0));
});

test("the job ends only once the final flush's promise resolved", async () => {
  const sink: Sink<number> = {
    createWriter: (context) => {
      const buffer: number[] = [];
      return {
        write: (value) => void buffer.push(value),
        async flush(endOfInput) {
          assert.equal(endOfInput, true);
          await sleep(20);
          for (const v of buffer.splice(0)) context.job.collect("out", v);
        },
      };
    },
  };
  const run = runJob(job(sink), { mode: "inline" });
  await run.done;
  assert.deepEqual(run.collected("out"), sequence());
});

/**
 * A two-phase sink whose committables arrive as a promise (after a delay, as once a file is
 * synced) and whose commits are asynchronous; `failFirst` commits of each transaction throw.
 */
function asyncTwoPhase(options: { failFirst: number; attempts: number }): { sink: Sink<number>; commitAttempts: () => number } {
  let attempts = 0;
  const failures = new Map<string, number>();
  const sink: Sink<number> = {
    commitRetry: { attempts: options.attempts, initialBackoffMs: 1, maxBackoffMs: 4 },
    createWriter: (context) => {
      let staged: number[] = [];
      let sequence = 0;
      return {
        write: (value) => void staged.push(value),
        prepareCommit() {
          const values = staged;
          staged = [];
          const txnId = `${context.subtaskIndex}-${Math.random().toString(36).slice(2)}-${sequence++}`;
          return sleep(2).then(() => (values.length === 0 ? [] : [{ txnId, values }]));
        },
      };
    },
    createCommitter: (context) => ({
      async commit(committables) {
        attempts++;
        await sleep(1);
        for (const txn of committables as { txnId: string; values: number[] }[]) {
          const failed = failures.get(txn.txnId) ?? 0;
          if (failed < options.failFirst) {
            failures.set(txn.txnId, failed + 1);
            throw new Error(`the store refused transaction ${txn.txnId}`);
          }
          context.job.commitOnce("committed", txn.txnId, txn.values);
        }
      },
    }),
  };
  return { sink, commitAttempts: () => attempts };
}

/**
 * Runs `sink` with checkpoints every 5 ms; records go slowly (1 ms each) until a checkpoint has
 * completed, then the map calls `afterCheckpoint` once per record (to inject a failure).
 */
async function runUntilCheckpointed(sink: Sink<number>, options: RunOptions, afterCheckpoint: (n: number) => void = () => {}) {
  let checkpointed = false;
  const map = (n: number): number => {
    if (checkpointed) afterCheckpoint(n);
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    return n;
  };
  // Small batches: a slice of the task (8 batches) ends every 64 records, so the checkpoint
  // runner's timer gets its turn while records are slow.
  const run = runJob(job(sink, map), { mode: "inline", batchRecords: 8, checkpointing: { intervalMs: 5 }, checkpointDir: await tempDir(), ...options });
  const watch = setInterval(() => {
    if (run.checkpoints().some((c) => c.status === "completed")) checkpointed = true;
  }, 1);
  try {
    await run.done;
  } finally {
    clearInterval(watch);
  }
  return run;
}

/** A map's failure, injected once after a checkpoint completed. */
function failOnce(): (n: number) => void {
  let failed = false;
  return () => {
    if (failed) return;
    failed = true;
    throw new Error("injected failure");
  };
}

test("committables given as a promise and asynchronous commits: checkpoints complete and every record is committed once", async () => {
  const { sink } = asyncTwoPhase({ failFirst: 0, attempts: 1 });
  const warnings: string[] = [];
  const run = await runUntilCheckpointed(sink, { logger: logger(warnings) });
  assert.deepEqual([...run.collected<number>("committed")].sort((a, b) => a - b), sequence());
  assert.ok(run.checkpoints().some((c) => c.status === "completed"), `no checkpoint completed: ${warnings.join("\n")}`);
});

test("a failed commit is retried with backoff; the job goes on without a restart", async () => {
  const { sink, commitAttempts } = asyncTwoPhase({ failFirst: 2, attempts: 3 });
  const warnings: string[] = [];
  const run = runJob(job(sink), { mode: "inline", checkpointing: { intervalMs: 5 }, checkpointDir: await tempDir(), logger: logger(warnings) });
  await run.done;
  assert.deepEqual([...run.collected<number>("committed")].sort((a, b) => a - b), sequence());
  assert.equal(run.restarts, 0);
  assert.ok(commitAttempts() >= 3);
  assert.ok(warnings.some((w) => w.startsWith("sink commit failed; retrying")), warnings.join("\n"));
});

test("a commit that fails on every attempt fails the job with SINK_COMMIT_FAILED, with and without checkpointing", async () => {
  for (const checkpointing of [false, true]) {
    const { sink, commitAttempts } = asyncTwoPhase({ failFirst: Number.POSITIVE_INFINITY, attempts: 2 });
    const options: RunOptions = checkpointing
      ? { mode: "inline", checkpointing: { intervalMs: 5 }, checkpointDir: await tempDir(), restartStrategy: { type: "none" }, logger: logger([]) }
      : { mode: "inline", checkpointing: false, logger: logger([]) };
    const run = runJob(job(sink), options);
    await assert.rejects(run.done, (e: unknown) => {
      assert.ok(e instanceof EddyError, String(e));
      assert.equal(e.code, "SINK_COMMIT_FAILED", e.message);
      assert.match(e.message, /sink 'async sink' \(subtask 0\) could not commit after 2 attempts: Error: the store refused transaction/);
      return true;
    });
    assert.ok(commitAttempts() >= 2, `checkpointing ${checkpointing}`);
  }
});

test("a write whose promise rejects fails the job, naming the sink", async () => {
  const sink: Sink<number> = {
    createWriter: () => ({
      write: (value) => (value === 700 ? Promise.reject(new Error("connection reset")) : undefined),
    }),
  };
  const run = runJob(job(sink), { mode: "inline" });
  await assert.rejects(run.done, (e: unknown) => {
    assert.ok(e instanceof EddyError);
    assert.equal(e.code, "USER_FUNCTION_FAILED");
    assert.match(e.message, /operator 'async sink'.*connection reset/);
    return true;
  });
});

test("what a writer records with snapshotState comes back after a restore: the count of records it saw is exact", async () => {
  // The writer counts records; its count is its state. A failure after a checkpoint completed
  // replays from that checkpoint: the restored count plus the replayed records is N again.
  const sink: Sink<number> = {
    createWriter: (context) => {
      let count = (context.restoredState as number[] | undefined)?.reduce((a, b) => a + b, 0) ?? 0;
      return {
        write: () => void count++,
        snapshotState: () => [count],
        flush: () => context.job.collect("count", count),
      };
    },
  };
  const warnings: string[] = [];
  const run = await runUntilCheckpointed(sink, { restartStrategy: { type: "fixed-delay", attempts: 1, delayMs: 0 }, logger: logger(warnings) }, failOnce());
  assert.equal(run.restarts, 1, warnings.join("\n"));
  assert.notEqual(run.restoredFrom[0], null, "the restart did not restore a checkpoint");
  assert.deepEqual(run.collected("count"), [N]);
});

const tempDir = (): Promise<string> => mkdtemp(join(tmpdir(), "eddy-async-sink-"));

test("asyncSink with checkpoints and a failure: every record reaches the service at least once (entries buffered or in flight are in the checkpoint)", async () => {
  // End to end: the service is slow and takes small batches, so entries are buffered and in
  // flight at every barrier, and the failure drops the requests in flight (the connection dies
  // with the task). Whether a lost entry is covered by the checkpoint's copy or by the source's
  // replay depends on timing here; sink-operator.test.ts checks the checkpoint's copy exactly.
  const accepted = new Map<number, number>();
  let connection = 0;
  const sink = asyncSink<number, number>({
    toEntry: (value) => value,
    submit: async (batch) => {
      const sentOn = connection;
      await sleep(20);
      if (sentOn !== connection) throw new Error("connection lost");
      for (const e of batch) accepted.set(e, (accepted.get(e) ?? 0) + 1);
    },
    maxBatchSize: 20,
    maxInFlightRequests: 2,
    maxBufferedRequests: 100,
    maxTimeInBufferMs: 5,
  });
  const fail = failOnce();
  const warnings: string[] = [];
  const run = await runUntilCheckpointed(sink, { restartStrategy: { type: "fixed-delay", attempts: 1, delayMs: 0 }, logger: logger(warnings) }, (n) => {
    try {
      fail(n);
    } catch (e) {
      connection++;
      throw e;
    }
  });
  assert.equal(run.restarts, 1, warnings.join("\n"));
  assert.notEqual(run.restoredFrom[0], null);
  const missing = sequence().filter((n) => !accepted.has(n));
  assert.deepEqual(missing, [], "records lost");
  assert.deepEqual([...accepted.keys()].sort((a, b) => a - b), sequence());
});
