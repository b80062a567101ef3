/**
 * The job of the savepoint tests (test/savepoints.test.ts), modelled on Flink's RescalingITCase:
 * keyed counts with event-time timers, operator list state and union list state, fed by a paced
 * source of SPLITS fixed splits, so a job can be stopped with a savepoint part-way and resumed at
 * another parallelism. In its own module so worker threads can rebuild it; its settings come
 * from environment variables read when the job is built.
 *
 * Outputs (two-phase collect sinks, so what a stopped run committed is exactly what it emitted
 * before its savepoint):
 * - "timers": one record per fired timer { key, timestamp, count, subtask } — every key has one
 *   timer per BUCKET of record numbers, registered by its records and firing at the end of input;
 * - "tallies": per record of the tally, its subtask's total of every record number it holds in
 *   operator list state (restored elements included), so the last tally of the last run sums all;
 * - "markers": once per subtask and run, the union list state it restored, plus its own marker.
 *
 * A restored two-phase sink commits the transactions of the savepoint it restores again (a real
 * sink's commit is idempotent); tallies and markers name their run so a test can tell.
 */
import {
  defineJob,
  OutputTag,
  ValueStateDescriptor,
  WatermarkStrategy,
  type Collector,
  type KeyedProcessFunction,
  type KeyedRuntimeContext,
  type OnTimerContext,
  type KeyedProcessContext,
  type OperatorListState,
  type ProcessContext,
  type ProcessFunction,
  type RuntimeContext,
} from "eddy";
import { committingCollectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";

export const RECORDS = Number(process.env.EDDY_SP_RECORDS ?? 60_000);
export const SPLITS = 8;
export const KEYS = 50;
export const BUCKET = 5_000;

export interface TimerFired {
  readonly key: number;
  readonly timestamp: number;
  readonly count: number;
  readonly subtask: number;
}
export interface Tally {
  /** EDDY_SP_RUN of the run that emitted it. */
  readonly run: string;
  readonly subtask: number;
  readonly total: number;
}
export interface Markers {
  readonly marker: string;
  readonly restored: readonly string[];
}

/**
 * Holds every record number it saw, summed, as operator list state; and the union of markers.
 * (Plain fields, not #private ones: each subtask gets a copy of the function object, and a
 * copy made with Object.create has no private slots.)
 */
class Tallying implements ProcessFunction<number, number> {
  /** Names the run in what it emits (EDDY_SP_RUN when the job was built). */
  private readonly run: string;
  private sums!: OperatorListState<number>;
  private markers!: OperatorListState<string>;
  private restored: number[] = [];
  private own = 0;
  private subtask = 0;
  private announced = false;

  constructor(run: string) {
    this.run = run;
  }

  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
    this.sums = ctx.getOperatorListState<number>("sums");
    this.restored = this.sums.get();
    this.markers = ctx.getUnionListState<string>("markers");
    const marker = `p${ctx.parallelism}-s${ctx.subtaskIndex}-${this.run}`;
    const restored = [...new Set(this.markers.get())].sort();
    this.markers.update([...restored, marker]);
    this.pendingMarkers = { marker, restored };
  }

  private pendingMarkers: Markers | undefined;

  processElement(n: number, ctx: ProcessContext, out: Collector<number>): void {
    this.own += n;
    this.sums.update([...this.restored, this.own]);
    if (!this.announced && this.pendingMarkers !== undefined) {
      this.announced = true;
      ctx.output(MARKERS, this.pendingMarkers);
    }
    ctx.output(TALLIES, { run: this.run, subtask: this.subtask, total: this.restored.reduce((a, b) => a + b, 0) + this.own });
    out.collect(n);
  }
}

const TALLIES = new OutputTag<Tally>("tallies");
const MARKERS = new OutputTag<Markers>("markers");

const COUNT = new ValueStateDescriptor<number>("count");

/** Counts records per key; one event-time timer per key and bucket reports the count. */
class Counting implements KeyedProcessFunction<number, number, TimerFired> {
  private subtask = -1;

  open(ctx: KeyedRuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
  }

  processElement(n: number, ctx: KeyedProcessContext<number>): void {
    const count = ctx.getState(COUNT);
    count.update((count.value() ?? 0) + 1);
    ctx.timerService().registerEventTimeTimer(Math.ceil(n / BUCKET) * BUCKET);
  }

  onTimer(timestamp: number, ctx: OnTimerContext<number>, out: Collector<TimerFired>): void {
    out.collect({ key: ctx.getCurrentKey(), timestamp, count: ctx.getState(COUNT).value() ?? 0, subtask: this.subtask });
  }
}

export default defineJob("rescalable", (env) => {
  // "unset": the job leaves it to the run (or to the savepoint it restores).
  const maxParallelism = process.env.EDDY_SP_MAX_PARALLELISM ?? "128";
  if (maxParallelism !== "unset") env.setMaxParallelism(Number(maxParallelism));
  const perMs = Number(process.env.EDDY_SP_PER_MS ?? 10);
  const tallied = env
    .fromSource(pacedNumbers({ records: RECORDS, splits: SPLITS, idPrefix: "split", perPoll: perMs, pauseMs: 1 }), WatermarkStrategy.noWatermarks<number>(), "paced")
    .uid("source")
    .process(new Tallying(process.env.EDDY_SP_RUN ?? "run"))
    .uid("tally");
  tallied.getSideOutput(TALLIES).sinkTo(committingCollectSink<Tally>("tallies")).uid("tallies-sink");
  tallied.getSideOutput(MARKERS).sinkTo(committingCollectSink<Markers>("markers")).uid("markers-sink");
  tallied
    .keyBy((n) => n % KEYS)
    .process(new Counting())
    .uid("counter")
    .sinkTo(committingCollectSink<TimerFired>("timers"))
    .uid("timers-sink");
});
