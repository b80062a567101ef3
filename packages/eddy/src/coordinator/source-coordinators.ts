/**
 * The split enumerators of a job's sources, on the coordinating thread (Flink's
 * SourceCoordinator): one per source operator, started once every task manager has registered.
 * Assignments go to the task manager that runs the reader, through its gateway; split requests
 * come back from it. Whether that task manager is on this thread or a worker thread, this code is
 * the same.
 */
import { describeCause, EddyError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import { openEnumerator, snapshotEnumerators, type SplitEnumerator } from "../connector/source.ts";
import type { Plan, PlanNode } from "../graph/plan.ts";
import type { TaskManagerGateway } from "../executor/gateway.ts";

export class SourceCoordinators {
  readonly #plan: Plan;
  /** The task manager that runs subtask `subtask` of `node`. */
  readonly #gatewayOf: (node: PlanNode, subtask: number) => TaskManagerGateway;
  /** Restored enumerator state by source operator id; undefined: a fresh start. */
  readonly #restored: ((operatorId: string) => unknown) | undefined;
  readonly #logger: Logger;
  /** Fails the execution (an enumerator's asynchronous failure). */
  readonly #fail: (cause: unknown) => void;
  /** By the source's index in the plan (what the gateway messages name). */
  readonly #enumerators = new Map<number, SplitEnumerator<unknown>>();
  /**
   * Split requests that arrived before `start` (a reader on a worker that registered early asks
   * as soon as its task opens), handed to the enumerators once they exist; undefined once started.
   */
  #early: [node: number, subtask: number, event: unknown][] | undefined = [];
  readonly #alignment = new WatermarkAlignmentGroups();

  constructor(
    plan: Plan,
    gatewayOf: (node: PlanNode, subtask: number) => TaskManagerGateway,
    restored: ((operatorId: string) => unknown) | undefined,
    logger: Logger,
    fail: (cause: unknown) => void,
  ) {
    this.#plan = plan;
    this.#gatewayOf = gatewayOf;
    this.#restored = restored;
    this.#logger = logger;
    this.#fail = fail;
  }

  /** Opens (or restores) every source's enumerator and adds its readers. */
  start(): void {
    this.#plan.nodes.forEach((node, index) => {
      const t = node.transformation;
      if (t.kind !== "source") return;
      const context = {
        parallelism: node.parallelism,
        assignSplits: (subtask: number, splits: readonly unknown[]) => this.#gatewayOf(node, subtask).assignSplits(index, subtask, [...splits]),
        signalNoMoreSplits: (subtask: number) => this.#gatewayOf(node, subtask).noMoreSplits(index, subtask),
        failJob: (cause: unknown) => this.#fail(cause),
      };
      const enumerator = openEnumerator(t.source, context, this.#restored === undefined ? undefined : { state: this.#restored(node.operatorId) });
      this.#enumerators.set(index, enumerator);
      enumerator.start?.();
      for (let s = 0; s < node.parallelism; s++) enumerator.addReader(s);
    });
    const early = this.#early ?? [];
    this.#early = undefined;
    for (const [node, subtask, event] of early) this.handleSplitRequest(node, subtask, event);
  }

  /** A reader asked for a split, or (with `event`) sent its enumerator a source event. */
  handleSplitRequest(node: number, subtask: number, event?: unknown): void {
    if (this.#early !== undefined) this.#early.push([node, subtask, event]);
    else if (event !== undefined) this.#enumerators.get(node)?.handleSourceEvent?.(subtask, event);
    else this.#enumerators.get(node)?.handleSplitRequest?.(subtask);
  }

  /**
   * Watermark alignment: subtask `subtask` of source `node` reported `watermark`; it is told how
   * far it may go (its group's minimum plus its drift). Reports come every update interval, so
   * each answer is at most one interval old and a paused subtask hears of the others' progress.
   */
  reportWatermark(node: number, subtask: number, group: string, watermark: number, maxAllowedDriftMs: number): void {
    const maxAllowed = this.#alignment.report(group, `${node}/${subtask}`, watermark, maxAllowedDriftMs);
    this.#gatewayOf(this.#plan.nodes[node]!, subtask).updateMaxAllowedWatermark(node, subtask, maxAllowed);
  }

  /** Split enumerator state per source operator id, for checkpoint `checkpointId`. */
  snapshot(checkpointId: number): Record<string, unknown> {
    return snapshotEnumerators([...this.#enumerators].map(([index, e]) => [this.#plan.nodes[index]!.operatorId, e] as const), checkpointId);
  }

  close(): void {
    for (const enumerator of this.#enumerators.values()) {
      try {
        enumerator.close?.();
      } catch (e) {
        this.#logger.warn("split enumerator failed to close", { error: describeCause(e) });
      }
    }
  }
}

/**
 * The latest watermark of each source subtask in each alignment group (Flink's
 * SourceCoordinator watermark aggregation, FLIP-182). A subtask that has not reported yet does not
 * count (it holds nobody back before its first watermark, as in Flink); an idle or finished one
 * reports MAX_WATERMARK. Kept per execution attempt: a restart starts without reports.
 */
export class WatermarkAlignmentGroups {
  readonly #groups = new Map<string, Map<string, number>>();

  /** Records `watermark` for `member` of `group`; returns the watermark it may read up to: the group's minimum + `maxAllowedDriftMs`. */
  report(group: string, member: string, watermark: number, maxAllowedDriftMs: number): number {
    if (typeof watermark !== "number" || Number.isNaN(watermark) || !(maxAllowedDriftMs >= 0)) {
      throw new EddyError("INTERNAL", `watermark alignment report of ${member} in group '${group}' is invalid: watermark ${String(watermark)}, drift ${String(maxAllowedDriftMs)}`);
    }
    let members = this.#groups.get(group);
    if (members === undefined) this.#groups.set(group, (members = new Map()));
    members.set(member, watermark);
    let min = Number.POSITIVE_INFINITY;
    for (const w of members.values()) if (w < min) min = w;
    return min + maxAllowedDriftMs;
  }
}
