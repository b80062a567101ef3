/**
 * A file split: a whole file, or a byte range of a large uncompressed line-based file, with the
 * position of its next unread record. Splits are what the enumerator assigns and what readers put
 * in checkpoints, so this shape is persisted: it carries a version (`v`), and `parseFileSplit`
 * reads every earlier version and treats its input as hostile.
 *
 * The boundary rule for byte ranges (as Hadoop's and Flink's line readers): split [start, end)
 * owns every line that STARTS at a byte in [start, end). A split with start > 0 begins reading at
 * start - 1 and skips through the first newline it meets (the line that began before it belongs to
 * the split before); it reads on past `end` to finish the last line it owns. So a record
 * straddling a boundary is read once, by the split where it starts.
 */
import { EddyError } from "../../core/errors.ts";

export const FILE_SPLIT_VERSION = 1;

export interface FileSplit {
  readonly v: 1;
  /** `<path>@<start>`: unique within a job. */
  readonly splitId: string;
  /** Absolute path of the file. */
  readonly path: string;
  /** First byte the split owns (lines starting at or after it). 0 for whole-file splits. */
  readonly start: number;
  /** One past the last byte at which a line the split owns may start; -1: to the end of the file. */
  readonly end: number;
  /**
   * Where reading resumes: the byte offset, in the file's (decompressed, for .gz) bytes, of the
   * next unread record. Initially `start - 1` for a split with start > 0 (the byte before it,
   * where the skip to the first owned line begins; once read, offset ≥ start), else 0.
   * Parquet splits use `rowGroup` and `row` instead and keep 0 here.
   */
  readonly offset: number;
  /** Line number (1-based) of the split's first line; 0 while unknown (a byte range starting inside the file). */
  readonly firstLine: number;
  /** Lines consumed so far (the next record starts on line firstLine + linesRead). */
  readonly linesRead: number;
  /** CSV: the header's column names once read, so a resumed split does not look for the header again. */
  readonly columns?: readonly string[];
  /** Parquet: the row group of the next unread row. */
  readonly rowGroup?: number;
  /** Parquet: the next unread row within `rowGroup`. */
  readonly row?: number;
}

/** The splits of a file of `sizeBytes`: byte ranges of at most `splitBytes` if `splittable`, else one. */
export function splitsOfFile(path: string, sizeBytes: number, splittable: boolean, splitBytes: number): FileSplit[] {
  if (!splittable || sizeBytes <= splitBytes) return [fileSplit(path, 0, -1)];
  const splits: FileSplit[] = [];
  for (let start = 0; start < sizeBytes; start += splitBytes) {
    // The last split reads to the end of the file, so a file that grew meanwhile is read whole.
    splits.push(fileSplit(path, start, start + splitBytes >= sizeBytes ? -1 : start + splitBytes));
  }
  return splits;
}

export function fileSplit(path: string, start: number, end: number): FileSplit {
  return { v: FILE_SPLIT_VERSION, splitId: `${path}@${start}`, path, start, end, offset: start > 0 ? start - 1 : 0, firstLine: start > 0 ? 0 : 1, linesRead: 0 };
}

/** A split as recorded in a checkpoint (by any version so far); throws CHECKPOINT_CORRUPT for anything else. */
export function parseFileSplit(value: unknown): FileSplit {
  const s = value as Partial<Record<keyof FileSplit, unknown>> | null;
  const nat = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
  if (
    s === null ||
    typeof s !== "object" ||
    s.v !== FILE_SPLIT_VERSION ||
    typeof s.splitId !== "string" ||
    typeof s.path !== "string" ||
    !nat(s.start) ||
    !(s.end === -1 || nat(s.end)) ||
    !nat(s.offset) ||
    !nat(s.firstLine) ||
    !nat(s.linesRead) ||
    (s.columns !== undefined && !(Array.isArray(s.columns) && s.columns.every((c) => typeof c === "string"))) ||
    (s.rowGroup !== undefined && !nat(s.rowGroup)) ||
    (s.row !== undefined && !nat(s.row))
  ) {
    throw new EddyError("CHECKPOINT_CORRUPT", `a file split in the checkpoint is not one this version reads: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  return s as FileSplit;
}
