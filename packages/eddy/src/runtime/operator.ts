/**
 * The operator contract. An operator is a flat object with a few hooks; the task calls them,
 * never concurrently, in this order: open() once; then any interleaving of processElement (or
 * processBatch), processWatermark, processWatermarkStatus and mail (timers); endInput() once per
 * input when that input is exhausted (after the final MAX watermark); close() once. close() is
 * also called on cancellation and failure (it may then run without endInput) and must not throw
 * for that reason.
 */
import type { KeyedStateBackendFactory } from "../state/keyed-state-backend.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { OutputTag } from "../core/output-tag.ts";
import type { KeyGroupRange } from "../core/key-group.ts";
import type { JobServices } from "../core/job-services.ts";
import type { ErrorPolicySpec } from "../core/error-policy.ts";
import type { OperatorCheckpointing } from "./checkpointing.ts";
import type { QueryableRegistry } from "./queryable-registry.ts";
import type { MetricGroup } from "./metrics/metric-group.ts";

export type { JobServices };
/** A key selector as the runtime stores it; its result is validated per record. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyKeySelector = (value: any) => unknown;

/** Where an operator sends what it produces. Implemented by chaining and network outputs. */
export interface Output<T> {
  /** hot path: one call per record. */
  collect(value: T, timestamp: number): void;
  /** Emits to the side output named by `tag`; a no-op when nothing consumes that tag. */
  collectSide<S>(tag: OutputTag<S>, value: S, timestamp: number): void;
  /** Forwards event time. Callers emit only increasing watermarks. */
  emitWatermark(watermark: number): void;
  emitWatermarkStatus(idle: boolean): void;
}

export interface OneInputOperator<IN> {
  open?(): void;
  /**
   * hot path. `keyGroup` is the record's key group when the key-group partitioner that routed it
   * already computed it (so keyed operators need not hash the key again), else undefined.
   */
  processElement(value: IN, timestamp: number, keyGroup?: number): void;
  /**
   * hot path, optional: the batch form of processElement for the head of a chain. Handles
   * `values[i]` with `timestamps[i]` (and `keyGroups[i]` when the partitioner computed them) for
   * every i in order, with exactly the effects of as many processElement calls; a failure stops
   * the batch where it happened, as it would stop those calls. The task calls it once per input
   * batch when present. Nothing else runs on the task between the records of a batch (no mail,
   * timer, watermark or barrier), so an operator may hoist per-batch work out of its loop; and
   * the loop is a compilation unit of its own, so V8 can inline the whole per-record step into
   * it (inside the task's shared loop, the inlining budget ran out before the step did).
   */
  processBatch?(values: readonly IN[], timestamps: ArrayLike<number>, keyGroups: ArrayLike<number> | undefined): void;
  /** Fires everything the watermark triggers, then forwards it. */
  processWatermark(watermark: number): void;
  processWatermarkStatus?(idle: boolean): void;
  endInput?(): void;
  close?(): void;
}

/**
 * A one-input operator that takes a source's records split by split: the Timestamps/Watermarks
 * operator of fromSource, chained right after its source. `openSplit` gives the entry for the
 * records of one split (the task calls it for ReaderOutput.createOutputForSplit), `releaseSplit`
 * ends the split (ReaderOutput.releaseOutputForSplit; an unknown id is ignored).
 */
export interface SplitAwareOperator<IN> extends OneInputOperator<IN> {
  openSplit(splitId: string): (value: IN, timestamp: number) => void;
  releaseSplit(splitId: string): void;
}

export interface TwoInputOperator<IN1, IN2> {
  open?(): void;
  processElement1(value: IN1, timestamp: number, keyGroup?: number): void;
  processElement2(value: IN2, timestamp: number, keyGroup?: number): void;
  /** The combined watermark: the minimum over both inputs. */
  processWatermark(watermark: number): void;
  processWatermarkStatus?(idle: boolean): void;
  endInput?(input: 1 | 2): void;
  close?(): void;
}

/** Everything an operator instance may use, fixed when it is created. */
export interface OperatorContext {
  /** Operator name for errors and metrics, e.g. "Map" or the user's `.name(...)`. */
  readonly operatorName: string;
  /** Stable operator id (the user's uid or a derived one); state is matched by it. */
  readonly operatorId: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  /** Key groups this subtask owns (for keyed operators; the full range otherwise). */
  readonly keyGroupRange: KeyGroupRange;
  /** Key selector(s) of the keyed input(s), or undefined for non-keyed operators. */
  readonly keySelectors: readonly (AnyKeySelector | undefined)[] | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Runs `action` on the task thread between records (the mailbox). Safe from any callback. */
  postMail(action: () => void): void;
  /** Services shared by the whole job run (collect results, stdout). */
  readonly job: JobServices;
  /** Periodic watermark emission interval, from the job configuration. */
  readonly autoWatermarkIntervalMs: number;
  /** `pipeline.local-aggregation` (undefined: true): whether local window aggregation holds partials. */
  readonly localAggregation?: boolean | undefined;
  /**
   * `state.verify-copy-none` (undefined: false): keyed operators check that user functions change
   * no value of a `copy: "none"` state in place without writing it back (copy-none-check.ts).
   */
  readonly verifyCopyNone?: boolean | undefined;
  /** A counter of this operator instance, reported in the subtask's metrics as "<operator>.<name>". */
  counter(name: string): Counter;
  /** The user's metrics of this operator subtask (RuntimeContext.metrics; runtime/metrics/metric-group.ts). */
  readonly metrics: MetricGroup;
  /** Checkpoint participation of this operator subtask (undefined: checkpointing is off). */
  readonly checkpointing?: OperatorCheckpointing | undefined;
  /** Where queryable states of this executor's subtasks are registered (undefined: not served). */
  readonly queryable?: QueryableRegistry | undefined;
  /**
   * What the operator does with a record its user function throws on (runtime/record-error-policy.ts);
   * undefined: `fail`. Set only for operators that apply a policy (docs/error-policy.md).
   */
  readonly errorPolicy?: ErrorPolicySpec | undefined;
  /** Makes the keyed state backend of a keyed operator (the job's choice; the heap backend by default). */
  readonly stateBackend: KeyedStateBackendFactory;
  /**
   * Asynchronous work the operator started (runtime/pending-work.ts): `blocking` work (a sink's
   * write that asks to wait, its flush) holds back the task's input and its end until it settles;
   * `background` work (a commit) holds back only its end. A rejection fails the task.
   */
  awaitWork(work: PromiseLike<unknown>, kind: "blocking" | "background"): void;
  /**
   * Watermark alignment's link (WatermarkStrategy.withWatermarkAlignment), given only to the
   * operator a source feeds directly in its task (fromSource's Timestamps/Watermarks operator).
   */
  readonly sourceAlignment?: SourceAlignmentPort | undefined;
}

/** What watermark alignment needs of the task: the coordinator's ear, and the source's brake. */
export interface SourceAlignmentPort {
  /** Tells the coordinator this subtask's watermark (MAX_WATERMARK: idle or finished); it answers through the listener. */
  report(group: string, watermark: number, maxAllowedDriftMs: number): void;
  /** Where the coordinator's answers go, as mail on the task's thread (one listener). */
  onMaxAllowedWatermark(listener: (maxAllowed: number) => void): void;
  /** Stops (true) or resumes reading the source; mail, barriers and timers still run while stopped. */
  setPaused(paused: boolean): void;
  /** Whether the source's reader pauses single splits (SourceReader.pauseOrResumeSplits). */
  readonly splitsPausable: boolean;
  /** Pauses and resumes single splits of the reader; only when `splitsPausable`. */
  pauseOrResumeSplits(pause: readonly string[], resume: readonly string[]): void;
  /** Reports `drift` (ms ahead of the group's slowest) as the operator's watermarkAlignmentDrift gauge. */
  setDriftGauge(drift: () => number): void;
}

/** The counter of records an operator dropped for arriving after its window or interval closed. */
export const LATE_RECORDS_DROPPED = "numLateRecordsDropped";

/** The counter of the times watermark alignment paused a source subtask (fromSource's Timestamps/Watermarks operator). */
export const WATERMARK_ALIGNMENT_PAUSES = "numWatermarkAlignmentPauses";

/** The counter of records a sink operator handed to its writer (the run summary's per-sink count). */
export const SINK_RECORDS_WRITTEN = "numRecordsWritten";

export interface Counter {
  inc(n?: number): void;
  readonly count: number;
}

/** Counters of one task, by "<operator>.<name>". */
export class CounterRegistry {
  readonly #counters = new Map<string, { count: number }>();

  counter(operator: string, name: string): Counter {
    const id = `${operator}.${name}`;
    let c = this.#counters.get(id);
    if (c === undefined) this.#counters.set(id, (c = { count: 0 }));
    const cell = c;
    return {
      inc: (n = 1) => void (cell.count += n),
      get count() {
        return cell.count;
      },
    };
  }

  /** The counters of `operator`, by their own names. */
  of(operator: string): Record<string, number> {
    const prefix = `${operator}.`;
    const out: Record<string, number> = {};
    for (const [id, c] of this.#counters) if (id.startsWith(prefix)) out[id.slice(prefix.length)] = c.count;
    return out;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.#counters].map(([k, v]) => [k, v.count]));
  }
}
