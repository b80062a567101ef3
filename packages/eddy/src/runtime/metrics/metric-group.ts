/**
 * The user's metrics of one operator subtask (Flink's `getRuntimeContext().getMetricGroup()`):
 * counters, gauges, meters and histograms registered in `open`, read by the task when it reports
 * (every metrics interval, on the task's thread), and carried to the coordinator as plain
 * samples (UserMetricSample) with the subtask's other metrics.
 *
 * Cost: a counter or a meter is one number increment; a histogram update writes one slot of a
 * fixed ring (HISTOGRAM_WINDOW values, as Flink's DescriptiveStatisticsHistogram) and sorts a copy
 * only when the task reports. A gauge's function runs only when the task reports. A meter's rate
 * is not computed here: its count is, and the coordinator turns counts into rates per second over
 * a sliding minute (coordinator/meter-view.ts), as it does for numRecordsInPerSecond.
 */
import { EddyError } from "../../core/errors.ts";

// The interfaces user code and connectors see are in core/metrics.ts (connectors are below runtime/).
export type { MetricCounter, MetricGroup, MetricHistogram, MetricMeter, SourceReaderMetricGroup } from "../../core/metrics.ts";
import type { MetricCounter, MetricHistogram, MetricMeter, SourceReaderMetricGroup } from "../../core/metrics.ts";

/** What a user metric looked like when the task reported: plain data, sent between threads. */
export type UserMetricSample =
  | { readonly kind: "counter" | "meter"; readonly name: string; readonly count: number }
  | { readonly kind: "gauge"; readonly name: string; readonly value: number }
  | {
      readonly kind: "histogram";
      readonly name: string;
      /** Updates since the start, and their sum. */
      readonly count: number;
      readonly sum: number;
      /** Quantiles of the last HISTOGRAM_WINDOW values, by HISTOGRAM_QUANTILES (NaN before any). */
      readonly quantiles: readonly number[];
    };

/** Metrics one operator subtask may register: bounds what `/metrics` answers. */
export const MAX_USER_METRICS = 100;
/** Values a histogram keeps for its quantiles (the most recent ones). A power of two. */
export const HISTOGRAM_WINDOW = 1024;
export const HISTOGRAM_QUANTILES: readonly number[] = [0.5, 0.75, 0.95, 0.99, 1];

const NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,99}$/;
const RESERVED_SUFFIX = /_(total|count|sum|bucket)$/;

/** Checks a metric name (see MetricGroup); `what` names the operator subtask for the message. */
export function checkMetricName(name: unknown, what: string): asserts name is string {
  if (typeof name !== "string" || !NAME.test(name) || RESERVED_SUFFIX.test(name)) {
    throw new EddyError(
      "INVALID_METRIC_NAME",
      `${what}: metric name ${JSON.stringify(name)} is not valid: use letters, digits and '_', not starting with a digit, at most 100 characters, not ending in _total, _count, _sum or _bucket`,
    );
  }
}

type Registered =
  | { readonly kind: "counter" | "meter"; readonly name: string; readonly cell: { count: number } }
  | { readonly kind: "gauge"; readonly name: string; readonly value: () => number }
  | { readonly kind: "histogram"; readonly name: string; readonly histogram: WindowHistogram };

export class OperatorMetricGroup implements SourceReaderMetricGroup {
  /** Who registers, for messages: "operator 'Map' (subtask 1)". */
  readonly #what: string;
  readonly #metrics = new Map<string, Registered>();
  /** The standard gauges (pendingRecords, pendingBytes), by name. */
  readonly #standard = new Map<string, () => number>();

  constructor(operatorName: string, subtaskIndex: number) {
    this.#what = `operator '${operatorName}' (subtask ${subtaskIndex})`;
  }

  counter(name: string): MetricCounter {
    const cell = { count: 0 };
    this.#register({ kind: "counter", name, cell });
    return {
      inc: (n = 1) => void (cell.count += n),
      get count() {
        return cell.count;
      },
    };
  }

  gauge(name: string, value: () => number): void {
    if (typeof value !== "function") throw new EddyError("INVALID_METRIC_NAME", `${this.#what}: gauge '${name}' needs a function that returns its value`);
    this.#register({ kind: "gauge", name, value });
  }

  meter(name: string): MetricMeter {
    const cell = { count: 0 };
    this.#register({ kind: "meter", name, cell });
    return {
      markEvent: (n = 1) => void (cell.count += n),
      get count() {
        return cell.count;
      },
    };
  }

  histogram(name: string): MetricHistogram {
    const histogram = new WindowHistogram();
    this.#register({ kind: "histogram", name, histogram });
    return histogram;
  }

  setPendingRecordsGauge(value: () => number): void {
    this.#setStandard("pendingRecords", value);
  }

  setPendingBytesGauge(value: () => number): void {
    this.#setStandard("pendingBytes", value);
  }

  /** Watermark alignment's drift of a source subtask (Flink's watermarkAlignmentDrift). */
  setWatermarkAlignmentDriftGauge(value: () => number): void {
    this.#setStandard("watermarkAlignmentDrift", value);
  }

  #setStandard(name: string, value: () => number): void {
    if (typeof value !== "function") throw new EddyError("INVALID_METRIC_NAME", `${this.#what}: the gauge ${name} needs a function that returns its value`);
    this.#standard.set(name, value);
  }

  get size(): number {
    return this.#metrics.size;
  }

  /** The standard gauges' values (NaN for one that throws or answers no number, as for user gauges). */
  standardGauges(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, value] of this.#standard) out[name] = gaugeValue(value);
    return out;
  }

  /**
   * Reads every metric. A gauge whose function throws or returns something other than a number
   * reports NaN: reporting must not fail the job, and NaN shows in Prometheus as what it is.
   */
  samples(): UserMetricSample[] {
    const out: UserMetricSample[] = [];
    for (const m of this.#metrics.values()) {
      switch (m.kind) {
        case "counter":
        case "meter":
          out.push({ kind: m.kind, name: m.name, count: m.cell.count });
          break;
        case "gauge":
          out.push({ kind: "gauge", name: m.name, value: gaugeValue(m.value) });
          break;
        case "histogram":
          out.push({ kind: "histogram", name: m.name, ...m.histogram.summary() });
          break;
      }
    }
    return out;
  }

  #register(metric: Registered): void {
    checkMetricName(metric.name, this.#what);
    if (this.#metrics.has(metric.name)) {
      throw new EddyError("DUPLICATE_METRIC_NAME", `${this.#what} registered the metric '${metric.name}' twice`);
    }
    if (this.#metrics.size >= MAX_USER_METRICS) {
      throw new EddyError("TOO_MANY_METRICS", `${this.#what} registered more than ${MAX_USER_METRICS} metrics`);
    }
    this.#metrics.set(metric.name, metric);
  }
}

/** A gauge's value; NaN when its function throws or answers something else than a number (reporting must not fail the job). */
function gaugeValue(value: () => unknown): number {
  try {
    const v = value();
    return typeof v === "number" ? v : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The last HISTOGRAM_WINDOW values in a ring, plus the count and sum of all. */
class WindowHistogram implements MetricHistogram {
  readonly #values = new Float64Array(HISTOGRAM_WINDOW);
  count = 0;
  #sum = 0;

  update(value: number): void {
    this.#values[this.count & (HISTOGRAM_WINDOW - 1)] = value;
    this.count++;
    this.#sum += value;
  }

  summary(): { count: number; sum: number; quantiles: number[] } {
    const n = Math.min(this.count, HISTOGRAM_WINDOW);
    const sorted = this.#values.slice(0, n).sort();
    // Nearest rank, as Flink's DescriptiveStatistics does for its percentiles.
    const quantiles = HISTOGRAM_QUANTILES.map((q) => (n === 0 ? Number.NaN : sorted[Math.max(0, Math.ceil(q * n) - 1)]!));
    return { count: this.count, sum: this.#sum, quantiles };
  }
}
