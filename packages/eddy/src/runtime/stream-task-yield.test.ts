/**
 * The gate of the source yield (executor/task-executor.ts, SourceYield) on the task side: only a
 * source task whose splits go out on request (TaskHead.splitsOnRequest, from
 * Source.splitsOnRequest) may sit out a round, and only while it runs with no mail waiting. A
 * source whose splits are fixed per reader would gain nothing from sitting out and only fall
 * behind the other readers in event time.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { SourceReader } from "../connector/source.ts";
import { Mailbox } from "./mailbox.ts";
import type { Output } from "./operator.ts";
import { PendingWork } from "./pending-work.ts";
import { StreamTask, type TaskHead } from "./stream-task.ts";

const reader: SourceReader<unknown, unknown> = {
  pollNext: () => "nothing",
  isAvailable: () => new Promise(() => {}),
  addSplits: () => {},
  notifyNoMoreSplits: () => {},
  snapshotState: () => [],
};

const output: Output<unknown> = {
  collect: () => {},
  emitWatermark: () => {},
  emitWatermarkStatus: () => {},
} as unknown as Output<unknown>;

function task(head: TaskHead): { task: StreamTask; mailbox: Mailbox } {
  const mailbox = new Mailbox(() => {});
  const t = new StreamTask({
    name: "t",
    subtaskIndex: 0,
    head,
    inputs: [],
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
  return { task: t, mailbox };
}

function source(splitsOnRequest: boolean | undefined): TaskHead {
  return { kind: "source", name: "s", reader, output, ...(splitsOnRequest === undefined ? {} : { splitsOnRequest }) };
}

test("a source whose splits go out on request may sit out once running, and not while mail waits", () => {
  const { task: t, mailbox } = task(source(true));
  assert.equal(t.yieldsSplits, true);
  assert.equal(t.mayYield, false, "not before it runs");
  t.open();
  assert.equal(t.mayYield, true);
  mailbox.post(() => {});
  assert.equal(t.mayYield, false, "mail (a barrier, splits to add) runs first");
});

test("a source whose splits are fixed per reader never sits out", () => {
  for (const splitsOnRequest of [false, undefined]) {
    const { task: t } = task(source(splitsOnRequest));
    t.open();
    assert.equal(t.yieldsSplits, false, `splitsOnRequest ${splitsOnRequest}`);
    assert.equal(t.mayYield, false, `splitsOnRequest ${splitsOnRequest}`);
  }
});
