/**
 * CSV through csv-parse (header, delimiter, quoting, escapes, quoted newlines). A CSV file is one
 * split: a byte range cannot tell a record boundary from a newline inside quotes (Flink's CSV
 * format is not splittable either). The position is the byte offset after the last record emitted
 * and its line count; a resumed split starts a new parser there with the header's columns from
 * the split, so the header is not looked for again.
 *
 * csv-parse is driven through the synchronous engine that both its stream and its sync API wrap
 * (`Parser.api.parse(chunk, end, push, close)`): the stream's buffering would make a chunk's
 * records arrive on a later tick, and the sync API wants the whole input at once.
 */
import { Parser, type Info, type Options } from "csv-parse";
import type { SourceOutput } from "../source.ts";
import { ChunkPrefetch, openByteChunks } from "./byte-chunks.ts";
import { fileError, isCorruptCompressedInput } from "./file-errors.ts";
import type { FileSplit } from "./file-split.ts";
import { boundedRaw, type CursorStatus, type SplitCursor } from "./split-cursor.ts";

export interface CsvFormatOptions {
  /** Whether the first line names the columns (records are objects keyed by them). Default true. */
  readonly header?: boolean;
  /** Column names when the file has no header (records are objects); neither: records are arrays of strings. */
  readonly columns?: readonly string[];
  /** Field delimiter (default ","). */
  readonly delimiter?: string;
  /** Quote character (default '"'). */
  readonly quote?: string;
  /** Escape character inside quotes (default '"', i.e. a doubled quote). */
  readonly escape?: string;
  /** Turn numeric fields into numbers, as csv-parse's `cast: true`. Default false: every field is a string. */
  readonly cast?: boolean;
}

interface ParseEngine {
  parse(chunk: Buffer | undefined, end: boolean, push: (record: unknown) => void, close: () => void): Error | undefined;
}

type Queued = { readonly value: unknown; readonly offset: number; readonly linesRead: number; readonly columns: readonly string[] | undefined } | { readonly bad: { raw: string; error: unknown; line: number; nextOffset: number; linesRead: number } };

export function csvSplitCursor<T>(split: FileSplit, format: CsvFormatOptions, chunkBytes: number): SplitCursor<T> {
  const chunks = new ChunkPrefetch(openByteChunks(split.path, split.offset, chunkBytes));
  const baseOffset = split.offset;
  const baseLines = split.linesRead;
  let position = { offset: split.offset, linesRead: split.linesRead, columns: split.columns };
  const queue: Queued[] = [];
  let head = 0;
  let ended = false;
  const header = format.header ?? true;
  const columns = split.columns !== undefined ? [...split.columns] : header ? true : format.columns === undefined ? false : [...format.columns];
  const options: Options = {
    columns,
    // A resumed split starts after the header; a fresh one with given columns skips the header line.
    ...(split.columns === undefined && header && format.columns !== undefined ? { columns: [...format.columns], from_line: 2 } : {}),
    info: true,
    raw: true,
    bom: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    on_skip: (error, raw) => {
      const info = parser.info;
      queue.push({ bad: { raw: raw ?? "", error, line: baseLines + info.lines + split.firstLine - 1, nextOffset: baseOffset + info.bytes, linesRead: baseLines + info.lines } });
    },
    ...(format.delimiter === undefined ? {} : { delimiter: format.delimiter }),
    ...(format.quote === undefined ? {} : { quote: format.quote }),
    ...(format.escape === undefined ? {} : { escape: format.escape }),
    ...(format.cast === undefined ? {} : { cast: format.cast }),
  };
  const parser = new Parser(options);
  const engine = (parser as unknown as { readonly api: ParseEngine }).api;
  const push = (r: unknown): void => {
    const { record, info } = r as { record: unknown; info: Info & { columns?: readonly { name: string }[] | boolean } };
    queue.push({ value: record, offset: baseOffset + info.bytes, linesRead: baseLines + info.lines, columns: Array.isArray(info.columns) ? info.columns.map((c) => c.name) : undefined });
  };
  const close = (): void => {};

  /** Feeds a chunk (null: the end) to the parser; a parser error that skipping did not absorb ends the split as a bad record. */
  const feed = (chunk: Buffer | null): void => {
    const error = chunk === null ? engine.parse(undefined, true, push, close) : engine.parse(chunk, false, push, close);
    if (chunk === null) ended = true;
    if (error !== undefined) {
      ended = true;
      const info = parser.info;
      queue.push({ bad: { raw: "", error, line: baseLines + info.lines + split.firstLine - 1, nextOffset: baseOffset + info.bytes, linesRead: baseLines + info.lines } });
    }
  };

  return {
    poll(output: SourceOutput<T>, budget: number): CursorStatus {
      for (let n = 0; n < budget; n++) {
        const item = queue[head];
        if (item === undefined) {
          queue.length = 0;
          head = 0;
          if (ended) return "done";
          let chunk;
          try {
            chunk = chunks.take();
          } catch (e) {
            if (!isCorruptCompressedInput(e)) throw fileError(e, split.path, "read");
            ended = true;
            output.reportBadRecord({ raw: "", error: e, position: { file: split.path, line: split.firstLine + position.linesRead, offset: position.offset } });
            continue;
          }
          if (chunk === undefined) return "nothing";
          feed(chunk);
          if (!ended) chunks.prefetch();
          continue;
        }
        head++;
        if ("bad" in item) {
          const { bad } = item;
          output.reportBadRecord({ raw: boundedRaw(bad.raw), error: bad.error, position: { file: split.path, line: bad.line, offset: position.offset } });
          position = { offset: bad.nextOffset, linesRead: bad.linesRead, columns: position.columns };
          continue;
        }
        position = { offset: item.offset, linesRead: item.linesRead, columns: item.columns ?? position.columns };
        output.collect(item.value as T);
      }
      return "more";
    },
    available: () => chunks.available(),
    snapshot: () => ({ ...split, offset: position.offset, linesRead: position.linesRead, ...(position.columns === undefined ? {} : { columns: position.columns }) }),
    close: () => chunks.close(),
  };
}
