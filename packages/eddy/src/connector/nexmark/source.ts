/**
 * The built-in Nexmark source: the generator of `generator.ts` behind the split-based source
 * contract, parallel, bounded by an event count or unbounded, with an optional emission rate.
 *
 * The ids are cut into blocks of `splitBlock` consecutive ids (block k: ids k·B .. k·B + B − 1).
 * How blocks reach the readers (`splitAssignment`):
 * - "on-request" (the default): one split per block, handed out in id order to whichever reader
 *   asks (Flink's pull-based assignment, as its FileSource and NumberSequenceSource do). Each
 *   reader keeps two blocks in hand: the one it reads and the next, asked for when one finishes,
 *   so the round trip to the enumerator is hidden. A subtask whose downstream work is heavier
 *   (q15: the one that owns the day's key) asks less often, and the others generate more: the
 *   generation goes where there is time for it, as it would over a Kafka topic with more
 *   partitions than readers. The enumerator records the next id it hands out; a reader records
 *   the blocks it holds. Blocks are handed out in increasing id order, so each reader's ids (and
 *   event times) still increase, and the readers stay within a few blocks of each other on the
 *   event-time timeline however unevenly they run.
 * - "static": one split per subtask, split `i` owning the blocks k with k ≡ k₀ + i (mod n), k₀ the
 *   block of `firstEventId` (the only assignment before). Each subtask generates `events / n`
 *   events whatever its downstream costs, and a slower subtask falls behind the others in event
 *   time without bound.
 * Either way, all subtasks walk the one shared event-time timeline together, a few blocks apart:
 * their watermarks stay close, so windows and joins downstream hold little state. Within a block,
 * one subtask generates an auction and the bids on it that follow (bids pick one of the last ~100
 * auctions, ~1,700 events back), as each subtask of Flink's Nexmark harness generates its own
 * contiguous range. With every n-th id instead (`splitBlock: 1`, static), an auction and its bids
 * came from different subtasks n − 1 times in n: with nothing keeping the subtasks in step, at
 * parallelism 2 a fifth of q20's bids reached the join before their auction and waited in its
 * state.
 *
 * Every parallelism and assignment emits the same events (a pure function of their id) with the
 * same event times, so results do not depend on them. A split's position is the next event id it
 * emits: a reader given a split resumes exactly there, nothing lost or repeated.
 */
import { SystemClock, type Clock, type ScheduledCallback } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import {
  alwaysAvailable,
  staticSplitEnumerator,
  type ReaderOutput,
  type Source,
  type SourceReader,
  type SplitEnumerator,
  type SplitEnumeratorContext,
} from "../source.ts";
import { eventTimestamp, nexmarkConfig, nexmarkEvent, type NexmarkConfig } from "./generator.ts";
import type { NexmarkEvent } from "./model.ts";

/** Records emitted per `pollNext` call at most: bounds the work of one call. */
const MAX_RECORDS_PER_POLL = 1024;

/**
 * Consecutive event ids per split block, by default: 2 s of event time at the default rate
 * (10,000 events/s), ~12 times the ~1,700 ids over which a bid picks its auction. Measured at
 * parallelism 2 (q20, 5 M events): 1,000 (shorter than that span) left 29 % of the bids waiting
 * for their auction, as many as every n-th id; 5,000 left 4 %, 10,000 2.2 %, 20,000 1.3 %.
 */
export const DEFAULT_SPLIT_BLOCK = 20_000;

/**
 * Splits a reader keeps in hand with on-request assignment: the one it reads and the next, so a
 * finished block is followed at once while the request for another goes to the enumerator.
 */
const SPLITS_IN_HAND = 2;

/** How blocks of ids reach the readers: see the file comment. */
export type NexmarkSplitAssignment = "on-request" | "static";

export interface NexmarkSplit {
  readonly splitId: string;
  /** The next event id this split emits (an id it owns: see `stride` and `block`). */
  readonly position: number;
  /** The number of splits of the run (≥ 1): the split owns every `stride`-th block. */
  readonly stride: number;
  /** One past the last event id of the run (`firstEventId + events`); absent when unbounded. */
  readonly end?: number;
  /** Consecutive ids per block (block k: ids k·block .. k·block + block − 1); absent: 1, every `stride`-th id. */
  readonly block?: number;
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
  /**
   * Consecutive event ids a split emits before the next split's turn (default
   * DEFAULT_SPLIT_BLOCK); 1: each split takes every n-th id. Events and results are the same
   * either way; larger blocks keep related events (an auction, its bids) in one subtask and let
   * the subtasks' event times drift further apart.
   */
  readonly splitBlock?: number;
  /**
   * "on-request" (default): each block is a split, handed to the reader that asks, so subtasks
   * with less downstream work generate more; "static": one split per subtask, each owning every
   * n-th block. See the file comment.
   */
  readonly splitAssignment?: NexmarkSplitAssignment;
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
  const splitBlock = options.splitBlock ?? DEFAULT_SPLIT_BLOCK;
  if (!Number.isSafeInteger(splitBlock) || splitBlock < 1) {
    throw new EddyError("INVALID_NEXMARK_CONFIG", `nexmarkSource: splitBlock must be a positive integer, got ${splitBlock}`);
  }
  const assignment = options.splitAssignment ?? "on-request";
  if (assignment !== "on-request" && assignment !== "static") {
    throw new EddyError("INVALID_NEXMARK_CONFIG", `nexmarkSource: splitAssignment must be "on-request" or "static", got ${String(assignment)}`);
  }
  const clock = options.clock ?? new SystemClock();
  const end = events === undefined ? undefined : config.firstEventId + events;
  const createEnumerator = (context: SplitEnumeratorContext<NexmarkSplit>): SplitEnumerator<NexmarkSplit> =>
    assignment === "static"
      ? staticSplitEnumerator(context, initialSplits(config.firstEventId, events, context.parallelism, splitBlock))
      : onRequestEnumerator(context, config.firstEventId, end, splitBlock);
  return {
    boundedness: events === undefined ? "continuous" : "bounded",
    splitsOnRequest: assignment === "on-request",
    createEnumerator,
    // What the enumerator recorded decides how it goes on, whatever `splitAssignment` says now:
    // the readers hold splits of that kind. No state: the source is new in this job, it starts afresh.
    restoreEnumerator: (context, state) =>
      state === undefined ? createEnumerator(context)
      : Array.isArray(state) ? staticSplitEnumerator(context, state as NexmarkSplit[])
      : restoreOnRequestEnumerator(context, state, splitBlock),
    createReader: (context) => {
      const reader = nexmarkReader(config, ratePerSecond === undefined ? undefined : ratePerSecond / context.parallelism, clock, () => context.sendSplitRequest());
      // FLIP-33 pendingRecords: the ids left in the splits this reader holds (with on-request
      // assignment, not the blocks the enumerator has yet to hand out, as for Flink's FileSource).
      context.metrics.setPendingRecordsGauge(() => reader.pendingRecords());
      return reader;
    },
  };
}

/** What the on-request enumerator records: the next event id it hands out, and the run's end (absent: unbounded). */
interface OnRequestEnumeratorState {
  readonly v: 1;
  readonly next: number;
  readonly end?: number;
}

/**
 * Hands out the blocks from `next` in id order, one split per request, to whichever reader asks;
 * a reader that asks once every id to `end` is handed out is told no more splits come.
 */
function onRequestEnumerator(context: SplitEnumeratorContext<NexmarkSplit>, next: number, end: number | undefined, block: number): SplitEnumerator<NexmarkSplit> {
  return {
    // Readers ask for their splits themselves (handleSplitRequest).
    addReader() {},
    handleSplitRequest(subtaskIndex) {
      if (end !== undefined && next >= end) {
        context.signalNoMoreSplits(subtaskIndex);
        return;
      }
      const blockEnd = (Math.floor(next / block) + 1) * block;
      const stop = end === undefined ? blockEnd : Math.min(blockEnd, end);
      context.assignSplits(subtaskIndex, [{ splitId: `nexmark-${next}`, position: next, stride: 1, end: stop }]);
      next = stop;
    },
    snapshotState: (): OnRequestEnumeratorState => ({ v: 1, next, ...(end === undefined ? {} : { end }) }),
  };
}

function restoreOnRequestEnumerator(context: SplitEnumeratorContext<NexmarkSplit>, value: unknown, block: number): SplitEnumerator<NexmarkSplit> {
  const s = value as Partial<Record<keyof OnRequestEnumeratorState, unknown>> | null;
  if (
    s === null ||
    typeof s !== "object" ||
    s.v !== 1 ||
    !Number.isSafeInteger(s.next) ||
    (s.next as number) < 0 ||
    (s.end !== undefined && (!Number.isSafeInteger(s.end) || (s.end as number) < 0))
  ) {
    throw new EddyError("CHECKPOINT_CORRUPT", `the Nexmark source's enumerator state in the checkpoint is not one this version reads: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  return onRequestEnumerator(context, s.next as number, s.end as number | undefined, block);
}

/**
 * One split per subtask (fewer if there are fewer blocks than subtasks), split i starting at the
 * i-th block from firstEventId's.
 */
function initialSplits(firstEventId: number, events: number | undefined, parallelism: number, block: number): NexmarkSplit[] {
  const splits: NexmarkSplit[] = [];
  if (events === 0) return splits;
  const firstBlock = Math.floor(firstEventId / block);
  const blocks = events === undefined ? parallelism : Math.floor((firstEventId + events - 1) / block) - firstBlock + 1;
  const count = Math.max(1, Math.min(parallelism, blocks));
  for (let i = 0; i < count; i++) {
    const position = Math.max(firstEventId, (firstBlock + i) * block);
    const split: NexmarkSplit = { splitId: `nexmark-${i}-of-${count}`, position, stride: count, ...(block === 1 ? {} : { block }) };
    splits.push(events === undefined ? split : { ...split, end: firstEventId + events });
  }
  return splits;
}

/** How many ids a split at `position` still emits before `end`. */
function idsLeft(position: number, end: number, stride: number, block: number): number {
  if (!(position < end)) return 0;
  if (end === Number.POSITIVE_INFINITY) return end;
  const blockEnd = (Math.floor(position / block) + 1) * block;
  if (end <= blockEnd) return end - position;
  const nextStart = blockEnd + (stride - 1) * block;
  if (end <= nextStart) return blockEnd - position;
  const rest = end - nextStart;
  const cycle = stride * block;
  return blockEnd - position + Math.floor(rest / cycle) * block + Math.min(rest % cycle, block);
}

/** A split as the reader advances it. */
interface OpenSplit {
  readonly splitId: string;
  position: number;
  readonly stride: number;
  /** `end`, or +Infinity when unbounded (never snapshotted as such). */
  readonly end: number;
  readonly block: number;
}

/**
 * Reads its splits in increasing event id (merging them when it holds several: the next block
 * with on-request assignment, or static splits after a restore at lower parallelism), so its
 * event times never decrease. It asks for another split (`requestSplit`) whenever it holds fewer
 * than SPLITS_IN_HAND, one request at a time, until told that no more come; an enumerator that
 * assigns statically ignores the requests. With a rate limit of `r`
 * events per second (this reader's share), its `k`-th event is due `k / r` seconds after its
 * first poll; ahead of schedule it returns "nothing" and `isAvailable()` resolves from a clock
 * timer, so it never spins. Behind schedule (after backpressure) it catches up at full speed.
 */
function nexmarkReader(
  config: NexmarkConfig,
  ratePerSecond: number | undefined,
  clock: Clock,
  requestSplit: () => void,
): SourceReader<NexmarkEvent, NexmarkSplit> & { pendingRecords(): number } {
  const splits: OpenSplit[] = [];
  let noMoreSplits = false;
  /** A split request is on its way (answered by an assignment or by "no more splits"). */
  let requested = false;
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
  const askIfShort = (): void => {
    if (noMoreSplits || requested || splits.length >= SPLITS_IN_HAND) return;
    requested = true;
    requestSplit();
  };
  const afterEmit = (): "more" | "nothing" | "end" => {
    for (let i = splits.length - 1; i >= 0; i--) {
      if (splits[i]!.position < splits[i]!.end) continue;
      splits.splice(i, 1);
      askIfShort();
    }
    if (splits.length > 0) return "more";
    return noMoreSplits ? "end" : park();
  };

  return {
    /** Events left in the splits held (+Infinity for an unbounded run). */
    pendingRecords: () => splits.reduce((n, s) => n + idsLeft(s.position, s.end, s.stride, s.block), 0),
    start: askIfShort,
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
      emitted += emitInOrder(splits, budget, config, output);
      return afterEmit();
    },
    isAvailable: () => available,
    addSplits(added) {
      for (const s of added) {
        const block = s.block ?? 1;
        if (!Number.isSafeInteger(block) || block < 1 || !Number.isSafeInteger(s.stride) || s.stride < 1) {
          throw new EddyError("INVALID_NEXMARK_CONFIG", `nexmark split '${s.splitId}': stride and block must be positive integers, got ${s.stride} and ${s.block}`);
        }
        splits.push({ splitId: s.splitId, position: s.position, stride: s.stride, end: s.end ?? Number.POSITIVE_INFINITY, block });
      }
      requested = false;
      askIfShort();
      if (added.length > 0) unpark();
    },
    notifyNoMoreSplits() {
      noMoreSplits = true;
      requested = false;
      unpark();
    },
    snapshotState: () =>
      splits.map((s) => ({
        splitId: s.splitId,
        position: s.position,
        stride: s.stride,
        ...(s.end === Number.POSITIVE_INFINITY ? {} : { end: s.end }),
        ...(s.block === 1 ? {} : { block: s.block }),
      })),
    close() {
      timer?.cancel();
      timer = undefined;
    },
  };
}

/** Emits up to `budget` events of one split, of ids below `limit`; returns how many. */
// hot path
function emitSplit(split: OpenSplit, budget: number, limit: number, config: NexmarkConfig, output: ReaderOutput<NexmarkEvent>): number {
  const { stride, block } = split;
  const end = Math.min(split.end, limit);
  let id = split.position;
  let n = 0;
  if (block === 1 || stride === 1) {
    // Every n-th id, or every id (a split of consecutive blocks, or a block).
    for (; n < budget && id < end; n++, id += stride) output.collect(nexmarkEvent(id, config), eventTimestamp(id, config));
  } else {
    while (n < budget && id < end) {
      const blockEnd = (Math.floor(id / block) + 1) * block;
      const stop = Math.min(blockEnd, end, id + budget - n);
      n += stop - id;
      for (; id < stop; id++) output.collect(nexmarkEvent(id, config), eventTimestamp(id, config));
      if (id === blockEnd) id += (stride - 1) * block;
    }
  }
  split.position = id;
  return n;
}

/**
 * Emits up to `budget` events of the splits held, in increasing id order; returns how many. Runs
 * of ids: the split with the lowest position emits up to the next-lowest split's position (all it
 * has left when it is alone; a whole block, when the splits are blocks), then the lowest is found
 * again.
 */
function emitInOrder(splits: OpenSplit[], budget: number, config: NexmarkConfig, output: ReaderOutput<NexmarkEvent>): number {
  let n = 0;
  while (n < budget) {
    let next: OpenSplit | undefined;
    let limit = Number.POSITIVE_INFINITY;
    for (let i = 0; i < splits.length; i++) {
      const s = splits[i]!;
      if (!(s.position < s.end)) continue;
      if (next === undefined || s.position < next.position) {
        if (next !== undefined) limit = next.position;
        next = s;
      } else if (s.position < limit) {
        limit = s.position;
      }
    }
    if (next === undefined) break;
    if (limit === next.position) {
      throw new EddyError("INVALID_NEXMARK_CONFIG", `nexmark splits '${next.splitId}' and another both hold id ${limit}: a split was added twice`);
    }
    n += emitSplit(next, budget - n, limit, config, output);
  }
  return n;
}
