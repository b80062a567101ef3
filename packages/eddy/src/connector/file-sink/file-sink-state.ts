/**
 * What the file sink persists in checkpoints, version 1: its committables (pending part files) and
 * its writer state (in-progress part files and their durable lengths, part counters). Plain data,
 * encodable by the value codec. Readers treat their input as hostile: a checkpoint may come from
 * another version or be damaged, so every field is checked and a bad one is a clear error.
 *
 * Paths are relative to the sink's directory: `bucket` is the bucket's relative directory ("" for
 * the directory itself), `tmp` the hidden in-progress name and `name` the visible one, both plain
 * file names inside the bucket.
 */
import { EddyError } from "../../core/errors.ts";

/** A part file closed for commit: durable under `tmp`, visible once renamed to `name`. The committable. */
export interface PendingPart {
  readonly v: 1;
  readonly bucket: string;
  readonly tmp: string;
  readonly name: string;
  /** Bytes of the closed file (a longer file is truncated to it on commit, as Flink does). */
  readonly length: number;
}

/** A row-format part file kept open across a checkpoint: after a restore it is cut back to `length`. */
export interface InProgressPart {
  readonly v: 1;
  readonly kind: "in-progress";
  readonly bucket: string;
  readonly tmp: string;
  readonly name: string;
  /** Bytes made durable (fsync) before the checkpoint recorded them. */
  readonly length: number;
}

/**
 * The next part counter of every subtask index this writer knows of: its own and those inherited
 * through a rescale. Carried forward from checkpoint to checkpoint so a counter is never lost when
 * the round-robin division of the state hands it to another subtask.
 */
export interface PartCounters {
  readonly v: 1;
  readonly kind: "counters";
  /** [subtask index, next counter] pairs. */
  readonly next: readonly (readonly [number, number])[];
}

export type WriterStateEntry = InProgressPart | PartCounters;

const fail = (what: string, value: unknown): never => {
  throw new EddyError("FILE_SINK_RECOVERY_FAILED", `file sink: ${what} in the restored checkpoint is not valid (${JSON.stringify(value)?.slice(0, 200)})`);
};

const isCount = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
const isFileName = (x: unknown): x is string => typeof x === "string" && x.length > 0 && !x.includes("/") && !x.includes("\0") && x !== "." && x !== "..";
const isBucket = (x: unknown): x is string => typeof x === "string" && (x === "" || safeBucketProblem(x) === undefined);

/** Why `bucket` is not a safe relative directory, or undefined when it is. */
export function safeBucketProblem(bucket: string): string | undefined {
  if (bucket.includes("\0")) return "it contains a NUL character";
  if (bucket.startsWith("/") || bucket.startsWith("\\") || /^[A-Za-z]:/.test(bucket)) return "it is absolute";
  if (bucket.split(/[/\\]/).some((s) => s === "..")) return "it has a '..' segment";
  return undefined;
}

export function readPendingPart(x: unknown): PendingPart {
  const p = x as Partial<PendingPart> | null;
  if (p === null || typeof p !== "object" || p.v !== 1) return fail("a pending part file (unknown version)", x);
  if (!isBucket(p.bucket) || !isFileName(p.tmp) || !isFileName(p.name) || !isCount(p.length)) return fail("a pending part file", x);
  return { v: 1, bucket: p.bucket, tmp: p.tmp, name: p.name, length: p.length };
}

export function readWriterStateEntry(x: unknown): WriterStateEntry {
  const e = x as { v?: unknown; kind?: unknown } | null;
  if (e === null || typeof e !== "object" || e.v !== 1) return fail("a file sink writer state entry (unknown version)", x);
  if (e.kind === "counters") {
    const next = (e as Partial<PartCounters>).next;
    if (!Array.isArray(next) || !next.every((p) => Array.isArray(p) && p.length === 2 && isCount(p[0]) && isCount(p[1]))) return fail("the part counters", x);
    return { v: 1, kind: "counters", next: next.map(([s, n]) => [s, n] as const) };
  }
  if (e.kind === "in-progress") {
    const p = e as Partial<InProgressPart>;
    if (!isBucket(p.bucket) || !isFileName(p.tmp) || !isFileName(p.name) || !isCount(p.length)) return fail("an in-progress part file", x);
    return { v: 1, kind: "in-progress", bucket: p.bucket, tmp: p.tmp, name: p.name, length: p.length };
  }
  return fail("a file sink writer state entry (unknown kind)", x);
}
