import type { SourceReaderContext } from "../connector/source.ts";
import { OperatorMetricGroup } from "../runtime/metrics/metric-group.ts";

/**
 * A SourceReaderContext for driving a reader by hand (tests, benchmarks): subtask `subtaskIndex`
 * of `parallelism`, split requests to `sendSplitRequest` (default: none), and a metric group of
 * its own, whose standard gauges (pendingRecords, pendingBytes) `metrics.standardGauges()` reads.
 */
export function sourceReaderContext(o: { subtaskIndex: number; parallelism: number; sendSplitRequest?: () => void }): SourceReaderContext & { readonly metrics: OperatorMetricGroup } {
  return { subtaskIndex: o.subtaskIndex, parallelism: o.parallelism, sendSplitRequest: o.sendSplitRequest ?? (() => {}), metrics: new OperatorMetricGroup("source", o.subtaskIndex) };
}
