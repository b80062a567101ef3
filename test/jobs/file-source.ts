/**
 * The job of test/file-source.test.ts, in its own module so worker threads can rebuild it: a
 * directory of NDJSON files and a directory of CSV.gz files (FileSource) → parse → keyed
 * aggregation → committing sinks. The input directory and a fault to inject come from the
 * environment (EDDY_FILE_JOB), read when the job is built; the fault fires once per marker file
 * (created exclusively when it fires), however many times the job restarts and on whichever worker.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  defineJob,
  FileSource,
  ValueStateDescriptor,
  WatermarkStrategy,
  type DataStream,
  type KeyedProcessFunction,
  type StreamExecutionEnvironment,
} from "eddy";
import { committingCollectSink } from "eddy/testing";
import { fireOnce, markingFirstCommit } from "./fault-markers.ts";

export interface FileJobConfig {
  readonly dir: string;
  /** Largest byte range of an NDJSON split (small, so the files are read by several splits). */
  readonly splitBytes: number;
  readonly fault?: { readonly kind: "process" | "exit"; readonly atId: number; readonly marker: string };
  /** Set: only the NDJSON directory, monitored continuously at this interval (no CSV, no totals). */
  readonly monitorIntervalMs?: number;
}

/** One input record, in NDJSON as is and in CSV as `id,key,amount`. */
export interface Purchase {
  readonly id: number;
  readonly key: string;
  readonly amount: number;
}

export interface Total {
  readonly key: string;
  readonly records: number;
  readonly amount: number;
  readonly idSum: number;
}

/** Sums per key; one result per key when the input has ended (the end-of-input watermark fires the timer). */
const totalPerKey: KeyedProcessFunction<string, Purchase, Total> = {
  processElement(p, ctx) {
    const state = ctx.getState(new ValueStateDescriptor<Total>("total"));
    const t = state.value() ?? { key: p.key, records: 0, amount: 0, idSum: 0 };
    state.update({ key: p.key, records: t.records + 1, amount: t.amount + p.amount, idSum: t.idSum + p.id });
    ctx.timerService().registerEventTimeTimer(1);
  },
  onTimer(_ts, ctx, out) {
    const t = ctx.getState(new ValueStateDescriptor<Total>("total")).value();
    if (t !== undefined) out.collect(t);
  },
};

export default defineJob("file-source-kill-and-compare", (env) => {
  const config = JSON.parse(process.env.EDDY_FILE_JOB ?? "{}") as FileJobConfig;
  const f = config.fault;
  // Every record at time 0: the end of the input (watermark MAX) is the only event-time progress.
  const atZero = WatermarkStrategy.forMonotonousTimestamps<Purchase>().withTimestampAssigner(() => 0);
  const ndjsonFiles = FileSource.ndjson<Purchase>(join(config.dir, "ndjson"), { splitBytes: config.splitBytes });
  const continuous = config.monitorIntervalMs !== undefined;
  const ndjson = env.fromSource(continuous ? ndjsonFiles.monitorContinuously(config.monitorIntervalMs!) : ndjsonFiles, atZero, "ndjson files");
  // Until a checkpoint has completed, the map sleeps 1 ms every 50 records: reading files is fast,
  // and on a loaded machine the first checkpoint can take longer than the whole input, so the fault
  // would always restart from scratch.
  const committed = f === undefined ? undefined : `${f.marker}.committed`;
  let slow = committed !== undefined;
  let seen = 0;
  const purchases = (continuous ? ndjson : ndjson.union(csvPurchases(env, config.dir))).map((p: Purchase) => {
    if (slow && ++seen % 50 === 0) {
      if (existsSync(committed!)) slow = false;
      else Atomics.wait(sleeper, 0, 0, 1);
    }
    if (f !== undefined && p.id === f.atId && fireOnce(f.marker)) {
      if (f.kind === "exit") process.exit(3);
      throw new Error(`injected fault at record ${p.id}`);
    }
    return p;
  });
  purchases.sinkTo(markingFirstCommit(committingCollectSink<Purchase>("records"), committed), "committed records");
  if (continuous) return;
  purchases.keyBy((p) => p.key).process(totalPerKey).uid("total-per-key").sinkTo(committingCollectSink<Total>("totals"), "committed totals");
});

/** The CSV.gz directory's records as purchases. */
function csvPurchases(env: StreamExecutionEnvironment, dir: string): DataStream<Purchase> {
  type Row = { id: string; key: string; amount: string };
  const atZero = WatermarkStrategy.forMonotonousTimestamps<Row>().withTimestampAssigner(() => 0);
  return env
    .fromSource(FileSource.csv<Row>(join(dir, "csv", "*.csv.gz")), atZero, "csv files")
    .map((r): Purchase => ({ id: Number(r.id), key: r.key, amount: Number(r.amount) }));
}

/** For short sleeps of a map (Atomics.wait on a value that never changes). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

