/**
 * The job's metrics in Prometheus's text exposition format (version 0.0.4), for `GET /metrics`
 * on the control API. Names are Flink's, prefixed by scope: `eddy_job_*` (labels job),
 * `eddy_task_*` (job, task, subtask), `eddy_operator_*` (job, task, operator, subtask) and
 * `eddy_user_*` (the user's metrics, same labels). docs/metrics.md lists them.
 *
 * Written here rather than with prom-client: its Registry keeps global, mutable metric objects
 * meant to be updated in place, while a scrape here renders a snapshot that was just read; the
 * format is a few rules (escaping, one TYPE per family, samples of a family together), kept below.
 *
 * Size: one family per metric name, one sample per (task, subtask, operator) and metric: the
 * answer grows with operators × subtasks (and the user's metrics, at most MAX_USER_METRICS per
 * operator subtask), nothing else. A series whose value is not known (NaN: not measured) is left
 * out, except user gauges, where NaN says the gauge failed.
 */
import type { JobMetricsSnapshot } from "../coordinator/job-metrics.ts";
import { HISTOGRAM_QUANTILES } from "../runtime/metrics/metric-group.ts";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

type MetricType = "counter" | "gauge" | "summary";

interface Family {
  readonly type: MetricType;
  readonly help: string;
  readonly lines: string[];
}

/** Families by name, in the order first seen. */
class Exposition {
  readonly #families = new Map<string, Family>();

  /** Adds a sample; a family name already used with another type gets the type as a suffix. */
  add(name: string, type: MetricType, help: string, labels: Readonly<Record<string, string>>, value: number, suffix = "", keepNaN = false): void {
    if (Number.isNaN(value) && !keepNaN) return;
    let family = this.#families.get(name);
    if (family !== undefined && family.type !== type) return this.add(`${name}_${type}`, type, help, labels, value, suffix, keepNaN);
    if (family === undefined) this.#families.set(name, (family = { type, help, lines: [] }));
    family.lines.push(`${name}${suffix}${labelText(labels)} ${formatValue(value)}`);
  }

  text(): string {
    let out = "";
    for (const [name, f] of this.#families) {
      out += `# HELP ${name} ${f.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${f.type}\n`;
      for (const line of f.lines) out += line + "\n";
    }
    return out;
  }
}

function labelText(labels: Readonly<Record<string, string>>): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return `{${parts.join(",")}}`;
}

function formatValue(v: number): string {
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  return Number.isNaN(v) ? "NaN" : String(v);
}

/** A runtime counter's name as a metric name (they are identifiers already; anything else becomes '_'). */
function metricName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_]/g, "_");
}

const OPERATOR_METRICS = [
  ["numRecordsIn", "counter", "Records the operator received."],
  ["numRecordsOut", "counter", "Records the operator emitted on its main output."],
  ["numRecordsInPerSecond", "gauge", "Records received per second, over the last minute."],
  ["numRecordsOutPerSecond", "gauge", "Records emitted per second, over the last minute."],
  ["currentInputWatermark", "gauge", "The last watermark the operator received, in ms since the epoch."],
  ["currentOutputWatermark", "gauge", "The last watermark the operator emitted, in ms since the epoch."],
  ["watermarkLag", "gauge", "Wall-clock time minus the output watermark, in ms."],
  ["stateSize", "gauge", "Bytes of the operator subtask's state in the newest completed checkpoint."],
] as const;

/** The standard gauges of sources (FLIP-33, and watermark alignment's drift), runtime/metrics/operator-metrics.ts. */
const STANDARD_GAUGE_HELP: Readonly<Record<string, string>> = {
  sourceIdleTime: "Milliseconds since the source last emitted a record (to the report interval).",
  pendingRecords: "Records the source has not emitted yet, as its reader tells.",
  pendingBytes: "Bytes the source has not read yet, as its reader tells.",
  watermarkAlignmentDrift: "Milliseconds the source subtask's watermark is ahead of its alignment group's slowest (watermark alignment).",
};

const TASK_METRICS = [
  ["busyTimeMsPerSecond", "gauge", "Milliseconds per second the subtask ran, over the last minute."],
  ["idleTimeMsPerSecond", "gauge", "Milliseconds per second the subtask had nothing to do, over the last minute."],
  ["backPressuredTimeMsPerSecond", "gauge", "Milliseconds per second the subtask had work but no room downstream, over the last minute."],
  ["numBytesIn", "counter", "Encoded bytes the subtask received from other threads."],
  ["numBytesOut", "counter", "Encoded bytes the subtask sent to other threads."],
] as const;

export function prometheusExposition(m: JobMetricsSnapshot): string {
  const e = new Exposition();
  const job = { job: m.job };
  e.add("eddy_job_numRestarts", "counter", "Times the job restarted after a failure.", job, m.numRestarts);
  if (m.checkpoints !== undefined) {
    const c = m.checkpoints;
    e.add("eddy_job_numberOfCompletedCheckpoints", "counter", "Checkpoints and savepoints completed.", job, c.numberOfCompletedCheckpoints);
    e.add("eddy_job_numberOfFailedCheckpoints", "counter", "Checkpoints and savepoints that failed.", job, c.numberOfFailedCheckpoints);
    e.add("eddy_job_lastCheckpointDuration", "gauge", "Duration of the newest completed checkpoint, in ms.", job, c.lastCheckpointDuration ?? Number.NaN);
    e.add("eddy_job_lastCheckpointSize", "gauge", "Bytes of the newest completed checkpoint's task snapshots.", job, c.lastCheckpointSize ?? Number.NaN);
  }
  for (const t of m.tasks) {
    const labels = { job: m.job, task: t.task, task_id: t.vertex, subtask: String(t.subtask) };
    for (const [name, type, help] of TASK_METRICS) e.add(`eddy_task_${name}`, type, help, labels, t[name]);
  }
  for (const t of m.tasks) {
    for (const o of t.operators) {
      const labels = { job: m.job, task: t.task, task_id: t.vertex, operator: o.operator, subtask: String(t.subtask) };
      for (const [name, type, help] of OPERATOR_METRICS) e.add(`eddy_operator_${name}`, type, help, labels, o[name]);
      for (const [name, value] of Object.entries(o.gauges)) e.add(`eddy_operator_${metricName(name)}`, "gauge", STANDARD_GAUGE_HELP[name] ?? `The operator's ${name}.`, labels, value);
      for (const [name, value] of Object.entries(o.counters)) e.add(`eddy_operator_${metricName(name)}`, "counter", `The runtime's ${name} counter.`, labels, value);
      for (const u of o.user) {
        const name = `eddy_user_${u.name}`;
        switch (u.kind) {
          case "counter":
            e.add(name, "counter", "A user counter.", labels, u.count);
            break;
          case "gauge":
            e.add(name, "gauge", "A user gauge.", labels, u.value, "", true);
            break;
          case "meter":
            e.add(name, "gauge", "A user meter: events per second over the last minute.", labels, "rate" in u ? u.rate : Number.NaN);
            e.add(`${name}_total`, "counter", "A user meter: events in all.", labels, u.count);
            break;
          case "histogram":
            HISTOGRAM_QUANTILES.forEach((q, i) =>
              e.add(name, "summary", "A user histogram: quantiles of its last 1024 values.", { ...labels, quantile: String(q) }, u.quantiles[i]!, "", true),
            );
            e.add(name, "summary", "", labels, u.sum, "_sum");
            e.add(name, "summary", "", labels, u.count, "_count");
            break;
        }
      }
    }
  }
  return e.text();
}
