/**
 * Starts a job in this process: builds the graph from the job definition, compiles the plan and
 * runs it, on worker threads (threaded mode) or on the calling thread (inline mode). Used by
 * `eddy run` and by `runJob` in tests.
 *
 * Mode: `inline` or `threads` when asked for. Otherwise threads when some operator has more than
 * one subtask and the job can be rebuilt on a worker (its module exports this definition; see
 * job-ref.ts), else inline. A manual clock means inline: it cannot be shared across threads.
 */
import { stateBackendFactory, type StateBackendSpec } from "../state/state-backend-spec.ts";
import { removeJobStores } from "../state/disk-keyed-state-backend.ts";
import { availableParallelism } from "node:os";
import { SystemClock, type Clock } from "../core/clock.ts";
import { describeCause, EddyError } from "../core/errors.ts";
import { silentLogger, type Logger, type LogLevel } from "../core/logger.ts";
import { failureFields } from "../core/user-frames.ts";
import { resolveJob, type JobDefinition } from "../api/define-job.ts";
import type { Plan } from "../graph/plan.ts";
import type { JobServices } from "../runtime/operator.ts";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import { InlineAttempt, type InlineOptions } from "./inline-attempt.ts";
import type { ExecutionAttempt, JobResult } from "./execution-attempt.ts";
import { join, resolve as resolvePath } from "node:path";
import { resolveCheckpointConfig, RESTORE_WITHOUT_CHECKPOINTING, type CheckpointConfigInput } from "../checkpoint/checkpoint-config.ts";
import type { CheckpointCounts, CheckpointStats } from "../checkpoint/coordinator.ts";
import { JobMetricsRegistry, type JobMetricsSnapshot } from "./job-metrics.ts";
import { createRestartStrategy, type RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import { DEFAULT_CHECKPOINT_ROOT_DIR, DEFAULT_SAVEPOINT_DIR, LocalCheckpointStorage } from "../checkpoint/storage.ts";
import type { JobState, JobStatus, ObservedJob, SavepointOptions, SavepointResult, StopOptions } from "./control.ts";
import { ExceptionHistory, type JobException } from "./exception-history.ts";
import { effectiveConfiguration } from "./effective-config.ts";
import type { QueryableJob, QueryLocation } from "../queryable/queryable.ts";
import { randomBytes } from "node:crypto";
import { DEFAULT_RESTART_STRATEGY, AttemptSupervisor, restorePointOf } from "./attempt-supervisor.ts";
import { normalizeStorageRef, type CheckpointStorageRef } from "../executor/checkpoint-storage-ref.ts";
import { optionsFromConfig, resolveStateBackend } from "./config.ts";
import type { CheckpointLocation } from "../executor/thread-protocol.ts";
import { locateJob, planJob, type JobRef } from "../executor/job-ref.ts";
import type { Placement } from "../executor/thread-protocol.ts";
import { ThreadedAttempt, type ThreadedCheckpointing } from "./threaded-attempt.ts";
import { workerCode, type WorkerBundle } from "../executor/worker-bundle.ts";
import { DEFAULT_SOURCE_YIELD_ROUNDS } from "../executor/task-executor.ts";

export type { ExecutionMode } from "./control.ts";
import type { ExecutionMode } from "./control.ts";
import type { ThreadProfile } from "./thread-profile.ts";

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
  /** Per-record metrics (default true; the `metrics.enabled` key). docs/metrics.md. */
  readonly metricsEnabled?: boolean;
  /** Local window aggregation holds partials (default true; the `pipeline.local-aggregation` key). */
  readonly localAggregation?: boolean;
  /**
   * Check that user functions change no value of a `copy: "none"` state in place without writing
   * it back (default false; the `state.verify-copy-none` key): for tests, docs/state-backends.md.
   */
  readonly verifyCopyNone?: boolean;
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

export interface JobExecution extends ObservedJob, QueryableJob {
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
  /** Every metric of the job, scoped job → task → operator → subtask, rates included (docs/metrics.md). */
  metricsSnapshot(): JobMetricsSnapshot;
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

  // Precedence: explicit options, then configuration keys, then what the job itself sets.
  const configured = optionsFromConfig(options.config ?? {});
  const checkpointInput = options.checkpointing ?? configured.checkpointing;
  const metricsEnabled = options.metricsEnabled ?? configured.metricsEnabled ?? true;
  const localAggregation = options.localAggregation ?? configured.localAggregation ?? true;
  const verifyCopyNone = options.verifyCopyNone ?? configured.verifyCopyNone ?? false;
  const parallelScavenge = configured.parallelScavenge ?? "auto";
  const sourceYieldRounds = configured.sourceYieldRounds ?? DEFAULT_SOURCE_YIELD_ROUNDS;
  const autoWatermarkIntervalMs = configured.autoWatermarkIntervalMs ?? env.getAutoWatermarkInterval();
  const stateBackend = resolveStateBackend(configured.stateBackend, env.getStateBackend());
  const checkpointConfig =
    checkpointInput === false ? undefined : checkpointInput !== undefined ? resolveCheckpointConfig(checkpointInput) : env.getCheckpointConfig();

  const runInline = (checkpoints?: InlineOptions["checkpoints"]): InlineAttempt => {
    const batchRecords = options.batchRecords ?? 512;
    return new InlineAttempt(plan, {
      checkpoints,
      clock: options.clock ?? new SystemClock(),
      logger,
      services,
      autoWatermarkIntervalMs,
      batchRecords,
      channelCapacityRecords: options.channelCapacityRecords ?? batchRecords * 16,
      maxRecordsPerSlice: batchRecords * 8,
      flushTimeoutMs: options.flushTimeoutMs ?? 2,
      yieldIntervalMs: 10,
      metricsEnabled,
      localAggregation,
      verifyCopyNone,
      stateBackend: stateBackendFactory(stateBackend),
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

  const runThreaded = (ref: JobRef, checkpointing?: ThreadedCheckpointing): ThreadedAttempt => {
    const batchRecords = options.batchRecords ?? 1024;
    const workers = options.workers ?? Math.min(availableParallelism(), largest);
    if (!Number.isInteger(workers) || workers < 1) {
      throw new EddyError("INVALID_WORKERS", `workers must be a positive integer, got ${workers}`);
    }
    return new ThreadedAttempt(plan, ref, {
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
      metricsEnabled,
      localAggregation,
      verifyCopyNone,
      autoWatermarkIntervalMs,
      stateBackend,
      maxWorkerHeapMb: options.maxWorkerHeapMb ?? configured.maxWorkerHeapMb,
      parallelScavenge,
      sourceYieldRounds,
      watchdogTimeoutMs: options.watchdogTimeoutMs ?? configured.watchdogTimeoutMs ?? DEFAULT_WATCHDOG_TIMEOUT_MS,
      token,
      checkpointing,
      bundle: workerBundle,
    });
  };

  const wantsInline =
    options.mode === "inline" || (options.mode === undefined && (options.clock !== undefined || (largest === 1 && options.preferThreads !== true)));
  if (options.mode === "threads" && options.clock !== undefined) {
    throw new EddyError("CLOCK_NEEDS_INLINE", "a custom clock cannot be shared with worker threads: use mode 'inline'");
  }
  /**
   * The one place the mode is chosen: the job's reference for worker threads (their code
   * prepared), or undefined for inline — asked for, or because the job cannot be rebuilt on a
   * worker (refused when threads were asked for).
   */
  const placeJob = async (): Promise<JobRef | undefined> => {
    if (wantsInline) return undefined;
    const found = await locateJob(job);
    if (!("reason" in found)) return prepareWorkers(found);
    if (options.mode === "threads") {
      throw new EddyError("JOB_NOT_IMPORTABLE", `job '${job.name}' cannot run on worker threads: ${found.reason}`);
    }
    logger.info("running inline", { job: job.name, reason: `job cannot run on worker threads: ${found.reason}` });
    return undefined;
  };
  const jobId = jobIdOf(job, options);
  const savepointRoot = resolvePath(options.savepointDir ?? configured.savepointDir ?? DEFAULT_SAVEPOINT_DIR);
  // A restore into a job without checkpointing runs with the restored state and no periodic
  // checkpoints, and by default without restarts (Flink's default without checkpointing).
  const restoreOnly = restore !== undefined && checkpointConfig === undefined;
  if (restoreOnly) logger.info("restoring into a job without checkpointing: no periodic checkpoints", { job: job.name });
  const supervisedConfig = restoreOnly ? RESTORE_WITHOUT_CHECKPOINTING : checkpointConfig;
  const restartStrategy =
    supervisedConfig === undefined
      ? undefined
      : (options.restartStrategy ?? configured.restartStrategy ?? env.getRestartStrategy() ?? (restoreOnly ? { type: "none" } : DEFAULT_RESTART_STRATEGY));
  const location = checkpointLocationOf(job, options, configured);
  const configuration = effectiveConfiguration({
    given: options.config ?? {},
    parallelism: options.parallelism,
    maxParallelism: options.maxParallelism,
    checkpointing: supervisedConfig,
    checkpointDir: supervisedConfig === undefined ? undefined : join(location.rootDir, location.jobId),
    savepointDir: savepointRoot,
    restartStrategy,
    watchdogTimeoutMs: options.watchdogTimeoutMs ?? configured.watchdogTimeoutMs ?? DEFAULT_WATCHDOG_TIMEOUT_MS,
    maxWorkerHeapMb: options.maxWorkerHeapMb ?? configured.maxWorkerHeapMb,
    parallelScavenge,
    sourceYieldRounds,
    metricsEnabled,
    localAggregation,
    verifyCopyNone,
    autoWatermarkIntervalMs,
    stateBackend,
  });
  const handle = new LocalJobExecution({ jobId, plan, token, savepointRoot, results, logger, configuration, onEnded: localStoresAtEnd(stateBackend, plan.jobName, logger) });
  if (supervisedConfig !== undefined && restartStrategy !== undefined) {
    handle.supervise(
      new AttemptSupervisor({
        plan,
        config: supervisedConfig,
        location,
        savepointDir: savepointRoot,
        storageRef: options.checkpointStorage,
        strategy: createRestartStrategy(restartStrategy),
        restore,
        allowNonRestoredState: options.allowNonRestoredState === true,
        logger,
        ref: placeJob(),
        runInline: (checkpoints) => handle.attempting(runInline(checkpoints)),
        runThreaded: (ref, checkpointing) => handle.attempting(runThreaded(ref, checkpointing)),
        isCancelled: () => handle.cancelled,
        onFailure: (e, restarting) => handle.failed(e, restarting),
      }),
    );
  } else if (wantsInline) {
    // At once, not after a turn: a test with a manual clock drives the job right away.
    handle.runOnce(Promise.resolve(handle.attempting(runInline())));
  } else {
    handle.runOnce(placeJob().then((ref) => handle.attempting(ref === undefined ? runInline() : runThreaded(ref))));
  }
  return handle;
}

/**
 * Local recovery keeps each disk-backend subtask's store across attempts and processes
 * (state.backend.disk.local-recovery): a job that ended for good (finished, stopped, cancelled)
 * removes them; one that failed keeps them for a restart from its last checkpoint
 * (`--from-checkpoint`), saying where. Undefined without local recovery.
 */
function localStoresAtEnd(backend: StateBackendSpec | undefined, jobName: string, logger: Logger): ((status: JobStatus) => void) | undefined {
  if (backend?.kind !== "disk" || backend.localRecovery !== true) return undefined;
  const { dir } = backend;
  return (status) => {
    if (status === "failed") {
      logger.info("the local state stores are kept for a restart from the last checkpoint (state.backend.disk.local-recovery)", { job: jobName, dir });
      return;
    }
    try {
      const removed = removeJobStores(dir, jobName);
      if (removed !== undefined) logger.info("removed the job's local state stores: it ended", { job: jobName, dir: removed });
    } catch (e) {
      logger.warn("could not remove the job's local state stores", { job: jobName, dir, error: describeCause(e) });
    }
  };
}

/**
 * The handle of a job started in this process (what startJob returns): its status, savepoints
 * and stop, cancel, collected output, metrics, and where its queryable states are. It runs one
 * execution attempt (without checkpointing) or an AttemptSupervisor's attempts, one after the
 * other; `#attempt` is the current one.
 */
class LocalJobExecution implements JobExecution {
  readonly id: string;
  readonly name: string;
  readonly jobName: string;
  readonly plan: Plan;
  readonly token: string;
  readonly startedAtMs = Date.now();
  done!: Promise<JobResult>;
  mode!: Promise<ExecutionMode>;
  readonly #savepointRoot: string;
  readonly #results: ReadonlyMap<string, unknown[]>;
  readonly #logger: Logger;
  #attempt: ExecutionAttempt | undefined;
  #supervisor: AttemptSupervisor | undefined;
  #cancelled = false;
  #status: JobStatus = "running";
  /** The stop in progress (undefined: none, or it failed and the job went on). */
  #stopping: Promise<SavepointResult | undefined> | undefined;
  readonly #metrics: JobMetricsRegistry;
  readonly #exceptions = new ExceptionHistory();
  readonly #configuration: Readonly<Record<string, string>>;
  /** Set once, when `done` settles. */
  #endedAtMs: number | undefined;
  readonly #onEnded: ((status: JobStatus) => void) | undefined;

  constructor(o: {
    jobId: string;
    plan: Plan;
    token: string;
    savepointRoot: string;
    results: ReadonlyMap<string, unknown[]>;
    logger: Logger;
    configuration: Readonly<Record<string, string>>;
    /** Called once with how the job ended. */
    onEnded?: ((status: JobStatus) => void) | undefined;
  }) {
    this.id = o.jobId;
    this.name = this.jobName = o.plan.jobName;
    this.plan = o.plan;
    this.token = o.token;
    this.#savepointRoot = o.savepointRoot;
    this.#results = o.results;
    this.#logger = o.logger;
    this.#configuration = o.configuration;
    this.#onEnded = o.onEnded;
    this.#metrics = new JobMetricsRegistry(this, Date.now);
  }

  /** Runs the job as one attempt (no checkpointing, so no restarts). */
  runOnce(attempt: Promise<ExecutionAttempt>): void {
    this.mode = attempt.then((a) => a.mode);
    this.mode.catch(() => undefined);
    const done = attempt.then((a) => a.done);
    // Said once, at error level, with where it happened, as a supervisor says it when it gives up.
    done.catch((e: unknown) => {
      if (e instanceof EddyError && e.code === "JOB_CANCELLED") return;
      this.#logger.error("job failed", { job: this.jobName, ...failureFields(e) });
      this.failed(e, false);
    });
    this.#track(done);
  }

  /** Runs the job as the supervisor's attempts (checkpointing, restarts, savepoints). */
  supervise(supervisor: AttemptSupervisor): void {
    this.#supervisor = supervisor;
    this.mode = supervisor.mode;
    this.#track(supervisor.done);
  }

  /** `attempt` is now the job's current attempt; a cancel that came first reaches it. */
  attempting<A extends ExecutionAttempt>(attempt: A): A {
    this.#attempt = attempt;
    if (this.#cancelled) attempt.cancel();
    return attempt;
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  #track(done: Promise<JobResult>): void {
    this.done = done;
    // Meters need samples between scrapes (rates over up to a minute, meter-view.ts).
    const sampler = setInterval(() => this.#metrics.sample(), METRICS_SAMPLE_MS);
    sampler.unref();
    done.finally(() => clearInterval(sampler)).catch(() => undefined);
    done.then(
      () => void (this.#status = this.#stopping !== undefined ? "stopped" : "finished"),
      (e: unknown) => void (this.#status = e instanceof EddyError && e.code === "JOB_CANCELLED" ? "cancelled" : "failed"),
    ).finally(() => {
      this.#endedAtMs = Date.now();
      this.#onEnded?.(this.#status);
    });
  }

  /** An attempt failed with `e`; the job restarts after it or not. */
  failed(e: unknown, restarting: boolean): void {
    this.#exceptions.record(e, Date.now(), this.restarts, restarting);
  }

  get endedAtMs(): number | undefined {
    return this.#endedAtMs;
  }

  state(): JobState {
    return this.#status === "running" && this.#supervisor?.restarting === true ? "restarting" : this.#status;
  }

  checkpointHistory(): CheckpointStats[] {
    return this.#supervisor?.history() ?? [];
  }

  exceptions(): { total: number; newestFirst: JobException[] } {
    return { total: this.#exceptions.total, newestFirst: this.#exceptions.newestFirst() };
  }

  configuration(): Readonly<Record<string, string>> {
    return this.#configuration;
  }

  status(): JobStatus {
    return this.#status;
  }

  queryableStates(): QueryLocation[] {
    return this.#attempt?.queryable.list(this.#supervisor?.restoredFrom.length ?? 0) ?? [];
  }

  savepoint(options?: SavepointOptions): Promise<SavepointResult> {
    return this.#savepoint(options, undefined);
  }

  #savepoint(options: SavepointOptions | undefined, stop: { drain: boolean } | undefined): Promise<SavepointResult> {
    if (this.#status !== "running" && !(stop !== undefined && this.#status === "stopping")) {
      return Promise.reject(new EddyError("JOB_NOT_RUNNING", `job '${this.name}' is ${this.#status}: no savepoint`));
    }
    if (this.#supervisor === undefined) {
      return Promise.reject(
        new EddyError("SAVEPOINT_NEEDS_CHECKPOINTING", `job '${this.name}' runs without checkpointing; savepoints use its barriers: enable checkpointing (e.g. --checkpoint-interval)`),
      );
    }
    return this.#supervisor.savepoint(resolvePath(options?.dir ?? this.#savepointRoot), stop);
  }

  stop(options: StopOptions): Promise<SavepointResult | undefined> {
    if (this.#stopping !== undefined) return this.#stopping;
    if (this.#status !== "running") return Promise.reject(new EddyError("JOB_NOT_RUNNING", `job '${this.name}' is ${this.#status}`));
    if (options.drain === true && !options.savepoint) {
      return Promise.reject(new EddyError("INVALID_STOP", "drain needs a savepoint (stop({ savepoint: true, drain: true }))"));
    }
    this.#status = "stopping";
    if (options.savepoint) {
      const stopping = this.#savepoint(options, { drain: options.drain === true });
      this.#stopping = stopping;
      stopping.catch(() => {
        // The job goes on (or, after a failed drain, restarts): it is running again.
        if (this.#status === "stopping") this.#status = "running";
        this.#stopping = undefined;
      });
      return stopping;
    }
    this.#attempt?.stop();
    return (this.#stopping = Promise.resolve(undefined));
  }

  cancel(): void {
    this.#cancelled = true;
    this.#attempt?.cancel();
  }

  collected<T = unknown>(name: string): T[] {
    return [...(this.#results.get(name) ?? [])] as T[];
  }

  whenIdle(): Promise<void> {
    if (this.#attempt?.whenIdle !== undefined) return this.#attempt.whenIdle();
    return Promise.reject(new EddyError("NOT_SUPPORTED", "whenIdle() is available in inline mode only"));
  }

  get sourceRecords(): number {
    return this.#attempt?.sourceRecords ?? 0;
  }

  metrics(): SubtaskMetrics[] {
    return this.#attempt?.metrics() ?? [];
  }

  checkpoints(): CheckpointStats[] {
    return this.#supervisor?.stats() ?? [];
  }

  get restarts(): number {
    return this.#supervisor?.restoredFrom.length ?? 0;
  }

  get restoredFrom(): readonly (number | null)[] {
    return this.#supervisor?.restoredFrom ?? [];
  }

  checkpointCounts(): CheckpointCounts | undefined {
    return this.#supervisor?.counts();
  }

  lastCompletedCheckpoint(): CheckpointStats | undefined {
    return this.#supervisor?.lastCompleted();
  }

  metricsSnapshot(): JobMetricsSnapshot {
    return this.#metrics.snapshot();
  }

  #profiling = false;

  async profileCpu(thread: number, seconds: number): Promise<ThreadProfile> {
    const attempt = this.#attempt;
    if (attempt?.profileThread === undefined) {
      throw new EddyError("PROFILE_NOT_AVAILABLE", attempt === undefined ? "the job is not running" : "the job runs inline, on the main thread: there is no worker thread to profile");
    }
    if (this.#profiling) throw new EddyError("PROFILE_NOT_AVAILABLE", "another CPU profile of this job is being taken; one at a time");
    this.#profiling = true;
    try {
      return await attempt.profileThread(thread, seconds);
    } finally {
      this.#profiling = false;
    }
  }
}

/** How often the job's meters take a sample between scrapes. */
const METRICS_SAMPLE_MS = 1_000;

/** A job name as a directory name: letters, digits, '.', '_' and '-' only. */
/** The job's id: its checkpoint directory's name. */
function jobIdOf(job: JobDefinition, options: RunOptions): string {
  return options.jobId ?? fileSafe(job.name);
}

/** Where the job's checkpoints go: explicit options, then configuration keys, then the default root. */
function checkpointLocationOf(job: JobDefinition, options: RunOptions, configured: ReturnType<typeof optionsFromConfig>): CheckpointLocation {
  return { rootDir: resolvePath(options.checkpointDir ?? configured.checkpointDir ?? DEFAULT_CHECKPOINT_ROOT_DIR), jobId: jobIdOf(job, options) };
}

/**
 * The directory of the newest complete checkpoint (one with a manifest) of this job, by its
 * checkpoint directory and job id as `startJob` would place them, for `--from-latest-checkpoint`;
 * undefined when there is none; `searched`: the job's checkpoint directory. Its files are verified
 * when it is restored, and a damaged one fails the run naming the file: there is no fallback to an
 * older checkpoint, whose replay could repeat output the sinks committed since. Local storage only.
 */
export async function latestCheckpointOf(jobOrModule: unknown, options: RunOptions = {}): Promise<{ checkpoint: string | undefined; searched: string }> {
  const job = resolveJob(jobOrModule);
  const location = checkpointLocationOf(job, options, optionsFromConfig(options.config ?? {}));
  const storage = new LocalCheckpointStorage(location);
  const ids = await storage.listCheckpoints();
  let newest: number | undefined;
  for (let i = ids.length - 1; i >= 0 && newest === undefined; i--) if (await storage.hasManifest(ids[i]!)) newest = ids[i];
  return { checkpoint: newest === undefined ? undefined : storage.checkpointDir(newest), searched: join(location.rootDir, location.jobId) };
}

export function fileSafe(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (safe.length === 0 ? "job" : safe).slice(0, 100);
}
