/**
 * The task manager: the TaskManagerGateway side of the gateway protocol (gateway.ts) over one
 * TaskExecutor. Inline, the coordinator calls it directly; on a worker thread, thread-worker.ts
 * dispatches the port's messages to it. Either way a coordinator's command reaches the executor
 * through these methods, written once.
 */
import { EddyError } from "../core/errors.ts";
import type { CheckpointBarrier } from "../core/elements.ts";
import type { Plan, PlanNode } from "../graph/plan.ts";
import type { SourceStop } from "../runtime/stream-task.ts";
import { GATEWAY_PROTOCOL_VERSION, type JobMasterGateway, type TaskManagerGateway } from "./gateway.ts";
import type { ReaderHandle, SplitCoordination, TaskExecutor } from "./task-executor.ts";

/**
 * The source readers of one task manager, by (source index in the plan, subtask): split requests
 * go to the coordinator, assignments come back through the task manager. Once every reader is
 * registered (`start`), the task manager registers with the coordinator, which then starts the
 * enumerators.
 */
export class SourceReaders implements SplitCoordination {
  readonly #indexOf: ReadonlyMap<PlanNode, number>;
  readonly #handles = new Map<string, ReaderHandle>();
  readonly #jobMaster: Pick<JobMasterGateway, "registerTaskManager" | "requestSplit" | "reportWatermark">;
  readonly #where: string;

  constructor(plan: Plan, jobMaster: Pick<JobMasterGateway, "registerTaskManager" | "requestSplit" | "reportWatermark">, where: string) {
    this.#indexOf = new Map(plan.nodes.map((n, i) => [n, i] as const));
    this.#jobMaster = jobMaster;
    this.#where = where;
  }

  registerReader(node: PlanNode, subtask: number, handle: ReaderHandle): void {
    this.#handles.set(`${this.#indexOf.get(node)}/${subtask}`, handle);
  }

  requestSplit(node: PlanNode, subtask: number, event?: unknown): void {
    if (event === undefined) this.#jobMaster.requestSplit(this.#indexOf.get(node)!, subtask);
    else this.#jobMaster.requestSplit(this.#indexOf.get(node)!, subtask, event);
  }

  reportWatermark(node: PlanNode, subtask: number, group: string, watermark: number, maxAllowedDriftMs: number): void {
    this.#jobMaster.reportWatermark(this.#indexOf.get(node)!, subtask, group, watermark, maxAllowedDriftMs);
  }

  start(): void {
    this.#jobMaster.registerTaskManager(GATEWAY_PROTOCOL_VERSION);
  }

  close(): void {}

  /** The reader of subtask `subtask` of source `node`. */
  handle(node: number, subtask: number): ReaderHandle {
    const handle = this.#handles.get(`${node}/${subtask}`);
    if (handle === undefined) throw new EddyError("NO_SUCH_READER", `${this.#where} has no reader for source ${node} subtask ${subtask}`);
    return handle;
  }
}

export class TaskManager implements TaskManagerGateway {
  readonly #executor: TaskExecutor;
  readonly #readers: SourceReaders;
  readonly #closeServers: () => Promise<void>;
  readonly #jobMaster: Pick<JobMasterGateway, "serversClosed">;

  constructor(executor: TaskExecutor, readers: SourceReaders, closeServers: () => Promise<void>, jobMaster: Pick<JobMasterGateway, "serversClosed">) {
    this.#executor = executor;
    this.#readers = readers;
    this.#closeServers = closeServers;
    this.#jobMaster = jobMaster;
  }

  assignSplits(node: number, subtask: number, splits: readonly unknown[]): void {
    this.#readers.handle(node, subtask).addSplits(splits);
  }

  noMoreSplits(node: number, subtask: number): void {
    this.#readers.handle(node, subtask).notifyNoMoreSplits();
  }

  updateMaxAllowedWatermark(node: number, subtask: number, maxAllowed: number): void {
    this.#readers.handle(node, subtask).updateMaxAllowedWatermark(maxAllowed);
  }

  triggerCheckpoint(barrier: CheckpointBarrier, stop: SourceStop | undefined): void {
    this.#executor.triggerCheckpoint(barrier, stop);
  }

  resumeSources(): void {
    this.#executor.resumeSources();
  }

  notifyCheckpointComplete(checkpointId: number): void {
    this.#executor.notifyCheckpointComplete(checkpointId);
  }

  notifyCheckpointAborted(checkpointId: number): void {
    this.#executor.abortCheckpoint(checkpointId);
  }

  triggerFinalCheckpoint(barrier: CheckpointBarrier): void {
    this.#executor.finalCheckpoint(barrier);
  }

  stop(): void {
    this.#executor.stop();
  }

  cancel(): void {
    this.#executor.cancel();
  }

  closeServers(): void {
    void this.#closeServers().then(() => this.#jobMaster.serversClosed());
  }
}
