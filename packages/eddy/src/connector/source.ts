/**
 * The source contract, split-based like Flink's FLIP-27 sources. A split is a unit of work (a
 * file, a Kafka partition, a range of a generator). The split enumerator runs once per job on the
 * coordinator and assigns splits to readers; a reader runs in each source subtask, polls its
 * splits without blocking, and reports each split's position for checkpoints.
 */

import { describeCause, EddyError } from "../core/errors.ts";
import type { SourceReaderMetricGroup } from "../core/metrics.ts";

export type Boundedness = "bounded" | "continuous";

/** What `pollNext` says about the reader after the call. */
export type InputStatus =
  /** More records are available right now: call `pollNext` again soon. */
  | "more"
  /** Nothing available now: wait for `isAvailable()` before polling again. */
  | "nothing"
  /** The reader has finished (bounded sources only): never called again. */
  | "end";

/** Where a reader emits. */
/** Where a reader emits the records of one split (ReaderOutput.createOutputForSplit), or all of them. */
export interface SourceOutput<T> {
  /** Emits a record, with the timestamp it carries at the source (e.g. a Kafka record time). */
  collect(value: T, timestamp?: number): void;
  /**
   * Input the reader could not turn into a record (a line that does not parse, a row with the
   * wrong number of columns). What happens to it is the source's error policy: by default the job
   * fails with BAD_RECORD naming the position. The reader goes on after the call returns (the
   * record is skipped or dead-lettered) and must not emit it.
   */
  reportBadRecord(bad: BadRecord): void;
}

/**
 * What a reader emits to. Records collected here directly share one watermark generator; a reader
 * of several splits whose event times differ (files, partitions) emits each split's records
 * through `createOutputForSplit(splitId)` instead, as Flink's readers do: each split then has its
 * own generator (and idleness), and the source's watermark is the minimum over its active splits,
 * so one split far ahead in event time does not make the others' records late. A reader should
 * use one way or the other, not both. With no split outputs open, the watermark stays where it is.
 */
export interface ReaderOutput<T> extends SourceOutput<T> {
  /**
   * The output of split `splitId`, created the first time (asking again returns the same one). A
   * new split starts at the minimum watermark: it holds the source's watermark back until its
   * generator emits one.
   */
  createOutputForSplit(splitId: string): SourceOutput<T>;
  /** The split is finished (or handed back): its watermark no longer holds the source's back. */
  releaseOutputForSplit(splitId: string): void;
}

/**
 * A ReaderOutput that sends everything, split outputs included, to `output` (no per-split
 * watermarks), for driving a reader by hand in tests and benchmarks. `splits`, when given, is kept
 * as the set of split outputs open (created and not released yet).
 */
export function readerOutputOf<T>(output: SourceOutput<T>, splits?: Set<string>): ReaderOutput<T> {
  return {
    collect: (value, timestamp) => output.collect(value, timestamp),
    reportBadRecord: (bad) => output.reportBadRecord(bad),
    createOutputForSplit(splitId) {
      splits?.add(splitId);
      return output;
    },
    releaseOutputForSplit: (splitId) => void splits?.delete(splitId),
  };
}

/** Input a reader could not deserialize, and where it was. */
export interface BadRecord {
  /** The input as read (text, or bytes); bounded by the reader (e.g. the first 64 KiB). */
  readonly raw: string | Uint8Array;
  /** Why it could not be read (the parser's error). */
  readonly error: unknown;
  /**
   * Where it is in the source, for a person to find it: e.g. `{ file, line, offset }` for a file,
   * `{ topic, partition, offset }` for Kafka. Plain data.
   */
  readonly position: Readonly<Record<string, string | number>>;
}

export interface SourceReaderContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  /** Asks the enumerator for another split (pull-based assignment). */
  sendSplitRequest(): void;
  /** The source operator subtask's metrics, with the standard backlog gauges (FLIP-33). */
  readonly metrics: SourceReaderMetricGroup;
  /**
   * Sends plain data to the enumerator's `handleSourceEvent` (Flink's
   * sendSourceEventToCoordinator), in order with split requests; e.g. a reader reporting a split
   * it finished. Asynchronous; not recorded in checkpoints (a reader that must not lose a report
   * keeps it in its own state and sends it again after a restore).
   */
  sendSourceEvent?(event: unknown): void;
}

/**
 * Reads the splits assigned to one subtask. Never called concurrently; never blocks.
 * Call order: start, then addSplits / notifyNoMoreSplits / pollNext / snapshotState in any
 * order, then close (which may be called twice).
 */
export interface SourceReader<T, SplitT> {
  start?(): void;
  /**
   * Emits a bounded amount of records (a few thousand at most) and says what follows. It may be
   * called before the promise of `isAvailable` resolved (its task had mail to run: a barrier, new
   * splits, an answer of watermark alignment): a reader with nothing due then returns "nothing"
   * again, and must not emit early what it paces (a rate, a timer).
   */
  pollNext(output: ReaderOutput<T>): InputStatus;
  /** Resolves when `pollNext` may have records again after it returned "nothing". */
  isAvailable(): Promise<void>;
  addSplits(splits: readonly SplitT[]): void;
  /** No split will be assigned any more; a bounded reader may end once its splits are done. */
  notifyNoMoreSplits(): void;
  /** The positions of the splits this reader holds (checkpoints restore from them). */
  snapshotState(checkpointId: number): SplitT[];
  /**
   * Checkpoint `checkpointId`, to which this reader's `snapshotState(checkpointId)` contributed, is
   * complete (durable): e.g. acknowledge the positions it holds to the external system. Called
   * between `pollNext` calls, never concurrently.
   */
  notifyCheckpointComplete?(checkpointId: number): void;
  /**
   * Watermark alignment per split (Flink's `pauseOrResumeSplits`, FLIP-217): emit nothing more of
   * the splits in `pause` (and, where the reader can, stop fetching them) until they are in a later
   * call's `resume`; ids are those of `createOutputForSplit`. Called between `pollNext` calls, only
   * for splits whose watermark ran past their alignment group's bound
   * (WatermarkStrategy.withWatermarkAlignment). Optional: without it the reader is aligned as a
   * whole (its subtask stops reading once all its splits are past the bound).
   */
  pauseOrResumeSplits?(pause: readonly string[], resume: readonly string[]): void;
  close?(): void;
}

export interface SplitEnumeratorContext<SplitT> {
  readonly parallelism: number;
  assignSplits(subtaskIndex: number, splits: readonly SplitT[]): void;
  signalNoMoreSplits(subtaskIndex: number): void;
  /**
   * Fails the job with `cause`: for failures an enumerator meets outside a call from the runtime,
   * e.g. in asynchronous file discovery (Flink: the coordinator context's failJob). Never throws.
   */
  failJob(cause: unknown): void;
}

/** Discovers splits and assigns them to readers. Runs on the coordinator; never concurrently. */
export interface SplitEnumerator<SplitT> {
  start?(): void;
  /** A reader (subtask) has been registered and can take splits. */
  addReader(subtaskIndex: number): void;
  handleSplitRequest?(subtaskIndex: number): void;
  /** What reader `subtaskIndex` sent with `SourceReaderContext.sendSourceEvent`. */
  handleSourceEvent?(subtaskIndex: number, event: unknown): void;
  /** Splits of a failed reader come back to be assigned again. */
  addSplitsBack?(splits: readonly SplitT[], subtaskIndex: number): void;
  snapshotState?(checkpointId: number): unknown;
  close?(): void;
}

export interface Source<T, SplitT = unknown> {
  readonly boundedness: Boundedness;
  /** The largest parallelism that makes sense (e.g. 1 for a source that cannot be split). */
  readonly maxParallelism?: number;
  /**
   * Readers ask for their splits (`sendSplitRequest`) and each goes to whichever reader asks, so
   * what one reader leaves, another takes (the file source; the Nexmark source by default). Such a
   * source may sit out rounds of a worker thread whose downstream work is the bottleneck (the
   * source yield, `taskmanager.scheduling.source-yield-rounds`). A source whose splits are fixed
   * per reader is never held back that way: it would only fall behind the others in event time.
   */
  readonly splitsOnRequest?: boolean;
  createEnumerator(context: SplitEnumeratorContext<SplitT>): SplitEnumerator<SplitT>;
  /** The enumerator after a restore, from what its `snapshotState` recorded (see restoreEnumerator). */
  restoreEnumerator?(context: SplitEnumeratorContext<SplitT>, state: unknown): SplitEnumerator<SplitT>;
  createReader(context: SourceReaderContext): SourceReader<T, SplitT>;
}

/**
 * An enumerator for a fixed list of splits: split i goes to reader i mod parallelism, then every
 * reader is told that no more splits come. Enough for sources whose splits are known upfront.
 */
export function staticSplitEnumerator<SplitT>(
  context: SplitEnumeratorContext<SplitT>,
  splits: readonly SplitT[],
): SplitEnumerator<SplitT> {
  /** Split index → split, for splits whose reader has not registered yet. */
  const unassigned = new Map(splits.map((s, i) => [i, s]));
  return {
    addReader(subtaskIndex) {
      const mine: SplitT[] = [];
      for (const [i, split] of unassigned) {
        if (i % context.parallelism !== subtaskIndex) continue;
        mine.push(split);
        unassigned.delete(i);
      }
      if (mine.length > 0) context.assignSplits(subtaskIndex, mine);
      context.signalNoMoreSplits(subtaskIndex);
    },
    snapshotState: () => [...unassigned.values()],
  };
}

/**
 * The enumerator of `source`: a fresh one, or with `restored` the one after a restore, from the
 * state its `snapshotState` recorded — `source.restoreEnumerator` when the source has one;
 * otherwise the recorded state must be the list of splits not assigned yet (the convention of
 * `staticSplitEnumerator`, whose splits are all assigned when the readers register), and those
 * are assigned again.
 */
export function openEnumerator<SplitT>(
  source: Source<unknown, SplitT>,
  context: SplitEnumeratorContext<SplitT>,
  restored: { readonly state: unknown } | undefined,
): SplitEnumerator<SplitT> {
  if (restored === undefined) return source.createEnumerator(context);
  if (source.restoreEnumerator !== undefined) return source.restoreEnumerator(context, restored.state);
  return staticSplitEnumerator(context, Array.isArray(restored.state) ? (restored.state as SplitT[]) : []);
}

/** What every enumerator records for checkpoint `checkpointId`, by source operator id. */
export function snapshotEnumerators(
  enumerators: Iterable<readonly [string, SplitEnumerator<unknown>]>,
  checkpointId: number,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [operatorId, enumerator] of enumerators) out[operatorId] = enumerator.snapshotState?.(checkpointId) ?? [];
  return out;
}

const ALWAYS_AVAILABLE = Promise.resolve();
export function alwaysAvailable(): Promise<void> {
  return ALWAYS_AVAILABLE;
}

/** BAD_RECORD for input a reader of source `operator` could not read: what fails the job under the default error policy. */
export function badRecordError(operator: string, subtask: number, bad: BadRecord): EddyError {
  const where = Object.entries(bad.position)
    .map(([k, v]) => `${k} ${typeof v === "string" ? `'${v}'` : v}`)
    .join(", ");
  return new EddyError("BAD_RECORD", `source '${operator}' (subtask ${subtask}) could not read the record at ${where || "an unknown position"}: ${describeCause(bad.error)}`, {
    operator,
    subtask,
    cause: bad.error,
  });
}

