/** File-system failures as EddyErrors naming the path, and which errors are bad input rather than I/O. */
import { describeCause, EddyError } from "../../core/errors.ts";

/** The EddyError for a failed file-system call on `path` (`doing`: "read", "list", ...). */
export function fileError(cause: unknown, path: string, doing: string): EddyError {
  if (cause instanceof EddyError) return cause;
  const code = (cause as { code?: unknown } | null)?.code;
  if (code === "ENOENT" || code === "ENOTDIR") {
    return new EddyError("FILE_NOT_FOUND", `file source: cannot ${doing} '${path}': it does not exist (or vanished while the job read it)`, { cause });
  }
  if (code === "EACCES" || code === "EPERM") {
    return new EddyError("FILE_ACCESS_DENIED", `file source: cannot ${doing} '${path}': permission denied`, { cause });
  }
  return new EddyError("FILE_READ_FAILED", `file source: cannot ${doing} '${path}': ${describeCause(cause)}`, { cause });
}

/** Whether `cause` is zlib saying the compressed input is malformed or truncated (bad input, not an I/O failure). */
export function isCorruptCompressedInput(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("Z_");
}
