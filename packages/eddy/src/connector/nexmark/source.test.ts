import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, EddyError, WatermarkStrategy } from "eddy";
import { collectSink, ManualClock, runJob } from "eddy/testing";
import { readerOutputOf, type ReaderOutput, type SourceReader } from "../source.ts";
import { sourceReaderContext } from "../../testing/source-reader-context.ts";
import { eventTimestamp, nexmarkConfig, nexmarkEvent } from "./generator.ts";
import type { NexmarkEvent } from "./model.ts";
import { DEFAULT_SPLIT_BLOCK, nexmarkSource, type NexmarkSourceOptions, type NexmarkSplit } from "./source.ts";

/** Events as comparable strings, sorted: a multiset. */
function multiset(events: readonly NexmarkEvent[]): string[] {
  return events.map((e) => JSON.stringify(e)).sort();
}

function expected(firstEventId: number, events: number, options: NexmarkSourceOptions = {}): string[] {
  const config = nexmarkConfig({ ...options.config, firstEventId });
  const out: NexmarkEvent[] = [];
  for (let id = firstEventId; id < firstEventId + events; id++) out.push(nexmarkEvent(id, config));
  return multiset(out);
}

/** The splits the static enumerator assigns to each subtask at `parallelism`. */
function assignedSplits(options: NexmarkSourceOptions, parallelism: number): NexmarkSplit[][] {
  const assigned: NexmarkSplit[][] = Array.from({ length: parallelism }, () => []);
  const enumerator = nexmarkSource({ ...options, splitAssignment: "static" }).createEnumerator({
    parallelism,
    assignSplits: (subtask, splits) => void assigned[subtask]!.push(...splits),
    signalNoMoreSplits: () => {},
    failJob: (cause) => assert.fail(`the enumerator failed the job: ${String(cause)}`),
  });
  enumerator.start?.();
  for (let i = 0; i < parallelism; i++) enumerator.addReader(i);
  return assigned;
}

interface Emitted {
  readonly events: NexmarkEvent[];
  readonly timestamps: number[];
  readonly output: ReaderOutput<NexmarkEvent>;
}

function recorder(): Emitted {
  const events: NexmarkEvent[] = [];
  const timestamps: number[] = [];
  return {
    events,
    timestamps,
    output: readerOutputOf({
      collect: (value, timestamp) => void (events.push(value), timestamps.push(timestamp!)),
      reportBadRecord: (bad) => assert.fail(`the generator reported a bad record: ${String(bad.error)}`),
    }),
  };
}

function reader(options: NexmarkSourceOptions, splits: readonly NexmarkSplit[], parallelism = 1): SourceReader<NexmarkEvent, NexmarkSplit> {
  const r = nexmarkSource(options).createReader(sourceReaderContext({ subtaskIndex: 0, parallelism }));
  r.start?.();
  r.addSplits(splits);
  r.notifyNoMoreSplits();
  return r;
}

function drain(r: SourceReader<NexmarkEvent, NexmarkSplit>, into: Emitted): void {
  while (r.pollNext(into.output) === "more");
}

for (const parallelism of [1, 3]) {
  test(`a job at parallelism ${parallelism} emits exactly the events of ids firstEventId..firstEventId+events-1`, async () => {
    const options = { events: 10_000, config: { firstEventId: 123, seed: 7 } };
    const handle = runJob(
      defineJob("nexmark-all", (env) => {
        env
          .fromSource(nexmarkSource(options), WatermarkStrategy.forMonotonousTimestamps<NexmarkEvent>(), "nexmark")
          .sinkTo(collectSink("events"));
      }),
      { parallelism },
    );
    await handle.done;
    assert.deepEqual(multiset(handle.collected<NexmarkEvent>("events")), expected(123, 10_000, options));
  });
}

test("fewer events than subtasks, and zero events, are still exact", async () => {
  for (const events of [2, 0]) {
    const handle = runJob(
      defineJob("nexmark-few", (env) => {
        env.fromSource(nexmarkSource({ events }), WatermarkStrategy.noWatermarks<NexmarkEvent>(), "nexmark").sinkTo(collectSink("events"));
      }),
      { parallelism: 3 },
    );
    await handle.done;
    assert.deepEqual(multiset(handle.collected<NexmarkEvent>("events")), expected(0, events));
  }
});

/** The ids split `position` owns in [position, end), by the rule of source.ts: floor(id / block) ≡ floor(position / block) (mod stride). */
function ownedIds(split: NexmarkSplit): number[] {
  const block = split.block ?? 1;
  const owner = Math.floor(split.position / block) % split.stride;
  const ids: number[] = [];
  for (let id = split.position; id < split.end!; id++) if (Math.floor(id / block) % split.stride === owner) ids.push(id);
  return ids;
}

test("static: each split takes blocks of consecutive ids in turn; every id is emitted once, in order within a reader", () => {
  // Blocks of 100 from id 250 (not a block's start), 1,000 events, 3 splits: split 0 takes ids
  // 250-299 (what is left of block 2), then blocks 5, 8 and 11 (1,100-1,199); the run ends at 1,250.
  const options = { events: 1_000, splitBlock: 100, config: { firstEventId: 250 } };
  const splits = assignedSplits(options, 3).map((s) => s[0]!);
  assert.deepEqual(
    splits.map((s) => [s.position, s.stride, s.end, s.block]),
    [
      [250, 3, 1_250, 100],
      [300, 3, 1_250, 100],
      [400, 3, 1_250, 100],
    ],
  );
  const config = nexmarkConfig(options.config);
  const all: number[] = [];
  for (const split of splits) {
    const got = recorder();
    drain(reader(options, [split]), got);
    const ids = ownedIds(split);
    assert.deepEqual(got.events, ids.map((id) => nexmarkEvent(id, config)));
    assert.deepEqual(got.timestamps, ids.map((id) => eventTimestamp(id, config)));
    all.push(...ids);
  }
  assert.deepEqual(ownedIds(splits[0]!).slice(49, 52), [299, 500, 501]);
  assert.deepEqual(all.sort((a, b) => a - b), Array.from({ length: 1_000 }, (_, i) => 250 + i));
  // Fewer blocks than subtasks: fewer splits.
  assert.deepEqual(assignedSplits({ events: 150, splitBlock: 100 }, 3).map((s) => s.length), [1, 1, 0]);
});

test("splitBlock must be a positive integer", () => {
  for (const splitBlock of [0, -1, 1.5, Number.NaN]) assert.throws(() => nexmarkSource({ splitBlock }), /splitBlock must be a positive integer/);
});

test("static, splitBlock 1: each split takes every n-th id; a reader emits its ids in order with their event time as timestamp", () => {
  const options = { events: 1_000, splitBlock: 1 };
  const splits = assignedSplits(options, 3);
  assert.deepEqual(splits.map((s) => s.map((x) => [x.position, x.stride, x.end])), [[[0, 3, 1_000]], [[1, 3, 1_000]], [[2, 3, 1_000]]]);
  const config = nexmarkConfig();
  const got = recorder();
  drain(reader(options, splits[1]!), got);
  assert.equal(got.events.length, 333);
  got.events.forEach((e, i) => {
    assert.deepEqual(e, nexmarkEvent(1 + 3 * i, config));
    assert.equal(got.timestamps[i], eventTimestamp(1 + 3 * i, config));
  });
});

for (const splitBlock of [1, 700]) {
  test(`a reader restored from a snapshot emits exactly the remaining events, none lost or repeated (splitBlock ${splitBlock})`, () => {
    const options = { events: 50_000, config: { seed: 3 }, splitBlock };
    const all = assignedSplits(options, 2);
    const got = recorder();
    for (const splits of all) {
      const first = reader(options, splits);
      const before = got.events.length;
      for (let i = 0; i < 5; i++) assert.equal(first.pollNext(got.output), "more");
      const snapshot = first.snapshotState(1);
      first.close?.();
      // The position is the next event id the split owns. Splits of every n-th id (block 1) are
      // snapshotted without a block, as before blocks existed.
      const position = ownedIds(splits[0]!)[got.events.length - before]!;
      assert.deepEqual(snapshot, [{ ...splits[0]!, position }]);
      assert.equal("block" in snapshot[0]!, splitBlock !== 1);
      // Restore through a JSON round trip, as a checkpoint would store it.
      const restored = reader(options, JSON.parse(JSON.stringify(snapshot)) as NexmarkSplit[]);
      drain(restored, got);
      assert.deepEqual(restored.snapshotState(2), []);
    }
    assert.deepEqual(multiset(got.events), expected(0, 50_000, options));
  });
}

test("a reader holding several splits (restore at lower parallelism) merges them in id order", () => {
  const options = { events: 10_000 };
  const splits = assignedSplits(options, 4).flat();
  const got = recorder();
  drain(reader(options, splits), got);
  assert.equal(got.events.length, 10_000);
  for (let i = 1; i < got.timestamps.length; i++) assert.ok(got.timestamps[i]! >= got.timestamps[i - 1]!);
  assert.deepEqual(got.events, Array.from({ length: 10_000 }, (_, id) => nexmarkEvent(id, nexmarkConfig())));
});

test("an unbounded source never ends; its splits snapshot without an end and resume exactly", () => {
  const options = {};
  const source = nexmarkSource(options);
  assert.equal(source.boundedness, "continuous");
  const [splits] = assignedSplits(options, 1);
  assert.deepEqual(splits, [{ splitId: "nexmark-0-of-1", position: 0, stride: 1, block: DEFAULT_SPLIT_BLOCK }]);
  const r = reader(options, splits!);
  const got = recorder();
  for (let i = 0; i < 20; i++) assert.equal(r.pollNext(got.output), "more");
  const snapshot = r.snapshotState(1);
  assert.deepEqual(snapshot, [{ splitId: "nexmark-0-of-1", position: got.events.length, stride: 1, block: DEFAULT_SPLIT_BLOCK }]);
  const resumed = reader(options, snapshot);
  assert.equal(resumed.pollNext(got.output), "more");
  assert.deepEqual(got.events.slice(-3), [got.events.length - 3, got.events.length - 2, got.events.length - 1].map((id) => nexmarkEvent(id, nexmarkConfig())));
});

test("ahead of its rate the reader returns 'nothing' and becomes available from a clock timer, without spinning", async () => {
  const clock = new ManualClock(1_000);
  // 4,000/s over 2 subtasks: 2 events per ms for this reader.
  const options = { events: 1_000, ratePerSecond: 4_000, clock, splitBlock: 1 };
  const r = reader(options, assignedSplits(options, 2)[0]!, 2);
  const got = recorder();
  assert.equal(r.pollNext(got.output), "more");
  assert.equal(got.events.length, 1); // the first event is due at once
  assert.equal(r.pollNext(got.output), "nothing");
  assert.equal(r.pollNext(got.output), "nothing");
  assert.equal(clock.pendingCount, 1);
  let available = false;
  void r.isAvailable().then(() => (available = true));
  await Promise.resolve();
  assert.equal(available, false);
  clock.advance(1);
  await Promise.resolve();
  assert.equal(available, true);
  drain(r, got);
  assert.equal(got.events.length, 3); // due by t+1ms: events 0, 1 and 2
  clock.advance(100);
  drain(r, got);
  assert.equal(got.events.length, 203); // event k is due k/2 ms after the first poll
  clock.advance(10_000);
  drain(r, got);
  assert.equal(r.pollNext(got.output), "end");
  assert.equal(got.events.length, 500);
});

test("a rate-limited job takes about events / rate of wall time", async () => {
  const started = performance.now();
  const handle = runJob(
    defineJob("nexmark-rate", (env) => {
      env
        .fromSource(nexmarkSource({ events: 2_000, ratePerSecond: 10_000 }), WatermarkStrategy.noWatermarks<NexmarkEvent>(), "nexmark")
        .sinkTo(collectSink("events"));
    }),
    { parallelism: 2 },
  );
  // The system clock's timers are unref'd and nothing else holds the event loop while the
  // reader waits for its rate, so without this the process would exit under the pending job.
  // Nothing but the job keeps this process alive while the source waits on its (unref'd) rate
  // timer: the executor itself must hold the event loop open until the job ends.
  await handle.done;
  const elapsedMs = performance.now() - started;
  assert.equal(handle.collected("events").length, 2_000);
  assert.ok(elapsedMs >= 150, `2,000 events at 10,000/s took ${elapsedMs.toFixed(0)} ms`);
});

test("the reader's pendingRecords gauge (FLIP-33) counts the ids left in its splits, to 0 at the end; unbounded is +Infinity", () => {
  const context = sourceReaderContext({ subtaskIndex: 1, parallelism: 3 });
  const r = nexmarkSource({ events: 1_000, splitBlock: 1 }).createReader(context);
  const pending = (): number | undefined => context.metrics.standardGauges().pendingRecords;
  assert.equal(pending(), 0, "no split yet");
  r.addSplits(assignedSplits({ events: 1_000, splitBlock: 1 }, 3)[1]!);
  assert.equal(pending(), 333, "ids 1, 4, …, 997");
  const into = recorder();
  r.pollNext(into.output);
  assert.equal(pending(), 333 - into.events.length);
  drain(r, into);
  assert.equal(into.events.length, 333);
  assert.equal(pending(), 0);

  // Blocks: split 1 of 3 over 2,250 ids in blocks of 100 owns blocks 1, 4, 7, …, 19 and 22 (ids
  // 2,200-2,249, cut by the end): 7 × 100 + 50. Counted down as it emits, whatever block it is in.
  const blocks = sourceReaderContext({ subtaskIndex: 1, parallelism: 3 });
  const b = nexmarkSource({ events: 2_250, splitBlock: 100 }).createReader(blocks);
  b.addSplits(assignedSplits({ events: 2_250, splitBlock: 100 }, 3)[1]!);
  const blockPending = (): number | undefined => blocks.metrics.standardGauges().pendingRecords;
  assert.equal(blockPending(), 750);
  const fromBlocks = recorder();
  while (b.pollNext(fromBlocks.output) === "more") assert.equal(blockPending(), 750 - fromBlocks.events.length);
  assert.equal(fromBlocks.events.length, 750);
  assert.equal(blockPending(), 0);

  const endless = sourceReaderContext({ subtaskIndex: 0, parallelism: 1 });
  const u = nexmarkSource({}).createReader(endless);
  u.addSplits(assignedSplits({}, 1)[0]!);
  assert.equal(endless.metrics.standardGauges().pendingRecords, Number.POSITIVE_INFINITY);
});

/**
 * An on-request enumerator and its readers wired by hand: a reader's split request and the
 * enumerator's answer each wait in a queue until `deliver` (as messages between threads would).
 */
function onRequestHarness(options: NexmarkSourceOptions, parallelism: number) {
  const source = nexmarkSource(options);
  const queue: (() => void)[] = [];
  const assigned: NexmarkSplit[][] = Array.from({ length: parallelism }, () => []);
  const requests = Array.from({ length: parallelism }, () => 0);
  const noMore = Array.from({ length: parallelism }, () => false);
  const readers: SourceReader<NexmarkEvent, NexmarkSplit>[] = [];
  const context = {
    parallelism,
    assignSplits: (subtask: number, splits: readonly NexmarkSplit[]) =>
      void queue.push(() => {
        assigned[subtask]!.push(...splits);
        readers[subtask]!.addSplits(splits);
      }),
    signalNoMoreSplits: (subtask: number) =>
      void queue.push(() => {
        noMore[subtask] = true;
        readers[subtask]!.notifyNoMoreSplits();
      }),
    failJob: (cause: unknown) => assert.fail(`the enumerator failed the job: ${String(cause)}`),
  };
  let enumerator = source.createEnumerator(context);
  for (let i = 0; i < parallelism; i++) {
    readers.push(
      source.createReader(
        sourceReaderContext({
          subtaskIndex: i,
          parallelism,
          sendSplitRequest: () => {
            requests[i]!++;
            queue.push(() => enumerator.handleSplitRequest!(i));
          },
        }),
      ),
    );
    enumerator.addReader(i);
    readers[i]!.start?.();
  }
  return {
    source,
    readers,
    assigned,
    requests,
    noMore,
    get enumerator() {
      return enumerator;
    },
    /** Restores the enumerator from what it recorded (through JSON, as a checkpoint stores it). */
    restore(state: unknown) {
      enumerator = source.restoreEnumerator!(context, JSON.parse(JSON.stringify(state)));
    },
    deliver() {
      while (queue.length > 0) queue.shift()!();
    },
  };
}

test("on request: blocks go in id order to whichever reader asks, two in hand each; a reader polled 3× as often takes ~3× the blocks; the readers stay a few blocks apart; every id once", () => {
  const block = 2_000;
  const events = 100_000;
  const options = { events, splitBlock: block, config: { firstEventId: 500 } };
  const h = onRequestHarness(options, 2);
  const got = [recorder(), recorder()];
  const done = [false, false];
  const config = nexmarkConfig(options.config);
  let maxGap = 0;
  for (let round = 0; !(done[0] && done[1]); round++) {
    assert.ok(round < 1_000, "the readers end");
    h.deliver();
    // Reader 0 is polled three times for each poll of reader 1 (each poll: up to 1,024 events).
    for (const [subtask, polls] of [[0, 3], [1, 1]] as const) {
      for (let p = 0; p < polls && !done[subtask]; p++) done[subtask] = h.readers[subtask]!.pollNext(got[subtask]!.output) === "end";
    }
    // Each reader's latest event time, once both have emitted.
    const [t0, t1] = got.map((e) => e.timestamps.at(-1));
    if (t0 !== undefined && t1 !== undefined) maxGap = Math.max(maxGap, Math.abs(t0 - t1));
  }
  // Blocks in id order, aligned to multiples of the block (the first one cut at firstEventId).
  const blocks = h.assigned.flat().sort((a, b) => a.position - b.position);
  assert.deepEqual(blocks[0], { splitId: "nexmark-500", position: 500, stride: 1, end: 2_000 });
  assert.deepEqual(blocks.at(-1), { splitId: "nexmark-100000", position: 100_000, stride: 1, end: 100_500 });
  assert.equal(blocks.length, 51);
  for (let i = 1; i < blocks.length; i++) assert.equal(blocks[i]!.position, blocks[i - 1]!.end);
  // Each reader asked once per block it took, and once more to be told there are no more.
  assert.deepEqual(h.requests, h.assigned.map((a) => a.length + 1));
  assert.deepEqual(h.noMore, [true, true]);
  // The busier-polled reader generated most of the events.
  const [a, b] = h.assigned.map((s) => s.length) as [number, number];
  assert.ok(a > 2 * b, `blocks taken: ${a} and ${b}`);
  // Within each reader, ids (and event times) increase; together, every id once.
  const ids = new Map<string, number>();
  for (let id = 500; id < 100_500; id++) ids.set(JSON.stringify(nexmarkEvent(id, config)), id);
  const all: number[] = [];
  for (const e of got) {
    const mine = e.events.map((ev) => ids.get(JSON.stringify(ev))!);
    for (let i = 1; i < mine.length; i++) assert.ok(mine[i]! > mine[i - 1]!);
    all.push(...mine);
  }
  assert.deepEqual(all.sort((x, y) => x - y), Array.from({ length: events }, (_, i) => 500 + i));
  // Event-time distance between the readers: bounded by the blocks the slower one holds while the
  // other runs ahead (5 blocks here, deterministically). With static assignment it would grow with
  // the run: reader 1 would still be at about its 8th of 25 blocks when reader 0 ends, ~34 blocks
  // behind.
  const blockMs = eventTimestamp(block, config) - eventTimestamp(0, config);
  assert.ok(maxGap <= 8 * blockMs, `largest event-time gap ${maxGap} ms, a block is ${blockMs} ms`);
});

test("on request: the enumerator records the next id it hands out and resumes there; a run's end ends every reader", () => {
  const h = onRequestHarness({ events: 10_000, splitBlock: 1_000 }, 2);
  h.deliver(); // each reader's first request, and the answers
  h.deliver(); // each reader's second request (two in hand), and the answers
  assert.deepEqual(h.assigned.flat().map((s) => s.position).sort((a, b) => a - b), [0, 1_000, 2_000, 3_000]);
  const state = h.enumerator.snapshotState!(1);
  assert.deepEqual(state, { v: 1, next: 4_000, end: 10_000 });
  h.restore(state);
  h.enumerator.handleSplitRequest!(1);
  h.deliver();
  assert.deepEqual(h.assigned[1]!.at(-1), { splitId: "nexmark-4000", position: 4_000, stride: 1, end: 5_000 });
  // Unbounded: the state has no end, and blocks keep coming. (Blocks larger than a poll's 1,024
  // events: a poll never uses up both blocks in hand, so it always has events.)
  const endless = onRequestHarness({ splitBlock: 5_000 }, 1);
  endless.deliver();
  assert.deepEqual(endless.enumerator.snapshotState!(1), { v: 1, next: 10_000 });
  const got = recorder();
  for (let i = 0; i < 100; i++) {
    endless.deliver();
    assert.equal(endless.readers[0]!.pollNext(got.output), "more");
  }
  assert.equal(got.events.length, 100 * 1_024);
  assert.deepEqual(endless.noMore, [false]);
});

test("on request: what a restore finds decides the enumerator; a state it does not read is CHECKPOINT_CORRUPT", () => {
  const source = nexmarkSource({ events: 1_000 });
  const assigned: [number, NexmarkSplit[]][] = [];
  const context = {
    parallelism: 1,
    assignSplits: (subtask: number, splits: readonly NexmarkSplit[]) => void assigned.push([subtask, [...splits]]),
    signalNoMoreSplits: () => {},
    failJob: (cause: unknown) => assert.fail(String(cause)),
  };
  // A checkpoint of static assignment (or of a version before on-request): the splits not yet
  // assigned, assigned again when the reader registers.
  const leftover: NexmarkSplit = { splitId: "nexmark-0-of-1", position: 10, stride: 1, end: 1_000, block: 20_000 };
  source.restoreEnumerator!(context, [leftover]).addReader(0);
  assert.deepEqual(assigned, [[0, [leftover]]]);
  // No state: the source is new in the job (added before the restore): it starts afresh.
  const fresh: [number, NexmarkSplit[]][] = [];
  const restoredFresh = source.restoreEnumerator!({ ...context, assignSplits: (subtask, splits) => void fresh.push([subtask, [...splits]]) }, undefined);
  restoredFresh.handleSplitRequest!(0);
  assert.deepEqual(fresh, [[0, [{ splitId: "nexmark-0", position: 0, stride: 1, end: 1_000 }]]]);
  for (const bad of [null, 3, {}, { v: 2, next: 0 }, { v: 1, next: -1 }, { v: 1, next: 1.5 }, { v: 1, next: 0, end: "x" }]) {
    assert.throws(
      () => source.restoreEnumerator!(context, bad),
      (e: unknown) => e instanceof EddyError && e.code === "CHECKPOINT_CORRUPT",
      JSON.stringify(bad),
    );
  }
});

test("splitAssignment must be on-request or static; a split added twice fails clearly", () => {
  assert.throws(() => nexmarkSource({ splitAssignment: "dynamic" as "static" }), /splitAssignment must be "on-request" or "static"/);
  const r = reader({ events: 1_000 }, [
    { splitId: "a", position: 0, stride: 1, end: 500 },
    { splitId: "b", position: 0, stride: 1, end: 500 },
  ]);
  assert.throws(() => drain(r, recorder()), /both hold id 0: a split was added twice/);
});

test("a reader given its blocks out of order emits them in id order", () => {
  const options = { events: 3_000, splitBlock: 1_000 };
  const got = recorder();
  drain(
    reader(options, [
      { splitId: "nexmark-2000", position: 2_000, stride: 1, end: 3_000 },
      { splitId: "nexmark-0", position: 0, stride: 1, end: 1_000 },
    ]),
    got,
  );
  const config = nexmarkConfig();
  const ids = [...Array.from({ length: 1_000 }, (_, i) => i), ...Array.from({ length: 1_000 }, (_, i) => 2_000 + i)];
  assert.deepEqual(got.events, ids.map((id) => nexmarkEvent(id, config)));
});

test("on request (the default), the source says its splits go to whichever reader asks, so the source yield may hold a reader back; static, not", () => {
  assert.equal(nexmarkSource({ events: 10 }).splitsOnRequest, true);
  assert.equal(nexmarkSource({ events: 10, splitAssignment: "on-request" }).splitsOnRequest, true);
  assert.equal(nexmarkSource({ events: 10, splitAssignment: "static" }).splitsOnRequest, false);
});
