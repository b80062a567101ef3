/**
 * checkpoint/ — the protocol of asynchronous barrier snapshots (Carbone et al. 2015), as pure state
 * machines: the barrier aligner (one per task), the checkpoint coordinator (one per job) and the
 * checkpoint lifecycle around it (savepoint queue, stop-with-savepoint, final checkpoint). See
 * docs/design/checkpoint-protocol.md. What is persisted, and how each version of it is read, is in
 * checkpoint/format/ (its index.ts lists the formats).
 *
 * May import: core/, state/ and checkpoint/ only.
 *
 * Invariants:
 * - No I/O, no timers, no clocks: time comes in as `now` arguments, effects go out as returned
 *   results or commands that the caller performs. Everything here is tested without threads.
 * - Nothing here is called concurrently: an aligner belongs to its task thread, the coordinator and
 *   the lifecycle to the coordinating thread.
 * - A checkpoint id is triggered at most once, ids increase, and a checkpoint exists (is restorable)
 *   only once its manifest is committed; tasks learn of completion only after that.
 */

export { BarrierAligner, NO_ALIGNER_ACTION } from "./barrier-aligner.ts";
export type { AlignerResult, CheckpointingMode } from "./barrier-aligner.ts";
export { CHECKPOINT_CONFIG_DEFAULTS, resolveCheckpointConfig } from "./checkpoint-config.ts";
export type { CheckpointConfig, CheckpointConfigInput } from "./checkpoint-config.ts";
export { CheckpointCoordinator, STATS_HISTORY } from "./coordinator.ts";
export { CheckpointLifecycle, SAVEPOINT_QUEUE_TIMEOUT_MS } from "./checkpoint-lifecycle.ts";
export type { LifecycleCommand, LifecycleOptions, LifecyclePhase, SavepointStop } from "./checkpoint-lifecycle.ts";
export type {
  CheckpointStats,
  CheckpointStatus,
  CoordinatorCommand,
  CoordinatorOptions,
  TaskAck,
  TriggerOutcome,
} from "./coordinator.ts";
