/**
 * connector/file-sink: the exactly-once file sink (issue 25 section 3; docs/connectors/file-sink.md).
 *
 * May import core/ and connector/ (the sink contract), node: and npm packages (csv-stringify,
 * hyparquet-writer).
 *
 * Invariants:
 * - a visible part file (no leading dot, no `.inprogress`) is only ever made by renaming a synced,
 *   closed pending file after the checkpoint that holds it completed; nothing ever writes to or
 *   renames over a visible file;
 * - a part name `<prefix>-<subtask>-<counter><suffix>` is given out once per bucket directory;
 * - a length recorded in a checkpoint, and a pending file in one, were fsynced before the
 *   checkpoint was acknowledged, and so were the directory entries that name them.
 */
export {
  FileSink,
  type CsvFileSinkOptions,
  type FileSinkOptions,
  type NdjsonFileSinkOptions,
  type ParquetColumn,
  type ParquetFileSinkOptions,
} from "./file-sink.ts";
export type { BucketAssignerOption, BucketContext, BucketFunction, DateTimeBuckets } from "./bucket-assigner.ts";
export type { RollingPolicyOptions } from "./rolling-policy.ts";
