/**
 * Per-split watermarks end to end (issue 25): a reader holding two partitions whose event times
 * run at different speeds (one 10× ahead of the other), read interleaved, into keyed event-time
 * windows. Through split outputs (ReaderOutput.createOutputForSplit) the source's watermark is the
 * minimum over its partitions, so no record is late and the windows equal a batch recomputation.
 * Through the reader's main output, one generator sees both partitions: the slow partition's
 * records fall behind the watermark and are dropped as late (why Flink has per-split watermarks).
 * The same holds when the source's dead letters are read (`onError("dead-letter")` and
 * `deadLetters()`: a side-output edge of the source besides its chained Timestamps/Watermarks).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  defineJob,
  type DeadLetter,
  staticSplitEnumerator,
  TumblingEventTimeWindows,
  type ReaderOutput,
  type Source,
  type SourceReader,
  type Collector,
} from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { lateRecordsDropped, punctuated } from "./fixtures.ts";
import * as orderedLog from "./jobs/ordered-log.ts";

interface Reading {
  readonly partition: string;
  readonly ts: number;
}
interface Partition {
  readonly id: string;
  /** Event-time ms between consecutive records. */
  readonly stepMs: number;
  readonly records: number;
}
interface Count {
  readonly partition: string;
  readonly start: number;
  readonly count: number;
}

const PARTITIONS: readonly Partition[] = [
  { id: "fast", stepMs: 10, records: 2_000 },
  { id: "slow", stepMs: 1, records: 2_000 },
  { id: "short", stepMs: 5, records: 300 },
];
const WINDOW_MS = 100;

const reading = (p: Partition, i: number): Reading => ({ partition: p.id, ts: p.stepMs * i });

/**
 * All partitions on one reader, read round-robin a record at a time (as a Kafka reader interleaves
 * its partitions); each partition's split output is released when the partition is done. With
 * `bad`, each partition starts with input the reader cannot read (reported through its output).
 */
function partitionsSource(perSplit: boolean, bad = false): Source<Reading, Partition> {
  return {
    boundedness: "bounded",
    maxParallelism: 1,
    createEnumerator: (context) => staticSplitEnumerator(context, PARTITIONS),
    createReader(): SourceReader<Reading, Partition> {
      const open: { partition: Partition; next: number }[] = [];
      let noMore = false;
      return {
        pollNext(output: ReaderOutput<Reading>) {
          for (let round = 0; round < 100 && open.length > 0; round++) {
            for (const split of [...open]) {
              const target = perSplit ? output.createOutputForSplit(split.partition.id) : output;
              if (bad && split.next === 0) target.reportBadRecord({ raw: "?", error: new Error("unreadable"), position: { partition: split.partition.id } });
              target.collect(reading(split.partition, split.next++));
              if (split.next === split.partition.records) {
                open.splice(open.indexOf(split), 1);
                if (perSplit) output.releaseOutputForSplit(split.partition.id);
              }
            }
          }
          if (open.length > 0) return "more";
          return noMore ? "end" : "nothing";
        },
        isAvailable: () => Promise.resolve(),
        addSplits: (splits) => void open.push(...splits.map((partition) => ({ partition, next: 0 }))),
        notifyNoMoreSplits: () => void (noMore = true),
        snapshotState: () => open.map((s) => s.partition),
      };
    },
  };
}

async function countsPerWindow(perSplit: boolean, deadLetters = false): Promise<{ counts: string[]; late: number; dead: DeadLetter[] }> {
  const job = defineJob("per-split-watermarks", (env) => {
    // Watermarks after every record, so the test does not depend on when periodic emission runs.
    const readings = env.fromSource(partitionsSource(perSplit, deadLetters), punctuated<Reading>(0), "partitions");
    if (deadLetters) readings.onError("dead-letter").deadLetters().sinkTo(collectSink<DeadLetter>("dead letters"));
    readings
      .keyBy((r) => r.partition)
      .window(TumblingEventTimeWindows.of<Reading>(WINDOW_MS))
      .aggregate(
        { createAccumulator: () => 0, add: (_r: Reading, n: number) => n + 1, getResult: (n: number) => n, merge: (a: number, b: number) => a + b },
        (partition: string, window, [count]: [number], out: Collector<Count>) => out.collect({ partition, start: window.start, count }),
      )
      .sinkTo(collectSink<Count>("counts"));
  });
  const handle = runJob(job, { parallelism: 1 });
  await handle.done;
  const counts = handle.collected<Count>("counts").map((c) => `${c.partition}@${c.start}:${c.count}`);
  return { counts: counts.sort(), late: lateRecordsDropped(handle.metrics()), dead: handle.collected<DeadLetter>("dead letters") };
}

/** The batch answer: records per partition and window. */
function oracle(): string[] {
  const counts = new Map<string, number>();
  for (const p of PARTITIONS) {
    for (let i = 0; i < p.records; i++) {
      const r = reading(p, i);
      const key = `${r.partition}@${Math.floor(r.ts / WINDOW_MS) * WINDOW_MS}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return [...counts].map(([k, n]) => `${k}:${n}`).sort();
}

test("split outputs: the source's watermark is the minimum over its partitions, no record is late, windows equal the batch answer", async () => {
  const { counts, late } = await countsPerWindow(true);
  assert.equal(late, 0);
  assert.deepEqual(counts, oracle());
});

test("split outputs with the source's dead letters read (onError('dead-letter'), deadLetters()): still the minimum over its partitions, no record is late; bad input reaches the dead letters", async () => {
  const { counts, late, dead } = await countsPerWindow(true, true);
  assert.equal(late, 0);
  assert.deepEqual(counts, oracle());
  assert.deepEqual(dead.map((d) => [d.operator, d.raw, d.position]).sort(), PARTITIONS.map((p) => ["partitions", "?", { partition: p.id }]).sort());
});

test("the main output: one generator over both partitions, the slow partition's records are late and dropped", async () => {
  const { counts, late } = await countsPerWindow(false);
  const total = (xs: string[]): number => xs.reduce((n, c) => n + Number(c.split(":")[1]), 0);
  assert.ok(late > 1000, `most slow records are late (${late})`);
  assert.equal(total(counts) + late, total(oracle()), "every record is counted in a window or as late");
});

test("fromSource over a source of one subtask: its watermarks are generated there, chained, so per-key order survives at -p 2 on worker threads (no hidden round-robin edge)", async () => {
  const expected = Array.from({ length: orderedLog.KEYS }, (_, k) => `${k}:0`).sort();
  for (const parallelism of [1, 2]) {
    const handle = runJob(orderedLog.default, { parallelism, mode: parallelism === 1 ? "inline" : "threads" });
    const timed = handle.plan.chains.flatMap((c) => c.nodes).find((n) => n.name === "log: Timestamps/Watermarks")!;
    assert.equal(timed.parallelism, 1, `-p ${parallelism}: the watermark step runs at the source's parallelism`);
    assert.ok(handle.plan.chains.some((c) => c.nodes[0]!.name === "log" && c.nodes[1] === timed), `-p ${parallelism}: chained to the source`);
    await handle.done;
    assert.deepEqual(handle.collected<string>("out").sort(), expected, `-p ${parallelism}: every key's events arrive in order`);
  }
});
