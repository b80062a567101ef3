/**
 * Recovery after a failure, as pure decisions (the I/O — listing and verifying checkpoints,
 * waiting, restarting — is the caller's: coordinator/attempt-supervisor.ts). Two questions:
 *
 * 1. Is the failure worth a restart at all (`restartability`)? Not a cancellation, not a
 *    configuration error (it would fail again the same way), not running out of memory (the
 *    restored state and the same input run into the same limit), not a damaged snapshot the user
 *    named to restore from (it is restored exactly or not at all; recovery would otherwise pick
 *    an older checkpoint, behind output already committed). Otherwise the restart strategy decides
 *    (restart-strategy.ts).
 * 2. From where (`RecoveryTracker.plan`)? Exactly-once end to end needs: never a checkpoint older
 *    than the newest one whose completion sinks were notified of, since their transactions are
 *    committed and a replay from before them commits that output a second time; and only
 *    checkpoints this run wrote (ids from its first attempt on), or the snapshot it started from.
 *    See docs/design/checkpoint-protocol.md, "Recovery never goes behind committed output".
 *
 * Invariants (checked over every small case in recovery.test.ts):
 * - The restored checkpoint is the newest restorable one of this run not older than the newest
 *   committed one; none such: the starting snapshot (or nothing) while no commit was notified,
 *   else the job fails — unless recovery behind committed output is allowed, which then takes the
 *   newest restorable one of this run, or the start.
 * - Never a checkpoint of another run (id below the run's first).
 */

import type { ErrorCode } from "../core/error-codes.ts";

/** What a failure says about itself, for `restartability`. */
export interface FailureFacts {
  readonly code: string | undefined;
  readonly domain: string | undefined;
  /** The job was cancelled (by the user, or because it is being stopped). */
  readonly cancelled: boolean;
  /** The failed attempt restored from a snapshot the user named (`--from-checkpoint`, `--from-savepoint`). */
  readonly restoringNamedSnapshot: boolean;
}

const OUT_OF_MEMORY: ErrorCode = "WORKER_OUT_OF_MEMORY";
const DAMAGED_SNAPSHOT: readonly ErrorCode[] = ["CHECKPOINT_CORRUPT", "CHECKPOINT_MISSING"];

/**
 * `report`: whether the failure is worth a line saying why it is not retried (a cancellation ends
 * quietly; a configuration error speaks for itself).
 */
export type Restartability = { readonly restartable: true } | { readonly restartable: false; readonly reason: string; readonly report: boolean };

export function restartability(failure: FailureFacts): Restartability {
  if (failure.cancelled || failure.code === "JOB_CANCELLED") return { restartable: false, reason: "the job was cancelled", report: false };
  if (failure.domain === "config") return { restartable: false, reason: "a configuration error fails again the same way", report: false };
  if (failure.code === OUT_OF_MEMORY) {
    return { restartable: false, reason: "out of memory: a restart from the same checkpoint would run out again. Raise the heap limit or reduce state", report: true };
  }
  if (failure.restoringNamedSnapshot && DAMAGED_SNAPSHOT.some((code) => code === failure.code)) {
    return { restartable: false, reason: "the snapshot named to restore from is damaged: it is restored exactly or not at all", report: true };
  }
  return { restartable: true };
}

/** Where the next attempt starts, before the checkpoints are looked at. */
export interface RecoveryPlan {
  /** Restore the newest restorable checkpoint with an id of at least this. */
  readonly atLeast: number;
  /** What to do when there is none. */
  readonly whenNone: WhenNone;
}

export type WhenNone =
  /** Nothing was committed yet: the snapshot the run started from, or empty state. */
  | { readonly kind: "start" }
  /** The newest committed checkpoint cannot be restored: fail the job. */
  | { readonly kind: "refuse"; readonly committedId: number }
  /** As refuse, but allowed: the newest restorable checkpoint with an id of at least `atLeast`, else the start. */
  | { readonly kind: "behind"; readonly committedId: number; readonly atLeast: number };

/**
 * What recovery needs to know of a run: its first checkpoint id and the newest committed one.
 * Fed by the caller as attempts start and completions are notified.
 */
export class RecoveryTracker {
  readonly #allowBehindCommitted: boolean;
  #firstOwnId: number | undefined;
  #committedId: number | undefined;

  constructor(allowBehindCommitted: boolean) {
    this.#allowBehindCommitted = allowBehindCommitted;
  }

  /** An attempt starts issuing ids from `firstCheckpointId`; only the first attempt's counts. */
  attemptStarted(firstCheckpointId: number): void {
    this.#firstOwnId ??= firstCheckpointId;
  }

  /** Sinks are about to hear that `checkpointId` is complete (count it before they can commit). */
  completionNotified(checkpointId: number): void {
    this.#committedId = Math.max(this.#committedId ?? checkpointId, checkpointId);
  }

  get committedId(): number | undefined {
    return this.#committedId;
  }

  plan(): RecoveryPlan {
    // Before any attempt chose its ids, no checkpoint is this run's.
    const firstOwn = this.#firstOwnId ?? Number.POSITIVE_INFINITY;
    const committed = this.#committedId;
    if (committed === undefined) return { atLeast: firstOwn, whenNone: { kind: "start" } };
    const atLeast = Math.max(firstOwn, committed);
    if (!this.#allowBehindCommitted) return { atLeast, whenNone: { kind: "refuse", committedId: committed } };
    return { atLeast, whenNone: { kind: "behind", committedId: committed, atLeast: firstOwn } };
  }
}

/** Where recovery goes, once the checkpoints were looked at (see `resolveRecovery`). */
export type RecoveryPoint<C> =
  | { readonly kind: "checkpoint"; readonly checkpoint: C; readonly behindCommitted: boolean }
  | { readonly kind: "start"; readonly behindCommitted: boolean }
  | { readonly kind: "refuse"; readonly committedId: number };

/**
 * Carries out `plan` with `find(atLeast)`, the newest restorable checkpoint with an id of at least
 * `atLeast` (the caller's I/O: it reads and verifies checkpoints, newest first).
 */
export async function resolveRecovery<C>(plan: RecoveryPlan, find: (atLeast: number) => Promise<C | undefined>): Promise<RecoveryPoint<C>> {
  const found = await find(plan.atLeast);
  if (found !== undefined) return { kind: "checkpoint", checkpoint: found, behindCommitted: false };
  const none = plan.whenNone;
  switch (none.kind) {
    case "start":
      return { kind: "start", behindCommitted: false };
    case "refuse":
      return { kind: "refuse", committedId: none.committedId };
    case "behind": {
      const older = await find(none.atLeast);
      return older === undefined ? { kind: "start", behindCommitted: true } : { kind: "checkpoint", checkpoint: older, behindCommitted: true };
    }
  }
}
