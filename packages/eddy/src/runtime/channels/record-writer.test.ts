import assert from "node:assert/strict";
import { test } from "node:test";
import type { StreamElement } from "../../core/elements.ts";
import type { OutputChannel } from "./channel.ts";
import type { ChannelSelector } from "./partitioner.ts";
import { RecordWriter } from "./record-writer.ts";

/** Every push of every channel, in order: which channel, and the batch's records. */
type Log = [string, unknown[]][];

function channel(name: string, log: Log, crossesThreads = false, seqs?: number[]): OutputChannel {
  const push = (element: StreamElement): void => {
    if (element.kind === "records") {
      log.push([name, [...element.values]]);
      seqs?.push(element.seq!);
    }
  };
  // A channel to another thread encodes what it sends and counts the bytes (remote-channel.ts).
  return crossesThreads ? { push, isWritable: true, bytesOut: 0 } : { push, isWritable: true };
}

const byParity: ChannelSelector = { select: (v) => (v as number) % 2 };
const one: ChannelSelector = { select: () => 0 };

test("a full batch sends its group's partial batches for the same receiver first, on this thread too", () => {
  const log: Log = [];
  // A join's two inputs: auctions (first) and bids, each with a channel to a task on this thread (0)
  // and one to another thread (1).
  const auctions = new RecordWriter([channel("auctions-local", log), channel("auctions-remote", log, true)], byParity, 4);
  const bids = new RecordWriter([channel("bids-local", log), channel("bids-remote", log, true)], byParity, 4);
  auctions.group = [auctions, bids];
  bids.group = [auctions, bids];
  auctions.write(10, 0);
  auctions.write(11, 0);
  bids.write(100, 0);
  bids.write(102, 0);
  bids.write(104, 0);
  assert.deepEqual(log, [], "nothing is full yet");
  bids.write(106, 0); // full, to the task on this thread
  assert.deepEqual(log, [
    ["auctions-local", [10]],
    ["bids-local", [100, 102, 104, 106]],
  ]);
  // The batch to the other receiver waits for its own push.
  auctions.flush();
  assert.deepEqual(log.at(-1), ["auctions-remote", [11]]);
});

test("without a group a full batch sends only itself", () => {
  const log: Log = [];
  const a = new RecordWriter([channel("a", log)], one, 2);
  const b = new RecordWriter([channel("b", log)], one, 2);
  b.write(1, 0);
  a.write(2, 0);
  a.write(3, 0);
  assert.deepEqual(log, [["a", [2, 3]]]);
});

test("writers to one operator push their batches for a receiver together, in the operator's input order, numbered in push order", () => {
  const log: Log = [];
  const seqs: number[] = [];
  // A join's two inputs (auctions first), each with a channel to a task on this thread (0) and
  // one to another thread (1), plus a writer to another operator.
  const auctions = new RecordWriter([channel("auctions-0", log, false, seqs), channel("auctions-1", log, true, seqs)], byParity, 4);
  const bids = new RecordWriter([channel("bids-0", log, false, seqs), channel("bids-1", log, true, seqs)], byParity, 4);
  const other = new RecordWriter([channel("other", log, true, seqs)], one, 4);
  const sequence = { value: 0 };
  for (const w of [auctions, bids, other]) w.sequence = sequence;
  auctions.group = [auctions, bids];
  bids.group = [auctions, bids];

  other.write(1, 0);
  auctions.write(11, 0); // to the other thread
  bids.write(201, 0);
  bids.write(203, 0);
  bids.write(205, 0);
  assert.deepEqual(log, []);
  bids.write(207, 0); // full: the auction to the same receiver goes first, though it crosses threads
  assert.deepEqual(log, [
    ["auctions-1", [11]],
    ["bids-1", [201, 203, 205, 207]],
  ]);
  // Whichever of the two flushes, the first input's batch goes first.
  bids.write(200, 0);
  auctions.write(10, 0);
  bids.flush();
  assert.deepEqual(log.slice(2), [
    ["auctions-0", [10]],
    ["bids-0", [200]],
  ]);
  auctions.write(13, 0);
  bids.write(209, 0);
  auctions.flushOlderThan(Number.POSITIVE_INFINITY);
  assert.deepEqual(log.slice(4), [
    ["auctions-1", [13]],
    ["bids-1", [209]],
  ]);
  // The other operator's batch waited for its own flush; the task's pushes are numbered 1, 2, …
  other.flush();
  assert.deepEqual(log.at(-1), ["other", [1]]);
  assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6, 7]);
});

test("batch numbers wrap after 2^32 - 1", () => {
  const seqs: number[] = [];
  const w = new RecordWriter([channel("a", [], false, seqs)], one, 1);
  w.sequence = { value: 2 ** 32 - 2 };
  for (let i = 0; i < 3; i++) w.write(i, 0);
  assert.deepEqual(seqs, [2 ** 32 - 1, 0, 1]);
});

test("a channel that encodes on push gets the writer's arrays again, cleared; a part-filled batch goes as a copy of its filled part", () => {
  const pushed: { values: readonly unknown[]; timestamps: ArrayLike<number>; keyGroups: ArrayLike<number> | undefined; copy: unknown[] }[] = [];
  const encoding: OutputChannel = {
    consumesOnPush: true,
    isWritable: true,
    push(element) {
      if (element.kind === "records") pushed.push({ values: element.values, timestamps: element.timestamps, keyGroups: element.keyGroups, copy: [...element.values] });
    },
  };
  const queued: unknown[][] = [];
  const queue: OutputChannel = { isWritable: true, push: (e) => void (e.kind === "records" && queued.push(e.values)) };
  const keyed: ChannelSelector & { keyGroup: number } = {
    keyGroup: 0,
    select(v) {
      this.keyGroup = (v as { n: number }).n;
      return (v as { n: number }).n % 2;
    },
  };
  const writer = new RecordWriter([queue, encoding], keyed, 3);
  const r = (n: number) => ({ n });
  for (const n of [1, 3, 5]) writer.write(r(n), n * 10);
  for (const n of [7, 9, 11]) writer.write(r(n), n * 10);
  writer.write(r(13), 130);
  writer.flush();
  assert.deepEqual(pushed.map((p) => p.copy), [[r(1), r(3), r(5)], [r(7), r(9), r(11)], [r(13)]], "each batch as written");
  assert.equal(pushed[1]!.values, pushed[0]!.values, "a full batch's arrays take the next");
  assert.deepEqual(pushed[0]!.values, [undefined, undefined, undefined], "cleared: the records sent are not kept alive");
  assert.notEqual(pushed[2]!.values, pushed[0]!.values, "a part-filled batch goes as a copy");
  assert.deepEqual(pushed[2]!.timestamps, [130]);
  assert.deepEqual(pushed[2]!.keyGroups, [13]);
  assert.equal(pushed[0]!.values.length, 3, "the arrays keep the batch size");
  for (const n of [15, 17, 19]) writer.write(r(n), n);
  assert.deepEqual(pushed[3]!.copy, [r(15), r(17), r(19)]);
  // A channel that queues the batch keeps it: a new array for each.
  for (const n of [0, 2, 4, 6]) writer.write(r(n), n);
  writer.flush();
  assert.deepEqual(queued, [[r(0), r(2), r(4)], [r(6)]]);
  assert.notEqual(queued[0], queued[1]);
});
