/**
 * Which files a path names: a file, every file under a directory (recursively), or the files
 * matching a glob (picomatch syntax) under the glob's base directory. Hidden files and directories
 * (names starting with `.` or `_`, as Flink's default filter: in-progress files of file sinks) are
 * skipped. A file that vanishes between listing and stat is skipped (it is gone); a path or base
 * directory that does not exist, or that may not be listed, is an error naming it.
 */
import { readdir, stat } from "node:fs/promises";
import { join, relative, resolve, sep } from "node:path";
import picomatch from "picomatch";
import { EddyError } from "../../core/errors.ts";
import { fileError } from "./file-errors.ts";

export interface DiscoveredFile {
  /** Absolute path. */
  readonly path: string;
  readonly sizeBytes: number;
  readonly modifiedMs: number;
}

/** What a file source's path names, resolved once when the source is built. */
export interface PathPattern {
  /** The directory walked (the path itself when it is a file or directory). */
  readonly base: string;
  /** For a glob: whether a path relative to `base` matches. */
  readonly matches: ((relativePath: string) => boolean) | undefined;
}

export function pathPattern(path: string): PathPattern {
  if (typeof path !== "string" || path.length === 0) throw new EddyError("INVALID_FILE_SOURCE", "a file source needs a path (a file, a directory or a glob)");
  const scan = picomatch.scan(path);
  if (!scan.isGlob) return { base: resolve(path), matches: undefined };
  let isMatch: (p: string) => boolean;
  try {
    isMatch = picomatch(scan.glob, { dot: false });
  } catch (e) {
    throw new EddyError("INVALID_FILE_SOURCE", `file source: '${path}' is not a valid glob: ${String(e)}`, { cause: e });
  }
  // picomatch matches with forward slashes whatever the platform.
  return { base: resolve(scan.base === "" ? "." : scan.base), matches: (p) => isMatch(sep === "/" ? p : p.split(sep).join("/")) };
}

/** The files `pattern` names now, in modification order (then by path). */
export async function discoverFiles(pattern: PathPattern): Promise<DiscoveredFile[]> {
  let root;
  try {
    root = await stat(pattern.base);
  } catch (e) {
    throw fileError(e, pattern.base, "read");
  }
  const found: DiscoveredFile[] = [];
  if (root.isFile()) {
    if (pattern.matches === undefined) found.push({ path: pattern.base, sizeBytes: root.size, modifiedMs: root.mtimeMs });
  } else if (root.isDirectory()) {
    await walk(pattern.base, pattern, found);
  } else {
    throw new EddyError("INVALID_FILE_SOURCE", `file source: '${pattern.base}' is neither a file nor a directory`);
  }
  return found.sort((a, b) => a.modifiedMs - b.modifiedMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function walk(dir: string, pattern: PathPattern, found: DiscoveredFile[]): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    // A subdirectory removed while listing is gone, like a vanished file; the base must exist.
    if ((e as { code?: unknown }).code === "ENOENT" && dir !== pattern.base) return;
    throw fileError(e, dir, "list");
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (entry.name.startsWith(".") || entry.name.startsWith("_")) continue;
    const path = join(dir, entry.name);
    let s;
    try {
      s = await stat(path); // follows symbolic links
    } catch (e) {
      if ((e as { code?: unknown }).code === "ENOENT") continue;
      throw fileError(e, path, "read");
    }
    if (s.isDirectory()) await walk(path, pattern, found);
    else if (s.isFile() && (pattern.matches === undefined || pattern.matches(relative(pattern.base, path)))) {
      found.push({ path, sizeBytes: s.size, modifiedMs: s.mtimeMs });
    }
  }
}
