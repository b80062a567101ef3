/**
 * Built-in bounded sources over in-memory data: `fromElements`/`fromCollection` (one split, not
 * parallel, like Flink) and `fromSequence` (split into ranges, parallel). Positions are indexes,
 * so a reader can resume exactly where a checkpoint left it.
 */
import { alwaysAvailable, staticSplitEnumerator, type Source, type SourceReader } from "./source.ts";

/** Records emitted per `pollNext` call: bounds the work of one call. */
const MAX_RECORDS_PER_POLL = 1024;

export interface CollectionSplit {
  readonly splitId: string;
  /** Index of the next element to emit. */
  readonly position: number;
}

export function collectionSource<T>(values: readonly T[]): Source<T, CollectionSplit> {
  return {
    boundedness: "bounded",
    maxParallelism: 1,
    createEnumerator: (context) => staticSplitEnumerator(context, [{ splitId: "collection", position: 0 }]),
    createReader: () => indexedReader((splitPosition, output, limit) => {
      let i = splitPosition;
      const end = Math.min(values.length, i + limit);
      for (; i < end; i++) output.collect(values[i]!);
      return i >= values.length ? -1 : i;
    }),
  };
}

export interface SequenceSplit {
  readonly splitId: string;
  /** Next number to emit (inclusive). */
  readonly position: number;
  /** Last number of the split (inclusive). */
  readonly to: number;
}

/** Numbers from..to inclusive, as `number`s (exact up to 2^53). */
export function sequenceSource(from: number, to: number): Source<number, SequenceSplit> {
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from > to) {
    throw new RangeError(`fromSequence needs safe integers from ≤ to, got ${from}..${to}`);
  }
  return {
    boundedness: "bounded",
    createEnumerator: (context) => {
      const count = to - from + 1;
      const n = Math.max(1, Math.min(context.parallelism, count));
      const splits: SequenceSplit[] = [];
      for (let i = 0; i < n; i++) {
        const start = from + Math.floor((count * i) / n);
        const end = from + Math.floor((count * (i + 1)) / n) - 1;
        splits.push({ splitId: `seq-${i}`, position: start, to: end });
      }
      return staticSplitEnumerator(context, splits);
    },
    createReader: () => {
      const splits: SequenceSplit[] = [];
      let current: { splitId: string; next: number; to: number } | undefined;
      let noMoreSplits = false;
      const reader: SourceReader<number, SequenceSplit> = {
        pollNext(output) {
          if (current === undefined) {
            const split = splits.shift();
            if (split === undefined) return noMoreSplits ? "end" : "nothing";
            current = { splitId: split.splitId, next: split.position, to: split.to };
          }
          const end = Math.min(current.to, current.next + MAX_RECORDS_PER_POLL - 1);
          let n = current.next;
          for (; n <= end; n++) output.collect(n);
          current.next = n;
          if (n > current.to) current = undefined;
          return current !== undefined || splits.length > 0 ? "more" : noMoreSplits ? "end" : "nothing";
        },
        isAvailable: alwaysAvailable,
        addSplits: (added) => void splits.push(...added),
        notifyNoMoreSplits: () => void (noMoreSplits = true),
        snapshotState: () => [
          ...(current === undefined ? [] : [{ splitId: current.splitId, position: current.next, to: current.to }]),
          ...splits,
        ],
      };
      return reader;
    },
  };
}

/** A reader over position-addressed splits; `emit` returns the next position or -1 at the end. */
function indexedReader<T>(
  emit: (position: number, output: { collect(value: T): void }, limit: number) => number,
): SourceReader<T, CollectionSplit> {
  const pending: CollectionSplit[] = [];
  let current: { splitId: string; position: number } | undefined;
  let noMoreSplits = false;
  return {
    pollNext(output) {
      if (current === undefined) {
        const split = pending.shift();
        if (split === undefined) return noMoreSplits ? "end" : "nothing";
        current = { splitId: split.splitId, position: split.position };
      }
      const next = emit(current.position, output, MAX_RECORDS_PER_POLL);
      if (next < 0) current = undefined;
      else current.position = next;
      return current !== undefined || pending.length > 0 ? "more" : noMoreSplits ? "end" : "nothing";
    },
    isAvailable: alwaysAvailable,
    addSplits: (added) => void pending.push(...added),
    notifyNoMoreSplits: () => void (noMoreSplits = true),
    snapshotState: () => [...(current === undefined ? [] : [{ ...current }]), ...pending],
  };
}
