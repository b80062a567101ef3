import assert from "node:assert/strict";
import { test } from "node:test";
import type { StreamElement } from "../../core/elements.ts";
import type { OutputChannel } from "./channel.ts";
import type { ChannelSelector } from "./partitioner.ts";
import { RecordWriter } from "./record-writer.ts";

/** Every push of every channel, in order: which channel, and the batch's records. */
type Log = [string, unknown[]][];

function channel(name: string, log: Log, crossesThreads = false): OutputChannel {
  const push = (element: StreamElement): void => {
    if (element.kind === "records") log.push([name, [...element.values]]);
  };
  // A channel to another thread encodes what it sends and counts the bytes (remote-channel.ts).
  return crossesThreads ? { push, isWritable: true, bytesOut: 0 } : { push, isWritable: true };
}

const byParity: ChannelSelector = { select: (v) => (v as number) % 2 };
const one: ChannelSelector = { select: () => 0 };

test("a full batch sends the partial batches of the task's other writers first, to same-thread channels only", () => {
  const log: Log = [];
  const bids = new RecordWriter([channel("bids", log)], one, 4);
  // The other writer has a channel on this thread (0) and one to another thread (1).
  const auctions = new RecordWriter([channel("auctions-local", log), channel("auctions-remote", log, true)], byParity, 4);
  bids.siblings = [auctions];
  auctions.siblings = [bids];
  auctions.write(10, 0);
  auctions.write(11, 0);
  bids.write(100, 0);
  bids.write(101, 0);
  bids.write(102, 0);
  assert.deepEqual(log, [], "nothing is full yet");
  bids.write(103, 0); // full
  assert.deepEqual(log, [
    ["auctions-local", [10]],
    ["bids", [100, 101, 102, 103]],
  ]);
  // The batch to the other thread waits for its own flush (it is encoded: small batches cost).
  auctions.flush();
  assert.deepEqual(log.at(-1), ["auctions-remote", [11]]);
});

test("without siblings a full batch sends only itself", () => {
  const log: Log = [];
  const a = new RecordWriter([channel("a", log)], one, 2);
  const b = new RecordWriter([channel("b", log)], one, 2);
  b.write(1, 0);
  a.write(2, 0);
  a.write(3, 0);
  assert.deepEqual(log, [["a", [2, 3]]]);
});
