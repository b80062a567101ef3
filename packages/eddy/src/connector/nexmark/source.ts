/**
 * The built-in Nexmark source: the generator of `generator.ts` behind the split-based source
 * contract, parallel, bounded by an event count or unbounded, with an optional emission rate.
 *
 * Splits: one per subtask, split `i` of `n` owning ids `firstEventId + i + j*n` (every n-th id)
 * rather than a contiguous range. All subtasks then walk the one shared event-time timeline
 * together: their watermarks stay close, so windows and joins downstream hold little state and
 * event-time skew between subtasks is bounded by how unevenly they are scheduled, not by
 * `events / n`. It also works unchanged for unbounded runs, which have no range to cut. A split's
 * position is the next event id it emits; since an event is a pure function of its id, a reader
 * given a split resumes exactly there, nothing lost or repeated.
 */
import { SystemClock, type Clock, type ScheduledCallback } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import { alwaysAvailable, staticSplitEnumerator, type ReaderOutput, type Source, type SourceReader } from "../source.ts";
import { eventTimestamp, nexmarkConfig, nexmarkEvent, type NexmarkConfig } from "./generator.ts";
import type { NexmarkEvent } from "./model.ts";

/** Records emitted per `pollNext` call at most: bounds the work of one call. */
const MAX_RECORDS_PER_POLL = 1024;

export interface NexmarkSplit {
  readonly splitId: string;
  /** The next event id this split emits. Advances by `stride`. */
  readonly position: number;
  /** Distance between the split's consecutive ids: the number of splits of the run (≥ 1). */
  readonly stride: number;
  /** One past the last event id of the run (`firstEventId + events`); absent when unbounded. */
  readonly end?: number;
}

export interface NexmarkSourceOptions {
  /** Events in total over all subtasks (ids firstEventId .. firstEventId + events - 1); undefined: unbounded, never ends. */
  readonly events?: number;
  /** Emission limit in events per second of processing time, over all subtasks; undefined: as fast as downstream takes them. */
  readonly ratePerSecond?: number;
  /** Generator settings; unset fields take `DEFAULT_NEXMARK_CONFIG`'s values. */
  readonly config?: Partial<NexmarkConfig>;
  /** Processing time for the rate limit (default: the system clock). */
  readonly clock?: Clock;
}

/**
 * A source of Nexmark events. Each record carries its event time as the source timestamp, so
 * `WatermarkStrategy.forMonotonousTimestamps()` needs no timestamp assigner: within a subtask,
 * event time never decreases.
 */
export function nexmarkSource(options: NexmarkSourceOptions = {}): Source<NexmarkEvent, NexmarkSplit> {
  const config = nexmarkConfig(options.config);
  const { events, ratePerSecond } = options;
  if (events !== undefined && (!Number.isSafeInteger(events) || events < 0 || !Number.isSafeInteger(config.firstEventId + events))) {
    throw new EddyError("INVALID_NEXMARK_CONFIG", `nexmarkSource: events must be a non-negative safe integer, got ${events}`);
  }
  if (ratePerSecond !== undefined && (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond))) {
    throw new EddyError("INVALID_NEXMARK_CONFIG", `nexmarkSource: ratePerSecond must be a positive number, got ${ratePerSecond}`);
  }
  const clock = options.clock ?? new SystemClock();
  return {
    boundedness: events === undefined ? "continuous" : "bounded",
    createEnumerator: (context) => staticSplitEnumerator(context, initialSplits(config.firstEventId, events, context.parallelism)),
    createReader: (context) => {
      const reader = nexmarkReader(config, ratePerSecond === undefined ? undefined : ratePerSecond / context.parallelism, clock);
      // The backlog is known exactly: the ids left in the reader's splits (FLIP-33 pendingRecords).
      context.metrics.setPendingRecordsGauge(() => reader.pendingRecords());
      return reader;
    },
  };
}

/** One split per subtask (fewer if there are fewer events), split i starting at firstEventId + i. */
function initialSplits(firstEventId: number, events: number | undefined, parallelism: number): NexmarkSplit[] {
  const count = Math.max(1, Math.min(parallelism, events ?? parallelism));
  const splits: NexmarkSplit[] = [];
  if (events === 0) return splits;
  for (let i = 0; i < count; i++) {
    const split = { splitId: `nexmark-${i}-of-${count}`, position: firstEventId + i, stride: count };
    splits.push(events === undefined ? split : { ...split, end: firstEventId + events });
  }
  return splits;
}

/** A split as the reader advances it. */
interface OpenSplit {
  readonly splitId: string;
  position: number;
  readonly stride: number;
  /** `end`, or +Infinity when unbounded (never snapshotted as such). */
  readonly end: number;
}

/**
 * Reads its splits in increasing event id (merging them when it holds several, e.g. after a
 * restore at lower parallelism), so its event times never decrease. With a rate limit of `r`
 * events per second (this reader's share), its `k`-th event is due `k / r` seconds after its
 * first poll; ahead of schedule it returns "nothing" and `isAvailable()` resolves from a clock
 * timer, so it never spins. Behind schedule (after backpressure) it catches up at full speed.
 */
function nexmarkReader(
  config: NexmarkConfig,
  ratePerSecond: number | undefined,
  clock: Clock,
): SourceReader<NexmarkEvent, NexmarkSplit> & { pendingRecords(): number } {
  const splits: OpenSplit[] = [];
  let noMoreSplits = false;
  /** Processing time of the first rate-limited poll; -1 before it. */
  let startMs = -1;
  /** Records emitted since `startMs`. */
  let emitted = 0;
  const ratePerMs = ratePerSecond === undefined ? 0 : ratePerSecond / 1000;
  /** Set while `pollNext` has returned "nothing": resolves the promise `isAvailable` handed out. */
  let wake: (() => void) | undefined;
  let available: Promise<void> = alwaysAvailable();
  let timer: ScheduledCallback | undefined;

  const unpark = (): void => {
    timer?.cancel();
    timer = undefined;
    const resolve = wake;
    wake = undefined;
    available = alwaysAvailable();
    resolve?.();
  };
  const park = (): "nothing" => {
    if (wake === undefined) available = new Promise<void>((resolve) => (wake = resolve));
    return "nothing";
  };
  const afterEmit = (): "more" | "nothing" | "end" => {
    for (let i = splits.length - 1; i >= 0; i--) if (splits[i]!.position >= splits[i]!.end) splits.splice(i, 1);
    if (splits.length > 0) return "more";
    return noMoreSplits ? "end" : park();
  };

  return {
    /** Events left in the splits held (+Infinity for an unbounded run). */
    pendingRecords: () => splits.reduce((n, s) => n + Math.max(0, Math.ceil((s.end - s.position) / s.stride)), 0),
    pollNext(output) {
      if (splits.length === 0) return noMoreSplits ? "end" : park();
      let budget = MAX_RECORDS_PER_POLL;
      if (ratePerMs > 0) {
        const now = clock.now();
        if (startMs < 0) startMs = now;
        const due = Math.floor((now - startMs) * ratePerMs) + 1 - emitted;
        if (due <= 0) {
          const result = park();
          timer ??= clock.schedule(startMs + Math.ceil(emitted / ratePerMs), unpark);
          return result;
        }
        if (due < budget) budget = due;
      }
      emitted += splits.length === 1 ? emitSplit(splits[0]!, budget, config, output) : emitMerged(splits, budget, config, output);
      return afterEmit();
    },
    isAvailable: () => available,
    addSplits(added) {
      for (const s of added) {
        splits.push({ splitId: s.splitId, position: s.position, stride: s.stride, end: s.end ?? Number.POSITIVE_INFINITY });
      }
      if (added.length > 0) unpark();
    },
    notifyNoMoreSplits() {
      noMoreSplits = true;
      unpark();
    },
    snapshotState: () =>
      splits.map((s) =>
        s.end === Number.POSITIVE_INFINITY
          ? { splitId: s.splitId, position: s.position, stride: s.stride }
          : { splitId: s.splitId, position: s.position, stride: s.stride, end: s.end },
      ),
    close() {
      timer?.cancel();
      timer = undefined;
    },
  };
}

/** Emits up to `budget` events of one split; returns how many. */
// hot path
function emitSplit(split: OpenSplit, budget: number, config: NexmarkConfig, output: ReaderOutput<NexmarkEvent>): number {
  const stride = split.stride;
  const end = split.end;
  let id = split.position;
  let n = 0;
  for (; n < budget && id < end; n++, id += stride) output.collect(nexmarkEvent(id, config), eventTimestamp(id, config));
  split.position = id;
  return n;
}

/** Emits up to `budget` events of several splits in increasing id order; returns how many. */
function emitMerged(splits: OpenSplit[], budget: number, config: NexmarkConfig, output: ReaderOutput<NexmarkEvent>): number {
  let n = 0;
  for (; n < budget; n++) {
    let next: OpenSplit | undefined;
    for (let i = 0; i < splits.length; i++) {
      const s = splits[i]!;
      if (s.position < s.end && (next === undefined || s.position < next.position)) next = s;
    }
    if (next === undefined) break;
    const id = next.position;
    output.collect(nexmarkEvent(id, config), eventTimestamp(id, config));
    next.position = id + next.stride;
  }
  return n;
}
