/**
 * A Parquet part file (a bulk format), written with hyparquet-writer: records are kept as column
 * arrays until a row group is full, which is encoded into memory and handed to the file's channel;
 * the footer is written when the part closes, at the latest at the next barrier (a Parquet file
 * cannot be resumed at a byte offset, so it is never kept open across a checkpoint). Memory: one
 * row group of records per open part.
 */
import { ByteWriter, ParquetWriter, schemaFromColumnData, type BasicType } from "hyparquet-writer";
import { EddyError } from "../../core/errors.ts";
import type { FileChannel } from "./file-channel.ts";
import type { PendingPart } from "./file-sink-state.ts";
import { closeForCommit, type PartFile, type PartPlacement } from "./part-file.ts";

/** One column of the Parquet schema: a field of the record and its type. */
export interface ParquetColumn {
  readonly name: string;
  /** hyparquet-writer's basic types: BOOLEAN, INT32, INT64 (bigint values), FLOAT, DOUBLE, STRING, JSON, TIMESTAMP (Date values), ... */
  readonly type: BasicType;
  /** Whether the column may hold null/undefined (default true). */
  readonly nullable?: boolean;
}

export interface ParquetLayout {
  readonly columns: readonly ParquetColumn[];
  /** Records per row group (default 10,000). */
  readonly rowGroupSize: number;
}

export class ParquetPart<T> implements PartFile<T> {
  readonly bucket: string;
  readonly tmp: string;
  readonly name: string;
  readonly openedAtMs: number;
  lastWriteAtMs: number;
  touched = false;
  readonly #channel: FileChannel;
  readonly #layout: ParquetLayout;
  readonly #bytes = new ByteWriter();
  readonly #writer: ParquetWriter;
  /** One array per column, `#rows` long. */
  #columns: unknown[][];
  #rows = 0;
  #handed = 0;

  constructor(placement: PartPlacement, channel: FileChannel, layout: ParquetLayout) {
    this.bucket = placement.bucket;
    this.tmp = placement.tmp;
    this.name = placement.name;
    this.openedAtMs = placement.openedAtMs;
    this.lastWriteAtMs = placement.openedAtMs;
    this.#channel = channel;
    this.#layout = layout;
    this.#columns = layout.columns.map(() => []);
    const schema = schemaFromColumnData({ columnData: layout.columns.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable ?? true, data: [] })) });
    this.#writer = new ParquetWriter({ writer: this.#bytes, schema, createdBy: "eddy FileSink (hyparquet-writer)" });
    channel.open();
  }

  /** Bytes encoded so far; buffered rows are not counted until their row group is encoded. */
  get size(): number {
    return this.#handed + this.#bytes.index;
  }

  holdsAtLeast(bytes: number): boolean {
    return this.size >= bytes;
  }

  // hot path
  append(value: T): void {
    const columns = this.#layout.columns;
    const record = value as Record<string, unknown>;
    for (let i = 0; i < columns.length; i++) this.#columns[i]!.push(record[columns[i]!.name]);
    this.touched = true;
    if (++this.#rows >= this.#layout.rowGroupSize) this.#writeRowGroup();
  }

  #writeRowGroup(): void {
    if (this.#rows === 0) return;
    const columnData = this.#layout.columns.map((c, i) => ({ name: c.name, type: c.type, nullable: c.nullable ?? true, data: this.#columns[i]! }));
    try {
      void this.#writer.write({ columnData, rowGroupSize: this.#rows });
    } catch (e) {
      throw new EddyError("USER_FUNCTION_FAILED", `file sink: records do not fit the Parquet columns ${JSON.stringify(this.#layout.columns)}: ${(e as Error).message}`, { cause: e });
    }
    this.#columns = this.#layout.columns.map(() => []);
    this.#rows = 0;
    this.#drain();
  }

  /** Hands the encoded bytes to the channel (a copy: the ByteWriter reuses its buffer). */
  #drain(): void {
    const n = this.#bytes.index;
    if (n === 0) return;
    const chunk = Buffer.from(new Uint8Array(this.#bytes.buffer, 0, n));
    this.#channel.write(chunk, this.#handed);
    this.#handed += n;
    this.#bytes.index = 0;
  }

  flush(): Promise<void> {
    return this.#channel.settled();
  }

  closeForCommit(): Promise<PendingPart> {
    this.#writeRowGroup();
    void this.#writer.finish();
    this.#drain();
    return closeForCommit(this.#channel, this, this.#handed);
  }

  abandon(): void {
    this.#channel.abandon();
  }
}
