/**
 * The file source's reader (Flink's FileSourceReader): reads its splits one after the other, and
 * asks the enumerator for the next split whenever it holds none (pull-based assignment). Reads are
 * asynchronous (fs.promises, zlib) and never block `pollNext`: while a chunk is on its way,
 * `pollNext` returns "nothing" and `isAvailable` resolves when it arrives. Each split's records go
 * through the split's own output (ReaderOutput.createOutputForSplit), released when it is done.
 */
import { alwaysAvailable, type InputStatus, type ReaderOutput, type SourceReader, type SourceReaderContext } from "../source.ts";
import { parseFileSplit, type FileSplit } from "./file-split.ts";
import type { SplitCursor } from "./split-cursor.ts";

/** Records emitted per `pollNext` call at most: bounds the work of one call. */
const MAX_RECORDS_PER_POLL = 1024;

export function fileSourceReader<T>(context: SourceReaderContext, openCursor: (split: FileSplit) => SplitCursor<T>): SourceReader<T, FileSplit> {
  /** Assigned splits not opened yet, in assignment order. */
  const queue: FileSplit[] = [];
  let current: SplitCursor<T> | undefined;
  /** The split `current` reads: its records go through the split's own output (per-split watermarks). */
  let currentId = "";
  let noMoreSplits = false;
  /** A split request is outstanding (answered by addSplits or notifyNoMoreSplits). */
  let requested = false;
  /** Set while parked waiting for splits: resolves the promise `isAvailable` handed out. */
  let wake: (() => void) | undefined;
  let available: Promise<void> = alwaysAvailable();

  const unpark = (): void => {
    const resolve = wake;
    wake = undefined;
    available = alwaysAvailable();
    resolve?.();
  };
  const waitForSplits = (): InputStatus => {
    if (noMoreSplits) return "end";
    if (!requested) {
      requested = true;
      context.sendSplitRequest();
    }
    if (wake === undefined) available = new Promise<void>((resolve) => (wake = resolve));
    return "nothing";
  };

  return {
    start() {
      // Ask for the first split at once (a restored reader may get its splits back as well).
      if (queue.length === 0) waitForSplits();
    },
    pollNext(output: ReaderOutput<T>): InputStatus {
      if (current === undefined) {
        const split = queue.shift();
        if (split === undefined) return waitForSplits();
        current = openCursor(split);
        currentId = split.splitId;
      }
      const status = current.poll(output.createOutputForSplit(currentId), MAX_RECORDS_PER_POLL);
      if (status === "more") return "more";
      if (status === "nothing") {
        available = current.available();
        return "nothing";
      }
      current.close();
      current = undefined;
      output.releaseOutputForSplit(currentId);
      return queue.length > 0 ? "more" : waitForSplits();
    },
    isAvailable: () => available,
    addSplits(splits) {
      // Restored splits come from a checkpoint: checked like any persisted input.
      for (const s of splits) queue.push(parseFileSplit(s));
      requested = false;
      unpark();
    },
    notifyNoMoreSplits() {
      noMoreSplits = true;
      unpark();
    },
    snapshotState: () => [...(current === undefined ? [] : [current.snapshot()]), ...queue],
    close() {
      current?.close();
      current = undefined;
    },
  };
}
