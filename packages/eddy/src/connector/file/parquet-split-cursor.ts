/**
 * Parquet through hyparquet: one split per file, read a row group at a time (hyparquet decodes
 * whole column chunks, so a row group is the unit of reading; memory holds one row group's
 * decoded rows). The position is (row group, row within it). A file hyparquet cannot decode is
 * reported as a bad record at the row group it failed in, and ends the split.
 */
import { open, type FileHandle } from "node:fs/promises";
import { parquetMetadataAsync, parquetReadObjects, type AsyncBuffer, type FileMetaData } from "hyparquet";
import type { SourceOutput } from "../source.ts";
import { fileError } from "./file-errors.ts";
import type { FileSplit } from "./file-split.ts";
import type { CursorStatus, SplitCursor } from "./split-cursor.ts";

/** Why reading failed: `bad` when the file is not valid Parquet (bad input), else a file-system failure. */
class ReadFailure {
  constructor(
    readonly error: unknown,
    readonly bad: boolean,
  ) {}
}

/** hyparquet's own errors carry no errno code; the file system's do. */
const readFailure = (e: unknown): ReadFailure => new ReadFailure(e, (e as { code?: unknown }).code === undefined);

interface OpenFile {
  readonly handle: FileHandle;
  readonly buffer: AsyncBuffer;
  readonly metadata: FileMetaData;
  /** First row (file-wide index) of each row group, and one past the last row. */
  readonly groupStarts: readonly number[];
}

export function parquetSplitCursor<T>(split: FileSplit): SplitCursor<T> {
  let rowGroup = split.rowGroup ?? 0;
  let row = split.row ?? 0;
  let file: OpenFile | undefined;
  /** Rows of `rowGroup` from `row` on, read and not emitted yet (rows[next] is row `row`). */
  let rows: readonly unknown[] = [];
  let next = 0;
  let reading: Promise<void> | undefined;
  let failed: ReadFailure | undefined;
  let done = false;
  let closed = false;

  const openFile = async (): Promise<OpenFile> => {
    let handle: FileHandle;
    try {
      handle = await open(split.path, "r");
    } catch (e) {
      throw new ReadFailure(e, false);
    }
    try {
      const { size } = await handle.stat();
      const buffer: AsyncBuffer = {
        byteLength: size,
        slice: async (start, end = size) => {
          const bytes = new Uint8Array(end - start);
          await handle.read(bytes, 0, bytes.length, start);
          return bytes.buffer;
        },
      };
      const metadata = await parquetMetadataAsync(buffer);
      const groupStarts = [0];
      for (const g of metadata.row_groups) groupStarts.push(groupStarts[groupStarts.length - 1]! + Number(g.num_rows));
      return { handle, buffer, metadata, groupStarts };
    } catch (e) {
      await handle.close().catch(() => {});
      throw readFailure(e);
    }
  };

  const read = (): void => {
    reading = (async () => {
      file ??= await openFile();
      if (closed) return;
      if (rowGroup >= file.metadata.row_groups.length) {
        done = true;
        return;
      }
      const end = file.groupStarts[rowGroup + 1]!;
      const start = file.groupStarts[rowGroup]! + row;
      if (start >= end) {
        rowGroup++;
        row = 0;
        return;
      }
      try {
        rows = await parquetReadObjects({ file: file.buffer, metadata: file.metadata, rowStart: start, rowEnd: end, rowFormat: "object" });
      } catch (e) {
        throw readFailure(e);
      }
      next = 0;
    })().then(
      () => void (reading = undefined),
      (e: unknown) => {
        reading = undefined;
        failed = e instanceof ReadFailure ? e : readFailure(e);
      },
    );
  };

  return {
    poll(output: SourceOutput<T>, budget: number): CursorStatus {
      if (failed !== undefined) {
        if (!failed.bad) throw fileError(failed.error, split.path, "read");
        output.reportBadRecord({ raw: "", error: failed.error, position: { file: split.path, rowGroup, row } });
        return "done";
      }
      if (done) return "done";
      let n = 0;
      for (; n < budget && next < rows.length; n++) {
        output.collect(rows[next++] as T);
        row++;
      }
      if (next < rows.length) return "more";
      if (rows.length > 0) {
        rows = [];
        rowGroup++;
        row = 0;
      }
      if (reading === undefined) read();
      return "nothing";
    },
    available: () => reading ?? Promise.resolve(),
    snapshot: () => ({ ...split, rowGroup, row }),
    close() {
      if (closed) return;
      closed = true;
      const f = file;
      if (f !== undefined) void f.handle.close().catch(() => {});
      else void reading?.then(() => file?.handle.close()).catch(() => {});
    },
  };
}
