/**
 * From the measurements of one query (one per round) to the figures the bench reports: medians
 * over rounds, ratios against Flink and the loop, the output check, the targets of issue 5.
 */
import { FLINK_PER_CORE, FLINK_V2_TARGET_FACTOR, LOOP_TARGET_FACTOR } from "./flink-per-core.ts";
import type { Measurement } from "./measurement.ts";
import type { OutputComparison } from "./queries.ts";
import type { OutputFold } from "../output-fold.ts";
import { median } from "../stats.ts";

/** One JSON line of `--json`; also what the table prints. Rates are events per second. */
export interface QueryReport {
  readonly query: string;
  readonly events: number;
  readonly parallelism: number;
  readonly mode: "inline" | "threads";
  readonly rounds: number;
  /** Wall clock over the whole job (JobResult.durationMs, worker start-up included). */
  readonly eventsPerSecond: number;
  /** Wall clock from the moment every subtask was deployed (JobResult.runningMs). */
  readonly eventsPerSecondRunning: number;
  /** Events / CPU-seconds of the whole process (all threads), start-up included. */
  readonly eventsPerSecondPerCore: number;
  /** The same less the CPU of the same job over no events: closer to a long run's steady state. */
  readonly eventsPerSecondPerCoreExStartup: number;
  readonly startupCpuMs: number;
  /** One thread, so also per core; null when the query has no loop yet. */
  readonly handLoopEventsPerSecond: number | null;
  /** Flink 2.x events/s per core from BENCHMARKS.md; null when it publishes none. */
  readonly flinkV2PerCore: number | null;
  /** eventsPerSecondPerCore / flinkV2PerCore (issue 5: ≥ 3). */
  readonly ratioToFlinkPerCore: number | null;
  readonly ratioToFlinkPerCoreExStartup: number | null;
  /** handLoopEventsPerSecond / eventsPerSecondPerCore (issue 5, stateless queries: ≤ 3). */
  readonly ratioLoopToEddy: number | null;
  readonly ratioLoopToEddyExStartup: number | null;
  /** Largest peak resident set of the query's processes (each round runs in its own process). */
  readonly peakRssMb: number;
  readonly outputRecords: number;
  /**
   * "agrees": every round's job output equals the loop's (count and checksum); "agrees in part
   * (why)": what can be compared at this parallelism does; "not compared (why)"; "no loop"; or
   * "MISMATCH: what differed".
   */
  readonly outputCheck: string;
  readonly stateless: boolean;
  /** Issue 5's targets on the start-up-inclusive figures; null where a figure is missing. */
  readonly meetsFlinkTarget: boolean | null;
  readonly meetsLoopTarget: boolean | null;
}

export function reportQuery(rounds: readonly Measurement[], stateless: boolean): QueryReport {
  const first = rounds[0];
  if (first === undefined) throw new RangeError("no measurements");
  const { query, events, parallelism, mode } = first;
  const perSecond = (ms: number): number => (events * 1000) / ms;
  const perCore = median(rounds.map((m) => perSecond(m.cpuMs)));
  const perCoreExStartup = median(rounds.map((m) => perSecond(Math.max(1, m.cpuMs - m.startupCpuMs))));
  const loops = rounds.flatMap((m) => (m.loop === undefined ? [] : [perSecond(m.loop.ms)]));
  const loop = loops.length === 0 ? null : median(loops);
  const flink = FLINK_PER_CORE[query]?.v2 ?? null;
  const ratio = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : a / b);
  const ratioToFlink = ratio(perCore, flink);
  const ratioLoop = ratio(loop, perCore);
  return {
    query,
    events,
    parallelism,
    mode,
    rounds: rounds.length,
    eventsPerSecond: median(rounds.map((m) => perSecond(m.durationMs))),
    eventsPerSecondRunning: median(rounds.map((m) => perSecond(m.runningMs))),
    eventsPerSecondPerCore: perCore,
    eventsPerSecondPerCoreExStartup: perCoreExStartup,
    startupCpuMs: median(rounds.map((m) => m.startupCpuMs)),
    handLoopEventsPerSecond: loop,
    flinkV2PerCore: flink,
    ratioToFlinkPerCore: ratioToFlink,
    ratioToFlinkPerCoreExStartup: ratio(perCoreExStartup, flink),
    ratioLoopToEddy: ratioLoop,
    ratioLoopToEddyExStartup: ratio(loop, perCoreExStartup),
    peakRssMb: Math.max(...rounds.map((m) => m.peakRssMb)),
    outputRecords: first.eddy.count,
    outputCheck: outputCheck(rounds),
    stateless,
    meetsFlinkTarget: ratioToFlink === null ? null : ratioToFlink >= FLINK_V2_TARGET_FACTOR,
    meetsLoopTarget: !stateless || ratioLoop === null ? null : ratioLoop <= LOOP_TARGET_FACTOR,
  };
}

/** Whether two folds of the same query differ in what its comparison covers. */
export function foldsDiffer(comparison: OutputComparison, a: OutputFold, b: OutputFold): boolean {
  return (comparison.count && a.count !== b.count) || (comparison.checksum && a.checksum !== b.checksum);
}

function outputCheck(rounds: readonly Measurement[]): string {
  const { comparison } = rounds[0]!;
  const differ = (a: OutputFold, b: OutputFold): boolean => foldsDiffer(comparison, a, b);
  const problems: string[] = [];
  const first = rounds[0]!.eddy;
  for (const [i, m] of rounds.entries()) {
    if (differ(m.eddy, first)) {
      problems.push(`round ${i + 1}: job gave ${m.eddy.count} records (checksum ${m.eddy.checksum}), round 1 ${first.count} (${first.checksum})`);
    }
    const loop = m.loop?.fold;
    if (loop !== undefined && differ(loop, m.eddy)) {
      problems.push(`round ${i + 1}: job ${m.eddy.count} records (checksum ${m.eddy.checksum}), loop ${loop.count} (${loop.checksum})`);
    }
  }
  if (problems.length > 0) return `MISMATCH: ${problems.join("; ")}`;
  if (!rounds.some((m) => m.loop !== undefined)) return "no loop";
  if (!comparison.count && !comparison.checksum) return `not compared (${comparison.note ?? "no reason given"})`;
  return comparison.note === undefined ? "agrees" : `agrees in part (${comparison.note})`;
}
