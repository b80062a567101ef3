/**
 * The keyed-state job of bench/checkpoints.ts: a sequence keyed by `n mod keys` into a counter
 * per key (ValueState of a small record), so the state has exactly `keys` keys once every key was
 * seen. Settings are environment variables read when the job is built (bench/jobs/settings.ts).
 * With EDDY_BENCH_CHK_FAULT_AT set, the map throws once at that record (marker files in
 * EDDY_BENCH_CHK_MARKERS record when the fault fired and when the first record after the restore
 * was processed — the recovery time).
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defineJob, ValueStateDescriptor, type KeyedProcessFunction } from "eddy";
import { foldingSink } from "../folding-sink.ts";
import { setting } from "./settings.ts";

const records = setting("EDDY_BENCH_CHK_RECORDS", 10_000_000);
const keys = setting("EDDY_BENCH_CHK_KEYS", 100_000);
const faultAt = setting("EDDY_BENCH_CHK_FAULT_AT", 0);
/** Padding of each key's label: ~100 bytes of checkpointed state per key (100 MB at 1 M keys). */
const PADDING = "-".repeat(56);

interface Counter {
  count: number;
  last: number;
  label: string;
}

const counting: KeyedProcessFunction<number, number, number> = {
  processElement(n, ctx, out) {
    const state = ctx.getState(new ValueStateDescriptor<Counter>("counter"));
    const c = state.value();
    state.update(c === undefined ? { count: 1, last: n, label: `key-${ctx.getCurrentKey()}${PADDING}` } : { count: c.count + 1, last: n, label: c.label });
    if ((n & 1023) === 0) out.collect(n);
  },
};

/** Creates `name` in the marker directory with the current time, once; true for the creator. */
function mark(name: string): boolean {
  const dir = process.env.EDDY_BENCH_CHK_MARKERS;
  if (dir === undefined) return false;
  try {
    writeFileSync(join(dir, name), String(Date.now()), { flag: "wx" });
    return true;
  } catch {
    return false;
  }
}

export const keyedState = defineJob("bench-checkpoint-state", (env) => {
  const k = keys();
  const fault = faultAt();
  const markers = process.env.EDDY_BENCH_CHK_MARKERS;
  // Per job build, so per attempt on worker threads (each attempt starts new workers).
  let firstOfAttempt = true;
  let firstRecord = true;
  env
    .fromSequence(1, records())
    .map((n: number) => {
      if (firstRecord) {
        firstRecord = false;
        // bench/savepoints.ts: the job runs (restored) once a first record gets here.
        mark(`first-record-${process.env.EDDY_BENCH_CHK_RUN ?? ""}`);
      }
      if (fault > 0) {
        if (firstOfAttempt) {
          firstOfAttempt = false;
          // The first record of an attempt that starts after the fault: the job is running again.
          if (markers !== undefined && existsSync(join(markers, "fault"))) mark("first-after-restore");
        }
        if (n === fault && mark("fault")) throw new Error(`injected fault at record ${n}`);
      }
      return n;
    })
    .keyBy((n) => n % k)
    .process(counting)
    .uid("counting")
    .sinkTo(foldingSink<number>((n) => n), "Sink: folding");
});
