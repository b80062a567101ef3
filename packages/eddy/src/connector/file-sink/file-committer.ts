/**
 * Commits pending part files: an atomic rename from the hidden name to the visible one, then an
 * fsync of the bucket directories, so a commit that returned survives a power loss (the sink
 * drops committables from its state once their commit returned; a rename lost after that would
 * leave the part hidden for ever). Idempotent: a part whose hidden file is gone and whose visible
 * file exists was committed before (this checkpoint's commit, repeated after a restore).
 */
import { open, rename } from "node:fs/promises";
import { join } from "node:path";
import { EddyError } from "../../core/errors.ts";
import type { Committer } from "../sink.ts";
import { ioError } from "./file-channel.ts";
import { readPendingPart } from "./file-sink-state.ts";
import { sizeOf, syncDirectory } from "./file-sink-writer.ts";
import { commitAction } from "./part-lifecycle.ts";

export class FileCommitter implements Committer<unknown> {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async commit(committables: readonly unknown[]): Promise<void> {
    const dirs = new Set<string>();
    for (const c of committables) {
      const part = readPendingPart(c);
      const bucketDir = join(this.#dir, part.bucket);
      const tmp = join(bucketDir, part.tmp);
      const target = join(bucketDir, part.name);
      const action = commitAction(part.length, { tmpSize: await sizeOf(tmp), targetExists: (await sizeOf(target)) !== undefined });
      if (action.kind === "already-committed") continue;
      if (action.kind === "fail") throw new EddyError("FILE_SINK_RECOVERY_FAILED", `file sink could not commit '${tmp}' as '${part.name}': ${action.reason}`);
      try {
        if (action.truncateTo !== undefined) {
          const handle = await open(tmp, "r+");
          try {
            await handle.truncate(action.truncateTo);
            await handle.sync();
          } finally {
            await handle.close();
          }
        }
        await rename(tmp, target);
      } catch (e) {
        throw ioError("rename the pending file", tmp, e);
      }
      dirs.add(bucketDir);
    }
    for (const d of dirs) await syncDirectory(d);
  }
}
