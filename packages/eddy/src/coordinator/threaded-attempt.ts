/**
 * Threaded mode: the calling thread is the coordinator (Flink's JobManager in miniature) and the
 * subtasks run on worker threads. The coordinator starts the workers, allocates a shared-memory
 * ring for every channel between two workers and connects every pair with a MessagePort for
 * doorbells (record frames flow between workers directly, never through here), runs the source
 * split enumerators, gathers collect/print output, logs and metrics, and ends the job. It talks
 * to each worker's task manager through the gateway protocol (executor/gateway.ts), as messages
 * on the worker's port. The job ends: when every
 * worker has finished, or at the first failure — a task error, a crashed worker, a worker that
 * exits on its own (e.g. `process.exit` in user code) or runs out of memory. On failure or
 * cancellation every worker is terminated, so no thread outlives the job.
 */
import type { StateBackendSpec } from "../state/state-backend-spec.ts";
import { MessageChannel, Worker, type MessagePort } from "node:worker_threads";
import { describeCause, EddyError } from "../core/errors.ts";
import type { Logger, LogLevel } from "../core/logger.ts";
import type { CheckpointTargets } from "./checkpoint-runner.ts";
import type { Plan, PlanNode } from "../graph/plan.ts";
import type { JobServices } from "../runtime/operator.ts";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import { broadcastCheckpointTargets, type ExecutionAttempt, type JobResult } from "./execution-attempt.ts";
import { SourceCoordinators } from "./source-coordinators.ts";
import { planFingerprint, type JobRef } from "../executor/job-ref.ts";
import { createFrameRing } from "../runtime/channels/frame-ring.ts";
import { createDoorbells } from "../executor/doorbells.ts";
import { crossWorkerChannels, placeSubtasks, remoteChannelSizing, type Placement, type WorkerCheckpointing, type WorkerInit } from "../executor/thread-protocol.ts";
import {
  checkProtocolVersion,
  deserializeError,
  dispatchGatewayMessage,
  JOB_MASTER_METHODS,
  remoteGateway,
  TASK_MANAGER_METHODS,
  type JobMasterGateway,
  type TaskManagerGateway,
} from "../executor/gateway.ts";
import { QueryableLocations } from "../queryable/queryable-serving.ts";
import type { WorkerBundle } from "../executor/worker-bundle.ts";
import { StackMapper } from "../executor/source-map-stack.ts";
import { readThreadStack } from "./thread-stack.ts";
import { profileThread, type ThreadProfile } from "./thread-profile.ts";
import { createBusyBoardBuffer, TaskWatchdog, type StuckTask } from "../executor/task-watchdog.ts";
import { commandLineConditions } from "../executor/conditions.ts";
import { holdSerialScavenge, type ParallelScavengeSetting } from "./parallel-scavenge.ts";

export interface ThreadedOptions {
  readonly workers: number;
  readonly placement: Placement;
  readonly parallelism: number | undefined;
  readonly maxParallelism: number | undefined;
  readonly restoredMaxParallelism: Readonly<Record<string, number>> | undefined;
  /** The job's token (queryable state servers require it). */
  readonly token: string;
  readonly logger: Logger;
  readonly logLevel: LogLevel;
  readonly services: JobServices;
  readonly batchRecords: number;
  readonly channelCapacityRecords: number;
  /** Whether the user set channelCapacityRecords (it then sizes cross-worker rings too). */
  readonly channelCapacityExplicit: boolean;
  /** Shared memory per cross-worker channel; undefined: see remoteChannelSizing. */
  readonly channelBufferBytes: number | undefined;
  readonly flushTimeoutMs: number;
  readonly maxRecordsPerSlice: number;
  readonly metricsIntervalMs: number;
  /** Per-record metrics (`metrics.enabled`). */
  readonly metricsEnabled: boolean;
  readonly localAggregation: boolean;
  /** `state.verify-copy-none`. */
  readonly verifyCopyNone: boolean;
  /** How often periodic watermark generators emit (the key or the job's setting, resolved). */
  readonly autoWatermarkIntervalMs: number;
  /** The keyed state backend (undefined: heap), built by each worker. */
  readonly stateBackend: StateBackendSpec | undefined;
  /** Heap limit per worker in MB (Worker resourceLimits.maxOldGenerationSizeMb). */
  readonly maxWorkerHeapMb: number | undefined;
  /** Whether V8's parallel scavenger is switched off while the workers run (parallel-scavenge.ts). */
  readonly parallelScavenge: ParallelScavengeSetting;
  /** ExecutorOptions.sourceYieldRounds of every worker (taskmanager.scheduling.source-yield-rounds). */
  readonly sourceYieldRounds: number;
  /** Checkpointing: what workers need, where acknowledgements go, restored enumerator state. */
  readonly checkpointing?: ThreadedCheckpointing | undefined;
  /** The bundle workers start from (worker-bundle.ts); undefined: they load through tsx. */
  readonly bundle: WorkerBundle | undefined;
  /** A call into user code that has not returned after this long fails the job (task-watchdog.ts); 0: never. */
  readonly watchdogTimeoutMs: number;
}

/** Checkpointing: what workers need, and where their reports about checkpoints go. */
export interface ThreadedCheckpointing extends Pick<JobMasterGateway, "acknowledgeCheckpoint" | "declineCheckpoint" | "taskFinished"> {
  readonly workers: WorkerCheckpointing;
  /** Restored enumerator state by source operator id; undefined: a fresh start. */
  readonly enumeratorState: ((operatorId: string) => unknown) | undefined;
}

/** Where a worker starts without a bundle: registers tsx, then runs thread-worker.ts. */
const LOADER_ENTRY = new URL("../executor/thread-worker-entry.js", import.meta.url);

/** How long a shut-down worker (cancelled, not stuck) gets to close its tasks before it is terminated. */
const WORKER_END_TIMEOUT_MS = 10_000;

/** A worker inside one call of user code this long while being shut down is not closing its tasks. */
const IN_USER_CODE_MS = 1_000;

/** Until `w` reported its end, at most WORKER_END_TIMEOUT_MS, and no longer once it sits in one call of user code for IN_USER_CODE_MS. */
async function waitForEnd(w: WorkerState): Promise<void> {
  let ended = false;
  void w.ended.then(() => (ended = true));
  const inUserCode = new TaskWatchdog([w.board], IN_USER_CODE_MS);
  const deadline = Date.now() + WORKER_END_TIMEOUT_MS;
  while (!ended && Date.now() < deadline && inUserCode.check(Date.now()).length === 0) {
    await Promise.race([w.ended, new Promise((resolve) => setTimeout(resolve, 50).unref())]);
  }
}

interface WorkerState {
  readonly worker: Worker;
  /** The worker's task manager: every call is a message on its port. */
  readonly gateway: TaskManagerGateway;
  /** Resolves once the worker's state server is closed (or the worker has exited). */
  readonly serversClosed: Promise<void>;
  readonly closeServers: () => void;
  /** Resolves once the worker's task manager ended (its tasks closed: finished, failed or cancelled) or the worker exited. */
  readonly ended: Promise<void>;
  readonly markEnded: () => void;
  /** The watchdog found one of its tasks stuck in user code: it is terminated without waiting for its end. */
  stuck: boolean;
  /** Its busy board (task-watchdog.ts): whether it is inside a call of user code, and since when. */
  readonly board: SharedArrayBuffer;
  finished: boolean;
  sourceRecords: number;
  metrics: readonly SubtaskMetrics[];
}

export class ThreadedAttempt implements ExecutionAttempt {
  readonly mode = "threads";
  readonly done: Promise<JobResult>;
  /** Where the job's queryable states are served (a state server per worker). */
  readonly queryable = new QueryableLocations();
  readonly #plan: Plan;
  readonly #options: ThreadedOptions;
  readonly #workers: WorkerState[] = [];
  /** Ends this attempt's hold on V8's parallel scavenger (holdSerialScavenge), once its workers are gone. */
  #releaseScavenge: () => void = () => {};
  readonly #sources: SourceCoordinators;
  #ready = 0;
  #settled = false;
  #resolve!: (result: JobResult) => void;
  #reject!: (error: EddyError) => void;
  readonly #startedAt = Date.now();
  #runningSince: number | undefined;
  #running!: () => void;
  /** Resolves when every worker has deployed its tasks (checkpoints can be triggered then). */
  readonly running = new Promise<void>((resolve) => (this.#running = resolve));
  /** Samples the workers' busy boards while the job runs (undefined: watchdog off). */
  #watchdogTimer: NodeJS.Timeout | undefined;
  /** Which worker runs subtask `subtask` of `node`'s chain. */
  readonly #place: (node: PlanNode, subtask: number) => number;

  constructor(plan: Plan, job: JobRef, options: ThreadedOptions) {
    this.#plan = plan;
    this.#options = options;
    const place = placeSubtasks(plan, options.workers, options.placement);
    this.#place = place;
    this.#sources = new SourceCoordinators(plan, (node, subtask) => this.#workers[place(node, subtask)]!.gateway, options.checkpointing?.enumeratorState, options.logger, (cause) => {
      if (!this.#settled) this.#fail(cause instanceof EddyError ? cause : new EddyError("COORDINATOR_FAILED", describeCause(cause), { cause }));
    });
    this.done = new Promise<JobResult>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    try {
      this.#start(job);
    } catch (e) {
      this.#fail(e instanceof EddyError ? e : new EddyError("WORKER_START_FAILED", `could not start worker threads: ${describeCause(e)}`, { cause: e }));
    }
  }

  get sourceRecords(): number {
    let n = 0;
    for (const w of this.#workers) n += w.sourceRecords;
    return n;
  }

  /** The latest per-subtask counters the workers reported (every metricsIntervalMs, and at the end). */
  metrics(): SubtaskMetrics[] {
    return this.#workers.flatMap((w) => w.metrics);
  }

  cancel(): void {
    this.#fail(new EddyError("JOB_CANCELLED", `job '${this.#plan.jobName}' was cancelled`));
  }

  /** Ends the job once each worker has acted on the messages sent before (TaskExecutor.stop). */
  stop(): void {
    for (const tm of this.#taskManagers()) tm.stop();
  }

  /** Fails the job from outside (e.g. too many failed checkpoints). */
  fail(error: EddyError): void {
    this.#fail(error);
  }

  /** Where the checkpoint runner's commands go: every worker's task manager, as messages. */
  checkpointTargets(): CheckpointTargets {
    return broadcastCheckpointTargets({ taskManagers: () => this.#taskManagers(), sources: this.#sources, stop: () => this.stop() });
  }

  /** The workers' task managers while the job runs; none once it has ended (commands are dropped). */
  #taskManagers(): readonly TaskManagerGateway[] {
    return this.#settled ? [] : this.#workers.map((w) => w.gateway);
  }

  #start(job: JobRef): void {
    const n = this.#options.workers;
    this.#releaseScavenge = holdSerialScavenge(this.#options.parallelScavenge, n);
    const ports: (MessagePort | undefined)[][] = Array.from({ length: n }, () => new Array<MessagePort | undefined>(n).fill(undefined));
    for (let a = 0; a < n; a++) {
      for (let b = a + 1; b < n; b++) {
        const { port1, port2 } = new MessageChannel();
        ports[a]![b] = port1;
        ports[b]![a] = port2;
      }
    }
    const rings = Array.from({ length: n }, () => new Map<number, SharedArrayBuffer>());
    const channels = crossWorkerChannels(this.#plan, n, this.#options.placement);
    const { ringBytes, creditRecords } = remoteChannelSizing(channels, {
      channelCapacityRecords: this.#options.channelCapacityRecords,
      capacityExplicit: this.#options.channelCapacityExplicit,
      channelBufferBytes: this.#options.channelBufferBytes,
    });
    for (const channel of channels) {
      const ring = createFrameRing(ringBytes);
      rings[channel.sender]!.set(channel.channelId, ring);
      rings[channel.receiver]!.set(channel.channelId, ring);
    }
    const doorbells = createDoorbells(n);
    const fingerprint = planFingerprint(this.#plan);
    const boards = Array.from({ length: n }, () => createBusyBoardBuffer());
    this.#startWatchdog(boards);
    for (let i = 0; i < n; i++) {
      const init: WorkerInit = {
        job,
        parallelism: this.#options.parallelism,
        maxParallelism: this.#options.maxParallelism,
        restoredMaxParallelism: this.#options.restoredMaxParallelism,
        token: this.#options.token,
        workerIndex: i,
        workers: n,
        placement: this.#options.placement,
        fingerprint,
        ports: ports[i]!,
        rings: rings[i]!,
        doorbells,
        batchRecords: this.#options.batchRecords,
        channelCapacityRecords: this.#options.channelCapacityRecords,
        remoteCreditRecords: creditRecords,
        flushTimeoutMs: this.#options.flushTimeoutMs,
        maxRecordsPerSlice: this.#options.maxRecordsPerSlice,
        metricsIntervalMs: this.#options.metricsIntervalMs,
        metricsEnabled: this.#options.metricsEnabled,
        localAggregation: this.#options.localAggregation,
        verifyCopyNone: this.#options.verifyCopyNone,
        sourceYieldRounds: this.#options.sourceYieldRounds,
        autoWatermarkIntervalMs: this.#options.autoWatermarkIntervalMs,
        stateBackend: this.#options.stateBackend,
        logLevel: this.#options.logLevel,
        checkpointing: this.#options.checkpointing?.workers,
        bundle: this.#options.bundle,
        busyBoard: boards[i]!,
      };
      const worker = new Worker(this.#options.bundle === undefined ? LOADER_ENTRY : new URL(this.#options.bundle.url), {
        workerData: init,
        transferList: ports[i]!.filter((p): p is MessagePort => p !== undefined),
        // Not the main thread's flags (its loaders, profilers), only its module conditions (conditions.ts).
        execArgv: [...commandLineConditions().map((c) => `--conditions=${c}`), ...(process.env.EDDY_WORKER_EXEC_ARGV === undefined ? [] : process.env.EDDY_WORKER_EXEC_ARGV.split(" "))],
        name: `eddy-worker-${i}`,
        ...(this.#options.maxWorkerHeapMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: this.#options.maxWorkerHeapMb } }),
      });
      let serversClosed!: () => void;
      const closed = new Promise<void>((resolve) => (serversClosed = resolve));
      const gateway = remoteGateway<TaskManagerGateway>(TASK_MANAGER_METHODS, (message) => worker.postMessage(message));
      let markEnded!: () => void;
      const ended = new Promise<void>((resolve) => (markEnded = resolve));
      const state: WorkerState = { worker, gateway, serversClosed: closed, closeServers: serversClosed, ended, markEnded, stuck: false, board: boards[i]!, finished: false, sourceRecords: 0, metrics: [] };
      this.#workers.push(state);
      const jobMaster = this.#jobMasterFor(i, state);
      worker.on("message", (message: unknown) => {
        try {
          dispatchGatewayMessage<JobMasterGateway>(jobMaster, JOB_MASTER_METHODS, message);
        } catch (e) {
          this.#fail(e instanceof EddyError ? e : new EddyError("COORDINATOR_FAILED", describeCause(e), { cause: e }));
        }
      });
      worker.on("error", (e: Error & { code?: string }) => {
        if (e.code === "ERR_WORKER_OUT_OF_MEMORY") {
          const limit = this.#options.maxWorkerHeapMb === undefined ? "Node's default heap limit" : `its heap limit of ${this.#options.maxWorkerHeapMb} MB`;
          this.#fail(
            // Not retried: see restartability in checkpoint/recovery.ts.
            new EddyError("WORKER_OUT_OF_MEMORY", `worker ${i} ran out of memory (${limit}; ${e.message})`, { cause: e }),
          );
          return;
        }
        this.#fail(new EddyError("WORKER_DIED", `worker ${i} crashed: ${describeCause(e)}`, { cause: e }));
      });
      worker.on("exit", (code) => {
        state.closeServers();
        state.markEnded();
        if (state.finished || this.#settled) return;
        this.#fail(
          new EddyError(
            "WORKER_DIED",
            `worker ${i} exited unexpectedly with code ${code} (process.exit() in user code, or the thread was killed)`,
          ),
        );
      });
    }
  }

  /** The coordinator's side of the gateway for worker `index`: what its task manager reports. */
  #jobMasterFor(index: number, state: WorkerState): JobMasterGateway {
    /** Reports after the job ended are dropped (the workers are being shut down). */
    const live =
      <A extends unknown[]>(f: (...args: A) => void) =>
      (...args: A): void => {
        if (!this.#settled) f(...args);
      };
    const checkpointing = this.#options.checkpointing;
    return {
      registerTaskManager: live((version) => {
        checkProtocolVersion(version, `worker ${index}`);
        if (++this.#ready === this.#workers.length) {
          this.#runningSince = Date.now();
          this.#sources.start();
          this.#running();
        }
      }),
      requestSplit: live((node, subtask, event) => this.#sources.handleSplitRequest(node, subtask, event)),
      reportWatermark: live((node, subtask, group, watermark, drift) => this.#sources.reportWatermark(node, subtask, group, watermark, drift)),
      reportOutput: live((collected, stdout) => {
        for (const [name, values] of collected) for (const v of values) this.#options.services.collect(name, v);
        for (const line of stdout) this.#options.services.writeStdout(line);
      }),
      commitOnce: live((sink, txnId, values) => this.#options.services.commitOnce(sink, txnId, values)),
      log: live((level, message, fields) => this.#options.logger[level](message, fields as Record<string, unknown>)),
      reportMetrics: live((sourceRecords, metrics) => {
        state.sourceRecords = sourceRecords;
        state.metrics = metrics;
      }),
      taskManagerFinished: live((sourceRecords, metrics) => {
        state.markEnded();
        state.finished = true;
        state.closeServers(); // closed before it said finished
        state.sourceRecords = sourceRecords;
        state.metrics = metrics;
        if (this.#workers.every((w) => w.finished)) void this.#succeed();
      }),
      taskManagerFailed: (error) => {
        // Also after the end: shutting down waits for it (a cancelled worker reports its end so).
        state.markEnded();
        if (!this.#settled) this.#fail(deserializeError(error, index));
      },
      acknowledgeCheckpoint: live((taskId, checkpointId, ack) => checkpointing?.acknowledgeCheckpoint(taskId, checkpointId, ack)),
      declineCheckpoint: live((taskId, checkpointId, reason) => checkpointing?.declineCheckpoint(taskId, checkpointId, reason)),
      taskFinished: live((taskId) => checkpointing?.taskFinished(taskId)),
      queryableRegistered: live((registration) => this.queryable.add(registration)),
      // Also after the end: shutting down waits for it.
      serversClosed: () => state.closeServers(),
    };
  }

  #startWatchdog(boards: readonly SharedArrayBuffer[]): void {
    const timeoutMs = this.#options.watchdogTimeoutMs;
    if (!(timeoutMs > 0)) return;
    const watchdog = new TaskWatchdog(boards, timeoutMs);
    this.#watchdogTimer = setInterval(
      () => {
        const [stuck] = watchdog.check(Date.now());
        if (stuck !== undefined && !this.#settled) void this.#failStuck(stuck, timeoutMs);
      },
      Math.max(10, Math.min(1_000, timeoutMs / 10)),
    );
    this.#watchdogTimer.unref();
  }

  profileThread(thread: number, seconds: number): Promise<ThreadProfile> {
    const worker = this.#workers[thread];
    if (worker === undefined || this.#settled) {
      return Promise.reject(new EddyError("PROFILE_NOT_AVAILABLE", this.#settled ? "the job's worker threads have ended" : `the job has worker threads 0 to ${this.#workers.length - 1}, not ${thread}`));
    }
    // The tasks the thread runs, as the REST API names them (<vertex>.<subtask>).
    const tasks = this.#plan.chains.flatMap((chain) =>
      Array.from({ length: chain.parallelism }, (_, subtask) => subtask)
        .filter((subtask) => this.#place(chain.nodes[0]!, subtask) === thread)
        .map((subtask) => `${chain.index}.${subtask}`),
    );
    return profileThread(worker.worker, thread, seconds, tasks);
  }

  /** Fails the job naming the stuck task, and where its thread is (read before it is terminated). */
  async #failStuck(stuck: StuckTask, timeoutMs: number): Promise<void> {
    const chain = this.#plan.chains[stuck.chain];
    const worker = this.#workers[stuck.worker];
    if (chain === undefined || worker === undefined) return;
    worker.stuck = true;
    let stack = await readThreadStack(worker.worker, 2_000);
    const bundle = this.#options.bundle;
    if (stack !== undefined && bundle !== undefined) stack = new StackMapper(bundle.url, bundle.sourceMap).map(stack);
    const error = new EddyError(
      "TASK_STUCK",
      `task '${chain.name}' (subtask ${stuck.subtask}) has not returned from user code for ${Math.round(stuck.forMs / 1_000)} s ` +
        `(limit ${timeoutMs} ms, execution.watchdog.timeout): an endless loop or a blocking call in one of its functions` +
        (stack === undefined ? "" : `; worker ${stuck.worker} was at:\n${stack}`),
      { operator: chain.name, subtask: stuck.subtask },
    );
    this.#fail(error);
  }

  async #succeed(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    clearInterval(this.#watchdogTimer);
    this.queryable.end();
    await this.#shutdown();
    this.#resolve({
      jobName: this.#plan.jobName,
      durationMs: Date.now() - this.#startedAt,
      runningMs: Date.now() - (this.#runningSince ?? this.#startedAt),
      sourceRecords: this.sourceRecords,
      metrics: this.metrics(),
    });
  }

  #fail(error: EddyError): void {
    if (this.#settled) return;
    this.#settled = true;
    clearInterval(this.#watchdogTimer);
    this.queryable.end();
    // Debug only, as the task executors' (task-executor.ts #fail): the supervisor, or the caller of
    // an attempt without restarts, reports the failure once.
    if (error.code !== "JOB_CANCELLED") this.#options.logger.debug("execution attempt failed", { job: this.#plan.jobName, error: error.message, code: error.code });
    void this.#shutdown().then(() => this.#reject(error));
  }

  async #shutdown(): Promise<void> {
    this.#sources.close();
    // Terminating a thread while its HTTP parser runs aborts the process: close the state servers
    // first (each worker answers once closed; a stuck one is terminated after a second anyway).
    // A worker still running is cancelled first, so it does no more work meanwhile. So does
    // terminating a thread inside a native call that then throws (node-addon-api's napi_throw in
    // an environment being terminated is fatal: lmdb-js#200): a cancelled worker closes its tasks,
    // and the disk state backend its LMDB store, so a worker is terminated only once its task
    // manager reported its end — unless it is stuck in user code (found by the watchdog, or inside
    // one call of user code for IN_USER_CODE_MS: it cannot see the cancellation, and it closes
    // nothing meanwhile), or takes longer than WORKER_END_TIMEOUT_MS.
    await Promise.all(
      this.#workers.map(async (w) => {
        try {
          if (!w.finished) w.gateway.cancel();
          w.gateway.closeServers();
        } catch {
          // Already gone.
        }
        await Promise.race([w.serversClosed, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
        if (!w.stuck) await waitForEnd(w);
        await w.worker.terminate().catch(() => undefined);
      }),
    );
    this.#releaseScavenge();
  }
}
