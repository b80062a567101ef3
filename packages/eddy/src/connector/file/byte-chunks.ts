/**
 * A split's bytes as a sequence of chunks read on demand, from a byte offset: plain files by
 * positioned reads (fs.promises, no stream), `.gz` files through node:zlib, decompressed from the
 * start and the first `offset` decompressed bytes dropped (a gzip stream cannot be entered in the
 * middle, so resuming a compressed file costs re-decompressing what was read).
 *
 * `read` is never called while a previous read is outstanding. Errors are the file system's or
 * zlib's, raw: the caller tells bad input (zlib's Z_* codes) from failures (file-errors.ts).
 */
import { createReadStream } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { createGunzip } from "node:zlib";

export interface ByteChunks {
  /** The next chunk of bytes (never empty), or null at the end. */
  read(): Promise<Buffer | null>;
  /** Releases the file; any outstanding read is abandoned. May be called twice. */
  close(): void;
}

export function isGzip(path: string): boolean {
  return path.endsWith(".gz");
}

export function openByteChunks(path: string, offset: number, chunkBytes: number): ByteChunks {
  return isGzip(path) ? gzipChunks(path, offset, chunkBytes) : plainChunks(path, offset, chunkBytes);
}

function plainChunks(path: string, offset: number, chunkBytes: number): ByteChunks {
  let handle: Promise<FileHandle> | undefined;
  let position = offset;
  let closed = false;
  return {
    async read() {
      handle ??= open(path, "r");
      const h = await handle;
      if (closed) return null;
      const buffer = Buffer.allocUnsafe(chunkBytes);
      const { bytesRead } = await h.read(buffer, 0, chunkBytes, position);
      position += bytesRead;
      return bytesRead === 0 ? null : buffer.subarray(0, bytesRead);
    },
    close() {
      if (closed) return;
      closed = true;
      // Closing waits for an outstanding read on the handle; a failure to close is not the job's.
      handle?.then((h) => h.close()).catch(() => {});
    },
  };
}

function gzipChunks(path: string, skipBytes: number, chunkBytes: number): ByteChunks {
  const file = createReadStream(path, { highWaterMark: chunkBytes });
  const gunzip = createGunzip({ chunkSize: Math.max(64, chunkBytes) }); // zlib's least
  file.on("error", (e) => gunzip.destroy(e));
  file.pipe(gunzip);
  const chunks = gunzip[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let toSkip = skipBytes;
  return {
    async read() {
      for (;;) {
        const next = await chunks.next();
        if (next.done === true) return null;
        let chunk = next.value;
        if (toSkip > 0) {
          const n = Math.min(toSkip, chunk.length);
          toSkip -= n;
          chunk = chunk.subarray(n);
        }
        if (chunk.length > 0) return chunk;
      }
    },
    close() {
      file.destroy();
      gunzip.destroy();
    },
  };
}

/**
 * One chunk read ahead of the decoder, so reading the file overlaps decoding it: `take` hands over
 * the chunk read so far (undefined if it has not arrived: wait for `available`), and `prefetch`
 * starts reading the next. A failed read is thrown by the next `take`, never left unhandled.
 */
export class ChunkPrefetch {
  readonly #chunks: ByteChunks;
  /** Undefined: nothing arrived (or it was taken). */
  #ready: Buffer | null | undefined;
  #reading: Promise<void> | undefined;
  #failed: { readonly error: unknown } | undefined;

  constructor(chunks: ByteChunks) {
    this.#chunks = chunks;
  }

  /** The chunk read ahead (null: the end), or undefined if it is still being read. Throws what the read threw. */
  take(): Buffer | null | undefined {
    if (this.#failed !== undefined) throw this.#failed.error;
    const ready = this.#ready;
    if (ready !== undefined) {
      this.#ready = undefined;
      return ready;
    }
    this.prefetch();
    return undefined;
  }

  /** Starts reading the next chunk unless a read is outstanding or a chunk waits to be taken. */
  prefetch(): void {
    if (this.#reading !== undefined || this.#ready !== undefined || this.#failed !== undefined) return;
    this.#reading = this.#chunks.read().then(
      (chunk) => {
        this.#reading = undefined;
        this.#ready = chunk;
      },
      (error: unknown) => {
        this.#reading = undefined;
        this.#failed = { error };
      },
    );
  }

  /** Resolves when the outstanding read has settled (at once if none is). */
  available(): Promise<void> {
    return this.#reading ?? Promise.resolve();
  }

  close(): void {
    this.#chunks.close();
  }
}
