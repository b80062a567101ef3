/**
 * The interval join checked against a nested loop over all pairs (the oracle): whole jobs at
 * parallelism 1 and 3 with out-of-order input, late records (dropped and counted), the operator
 * driven directly to check its state against a model after every step (no leak), and the errors.
 *
 * Timestamps, bounds and out-of-orderness bounds are even, so a watermark (max - bound - 1) is
 * always odd and never equals a timestamp: whether a record is late never hinges on the one
 * boundary case where Flink's `ts < watermark` rule and the cleanup timers disagree.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, EddyError, OutputTag, Time, WatermarkStrategy, type Collector, type DataStream, type KeyedStream } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import type { ProcessJoinContext, ProcessJoinFunction } from "eddy";
import {
  ManualClock,
  defaultMaxParallelism,
  keyGroupRangeForOperator,
  silentLogger,
  NO_TIMESTAMP,
  heapStateBackend,
  CounterRegistry,
  OperatorMetricGroup,
  type OperatorContext,
  type Output,
  intervalJoinOperator,
  type IntervalJoinBounds,
  type IntervalJoinLateData,
  type IntervalJoinOperator,
  inclusiveIntervalJoinBounds,
} from "../packages/eddy/src/internal.ts";
import { lateRecordsDropped, prng, punctuated } from "./fixtures.ts";

/** A record of either side; `id` is unique over both sides ("L12", "R7"). */
interface Rec {
  readonly id: string;
  readonly key: string;
  readonly ts: number;
}

interface Joined {
  readonly pair: string;
  readonly ts: number;
  readonly leftTs: number;
  readonly rightTs: number;
}

const BASE_TS = 1_700_000_000_000;
const DISORDER_MS = 400;

/**
 * `n` records over `keys` keys, stamped i*stepMs plus jitter in [0, disorderMs) (all even), then
 * locally shuffled: a record is never more than disorderMs older than one before it.
 */
function records(prefix: string, n: number, keys: number, seed: number, stepMs = 10, disorderMs = DISORDER_MS): Rec[] {
  const rnd = prng(seed);
  const out: { rec: Rec; sortKey: number }[] = [];
  for (let i = 0; i < n; i++) {
    const ts = BASE_TS + 2 * Math.floor((i * stepMs + rnd() * disorderMs) / 2);
    out.push({ rec: { id: `${prefix}${i}`, key: `k${Math.floor(rnd() * keys)}`, ts }, sortKey: ts + rnd() * disorderMs });
  }
  out.sort((a, b) => a.sortKey - b.sortKey);
  return out.map((x) => x.rec);
}

/** The oracle: every (left, right) of one key with right.ts - left.ts in the interval. */
function nestedLoop(left: readonly Rec[], right: readonly Rec[], b: IntervalJoinBounds): string[] {
  const pairs: string[] = [];
  for (const l of left) {
    for (const r of right) {
      const d = r.ts - l.ts;
      const aboveLower = b.lowerInclusive ? d >= b.lowerMs : d > b.lowerMs;
      const belowUpper = b.upperInclusive ? d <= b.upperMs : d < b.upperMs;
      if (l.key === r.key && aboveLower && belowUpper) pairs.push(`${l.id}|${r.id}`);
    }
  }
  return pairs.sort();
}

function pairFunction(): ProcessJoinFunction<Rec, Rec, Joined> {
  return {
    processElement(l: Rec, r: Rec, ctx: ProcessJoinContext, out: Collector<Joined>) {
      out.collect({ pair: `${l.id}|${r.id}`, ts: ctx.timestamp(), leftTs: ctx.leftTimestamp(), rightTs: ctx.rightTimestamp() });
    },
  };
}

/** Output timestamp = max of both, and the context reports each side's timestamp. */
function checkTimestamps(got: readonly Joined[], byId: ReadonlyMap<string, Rec>): void {
  for (const j of got) {
    const [l, r] = j.pair.split("|").map((id) => byId.get(id)!);
    assert.equal(j.leftTs, l!.ts);
    assert.equal(j.rightTs, r!.ts);
    assert.equal(j.ts, Math.max(l!.ts, r!.ts));
  }
}

const inclusive = (lowerMs: number, upperMs: number): IntervalJoinBounds => ({ lowerMs, upperMs, lowerInclusive: true, upperInclusive: true });

const CASES: { name: string; bounds: IntervalJoinBounds }[] = [
  { name: "inclusive [-500, 1000]", bounds: inclusive(-500, 1000) },
  { name: "exclusive (-500, 1000)", bounds: { lowerMs: -500, upperMs: 1000, lowerInclusive: false, upperInclusive: false } },
  { name: "negative [-1000, -200]", bounds: inclusive(-1000, -200) },
  { name: "positive [200, 800)", bounds: { lowerMs: 200, upperMs: 800, lowerInclusive: true, upperInclusive: false } },
  { name: "a point [0, 0]", bounds: inclusive(0, 0) },
];

/** Builds the join with the public builder, applying exclusivity as the user would. */
function join(left: KeyedStream<Rec, string>, right: KeyedStream<Rec, string>, b: IntervalJoinBounds): DataStream<Joined> {
  let joined = left.intervalJoin(right).between(b.lowerMs, b.upperMs);
  if (!b.lowerInclusive) joined = joined.lowerBoundExclusive();
  if (!b.upperInclusive) joined = joined.upperBoundExclusive();
  return joined.process(pairFunction());
}



for (const parallelism of [1, 3]) {
  for (const watermarks of ["periodic", "punctuated"] as const) {
    for (const { name, bounds } of CASES) {
      test(`interval join ${name} equals the nested loop (parallelism ${parallelism}, ${watermarks} watermarks)`, async () => {
        const left = records("L", 1500, 20, 11 + parallelism);
        const right = records("R", 1500, 20, 29 + parallelism);
        const strategy =
          watermarks === "periodic"
            ? WatermarkStrategy.forBoundedOutOfOrderness<Rec>(DISORDER_MS).withTimestampAssigner((e) => e.ts)
            : punctuated<Rec>(DISORDER_MS);
        const handle = runJob(
          defineJob("interval-join-oracle", (env) => {
            env.setParallelism(parallelism);
            const l = env.fromCollection(left).assignTimestampsAndWatermarks(strategy).keyBy((e) => e.key);
            const r = env.fromCollection(right).assignTimestampsAndWatermarks(strategy).keyBy((e) => e.key);
            join(l, r, bounds).uid("join").sinkTo(collectSink("joined"));
          }),
        );
        const result = await handle.done;
        const got = handle.collected<Joined>("joined");
        const expected = nestedLoop(left, right, bounds);
        const minPairs = bounds.lowerMs === bounds.upperMs ? 10 : 1000;
        assert.ok(expected.length > minPairs, `the data should produce many pairs, got ${expected.length}`);
        assert.deepEqual(got.map((j) => j.pair).sort(), expected);
        checkTimestamps(got, new Map([...left, ...right].map((e) => [e.id, e])));
        assert.equal(lateRecordsDropped(result.metrics), 0, "nothing is late");
      });
    }
  }
}

test("the exclusive cases are meaningful: the data has pairs exactly on the bounds", () => {
  const left = records("L", 1500, 20, 12);
  const right = records("R", 1500, 20, 30);
  const closed = nestedLoop(left, right, inclusive(-500, 1000)).length;
  const open = nestedLoop(left, right, { lowerMs: -500, upperMs: 1000, lowerInclusive: false, upperInclusive: false }).length;
  assert.ok(closed > open, `${closed} pairs with the bounds, ${open} without`);
});

test("the Flink-style builder: Time bounds, side outputs with the pair's timestamp", async () => {
  const left = records("L", 300, 5, 3);
  const right = records("R", 300, 5, 4);
  const k0 = new OutputTag<string>("k0-pairs");
  const handle = runJob(
    defineJob("interval-join-side-output", (env) => {
      const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Rec>(DISORDER_MS).withTimestampAssigner((e) => e.ts);
      const l = env.fromCollection(left).assignTimestampsAndWatermarks(strategy).keyBy((e) => e.key);
      const r = env.fromCollection(right).assignTimestampsAndWatermarks(strategy).keyBy((e) => e.key);
      const joined = l.intervalJoin(r).between(-Time.milliseconds(500), Time.seconds(1)).process<string>({
        processElement(a, b, ctx, out) {
          out.collect(`${a.id}|${b.id}`);
          if (a.key === "k0") ctx.output(k0, `${a.id}|${b.id}@${ctx.timestamp()}`);
        },
      });
      joined.sinkTo(collectSink("main"));
      joined.getSideOutput(k0).sinkTo(collectSink("side"));
    }),
  );
  await handle.done;
  const byId = new Map([...left, ...right].map((e) => [e.id, e]));
  const expected = nestedLoop(left, right, inclusive(-500, 1000));
  assert.deepEqual(handle.collected<string>("main").sort(), expected);
  const expectedSide = expected
    .filter((p) => byId.get(p.split("|")[0]!)!.key === "k0")
    .map((p) => `${p}@${Math.max(...p.split("|").map((id) => byId.get(id)!.ts))}`);
  assert.ok(expectedSide.length > 0);
  assert.deepEqual(handle.collected<string>("side").sort(), expectedSide.sort());
});

/**
 * Late records. Both sides come from one tagged source with a punctuated watermark, so both
 * inputs of the join see the same watermark sequence; one-record batches and a two-record channel
 * credit keep either input at most a few source records behind the other (backpressure), so the
 * join's watermark (the minimum of both) is within ~450 ms of the source's. Late records are
 * stamped 600-1000 ms below the source's watermark when they are read, and each has a partner on
 * the other side, arriving later and within the bounds, so a late record that was buffered
 * instead of dropped would show up in the output.
 */
for (const lateSideOutputs of [false, true]) {
  test(lateSideOutputs
    ? "late records go to sideOutputLeftLateData / sideOutputRightLateData (not counted as dropped); the rest equals the nested loop"
    : "late records are dropped and counted in numLateRecordsDropped; the rest equals the nested loop", async () => {
    const bounds = inclusive(-3000, 3000);
    const lateLeft = new OutputTag<Rec>("late-left");
    const lateRight = new OutputTag<Rec>("late-right");
    const rnd = prng(99);
    type Tagged = Rec & { side: "L" | "R" };
    const normal: Tagged[] = records("N", 2000, 10, 5).map((e, i) => ({
      ...e,
      side: rnd() < 0.5 ? "L" : "R",
      id: `${i}`,
    }));
    const tagged: Tagged[] = [];
    const lateIds: string[] = [];
    let max = Number.NEGATIVE_INFINITY;
    let watermark = Number.NEGATIVE_INFINITY; // the watermark before the record being appended
    for (let i = 0; i < normal.length; i++) {
      const e = normal[i]!;
      assert.ok(e.ts > watermark, "normal records are never late");
      if (i >= 300 && i % 40 === 0) {
        // A record of the other side, arriving later and within the bounds, with the same key.
        const side = e.side;
        const partner = normal.slice(i).find((p) => p.side !== side)!;
        const late = { id: `late${i}`, side, key: partner.key, ts: watermark - 600 - 2 * Math.floor(rnd() * 200) };
        assert.ok(Math.abs(partner.ts - late.ts) <= 3000, "the late record has a partner that is not late");
        tagged.push(late);
        lateIds.push(late.id);
      }
      tagged.push(e);
      max = Math.max(max, e.ts);
      watermark = max - DISORDER_MS - 1;
    }
    const lefts = tagged.filter((e) => e.side === "L").map(({ side: _, ...e }) => ({ ...e, id: `L${e.id}` }));
    const rights = tagged.filter((e) => e.side === "R").map(({ side: _, ...e }) => ({ ...e, id: `R${e.id}` }));
    assert.ok(lateIds.length > 30);

    const handle = runJob(
      defineJob("interval-join-late", (env) => {
        env.setParallelism(1);
        const stream = env.fromCollection(tagged).assignTimestampsAndWatermarks(punctuated<Tagged>(DISORDER_MS));
        const l = stream.filter((e) => e.side === "L").map(({ side: _, ...e }) => ({ ...e, id: `L${e.id}` })).keyBy((e) => e.key);
        const r = stream.filter((e) => e.side === "R").map(({ side: _, ...e }) => ({ ...e, id: `R${e.id}` })).keyBy((e) => e.key);
        if (!lateSideOutputs) {
          join(l, r, bounds).sinkTo(collectSink("joined"));
          return;
        }
        const joined = l
          .intervalJoin(r)
          .between(bounds.lowerMs, bounds.upperMs)
          .sideOutputLeftLateData(lateLeft)
          .sideOutputRightLateData(lateRight)
          .process(pairFunction());
        joined.sinkTo(collectSink("joined"));
        joined.getSideOutput(lateLeft).sinkTo(collectSink("late-left"));
        joined.getSideOutput(lateRight).sinkTo(collectSink("late-right"));
      }),
      { batchRecords: 1, channelCapacityRecords: 2 },
    );
    const result = await handle.done;
    const got = handle.collected<Joined>("joined").map((j) => j.pair).sort();

    // Every late record is absent from the output although the oracle pairs it with a later record.
    const inOutput = new Set(got.flatMap((p) => p.split("|")));
    const lateJoinIds = new Set(lateIds.flatMap((id) => [`L${id}`, `R${id}`]));
    for (const id of lateJoinIds) assert.ok(!inOutput.has(id), `late record ${id} must not be joined`);
    if (lateSideOutputs) {
      assert.equal(lateRecordsDropped(result.metrics), 0, "late records sent to a side output are not dropped");
      const lateOf = (name: string) => handle.collected<Rec>(name).map((e) => e.id).sort();
      const lateTagged = tagged.filter((e) => e.id.startsWith("late"));
      assert.deepEqual(lateOf("late-left"), lateTagged.filter((e) => e.side === "L").map((e) => `L${e.id}`).sort());
      assert.deepEqual(lateOf("late-right"), lateTagged.filter((e) => e.side === "R").map((e) => `R${e.id}`).sort());
    } else {
      assert.equal(lateRecordsDropped(result.metrics), lateIds.length, "each late record is counted once");
    }
    const expected = nestedLoop(
      lefts.filter((e) => !lateJoinIds.has(e.id)),
      rights.filter((e) => !lateJoinIds.has(e.id)),
      bounds,
    );
    assert.deepEqual(got, expected);
    assert.ok(nestedLoop(lefts, rights, bounds).length > expected.length, "late records would have joined");
  });
}

// ---- The operator driven directly: its state against a model after every step ----------------

interface Driver {
  readonly operator: IntervalJoinOperator<Rec, Rec>;
  readonly out: { value: Joined; timestamp: number }[];
  readonly side: { tag: string; value: unknown; timestamp: number }[];
  readonly watermarks: number[];
  readonly counters: CounterRegistry;
}

function driver(
  bounds: IntervalJoinBounds,
  fn: ProcessJoinFunction<Rec, Rec, Joined> = pairFunction(),
  lateData: IntervalJoinLateData<Rec, Rec> = {},
): Driver {
  const maxParallelism = defaultMaxParallelism(1);
  const counters = new CounterRegistry();
  const d = { out: [], side: [], watermarks: [], counters } as Omit<Driver, "operator">;
  const output: Output<Joined> = {
    collect: (value, timestamp) => void d.out.push({ value, timestamp }),
    collectSide: (tag, value, timestamp) => void d.side.push({ tag: tag.id, value, timestamp }),
    emitWatermark: (w) => void d.watermarks.push(w),
    emitWatermarkStatus: () => {},
  };
  const ctx: OperatorContext = {
    operatorName: "IntervalJoin",
    operatorId: "interval-join",
    subtaskIndex: 0,
    parallelism: 1,
    maxParallelism,
    keyGroupRange: keyGroupRangeForOperator(maxParallelism, 1, 0),
    keySelectors: [(e: Rec) => e.key, (e: Rec) => e.key],
    clock: new ManualClock(0),
    logger: silentLogger,
    postMail: () => assert.fail("an interval join uses no processing-time timers"),
    job: { jobName: "driver", collect() {}, commitOnce() {}, writeStdout() {} },
    autoWatermarkIntervalMs: 200,
    counter: (name) => counters.counter("IntervalJoin", name),
    metrics: new OperatorMetricGroup("IntervalJoin", 0),
    stateBackend: heapStateBackend,
    awaitWork: () => assert.fail("an interval join starts no asynchronous work"),
  };
  const operator = intervalJoinOperator(fn, bounds, lateData)(ctx, output);
  operator.open?.();
  return { ...d, operator };
}

/**
 * What the operator must hold after watermark `w`: a buffered record stays until its cleanup
 * timer (left: ts + upper, or ts when upper ≤ 0; right: ts - lower, or ts when lower ≥ 0; with
 * exclusive bounds made inclusive, 1 ms tighter) is ≤ w.
 */
function modelState(accepted: readonly { rec: Rec; side: "L" | "R" }[], bounds: IntervalJoinBounds, w: number) {
  const b = inclusiveIntervalJoinBounds(bounds);
  const keys = new Set<string>();
  const timers = new Set<string>();
  for (const { rec, side } of accepted) {
    const cleanupAt = side === "L" ? (b.upperMs > 0 ? rec.ts + b.upperMs : rec.ts) : b.lowerMs < 0 ? rec.ts - b.lowerMs : rec.ts;
    if (cleanupAt <= w) continue;
    keys.add(`${side}/${rec.key}`);
    timers.add(`${side}/${rec.key}/${cleanupAt}`);
  }
  return { keys: keys.size, timers: timers.size };
}

for (const { name, bounds } of CASES) {
  test(`interval join ${name}: state follows the cleanup model after every step and drains to zero (no leak)`, () => {
    // Both inputs on one out-of-order time line, so one punctuated watermark leaves nothing late.
    const rnd = prng(7);
    const merged = records("", 1200, 8, 41).map((rec) => ({ rec, side: rnd() < 0.5 ? ("L" as const) : ("R" as const) }));
    const left = merged.filter((e) => e.side === "L").map((e) => e.rec);
    const right = merged.filter((e) => e.side === "R").map((e) => e.rec);
    const d = driver(bounds);
    const accepted: { rec: Rec; side: "L" | "R" }[] = [];
    let max = Number.NEGATIVE_INFINITY;
    let peakKeys = 0;
    for (const { rec, side } of merged) {
      if (side === "L") d.operator.processElement1(rec, rec.ts);
      else d.operator.processElement2(rec, rec.ts);
      accepted.push({ rec, side });
      max = Math.max(max, rec.ts);
      const w = max - DISORDER_MS - 1;
      d.operator.processWatermark(w);
      const size = d.operator.stateSize();
      assert.deepEqual(size, modelState(accepted, bounds, w), `state after watermark ${w}`);
      peakKeys = Math.max(peakKeys, size.keys);
    }
    assert.ok(peakKeys > 0);
    assert.deepEqual(
      d.out.map((o) => o.value.pair).sort(),
      nestedLoop(left, right, bounds),
      "cleanup never removed a record a later one could still join",
    );
    for (const o of d.out) assert.equal(o.timestamp, o.value.ts);
    // A finite watermark past every interval (not MAX: the end of input would hide a leak).
    const span = Math.max(Math.abs(bounds.lowerMs), Math.abs(bounds.upperMs));
    d.operator.processWatermark(max + span);
    assert.deepEqual(d.operator.stateSize(), { keys: 0, timers: 0 });
    assert.equal(d.watermarks.at(-1), max + span, "watermarks are forwarded");
    assert.equal(d.counters.snapshot()["IntervalJoin.numLateRecordsDropped"] ?? 0, 0);
    d.operator.close?.();
  });
}

test("a record below the watermark is late on either side; one at the watermark is not", () => {
  const d = driver(inclusive(-100, 100));
  d.operator.processWatermark(1000);
  d.operator.processElement1({ id: "L1", key: "a", ts: 999 }, 999);
  d.operator.processElement2({ id: "R1", key: "a", ts: 999 }, 999);
  assert.deepEqual(d.counters.snapshot(), { "IntervalJoin.numLateRecordsDropped": 2 });
  assert.deepEqual(d.operator.stateSize(), { keys: 0, timers: 0 }, "a late record is not buffered");
  d.operator.processElement1({ id: "L2", key: "a", ts: 1000 }, 1000);
  d.operator.processElement2({ id: "R2", key: "a", ts: 1050 }, 1050);
  assert.deepEqual(d.out, [{ value: { pair: "L2|R2", ts: 1050, leftTs: 1000, rightTs: 1050 }, timestamp: 1050 }]);
  assert.equal(d.counters.snapshot()["IntervalJoin.numLateRecordsDropped"], 2);
});

test("the join function sees copies of buffered records: mutating them does not change state", () => {
  const d = driver(inclusive(0, 10), {
    processElement(l, r, ctx, out) {
      out.collect({ pair: `${l.id}|${r.id}`, ts: ctx.timestamp(), leftTs: ctx.leftTimestamp(), rightTs: ctx.rightTimestamp() });
      (l as { id: string }).id = "mutated";
    },
  });
  d.operator.processElement1({ id: "L1", key: "a", ts: 0 }, 0);
  d.operator.processElement2({ id: "R1", key: "a", ts: 5 }, 5);
  d.operator.processElement2({ id: "R2", key: "a", ts: 6 }, 6);
  assert.deepEqual(d.out.map((o) => o.value.pair), ["L1|R1", "L1|R2"]);
});

// ---- Errors ----------------------------------------------------------------------------------

function tinyJob(build: (l: KeyedStream<Rec, string>, r: KeyedStream<Rec, string>) => void, timestampsOnRight = true) {
  return defineJob("interval-join-errors", (env) => {
    const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Rec>(0).withTimestampAssigner((e) => e.ts);
    const l = env.fromElements<Rec>({ id: "L1", key: "a", ts: 1 }).assignTimestampsAndWatermarks(strategy).keyBy((e) => e.key);
    const rightSource = env.fromElements<Rec>({ id: "R1", key: "a", ts: 1 });
    const r = (timestampsOnRight ? rightSource.assignTimestampsAndWatermarks(strategy) : rightSource).keyBy((e) => e.key);
    build(l, r);
  });
}

test("lower > upper is a config error when the job is defined", () => {
  const job = tinyJob((l, r) => void l.intervalJoin(r).between(10, 5));
  assert.throws(
    () => runJob(job),
    (e: unknown) => e instanceof EddyError && e.code === "INVALID_INTERVAL" && e.domain === "config" && /lower bound \(10 ms\)/.test(e.message),
  );
});

test("an interval made empty by an exclusive bound is a config error", () => {
  const job = tinyJob((l, r) => void l.intervalJoin(r).between(5, 5).upperBoundExclusive().process(pairFunction()));
  assert.throws(() => runJob(job), (e: unknown) => e instanceof EddyError && e.code === "INVALID_INTERVAL");
  // (0, 1) holds no integer timestamp difference.
  const open = tinyJob((l, r) => void l.intervalJoin(r).between(0, 1).lowerBoundExclusive().upperBoundExclusive().process(pairFunction()));
  assert.throws(() => runJob(open), (e: unknown) => e instanceof EddyError && e.code === "INVALID_INTERVAL" && /empty/.test(e.message));
  const fractional = tinyJob((l, r) => void l.intervalJoin(r).between(-0.5, 1).process(pairFunction()));
  assert.throws(() => runJob(fractional), (e: unknown) => e instanceof EddyError && e.code === "INVALID_INTERVAL" && /integer/.test(e.message));
});

test("a record without a timestamp fails the job with NO_TIMESTAMP naming the operator", async () => {
  const handle = runJob(
    tinyJob((l, r) => l.intervalJoin(r).between(0, 0).process(pairFunction()).name("OrdersWithPayments").sinkTo(collectSink("x")), false),
  );
  const error = await handle.done.then(
    () => assert.fail("the job should have failed"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof EddyError, String(error));
  assert.equal(error.code, "NO_TIMESTAMP");
  assert.equal(error.operator, "OrdersWithPayments");
  assert.match(error.message, /OrdersWithPayments/);
  assert.match(error.message, /right input/);
});

test("a record without a timestamp is rejected by the operator itself", () => {
  const d = driver(inclusive(0, 0));
  assert.throws(
    () => d.operator.processElement1({ id: "L1", key: "a", ts: 0 }, NO_TIMESTAMP),
    (e: unknown) => e instanceof EddyError && e.code === "NO_TIMESTAMP" && e.operator === "IntervalJoin" && /left input/.test(e.message),
  );
});

test("an exclusive bound is the inclusive bound 1 ms tighter, for matching and for cleanup (as Flink)", () => {
  // between(-2, 1), both exclusive = [-1, 0]: a left record at 1 is cleaned up at watermark 1 + 0.
  const upper = driver({ lowerMs: -2, upperMs: 1, lowerInclusive: false, upperInclusive: false });
  upper.operator.processElement1({ id: "L1", key: "a", ts: 1 }, 1);
  upper.operator.processWatermark(1);
  assert.deepEqual(upper.operator.stateSize(), { keys: 0, timers: 0 }, "the left buffer is cleaned at 1");
  upper.operator.processElement2({ id: "R1", key: "a", ts: 1 }, 1);
  assert.deepEqual(upper.out, [], "a right record at the watermark finds no partner, as in Flink");
  // between(-1, 2), both exclusive = [0, 1]: a right record at 1 is cleaned up at watermark 1 - 0.
  const lower = driver({ lowerMs: -1, upperMs: 2, lowerInclusive: false, upperInclusive: false });
  lower.operator.processElement2({ id: "R1", key: "a", ts: 1 }, 1);
  lower.operator.processWatermark(1);
  assert.deepEqual(lower.operator.stateSize(), { keys: 0, timers: 0 }, "the right buffer is cleaned at 1");
  lower.operator.processElement1({ id: "L1", key: "a", ts: 1 }, 1);
  assert.deepEqual(lower.out, []);
  // Before the watermark both join: the interval itself is unchanged for integer timestamps.
  const before = driver({ lowerMs: -2, upperMs: 1, lowerInclusive: false, upperInclusive: false });
  before.operator.processElement1({ id: "L1", key: "a", ts: 1 }, 1);
  before.operator.processElement2({ id: "R1", key: "a", ts: 1 }, 1);
  before.operator.processElement2({ id: "R2", key: "a", ts: 2 }, 2);
  before.operator.processElement2({ id: "R3", key: "a", ts: -1 }, -1);
  assert.deepEqual(before.out.map((o) => o.value.pair), ["L1|R1"]);
});

test("late records of each side go to that side's late-data output with their own timestamp", () => {
  const d = driver(inclusive(-100, 100), pairFunction(), { left: new OutputTag<Rec>("late-left"), right: new OutputTag<Rec>("late-right") });
  d.operator.processWatermark(1000);
  d.operator.processElement1({ id: "L1", key: "a", ts: 999 }, 999);
  d.operator.processElement2({ id: "R1", key: "a", ts: 998 }, 998);
  assert.deepEqual(d.side, [
    { tag: "late-left", value: { id: "L1", key: "a", ts: 999 }, timestamp: 999 },
    { tag: "late-right", value: { id: "R1", key: "a", ts: 998 }, timestamp: 998 },
  ]);
  assert.equal(d.counters.snapshot()["IntervalJoin.numLateRecordsDropped"], 0, "nothing dropped");
  assert.deepEqual(d.operator.stateSize(), { keys: 0, timers: 0 }, "a late record is not buffered");
  // Only the left side has a tag: a late right record is dropped and counted.
  const leftOnly = driver(inclusive(-100, 100), pairFunction(), { left: new OutputTag<Rec>("late-left") });
  leftOnly.operator.processWatermark(1000);
  leftOnly.operator.processElement2({ id: "R1", key: "a", ts: 998 }, 998);
  assert.deepEqual(leftOnly.side, []);
  assert.deepEqual(leftOnly.counters.snapshot(), { "IntervalJoin.numLateRecordsDropped": 1 });
});
