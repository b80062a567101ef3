/**
 * The body of a worker thread: rebuilds the job from its module, checks that its plan matches the
 * coordinator's, runs the subtasks placed on this worker with a TaskExecutor, and exchanges
 * frames with the other workers through the shared-memory rings the coordinator allocated (one per
 * channel), waking them with doorbells. The coordinator's commands arrive on the port as gateway
 * messages (gateway.ts) for this worker's TaskManager; reports go back the same way. Failures are
 * reported to the coordinator, which ends the job.
 */
import { stateBackendFactory } from "../state/state-backend-spec.ts";
import { parentPort, workerData } from "node:worker_threads";
import { defaultCodec } from "../core/codec/default-codec.ts";
import type { BatchCodec } from "../core/codec/codec.ts";
import { SystemClock } from "../core/clock.ts";
import { EddyError, type ErrorCode } from "../core/errors.ts";
import { stackWithCauses } from "../core/user-frames.ts";
import type { Logger, LogLevel } from "../core/logger.ts";
import type { Plan, PlanChain, PlanEdge, PlanNode } from "../graph/plan.ts";
import { FrameRingReader, FrameRingWriter } from "../runtime/channels/frame-ring.ts";
import type { InputChannel, OutputChannel } from "../runtime/channels/channel.ts";
import { LocalChannel } from "../runtime/channels/local-channel.ts";
import { RemoteInputChannel, RemoteOutputChannel, type RemoteChannelInfo } from "../runtime/channels/remote-channel.ts";
import type { JobServices } from "../runtime/operator.ts";
import { loadJob, planFingerprint, planJob } from "./job-ref.ts";
import { serveQueryableStates } from "../queryable/queryable-serving.ts";
import { Doorbells } from "./doorbells.ts";
import { channelIds, placeSubtasks, type WorkerInit } from "./thread-protocol.ts";
import { dispatchGatewayMessage, JOB_MASTER_METHODS, remoteGateway, TASK_MANAGER_METHODS, type JobMasterGateway, type SerializedError, type TaskManagerGateway } from "./gateway.ts";
import { TaskExecutor, type CheckpointParticipation, type Deployment } from "./task-executor.ts";
import { SourceReaders, TaskManager } from "./task-manager.ts";
import { snapshotDirectoryReader } from "../checkpoint/storage.ts";
import { CheckpointRestore } from "./checkpoint-restore.ts";
import { openCheckpointStorage } from "./checkpoint-storage-ref.ts";
import { StackMapper } from "./source-map-stack.ts";
import { BusyTaskBoard } from "./task-watchdog.ts";

const init = workerData as WorkerInit;
const port = parentPort!;

/**
 * How long a worker whose tasks ended waits for the checkpoint files it is still writing before it
 * reports its end (below the coordinator's WORKER_END_TIMEOUT_MS, after which it terminates anyway).
 */
const IN_FLIGHT_AT_END_MS = 5_000;

/** The coordinator, reached through the gateway protocol: every call is a message on the port. */
const jobMaster = remoteGateway<JobMasterGateway>(JOB_MASTER_METHODS, (message) => port.postMessage(message));

/** Maps stack frames in this worker's bundle back to the original files (when it runs from one). */
const stackMapper = init.bundle === undefined ? undefined : new StackMapper(init.bundle.url, init.bundle.sourceMap);

function serializeError(e: unknown): SerializedError {
  if (e instanceof EddyError) {
    return { code: e.code, message: e.message, domain: e.domain, retryable: e.retryable, operator: e.operator, subtask: e.subtask, parallelism: e.parallelism, stack: stackOf(e) };
  }
  const err = e instanceof Error ? e : new Error(String(e));
  const code: ErrorCode = "WORKER_FAILED";
  return { code, message: `${err.name}: ${err.message}`, domain: "internal", retryable: false, operator: undefined, subtask: undefined, parallelism: undefined, stack: stackOf(err) };
}

/** The error's stack followed by its causes' (where a user function failed), frames in original files. */
function stackOf(e: Error): string | undefined {
  const stack = stackWithCauses(e);
  return stack === undefined || stackMapper === undefined ? stack : stackMapper.map(stack);
}

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

function forwardingLogger(level: LogLevel): Logger {
  const min = LEVELS[level];
  const log = (lvl: "debug" | "info" | "warn" | "error") => (message: string, fields?: Readonly<Record<string, unknown>>) => {
    if (LEVELS[lvl] >= min) jobMaster.log(lvl, message, { worker: init.workerIndex, ...fields });
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

/** Collect-sink values and print lines, sent to the coordinator in batches. */
class OutputForwarder {
  #collected = new Map<string, unknown[]>();
  #stdout: string[] = [];
  #scheduled = false;

  collect(name: string, value: unknown): void {
    let list = this.#collected.get(name);
    if (list === undefined) this.#collected.set(name, (list = []));
    list.push(value);
    this.#schedule();
  }

  /** Sent at once (after what was collected before), so a commit is never held back by batching. */
  commitOnce(name: string, txnId: string, values: readonly unknown[]): void {
    this.flush();
    jobMaster.commitOnce(name, txnId, [...values]);
  }

  writeStdout(line: string): void {
    this.#stdout.push(line);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setTimeout(() => this.flush(), 20);
  }

  flush(): void {
    this.#scheduled = false;
    if (this.#collected.size === 0 && this.#stdout.length === 0) return;
    jobMaster.reportOutput([...this.#collected], this.#stdout);
    this.#collected = new Map();
    this.#stdout = [];
  }
}

/** How this worker's tasks take part in checkpoints: write to the job's storage, report to the coordinator. */
async function checkpointParticipation(plan: Plan): Promise<CheckpointParticipation | undefined> {
  const cp = init.checkpointing;
  if (cp === undefined) return undefined;
  const place = placeSubtasks(plan, init.workers, init.placement);
  let restore: CheckpointRestore | undefined;
  if (cp.restore !== undefined) {
    const dir = cp.restore.dir;
    const from = dir === undefined ? await openCheckpointStorage(cp.storageRef, cp.storage) : snapshotDirectoryReader(dir);
    // Only the files of this worker's subtasks are read.
    restore = await CheckpointRestore.load(from, cp.restore.manifest, plan, (chain, subtask) => place(chain.nodes[0]!, subtask) === init.workerIndex);
  }
  return {
    mode: cp.mode,
    storage: await openCheckpointStorage(cp.storageRef, cp.storage),
    restoreFor: (node, subtask) => restore?.restoreFor(node, subtask),
    allowNonRestoredState: cp.allowNonRestoredState,
    acknowledgeCheckpoint: (taskId, checkpointId, ack) => jobMaster.acknowledgeCheckpoint(taskId, checkpointId, ack),
    declineCheckpoint: (taskId, checkpointId, reason) => jobMaster.declineCheckpoint(taskId, checkpointId, reason),
    taskFinished: (taskId) => jobMaster.taskFinished(taskId),
  };
}

class ThreadDeployment implements Deployment {
  readonly splits: SourceReaders;
  readonly checkpoints: CheckpointParticipation | undefined;
  readonly doorbell: Doorbells;
  readonly #outlets: FrameRingWriter[] = [];
  readonly #local = new Map<number, LocalChannel>();
  readonly #channelId: ReturnType<typeof channelIds>;
  readonly #place: ReturnType<typeof placeSubtasks>;
  readonly #codec: BatchCodec = defaultCodec();

  constructor(plan: Plan, splits: SourceReaders, checkpoints: CheckpointParticipation | undefined, doorbell: Doorbells) {
    this.doorbell = doorbell;
    this.#channelId = channelIds(plan);
    this.#place = placeSubtasks(plan, init.workers, init.placement);
    this.splits = splits;
    this.checkpoints = checkpoints;
  }

  owns(chain: PlanChain, subtask: number): boolean {
    return this.#place(chain.nodes[0]!, subtask) === init.workerIndex;
  }

  outputChannel(edge: PlanEdge, sender: number, receiver: number): OutputChannel {
    const id = this.#channelId(edge, sender, receiver);
    const peer = this.#place(edge.target, receiver);
    if (peer === init.workerIndex) return this.#localChannel(id);
    const doorbell = this.doorbell;
    const outlet = new FrameRingWriter(ringOf(id), () => doorbell.ring(peer));
    this.#outlets.push(outlet);
    return new RemoteOutputChannel(info(id, edge, sender, receiver), edge.source.transformation.codec ?? this.#codec, outlet, init.remoteCreditRecords);
  }

  flushTransports(): boolean {
    let held = false;
    for (const outlet of this.#outlets) if (!outlet.hasRoom) held = true;
    return held;
  }

  inputChannel(edge: PlanEdge, sender: number, receiver: number): InputChannel {
    const id = this.#channelId(edge, sender, receiver);
    const peer = this.#place(edge.source, sender);
    if (peer === init.workerIndex) return this.#localChannel(id);
    const doorbell = this.doorbell;
    return new RemoteInputChannel(
      info(id, edge, sender, receiver),
      edge.source.transformation.codec ?? this.#codec,
      new FrameRingReader(ringOf(id), () => doorbell.ring(peer)),
      init.remoteCreditRecords,
    );
  }

  #localChannel(id: number): LocalChannel {
    let channel = this.#local.get(id);
    if (channel === undefined) this.#local.set(id, (channel = new LocalChannel(init.channelCapacityRecords)));
    return channel;
  }
}

function info(channelId: number, edge: PlanEdge, sender: number, receiver: number): RemoteChannelInfo {
  return { channelId, senderName: edge.source.name, senderSubtask: sender, receiverName: edge.target.name, receiverSubtask: receiver };
}

function ringOf(channelId: number): SharedArrayBuffer {
  const ring = init.rings.get(channelId);
  if (ring === undefined) throw new EddyError("NO_CHANNEL_RING", `worker ${init.workerIndex} has no ring for channel ${channelId}`);
  return ring;
}

async function run(): Promise<void> {
  const logger = forwardingLogger(init.logLevel);
  const job = await loadJob(init.job);
  // Plan warnings were already logged by the coordinator.
  const quiet: Logger = { ...logger, warn: () => {}, info: () => {} };
  const { env, plan } = planJob(job, init, quiet);
  if (planFingerprint(plan) !== init.fingerprint) {
    throw new EddyError(
      "PLAN_MISMATCH",
      `worker ${init.workerIndex} built a different graph for job '${job.name}' than the coordinator: build the job deterministically (no randomness, clock or environment in the graph's shape)`,
    );
  }
  const splits = new SourceReaders(plan, jobMaster, `worker ${init.workerIndex}`);
  const checkpoints = await checkpointParticipation(plan);
  const deployment = new ThreadDeployment(plan, splits, checkpoints, new Doorbells(init.doorbells, init.workerIndex, init.ports));
  const forwarder = new OutputForwarder();
  const services: JobServices = {
    jobName: job.name,
    collect: (name, value) => forwarder.collect(name, value),
    commitOnce: (name, txnId, values) => forwarder.commitOnce(name, txnId, values),
    writeStdout: (line) => forwarder.writeStdout(line),
  };
  const executor = new TaskExecutor(plan, deployment, {
    clock: new SystemClock(),
    logger,
    services,
    autoWatermarkIntervalMs: init.autoWatermarkIntervalMs,
    batchRecords: init.batchRecords,
    flushTimeoutMs: init.flushTimeoutMs,
    maxRecordsPerSlice: init.maxRecordsPerSlice,
    yieldIntervalMs: 0,
    metricsEnabled: init.metricsEnabled,
    localAggregation: init.localAggregation,
    verifyCopyNone: init.verifyCopyNone,
    sourceYieldRounds: init.sourceYieldRounds,
    stateBackend: stateBackendFactory(init.stateBackend),
    busyBoard: new BusyTaskBoard(init.busyBoard),
  });

  const queryable = serveQueryableStates(executor.queryable, {
    token: init.token,
    logger,
    onRegistered: (registration) => jobMaster.queryableRegistered(registration),
  });
  const taskManager = new TaskManager(executor, splits, () => queryable.close(), jobMaster);
  port.on("message", (message: unknown) => {
    try {
      dispatchGatewayMessage<TaskManagerGateway>(taskManager, TASK_MANAGER_METHODS, message);
    } catch (e) {
      executor.fail(e);
    }
  });
  // Peers ring when they published frames, credit or room for this worker while it slept.
  for (const p of init.ports) p?.on("message", () => executor.wake());

  const metricsTimer = setInterval(
    () => jobMaster.reportMetrics(executor.sourceRecords, executor.metrics()),
    init.metricsIntervalMs,
  );
  metricsTimer.unref();
  try {
    // What tasks wrote before a failure is still theirs to show (print() lines, as inline).
    // Checkpoint files still being written finish first, failed or cancelled too (see settled).
    const result = await executor.done.finally(() => forwarder.flush()).finally(() => executor.settled(IN_FLIGHT_AT_END_MS));
    // Closed before the coordinator hears of the end (it may terminate this thread then).
    await queryable.close();
    jobMaster.taskManagerFinished(result.sourceRecords, executor.metrics());
  } finally {
    clearInterval(metricsTimer);
    await queryable.close();
  }
}

/** Runs this worker; called by the entry it starts from (a bundle's, or thread-worker-entry.js). */
export function runWorker(): void {
  run().catch((e: unknown) => jobMaster.taskManagerFailed(serializeError(e)));
}
