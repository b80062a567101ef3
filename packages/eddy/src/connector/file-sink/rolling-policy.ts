/**
 * When an in-progress part file is closed and a new one started: Flink's DefaultRollingPolicy
 * (size, rollover interval, inactivity interval) and OnCheckpointRollingPolicy, in one pure
 * policy. Bulk formats (Parquet) always roll on checkpoint: a Parquet file cannot be resumed at
 * a byte offset, its footer is written only when it closes.
 *
 * When the time-based conditions are checked: at every checkpoint barrier, and while records
 * arrive (at most about once a second). A part rolled by time becomes visible only at the next
 * checkpoint's commit anyway, so a part that waits for the barrier to roll is committed at the
 * same moment as with Flink's processing-time timer; the difference is only how long the file
 * handle of an idle bucket stays open.
 */
import { EddyError } from "../../core/errors.ts";

export interface RollingPolicyOptions {
  /** A part file is rolled once it has this many bytes (it may exceed it by one record). Default 128 MiB. */
  readonly maxPartSizeBytes?: number;
  /** A part file is rolled once it has been open this long. Default 60 s. */
  readonly rolloverIntervalMs?: number;
  /** A part file is rolled once nothing was written to it for this long. Default 60 s. */
  readonly inactivityIntervalMs?: number;
  /** Roll every part file at every checkpoint. Default false for row formats; always true for Parquet. */
  readonly rollOnCheckpoint?: boolean;
}

export interface RollingPolicy {
  readonly maxPartSizeBytes: number;
  readonly rolloverIntervalMs: number;
  readonly inactivityIntervalMs: number;
  readonly rollOnCheckpoint: boolean;
}

/** What the policy looks at of an in-progress part. */
export interface PartProgress {
  /** Bytes written to the part. */
  readonly size: number;
  /** Whether the part holds at least `bytes` bytes (`size >= bytes`, cheaper on the hot path). */
  holdsAtLeast(bytes: number): boolean;
  readonly openedAtMs: number;
  readonly lastWriteAtMs: number;
}

export function rollingPolicy(options: RollingPolicyOptions | undefined, bulk: boolean): RollingPolicy {
  const positive = (name: keyof RollingPolicyOptions, fallback: number): number => {
    const v = options?.[name] ?? fallback;
    if (typeof v !== "number" || !(v > 0)) throw new EddyError("INVALID_SINK_OPTIONS", `file sink: rollingPolicy.${name} must be a positive number, not ${JSON.stringify(v)}`);
    return v;
  };
  if (bulk && options?.rollOnCheckpoint === false) {
    throw new EddyError("INVALID_SINK_OPTIONS", "file sink: Parquet is a bulk format and rolls on every checkpoint; rollingPolicy.rollOnCheckpoint cannot be false");
  }
  return {
    maxPartSizeBytes: positive("maxPartSizeBytes", 128 * 1024 * 1024),
    rolloverIntervalMs: positive("rolloverIntervalMs", 60_000),
    inactivityIntervalMs: positive("inactivityIntervalMs", 60_000),
    rollOnCheckpoint: bulk || options?.rollOnCheckpoint === true,
  };
}

/** After a record was written to the part. */
export const shouldRollOnEvent = (policy: RollingPolicy, part: PartProgress): boolean => part.holdsAtLeast(policy.maxPartSizeBytes);

/** At any moment (a time check between records, or a barrier). */
export const shouldRollOnTime = (policy: RollingPolicy, part: PartProgress, nowMs: number): boolean =>
  nowMs - part.openedAtMs >= policy.rolloverIntervalMs || nowMs - part.lastWriteAtMs >= policy.inactivityIntervalMs;

/** At a checkpoint barrier. */
export const shouldRollOnCheckpoint = (policy: RollingPolicy, part: PartProgress, nowMs: number): boolean =>
  policy.rollOnCheckpoint || shouldRollOnEvent(policy, part) || shouldRollOnTime(policy, part, nowMs);
