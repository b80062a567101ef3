/**
 * The job of the file sink's kill-and-compare tests (test/file-sink.test.ts): generated events →
 * keyed event-time windows → FileSink (NDJSON, event-time buckets, small parts so they roll), into
 * EDDY_FS_OUT_DIR. A fault comes from EDDY_FS_FAULT as in test/jobs/checkpointed.ts: it fires once
 * per marker file, whichever attempt and worker reach it. EDDY_FS_EVENTS is the number of events
 * (read when the job is built). With EDDY_FS_RELEASE set, the job runs slowly until that file
 * exists (the disk-full test fills the disk first).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { defineJob, FileSink, TumblingEventTimeWindows, WatermarkStrategy } from "eddy";
import { faultyIdentity, recordFaultFrom } from "./fault-markers.ts";

const KEYS = 20;

export interface WindowSum {
  readonly key: number;
  readonly end: number;
  readonly count: number;
  readonly sum: number;
}

export const fileSinkJob = defineJob("file-sink-windows", (env) => {
  const fault = recordFaultFrom(process.env.EDDY_FS_FAULT);
  const events = Number(process.env.EDDY_FS_EVENTS ?? 100_000);
  const out = process.env.EDDY_FS_OUT_DIR ?? "out/file-sink-windows";
  const hold = process.env.EDDY_FS_RELEASE || undefined;
  env
    .fromSequence(1, events)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
    // Held back (1 ms per 100 records) until the file EDDY_FS_RELEASE names exists.
    .map(faultyIdentity(fault, hold, 100))
    .keyBy((n) => n % KEYS)
    .window(TumblingEventTimeWindows.of(500))
    .process<WindowSum>({
      process(key, context, elements, collector) {
        let count = 0;
        let sum = 0;
        for (const n of elements) {
          count++;
          sum += n;
        }
        collector.collect({ key, end: context.window.end, count, sum } satisfies WindowSum);
      },
    })
    .uid("window-sums")
    .sinkTo(FileSink.ndjson<WindowSum>(out, { buckets: { by: "event-time", pattern: "min={mm}" }, rollingPolicy: { maxPartSizeBytes: 16_384 }, writeBufferBytes: 256 }), "files");
});

export default fileSinkJob;

/** Every file under `dir` (relative paths). */
export function allFiles(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => relative(dir, join(e.parentPath, e.name)))
      .sort();
  } catch {
    return [];
  }
}

/** The visible (committed) part files under `dir`. */
export const committedParts = (dir: string): string[] => allFiles(dir).filter((f) => !f.split("/").pop()!.startsWith("."));

/** Every record of the committed part files, as sorted lines. */
export const committedRecords = (dir: string): string[] =>
  committedParts(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n").filter((l) => l !== "")).sort();
