/**
 * Configuration keys (Flink's names where Flink has one), for `eddy run -D key=value` and
 * `RunOptions.config`. Each key maps onto a run option; explicit options and flags win over keys.
 * Unknown keys and bad values are refused with the key named, never ignored.
 */
import { EddyError } from "../core/errors.ts";
import type { CheckpointConfigInput } from "../checkpoint/checkpoint-config.ts";
import type { RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import { stateBackendSpec, type StateBackendSpec } from "../state/state-backend-spec.ts";
import { PARALLEL_SCAVENGE_SETTINGS, type ParallelScavengeSetting } from "./parallel-scavenge.ts";

/** What the keys configure (a subset of RunOptions). */
export interface ConfiguredOptions {
  checkpointing?: CheckpointConfigInput;
  checkpointDir?: string;
  savepointDir?: string;
  restartStrategy?: RestartStrategyConfig;
  watchdogTimeoutMs?: number;
  maxWorkerHeapMb?: number;
  /** taskmanager.gc.parallel-scavenge (parallel-scavenge.ts). */
  parallelScavenge?: ParallelScavengeSetting;
  /** taskmanager.scheduling.source-yield-rounds (ExecutorOptions.sourceYieldRounds). */
  sourceYieldRounds?: number;
  metricsEnabled?: boolean;
  localAggregation?: boolean;
  /** state.verify-copy-none (runtime/operators/copy-none-check.ts). */
  verifyCopyNone?: boolean;
  /** pipeline.auto-watermark-interval: wins over the job's `env.setAutoWatermarkInterval`. */
  autoWatermarkIntervalMs?: number;
  /** The control API's port (read by the CLI, which starts it; startJob ignores it). */
  restPort?: number;
  /** The keyed state backend keys (state.backend, state.backend.disk.*, state.backend.heap.*), each checked; see resolveStateBackend. */
  stateBackend?: BackendKeys;
}

/** The state.backend* keys of a run, each checked (the heap* ones are `state.backend.heap.*`). */
export interface BackendKeys {
  kind?: "heap" | "disk";
  dir?: string;
  cacheSize?: number;
  cacheBytes?: number;
  incremental?: boolean;
  maxChainLength?: number;
  localRecovery?: boolean;
  heapIncremental?: boolean;
  heapMaxChainLength?: number;
}

interface KeySpec {
  readonly description: string;
  readonly apply: (value: string, into: Draft) => void;
}

/** Keys set plain options directly; checkpoint and restart keys gather parts, checked at the end. */
interface Draft extends Omit<ConfiguredOptions, "checkpointing" | "restartStrategy"> {
  checkpoint: { -readonly [K in keyof CheckpointConfigInput]?: CheckpointConfigInput[K] };
  restart: Record<string, string>;
  backend: BackendKeys;
}

/** What a duration looks like, for messages: the one syntax of configuration keys and flags. */
export const DURATION_SYNTAX = "a duration such as 500ms, 10s, 5min or 1h (a bare number is ms)";

/** Milliseconds of a duration (`500`, `500ms`, `10s`, `5min`, `1h`), or undefined when it is not one. */
export function parseDuration(value: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|min|h)?$/.exec(value.trim());
  if (m === null) return undefined;
  const n = Number(m[1]);
  const unit = m[2] ?? "ms";
  return n * (unit === "ms" ? 1 : unit === "s" ? 1_000 : unit === "min" ? 60_000 : 3_600_000);
}

const ms = (key: string, value: string): number => {
  const n = parseDuration(value);
  if (n === undefined) throw invalid(key, value, DURATION_SYNTAX);
  return n;
};

const int = (key: string, value: string): number => {
  if (!/^\d+$/.test(value.trim())) throw invalid(key, value, "a non-negative integer");
  return Number(value);
};

const bool = (key: string, value: string): boolean => {
  const v = value.trim().toLowerCase();
  if (v !== "true" && v !== "false") throw invalid(key, value, "true or false");
  return v === "true";
};

/** The documented keys (README), with what each sets. */
export const CONFIG_KEYS: Readonly<Record<string, KeySpec>> = {
  "execution.checkpointing.interval": {
    description: "checkpoint every this long (turns checkpointing on)",
    apply: (v, d) => void (d.checkpoint.intervalMs = ms("execution.checkpointing.interval", v)),
  },
  "execution.checkpointing.mode": {
    description: "EXACTLY_ONCE or AT_LEAST_ONCE",
    apply: (v, d) => {
      const mode = v.trim().toLowerCase().replace(/_/g, "-");
      if (mode !== "exactly-once" && mode !== "at-least-once") throw invalid("execution.checkpointing.mode", v, "EXACTLY_ONCE or AT_LEAST_ONCE");
      d.checkpoint.mode = mode;
    },
  },
  "execution.checkpointing.timeout": {
    description: "a checkpoint not complete after this long fails",
    apply: (v, d) => void (d.checkpoint.timeoutMs = ms("execution.checkpointing.timeout", v)),
  },
  "execution.checkpointing.min-pause": {
    description: "least time between the end of one checkpoint and the next",
    apply: (v, d) => void (d.checkpoint.minPauseMs = ms("execution.checkpointing.min-pause", v)),
  },
  "execution.checkpointing.max-concurrent-checkpoints": {
    description: "most checkpoints in progress at once",
    apply: (v, d) => void (d.checkpoint.maxConcurrent = int("execution.checkpointing.max-concurrent-checkpoints", v)),
  },
  "execution.checkpointing.tolerable-failed-checkpoints": {
    description: "consecutive failed checkpoints tolerated before the job fails",
    apply: (v, d) => void (d.checkpoint.tolerableFailures = int("execution.checkpointing.tolerable-failed-checkpoints", v)),
  },
  "execution.checkpointing.recovery.allow-behind-committed": {
    description: "let recovery restore a checkpoint older than committed output (two-phase sinks then duplicate it)",
    apply: (v, d) => void (d.checkpoint.allowRecoveryBehindCommitted = bool("execution.checkpointing.recovery.allow-behind-committed", v)),
  },
  "state.checkpoints.num-retained": {
    description: "completed checkpoints kept",
    apply: (v, d) => void (d.checkpoint.retained = int("state.checkpoints.num-retained", v)),
  },
  "state.checkpoints.dir": {
    description: "root directory of checkpoints",
    apply: (v, d) => void (d.checkpointDir = v),
  },
  "state.savepoints.dir": {
    description: "where savepoints are written by default",
    apply: (v, d) => void (d.savepointDir = v),
  },
  "execution.watchdog.timeout": {
    description: "a call into user code not returned after this long fails the job, naming the task (0: never; default 60s)",
    apply: (v, d) => void (d.watchdogTimeoutMs = ms("execution.watchdog.timeout", v)),
  },
  "taskmanager.memory.task.heap.size": {
    description: "heap limit of each worker thread, e.g. 512m or 2g (default: Node's); running out fails the job, without restarts",
    apply: (v, d) => {
      const m = /^(\d+)\s*(m|mb|g|gb)$/i.exec(v.trim());
      if (m === null || Number(m[1]) === 0) throw invalid("taskmanager.memory.task.heap.size", v, "a size such as 512m or 2g");
      d.maxWorkerHeapMb = Number(m[1]) * (m[2]!.toLowerCase().startsWith("g") ? 1_024 : 1);
    },
  },
  "taskmanager.gc.parallel-scavenge": {
    description:
      "V8's parallel scavenger for worker threads: auto (default: off while a job has as many worker threads as cores, whose helper threads would only compete with them), false (off while the job runs) or true (left on); process-wide, docs/performance.md",
    apply: (v, d) => {
      const setting = v.trim().toLowerCase();
      if (!(PARALLEL_SCAVENGE_SETTINGS as readonly string[]).includes(setting)) throw invalid("taskmanager.gc.parallel-scavenge", v, "auto, true or false");
      d.parallelScavenge = setting as ParallelScavengeSetting;
    },
  },
  "taskmanager.scheduling.source-yield-rounds": {
    description:
      "while a worker thread's input from another thread is half full, its sources sit out up to this many rounds in a row, so the other thread reads more of the splits handed out on request (default 16; 0: never; docs/performance.md)",
    apply: (v, d) => void (d.sourceYieldRounds = int("taskmanager.scheduling.source-yield-rounds", v)),
  },
  "metrics.enabled": {
    description: "per-record metrics: records in/out per operator, busy time (default true; false saves their cost, docs/metrics.md)",
    apply: (v, d) => void (d.metricsEnabled = bool("metrics.enabled", v)),
  },
  "pipeline.local-aggregation": {
    description: "windows by reduce/aggregate pre-aggregate in front of the keyBy (default true; false sends every element on at once; docs/design/windows-state.md)",
    apply: (v, d) => void (d.localAggregation = bool("pipeline.local-aggregation", v)),
  },
  "state.verify-copy-none": {
    description:
      'check that no value of a state declared copy: "none" is changed in place without being written back, failing the job with STATE_MUTATED_IN_PLACE (default false; costs an encoding per state access: for tests, docs/state-backends.md)',
    apply: (v, d) => void (d.verifyCopyNone = bool("state.verify-copy-none", v)),
  },
  "pipeline.auto-watermark-interval": {
    description: "how often periodic watermark generators (forBoundedOutOfOrderness) emit, in processing time (default 200ms; lower it for backfills of many keys and short windows, docs/performance.md)",
    apply: (v, d) => {
      const interval = ms("pipeline.auto-watermark-interval", v);
      if (!(interval > 0)) throw invalid("pipeline.auto-watermark-interval", v, "a positive duration such as 200ms");
      d.autoWatermarkIntervalMs = interval;
    },
  },
  "rest.port": {
    description: "port of the job's control API (GET /metrics, savepoints...): a fixed one for Prometheus to scrape (default 0: any free port)",
    apply: (v, d) => {
      const port = int("rest.port", v);
      if (port > 65_535) throw invalid("rest.port", v, "a port number, 0-65535");
      d.restPort = port;
    },
  },
  "state.backend": {
    description: "heap (default) or disk: where keyed state lives (docs/state-backends.md)",
    apply: (v, d) => {
      const kind = v.trim().toLowerCase();
      if (kind !== "heap" && kind !== "disk") throw invalid("state.backend", v, "heap or disk");
      d.backend.kind = kind as "heap" | "disk";
    },
  },
  "state.backend.disk.dir": {
    description: "root directory of the disk backend's local stores (default ./.eddy/state)",
    apply: (v, d) => {
      if (v.trim() === "") throw invalid("state.backend.disk.dir", v, "a directory path");
      d.backend.dir = v;
    },
  },
  "state.backend.disk.cache-size": {
    description: "keys the disk backend keeps on the heap per operator subtask (default 10000000; the bytes bound, state.backend.disk.cache-bytes, is usually reached first)",
    apply: (v, d) => {
      const n = int("state.backend.disk.cache-size", v);
      if (n < 1) throw invalid("state.backend.disk.cache-size", v, "a positive integer");
      d.backend.cacheSize = n;
    },
  },
  "state.backend.disk.cache-bytes": {
    description: "estimated heap bytes of the keys the disk backend keeps on the heap per operator subtask, e.g. 64m or 1g (default 256m, at most an eighth of the worker's heap limit; whichever of cache-size and cache-bytes is reached first bounds the cache)",
    apply: (v, d) => {
      const m = /^(\d+)\s*(k|kb|m|mb|g|gb)?$/i.exec(v.trim());
      if (m === null || Number(m[1]) === 0) throw invalid("state.backend.disk.cache-bytes", v, "a positive size such as 268435456, 64m or 1g");
      const unit = m[2]?.toLowerCase()[0];
      d.backend.cacheBytes = Number(m[1]) * (unit === "g" ? 2 ** 30 : unit === "m" ? 2 ** 20 : unit === "k" ? 2 ** 10 : 1);
    },
  },
  "state.backend.disk.incremental": {
    description: "true (default) or false: checkpoints of the disk backend write only what changed since the previous one (savepoints are always full)",
    apply: (v, d) => void (d.backend.incremental = bool("state.backend.disk.incremental", v)),
  },
  "state.backend.disk.max-chain-length": {
    description: "incremental checkpoints after a full one before the next full one (default 10; 0: every checkpoint full)",
    apply: (v, d) => {
      const n = int("state.backend.disk.max-chain-length", v);
      if (n < 0) throw invalid("state.backend.disk.max-chain-length", v, "a non-negative integer");
      d.backend.maxChainLength = n;
    },
  },
  "state.backend.disk.local-recovery": {
    description: "true or false (default): keep each subtask's disk store so that a restore on the same machine rolls it back to the checkpoint instead of rebuilding it (needs incremental checkpoints)",
    apply: (v, d) => void (d.backend.localRecovery = bool("state.backend.disk.local-recovery", v)),
  },
  "state.backend.heap.incremental": {
    description: "true or false (default): checkpoints of the heap backend write only what changed since the previous one (savepoints are always full)",
    apply: (v, d) => void (d.backend.heapIncremental = bool("state.backend.heap.incremental", v)),
  },
  "state.backend.heap.max-chain-length": {
    description: "with state.backend.heap.incremental: incremental checkpoints after a full one before the next full one (default 10; 0: every checkpoint full)",
    apply: (v, d) => {
      const n = int("state.backend.heap.max-chain-length", v);
      if (n < 0) throw invalid("state.backend.heap.max-chain-length", v, "a non-negative integer");
      d.backend.heapMaxChainLength = n;
    },
  },
  "restart-strategy.type": { description: "none, fixed-delay, exponential-delay or failure-rate", apply: (v, d) => void (d.restart.type = v.trim()) },
  "restart-strategy.fixed-delay.attempts": { description: "restarts allowed", apply: (v, d) => void (d.restart.attempts = v) },
  "restart-strategy.fixed-delay.delay": { description: "wait before each restart", apply: (v, d) => void (d.restart.delay = v) },
  "restart-strategy.exponential-delay.initial-backoff": { description: "first wait", apply: (v, d) => void (d.restart.initial = v) },
  "restart-strategy.exponential-delay.max-backoff": { description: "longest wait", apply: (v, d) => void (d.restart.max = v) },
  "restart-strategy.failure-rate.max-failures-per-interval": { description: "failures allowed per interval", apply: (v, d) => void (d.restart.maxFailures = v) },
  "restart-strategy.failure-rate.failure-rate-interval": { description: "the interval", apply: (v, d) => void (d.restart.interval = v) },
  "restart-strategy.failure-rate.delay": { description: "wait before each restart", apply: (v, d) => void (d.restart.rateDelay = v) },
};

/** Run options from configuration entries; throws naming the first unknown key or bad value. */
export function optionsFromConfig(entries: Readonly<Record<string, string>>): ConfiguredOptions {
  const draft: Draft = { checkpoint: {}, restart: {}, backend: {} };
  for (const [key, value] of Object.entries(entries)) {
    const spec = CONFIG_KEYS[key];
    if (spec === undefined) {
      throw new EddyError("UNKNOWN_CONFIG_KEY", `unknown configuration key '${key}' (known: ${Object.keys(CONFIG_KEYS).join(", ")})`);
    }
    spec.apply(value, draft);
  }
  const { checkpoint, restart, backend, ...plain } = draft;
  const out: ConfiguredOptions = { ...plain };
  if (Object.keys(backend).length > 0) out.stateBackend = backend;
  if (Object.keys(checkpoint).length > 0) {
    if (checkpoint.intervalMs === undefined) {
      throw new EddyError("INVALID_CONFIG", "execution.checkpointing.* keys need execution.checkpointing.interval");
    }
    out.checkpointing = checkpoint as CheckpointConfigInput;
  }
  if (Object.keys(restart).length > 0) out.restartStrategy = restartStrategy(restart);
  return out;
}

/**
 * The state backend of a run: the `state.backend*` keys over what the job set
 * (`env.setStateBackend`); undefined: the heap backend. `state.backend.disk.*` keys refine a
 * disk backend chosen either way, and are refused when the backend is not the disk backend.
 */
export function resolveStateBackend(keys: ConfiguredOptions["stateBackend"], fromJob: StateBackendSpec | undefined): StateBackendSpec | undefined {
  if (keys === undefined) return fromJob;
  const kind = keys.kind ?? fromJob?.kind ?? "heap";
  const diskKeys = keys.dir !== undefined || keys.cacheSize !== undefined || keys.cacheBytes !== undefined || keys.incremental !== undefined || keys.maxChainLength !== undefined || keys.localRecovery !== undefined;
  const heapKeys = keys.heapIncremental !== undefined || keys.heapMaxChainLength !== undefined;
  if (kind === "heap") {
    if (diskKeys) throw new EddyError("INVALID_CONFIG", "state.backend.disk.* keys need the disk backend: add -D state.backend=disk (or env.setStateBackend(\"disk\"))");
    const job = fromJob?.kind === "heap" ? fromJob : undefined;
    return stateBackendSpec("heap", { incremental: keys.heapIncremental ?? job?.incremental, maxChainLength: keys.heapMaxChainLength ?? job?.maxChainLength });
  }
  if (heapKeys) throw new EddyError("INVALID_CONFIG", "state.backend.heap.* keys need the heap backend; the disk backend's are state.backend.disk.incremental and state.backend.disk.max-chain-length");
  const base = fromJob?.kind === "disk" ? fromJob : undefined;
  return stateBackendSpec("disk", {
    dir: keys.dir ?? base?.dir,
    cacheSize: keys.cacheSize ?? base?.cacheSize,
    cacheBytes: keys.cacheBytes ?? base?.cacheBytes,
    incremental: keys.incremental ?? base?.incremental,
    maxChainLength: keys.maxChainLength ?? base?.maxChainLength,
    localRecovery: keys.localRecovery ?? base?.localRecovery,
  });
}

function restartStrategy(r: Record<string, string>): RestartStrategyConfig {
  const type = r.type;
  const dur = (key: string, v: string | undefined, fallback: number): number => (v === undefined ? fallback : ms(key, v));
  switch (type) {
    case "none":
      return { type: "none" };
    case "fixed-delay":
      return {
        type: "fixed-delay",
        attempts: r.attempts === undefined ? 3 : int("restart-strategy.fixed-delay.attempts", r.attempts),
        delayMs: dur("restart-strategy.fixed-delay.delay", r.delay, 1_000),
      };
    case "exponential-delay":
      return {
        type: "exponential-delay",
        initialDelayMs: dur("restart-strategy.exponential-delay.initial-backoff", r.initial, 1_000),
        maxDelayMs: dur("restart-strategy.exponential-delay.max-backoff", r.max, 60_000),
      };
    case "failure-rate":
      return {
        type: "failure-rate",
        maxFailures: r.maxFailures === undefined ? 3 : int("restart-strategy.failure-rate.max-failures-per-interval", r.maxFailures),
        intervalMs: dur("restart-strategy.failure-rate.failure-rate-interval", r.interval, 60_000),
        delayMs: dur("restart-strategy.failure-rate.delay", r.rateDelay, 1_000),
      };
    default:
      throw invalid("restart-strategy.type", type ?? "(missing)", "none, fixed-delay, exponential-delay or failure-rate (restart-strategy.* keys need it)");
  }
}

function invalid(key: string, value: string, expected: string): EddyError {
  return new EddyError("INVALID_CONFIG", `configuration key '${key}' has the value '${value}'; expected ${expected}`);
}
