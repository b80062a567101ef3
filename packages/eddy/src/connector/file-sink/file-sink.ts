/**
 * `FileSink` (Flink's name): an exactly-once sink into part files under a directory, bucketed and
 * rolled (docs/connectors/file-sink.md). `FileSink.ndjson`, `FileSink.csv` (row formats, through
 * csv-stringify) and `FileSink.parquet` (a bulk format, through hyparquet-writer) make one; use it
 * with `stream.sinkTo(sink)`. Options are checked when the sink is built.
 */
import { resolve } from "node:path";
import { stringify, type Options as CsvOptions } from "csv-stringify/sync";
import { defaultCsvEncoder } from "./csv-encoder.ts";
import { SystemClock, type Clock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import type { CommitRetry, Committer, Sink, SinkContext, SinkWriter } from "../sink.ts";
import { bucketAssigner, DEFAULT_BUCKET_PATTERN, type BucketAssignerOption } from "./bucket-assigner.ts";
import { FileCommitter } from "./file-committer.ts";
import { FileSinkWriter, type FileSinkConfig } from "./file-sink-writer.ts";
import { ParquetPart, type ParquetColumn } from "./parquet-part.ts";
import { RowPart, type RowEncoder } from "./part-file.ts";
import { rollingPolicy, type RollingPolicyOptions } from "./rolling-policy.ts";

export interface FileSinkOptions<T> {
  /**
   * Which bucket (a relative directory) a record goes to: `{ by: "event-time" | "processing-time",
   * pattern?, timeZone? }` or a function of the record. Default: processing time,
   * `dt={yyyy}-{MM}-{dd}/hour={HH}`, UTC (Flink's DateTimeBucketAssigner also buckets by processing time).
   */
  readonly buckets?: BucketAssignerOption<T>;
  readonly rollingPolicy?: RollingPolicyOptions;
  /** Part names are `<partPrefix>-<subtask>-<counter><partSuffix>`. Default "part". */
  readonly partPrefix?: string;
  /** Default ".ndjson", ".csv" or ".parquet". */
  readonly partSuffix?: string;
  /** Processing time, for buckets and rolling. Default the system clock. */
  readonly clock?: Clock;
  /** Bytes each writer may have queued to the disk before the task waits. Default 16 MiB. */
  readonly maxQueuedBytes?: number;
  /** Row formats: bytes of each part's write buffer. Default 64 KiB. */
  readonly writeBufferBytes?: number;
  /** How a failed commit (rename) is retried. Default DEFAULT_COMMIT_RETRY. */
  readonly commitRetry?: CommitRetry;
}

export interface NdjsonFileSinkOptions<T> extends FileSinkOptions<T> {
  /** A record as one line of JSON (without the line end). Default JSON.stringify. */
  readonly serialize?: (value: T) => string;
}

export interface CsvFileSinkOptions<T> extends FileSinkOptions<T> {
  /**
   * The fields of an object record, in order, as keys or `{ key, header }`. Required for object
   * records (every part file must have the same columns); array records may omit it.
   */
  readonly columns?: CsvOptions["columns"];
  /** Write a header line at the start of every part file. Default true when columns are given. */
  readonly header?: boolean;
  /** Further csv-stringify options (delimiter, quote, quoted, escape, record_delimiter, cast, ...). */
  readonly csv?: Omit<CsvOptions, "columns" | "header">;
}

export interface ParquetFileSinkOptions<T> extends FileSinkOptions<T> {
  /** The schema: one column per field of the object records. */
  readonly columns: readonly ParquetColumn[];
  /** Records per row group. Default 10,000. */
  readonly rowGroupSize?: number;
}

export type { ParquetColumn } from "./parquet-part.ts";

class FileSinkImpl<T> implements Sink<T> {
  readonly commitRetry: CommitRetry | undefined;
  readonly #config: FileSinkConfig<T>;

  constructor(config: FileSinkConfig<T>, commitRetry: CommitRetry | undefined) {
    this.#config = config;
    this.commitRetry = commitRetry;
  }

  createWriter(context: SinkContext): SinkWriter<T> {
    return new FileSinkWriter(this.#config, context);
  }

  createCommitter(): Committer<unknown> {
    return new FileCommitter(this.#config.dir);
  }
}

const invalid = (message: string): EddyError => new EddyError("INVALID_SINK_OPTIONS", `file sink: ${message}`);

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v <= 0) throw invalid(`${name} must be a positive integer, not ${JSON.stringify(v)}`);
  return v;
}

function build<T>(
  dir: string,
  options: FileSinkOptions<T> | undefined,
  format: { suffix: string; bulk: boolean; createPart: (bufferBytes: number) => FileSinkConfig<T>["createPart"] },
): Sink<T> {
  if (typeof dir !== "string" || dir.length === 0 || dir.includes("\0")) throw invalid(`the directory must be a non-empty path, not ${JSON.stringify(dir)}`);
  const partPrefix = options?.partPrefix ?? "part";
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(partPrefix)) throw invalid(`partPrefix must be letters, digits, '.', '_' or '-' (not starting with '.'), not ${JSON.stringify(partPrefix)}`);
  const partSuffix = options?.partSuffix ?? format.suffix;
  if (partSuffix.includes("/") || partSuffix.includes("\0")) throw invalid(`partSuffix must not contain '/' or NUL, not ${JSON.stringify(partSuffix)}`);
  const buckets = options?.buckets ?? { by: "processing-time", pattern: DEFAULT_BUCKET_PATTERN };
  const clock = options?.clock ?? new SystemClock();
  // Fails now on an unknown token or time zone; each writer builds its own (it caches per writer).
  bucketAssigner(buckets, clock);
  const config: FileSinkConfig<T> = {
    dir: resolve(dir),
    partPrefix,
    partSuffix,
    policy: rollingPolicy(options?.rollingPolicy, format.bulk),
    clock,
    assignBucket: (c) => bucketAssigner(buckets, c),
    createPart: format.createPart(positiveInteger("writeBufferBytes", options?.writeBufferBytes, 64 * 1024)),
    maxQueuedBytes: positiveInteger("maxQueuedBytes", options?.maxQueuedBytes, 16 * 1024 * 1024),
  };
  return new FileSinkImpl(config, options?.commitRetry);
}

function rowFormat<T>(suffix: string, encoder: RowEncoder<T>) {
  return {
    suffix,
    bulk: false,
    createPart: (bufferBytes: number): FileSinkConfig<T>["createPart"] => (placement, channel) => new RowPart(placement, channel, encoder, bufferBytes),
  };
}

function ndjson<T>(dir: string, options?: NdjsonFileSinkOptions<T>): Sink<T> {
  const serialize = options?.serialize ?? ((v: T) => JSON.stringify(v));
  const encoder: RowEncoder<T> = {
    header: undefined,
    encode: (value) => {
      const line = serialize(value);
      if (typeof line !== "string") throw new TypeError(`the NDJSON serializer returned ${typeof line} for a record, not a string`);
      return `${line}\n`;
    },
  };
  return build(dir, options, rowFormat(".ndjson", encoder));
}

function csv<T>(dir: string, options?: CsvFileSinkOptions<T>): Sink<T> {
  const base: CsvOptions = { ...options?.csv, columns: options?.columns };
  const header = options?.header ?? options?.columns !== undefined;
  if (header && options?.columns === undefined) throw invalid("a CSV header needs columns");
  let headerLine: string | undefined;
  try {
    stringify([], base);
    headerLine = header ? stringify([], { ...base, header: true }) : undefined;
  } catch (e) {
    throw invalid(`invalid CSV options: ${(e as Error).message}`);
  }
  // One record at a time keeps part sizes exact; with default options the records are written
  // by an encoder of Eddy's own that writes what csv-stringify would (csv-encoder.ts).
  const fast = defaultCsvEncoder(options?.columns, options?.csv);
  const encoder: RowEncoder<T> = {
    header: headerLine,
    encode: (value) => fast?.(value) ?? stringify([value as unknown as Record<string, unknown>], base),
  };
  return build(dir, options, rowFormat(".csv", encoder));
}

function parquet<T>(dir: string, options: ParquetFileSinkOptions<T>): Sink<T> {
  const columns = options?.columns;
  if (!Array.isArray(columns) || columns.length === 0) throw invalid("FileSink.parquet needs columns: [{ name, type }, ...]");
  for (const c of columns) {
    if (typeof c?.name !== "string" || c.name === "" || typeof c.type !== "string") throw invalid(`a Parquet column needs a name and a type, not ${JSON.stringify(c)}`);
  }
  const layout = { columns: columns.slice(), rowGroupSize: positiveInteger("rowGroupSize", options.rowGroupSize, 10_000) };
  return build(dir, options, {
    suffix: ".parquet",
    bulk: true,
    createPart: () => (placement, channel) => new ParquetPart<T>(placement, channel, layout),
  });
}

/**
 * The file sink's factories: `stream.sinkTo(FileSink.ndjson<Order>("out/orders", { buckets: { by:
 * "event-time" } }))`.
 */
export const FileSink = { ndjson, csv, parquet } as const;
