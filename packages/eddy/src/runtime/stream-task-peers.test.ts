/**
 * A task fed by two edges of one upstream task (a join of auctions and bids from one source) reads,
 * of the batches that have arrived on the two, the one the upstream task pushed first (its `seq`):
 * StreamTask's peers. A watermark, idle status or barrier at the head of one edge's queue hides
 * the batch behind it; that edge's element is taken first, so the hidden batch still comes before
 * a later batch of the other edge (docs/design/frames-and-codecs.md, "Two edges of one task").
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { StreamElement } from "../core/elements.ts";
import { LocalChannel } from "./channels/local-channel.ts";
import { Mailbox } from "./mailbox.ts";
import { PendingWork } from "./pending-work.ts";
import { StreamTask } from "./stream-task.ts";

function records(seq: number, value: string): StreamElement {
  return { kind: "records", values: [value], timestamps: [seq], seq };
}

/** The order in which the join's two inputs receive `a` and `b` (pushed up front). */
function readOrder(a: readonly StreamElement[], b: readonly StreamElement[]): string[] {
  const order: string[] = [];
  const channels = [new LocalChannel(1_000), new LocalChannel(1_000)];
  for (const e of a) channels[0]!.push(e);
  for (const e of b) channels[1]!.push(e);
  const task = new StreamTask({
    name: "join",
    subtaskIndex: 0,
    head: {
      kind: "two-input",
      operator: {
        processElement1: (v) => void order.push(v as string),
        processElement2: (v) => void order.push(v as string),
        processWatermark: (w) => void order.push(`watermark ${w}`),
      },
    },
    inputs: [
      { channel: channels[0]!, inputIndex: 0, channelIndex: 0, peers: [1] },
      { channel: channels[1]!, inputIndex: 1, channelIndex: 0, peers: [0] },
    ],
    operators: [],
    writers: [],
    mailbox: new Mailbox(() => {}),
    maxRecordsPerSlice: 100,
    wake: () => {},
    pendingWork: new PendingWork(
      () => {},
      (e) => {
        throw e;
      },
    ),
  });
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
