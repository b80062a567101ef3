/**
 * The configuration a job runs with, as configuration keys (config.ts) and their values, for
 * `GET /v1/job/config`: what the options, the keys and the job itself decided, after defaults —
 * not only what was given. Keys given that configure nothing startJob resolves (`rest.port`, read
 * by the CLI) are listed as given. Nothing secret is a configuration key: the job's token is not.
 */
import type { StateBackendSpec } from "../state/state-backend-spec.ts";
import type { CheckpointConfig } from "../checkpoint/checkpoint-config.ts";
import type { RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import type { ParallelScavengeSetting } from "./parallel-scavenge.ts";

export interface ResolvedSettings {
  /** The keys as given (`-D key=value`, RunOptions.config). */
  readonly given: Readonly<Record<string, string>>;
  /** The default parallelism given (the job's operators may set their own). */
  readonly parallelism: number | undefined;
  readonly maxParallelism: number | undefined;
  /** Undefined: no checkpointing. */
  readonly checkpointing: CheckpointConfig | undefined;
  /** Where checkpoints go (absolute), with checkpointing. */
  readonly checkpointDir: string | undefined;
  readonly savepointDir: string;
  /** Undefined: no restarts (a job without checkpointing runs one attempt). */
  readonly restartStrategy: RestartStrategyConfig | undefined;
  readonly watchdogTimeoutMs: number;
  readonly maxWorkerHeapMb: number | undefined;
  readonly parallelScavenge: ParallelScavengeSetting;
  readonly sourceYieldRounds: number;
  readonly metricsEnabled: boolean;
  readonly localAggregation: boolean;
  readonly verifyCopyNone: boolean;
  readonly autoWatermarkIntervalMs: number;
  readonly stateBackend?: StateBackendSpec | undefined;
}

/** The effective keys and values, sorted by key. */
export function effectiveConfiguration(s: ResolvedSettings): Record<string, string> {
  const out: Record<string, string> = { ...s.given };
  const set = (key: string, value: string | number | boolean | undefined): void => {
    if (value !== undefined) out[key] = String(value);
  };
  const ms = (n: number): string => `${n}ms`;
  set("parallelism.default", s.parallelism);
  set("pipeline.max-parallelism", s.maxParallelism);
  const c = s.checkpointing;
  if (c !== undefined) {
    set("execution.checkpointing.interval", ms(c.intervalMs));
    set("execution.checkpointing.mode", c.mode === "exactly-once" ? "EXACTLY_ONCE" : "AT_LEAST_ONCE");
    set("execution.checkpointing.timeout", ms(c.timeoutMs));
    set("execution.checkpointing.min-pause", ms(c.minPauseMs));
    set("execution.checkpointing.max-concurrent-checkpoints", c.maxConcurrent);
    set("execution.checkpointing.tolerable-failed-checkpoints", c.tolerableFailures);
    set("execution.checkpointing.recovery.allow-behind-committed", c.allowRecoveryBehindCommitted);
    set("state.checkpoints.num-retained", c.retained);
    set("state.checkpoints.dir", s.checkpointDir);
  }
  set("state.savepoints.dir", s.savepointDir);
  set("execution.watchdog.timeout", ms(s.watchdogTimeoutMs));
  set("taskmanager.memory.task.heap.size", s.maxWorkerHeapMb === undefined ? undefined : `${s.maxWorkerHeapMb}m`);
  set("taskmanager.gc.parallel-scavenge", s.parallelScavenge);
  set("taskmanager.scheduling.source-yield-rounds", s.sourceYieldRounds);
  set("metrics.enabled", s.metricsEnabled);
  set("pipeline.local-aggregation", s.localAggregation);
  set("state.verify-copy-none", s.verifyCopyNone);
  set("pipeline.auto-watermark-interval", ms(s.autoWatermarkIntervalMs));
  const backend = s.stateBackend ?? { kind: "heap" };
  set("state.backend", backend.kind);
  if (backend.kind === "disk") {
    set("state.backend.disk.dir", backend.dir);
    set("state.backend.disk.cache-size", backend.cacheSize);
    set("state.backend.disk.cache-bytes", backend.cacheBytes);
    set("state.backend.disk.incremental", backend.incremental);
    set("state.backend.disk.max-chain-length", backend.maxChainLength);
    set("state.backend.disk.local-recovery", backend.localRecovery);
  } else {
    set("state.backend.heap.incremental", backend.incremental);
    set("state.backend.heap.max-chain-length", backend.maxChainLength);
  }
  const r = s.restartStrategy ?? { type: "none" };
  set("restart-strategy.type", r.type);
  switch (r.type) {
    case "none":
      break;
    case "fixed-delay":
      set("restart-strategy.fixed-delay.attempts", r.attempts);
      set("restart-strategy.fixed-delay.delay", ms(r.delayMs));
      break;
    case "exponential-delay":
      set("restart-strategy.exponential-delay.initial-backoff", ms(r.initialDelayMs));
      set("restart-strategy.exponential-delay.max-backoff", ms(r.maxDelayMs));
      break;
    case "failure-rate":
      set("restart-strategy.failure-rate.max-failures-per-interval", r.maxFailures);
      set("restart-strategy.failure-rate.failure-rate-interval", ms(r.intervalMs));
      set("restart-strategy.failure-rate.delay", ms(r.delayMs));
      break;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
