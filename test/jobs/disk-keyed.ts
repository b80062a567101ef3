/**
 * The job of the disk state backend's kill-and-compare test (test/disk-state.test.ts): keys
 * n % KEYS, so every key is revisited all through the run and, with a small cache, goes to the
 * store and back many times. Its output does not depend on how source splits interleave: each
 * key's total (value state) and list of window sums (list state) emitted by an end-of-input timer,
 * and per-key tumbling event-time window sums (aggregating state in window namespaces). A fault
 * from EDDY_DK_FAULT (JSON { kind: "process" | "exit", atRecord, marker, checkpoints }) fires
 * once per marker, at the first record from `atRecord` on that comes after a checkpoint completed
 * (a `chk-<n>/_manifest` exists in the job's checkpoint directory `checkpoints`), so the restart
 * restores a checkpoint; from the first record on, the map sleeps 1 ms every 20 records until then,
 * so checkpoints complete early in the input on a busy machine too.
 */
import {
  defineJob,
  ListStateDescriptor,
  TumblingEventTimeWindows,
  ValueStateDescriptor,
  WatermarkStrategy,
  type Collector,
  type KeyedProcessFunction,
  type OnTimerContext,
} from "eddy";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { committingCollectSink } from "eddy/testing";
import { fireOnce } from "./fault-markers.ts";

export const RECORDS = Number(process.env.EDDY_DK_RECORDS ?? 200_000);
/** EDDY_DK_KEYS: fewer keys for a small fixture (test/disk-incremental-v1.test.ts). */
export const KEYS = Number(process.env.EDDY_DK_KEYS ?? 1_000);
const WINDOW = 10_000;

export interface Total {
  readonly key: number;
  readonly total: number;
  readonly count: number;
  readonly sums: readonly number[];
}
export interface WindowSum {
  readonly key: number;
  readonly sum: number;
  readonly last: number;
}

/** For short sleeps (Atomics.wait on a value that never changes). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

const TOTAL = new ValueStateDescriptor<{ total: number; count: number }>("total");
const SUMS = new ListStateDescriptor<number>("window-sums");

const totals: KeyedProcessFunction<number, number | WindowSum, Total> = {
  processElement(v, ctx) {
    if (typeof v !== "number") {
      ctx.getListState(SUMS).add(v.sum);
      return;
    }
    const state = ctx.getState(TOTAL);
    const prev = state.value();
    if (prev === undefined) ctx.timerService().registerEventTimeTimer(RECORDS + WINDOW);
    state.update({ total: (prev?.total ?? 0) + v, count: (prev?.count ?? 0) + 1 });
  },
  onTimer(_timestamp: number, ctx: OnTimerContext<number>, out: Collector<Total>): void {
    const t = ctx.getState(TOTAL).value()!;
    out.collect({ key: ctx.getCurrentKey(), total: t.total, count: t.count, sums: [...ctx.getListState(SUMS).get()].sort((a, b) => a - b) });
  },
};

interface Fault {
  /** "none": no fault, only the slow start until the checkpoint (a run that takes many checkpoints). */
  readonly kind: "process" | "exit" | "none";
  readonly atRecord: number;
  readonly marker: string;
  /** The job's checkpoint directory (`<checkpointDir>/<jobId>`). */
  readonly checkpoints: string;
  /** Fire only once checkpoint `chk-<n>` with n ≥ this is complete (default: any). */
  readonly afterCheckpoint?: number;
}

export const diskKeyedJob = defineJob("disk-keyed", (env) => {
  const raw = process.env.EDDY_DK_FAULT;
  const f = raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as Fault);
  let committed = false;
  let fired = false;
  const numbers = env
    .fromSequence(1, RECORDS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
    .map((n: number) => {
      if (f !== undefined && !fired) {
        // Slow from the first record until the checkpoint completes, then full speed. Slowed only
        // from `atRecord` on, a late fault could outrun the input: inline, the sleep also blocks
        // the coordinator and every other task (one thread), so a checkpoint completes only every
        // ~25,000 records however long the sleeps; from record 145,242 of 200,000 (the second
        // subtask's split starts at 100,001) checkpoint 2 completed after the last record (seed
        // 837694). Shorter sleeps (1 ms per 20 records, not 10) cost less time for the same records.
        if (!committed && n % 20 === 0) {
          committed =
            existsSync(f.checkpoints) &&
            readdirSync(f.checkpoints).some((d) => /^chk-\d+$/.test(d) && Number(d.slice(4)) >= (f.afterCheckpoint ?? 0) && existsSync(join(f.checkpoints, d, "_manifest")));
          if (!committed) Atomics.wait(sleeper, 0, 0, 1);
        }
        if (committed && f.kind !== "none" && n >= f.atRecord && fireOnce(f.marker)) {
          if (f.kind === "exit") process.exit(3);
          throw new Error(`injected fault at record ${n}`);
        }
        fired = f.kind === "none" ? committed : existsSync(f.marker);
      }
      return n;
    });
  const windows = numbers
    .keyBy((n) => n % KEYS)
    .window(TumblingEventTimeWindows.of(WINDOW))
    .aggregate({
      createAccumulator: () => ({ key: -1, sum: 0, last: 0 }),
      add: (n: number, acc: WindowSum) => ({ key: n % KEYS, sum: acc.sum + n, last: Math.max(acc.last, n) }),
      getResult: (acc: WindowSum) => acc,
      merge: (a: WindowSum, b: WindowSum) => ({ key: a.key, sum: a.sum + b.sum, last: Math.max(a.last, b.last) }),
    })
    .uid("window-sums");
  windows.sinkTo(committingCollectSink<WindowSum>("windows"));
  numbers
    .map((n: number): number | WindowSum => n)
    .union(windows.map((w: WindowSum): number | WindowSum => w))
    .keyBy((v) => (typeof v === "number" ? v % KEYS : v.key))
    .process(totals)
    .uid("totals")
    .sinkTo(committingCollectSink<Total>("totals"));
});

export default diskKeyedJob;
