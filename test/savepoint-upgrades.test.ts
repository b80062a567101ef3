/**
 * Restoring a savepoint into a changed job (issue 7's upgrade matrix). Version 1 of a job counts
 * records per key in value state with a declared codec, and keeps a tally in operator list state
 * chained to its source; it is stopped with a savepoint part-way. Each changed version then
 * resumes from that savepoint: operators added, removed, renamed with the same uid, chained
 * differently, reordered, a state's kind or codec changed — each restores (and ends with the
 * failure-free counts) or is refused with a clear error naming the operator and the state.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  defineJob,
  ListStateDescriptor,
  ValueStateDescriptor,
  WatermarkStrategy,
  EddyError,
  type DataStream,
  type KeyedProcessFunction,
  type StateCodec,
  type StreamExecutionEnvironment,
} from "eddy";
import { committingCollectSink, runJob, type RunOptions } from "eddy/testing";
import { RECORDS } from "./jobs/rescalable.ts";
import { pacedNumbers } from "./jobs/paced-source.ts";

const KEYS = 20;

interface Count {
  readonly key: number;
  readonly count: number;
}

type CountShape = "v1" | "v2";
/** Version 1 stores { n }; version 2 stores { count } (a schema change). */
const codecV1: StateCodec<Stored> = { id: "count", version: 1 };
const codecV2: StateCodec<Stored> = {
  id: "count",
  version: 2,
  migrate: (value, fromVersion) => {
    assert.equal(fromVersion, 1);
    return { count: (value as { n: number }).n };
  },
};

type Stored = { n?: number; count?: number };

function counter(shape: CountShape, codec: StateCodec<Stored> | undefined, kind: "value" | "list" = "value"): KeyedProcessFunction<number, number, Count> {
  return {
    processElement(_n, ctx, out) {
      if (kind === "list") {
        ctx.getListState(new ListStateDescriptor<number>("count")).add(1);
        return;
      }
      const state = ctx.getState(new ValueStateDescriptor<Stored>("count", codec === undefined ? {} : { codec }));
      const old = state.value();
      const count = (shape === "v1" ? old?.n : old?.count) ?? 0;
      state.update(shape === "v1" ? { n: count + 1 } : { count: count + 1 });
      out.collect({ key: ctx.getCurrentKey(), count: count + 1 });
    },
  };
}

interface Variant {
  readonly counter?: KeyedProcessFunction<number, number, Count> | "removed";
  readonly counterName?: string;
  /** Breaks the chain source → tally with a rebalance. */
  readonly rechain?: boolean;
  /** Adds a stateful operator (uid "extra") before the counter. */
  readonly addExtra?: boolean;
  /** Declares another branch before the counter, so the counter and its sink come later in the graph. */
  readonly reorder?: boolean;
}

function job(variant: Variant) {
  return defineJob("upgradable", (env: StreamExecutionEnvironment) => {
    env.setMaxParallelism(16);
    let stream: DataStream<number> = env.fromSource(pacedNumbers({ records: RECORDS, splits: 8, idPrefix: "split", perPoll: 100, pauseMs: 1 }), WatermarkStrategy.noWatermarks<number>(), "paced").uid("source");
    if (variant.rechain === true) stream = stream.rebalance();
    stream = stream
      .process<number>({
        open(ctx) {
          this.sums = ctx.getOperatorListState<number>("sums");
        },
        processElement(n, _ctx, out) {
          const sums = (this.sums as { get(): number[]; update(v: number[]): void });
          const [total = 0] = sums.get();
          sums.update([total + n]);
          out.collect(n);
        },
      } as Parameters<DataStream<number>["process"]>[0] & { sums?: unknown })
      .uid("tally");
    if (variant.addExtra === true) {
      stream = stream
        .keyBy((n) => n % 3)
        .process<number>({
          processElement(n, ctx, out) {
            const seen = ctx.getState(new ValueStateDescriptor<number>("seen"));
            seen.update((seen.value() ?? 0) + 1);
            out.collect(n);
          },
        })
        .uid("extra");
    }
    if (variant.reorder === true) stream.map((n) => n * 2).sinkTo(committingCollectSink<number>("doubled")).uid("doubled-sink");
    if (variant.counter === "removed") {
      stream.sinkTo(committingCollectSink<number>("records")).uid("records-sink");
      return;
    }
    const counted = stream
      .keyBy((n) => n % KEYS)
      .process(variant.counter ?? counter("v1", codecV1))
      .uid("counter")
      .name(variant.counterName ?? "Counter");
    counted.sinkTo(committingCollectSink<Count>("counts")).uid("counts-sink");
  });
}

let dir = "";
let savepoint = "";

const options = (extra: Partial<RunOptions> = {}): RunOptions => ({
  mode: "inline",
  checkpointing: { intervalMs: 60_000 },
  checkpointDir: join(dir, "checkpoints"),
  savepointDir: join(dir, "savepoints"),
  restartStrategy: { type: "none" },
  ...extra,
});

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "eddy-upgrades-"));
  const v1 = runJob(job({}), options({ jobId: "v1" }));
  while (v1.sourceRecords < RECORDS / 4) await new Promise((resolve) => setTimeout(resolve, 10));
  savepoint = (await v1.stop({ savepoint: true }))!.path;
  await v1.done;
  assert.ok(v1.sourceRecords < RECORDS, "stopped part-way");
  assert.equal(new Set(v1.collected<Count>("counts").map((c) => c.key)).size, KEYS, "every key was counted before the savepoint");
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** Every key's final count: RECORDS / KEYS. */
function assertCompleteCounts(counts: readonly Count[]): void {
  const final = new Map<number, number>();
  for (const c of counts) final.set(c.key, Math.max(final.get(c.key) ?? 0, c.count));
  // Only a count that went on from the savepoint's (not from zero) reaches the total: the run
  // reads only the records after the savepoint.
  for (let key = 0; key < KEYS; key++) assert.equal(final.get(key), RECORDS / KEYS, `key ${key}`);
}

async function restoreInto(variant: Variant, extra: Partial<RunOptions> = {}): Promise<Count[]> {
  const run = runJob(job(variant), options({ jobId: `v2-${Math.random().toString(36).slice(2)}`, fromSavepoint: savepoint, ...extra }));
  await run.done;
  return run.collected<Count>("counts");
}

async function refused(variant: Variant, pattern: RegExp, code: string): Promise<void> {
  await assert.rejects(restoreInto(variant), (e: unknown) => {
    assert.ok(e instanceof EddyError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

test("the same job restores and ends with the failure-free counts", async () => {
  assertCompleteCounts(await restoreInto({}));
});

test("an added operator starts empty; the others restore", async () => {
  assertCompleteCounts(await restoreInto({ addExtra: true }));
});

test("renamed with the same uid: restored", async () => {
  assertCompleteCounts(await restoreInto({ counterName: "Counter, version 2" }));
});

test("operators in another order (a branch declared first): restored", async () => {
  assertCompleteCounts(await restoreInto({ reorder: true }));
});

test("chained differently (the tally gets its own chain): restored", async () => {
  assertCompleteCounts(await restoreInto({ rechain: true }));
});

test("a removed operator is refused, naming it; allowed with allowNonRestoredState, which drops it", async () => {
  await refused({ counter: "removed" }, /'Counter' \(uid 'counter': count\).*--allow-non-restored-state/, "NON_RESTORED_STATE");
  const warnings: string[] = [];
  const run = runJob(
    job({ counter: "removed" }),
    options({
      jobId: "removed-allowed",
      fromSavepoint: savepoint,
      allowNonRestoredState: true,
      logger: {
        debug() {},
        info() {},
        warn: (message: string) => void warnings.push(message),
        error() {},
      },
    }),
  );
  await run.done;
  assert.ok(warnings.some((w) => /dropping state.*'counter'/.test(w)), `says what it dropped: ${warnings.join(" | ")}`);
  assert.equal(run.collected<number>("records").length + Number(run.sourceRecords === 0), run.sourceRecords, "the rest of the records flow");
});

test("a state whose kind changed is refused, naming the operator and the state", async () => {
  await refused({ counter: counter("v1", codecV1, "list") }, /state 'count' of operator 'Counter' was restored as a value state.*list state/, "STATE_KIND_CHANGED");
});

test("a codec with another id is refused", async () => {
  await refused({ counter: counter("v1", { id: "other", version: 1 }) }, /state 'count' of operator 'Counter' was written with codec 'count'.*'other' cannot read it/, "STATE_CODEC_MISMATCH");
});

test("a newer codec version migrates the values; without migrate() it is refused", async () => {
  assertCompleteCounts(await restoreInto({ counter: counter("v2", codecV2) }));
  await refused({ counter: counter("v2", { id: "count", version: 2 }) }, /codec 'count' version 1; version 2 declares no migrate/, "STATE_MIGRATION_MISSING");
});
