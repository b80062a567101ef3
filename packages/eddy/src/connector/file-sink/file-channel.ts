/**
 * The I/O of one part file, in order: open (creating the bucket directory), writes of whole
 * buffers, fsync, close. Operations are queued on one promise chain, so the writer's hot path only
 * appends to a buffer and never waits; the bytes queued but not yet written are counted in the
 * writer's `IoBudget`, which is how a slow disk reaches the task as backpressure.
 *
 * The chain never rejects: the first failure is recorded (`IoBudget.failure`, an EddyError naming
 * the path) and every later operation is skipped. Whoever waits (a barrier, a full budget) sees it.
 */
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { describeCause, EddyError } from "../../core/errors.ts";

/** Shared by all the channels of one writer. */
export interface IoBudget {
  /** Bytes handed to channels and not written yet. */
  queuedBytes: number;
  /** The first I/O failure of any channel; once set, the writer refuses every call. */
  failure: EddyError | undefined;
}

/** An fs error as the job's failure: what was done, to which path, and the errno code explained. */
export function ioError(action: string, path: string, e: unknown): EddyError {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const hint =
    code === "ENOSPC" || code === "EDQUOT" ? " (no space left on the device)"
    : code === "EACCES" || code === "EPERM" ? " (permission denied)"
    : code === "EROFS" ? " (read-only file system)"
    : "";
  return new EddyError("FILE_SINK_IO_FAILED", `file sink could not ${action} '${path}'${hint}: ${describeCause(e)}`, { cause: e });
}

export class FileChannel {
  readonly path: string;
  #budget: IoBudget;
  #handle: FileHandle | undefined;
  /** Settles once every operation queued so far has run (or was skipped after a failure). */
  #chain: Promise<void> = Promise.resolve();

  constructor(path: string, budget: IoBudget) {
    this.path = path;
    this.#budget = budget;
  }

  /** Queues an operation; skipped once any channel of the writer failed. */
  #then(action: string, op: () => Promise<void>): void {
    this.#chain = this.#chain.then(async () => {
      if (this.#budget.failure !== undefined) return;
      try {
        await op();
      } catch (e) {
        this.#budget.failure ??= e instanceof EddyError ? e : ioError(action, this.path, e);
      }
    });
  }

  /** Opens the file, truncating what a crashed attempt may have left under this hidden name. */
  open(before?: () => Promise<void>): void {
    this.#then("create", async () => {
      await before?.();
      await mkdir(dirname(this.path), { recursive: true });
      this.#handle = await open(this.path, "w");
    });
  }

  /** Opens an existing file for appending at its current end (a restored in-progress part). */
  reopen(): void {
    this.#then("open", async () => {
      this.#handle = await open(this.path, "r+");
    });
  }

  /** Queues `bytes`, which the caller must not change afterwards. */
  write(bytes: Uint8Array, position: number): void {
    const n = bytes.byteLength;
    this.#budget.queuedBytes += n;
    this.#then("write", async () => {
      try {
        let done = 0;
        while (done < n) done += (await this.#handle!.write(bytes, done, n - done, position + done)).bytesWritten;
      } finally {
        this.#budget.queuedBytes -= n;
      }
    });
  }

  truncate(length: number): void {
    this.#then("truncate", () => this.#handle!.truncate(length));
  }

  sync(): void {
    this.#then("sync", () => this.#handle!.sync());
  }

  /** Closes the file; unlike the other operations it runs after a failure too, so no handle is left to the GC. */
  close(): void {
    this.#chain = this.#chain.then(async () => {
      const h = this.#handle;
      this.#handle = undefined;
      if (h === undefined) return;
      try {
        await h.close();
      } catch (e) {
        this.#budget.failure ??= ioError("close", this.path, e);
      }
    });
  }

  /** Settles once what is queued has run; rejects with the writer's failure if there is one. */
  async settled(): Promise<void> {
    await this.#chain;
    if (this.#budget.failure !== undefined) throw this.#budget.failure;
  }

  /** Closes without syncing and without reporting (the writer is closing; errors do not matter). */
  abandon(): void {
    this.#chain = this.#chain.then(async () => {
      const h = this.#handle;
      this.#handle = undefined;
      await h?.close().catch(() => {});
    });
  }
}
