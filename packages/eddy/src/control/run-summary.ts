/**
 * The lines `eddy run` writes to stderr when a job finishes: duration, records read by the
 * sources, records into each sink (by its metric name: sinks of the same name are told apart as
 * "Sink: Print" and "Sink: Print (2)", graph/plan.ts), late
 * records dropped by windows and interval joins, checkpoints and restarts. A pure function of
 * what the job reported, so it is tested without running one.
 *
 * The counts are the last attempt's: after a restart, the sources re-read from the restored
 * checkpoint and the counters start again, so they no longer add up to the job's whole input.
 */
import type { CheckpointStats } from "../checkpoint/coordinator.ts";
import type { JobResult } from "../coordinator/execution-attempt.ts";
import { LATE_RECORDS_DROPPED, SINK_RECORDS_WRITTEN } from "../runtime/operator.ts";

export interface RunSummaryInput {
  readonly result: JobResult;
  /** Every checkpoint of the run, oldest first; the last five are described one per line. */
  readonly checkpoints: readonly CheckpointStats[];
  /** Per restart, the checkpoint it restored (null: from the beginning). */
  readonly restoredFrom: readonly (number | null)[];
}

const count = (n: number): string => n.toLocaleString("en");

/** Records per sink (metric name), in order of names (not of which task reported first), and the late records dropped, summed over subtasks. */
export function sinkAndLateCounts(result: JobResult): { sinks: Map<string, number>; lateDropped: number } {
  const sinks = new Map<string, number>();
  let lateDropped = 0;
  const sinkSuffix = `.${SINK_RECORDS_WRITTEN}`;
  const lateSuffix = `.${LATE_RECORDS_DROPPED}`;
  for (const m of result.metrics) {
    for (const [id, n] of Object.entries(m.counters)) {
      // Counter ids are "<operator>.<name>"; operator names may contain dots, counter names do not.
      if (id.endsWith(sinkSuffix)) {
        const sink = id.slice(0, -sinkSuffix.length);
        sinks.set(sink, (sinks.get(sink) ?? 0) + n);
      } else if (id.endsWith(lateSuffix)) {
        lateDropped += n;
      }
    }
  }
  return { sinks: new Map([...sinks].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), lateDropped };
}

export function runSummary({ result, checkpoints, restoredFrom }: RunSummaryInput): string {
  const rate = result.durationMs > 0 ? Math.round((result.sourceRecords * 1000) / result.durationMs) : result.sourceRecords;
  const { sinks, lateDropped } = sinkAndLateCounts(result);
  const sinceRestart = restoredFrom.length > 0 ? " since the last restart" : "";
  let out = `[eddy] job '${result.jobName}' finished in ${result.durationMs} ms\n`;
  out += `[eddy]   records read by sources: ${count(result.sourceRecords)} (${count(rate)} records/s)${sinceRestart}\n`;
  for (const [sink, n] of sinks) out += `[eddy]   records into sink '${sink}': ${count(n)}${sinceRestart}\n`;
  out += `[eddy]   late records dropped: ${count(lateDropped)}\n`;
  const completed = checkpoints.filter((s) => s.status === "completed").length;
  const failed = checkpoints.filter((s) => s.status === "failed").length;
  out += `[eddy]   checkpoints: ${count(completed)} completed, ${count(failed)} failed; restarts: ${restoredFrom.length}`;
  if (restoredFrom.length > 0) out += ` (restored from ${restoredFrom.map((id) => (id === null ? "the beginning" : `checkpoint ${id}`)).join(", ")})`;
  out += "\n";
  for (const s of checkpoints.slice(-5)) {
    out +=
      `[eddy]     checkpoint ${s.checkpointId}: ${s.status}` +
      (s.durationMs === undefined ? "" : ` in ${Math.round(s.durationMs)} ms`) +
      ` (sync ${s.syncMs.toFixed(1)} ms, async ${Math.round(s.asyncMs)} ms, alignment ${s.alignmentMs.toFixed(1)} ms, ${s.bytes.toLocaleString("en")} bytes)` +
      (s.failureReason === undefined ? "" : ` — ${s.failureReason}`) +
      "\n";
  }
  return out;
}
