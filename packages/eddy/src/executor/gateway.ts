/**
 * The gateway protocol between the coordinator (what a JobManager does: coordinator/) and its task
 * managers (what runs tasks: an executor on the coordinating thread, or one per worker thread),
 * written once as two interfaces, as Flink's TaskExecutorGateway and JobMasterGateway are.
 *
 * - Inline mode calls the interfaces directly: the coordinator holds a TaskManager
 *   (task-manager.ts) and calls it; the task manager reports through plain functions.
 * - Worker threads carry the same calls as messages over their port: `remoteGateway` turns calls
 *   into `GatewayMessage`s, `dispatchGatewayMessage` turns them back into calls on the other side.
 *   A message is derived from its method's signature, so a call cannot be carried wrongly, and a
 *   new call is one new method (plus its name in the METHODS list, which the compiler checks).
 * - A TCP transport between processes (a later issue) will carry the same messages after a
 *   version handshake: `registerTaskManager` opens every task manager's conversation with the
 *   GATEWAY_PROTOCOL_VERSION it speaks, and the coordinator refuses another version.
 *
 * Every argument is structured-cloneable data (the port clones it; TCP will encode it): no
 * functions, no class instances beyond what `structuredClone` keeps. Errors travel as
 * SerializedError.
 *
 * Order: messages on one connection arrive in the order they were sent, and each side acts on
 * them in that order (a `stop` after a `notifyCheckpointComplete` takes effect after the
 * notification reached every task: stop-with-savepoint relies on it).
 */
import { EddyError, type ErrorDomain } from "../core/errors.ts";
import { isErrorCode } from "../core/error-codes.ts";
import type { CheckpointBarrier } from "../core/elements.ts";
import type { TaskAck } from "../checkpoint/coordinator.ts";
import type { SourceStop, SubtaskMetrics } from "../runtime/stream-task.ts";
import type { QueryableRegistration } from "../queryable/queryable-serving.ts";

/** The version of the messages below; a change to any of them increments it. */
export const GATEWAY_PROTOCOL_VERSION = 2;

/** What the coordinator asks of a task manager (Flink's TaskExecutorGateway). */
export interface TaskManagerGateway {
  /** Splits for subtask `subtask` of source `node` (its index in the plan), from its enumerator. */
  assignSplits(node: number, subtask: number, splits: readonly unknown[]): void;
  /** The enumerator of source `node` has no more splits for subtask `subtask`. */
  noMoreSplits(node: number, subtask: number): void;
  /**
   * Watermark alignment: subtask `subtask` of source `node` may read while its watermark is at
   * most `maxAllowed` (its group's minimum plus its drift); the answer to its `reportWatermark`.
   */
  updateMaxAllowedWatermark(node: number, subtask: number, maxAllowed: number): void;
  /**
   * Injects `barrier` at every source task (non-source tasks that finished snapshot what they
   * hold); with `stop`, sources read nothing after it (stop with a savepoint).
   */
  triggerCheckpoint(barrier: CheckpointBarrier, stop: SourceStop | undefined): void;
  /** A stop-with-savepoint failed: sources read again. */
  resumeSources(): void;
  /** Checkpoint `checkpointId` is complete (its manifest is committed): sinks commit. */
  notifyCheckpointComplete(checkpointId: number): void;
  /** The coordinator gave up checkpoint `checkpointId`. */
  notifyCheckpointAborted(checkpointId: number): void;
  /** Every task of the job has finished: each task snapshots what it holds and acknowledges. */
  triggerFinalCheckpoint(barrier: CheckpointBarrier): void;
  /** Ends the tasks once every call before this one has been acted on (the job stopped with a savepoint). */
  stop(): void;
  /** Ends the tasks at once (the job was cancelled or failed elsewhere). */
  cancel(): void;
  /**
   * The job is ending: close the queryable state server, then answer `serversClosed` (a worker
   * thread terminated while its HTTP parser runs would abort the whole process).
   */
  closeServers(): void;
}

/** What a task manager tells the coordinator (Flink's JobMasterGateway). */
export interface JobMasterGateway {
  /** The first message of a task manager: it runs every task placed on it, and speaks `protocolVersion`. */
  registerTaskManager(protocolVersion: number): void;
  /** A source reader asks its enumerator for a split, or with `event` sends it a source event. */
  requestSplit(node: number, subtask: number, event?: unknown): void;
  /**
   * Watermark alignment: subtask `subtask` of source `node` has emitted `watermark` (MAX_WATERMARK
   * once idle or finished: it holds nobody back); it may drift `maxAllowedDriftMs` ahead of the
   * slowest subtask of `group`.
   */
  reportWatermark(node: number, subtask: number, group: string, watermark: number, maxAllowedDriftMs: number): void;
  /** What collect sinks gathered (per sink name) and lines printed, since the last report. */
  reportOutput(collected: readonly (readonly [string, unknown[]])[], stdout: readonly string[]): void;
  /** A committing test sink's transaction, to apply once (JobServices.commitOnce). */
  commitOnce(sink: string, txnId: string, values: readonly unknown[]): void;
  log(level: "debug" | "info" | "warn" | "error", message: string, fields: unknown): void;
  reportMetrics(sourceRecords: number, metrics: readonly SubtaskMetrics[]): void;
  /** Every task of this task manager ended normally; its state server is closed. */
  taskManagerFinished(sourceRecords: number, metrics: readonly SubtaskMetrics[]): void;
  /** A task (or the task manager itself) failed: the job fails. */
  taskManagerFailed(error: SerializedError): void;
  acknowledgeCheckpoint(taskId: string, checkpointId: number, ack: TaskAck): void;
  declineCheckpoint(taskId: string, checkpointId: number, reason: string): void;
  /** The task consumed all its input (no further checkpoint waits for its barrier). */
  taskFinished(taskId: string): void;
  /** A queryable state is served by this task manager's state server. */
  queryableRegistered(registration: QueryableRegistration): void;
  /** The state server is closed (the answer to `closeServers`). */
  serversClosed(): void;
}

/**
 * The methods of each gateway, in a list the transports use at run time. `satisfies` and the
 * exhaustiveness check below make a method missing from its list a compile error.
 */
export const TASK_MANAGER_METHODS = [
  "assignSplits",
  "noMoreSplits",
  "updateMaxAllowedWatermark",
  "triggerCheckpoint",
  "resumeSources",
  "notifyCheckpointComplete",
  "notifyCheckpointAborted",
  "triggerFinalCheckpoint",
  "stop",
  "cancel",
  "closeServers",
] as const satisfies readonly (keyof TaskManagerGateway)[];

export const JOB_MASTER_METHODS = [
  "registerTaskManager",
  "requestSplit",
  "reportWatermark",
  "reportOutput",
  "commitOnce",
  "log",
  "reportMetrics",
  "taskManagerFinished",
  "taskManagerFailed",
  "acknowledgeCheckpoint",
  "declineCheckpoint",
  "taskFinished",
  "queryableRegistered",
  "serversClosed",
] as const satisfies readonly (keyof JobMasterGateway)[];

type Exhaustive<T extends never> = T;
export type TaskManagerMethodsListed = Exhaustive<Exclude<keyof TaskManagerGateway, (typeof TASK_MANAGER_METHODS)[number]>>;
export type JobMasterMethodsListed = Exhaustive<Exclude<keyof JobMasterGateway, (typeof JOB_MASTER_METHODS)[number]>>;

/** A call of gateway `G` as a message: the method's name and its arguments. */
export type GatewayMessage<G> = {
  [K in keyof G]: G[K] extends (...args: infer A) => void ? { readonly m: K; readonly a: A } : never;
}[keyof G];

/** A gateway whose calls are sent as messages (to a worker thread, or from one). */
export function remoteGateway<G>(methods: readonly (keyof G & string)[], send: (message: GatewayMessage<G>) => void): G {
  const gateway: Record<string, (...args: unknown[]) => void> = {};
  for (const m of methods) gateway[m] = (...a: unknown[]) => send({ m, a } as GatewayMessage<G>);
  return gateway as G;
}

/**
 * Calls on `gateway` the method a message names. A message that names no method of the list (a
 * peer of another protocol version, or not a gateway message at all) throws GATEWAY_PROTOCOL.
 */
export function dispatchGatewayMessage<G>(gateway: G, methods: readonly (keyof G & string)[], message: unknown): void {
  const m = (message as { m?: unknown } | null)?.m;
  const a = (message as { a?: unknown } | null)?.a;
  if (typeof m !== "string" || !(methods as readonly string[]).includes(m) || !Array.isArray(a)) {
    throw new EddyError("GATEWAY_PROTOCOL", `not a message of gateway protocol version ${GATEWAY_PROTOCOL_VERSION}: ${describeMessage(message)}`);
  }
  (gateway[m as keyof G] as (...args: unknown[]) => void).apply(gateway, a);
}

/** Refuses a task manager that speaks another version of the protocol. */
export function checkProtocolVersion(version: unknown, who: string): void {
  if (version !== GATEWAY_PROTOCOL_VERSION) {
    throw new EddyError(
      "GATEWAY_PROTOCOL",
      `${who} speaks gateway protocol version ${String(version)}, this coordinator ${GATEWAY_PROTOCOL_VERSION}: run every part of the job from the same Eddy`,
    );
  }
}

function describeMessage(message: unknown): string {
  if (message === null || typeof message !== "object") return String(message);
  const m = (message as { m?: unknown; t?: unknown }).m ?? (message as { t?: unknown }).t;
  return `a message '${String(m)}'`;
}

/** An error as it crosses a gateway: what EddyError holds, as data. */
export interface SerializedError {
  /** An ErrorCode where it was raised; checked with isErrorCode where it arrives. */
  readonly code: string;
  readonly message: string;
  readonly domain: ErrorDomain;
  readonly retryable: boolean;
  readonly operator: string | undefined;
  readonly subtask: number | undefined;
  readonly parallelism: number | undefined;
  /** With its causes' (user-frames.ts, stackWithCauses), frames mapped to the original files. */
  readonly stack: string | undefined;
}

/** A task manager's error as it was raised there; a code this build does not know becomes UNKNOWN_ERROR_CODE. */
export function deserializeError(e: SerializedError, worker: number): EddyError {
  const where = {
    ...(e.operator === undefined ? {} : { operator: e.operator }),
    ...(e.subtask === undefined ? {} : { subtask: e.subtask }),
    ...(e.parallelism === undefined ? {} : { parallelism: e.parallelism }),
  };
  const error = isErrorCode(e.code)
    ? new EddyError(e.code, e.message, { domain: e.domain, retryable: e.retryable, ...where })
    : new EddyError("UNKNOWN_ERROR_CODE", `${e.message} (worker ${worker} reported the unknown code '${e.code}')`, where);
  if (e.stack !== undefined) error.stack = `${e.stack}\n    (reported by worker ${worker})`;
  return error;
}
