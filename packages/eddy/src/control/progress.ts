/**
 * What `eddy run`'s live status line and `eddy list` say about a running job: records in and out
 * per second, the watermark lag, the worst backpressure, the last checkpoint and the restarts.
 *
 * `progressOf` reads a job the way the REST API does (from memory the coordinator keeps, never by
 * asking the tasks) and `ProgressRates` turns the running counts into rates over the last few
 * seconds, which is what someone watching a terminal wants (the metrics' meters average over a
 * minute, as Flink's do). `progressLine` is a pure function of both, so it is tested without a
 * job or a terminal.
 *
 * Records in: what the sources emitted (the attempt's count: after a restart it starts again, and
 * the rates start again with it). Records out: what the sinks wrote (their numRecordsWritten
 * counters). Watermark lag: wall-clock time minus the lowest input watermark of the sinks' tasks,
 * the event time up to which every result may be complete; none while no watermark has passed a
 * sink, and not shown for a job without event time.
 */
import type { ObservedJob, JobState } from "../coordinator/control.ts";
import type { JobMetricsSnapshot } from "../coordinator/job-metrics.ts";
import type { Plan } from "../graph/plan.ts";
import { SINK_RECORDS_WRITTEN } from "../runtime/operator.ts";
import { backpressureView, watermarksView, worseLevel, type BackpressureLevel } from "./rest-views.ts";

/** The running counts and the states of one look at a job. */
export interface Progress {
  readonly atMs: number;
  readonly name: string;
  readonly state: JobState;
  readonly elapsedMs: number;
  readonly recordsIn: number;
  readonly recordsOut: number;
  /** Milliseconds; null before a watermark reached every sink task; "none" for a job whose sinks see no watermark at all. */
  readonly watermarkLagMs: number | null | "none";
  /** The worst vertex's level and name; level "unknown" before the first metrics arrived. */
  readonly backpressure: { readonly level: BackpressureLevel; readonly vertex: string | null };
  /** "disabled" without checkpointing; null before the first completed one. */
  readonly lastCheckpoint: { readonly id: number; readonly completedAtMs: number; readonly durationMs: number; readonly bytes: number } | null | "disabled";
  readonly restarts: number;
}

/** Looks at `job` now. `sourceRecords`: what the sources emitted in the current attempt. */
export function progressOf(job: ObservedJob, sourceRecords: number, nowMs: number): Progress {
  const metrics = job.metricsSnapshot();
  const counts = job.checkpointCounts();
  let lastCheckpoint: Progress["lastCheckpoint"] = counts === undefined ? "disabled" : null;
  if (counts !== undefined) {
    const history = job.checkpointHistory();
    for (let i = history.length - 1; i >= 0; i--) {
      const c = history[i]!;
      if (c.status !== "completed" || c.isSavepoint || c.durationMs === undefined) continue;
      lastCheckpoint = { id: c.checkpointId, completedAtMs: c.triggerTimeMs + c.durationMs, durationMs: c.durationMs, bytes: c.bytes };
      break;
    }
  }
  return {
    atMs: nowMs,
    name: job.name,
    state: job.state(),
    elapsedMs: (job.endedAtMs ?? nowMs) - job.startedAtMs,
    recordsIn: sourceRecords,
    recordsOut: sinkRecords(metrics),
    watermarkLagMs: watermarkLag(job.plan, metrics, nowMs),
    backpressure: worstBackpressure(job.plan, metrics),
    lastCheckpoint,
    restarts: job.restarts,
  };
}

function sinkRecords(metrics: JobMetricsSnapshot): number {
  let n = 0;
  for (const task of metrics.tasks) for (const op of task.operators) n += op.counters[SINK_RECORDS_WRITTEN] ?? 0;
  return n;
}

function watermarkLag(plan: Plan, metrics: JobMetricsSnapshot, nowMs: number): Progress["watermarkLagMs"] {
  const sinkChains = new Set(plan.chains.filter((c) => c.nodes.at(-1)!.outputs.length === 0).map((c) => c.name));
  const lows = watermarksView(plan, metrics).vertices.filter((v) => sinkChains.has(v.name)).map((v) => v.lowInputWatermark);
  if (lows.length === 0 || lows.includes(null)) return null;
  if (lows.every((w) => w === "none")) return "none";
  const numbers = lows.filter((w): w is number => typeof w === "number");
  // "end": every sink has seen the final watermark; no lag is left.
  if (numbers.length === 0) return lows.includes("none") ? null : 0;
  return Math.max(0, nowMs - Math.min(...numbers));
}

function worstBackpressure(plan: Plan, metrics: JobMetricsSnapshot): Progress["backpressure"] {
  let worst: Progress["backpressure"] = { level: "unknown", vertex: null };
  for (const v of backpressureView(plan, metrics).vertices) {
    if (worseLevel(worst.level, v.level) !== worst.level) worst = { level: v.level, vertex: v.name };
  }
  return worst;
}

/** Per-second rates of the running counts over the last `windowMs` (5 s: steady, yet quick to show a stall). */
export class ProgressRates {
  readonly #windowMs: number;
  #samples: { atMs: number; recordsIn: number; recordsOut: number }[] = [];

  constructor(windowMs = 5_000) {
    this.#windowMs = windowMs;
  }

  /** Adds `p` and answers the rates since the oldest sample in the window; null until two samples a moment apart. */
  update(p: Progress): { inPerSecond: number; outPerSecond: number } | null {
    const last = this.#samples.at(-1);
    // A restart starts the attempt's counts again: so do the rates.
    if (last !== undefined && (p.recordsIn < last.recordsIn || p.recordsOut < last.recordsOut)) this.#samples = [];
    this.#samples.push({ atMs: p.atMs, recordsIn: p.recordsIn, recordsOut: p.recordsOut });
    while (this.#samples.length > 2 && p.atMs - this.#samples[1]!.atMs >= this.#windowMs) this.#samples.shift();
    const first = this.#samples[0]!;
    const seconds = (p.atMs - first.atMs) / 1_000;
    if (seconds < 0.2) return null;
    return { inPerSecond: (p.recordsIn - first.recordsIn) / seconds, outPerSecond: (p.recordsOut - first.recordsOut) / seconds };
  }
}

/** 1234 → "1,234"; 12_345 → "12.3 K"; 1_234_567 → "1.23 M". */
export function compactCount(n: number): string {
  if (!Number.isFinite(n)) return "–";
  const a = Math.abs(n);
  if (a < 10_000) return Math.round(n).toLocaleString("en");
  if (a < 1_000_000) return `${(n / 1_000).toFixed(a < 100_000 ? 1 : 0)} K`;
  if (a < 1_000_000_000) return `${(n / 1_000_000).toFixed(a < 10_000_000 ? 2 : 1)} M`;
  return `${(n / 1_000_000_000).toFixed(2)} G`;
}

/** 850 → "850 ms"; 12_300 → "12.3 s"; 754_000 → "12m34s"; 7_500_000 → "2h05m". */
export function compactDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3_600)}h${String(Math.floor((s % 3_600) / 60)).padStart(2, "0")}m`;
}

function compactBytes(n: number): string {
  if (n < 1_024) return `${n} B`;
  if (n < 1_024 ** 2) return `${(n / 1_024).toFixed(1)} KiB`;
  if (n < 1_024 ** 3) return `${(n / 1_024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1_024 ** 3).toFixed(2)} GiB`;
}

/**
 * The status line: `[eddy] name running 12.3 s | in 1.23 M/s | out 45.6 K/s | watermark lag 1.2 s |
 * backpressure ok | checkpoint 7 3.0 s ago (45 ms, 1.2 MiB) | restarts 0`, cut to `columns - 1`
 * characters (a line as wide as the terminal wraps, and the carriage return then redraws only its
 * second half). Parts with nothing to say are left out (no watermark lag for a job without event
 * time, no checkpoint part without checkpointing).
 */
export function progressLine(p: Progress, rates: { inPerSecond: number; outPerSecond: number } | null, columns?: number): string {
  const parts = [`[eddy] ${p.name} ${p.state} ${compactDuration(p.elapsedMs)}`];
  parts.push(rates === null ? `in ${compactCount(p.recordsIn)}` : `in ${compactCount(rates.inPerSecond)}/s`);
  parts.push(rates === null ? `out ${compactCount(p.recordsOut)}` : `out ${compactCount(rates.outPerSecond)}/s`);
  if (p.watermarkLagMs !== "none") parts.push(`watermark lag ${p.watermarkLagMs === null ? "–" : compactDuration(p.watermarkLagMs)}`);
  const bp = p.backpressure;
  parts.push(`backpressure ${bp.level === "unknown" ? "–" : bp.level}${bp.level === "low" || bp.level === "high" ? ` (${bp.vertex})` : ""}`);
  const c = p.lastCheckpoint;
  if (c !== "disabled") {
    parts.push(
      c === null
        ? "no checkpoint yet"
        : `checkpoint ${c.id} ${compactDuration(Math.max(0, p.atMs - c.completedAtMs))} ago (${compactDuration(c.durationMs)}, ${compactBytes(c.bytes)})`,
    );
  }
  parts.push(`restarts ${p.restarts}`);
  const line = parts.join(" | ");
  // A terminal of unknown size (columns 0, as a pseudo-terminal nobody sized) gets the whole line.
  if (columns === undefined || !(columns > 0)) return line;
  const max = Math.max(10, columns - 1);
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}
