/**
 * Starts a job in this process: builds the graph from the job definition, compiles the plan and
 * runs it, on worker threads (threaded mode) or on the calling thread (inline mode). Used by
 * `eddy run` and by `runJob` in tests.
 *
 * Mode: `inline` or `threads` when asked for. Otherwise threads when some operator has more than
 * one subtask and the job can be rebuilt on a worker (its module exports this definition; see
 * job-ref.ts), else inline. A manual clock means inline: it cannot be shared across threads.
 */
import { availableParallelism } from "node:os";
import { SystemClock, type Clock } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import { silentLogger, type Logger, type LogLevel } from "../core/logger.ts";
import { resolveJob } from "../api/define-job.ts";
import type { Plan } from "../graph/plan.ts";
import type { JobServices } from "../runtime/operator.ts";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import { InlineExecution, type InlineOptions } from "./inline-executor.ts";
import type { Execution, JobResult } from "./execution.ts";
import { resolve as resolvePath } from "node:path";
import { resolveCheckpointConfig, type CheckpointConfigInput } from "../checkpoint/checkpoint-config.ts";
import type { CheckpointStats } from "../checkpoint/coordinator.ts";
import { createRestartStrategy, type RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import { DEFAULT_CHECKPOINT_ROOT_DIR, DEFAULT_SAVEPOINT_DIR } from "../checkpoint/storage.ts";
import type { ControlledJob, JobStatus, SavepointOptions, SavepointResult, StopOptions } from "./control.ts";
import type { QueryableJob } from "../queryable/queryable.ts";
import { randomBytes } from "node:crypto";
import { DEFAULT_RESTART_STRATEGY, RecoveringJob, restorePointOf } from "./recovering-job.ts";
import { normalizeStorageRef, type CheckpointStorageRef } from "../executor/checkpoint-storage-ref.ts";
import { optionsFromConfig } from "./config.ts";
import type { CheckpointLocation } from "../executor/thread-protocol.ts";
import { locateJob, planJob, type JobRef } from "../executor/job-ref.ts";
import type { Placement } from "../executor/thread-protocol.ts";
import { ThreadedExecution, type ThreadedCheckpointing } from "./threaded-execution.ts";
import { workerCode, type WorkerBundle } from "../executor/worker-bundle.ts";

export type { ExecutionMode } from "./control.ts";
import type { ExecutionMode } from "./control.ts";

/** How long a call into user code may run before the watchdog fails the job (RunOptions.watchdogTimeoutMs). */
export const DEFAULT_WATCHDOG_TIMEOUT_MS = 60_000;

export interface RunOptions {
  /** Default parallelism for operators the job does not configure (the job's own setting wins). */
  readonly parallelism?: number;
  readonly maxParallelism?: number;
  /** See the file comment; default: decided from the plan and the job. */
  readonly mode?: ExecutionMode;
  /**
   * Without `mode`: run on worker threads even when every operator has parallelism 1 (one
   * worker), so that user code that never returns, exits the process or runs out of memory is
   * caught and reported as at any parallelism (what `eddy run` does). Default false (inline).
   */
  readonly preferThreads?: boolean;
  /**
   * On worker threads: a call into user code (a task's slice or `open()`) that has not returned
   * after this long fails the job, naming the task and where its thread is. 0: never. Default
   * 60 s (key `execution.watchdog.timeout`).
   */
  readonly watchdogTimeoutMs?: number;
  /** Worker threads in threaded mode (default: one per core, at most the largest parallelism). */
  readonly workers?: number;
  /** How subtasks are placed on workers (default "shared": subtask i of every operator on one worker). */
  readonly placement?: Placement;
  /** Processing time; a ManualClock in tests (implies inline mode). */
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** The lowest level workers forward to `logger` (default info). */
  readonly logLevel?: LogLevel;
  /** Where `print()` writes lines; process.stdout by default. */
  readonly stdout?: (line: string) => void;
  /** Records per channel batch (default 512 inline, 1024 between threads). */
  readonly batchRecords?: number;
  /**
   * Credit per channel in records (default 16 batches). Between worker threads the shared-memory
   * ring of each channel bounds it in bytes instead (see channelBufferBytes); setting this sizes
   * those rings from it (~32 bytes a record) unless channelBufferBytes is set too.
   */
  readonly channelCapacityRecords?: number;
  /**
   * Shared memory per channel between worker threads, in bytes (a power of two, 64 KiB-4 MiB;
   * rounded down). Default: 8 MiB per worker split among its inputs from other workers, 512 KiB
   * to 4 MiB each.
   */
  readonly channelBufferBytes?: number;
  /** A partly filled batch is sent once its oldest record is this old, in ms (default 2). */
  readonly flushTimeoutMs?: number;
  /** How often workers report metrics, in ms (default 500). */
  readonly metricsIntervalMs?: number;
  /** Heap limit per worker thread in MB (default: Node's). */
  readonly maxWorkerHeapMb?: number;
  /** Checkpointing for this run; overrides the job's `env.enableCheckpointing` (false: off). */
  readonly checkpointing?: CheckpointConfigInput | false;
  /** Root directory of checkpoints (default ./.eddy/checkpoints); a job's are under `<dir>/<jobId>/`. */
  readonly checkpointDir?: string;
  /** The job's id: its checkpoint directory name (default: the job name, made file-safe). */
  readonly jobId?: string;
  /** Overrides the job's restart strategy (default with checkpointing: fixed-delay, 3 attempts, 1 s). */
  readonly restartStrategy?: RestartStrategyConfig;
  /** Resume from a checkpoint directory (`<root>/<jobId>/chk-<n>`) instead of starting empty. */
  readonly fromCheckpoint?: string;
  /** Resume from a savepoint directory instead of starting empty. */
  readonly fromSavepoint?: string;
  /**
   * With fromSavepoint/fromCheckpoint: drop state of operators the job no longer has (by uid)
   * instead of refusing to start; what is dropped is logged.
   */
  readonly allowNonRestoredState?: boolean;
  /** Where savepoints go when a request names no directory (default ./.eddy/savepoints). */
  readonly savepointDir?: string;
  /**
   * Another CheckpointStorage than the local directory: a module exporting
   * `(location: { rootDir, jobId }) => CheckpointStorage` (each worker thread imports it).
   */
  readonly checkpointStorage?: CheckpointStorageRef;
  /** Configuration keys (README: "Configuration keys"), e.g. { "execution.checkpointing.interval": "10s" }. */
  readonly config?: Readonly<Record<string, string>>;
}

export interface JobExecution extends ControlledJob, QueryableJob {
  readonly jobName: string;
  readonly plan: Plan;
  /** Settles when a bounded job has finished (or the job failed / was cancelled). */
  readonly done: Promise<JobResult>;
  /** Where the job runs; settles once decided (at once for inline mode). */
  readonly mode: Promise<ExecutionMode>;
  /** What the collect sink named `name` has received so far. */
  collected<T = unknown>(name: string): T[];
  /** Resolves the next time every task waits for time or data (inline mode, for tests with a manual clock). */
  whenIdle(): Promise<void>;
  /** Records read by the sources so far. */
  readonly sourceRecords: number;
  /** Per-subtask counters: records and bytes in/out, time backpressured, watermark. */
  metrics(): SubtaskMetrics[];
  /** Statistics of recent checkpoints of the current run (empty without checkpointing). */
  checkpoints(): CheckpointStats[];
  /** Times the job restarted after a failure. */
  readonly restarts: number;
  /** Per restart, the checkpoint id it restored from (null: none was complete; started over). */
  readonly restoredFrom: readonly (number | null)[];
}

export function startJob(jobOrModule: unknown, options: RunOptions = {}): JobExecution {
  const job = resolveJob(jobOrModule);
  const logger = options.logger ?? silentLogger;
  const restore = restorePointOf({ checkpoint: options.fromCheckpoint, savepoint: options.fromSavepoint });
  // Operators that do not set their max parallelism keep the one their state was written with.
  const restoredMaxParallelism =
    restore === undefined ? undefined : Object.fromEntries(Object.entries(restore.manifest.operators).map(([uid, o]) => [uid, o.maxParallelism]));
  const { env, plan } = planJob(job, { ...options, restoredMaxParallelism }, logger);
  const results = new Map<string, unknown[]>();
  const committed = new Map<string, Set<string>>();
  const stdout = options.stdout ?? ((line: string) => void process.stdout.write(line + "\n"));
  const services: JobServices = {
    jobName: job.name,
    collect(name, value) {
      let list = results.get(name);
      if (list === undefined) results.set(name, (list = []));
      list.push(value);
    },
    commitOnce(name, txnId, values) {
      let done = committed.get(name);
      if (done === undefined) committed.set(name, (done = new Set()));
      if (done.has(txnId)) return;
      done.add(txnId);
      for (const v of values) services.collect(name, v);
    },
    writeStdout: stdout,
  };
  const largest = Math.max(1, ...plan.chains.map((c) => c.parallelism));
  /** Required by the job's control API and its queryable state servers. */
  const token = randomBytes(32).toString("hex");

  let execution: Execution | undefined;
  let cancelled = false;
  // Precedence: explicit options, then configuration keys, then what the job itself sets.
  const configured = optionsFromConfig(options.config ?? {});
  const checkpointInput = options.checkpointing ?? configured.checkpointing;
  const checkpointConfig =
    checkpointInput === false ? undefined : checkpointInput !== undefined ? resolveCheckpointConfig(checkpointInput) : env.getCheckpointConfig();
  let recoveringJob: RecoveringJob | undefined;

  const runInline = (checkpoints?: InlineOptions["checkpoints"]): InlineExecution => {
    const batchRecords = options.batchRecords ?? 512;
    return new InlineExecution(plan, {
      checkpoints,
      clock: options.clock ?? new SystemClock(),
      logger,
      services,
      autoWatermarkIntervalMs: env.getAutoWatermarkInterval(),
      batchRecords,
      channelCapacityRecords: options.channelCapacityRecords ?? batchRecords * 16,
      maxRecordsPerSlice: batchRecords * 8,
      flushTimeoutMs: options.flushTimeoutMs ?? 2,
      yieldIntervalMs: 10,
      token,
    });
  };

  /** The bundle workers start from (worker-bundle.ts); undefined: they load through tsx. */
  let workerBundle: WorkerBundle | undefined;
  const prepareWorkers = async (ref: JobRef): Promise<JobRef> => {
    const storage = normalizeStorageRef(options.checkpointStorage)?.module;
    const code = await workerCode(storage === undefined ? [ref.moduleUrl] : [ref.moduleUrl, storage]);
    workerBundle = code.bundle;
    if (code.bundle !== undefined) logger.debug("workers start from a bundle", { job: job.name, bundle: code.bundle.url });
    else logger.debug("workers load through tsx", { job: job.name, reason: code.reason });
    return ref;
  };

  const runThreaded = (ref: JobRef, checkpointing?: ThreadedCheckpointing): ThreadedExecution => {
    const batchRecords = options.batchRecords ?? 1024;
    const workers = options.workers ?? Math.min(availableParallelism(), largest);
    if (!Number.isInteger(workers) || workers < 1) {
      throw new EddyError("INVALID_WORKERS", `workers must be a positive integer, got ${workers}`);
    }
    return new ThreadedExecution(plan, ref, {
      workers,
      placement: options.placement ?? "shared",
      parallelism: options.parallelism,
      maxParallelism: options.maxParallelism,
      restoredMaxParallelism,
      logger,
      logLevel: options.logLevel ?? "info",
      services,
      batchRecords,
      channelCapacityRecords: options.channelCapacityRecords ?? batchRecords * 16,
      channelCapacityExplicit: options.channelCapacityRecords !== undefined,
      channelBufferBytes: options.channelBufferBytes,
      flushTimeoutMs: options.flushTimeoutMs ?? 2,
      maxRecordsPerSlice: batchRecords * 8,
      metricsIntervalMs: options.metricsIntervalMs ?? 500,
      maxWorkerHeapMb: options.maxWorkerHeapMb ?? configured.maxWorkerHeapMb,
      watchdogTimeoutMs: options.watchdogTimeoutMs ?? configured.watchdogTimeoutMs ?? DEFAULT_WATCHDOG_TIMEOUT_MS,
      token,
      checkpointing,
      bundle: workerBundle,
    });
  };

  let mode: Promise<ExecutionMode>;
  let done: Promise<JobResult>;
  const wantsInline =
    options.mode === "inline" || (options.mode === undefined && (options.clock !== undefined || (largest === 1 && options.preferThreads !== true)));
  if (options.mode === "threads" && options.clock !== undefined) {
    throw new EddyError("CLOCK_NEEDS_INLINE", "a custom clock cannot be shared with worker threads: use mode 'inline'");
  }
  const jobId = options.jobId ?? fileSafe(job.name);
  const savepointRoot = resolvePath(options.savepointDir ?? configured.savepointDir ?? DEFAULT_SAVEPOINT_DIR);
  if (restore !== undefined && checkpointConfig === undefined) {
    throw new EddyError("RESTORE_NEEDS_CHECKPOINTING", "restoring from a savepoint or checkpoint needs checkpointing enabled (e.g. --checkpoint-interval)");
  }
  if (checkpointConfig !== undefined) {
    const location: CheckpointLocation = {
      rootDir: resolvePath(options.checkpointDir ?? configured.checkpointDir ?? DEFAULT_CHECKPOINT_ROOT_DIR),
      jobId,
    };
    const recovering = new RecoveringJob({
      plan,
      config: checkpointConfig,
      location,
      savepointDir: savepointRoot,
      storageRef: options.checkpointStorage,
      strategy: createRestartStrategy(options.restartStrategy ?? configured.restartStrategy ?? env.getRestartStrategy() ?? DEFAULT_RESTART_STRATEGY),
      restore,
      allowNonRestoredState: options.allowNonRestoredState === true,
      logger,
      ref: wantsInline
        ? Promise.resolve(undefined)
        : locateJob(job).then((found) => {
            if (!("reason" in found)) return prepareWorkers(found);
            if (options.mode === "threads") {
              throw new EddyError("JOB_NOT_IMPORTABLE", `job '${job.name}' cannot run on worker threads: ${found.reason}`);
            }
            logger.info("running inline", { job: job.name, reason: `job cannot run on worker threads: ${found.reason}` });
            return undefined;
          }),
      runInline: (checkpoints) => (execution = runInline(checkpoints)),
      runThreaded: (ref, checkpointing) => (execution = runThreaded(ref, checkpointing)),
      isCancelled: () => cancelled,
    });
    recoveringJob = recovering;
    mode = recovering.mode;
    done = recovering.done;
  } else if (wantsInline) {
    execution = runInline();
    mode = Promise.resolve("inline");
    done = execution.done;
  } else {
    const decided = locateJob(job).then(async (found) => {
      if ("reason" in found) {
        if (options.mode === "threads") {
          throw new EddyError("JOB_NOT_IMPORTABLE", `job '${job.name}' cannot run on worker threads: ${found.reason}`);
        }
        logger.info("running inline", { job: job.name, reason: `job cannot run on worker threads: ${found.reason}` });
        execution = runInline();
      } else {
        const ref = await prepareWorkers(found);
        execution = runThreaded(ref);
      }
      if (cancelled) execution.cancel();
      return execution;
    });
    mode = decided.then((e) => e.mode);
    done = decided.then((e) => e.done);
    mode.catch(() => undefined);
  }

  let status: JobStatus = "running";
  /** The stop in progress (undefined: none, or it failed and the job went on). */
  let stopping: Promise<SavepointResult | undefined> | undefined;
  done.then(
    () => void (status = stopping !== undefined ? "stopped" : "finished"),
    (e: unknown) => void (status = e instanceof EddyError && e.code === "JOB_CANCELLED" ? "cancelled" : "failed"),
  );
  const savepoint = (opts: SavepointOptions | undefined, stop?: { drain: boolean }): Promise<SavepointResult> => {
    if (status !== "running" && !(stop !== undefined && status === "stopping")) {
      return Promise.reject(new EddyError("JOB_NOT_RUNNING", `job '${job.name}' is ${status}: no savepoint`));
    }
    if (recoveringJob === undefined) {
      return Promise.reject(
        new EddyError("SAVEPOINT_NEEDS_CHECKPOINTING", `job '${job.name}' runs without checkpointing; savepoints use its barriers: enable checkpointing (e.g. --checkpoint-interval)`),
      );
    }
    return recoveringJob.savepoint(resolvePath(opts?.dir ?? savepointRoot), stop);
  };

  return {
    id: jobId,
    token,
    queryableStates: () => execution?.queryable.list(recoveringJob?.restoredFrom.length ?? 0) ?? [],
    name: job.name,
    startedAtMs: Date.now(),
    status: () => status,
    savepoint: (opts) => savepoint(opts),
    stop: (opts: StopOptions) => {
      if (stopping !== undefined) return stopping;
      if (status !== "running") return Promise.reject(new EddyError("JOB_NOT_RUNNING", `job '${job.name}' is ${status}`));
      if (opts.drain === true && !opts.savepoint) {
        return Promise.reject(new EddyError("INVALID_STOP", "drain needs a savepoint (stop({ savepoint: true, drain: true }))"));
      }
      status = "stopping";
      if (opts.savepoint) {
        stopping = savepoint(opts, { drain: opts.drain === true });
        stopping.catch(() => {
          // The job goes on (or, after a failed drain, restarts): it is running again.
          if (status === "stopping") status = "running";
          stopping = undefined;
        });
      } else {
        execution?.stop();
        stopping = Promise.resolve(undefined);
      }
      return stopping;
    },
    jobName: job.name,
    plan,
    done,
    mode,
    collected: <T>(name: string) => [...(results.get(name) ?? [])] as T[],
    whenIdle: () => {
      if (execution?.whenIdle !== undefined) return execution.whenIdle();
      return Promise.reject(new EddyError("NOT_SUPPORTED", "whenIdle() is available in inline mode only"));
    },
    get sourceRecords() {
      return execution?.sourceRecords ?? 0;
    },
    metrics: () => execution?.metrics() ?? [],
    checkpoints: () => recoveringJob?.stats() ?? [],
    get restarts() {
      return recoveringJob?.restoredFrom.length ?? 0;
    },
    get restoredFrom() {
      return recoveringJob?.restoredFrom ?? [];
    },
    cancel: () => {
      cancelled = true;
      execution?.cancel();
    },
  };
}

/** A job name as a directory name: letters, digits, '.', '_' and '-' only. */
export function fileSafe(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (safe.length === 0 ? "job" : safe).slice(0, 100);
}
