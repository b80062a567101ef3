/**
 * StreamTask on its own, with hand-made heads and channels:
 * - the gate of the source yield (executor/task-executor.ts, SourceYield) on the task side: only a
 *   source task whose splits go out on request (TaskHead.splitsOnRequest, from
 *   Source.splitsOnRequest) may sit out a round, and only while it runs with no mail waiting. A
 *   source whose splits are fixed per reader would gain nothing from sitting out and only fall
 *   behind the other readers in event time;
 * - a task fed by two edges of one upstream task (a join of auctions and bids from one source)
 *   reads, of the batches that have arrived on the two, the one the upstream task pushed first (its
 *   `seq`): StreamTask's peers. A watermark, idle status or barrier at the head of one edge's queue
 *   hides the batch behind it; that edge's element is taken first, so the hidden batch still comes
 *   before a later batch of the other edge (docs/design/frames-and-codecs.md, "Two edges of one
 *   task").
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { SourceReader } from "../connector/source.ts";
import type { StreamElement } from "../core/elements.ts";
import { LocalChannel } from "./channels/local-channel.ts";
import { Mailbox } from "./mailbox.ts";
import type { Output } from "./operator.ts";
import { PendingWork } from "./pending-work.ts";
import { StreamTask, type TaskHead, type TaskInput } from "./stream-task.ts";

/** A task of `head` over `inputs`, with no operators chained and no outputs. */
function newTask(head: TaskHead, inputs: readonly TaskInput[] = []): { task: StreamTask; mailbox: Mailbox } {
  const mailbox = new Mailbox(() => {});
  const task = new StreamTask({
    name: "t",
    subtaskIndex: 0,
    head,
    inputs,
    operators: [],
    writers: [],
    mailbox,
    maxRecordsPerSlice: 100,
    wake: () => {},
    pendingWork: new PendingWork(
      () => {},
      (e) => {
        throw e;
      },
    ),
  });
  return { task, mailbox };
}

// --- the source yield's gate ---

const reader: SourceReader<unknown, unknown> = {
  pollNext: () => "nothing",
  isAvailable: () => new Promise(() => {}),
  addSplits: () => {},
  notifyNoMoreSplits: () => {},
  snapshotState: () => [],
};

const output = { collect: () => {}, emitWatermark: () => {}, emitWatermarkStatus: () => {} } as unknown as Output<unknown>;

function source(splitsOnRequest: boolean | undefined): TaskHead {
  return { kind: "source", name: "s", reader, output, ...(splitsOnRequest === undefined ? {} : { splitsOnRequest }) };
}

test("a source whose splits go out on request may sit out once running, and not while mail waits", () => {
  const { task: t, mailbox } = newTask(source(true));
  assert.equal(t.yieldsSplits, true);
  assert.equal(t.mayYield, false, "not before it runs");
  t.open();
  assert.equal(t.mayYield, true);
  mailbox.post(() => {});
  assert.equal(t.mayYield, false, "mail (a barrier, splits to add) runs first");
});

test("a source whose splits are fixed per reader never sits out", () => {
  for (const splitsOnRequest of [false, undefined]) {
    const { task: t } = newTask(source(splitsOnRequest));
    t.open();
    assert.equal(t.yieldsSplits, false, `splitsOnRequest ${splitsOnRequest}`);
    assert.equal(t.mayYield, false, `splitsOnRequest ${splitsOnRequest}`);
  }
});

// --- peers: two edges of one upstream task ---

function records(seq: number, value: string): StreamElement {
  return { kind: "records", values: [value], timestamps: [seq], seq };
}

/** The order in which a join's two inputs receive `a` and `b` (pushed up front). */
function readOrder(a: readonly StreamElement[], b: readonly StreamElement[]): string[] {
  const order: string[] = [];
  const channels = [new LocalChannel(1_000), new LocalChannel(1_000)];
  for (const e of a) channels[0]!.push(e);
  for (const e of b) channels[1]!.push(e);
  const { task } = newTask(
    {
      kind: "two-input",
      operator: {
        processElement1: (v) => void order.push(v as string),
        processElement2: (v) => void order.push(v as string),
        processWatermark: (w) => void order.push(`watermark ${w}`),
      },
    },
    [
      { channel: channels[0]!, inputIndex: 0, channelIndex: 0, peers: [1] },
      { channel: channels[1]!, inputIndex: 1, channelIndex: 0, peers: [0] },
    ],
  );
  task.open();
  task.runSlice();
  return order;
}

test("of two peers' batches, the one pushed first is read first", () => {
  assert.deepEqual(readOrder([records(1, "a1"), records(4, "a4")], [records(2, "b2"), records(3, "b3")]), ["a1", "b2", "b3", "a4"]);
});

test("a watermark at the head of a peer's queue does not let a later batch of the other overtake the batch behind it", () => {
  // The source pushed a82, then a watermark to both edges, then a83 and b84. The join has read
  // b's watermark already (it was at b's head); a's is still queued before a83.
  const order = readOrder([records(82, "a82"), { kind: "watermark", timestamp: 10 }, records(83, "a83")], [records(84, "b84")]);
  assert.deepEqual(
    order.filter((e) => !e.startsWith("watermark")),
    ["a82", "a83", "b84"],
  );
});

test("an idle status at the head of a peer's queue is taken first too", () => {
  const order = readOrder([records(82, "a82"), { kind: "status", idle: false }, records(83, "a83")], [records(84, "b84")]);
  assert.deepEqual(order, ["a82", "a83", "b84"]);
});
