/**
 * The job of the golden savepoints (test/fixtures/savepoints/): every kind of state Eddy
 * snapshots — keyed value (with a declared codec), list, map, reducing and aggregating state,
 * event-time timers, window contents, operator list and union list state, source positions — in
 * a small deterministic job. Its source emits record numbers 1..RECORDS from SPLITS splits;
 * with EDDY_GOLDEN_HOLD=h it emits only numbers ≤ h of each split and then waits, so a savepoint
 * taken once it has read everything up to the hold is the same every time.
 *
 * Every later version of Eddy must restore these savepoints: its output then equals a run
 * without a savepoint (test/savepoint-golden.test.ts). Change this job only together with a new
 * fixture directory (v2/, …); v1/ stays as it was written.
 */
import {
  AggregatingStateDescriptor,
  defineJob,
  ListStateDescriptor,
  MapStateDescriptor,
  OutputTag,
  ReducingStateDescriptor,
  TumblingEventTimeWindows,
  ValueStateDescriptor,
  WatermarkStrategy,
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type OnTimerContext,
  type OperatorListState,
  type ProcessContext,
  type ProcessFunction,
  type RuntimeContext,
} from "eddy";
import { committingCollectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";

export const RECORDS = 2_000;
export const SPLITS = 4;
export const KEYS = 7;
export const END = RECORDS + 1;

export interface Features {
  readonly key: number;
  readonly total: number;
  readonly lastThree: readonly number[];
  readonly parity: Readonly<Record<string, number>>;
  readonly max: number;
  readonly mean: number;
}

const TOTAL = new ValueStateDescriptor<{ total: number }>("total", { codec: { id: "golden.total", version: 1 } });
const LAST = new ListStateDescriptor<number>("last-three");
const PARITY = new MapStateDescriptor<string, number>("parity");
const MAX = new ReducingStateDescriptor<number>("max", (a, b) => Math.max(a, b));
const MEAN = new AggregatingStateDescriptor<number, { sum: number; n: number }, number>("mean", {
  createAccumulator: () => ({ sum: 0, n: 0 }),
  add: (v, acc) => ({ sum: acc.sum + v, n: acc.n + 1 }),
  getResult: (acc) => acc.sum / acc.n,
});

/** Keeps every kind of keyed state per key and reports it when event time ends (one timer per key). */
const features: KeyedProcessFunction<number, number, Features> = {
  processElement(n: number, ctx: KeyedProcessContext<number>) {
    const total = ctx.getState(TOTAL);
    total.update({ total: (total.value()?.total ?? 0) + n });
    const last = ctx.getListState(LAST);
    last.update([...last.get(), n].slice(-3));
    const parity = ctx.getMapState(PARITY);
    const p = n % 2 === 0 ? "even" : "odd";
    parity.put(p, (parity.get(p) ?? 0) + 1);
    ctx.getReducingState(MAX).add(n);
    ctx.getAggregatingState(MEAN).add(n);
    ctx.timerService().registerEventTimeTimer(END);
  },
  onTimer(_ts: number, ctx: OnTimerContext<number>, out: Collector<Features>) {
    out.collect({
      key: ctx.getCurrentKey(),
      total: ctx.getState(TOTAL).value()?.total ?? 0,
      lastThree: ctx.getListState(LAST).get(),
      parity: Object.fromEntries(ctx.getMapState(PARITY).entries()),
      max: ctx.getReducingState(MAX).get() ?? 0,
      mean: ctx.getAggregatingState(MEAN).get() ?? 0,
    });
  },
};

export const TALLIES = new OutputTag<{ subtask: number; total: number; union: readonly string[] }>("tallies");

/** Operator list state (its subtask's running sum) and union list state (every subtask's marker). */
class Tally implements ProcessFunction<number, number> {
  private sums!: OperatorListState<number>;
  private markers!: OperatorListState<string>;
  private subtask = 0;

  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
    this.sums = ctx.getOperatorListState<number>("sums");
    this.markers = ctx.getUnionListState<string>("markers");
    this.markers.update([...new Set([...this.markers.get(), `subtask-${ctx.subtaskIndex}`])].sort());
  }

  processElement(n: number, ctx: ProcessContext, out: Collector<number>): void {
    const total = this.sums.get().reduce((a, b) => a + b, 0) + n;
    this.sums.update([total]);
    ctx.output(TALLIES, { subtask: this.subtask, total, union: this.markers.get() });
    out.collect(n);
  }
}

export default defineJob("golden", (env) => {
  env.setParallelism(2);
  env.setMaxParallelism(8);
  const hold = Number(process.env.EDDY_GOLDEN_HOLD ?? Number.POSITIVE_INFINITY);
  const numbers = env
    .fromSource(pacedNumbers({ records: RECORDS, splits: SPLITS, idPrefix: "golden", perPoll: 100, pauseMs: 0, holdAt: hold }), WatermarkStrategy.forMonotonousTimestamps<number>(), "golden numbers")
    .uid("source")
    .process(new Tally())
    .uid("tally");
  numbers.getSideOutput(TALLIES).sinkTo(committingCollectSink("tallies")).uid("tallies-sink");
  const keyed = numbers.keyBy((n) => n % KEYS);
  keyed.process(features).uid("features").sinkTo(committingCollectSink("features")).uid("features-sink");
  keyed
    .window(TumblingEventTimeWindows.of(300))
    .reduce((a, b) => a + b)
    .uid("windows")
    .sinkTo(committingCollectSink("windows"))
    .uid("windows-sink");
});
