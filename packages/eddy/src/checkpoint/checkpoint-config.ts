/**
 * Checkpoint configuration: the typed, validated settings of the checkpoint coordinator. The API
 * layer maps its hierarchical keys (`execution.checkpointing.interval-ms`, …) onto these fields;
 * nothing here reads configuration sources.
 */
import { EddyError } from "../core/errors.ts";
import type { CheckpointingMode } from "./barrier-aligner.ts";

export interface CheckpointConfig {
  /** Time between periodic checkpoint triggers, trigger to trigger. Required, > 0. */
  readonly intervalMs: number;
  /** Aligned barriers (exactly-once) or counted barriers (at-least-once). Default exactly-once. */
  readonly mode: CheckpointingMode;
  /** A checkpoint not complete (manifest committed) this long after its trigger fails. Default 10 min. */
  readonly timeoutMs: number;
  /** Least time from the end (completion or failure) of one checkpoint to the next periodic trigger. Default 0. */
  readonly minPauseMs: number;
  /** Most checkpoints and savepoints in progress at once. Default 1. */
  readonly maxConcurrent: number;
  /** Consecutive failed checkpoints tolerated; one more fails the job. Default 0; Infinity allowed. */
  readonly tolerableFailures: number;
  /** Completed checkpoints kept; older ones are discarded. Default 3. */
  readonly retained: number;
  /**
   * Whether automatic recovery may restore a checkpoint older than the newest one whose
   * completion sinks were notified of (when that one cannot be read). Two-phase sinks then commit
   * the replayed output a second time: duplicates. Default false: the job fails instead
   * (docs/design/checkpoint-protocol.md, "Recovery never goes behind committed output").
   */
  readonly allowRecoveryBehindCommitted: boolean;
}

export type CheckpointConfigInput = Partial<CheckpointConfig> & Pick<CheckpointConfig, "intervalMs">;

export const CHECKPOINT_CONFIG_DEFAULTS: Omit<CheckpointConfig, "intervalMs"> = Object.freeze({
  mode: "exactly-once",
  timeoutMs: 10 * 60 * 1000,
  minPauseMs: 0,
  maxConcurrent: 1,
  tolerableFailures: 0,
  retained: 3,
  allowRecoveryBehindCommitted: false,
});

/**
 * A job restored from a savepoint or checkpoint but run without checkpointing (Flink allows it):
 * no periodic checkpoint is ever due (`now - last >= Infinity` never holds), so the only one is
 * the final checkpoint at the end of a bounded input, which commits two-phase sinks. Not a
 * configuration a user can write (intervalMs must be finite there).
 */
export const RESTORE_WITHOUT_CHECKPOINTING: CheckpointConfig = Object.freeze({ ...CHECKPOINT_CONFIG_DEFAULTS, intervalMs: Number.POSITIVE_INFINITY });

type Check = (value: unknown) => boolean;
const positive: Check = (v) => typeof v === "number" && Number.isFinite(v) && v > 0;
const nonNegative: Check = (v) => typeof v === "number" && Number.isFinite(v) && v >= 0;
const atLeastOne: Check = (v) => Number.isInteger(v) && (v as number) >= 1;
const CHECKS: Record<keyof CheckpointConfig, readonly [Check, string]> = {
  intervalMs: [positive, "a finite number of milliseconds > 0"],
  mode: [(v) => v === "exactly-once" || v === "at-least-once", `"exactly-once" or "at-least-once"`],
  timeoutMs: [positive, "a finite number of milliseconds > 0"],
  minPauseMs: [nonNegative, "a finite number of milliseconds >= 0"],
  maxConcurrent: [atLeastOne, "an integer >= 1"],
  tolerableFailures: [(v) => v === Number.POSITIVE_INFINITY || (Number.isInteger(v) && (v as number) >= 0), "an integer >= 0 or Infinity"],
  retained: [atLeastOne, "an integer >= 1"],
  allowRecoveryBehindCommitted: [(v) => typeof v === "boolean", "true or false"],
};

/** Fills in defaults and validates; throws INVALID_CHECKPOINT_CONFIG naming the first bad field. */
export function resolveCheckpointConfig(input: CheckpointConfigInput): CheckpointConfig {
  for (const field of Object.keys(input)) {
    if (!(field in CHECKS)) throw invalid(`unknown field '${field}' (known: ${Object.keys(CHECKS).join(", ")})`);
  }
  const config: CheckpointConfig = { ...CHECKPOINT_CONFIG_DEFAULTS, ...stripUndefined(input) };
  for (const [field, [check, expected]] of Object.entries(CHECKS)) {
    const value = config[field as keyof CheckpointConfig];
    if (!check(value)) throw invalid(`'${field}' must be ${expected}, got ${String(value)}`);
  }
  return Object.freeze(config);
}

function stripUndefined(input: CheckpointConfigInput): CheckpointConfigInput {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as CheckpointConfigInput;
}

function invalid(detail: string): EddyError {
  return new EddyError("INVALID_CHECKPOINT_CONFIG", `invalid checkpoint configuration: ${detail}`);
}
