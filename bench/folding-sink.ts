/**
 * The bench's sink: discards every record after folding its digest into a count and checksum
 * (output-fold.ts); each subtask hands its fold to the driver at the end of input, under
 * FOLD_COLLECT_NAME. The Nexmark suite's blackhole sink, plus one digest per record so the
 * driver can check the job against the hand-written loop.
 */
import type { Sink } from "eddy";
import { foldDigest, emptyFold, type OutputFold } from "./output-fold.ts";

export const FOLD_COLLECT_NAME = "nexmark-fold";

export function foldingSink<T>(digest: (record: T) => number): Sink<T> {
  return {
    createWriter: (ctx) => {
      const fold: OutputFold = emptyFold();
      return {
        // hot path
        write(record) {
          foldDigest(fold, digest(record));
        },
        flush(endOfInput) {
          if (endOfInput) ctx.job.collect(FOLD_COLLECT_NAME, { count: fold.count, checksum: fold.checksum });
        },
      };
    },
  };
}
