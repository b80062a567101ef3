/**
 * Moves a savepoint directory elsewhere: what `eddy savepoint --dir D` and `eddy stop --dir D` do
 * on the client side, since the control API never takes a path from its client. A savepoint is
 * self-contained with relative file names, so the moved directory restores as well as the original.
 */
import { cp, mkdir, rename, rm, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { EddyError } from "../core/errors.ts";

/**
 * Moves the savepoint directory `path` into `intoDir` (created if needed) under the same name and
 * returns its new path. Never overwrites: a directory of that name already in `intoDir` fails.
 * Across file systems (EXDEV) it copies, then removes the original; a failed copy is removed and
 * the original stays.
 */
export async function moveSavepoint(path: string, intoDir: string): Promise<string> {
  const from = resolve(path);
  const target = join(resolve(intoDir), basename(from));
  const fromStat = await stat(from).catch(() => undefined);
  if (fromStat === undefined || !fromStat.isDirectory()) {
    throw new EddyError("SAVEPOINT_NOT_FOUND", `savepoint directory '${from}' does not exist`);
  }
  if (target === from) return from;
  await mkdir(resolve(intoDir), { recursive: true });
  if ((await stat(target).catch(() => undefined)) !== undefined) {
    throw new EddyError("SAVEPOINT_EXISTS", `cannot move the savepoint to '${target}': it already exists (the savepoint stays at '${from}')`);
  }
  try {
    await rename(from, target);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EXDEV") throw movingFailed(from, target, e);
    try {
      await cp(from, target, { recursive: true, errorOnExist: true, force: false, preserveTimestamps: true });
    } catch (copyError) {
      await rm(target, { recursive: true, force: true });
      throw movingFailed(from, target, copyError);
    }
    await rm(from, { recursive: true, force: true });
  }
  return target;
}

function movingFailed(from: string, target: string, cause: unknown): EddyError {
  return new EddyError("SAVEPOINT_MOVE_FAILED", `cannot move the savepoint '${from}' to '${target}': ${(cause as Error).message}`, { cause });
}
