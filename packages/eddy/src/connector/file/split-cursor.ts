/** A split being read by a file source reader: the one interface its formats implement. */
import type { SourceOutput } from "../source.ts";
import type { FileSplit } from "./file-split.ts";

/** "more": call again; "nothing": wait for `available()`; "done": every record of the split was emitted. */
export type CursorStatus = "more" | "nothing" | "done";

/**
 * Never called concurrently. `poll` emits at most `budget` records and throws an EddyError when
 * the file cannot be read (bad input goes to `output.reportBadRecord` instead). `snapshot` is the
 * split with the position of its next unread record: a cursor opened on it emits exactly the
 * records this one has not emitted yet.
 */
export interface SplitCursor<T> {
  poll(output: SourceOutput<T>, budget: number): CursorStatus;
  available(): Promise<void>;
  snapshot(): FileSplit;
  /** Releases the file. May be called twice. */
  close(): void;
}

/** A bad record's raw text, bounded (BadRecord.raw). */
export function boundedRaw(text: string): string {
  return text.length <= 65536 ? text : text.slice(0, 65536);
}
