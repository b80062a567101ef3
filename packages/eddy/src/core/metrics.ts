/**
 * The metric interfaces user functions and connectors register metrics through (Flink's
 * MetricGroup and SourceReaderMetricGroup). The registry behind them, its bounds and how values
 * reach `/metrics` are in runtime/metrics/metric-group.ts; they live here, in the lowest layer,
 * so that connector/ (below runtime/) can name them.
 */

export interface MetricCounter {
  inc(n?: number): void;
  readonly count: number;
}

export interface MetricMeter {
  /** Marks `n` events (default 1). */
  markEvent(n?: number): void;
  readonly count: number;
}

export interface MetricHistogram {
  update(value: number): void;
  readonly count: number;
}

/**
 * Registers metrics of this operator subtask; call in `open`. Names are Prometheus-safe
 * (`[a-zA-Z_][a-zA-Z0-9_]*`, at most 100 characters, not ending in `_total`, `_count`, `_sum` or
 * `_bucket`) and unique within the operator subtask; a bad name throws INVALID_METRIC_NAME, a
 * second metric of the same name DUPLICATE_METRIC_NAME, more than MAX_USER_METRICS
 * TOO_MANY_METRICS. They appear at the job's `/metrics` as `eddy_user_<name>` with the labels
 * job, operator and subtask.
 */
export interface MetricGroup {
  counter(name: string): MetricCounter;
  /** `value` runs on the task's thread when the task reports; it returns a number. */
  gauge(name: string, value: () => number): void;
  meter(name: string): MetricMeter;
  histogram(name: string): MetricHistogram;
}

/**
 * The metric group a source reader gets (SourceReaderContext.metrics; Flink's
 * SourceReaderMetricGroup, FLIP-33): the operator's group, and the standard gauges of a source's
 * backlog, which a reader sets when it can tell (a Kafka or NATS reader from the broker's end
 * offsets, a file reader from the bytes left in its splits). They are reported as the operator's
 * `pendingRecords` and `pendingBytes` (not as user metrics); the function runs on the task's
 * thread when the task reports, and a second call replaces the first.
 */
export interface SourceReaderMetricGroup extends MetricGroup {
  /** Records the source has not emitted yet (a Kafka reader: end offset − position, over its partitions). */
  setPendingRecordsGauge(value: () => number): void;
  /** Bytes the source has not read yet. */
  setPendingBytesGauge(value: () => number): void;
}

