/**
 * Text lines and NDJSON: a LineDecoder over a split's chunks. NDJSON skips blank lines and sends a
 * line that is not JSON to `reportBadRecord` with its file, line number and byte offset; a gzip
 * stream that is truncated or corrupt is reported the same way and ends the split (nothing after
 * it can be read).
 */
import { closeSync, openSync, readSync } from "node:fs";
import type { SourceOutput } from "../source.ts";
import { ChunkPrefetch, isGzip, openByteChunks } from "./byte-chunks.ts";
import { fileError, isCorruptCompressedInput } from "./file-errors.ts";
import type { FileSplit } from "./file-split.ts";
import { LineDecoder } from "./line-decoder.ts";
import { boundedRaw, type CursorStatus, type SplitCursor } from "./split-cursor.ts";

/** `parse` undefined: each line is the record (text lines, blank ones included). */
export function lineSplitCursor<T>(split: FileSplit, parse: ((line: string) => T) | undefined, chunkBytes: number): SplitCursor<T> {
  const decoder = new LineDecoder(split.offset, split.end, split.start > 0 && split.offset === split.start - 1, split.linesRead);
  const chunks = new ChunkPrefetch(openByteChunks(split.path, split.offset, chunkBytes));
  let firstLine = split.firstLine;

  /** Line number of the line just read (counting the file's lines from the start when not known yet: an error path). */
  const lineNumberOfLast = (mark: number): number => {
    if (firstLine === 0) firstLine = countLines(split.path, decoder.offsetOfMark(mark)) + 2 - decoder.linesRead;
    return firstLine + decoder.linesRead - 1;
  };

  const reportBad = (output: SourceOutput<T>, raw: string, error: unknown, mark: number): void => {
    output.reportBadRecord({ raw: boundedRaw(raw), error, position: { file: split.path, line: lineNumberOfLast(mark), offset: decoder.offsetOfMark(mark) } });
  };

  return {
    // hot path
    poll(output, budget): CursorStatus {
      for (let n = 0; n < budget; n++) {
        const mark = decoder.mark();
        const line = decoder.nextLine();
        if (line === undefined) {
          if (decoder.inputComplete) return "done";
          let chunk;
          try {
            chunk = chunks.take();
          } catch (e) {
            if (!isCorruptCompressedInput(e)) throw fileError(e, split.path, "read");
            // The decompressed text ends here; what follows cannot be read.
            const partial = decoder.abandon();
            output.reportBadRecord({ raw: boundedRaw(partial), error: e, position: { file: split.path, line: firstLine + decoder.linesRead, offset: decoder.offset() } });
            continue;
          }
          if (chunk === undefined) return "nothing";
          decoder.feed(chunk);
          if (!decoder.inputComplete) chunks.prefetch();
          continue;
        }
        if (parse === undefined) {
          output.collect(line as T);
          continue;
        }
        if (line.length === 0) continue;
        let value: T;
        try {
          value = parse(line);
        } catch (e) {
          if (line.trim().length > 0) reportBad(output, line, e, mark);
          continue;
        }
        output.collect(value);
      }
      return "more";
    },
    available: () => chunks.available(),
    snapshot: () => ({ ...split, offset: decoder.offset(), firstLine, linesRead: decoder.linesRead }),
    close: () => chunks.close(),
  };
}

/**
 * Newlines in the first `bytes` bytes of an uncompressed file: the line numbers of a byte-range
 * split that starts inside the file, asked for only when a bad record needs one (once per split).
 * Synchronous, so it blocks the task for as long as reading that prefix takes.
 */
function countLines(path: string, bytes: number): number {
  if (isGzip(path)) return 0; // never: compressed files are not split
  let fd;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    throw fileError(e, path, "read");
  }
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    let count = 0;
    for (let position = 0; position < bytes; ) {
      const n = readSync(fd, buffer, 0, Math.min(buffer.length, bytes - position), position);
      if (n === 0) break;
      for (let i = buffer.indexOf(0x0a); i >= 0 && i < n; i = buffer.indexOf(0x0a, i + 1)) count++;
      position += n;
    }
    return count;
  } finally {
    closeSync(fd);
  }
}
