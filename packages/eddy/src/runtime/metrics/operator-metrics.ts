/**
 * What one operator subtask reports (inside its task's SubtaskMetrics), as plain data sent from
 * worker threads to the coordinator. Counts are totals since the subtask was deployed; rates
 * per second are made from them by the coordinator (coordinator/meter-view.ts).
 */
import type { UserMetricSample } from "./metric-group.ts";

export interface OperatorMetrics {
  /** The operator's name (`.name(...)` or derived), as in errors. */
  readonly name: string;
  readonly operatorId: string;
  /**
   * Records the operator received (Flink's numRecordsIn): the task's input for the head of a
   * chain, what the chained edges into it passed otherwise; 0 for a source. NaN when not counted
   * (a chained operator with per-record metrics off, `metrics.enabled=false`).
   */
  readonly recordsIn: number;
  /**
   * Records the operator emitted on its (first) main output (numRecordsOut; side outputs are not
   * counted; a broadcast network edge counts each copy); 0 for a sink. NaN when not counted.
   */
  readonly recordsOut: number;
  /** The last watermark it received / emitted (MIN_WATERMARK: none yet; NaN: not tracked). */
  readonly inputWatermark: number;
  readonly outputWatermark: number;
  /**
   * The operator's standard gauges, read when the task reports: for a source, `sourceIdleTime`
   * (ms since its reader last emitted a record, to the report interval; FLIP-33) and, when its
   * reader sets them, `pendingRecords` and `pendingBytes`.
   */
  readonly gauges: Readonly<Record<string, number>>;
  /** The runtime's counters of this operator (OperatorContext.counter), e.g. numLateRecordsDropped. */
  readonly counters: Readonly<Record<string, number>>;
  /** The user's metrics (RuntimeContext.metrics). */
  readonly user: readonly UserMetricSample[];
}

/**
 * A source's `sourceIdleTime` (FLIP-33): milliseconds since its record count last changed, as
 * seen at each report (so to the report interval: nothing is measured per record). 0 at a report
 * that finds new records; counted from the task's start before the first one.
 */
export class SourceIdleTime {
  #count = 0;
  #since: number;

  constructor(nowMs: number) {
    this.#since = nowMs;
  }

  at(count: number, nowMs: number): number {
    if (count !== this.#count) {
      this.#count = count;
      this.#since = nowMs;
      return 0;
    }
    return Math.max(0, nowMs - this.#since);
  }
}
