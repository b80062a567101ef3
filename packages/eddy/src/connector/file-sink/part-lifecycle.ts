/**
 * The decisions of a part file's life, as pure functions of what the file system shows (STYLE
 * habit 7: the caller does the I/O). A part file is in progress (hidden name, open), then pending
 * (hidden name, closed and synced, its name in a checkpoint as a committable), then committed
 * (renamed to its visible name). Two moments read the file system to decide:
 *
 * - commit (`commitAction`): called once the checkpoint holding the pending part completed, and
 *   again after every restore from it, so it must recognise a part it already committed;
 * - recovery (`recoverAction`): an in-progress part recorded in the restored checkpoint with its
 *   durable length; what the crashed attempt appended after the barrier is cut off.
 *
 * Neither ever overwrites a visible file: a name collision is an error, not a replacement.
 */

/** What a `stat` of the hidden and the visible name found (undefined: no such file). */
export interface Observed {
  readonly tmpSize: number | undefined;
  readonly targetExists: boolean;
}

export type CommitAction =
  /** Rename tmp → name (after cutting tmp back to the recorded length if it is longer). */
  | { readonly kind: "rename"; readonly truncateTo: number | undefined }
  /** Committed before (by this checkpoint's earlier commit, before a restore): nothing to do. */
  | { readonly kind: "already-committed" }
  | { readonly kind: "fail"; readonly reason: string };

export function commitAction(length: number, o: Observed): CommitAction {
  if (o.tmpSize === undefined) {
    return o.targetExists ? { kind: "already-committed" } : { kind: "fail", reason: "neither the pending file nor the committed file exists" };
  }
  if (o.targetExists) return { kind: "fail", reason: "the committed name is taken by another file; refusing to overwrite it" };
  if (o.tmpSize < length) return { kind: "fail", reason: `the pending file has ${o.tmpSize} bytes, fewer than the ${length} recorded` };
  return { kind: "rename", truncateTo: o.tmpSize > length ? length : undefined };
}

export type RecoverAction =
  /** Cut tmp back to `length` (a no-op when equal), sync it; it is then pending. */
  | { readonly kind: "truncate"; readonly length: number }
  | { readonly kind: "fail"; readonly reason: string };

export function recoverAction(length: number, o: Observed): RecoverAction {
  if (o.tmpSize === undefined) {
    return {
      kind: "fail",
      reason: o.targetExists
        ? "the in-progress file was committed by a later checkpoint: restoring this older one would write its records twice"
        : "the in-progress file is missing",
    };
  }
  if (o.tmpSize < length) return { kind: "fail", reason: `the in-progress file has ${o.tmpSize} bytes, fewer than the ${length} the checkpoint made durable` };
  if (o.targetExists) return { kind: "fail", reason: "the committed name is taken by another file" };
  return { kind: "truncate", length };
}
