/**
 * The source of the savepoint and queryable-state test jobs: record numbers 1..records, each
 * with itself as event time, in `splits` fixed ranges (independent of the parallelism, so they
 * are dealt anew on a rescale). A reader emits `perPoll` records of its first unfinished split per
 * poll, then (with `pauseMs`) waits, so a test can act while the job runs; it can hold back
 * numbers above `holdAt`, and with `endless` it never ends (the job keeps serving its state).
 * A split's position is `next`, the next number to emit.
 */
import { staticSplitEnumerator, type Source, type SourceReader } from "eddy";

export interface PacedSplit {
  readonly splitId: string;
  readonly next: number;
  readonly last: number;
}

export interface PacedOptions {
  readonly records: number;
  readonly splits: number;
  /** Split ids are `${idPrefix}-<i>` (kept in savepoints: golden fixtures depend on them). */
  readonly idPrefix: string;
  readonly perPoll: number;
  /** Wait between polls, in ms (0: read on at once). */
  readonly pauseMs: number;
  /** Wait between polls only while this returns true (default: always); asked once per poll. */
  readonly pausing?: () => boolean;
  /**
   * Read the unfinished split with the lowest numbers first (default: the first one added), so a
   * reader's numbers increase even when a restore hands it splits in another order (its
   * watermark, one for all its splits, then never passes a number still to come).
   */
  readonly inOrder?: boolean;
  /** Emit only numbers up to this one (default: all). */
  readonly holdAt?: number;
  /** Never end, even when every split is read. */
  readonly endless?: boolean;
}

export function pacedNumbers(o: PacedOptions): Source<number, PacedSplit> {
  const holdAt = o.holdAt ?? Number.POSITIVE_INFINITY;
  return {
    boundedness: "bounded",
    createEnumerator: (context) =>
      staticSplitEnumerator(
        context,
        Array.from({ length: o.splits }, (_, i) => ({
          splitId: `${o.idPrefix}-${i}`,
          next: Math.floor((o.records * i) / o.splits) + 1,
          last: Math.floor((o.records * (i + 1)) / o.splits),
        })),
      ),
    createReader: (context) => {
      const splits: PacedSplit[] = [];
      // FLIP-33's backlog gauge: the numbers left in the splits held (test/metrics.test.ts reads it).
      context.metrics.setPendingRecordsGauge(() => splits.reduce((n, s) => n + Math.max(0, s.last - s.next + 1), 0));
      let noMore = false;
      let resumeAt = 0;
      const reader: SourceReader<number, PacedSplit> = {
        pollNext(output) {
          if (performance.now() < resumeAt) return "nothing";
          const open = (s: PacedSplit): boolean => s.next <= Math.min(s.last, holdAt);
          let i = -1;
          for (let j = 0; j < splits.length; j++) {
            if (open(splits[j]!) && (i < 0 || (o.inOrder === true && splits[j]!.next < splits[i]!.next))) i = j;
          }
          if (i < 0) {
            // Held, waiting for splits, or (endless) done: look again a little later.
            resumeAt = performance.now() + 20;
            return noMore && !o.endless && splits.every((s) => s.next > s.last) ? "end" : "nothing";
          }
          const s = splits[i]!;
          const end = Math.min(s.last, holdAt, s.next + o.perPoll - 1);
          for (let n = s.next; n <= end; n++) output.collect(n, n);
          splits[i] = { ...s, next: end + 1 };
          if (o.pauseMs === 0 || (o.pausing !== undefined && !o.pausing())) return "more";
          resumeAt = performance.now() + o.pauseMs;
          return "nothing";
        },
        isAvailable: () => new Promise((resolve) => setTimeout(resolve, Math.max(1, resumeAt - performance.now()))),
        addSplits: (added) => void splits.push(...added),
        notifyNoMoreSplits: () => void (noMore = true),
        snapshotState: () => splits.map((s) => ({ ...s })),
      };
      return reader;
    },
  };
}
