/**
 * `FileSource` (Flink's name): files as a source, for `env.fromSource(source, watermarkStrategy,
 * name)`. `FileSource.lines(path)`, `.ndjson<T>(path)`, `.csv<T>(path)`, `.parquet<T>(path)`,
 * where `path` is a file, a directory (read recursively) or a glob; `.gz` files are decompressed
 * on the fly. Bounded by default (the files that exist when the job starts, then the end);
 * `monitorIntervalMs` (or `.monitorContinuously(ms)`) makes it continuous: new files are found
 * every interval and read in modification order, each once.
 *
 * What is in a checkpoint: each reader's splits with the position of their next unread record
 * (file-split.ts), and the enumerator's splits not handed out and the files it has seen
 * (file-split-enumerator.ts). After a restore nothing is read twice or skipped.
 */
import { SystemClock, type Clock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import type { Source } from "../source.ts";
import { isGzip } from "./byte-chunks.ts";
import { csvSplitCursor, type CsvFormatOptions } from "./csv-split-cursor.ts";
import { pathPattern } from "./file-discovery.ts";
import { fileSplitEnumerator, parseFileEnumeratorState } from "./file-split-enumerator.ts";
import { fileSourceReader } from "./file-source-reader.ts";
import type { FileSplit } from "./file-split.ts";
import { lineSplitCursor } from "./line-split-cursor.ts";
import { parquetSplitCursor } from "./parquet-split-cursor.ts";
import type { SplitCursor } from "./split-cursor.ts";

/** Default largest byte range of one split of an uncompressed line-based file. */
export const DEFAULT_SPLIT_BYTES = 32 * 1024 * 1024;
/** Bytes per read of a file (and per chunk of decompressed output). */
const DEFAULT_CHUNK_BYTES = 256 * 1024;

export interface FileSourceOptions {
  /** Look for new files every this many milliseconds (continuous). Undefined: bounded. */
  readonly monitorIntervalMs?: number;
  /** Largest byte range of one split of an uncompressed text or NDJSON file (default 32 MiB). */
  readonly splitBytes?: number;
  /** Bytes per read (default 256 KiB). */
  readonly chunkBytes?: number;
  /** Processing time for the monitoring interval (default: the system clock). */
  readonly clock?: Clock;
}

export type CsvSourceOptions = FileSourceOptions & CsvFormatOptions;

/** A file source; `monitorContinuously` gives the same source, continuous. */
export interface FileSource<T> extends Source<T, FileSplit> {
  monitorContinuously(intervalMs: number): FileSource<T>;
}

type Format<T> = {
  /** Whether a file may be split into byte ranges. */
  readonly splittable: (path: string) => boolean;
  readonly open: (split: FileSplit, chunkBytes: number) => SplitCursor<T>;
};

function fileSource<T>(path: string, format: Format<T>, options: FileSourceOptions): FileSource<T> {
  const pattern = pathPattern(path);
  const { monitorIntervalMs } = options;
  const splitBytes = options.splitBytes ?? DEFAULT_SPLIT_BYTES;
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  if (monitorIntervalMs !== undefined && !(Number.isFinite(monitorIntervalMs) && monitorIntervalMs > 0)) {
    throw new EddyError("INVALID_FILE_SOURCE", `file source '${path}': monitorIntervalMs must be a positive number, got ${monitorIntervalMs}`);
  }
  for (const [name, value] of [["splitBytes", splitBytes], ["chunkBytes", chunkBytes]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new EddyError("INVALID_FILE_SOURCE", `file source '${path}': ${name} must be a positive integer, got ${value}`);
  }
  const clock = options.clock ?? new SystemClock();
  const enumeratorOptions = { pattern, monitorIntervalMs, clock, splittable: format.splittable, splitBytes };
  return {
    boundedness: monitorIntervalMs === undefined ? "bounded" : "continuous",
    // Readers ask for splits, and the enumerator serves whichever asks (fileSplitEnumerator).
    splitsOnRequest: true,
    createEnumerator: (context) => fileSplitEnumerator(context, enumeratorOptions),
    restoreEnumerator: (context, state) =>
      // No state: the source is new in this job (or was never snapshotted): start afresh.
      state === undefined || (Array.isArray(state) && state.length === 0)
        ? fileSplitEnumerator(context, enumeratorOptions)
        : fileSplitEnumerator(context, enumeratorOptions, parseFileEnumeratorState(state)),
    createReader: (context) => fileSourceReader(context, (split) => format.open(split, chunkBytes)),
    monitorContinuously: (intervalMs) => fileSource(path, format, { ...options, monitorIntervalMs: intervalMs }),
  };
}

const notGzip = (path: string): boolean => !isGzip(path);
const never = (): boolean => false;

export const FileSource = {
  /** Each line of text (without its '\n' or '\r\n') is a record, blank lines included. */
  lines(path: string, options: FileSourceOptions = {}): FileSource<string> {
    return fileSource<string>(path, { splittable: notGzip, open: (split, chunkBytes) => lineSplitCursor<string>(split, undefined, chunkBytes) }, options);
  },
  /** Each line is a JSON value (newline-delimited JSON); blank lines are skipped, others that do not parse are bad records. */
  ndjson<T>(path: string, options: FileSourceOptions = {}): FileSource<T> {
    return fileSource<T>(path, { splittable: notGzip, open: (split, chunkBytes) => lineSplitCursor<T>(split, JSON.parse as (line: string) => T, chunkBytes) }, options);
  },
  /** CSV records (objects keyed by the header's columns by default); a file is one split. */
  csv<T>(path: string, options: CsvSourceOptions = {}): FileSource<T> {
    return fileSource<T>(path, { splittable: never, open: (split, chunkBytes) => csvSplitCursor<T>(split, options, chunkBytes) }, options);
  },
  /** Parquet rows as objects keyed by column (INT64 columns as bigint); a file is one split. */
  parquet<T>(path: string, options: FileSourceOptions = {}): FileSource<T> {
    return fileSource<T>(path, { splittable: never, open: (split) => parquetSplitCursor<T>(split) }, options);
  },
};
