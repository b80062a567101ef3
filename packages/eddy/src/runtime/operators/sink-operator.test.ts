/**
 * The sink operator with asynchronous writers, through OperatorTestHarness.forSink: what a
 * snapshot holds of a batching writer (requests in flight and buffered) is sent again by the
 * writer restored from it; records that arrive while a write's promise is pending are written
 * after it, in order, and before the barrier's prepareCommit.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { asyncSink } from "../../connector/async-sink.ts";
import type { Sink } from "../../connector/sink.ts";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";

test("entries in flight and buffered at a snapshot are sent again by the sink restored from it", async () => {
  const held: (() => void)[] = [];
  const first = new Set<number>();
  const sink1 = asyncSink<number, number>({
    toEntry: (v) => v,
    // The first service never answers: what it was sent is lost with the task.
    submit: (batch) => new Promise<void>((resolve) => held.push(() => (batch.forEach((e) => first.add(e)), resolve()))),
    maxBatchSize: 2,
    maxInFlightRequests: 1,
    maxTimeInBufferMs: 0,
  });
  const h1 = OperatorTestHarness.forSink(sink1);
  for (let i = 1; i <= 5; i++) h1.processElement(i);
  assert.equal(held.length, 1, "one request in flight ([1, 2]); 3, 4, 5 buffered");
  const snapshot = await h1.snapshot(1);

  const accepted: number[] = [];
  const sink2 = asyncSink<number, number>({ toEntry: (v) => v, submit: async (batch) => void accepted.push(...batch), maxBatchSize: 10, maxTimeInBufferMs: 0 });
  const h2 = OperatorTestHarness.forSink(sink2, { restore: snapshot });
  h2.processElement(6).endInput();
  await h2.settled();
  assert.deepEqual(first.size, 0);
  assert.deepEqual(accepted, [1, 2, 3, 4, 5, 6]);
});

test("records that arrive while a write's promise is pending are written after it, in order, before the barrier's prepareCommit", async () => {
  const calls: string[] = [];
  let release!: () => void;
  const sink: Sink<number> = {
    createWriter: () => {
      let staged: number[] = [];
      let pending = false;
      return {
        write(value) {
          assert.equal(pending, false, `write(${value}) while a write's promise was pending`);
          calls.push(`write ${value}`);
          staged.push(value);
          if (value !== 2) return;
          pending = true;
          return new Promise<void>((resolve) => (release = () => ((pending = false), resolve())));
        },
        prepareCommit() {
          assert.equal(pending, false, "prepareCommit while a write's promise was pending");
          calls.push(`prepareCommit ${staged.join(",")}`);
          const committables = [staged];
          staged = [];
          return committables;
        },
      };
    },
    createCommitter: () => ({ commit: (c) => void calls.push(`commit ${JSON.stringify(c)}`) }),
  };
  const h = OperatorTestHarness.forSink(sink);
  // A batch of four: the task cannot stop in the middle, so 3 and 4 arrive while 2's promise is pending.
  for (const n of [1, 2, 3, 4]) h.processElement(n);
  assert.deepEqual(calls, ["write 1", "write 2"]);
  // The barrier (a source's comes as mail, while input waits): its snapshot waits for the writes.
  const snapshot = h.snapshot(1);
  release();
  await snapshot;
  h.notifyCheckpointComplete(1);
  await h.settled();
  assert.deepEqual(calls, ["write 1", "write 2", "write 3", "write 4", "prepareCommit 1,2,3,4", "commit [[1,2,3,4]]"]);
});

test("with committableOwner, a restored committer gets exactly the committables whose owner modulo the parallelism is its index, in checkpoint order; prepareCommit gets the checkpoint id", async () => {
  interface Owned {
    readonly owner: number;
    readonly checkpoint: number;
  }
  const commits: string[] = [];
  const sink: Sink<number> = {
    // Each barrier's committables claim owners 0, 1 and 2 (as committables restored from three old subtasks would).
    createWriter: () => ({ write() {}, prepareCommit: (checkpointId) => [0, 1, 2].map((owner): Owned => ({ owner, checkpoint: checkpointId! })) }),
    createCommitter: (context) => ({ commit: (cs) => void commits.push(`${context.subtaskIndex}: ${(cs as Owned[]).map((c) => `${c.owner}@${c.checkpoint}`).join(" ")}`) }),
    committableOwner: (c) => (c as Owned).owner,
  };
  const h1 = OperatorTestHarness.forSink(sink);
  h1.processElement(1);
  await h1.snapshot(7);
  h1.processElement(2);
  // Checkpoint 7 never completed here: both are pending in checkpoint 8.
  const snapshot = await h1.snapshot(8);
  for (const subtaskIndex of [0, 1]) {
    await OperatorTestHarness.forSink(sink, { restore: snapshot, parallelism: 2, subtaskIndex }).open().settled();
  }
  assert.deepEqual(commits, ["0: 0@7 2@7 0@8 2@8", "1: 1@7 1@8"]);
});
