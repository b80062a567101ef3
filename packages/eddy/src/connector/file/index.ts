/**
 * connector/file: the file source (formats: text lines, NDJSON, CSV, Parquet; `.gz` on the fly).
 * May import core/ and connector/ (the source contract), node: and its npm dependencies
 * (csv-parse, picomatch, hyparquet). Invariants: `pollNext` never blocks (reads are
 * fs.promises/zlib, one chunk ahead); every split's position in a checkpoint names the next
 * unread record, so a restore neither repeats nor skips one; persisted shapes carry a version.
 */
export { DEFAULT_SPLIT_BYTES, FileSource, type CsvSourceOptions, type FileSourceOptions } from "./file-source.ts";
export type { CsvFormatOptions } from "./csv-split-cursor.ts";
export type { FileSplit } from "./file-split.ts";
